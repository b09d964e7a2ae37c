//! Keys, values and random choices.
//!
//! A key is `--key_size` ASCII digits: the first `--prefix_size` are the prefix,
//! `index / keys_per_prefix`, zero-padded; the rest are the suffix, `spacing * (index %
//! keys_per_prefix) + variant`, zero-padded (`spacing` is 2, or `--range_width + 1` when
//! `seekmissing` runs, so that the positions between two written keys form empty ranges). Written keys have variant 0; the keys of
//! `readmissing` have variant 1: they share the prefixes and the key range of the written keys
//! (so neither key ranges nor prefix filters can rule them out: only the whole-key filters can),
//! but no workload ever writes them. Fixed-width decimal keeps key order equal to index order,
//! so `fillseq` writes in key order.
//!
//! With `--keyspaces=N` the key of index `i` (both variants) lives in keyspace `i % N`: round
//! robin, so every keyspace holds an equal share of every prefix and of every key range, and a
//! key's keyspace follows from its index alone.

use std::sync::atomic::{AtomicU64, Ordering};

use super::error::{Error, Result};

/// Which of the two keys of an index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// The key the fills write.
    Written,
    /// A key of the same prefix and range that no workload writes.
    Missing,
}

/// What a run's key layout is made from: the sizes and counts among its flags that decide where
/// each key goes (`Config::key_shape` reads them off the flags). Kept apart from the flags so
/// that the layout depends on nothing but these numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyShape {
    /// Bytes per key (`--key_size`).
    pub key_size: usize,
    /// Bytes of the key prefix (`--prefix_size`).
    pub prefix_size: usize,
    /// Keys sharing one prefix (`--keys_per_prefix`).
    pub keys_per_prefix: u64,
    /// Key indexes the fills write (`--num`).
    pub num: u64,
    /// Key indexes kept free after `num` for the records YCSB D and E insert (`--reads` per
    /// such phase).
    pub insert_room: u64,
    /// `--range_width` when `seekmissing` runs (its empty ranges lie between written keys);
    /// `None` otherwise.
    pub range_width: Option<u64>,
    /// Keyspaces the keys are spread over (`--keyspaces`).
    pub keyspaces: usize,
}

/// The key layout of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyFormat {
    key_size: usize,
    prefix_size: usize,
    keys_per_prefix: u64,
    num: u64,
    /// Key indexes the run may use: `--num`, and after them room for the records YCSB D and E
    /// insert (at most `--reads` per such phase).
    capacity: u64,
    keyspaces: u64,
    /// Suffix positions per index: the written key, then `spacing - 1` never-written ones.
    spacing: u64,
}

fn decimal_digits(mut v: u64) -> usize {
    let mut digits = 1;
    while v >= 10 {
        v /= 10;
        digits += 1;
    }
    digits
}

/// Writes `v` right-aligned and zero-padded into `out` (which must be wide enough).
fn write_decimal(mut v: u64, out: &mut [u8]) {
    for byte in out.iter_mut().rev() {
        *byte = b'0' + (v % 10) as u8;
        v /= 10;
    }
}

impl KeyFormat {
    /// The layout for `shape`, or an error if the key range does not fit the sizes.
    pub fn new(shape: &KeyShape) -> Result<KeyFormat> {
        let capacity = shape.num.saturating_add(shape.insert_room);
        let max_prefix = (capacity - 1) / shape.keys_per_prefix;
        let prefix_digits = decimal_digits(max_prefix);
        if prefix_digits > shape.prefix_size {
            return Err(Error::new(format!(
                "--prefix_size {} cannot hold {} prefixes ({} keys, {} per prefix): it needs {} bytes",
                shape.prefix_size,
                max_prefix + 1,
                capacity,
                shape.keys_per_prefix,
                prefix_digits
            )));
        }
        let spacing = match shape.range_width {
            Some(width) => width.saturating_add(1).max(2),
            None => 2,
        };
        // The largest suffix: a missing key's, or seekmissing's range end (`encode_after`).
        let max_slot = if shape.range_width.is_some() {
            shape.keys_per_prefix.saturating_mul(spacing)
        } else {
            shape.keys_per_prefix.saturating_mul(2) - 1
        };
        let suffix_digits = decimal_digits(max_slot);
        if shape.key_size < shape.prefix_size + suffix_digits {
            return Err(Error::new(format!(
                "--key_size {} is too small: the prefix takes {} bytes and {} keys per prefix need {} more",
                shape.key_size, shape.prefix_size, shape.keys_per_prefix, suffix_digits
            )));
        }
        Ok(KeyFormat {
            key_size: shape.key_size,
            prefix_size: shape.prefix_size,
            keys_per_prefix: shape.keys_per_prefix,
            num: shape.num,
            capacity,
            keyspaces: shape.keyspaces as u64,
            spacing,
        })
    }

    /// Bytes per key.
    pub fn key_size(&self) -> usize {
        self.key_size
    }

    /// Bytes per prefix.
    pub fn prefix_size(&self) -> usize {
        self.prefix_size
    }

    /// Number of key indexes (`--num`).
    pub fn num(&self) -> u64 {
        self.num
    }

    /// Key indexes the run may use: `--num` and room for YCSB's inserts after them.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Key indexes whose keys fit the layout (their prefix number has at most `prefix_size`
    /// digits): a missing key of any of them is a key no workload writes.
    pub fn encodable(&self) -> u64 {
        let prefixes = u32::try_from(self.prefix_size)
            .ok()
            .and_then(|digits| 10u64.checked_pow(digits))
            .unwrap_or(u64::MAX);
        prefixes.saturating_mul(self.keys_per_prefix)
    }

    /// Number of distinct prefixes of the key range.
    pub fn num_prefixes(&self) -> u64 {
        self.num.div_ceil(self.keys_per_prefix)
    }

    /// The keyspace (0 = "default") that holds the keys of `index`.
    pub fn keyspace(&self, index: u64) -> usize {
        (index % self.keyspaces) as usize
    }

    /// A buffer for one key.
    pub fn key_buffer(&self) -> Vec<u8> {
        vec![0; self.key_size]
    }

    /// Writes the key of `index` into `out` (`key_size` bytes).
    pub fn encode(&self, index: u64, variant: Variant, out: &mut [u8]) {
        let (prefix, suffix) = out[..self.key_size].split_at_mut(self.prefix_size);
        write_decimal(index / self.keys_per_prefix, prefix);
        let slot =
            self.spacing * (index % self.keys_per_prefix) + u64::from(variant == Variant::Missing);
        write_decimal(slot, suffix);
    }

    /// Writes the key `offset` positions after the written key of `index` (`offset` up to
    /// `spacing`: the positions in between are never written, `spacing` is the next index's
    /// written key or, past a prefix's last index, a key no workload writes).
    pub fn encode_after(&self, index: u64, offset: u64, out: &mut [u8]) {
        let (prefix, suffix) = out[..self.key_size].split_at_mut(self.prefix_size);
        write_decimal(index / self.keys_per_prefix, prefix);
        write_decimal(
            self.spacing * (index % self.keys_per_prefix) + offset.min(self.spacing),
            suffix,
        );
    }

    /// Suffix positions per index (see the module docs).
    pub fn spacing(&self) -> u64 {
        self.spacing
    }

    /// Writes prefix number `prefix` into `out` (`prefix_size` bytes).
    pub fn encode_prefix(&self, prefix: u64, out: &mut [u8]) {
        write_decimal(prefix, &mut out[..self.prefix_size]);
    }

    /// Written key indexes under prefix number `prefix`.
    pub fn indexes_of_prefix(&self, prefix: u64) -> std::ops::Range<u64> {
        let start = prefix * self.keys_per_prefix;
        start.min(self.num)..(start + self.keys_per_prefix).min(self.num)
    }
}

/// A small, fast, seedable generator (SplitMix64): random choices must not cost more than the
/// operations they drive.
#[derive(Debug, Clone)]
pub struct Rng {
    state: u64,
}

impl Rng {
    /// A generator for `stream` (a workload, a thread) of run seed `seed`.
    pub fn new(seed: u64, stream: u64) -> Rng {
        let mut rng = Rng {
            state: seed ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03),
        };
        rng.next_u64();
        rng
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`; multiply-shift, bias below 2^-32 for any `n` used here).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

/// A seeded pseudo-random permutation of `0..n` in O(1) memory: a 4-round Feistel network on
/// the smallest even number of bits covering `n`, with cycle walking back into range.
#[derive(Debug, Clone)]
pub struct Permutation {
    n: u64,
    half_bits: u32,
    round_keys: [u64; 4],
}

impl Permutation {
    /// The permutation of `0..n` for `seed`.
    pub fn new(n: u64, seed: u64) -> Permutation {
        let bits = 64 - n.saturating_sub(1).leading_zeros();
        let half_bits = bits.div_ceil(2).max(1);
        let mut rng = Rng::new(seed, 0x5045_524d);
        Permutation {
            n,
            half_bits,
            round_keys: [
                rng.next_u64(),
                rng.next_u64(),
                rng.next_u64(),
                rng.next_u64(),
            ],
        }
    }

    fn round(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let (mut left, mut right) = (x >> self.half_bits, x & mask);
        for key in self.round_keys {
            let mut f = right ^ key;
            f = (f ^ (f >> 31)).wrapping_mul(0x7FB5_D329_728E_A185);
            f = (f ^ (f >> 27)).wrapping_mul(0x81DA_DEF4_BC2D_D44D);
            f ^= f >> 33;
            (left, right) = (right, left ^ (f & mask));
        }
        (left << self.half_bits) | right
    }

    /// The image of `i` (`i < n`).
    pub fn get(&self, i: u64) -> u64 {
        let mut x = self.round(i);
        while x >= self.n {
            x = self.round(x);
        }
        x
    }
}

/// Values: slices of one pre-generated buffer at random offsets (this keeps value generation off
/// the profile), built as db_bench builds its values so that they compress to about
/// `--compression_ratio` of their size.
#[derive(Debug, Clone)]
pub struct ValueSource {
    data: Vec<u8>,
    value_size: usize,
}

const VALUE_POOL: usize = 1 << 20;

/// Bytes of one piece of the value pool (db_bench's `CompressibleString` length).
const PIECE: usize = 100;

impl ValueSource {
    /// A source of `value_size`-byte values that compress to about `compression_ratio` of their
    /// size, as db_bench's: the pool is made of 100-byte pieces, each a run of
    /// `100 · compression_ratio` random printable bytes repeated to fill it.
    pub fn new(value_size: usize, seed: u64, compression_ratio: f64) -> ValueSource {
        let mut rng = Rng::new(seed, 0x56414c);
        let raw_len = ((PIECE as f64 * compression_ratio).round() as usize).clamp(1, PIECE);
        let mut data = Vec::with_capacity(VALUE_POOL + value_size + PIECE);
        let mut raw = vec![0u8; raw_len];
        while data.len() < VALUE_POOL + value_size {
            for b in raw.iter_mut() {
                *b = b' ' + (rng.next_u64() % 95) as u8;
            }
            data.extend(raw.iter().cycle().take(PIECE));
        }
        ValueSource { data, value_size }
    }

    /// One value.
    pub fn value(&self, rng: &mut Rng) -> &[u8] {
        let offset = rng.below(VALUE_POOL as u64) as usize;
        &self.data[offset..offset + self.value_size]
    }
}

/// Which written keys exist now: a bitset the workloads keep up to date, so each read workload
/// can report how many of its lookups *should* have found a key. With `--use_existing_db` the
/// runner cannot know and assumes all keys exist (`known() == false`).
#[derive(Debug)]
pub struct KeyModel {
    words: Vec<AtomicU64>,
    /// Keys a put has been started on since their last delete: a concurrent lookup may find
    /// such a key before the put is acknowledged and the key marked live.
    announced: Vec<AtomicU64>,
    known: bool,
}

impl KeyModel {
    /// A model of `capacity` key indexes: none written (`known`), or the first `num` assumed
    /// present (not known).
    pub fn new(num: u64, capacity: u64, known: bool) -> KeyModel {
        let words = capacity.max(num).div_ceil(64);
        let fill = |w: u64| {
            let first = w * 64;
            if known || first >= num {
                0
            } else if first + 64 <= num {
                u64::MAX
            } else {
                (1u64 << (num - first)) - 1
            }
        };
        KeyModel {
            words: (0..words).map(|w| AtomicU64::new(fill(w))).collect(),
            announced: (0..words).map(|_| AtomicU64::new(0)).collect(),
            known,
        }
    }

    /// Whether the model is exact (a database this run created).
    pub fn known(&self) -> bool {
        self.known
    }

    fn slot(&self, index: u64) -> (&AtomicU64, u64) {
        bit_of(&self.words, index)
    }

    /// Whether the written key of `index` exists. Acquire pairs with [`KeyModel::set_live`]'s
    /// release: a thread that sees the bit also sees the put that came before it.
    pub fn is_live(&self, index: u64) -> bool {
        let (word, bit) = self.slot(index);
        word.load(Ordering::Acquire) & bit != 0
    }

    /// Records a put of `index` (after the engine acknowledged it).
    pub fn set_live(&self, index: u64) {
        let (word, bit) = self.slot(index);
        word.fetch_or(bit, Ordering::Release);
    }

    /// Records that a put of `index` is about to be issued. Release pairs with
    /// [`KeyModel::was_announced`]: a thread that finds the put's key also sees the bit.
    pub fn announce(&self, index: u64) {
        let (word, bit) = bit_of(&self.announced, index);
        word.fetch_or(bit, Ordering::Release);
    }

    /// Whether a put of `index` was started since its last delete (it may be in flight).
    pub fn was_announced(&self, index: u64) -> bool {
        let (word, bit) = bit_of(&self.announced, index);
        word.load(Ordering::Acquire) & bit != 0
    }

    /// Records a delete of `index`; returns whether the key existed.
    pub fn set_dead(&self, index: u64) -> bool {
        let (announced, bit) = bit_of(&self.announced, index);
        announced.fetch_and(!bit, Ordering::Relaxed);
        let (word, bit) = self.slot(index);
        word.fetch_and(!bit, Ordering::Relaxed) & bit != 0
    }

    /// Number of keys that exist.
    pub fn live_count(&self) -> u64 {
        self.words
            .iter()
            .map(|w| u64::from(w.load(Ordering::Relaxed).count_ones()))
            .sum()
    }
}

/// The word of a bitset that holds `index`, and its bit there.
fn bit_of(words: &[AtomicU64], index: u64) -> (&AtomicU64, u64) {
    (&words[(index / 64) as usize], 1u64 << (index % 64))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The layout of `--num=NUM --keyspaces=KEYSPACES` and the default flags otherwise (16-byte
    /// keys, 8-byte prefixes of 100 keys, no inserts, no seekmissing): what `Config::key_shape`
    /// gives for them (asserted in the args tests).
    pub(crate) fn default_shape(num: u64, keyspaces: usize) -> KeyShape {
        KeyShape {
            key_size: 16,
            prefix_size: 8,
            keys_per_prefix: 100,
            num,
            insert_room: 0,
            range_width: None,
            keyspaces,
        }
    }

    fn format(num: u64, keyspaces: usize) -> KeyFormat {
        KeyFormat::new(&default_shape(num, keyspaces)).unwrap()
    }

    #[test]
    fn keys_are_fixed_width_ordered_and_share_prefixes() {
        let f = format(1_000_000, 1);
        let mut a = f.key_buffer();
        let mut b = f.key_buffer();
        f.encode(12_345, Variant::Written, &mut a);
        assert_eq!(&a, b"0000012300000090");
        f.encode(12_345, Variant::Missing, &mut b);
        assert_eq!(&b, b"0000012300000091");
        assert_eq!(a[..8], b[..8]);
        let mut prev = f.key_buffer();
        f.encode(0, Variant::Written, &mut prev);
        for i in 1..1000 {
            let mut k = f.key_buffer();
            f.encode(i, Variant::Written, &mut k);
            assert!(k > prev);
            prev = k;
        }
        let mut p = vec![0; 8];
        f.encode_prefix(123, &mut p);
        assert_eq!(&p, b"00000123");
        assert_eq!(f.indexes_of_prefix(123), 12_300..12_400);
        assert_eq!(f.num_prefixes(), 10_000);
        assert_eq!(f.keyspace(12_345), 0);
    }

    #[test]
    fn keys_go_to_keyspaces_round_robin() {
        let f = format(1000, 4);
        let counts = (0..1000).fold([0; 4], |mut c, i| {
            c[f.keyspace(i)] += 1;
            c
        });
        assert_eq!(counts, [250; 4]);
        assert_eq!((f.keyspace(0), f.keyspace(5), f.keyspace(7)), (0, 1, 3));
    }

    #[test]
    fn permutation_is_a_bijection() {
        for n in [1u64, 2, 3, 7, 64, 100, 1000, 4097] {
            let p = Permutation::new(n, 7);
            let mut seen = vec![false; n as usize];
            for i in 0..n {
                let x = p.get(i);
                assert!(x < n && !seen[x as usize]);
                seen[x as usize] = true;
            }
        }
    }

    #[test]
    fn model_tracks_puts_and_deletes() {
        let m = KeyModel::new(200, 200, true);
        assert!(!m.is_live(5));
        m.set_live(5);
        m.set_live(130);
        assert!(m.is_live(5) && m.is_live(130));
        assert!(m.set_dead(5));
        assert!(!m.set_dead(5));
        m.announce(7);
        assert!(m.was_announced(7) && !m.is_live(7));
        m.set_dead(7);
        assert!(!m.was_announced(7));
        assert_eq!(m.live_count(), 1);
        assert!(KeyModel::new(10, 10, false).is_live(9));
        assert_eq!(KeyModel::new(70, 70, false).live_count(), 70);
        let grown = KeyModel::new(70, 300, false);
        assert_eq!(grown.live_count(), 70);
        assert!(grown.is_live(69) && !grown.is_live(70));
        grown.set_live(299);
        assert_eq!(grown.live_count(), 71);
    }

    #[test]
    fn rng_below_stays_in_range() {
        let mut rng = Rng::new(1, 2);
        assert!((0..10_000).all(|_| rng.below(17) < 17));
    }
}
