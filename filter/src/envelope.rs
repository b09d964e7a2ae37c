//! The serialized form shared by the standalone structures (the ones a program uses on their
//! own, outside SSTables: [`CountingBloom`](crate::CountingBloom), ...).
//!
//! ```text
//! offset  size  field
//!      0     4  magic, one per structure (e.g. "SCBF" for the counting bloom)
//!      4     1  format version of that structure (1)
//!      5     1  hash function id (1 = xxh3-64, 2 = siphash-1-3)
//!      6     2  reserved, 0
//!      8     8  seed (xxh3 seed, or the secret's check value for siphash)
//!     16     8  payload length in bytes
//!     24     …  payload (the structure's own layout)
//!  end-4     4  CRC32 (IEEE) of every preceding byte
//! ```
//! All integers little-endian. A reader refuses another magic, a newer version, another hash
//! function or seed (its answers would be false negatives), a bad checksum or a short buffer.

use crate::error::FilterError;
use crate::hash::{HashId, KeyHasher};

/// Bytes before the payload.
pub(crate) const ENVELOPE_HEADER: usize = 24;
/// Bytes after it.
const ENVELOPE_TRAILER: usize = 4;

/// Wraps `payload` of the structure `magic` (format `version`) hashed with `hasher`.
pub(crate) fn seal(magic: [u8; 4], version: u8, hasher: &KeyHasher, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(ENVELOPE_HEADER + payload.len() + ENVELOPE_TRAILER);
    out.extend_from_slice(&magic);
    out.push(version);
    out.push(hasher.id() as u8);
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(&hasher.seed_tag().to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(payload);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// The payload of `bytes`, checked against `magic`, `version` (at most) and `hasher`; returns
/// it with the version it was written in.
pub(crate) fn open<'a>(
    bytes: &'a [u8],
    magic: [u8; 4],
    version: u8,
    hasher: &KeyHasher,
) -> Result<(u8, &'a [u8]), FilterError> {
    let minimum = ENVELOPE_HEADER + ENVELOPE_TRAILER;
    if bytes.len() < minimum {
        return Err(FilterError::Truncated {
            needed: minimum,
            actual: bytes.len(),
        });
    }
    let found = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    if bytes[..4] != magic {
        return Err(FilterError::BadMagic { found });
    }
    let body = bytes.len() - ENVELOPE_TRAILER;
    let stored = u32::from_le_bytes([
        bytes[body],
        bytes[body + 1],
        bytes[body + 2],
        bytes[body + 3],
    ]);
    let got = crc32fast::hash(&bytes[..body]);
    if got != stored {
        return Err(FilterError::ChecksumMismatch {
            got,
            expected: stored,
        });
    }
    let written = bytes[4];
    if written == 0 || written > version {
        return Err(FilterError::UnsupportedVersion(written));
    }
    let hash_id = HashId::from_u8(bytes[5]).ok_or(FilterError::UnknownHash(bytes[5]))?;
    if hash_id != hasher.id() {
        return Err(FilterError::HashMismatch {
            found: bytes[5],
            expected: hasher.id() as u8,
        });
    }
    let seed = read_u64(bytes, 8);
    if seed != hasher.seed_tag() {
        return Err(FilterError::SeedMismatch {
            found: seed,
            expected: hasher.seed_tag(),
        });
    }
    let len = read_u64(bytes, 16);
    if len != (body - ENVELOPE_HEADER) as u64 {
        return Err(FilterError::InvalidParameter(
            "payload length does not match the buffer",
        ));
    }
    Ok((written, &bytes[ENVELOPE_HEADER..body]))
}

/// [`open`] for a payload of at least `header` bytes (its fixed fields); returns the payload.
pub(crate) fn open_payload<'a>(
    bytes: &'a [u8],
    magic: [u8; 4],
    version: u8,
    hasher: &KeyHasher,
    header: usize,
) -> Result<&'a [u8], FilterError> {
    let (_, payload) = open(bytes, magic, version, hasher)?;
    if payload.len() < header {
        return Err(FilterError::Truncated {
            needed: header,
            actual: payload.len(),
        });
    }
    Ok(payload)
}

/// The little-endian u32 at `at` (the caller checked the length).
pub(crate) fn read_u32(bytes: &[u8], at: usize) -> u32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(word)
}

/// The little-endian u64 at `at` (the caller checked the length).
pub(crate) fn read_u64(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(word)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAGIC: [u8; 4] = *b"STST";

    #[test]
    fn a_sealed_payload_opens_and_every_mismatch_is_refused() {
        let hasher = KeyHasher::default();
        let sealed = seal(MAGIC, 1, &hasher, b"payload");
        assert_eq!(
            open(&sealed, MAGIC, 1, &hasher).unwrap(),
            (1, &b"payload"[..])
        );
        assert!(matches!(
            open(&sealed, *b"XXXX", 1, &hasher),
            Err(FilterError::BadMagic { .. })
        ));
        assert!(matches!(
            open(&sealed, MAGIC, 1, &KeyHasher::xxh3(7)),
            Err(FilterError::SeedMismatch { .. })
        ));
        assert!(matches!(
            open(&sealed, MAGIC, 1, &KeyHasher::siphash13([1; 16])),
            Err(FilterError::HashMismatch { .. })
        ));
        let newer = seal(MAGIC, 2, &hasher, b"payload");
        assert_eq!(
            open(&newer, MAGIC, 1, &hasher),
            Err(FilterError::UnsupportedVersion(2))
        );
        for cut in 0..sealed.len() {
            assert!(
                open(&sealed[..cut], MAGIC, 1, &hasher).is_err(),
                "cut {cut}"
            );
        }
        for byte in 0..sealed.len() {
            for bit in 0..8 {
                let mut bad = sealed.clone();
                bad[byte] ^= 1 << bit;
                assert!(open(&bad, MAGIC, 1, &hasher).is_err(), "flip {byte}.{bit}");
            }
        }
    }
}
