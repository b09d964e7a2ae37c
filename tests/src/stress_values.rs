//! The stress tool's keys and values (`siftdb-stress`): key names, and values encoded from
//! (keyspace, key, value id) so that a reader recognises which version it holds.
//!
//! A value of the value keyspaces is `'V'`, the keyspace (1 byte), the key (4 bytes LE), the
//! id (8 bytes LE) and the length (4 bytes LE), then an 8-byte pattern drawn from the three
//! repeated, and the id again in the last 8 bytes. Its length is drawn from the same three:
//! mostly 32 to 256 bytes, about one in 85 up to 64 KiB, one in 5000 up to the run's largest.
//! Generating it is a fill of a pattern, so a value of several MiB costs little. A counter (the
//! counters keyspace) is its sum, 8 bytes LE.

/// The keyspaces every run writes, by index: two of encoded values, one of counters.
pub const KEYSPACES: [&str; 3] = ["default", "blob", "counters"];
/// The index of the counters keyspace (U64Add merges).
pub const COUNTERS: usize = 2;
/// The keyspace created and dropped as an operation (its contents not tracked across drops).
pub const SCRATCH_KEYSPACE: &str = "scratch";
/// The shortest value.
pub const MIN_LEN: usize = 32;

const HEADER: usize = 18;
const TRAILER: usize = 8;
const MEDIUM: usize = 64 << 10;

/// The name of key `key`: `k` and 8 digits (a fixed width, so names sort as numbers; the first
/// 8 bytes are the default keyspace's prefix).
pub fn key_name(key: u32) -> Vec<u8> {
    format!("k{key:08}").into_bytes()
}

/// The key a name stands for.
pub fn parse_key(name: &[u8]) -> Option<u32> {
    let digits = name.strip_prefix(b"k")?;
    if digits.len() != 8 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// SplitMix64's finalizer: a well-mixed 64-bit hash of `z`.
pub fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn seed_of(ks: usize, key: u32, id: u64) -> u64 {
    mix(id ^ mix(((ks as u64) << 32) | u64::from(key)))
}

/// The length of value `id` of `key` in keyspace `ks`, at most `max`.
pub fn value_len(ks: usize, key: u32, id: u64, max: usize) -> usize {
    let h = seed_of(ks, key, id);
    let (r, x) = (h % 10_000, h >> 20);
    let len = if r < 9_880 {
        MIN_LEN + (x % 225) as usize
    } else if r < 9_998 {
        256 + (x % (MEDIUM as u64 - 256)) as usize
    } else {
        MEDIUM + (x % (max.saturating_sub(MEDIUM) as u64 + 1)) as usize
    };
    len.clamp(MIN_LEN, max.max(MIN_LEN))
}

/// Value `id` of `key` in keyspace `ks`.
pub fn encode(ks: usize, key: u32, id: u64, max: usize) -> Vec<u8> {
    let mut v = vec![0u8; value_len(ks, key, id, max)];
    fill(&mut v, ks, key, id);
    v
}

fn fill(v: &mut [u8], ks: usize, key: u32, id: u64) {
    let len = v.len();
    v[0] = b'V';
    v[1] = ks as u8;
    v[2..6].copy_from_slice(&key.to_le_bytes());
    v[6..14].copy_from_slice(&id.to_le_bytes());
    v[14..18].copy_from_slice(&(len as u32).to_le_bytes());
    let pattern = seed_of(ks, key, id).to_le_bytes();
    for chunk in v[HEADER..len - TRAILER].chunks_mut(8) {
        chunk.copy_from_slice(&pattern[..chunk.len()]);
    }
    v[len - TRAILER..].copy_from_slice(&id.to_le_bytes());
}

/// The id of `bytes` if they are exactly a value of `key` in keyspace `ks` (header, length,
/// pattern and trailer), else `None`.
pub fn decode_id(ks: usize, key: u32, max: usize, bytes: &[u8]) -> Option<u64> {
    if bytes.len() < MIN_LEN || bytes[0] != b'V' || usize::from(bytes[1]) != ks {
        return None;
    }
    if bytes[2..6] != key.to_le_bytes() {
        return None;
    }
    let id = u64::from_le_bytes(bytes[6..14].try_into().ok()?);
    value_matches(ks, key, id, max, bytes).then_some(id)
}

/// Whether `bytes` are value `id` of `key` in keyspace `ks`.
pub fn value_matches(ks: usize, key: u32, id: u64, max: usize, bytes: &[u8]) -> bool {
    if bytes.len() != value_len(ks, key, id, max) {
        return false;
    }
    let mut want = vec![0u8; bytes.len()];
    fill(&mut want, ks, key, id);
    want == bytes
}

/// Bytes for a report: length, a hash and the first bytes.
pub fn describe(bytes: &[u8]) -> String {
    let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    let head = &bytes[..bytes.len().min(24)];
    format!(
        "len {} hash {hash:016x} head \"{}\"",
        bytes.len(),
        head.escape_ascii()
    )
}
