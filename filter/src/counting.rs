//! A counting bloom filter (Fan et al., "Summary cache", 2000): a bloom filter whose bits are
//! 4-bit counters, so keys can be removed as well as inserted.
//!
//! Each key sets `k` counters chosen by double hashing of its one 64-bit hash (Kirsch and
//! Mitzenmacher). Insert adds one to each, remove subtracts one, a query asks whether all are
//! above zero. Two counters share a byte, so the filter costs 4 bits per counter: four times a
//! plain bloom filter of the same false-positive rate.
//!
//! **Overflow.** A counter saturates at 15 and then stays there: a saturated counter is never
//! decremented again, because it no longer knows how many keys hold it. Saturation never causes
//! a false negative; it only keeps the counter set after its keys are gone, so the
//! false-positive rate can only drift up. [`CountingBloom::saturated_counters`] says how many
//! there are. With the sizing of [`CountingBloom::new`] (about `1.44 · log2(1/fpr)` counters per
//! key) a counter reaches 15 only when one key is inserted many times over, or with overload
//! far beyond the expected number of keys.
//!
//! **Removing** a key that was never inserted is the one misuse that breaks the guarantee: if it
//! happens to be a false positive, its removal takes counts that belong to other keys. Remove
//! only keys that were inserted (as every counting bloom requires); [`CountingBloom::remove`]
//! does refuse keys the filter already rules out.

use crate::envelope;
use crate::error::FilterError;
use crate::hash::KeyHasher;

/// The envelope magic of a serialized counting bloom filter.
const MAGIC: [u8; 4] = *b"SCBF";
/// Its payload format version.
const VERSION: u8 = 1;
/// The largest value of a 4-bit counter.
const SATURATED: u8 = 15;
/// Bytes of the payload before the counters.
const PAYLOAD_HEADER: usize = 24;
/// The most probes a key may set (more only costs time: the best k for 4 bits per counter of
/// plain-bloom budget stays far below).
const MAX_PROBES: u32 = 32;

/// See the module documentation.
///
/// ```
/// use siftdb_filter::{CountingBloom, KeyHasher};
///
/// # fn main() -> Result<(), siftdb_filter::FilterError> {
/// let mut seen = CountingBloom::new(10_000, 0.01, KeyHasher::default())?;
/// seen.insert(b"session:41");
/// seen.insert(b"session:42");
/// assert!(seen.contains(b"session:42"));
/// assert!(seen.remove(b"session:42")); // it was there
/// assert!(seen.contains(b"session:41")); // others stay
/// let bytes = seen.to_bytes(); // versioned and checksummed
/// let back = CountingBloom::from_bytes(&bytes, &KeyHasher::default())?;
/// assert!(back.contains(b"session:41"));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CountingBloom {
    hasher: KeyHasher,
    /// Two counters per byte: counter `2i` in the low nibble of byte `i`, `2i + 1` in the high.
    counters: Vec<u8>,
    num_counters: u64,
    num_probes: u32,
    /// Keys inserted minus keys removed.
    len: u64,
    /// Counters at 15.
    saturated: u64,
}

impl CountingBloom {
    /// A filter sized for `expected_keys` keys at false-positive rate `fpr` (in (0, 1)): the
    /// counters and probes of the best plain bloom filter of that rate.
    pub fn new(
        expected_keys: u64,
        fpr: f64,
        hasher: KeyHasher,
    ) -> Result<CountingBloom, FilterError> {
        if expected_keys == 0 {
            return Err(FilterError::InvalidParameter(
                "expected_keys must be at least 1",
            ));
        }
        crate::plain::check_fpr(fpr)?;
        let ln2 = std::f64::consts::LN_2;
        let counters = (-(expected_keys as f64) * fpr.ln() / (ln2 * ln2)).ceil();
        let probes = (counters / expected_keys as f64 * ln2).round();
        CountingBloom::with_counters(
            counters as u64,
            probes.clamp(1.0, f64::from(MAX_PROBES)) as u32,
            hasher,
        )
    }

    /// A filter of exactly `num_counters` counters, each key setting `num_probes` of them.
    pub fn with_counters(
        num_counters: u64,
        num_probes: u32,
        hasher: KeyHasher,
    ) -> Result<CountingBloom, FilterError> {
        if num_counters == 0 {
            return Err(FilterError::InvalidParameter(
                "num_counters must be at least 1",
            ));
        }
        if !(1..=MAX_PROBES).contains(&num_probes) {
            return Err(FilterError::InvalidParameter(
                "num_probes must be from 1 to 32",
            ));
        }
        let bytes = usize::try_from(num_counters.div_ceil(2))
            .map_err(|_| FilterError::InvalidParameter("num_counters does not fit in memory"))?;
        Ok(CountingBloom {
            hasher,
            counters: vec![0; bytes],
            num_counters,
            num_probes,
            len: 0,
            saturated: 0,
        })
    }

    /// Inserts `key` (a key inserted twice must be removed twice).
    pub fn insert(&mut self, key: &[u8]) {
        let hash = self.hasher.hash(key);
        for slot in self.slots(hash) {
            let value = self.get(slot);
            if value < SATURATED {
                self.set(slot, value + 1);
                if value + 1 == SATURATED {
                    self.saturated += 1;
                }
            }
        }
        self.len += 1;
    }

    /// Whether `key` may have been inserted (and not removed since): `false` is certain.
    pub fn contains(&self, key: &[u8]) -> bool {
        let hash = self.hasher.hash(key);
        self.slots(hash).all(|slot| self.get(slot) > 0)
    }

    /// How many times `key` was inserted (minus removed), as a frequency sketch reads it: the
    /// smallest of its counters (count-min), never below the true count while no counter
    /// saturated and [`CountingBloom::halve`] was not called, at most 15.
    pub fn estimate(&self, key: &[u8]) -> u8 {
        let hash = self.hasher.hash(key);
        self.slots(hash)
            .map(|slot| self.get(slot))
            .min()
            .unwrap_or(0)
    }

    /// Halves every counter (TinyLFU's reset, which keeps a frequency sketch following recent
    /// accesses rather than all-time ones). After it the filter is a sketch, not a set: a key
    /// counted once may read 0 (a "no" is no longer certain) and [`CountingBloom::remove`] must
    /// not be used for keys inserted before.
    pub fn halve(&mut self) {
        for byte in &mut self.counters {
            // Both 4-bit counters at once: shift each nibble right by one.
            *byte = (*byte >> 1) & 0x77;
        }
        self.len /= 2;
        self.saturated = 0;
    }

    /// Removes one insertion of `key`; returns `false`, changing nothing, when the filter rules
    /// the key out. Remove only keys that were inserted (see the module documentation).
    /// Saturated counters stay at 15.
    pub fn remove(&mut self, key: &[u8]) -> bool {
        let hash = self.hasher.hash(key);
        if !self.slots(hash).all(|slot| self.get(slot) > 0) {
            return false;
        }
        for slot in self.slots(hash) {
            let value = self.get(slot);
            if value < SATURATED {
                self.set(slot, value - 1);
            }
        }
        self.len = self.len.saturating_sub(1);
        true
    }

    /// Keys inserted minus keys removed.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether nothing is inserted (net of removals).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Counters stuck at 15 (see the module documentation on overflow).
    pub fn saturated_counters(&self) -> u64 {
        self.saturated
    }

    /// Number of counters.
    pub fn num_counters(&self) -> u64 {
        self.num_counters
    }

    /// Counters each key sets.
    pub fn num_probes(&self) -> u32 {
        self.num_probes
    }

    /// Bytes of counters (4 bits each).
    pub fn size_bytes(&self) -> usize {
        self.counters.len()
    }

    /// The false-positive rate expected with [`CountingBloom::len`] keys in it:
    /// `(1 − e^(−k·n/m))^k`.
    pub fn expected_fpr(&self) -> f64 {
        let k = f64::from(self.num_probes);
        let fill = 1.0 - (-k * self.len as f64 / self.num_counters as f64).exp();
        fill.powf(k)
    }

    /// The serialized filter (the envelope of `envelope.rs` around: u64 counters, u32 probes,
    /// u32 reserved, u64 keys, then the counter bytes).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut payload = Vec::with_capacity(PAYLOAD_HEADER + self.counters.len());
        payload.extend_from_slice(&self.num_counters.to_le_bytes());
        payload.extend_from_slice(&self.num_probes.to_le_bytes());
        payload.extend_from_slice(&0u32.to_le_bytes());
        payload.extend_from_slice(&self.len.to_le_bytes());
        payload.extend_from_slice(&self.counters);
        envelope::seal(MAGIC, VERSION, &self.hasher, &payload)
    }

    /// Reads a filter written by [`CountingBloom::to_bytes`] under the same `hasher`; anything
    /// else (another hash or seed, damage, another structure) is an error.
    pub fn from_bytes(bytes: &[u8], hasher: &KeyHasher) -> Result<CountingBloom, FilterError> {
        let payload = envelope::open_payload(bytes, MAGIC, VERSION, hasher, PAYLOAD_HEADER)?;
        let num_counters = envelope::read_u64(payload, 0);
        let num_probes = envelope::read_u32(payload, 8);
        let len = envelope::read_u64(payload, 16);
        let counters = &payload[PAYLOAD_HEADER..];
        // Checked before anything is allocated for them.
        if counters.len() as u64 != num_counters.div_ceil(2) {
            return Err(FilterError::InvalidParameter(
                "counter bytes do not match the counter count",
            ));
        }
        let mut filter = CountingBloom::with_counters(num_counters, num_probes, *hasher)?;
        if !num_counters.is_multiple_of(2) && counters[counters.len() - 1] >> 4 != 0 {
            return Err(FilterError::InvalidParameter(
                "the unused last counter is not zero",
            ));
        }
        filter.counters.copy_from_slice(counters);
        filter.len = len;
        filter.saturated = (0..num_counters)
            .filter(|&slot| filter.get(slot) == SATURATED)
            .count() as u64;
        Ok(filter)
    }

    /// The counters key `hash` sets. Borrows nothing, so the caller may update counters while
    /// walking them.
    fn slots(&self, hash: u64) -> impl Iterator<Item = u64> + use<> {
        crate::plain::probes(hash, self.num_counters, self.num_probes)
    }

    fn get(&self, slot: u64) -> u8 {
        let byte = self.counters[(slot / 2) as usize];
        if slot.is_multiple_of(2) {
            byte & 0x0F
        } else {
            byte >> 4
        }
    }

    fn set(&mut self, slot: u64, value: u8) {
        let byte = &mut self.counters[(slot / 2) as usize];
        *byte = if slot.is_multiple_of(2) {
            (*byte & 0xF0) | value
        } else {
            (*byte & 0x0F) | (value << 4)
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizing_follows_the_bloom_formulas() {
        let f = CountingBloom::new(10_000, 0.01, KeyHasher::default()).unwrap();
        // 9.59 counters per key and 7 probes for 1 %.
        assert_eq!(f.num_counters(), 95_851);
        assert_eq!(f.num_probes(), 7);
        assert_eq!(f.size_bytes(), 47_926);
        assert!(CountingBloom::new(0, 0.01, KeyHasher::default()).is_err());
        assert!(CountingBloom::new(10, 1.0, KeyHasher::default()).is_err());
        assert!(CountingBloom::with_counters(10, 0, KeyHasher::default()).is_err());
    }

    #[test]
    fn a_key_inserted_past_saturation_is_never_lost() {
        let mut f = CountingBloom::with_counters(64, 3, KeyHasher::default()).unwrap();
        for _ in 0..20 {
            f.insert(b"hot");
        }
        assert!(f.saturated_counters() > 0);
        for _ in 0..20 {
            assert!(f.remove(b"hot"));
        }
        // Its counters are stuck at 15: still "maybe", never a false "no" for it or others.
        assert!(f.contains(b"hot"));
        assert_eq!(f.len(), 0);
    }

    #[test]
    fn removing_a_key_the_filter_rules_out_changes_nothing() {
        let mut f = CountingBloom::new(100, 0.001, KeyHasher::default()).unwrap();
        f.insert(b"a");
        let before = f.clone();
        assert!(!f.remove(b"never inserted"));
        assert_eq!(f, before);
    }

    #[test]
    fn odd_counter_counts_round_trip() {
        let mut f = CountingBloom::with_counters(101, 4, KeyHasher::xxh3(9)).unwrap();
        for i in 0..30u32 {
            f.insert(&i.to_le_bytes());
        }
        let back = CountingBloom::from_bytes(&f.to_bytes(), &KeyHasher::xxh3(9)).unwrap();
        assert_eq!(back, f);
        assert!(CountingBloom::from_bytes(&f.to_bytes(), &KeyHasher::default()).is_err());
    }
}
