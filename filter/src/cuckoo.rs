//! A cuckoo filter (Fan, Andersen, Kaminsky and Mitzenmacher, "Cuckoo Filter: Practically
//! Better Than Bloom", CoNEXT 2014): insert, query and delete, at about the memory of a bloom
//! filter.
//!
//! Buckets of four fingerprints of `f` bits. A key's fingerprint lives in one of two buckets:
//! `i₁` from its hash, `i₂ = i₁ ⊕ hash(fingerprint)` (partial-key cuckoo hashing: either bucket
//! and the fingerprint give the other, so a fingerprint can move without its key). An insert
//! takes a free slot in either bucket, or evicts a resident to its other bucket, up to 500
//! times. A query reads two buckets (two cache misses at most). FPR ≈ `8 / 2^f` (two buckets of
//! four slots, each matching with probability `2^-f`); at the 95 % load the filter reaches,
//! `f / 0.95` bits per key.
//!
//! **Full is an error, never a loss.** When 500 evictions find no free slot, the insert undoes
//! them (every kicked fingerprint goes back where it was) and returns [`FilterError::Full`]: the
//! filter answers exactly as before. Plain implementations drop the last kicked fingerprint
//! instead, a silent false negative for some earlier key.
//!
//! **Deleting** a key that was never inserted may remove another key's fingerprint (if it is a
//! false positive): delete only inserted keys. A key inserted `n` times is held `n` times (up to
//! the 8 slots of its two buckets) and must be deleted as often.

use crate::envelope;
use crate::error::FilterError;
use crate::hash::KeyHasher;

const MAGIC: [u8; 4] = *b"SCKF";
const VERSION: u8 = 1;
const SLOTS_PER_BUCKET: u64 = 4;
/// Evictions an insert tries before it gives up (the paper's 500).
const MAX_KICKS: usize = 500;
/// The load `new` sizes for (the paper reaches about 95 % with 4-slot buckets).
const TARGET_LOAD: f64 = 0.95;
const PAYLOAD_HEADER: usize = 32;

/// See the module documentation.
///
/// ```
/// use siftdb_filter::{CuckooFilter, KeyHasher};
///
/// # fn main() -> Result<(), siftdb_filter::FilterError> {
/// let mut filter = CuckooFilter::new(100_000, 12, KeyHasher::default())?;
/// filter.insert(b"user:17")?; // an error when full, never a lost key
/// assert!(filter.contains(b"user:17"));
/// assert!(filter.remove(b"user:17"));
/// assert!(!filter.contains(b"user:17"));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CuckooFilter {
    hasher: KeyHasher,
    /// Fingerprints of `fingerprint_bits` bits packed little-endian, slot `4b + j` of bucket
    /// `b`; 0 is an empty slot.
    words: Vec<u64>,
    num_buckets: u64,
    fingerprint_bits: u32,
    len: u64,
    /// State of the generator that picks which resident to evict.
    kick_state: u64,
}

impl CuckooFilter {
    /// A filter with room for `capacity` keys at about 95 % load, with fingerprints of
    /// `fingerprint_bits` bits (4 to 16; FPR about `8 / 2^bits`).
    pub fn new(
        capacity: u64,
        fingerprint_bits: u32,
        hasher: KeyHasher,
    ) -> Result<CuckooFilter, FilterError> {
        if capacity == 0 {
            return Err(FilterError::InvalidParameter("capacity must be at least 1"));
        }
        let buckets = (capacity as f64 / (SLOTS_PER_BUCKET as f64 * TARGET_LOAD)).ceil() as u64;
        CuckooFilter::with_buckets(buckets.max(1).next_power_of_two(), fingerprint_bits, hasher)
    }

    /// A filter of `num_buckets` buckets (a power of two) of four `fingerprint_bits`-bit slots.
    pub fn with_buckets(
        num_buckets: u64,
        fingerprint_bits: u32,
        hasher: KeyHasher,
    ) -> Result<CuckooFilter, FilterError> {
        if !num_buckets.is_power_of_two() {
            return Err(FilterError::InvalidParameter(
                "num_buckets must be a power of two",
            ));
        }
        if !(4..=16).contains(&fingerprint_bits) {
            return Err(FilterError::InvalidParameter(
                "fingerprint_bits must be from 4 to 16",
            ));
        }
        let bits = num_buckets
            .checked_mul(SLOTS_PER_BUCKET * u64::from(fingerprint_bits))
            .ok_or(FilterError::InvalidParameter(
                "the filter does not fit in memory",
            ))?;
        let words = usize::try_from(bits.div_ceil(64))
            .map_err(|_| FilterError::InvalidParameter("the filter does not fit in memory"))?;
        Ok(CuckooFilter {
            hasher,
            words: vec![0; words],
            num_buckets,
            fingerprint_bits,
            len: 0,
            kick_state: 0x5EED_C0C0,
        })
    }

    /// Inserts `key`. [`FilterError::Full`] when no slot could be freed: the filter is then
    /// exactly as before the call.
    pub fn insert(&mut self, key: &[u8]) -> Result<(), FilterError> {
        let (fp, first) = self.locate(self.hasher.hash(key));
        let second = self.other_bucket(first, fp);
        if self.put(first, fp) || self.put(second, fp) {
            self.len += 1;
            return Ok(());
        }
        // Evict: move a resident of one of the buckets to its other bucket, and so on.
        let mut undo: Vec<(u64, u32)> = Vec::new(); // (slot, the fingerprint it held)
        let mut bucket = if self.next_random() & 1 == 0 {
            first
        } else {
            second
        };
        let mut homeless = fp;
        for _ in 0..MAX_KICKS {
            let slot = bucket * SLOTS_PER_BUCKET + self.next_random() % SLOTS_PER_BUCKET;
            let resident = self.slot(slot);
            self.set_slot(slot, homeless);
            undo.push((slot, resident));
            homeless = resident;
            bucket = self.other_bucket(bucket, homeless);
            if self.put(bucket, homeless) {
                self.len += 1;
                return Ok(());
            }
        }
        // Put every kicked fingerprint back, newest move first: nothing changed.
        for (slot, resident) in undo.into_iter().rev() {
            self.set_slot(slot, resident);
        }
        Err(FilterError::Full { len: self.len })
    }

    /// Whether `key` may have been inserted (and not removed): `false` is certain.
    pub fn contains(&self, key: &[u8]) -> bool {
        let (fp, first) = self.locate(self.hasher.hash(key));
        self.bucket_holds(first, fp) || self.bucket_holds(self.other_bucket(first, fp), fp)
    }

    /// Removes one copy of `key`'s fingerprint; `false` when there was none. Remove only keys
    /// that were inserted (see the module documentation).
    pub fn remove(&mut self, key: &[u8]) -> bool {
        let (fp, first) = self.locate(self.hasher.hash(key));
        let second = self.other_bucket(first, fp);
        for bucket in [first, second] {
            for slot in self.slots_of(bucket) {
                if self.slot(slot) == fp {
                    self.set_slot(slot, 0);
                    self.len -= 1;
                    return true;
                }
            }
        }
        false
    }

    /// Keys held.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether no key is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Keys held over slots.
    pub fn load(&self) -> f64 {
        self.len as f64 / (self.num_buckets * SLOTS_PER_BUCKET) as f64
    }

    /// Bytes of fingerprints.
    pub fn size_bytes(&self) -> usize {
        self.words.len() * 8
    }

    /// The FPR bound at the current load: `1 − (1 − 2^-f)^(2·4·load)`, below `8 / 2^f`.
    pub fn expected_fpr(&self) -> f64 {
        let per_slot = (-f64::from(self.fingerprint_bits)).exp2();
        1.0 - (1.0 - per_slot).powf(2.0 * SLOTS_PER_BUCKET as f64 * self.load())
    }

    /// The fingerprint (never 0) and first bucket of a hash: the bucket from the low bits, the
    /// fingerprint from the high ones, so the two are independent.
    fn locate(&self, hash: u64) -> (u32, u64) {
        let mask = (1u64 << self.fingerprint_bits) - 1;
        let fp = ((hash >> 32) & mask) as u32;
        let fp = if fp == 0 { 1 } else { fp };
        (fp, hash & (self.num_buckets - 1))
    }

    /// The other bucket of fingerprint `fp` in `bucket` (an involution: applied twice, `bucket`).
    fn other_bucket(&self, bucket: u64, fp: u32) -> u64 {
        let mixed = u64::from(fp).wrapping_mul(0x5bd1_e995_9e37_79b9);
        (bucket ^ (mixed >> 17)) & (self.num_buckets - 1)
    }

    fn slots_of(&self, bucket: u64) -> std::ops::Range<u64> {
        bucket * SLOTS_PER_BUCKET..(bucket + 1) * SLOTS_PER_BUCKET
    }

    fn bucket_holds(&self, bucket: u64, fp: u32) -> bool {
        self.slots_of(bucket).any(|slot| self.slot(slot) == fp)
    }

    /// Stores `fp` in a free slot of `bucket`; `false` when it has none.
    fn put(&mut self, bucket: u64, fp: u32) -> bool {
        for slot in self.slots_of(bucket) {
            if self.slot(slot) == 0 {
                self.set_slot(slot, fp);
                return true;
            }
        }
        false
    }

    fn slot(&self, slot: u64) -> u32 {
        let bits = u64::from(self.fingerprint_bits);
        let at = slot * bits;
        let (word, shift) = ((at / 64) as usize, at % 64);
        let mut value = self.words[word] >> shift;
        if shift + bits > 64 {
            value |= self.words[word + 1] << (64 - shift);
        }
        (value & ((1 << bits) - 1)) as u32
    }

    fn set_slot(&mut self, slot: u64, fp: u32) {
        let bits = u64::from(self.fingerprint_bits);
        let mask = (1u64 << bits) - 1;
        let at = slot * bits;
        let (word, shift) = ((at / 64) as usize, at % 64);
        let fp = u64::from(fp) & mask;
        self.words[word] = (self.words[word] & !(mask << shift)) | (fp << shift);
        if shift + bits > 64 {
            let spill = shift + bits - 64;
            let high = (1u64 << spill) - 1;
            self.words[word + 1] = (self.words[word + 1] & !high) | (fp >> (bits - spill));
        }
    }

    /// SplitMix64: which resident to evict.
    fn next_random(&mut self) -> u64 {
        self.kick_state = self.kick_state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.kick_state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// The serialized filter: the envelope around u64 buckets, u32 fingerprint bits, u32 0, u64
    /// keys, u64 eviction generator state, then the words.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut payload = Vec::with_capacity(PAYLOAD_HEADER + self.size_bytes());
        payload.extend_from_slice(&self.num_buckets.to_le_bytes());
        payload.extend_from_slice(&self.fingerprint_bits.to_le_bytes());
        payload.extend_from_slice(&0u32.to_le_bytes());
        payload.extend_from_slice(&self.len.to_le_bytes());
        payload.extend_from_slice(&self.kick_state.to_le_bytes());
        for w in &self.words {
            payload.extend_from_slice(&w.to_le_bytes());
        }
        envelope::seal(MAGIC, VERSION, &self.hasher, &payload)
    }

    /// Reads a filter written by [`CuckooFilter::to_bytes`] under the same `hasher`.
    pub fn from_bytes(bytes: &[u8], hasher: &KeyHasher) -> Result<CuckooFilter, FilterError> {
        let payload = envelope::open_payload(bytes, MAGIC, VERSION, hasher, PAYLOAD_HEADER)?;
        let num_buckets = envelope::read_u64(payload, 0);
        let fingerprint_bits = envelope::read_u32(payload, 8);
        let words = &payload[PAYLOAD_HEADER..];
        // The words must be there before anything is allocated for them.
        let want = num_buckets
            .checked_mul(SLOTS_PER_BUCKET * u64::from(fingerprint_bits))
            .map(|bits| bits.div_ceil(64) * 8);
        if want != Some(words.len() as u64) {
            return Err(FilterError::InvalidParameter(
                "fingerprint words do not match the size",
            ));
        }
        let mut filter = CuckooFilter::with_buckets(num_buckets, fingerprint_bits, *hasher)?;
        for (i, w) in filter.words.iter_mut().enumerate() {
            *w = envelope::read_u64(words, 8 * i);
        }
        filter.len = envelope::read_u64(payload, 16);
        filter.kick_state = envelope::read_u64(payload, 24);
        let held = (0..num_buckets * SLOTS_PER_BUCKET)
            .filter(|&slot| filter.slot(slot) != 0)
            .count() as u64;
        if held != filter.len {
            return Err(FilterError::InvalidParameter(
                "key count does not match the slots held",
            ));
        }
        Ok(filter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_pack_fingerprints_of_any_width() {
        for bits in [4u32, 7, 8, 12, 13, 16] {
            let mut f = CuckooFilter::with_buckets(16, bits, KeyHasher::default()).unwrap();
            let max = (1u32 << bits) - 1;
            let value = |slot: u64| (slot as u32).wrapping_mul(2_654_435_761) & max;
            for slot in 0..64 {
                f.set_slot(slot, value(slot));
            }
            for slot in 0..64 {
                assert_eq!(f.slot(slot), value(slot), "{bits} bits");
            }
        }
    }

    #[test]
    fn the_other_bucket_is_an_involution() {
        let f = CuckooFilter::with_buckets(1 << 10, 12, KeyHasher::default()).unwrap();
        for bucket in 0..1024 {
            for fp in [1u32, 77, 4095] {
                assert_eq!(f.other_bucket(f.other_bucket(bucket, fp), fp), bucket);
            }
        }
    }

    #[test]
    fn a_full_filter_refuses_and_loses_nothing() {
        let mut f = CuckooFilter::with_buckets(8, 8, KeyHasher::default()).unwrap();
        let mut inserted = Vec::new();
        let mut refused = 0;
        for i in 0..64u32 {
            let before = f.clone();
            match f.insert(&i.to_le_bytes()) {
                Ok(()) => inserted.push(i),
                Err(FilterError::Full { .. }) => {
                    refused += 1;
                    assert_eq!(f, before.clone_with_kick_state(f.kick_state), "unchanged");
                }
                Err(e) => panic!("{e}"),
            }
            assert!(inserted.iter().all(|k| f.contains(&k.to_le_bytes())));
        }
        assert!(refused > 0, "32 slots cannot take 64 keys");
        assert!(f.load() > 0.8, "{}", f.load());
    }

    impl CuckooFilter {
        /// `self` with another generator state (the one thing a refused insert changes).
        fn clone_with_kick_state(&self, kick_state: u64) -> CuckooFilter {
            CuckooFilter {
                kick_state,
                ..self.clone()
            }
        }
    }
}
