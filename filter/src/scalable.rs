//! A scalable bloom filter (Almeida, Baquero, Preguiça and Hutchison, "Scalable Bloom
//! Filters", 2007): for a key count nobody knows in advance.
//!
//! A chain of bloom filters. Keys go into the newest; when it holds the keys it was sized for,
//! a new one is added with `growth` times the room and an FPR `tightening` times lower. A query
//! asks every filter of the chain. With first-filter FPR `p₀` the chain's FPR stays below
//! `p₀ / (1 − r)` however many filters it grows (`r` the tightening ratio), so
//! [`ScalableBloom::new`] sets `p₀ = fpr · (1 − r)` to keep the whole under `fpr`. Memory grows
//! with the keys, about `log2(1/pᵢ) / ln 2` bits per key in filter `i`.
//!
//! A key that the chain already answers "maybe" for is not inserted again, so repeated keys do
//! not use up room (they cannot become false negatives: they are already "maybe").

use crate::envelope;
use crate::error::FilterError;
use crate::hash::KeyHasher;
use crate::plain::PlainBloom;

const MAGIC: [u8; 4] = *b"SSBF";
const VERSION: u8 = 1;
/// The paper's recommended tightening ratio.
const DEFAULT_TIGHTENING: f64 = 0.5;
/// Each filter twice the room of the one before (the paper's `s = 2`).
const DEFAULT_GROWTH: u32 = 2;
/// The largest growth accepted: beyond it a chain's next filter would dwarf everything before.
const MAX_GROWTH: u32 = 16;
/// Bytes of the payload before the filters.
const PAYLOAD_HEADER: usize = 40;

/// See the module documentation.
///
/// ```
/// use siftdb_filter::{KeyHasher, ScalableBloom};
///
/// # fn main() -> Result<(), siftdb_filter::FilterError> {
/// // Room for 1,000 keys at first; it grows, keeping the FPR under 1 %.
/// let mut prefixes = ScalableBloom::new(1_000, 0.01, KeyHasher::default())?;
/// for i in 0..50_000u32 {
///     prefixes.insert(&i.to_be_bytes());
/// }
/// assert!(prefixes.filters() > 1);
/// assert!((0..50_000u32).all(|i| prefixes.contains(&i.to_be_bytes())));
/// assert!(prefixes.fpr_bound() <= 0.01 + 1e-12);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ScalableBloom {
    hasher: KeyHasher,
    /// The chain, oldest first.
    filters: Vec<PlainBloom>,
    initial_capacity: u64,
    /// FPR of the first filter.
    initial_fpr: f64,
    growth: u32,
    tightening: f64,
    /// Keys inserted (not counting keys already "maybe").
    len: u64,
}

impl ScalableBloom {
    /// Room for `initial_capacity` keys before it first grows, a chain FPR below `fpr`, the
    /// paper's growth (2) and tightening (0.5).
    pub fn new(
        initial_capacity: u64,
        fpr: f64,
        hasher: KeyHasher,
    ) -> Result<ScalableBloom, FilterError> {
        ScalableBloom::with_growth(
            initial_capacity,
            fpr,
            DEFAULT_GROWTH,
            DEFAULT_TIGHTENING,
            hasher,
        )
    }

    /// Like [`ScalableBloom::new`] with each filter `growth` (2 to 16) times the room of the one
    /// before, at `tightening` (in (0, 1)) times its FPR.
    pub fn with_growth(
        initial_capacity: u64,
        fpr: f64,
        growth: u32,
        tightening: f64,
        hasher: KeyHasher,
    ) -> Result<ScalableBloom, FilterError> {
        check_parameters(fpr, growth, tightening)?;
        let initial_fpr = fpr * (1.0 - tightening);
        let first = PlainBloom::for_keys(initial_capacity, initial_fpr)?;
        Ok(ScalableBloom {
            hasher,
            filters: vec![first],
            initial_capacity,
            initial_fpr,
            growth,
            tightening,
            len: 0,
        })
    }

    /// Inserts `key`; returns `false` when the chain already answered "maybe" for it (nothing
    /// written).
    pub fn insert(&mut self, key: &[u8]) -> bool {
        let hash = self.hasher.hash(key);
        if self.contains_hash(hash) {
            return false;
        }
        let index = self.filters.len() - 1;
        if self.filters[index].inserted() >= self.capacity_of(index) {
            let next = self.filters.len();
            // Past what the numbers can express (an FPR that underflows to 0), the newest
            // filter takes the keys beyond its room: its FPR rises, no key is lost.
            if let Ok(filter) = PlainBloom::for_keys(self.capacity_of(next), self.fpr_of(next)) {
                self.filters.push(filter);
            }
        }
        if let Some(newest) = self.filters.last_mut() {
            newest.insert_hash(hash);
        }
        self.len += 1;
        true
    }

    /// Whether `key` may have been inserted: `false` is certain.
    pub fn contains(&self, key: &[u8]) -> bool {
        self.contains_hash(self.hasher.hash(key))
    }

    fn contains_hash(&self, hash: u64) -> bool {
        // The newest filters hold the most keys: asked first.
        self.filters.iter().rev().any(|f| f.contains_hash(hash))
    }

    /// Keys inserted (a key already "maybe" is not inserted again).
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether nothing was inserted.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Filters in the chain.
    pub fn filters(&self) -> usize {
        self.filters.len()
    }

    /// Bytes of bits over the chain.
    pub fn size_bytes(&self) -> usize {
        self.filters.iter().map(PlainBloom::size_bytes).sum()
    }

    /// The bound the chain's FPR stays under, however far it grows: `p₀ / (1 − r)`.
    pub fn fpr_bound(&self) -> f64 {
        self.initial_fpr / (1.0 - self.tightening)
    }

    /// The chain's FPR now, from the bits set in each filter: `1 − Π(1 − pᵢ)`.
    pub fn current_fpr(&self) -> f64 {
        crate::plain::union_fpr(&self.filters)
    }

    /// Room of filter `i` of the chain.
    fn capacity_of(&self, i: usize) -> u64 {
        let factor = u64::from(self.growth).saturating_pow(i as u32);
        self.initial_capacity.saturating_mul(factor)
    }

    /// FPR filter `i` is sized for.
    fn fpr_of(&self, i: usize) -> f64 {
        self.initial_fpr * self.tightening.powi(i as i32)
    }

    /// The serialized chain: the envelope around u64 initial capacity, f64 initial FPR, u32
    /// growth, u32 filter count, f64 tightening, u64 keys, then each filter.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut payload =
            Vec::with_capacity(PAYLOAD_HEADER + self.size_bytes() + 24 * self.filters.len());
        payload.extend_from_slice(&self.initial_capacity.to_le_bytes());
        payload.extend_from_slice(&self.initial_fpr.to_le_bytes());
        payload.extend_from_slice(&self.growth.to_le_bytes());
        payload.extend_from_slice(&(self.filters.len() as u32).to_le_bytes());
        payload.extend_from_slice(&self.tightening.to_le_bytes());
        payload.extend_from_slice(&self.len.to_le_bytes());
        for f in &self.filters {
            f.encode_into(&mut payload);
        }
        envelope::seal(MAGIC, VERSION, &self.hasher, &payload)
    }

    /// Reads a chain written by [`ScalableBloom::to_bytes`] under the same `hasher`.
    pub fn from_bytes(bytes: &[u8], hasher: &KeyHasher) -> Result<ScalableBloom, FilterError> {
        let payload = envelope::open_payload(bytes, MAGIC, VERSION, hasher, PAYLOAD_HEADER)?;
        let initial_capacity = envelope::read_u64(payload, 0);
        let initial_fpr = f64::from_bits(envelope::read_u64(payload, 8));
        let growth = envelope::read_u32(payload, 16);
        let count = envelope::read_u32(payload, 20) as usize;
        let tightening = f64::from_bits(envelope::read_u64(payload, 24));
        let len = envelope::read_u64(payload, 32);
        // The parameters must be ones `with_growth` accepts.
        check_parameters(initial_fpr / (1.0 - tightening), growth, tightening)?;
        if initial_capacity == 0 || count == 0 {
            return Err(FilterError::InvalidParameter(
                "a chain has at least one filter, with room for a key",
            ));
        }
        let mut filters = Vec::new();
        let mut at = PAYLOAD_HEADER;
        let chain_shape = ScalableBloom {
            hasher: *hasher,
            filters: Vec::new(),
            initial_capacity,
            initial_fpr,
            growth,
            tightening,
            len,
        };
        for i in 0..count {
            let (filter, used) = PlainBloom::decode(&payload[at..])?;
            // Each filter must be the one its place in the chain calls for: the next one grown
            // is then sized from what the bytes hold, not from an arbitrary header.
            if !filter.is_sized_for(chain_shape.capacity_of(i), chain_shape.fpr_of(i)) {
                return Err(FilterError::InvalidParameter(
                    "a filter's size does not match its place in the chain",
                ));
            }
            filters.push(filter);
            at += used;
        }
        if at != payload.len() {
            return Err(FilterError::InvalidParameter("bytes after the last filter"));
        }
        Ok(ScalableBloom {
            filters,
            ..chain_shape
        })
    }
}

/// Refuses an FPR, growth or tightening the chain cannot work with.
pub(crate) fn check_parameters(fpr: f64, growth: u32, tightening: f64) -> Result<(), FilterError> {
    crate::plain::check_fpr(fpr)?;
    if !(2..=MAX_GROWTH).contains(&growth) {
        return Err(FilterError::InvalidParameter("growth must be from 2 to 16"));
    }
    if !(tightening > 0.0 && tightening < 1.0) {
        return Err(FilterError::InvalidParameter(
            "tightening must be in (0, 1)",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chain_grows_and_keeps_its_bound() {
        let mut f = ScalableBloom::new(1_000, 0.01, KeyHasher::default()).unwrap();
        for i in 0..31_000u32 {
            f.insert(&i.to_le_bytes());
        }
        // 1k + 2k + 4k + 8k + 16k = 31k: five filters (a few keys are false positives of the
        // chain and were not inserted, so the fifth is not quite full).
        assert_eq!(f.filters(), 5);
        assert!(
            f.current_fpr() < f.fpr_bound(),
            "{} {}",
            f.current_fpr(),
            f.fpr_bound()
        );
        assert!(
            !f.insert(&7u32.to_le_bytes()),
            "a repeated key is not inserted again"
        );
        let back = ScalableBloom::from_bytes(&f.to_bytes(), &KeyHasher::default()).unwrap();
        assert_eq!(back, f);
    }

    #[test]
    fn bad_parameters_are_refused() {
        let h = KeyHasher::default();
        assert!(ScalableBloom::new(0, 0.01, h).is_err());
        assert!(ScalableBloom::new(10, 0.0, h).is_err());
        assert!(ScalableBloom::with_growth(10, 0.01, 1, 0.5, h).is_err());
        assert!(ScalableBloom::with_growth(10, 0.01, 2, 1.0, h).is_err());
    }
}
