//! A rotating (time-bucketed) bloom filter, for stream de-duplication: "was this seen in the
//! last hour?".
//!
//! The window is `buckets` bloom filters, each for one slice of time (six of ten minutes for an
//! hour). Keys go into the newest bucket; a query asks every bucket. When a slice of time ends,
//! [`RotatingBloom::rotate`] retires the oldest bucket whole (cleared and reused as the newest),
//! never key by key: nothing to count, nothing to delete. A key is found as long as the bucket it
//! went into has not been retired, that is for at least `buckets − 1` full slices after its
//! insertion. Each bucket is sized for `keys_per_bucket` keys at `1 − (1 − fpr)^(1/buckets)`, so
//! a query over the whole window stays under `fpr` while no bucket holds more than its keys.
//!
//! The filter keeps no clock: the caller rotates on its own (a timer, or
//! [`RotatingBloom::advance_to`] with the number of the current slice, e.g. `unix_secs / 600`).

use crate::envelope;
use crate::error::FilterError;
use crate::hash::KeyHasher;
use crate::plain::PlainBloom;

const MAGIC: [u8; 4] = *b"SRBF";
const VERSION: u8 = 1;
/// Bytes of the payload before the buckets.
const PAYLOAD_HEADER: usize = 24;

/// See the module documentation.
///
/// ```
/// use siftdb_filter::{KeyHasher, RotatingBloom};
///
/// # fn main() -> Result<(), siftdb_filter::FilterError> {
/// // The last hour in six slices of ten minutes, 100,000 events per slice, 1 % FPR.
/// let mut seen = RotatingBloom::new(6, 100_000, 0.01, KeyHasher::default())?;
/// let slice = |unix_secs: u64| unix_secs / 600;
/// seen.advance_to(slice(1_700_000_000));
/// assert!(!seen.check_and_insert(b"event-1")); // new
/// assert!(seen.check_and_insert(b"event-1")); // a duplicate
/// seen.advance_to(slice(1_700_000_000 + 3_600)); // an hour later: six rotations
/// assert!(!seen.contains(b"event-1")); // its bucket was retired
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RotatingBloom {
    hasher: KeyHasher,
    /// The window's buckets; `newest` is where keys go.
    buckets: Vec<PlainBloom>,
    newest: usize,
    /// The slice number [`RotatingBloom::advance_to`] last moved to.
    slice: u64,
}

impl RotatingBloom {
    /// A window of `buckets` (≥ 2) buckets of `keys_per_bucket` keys each, with a window FPR
    /// below `fpr`.
    pub fn new(
        buckets: usize,
        keys_per_bucket: u64,
        fpr: f64,
        hasher: KeyHasher,
    ) -> Result<RotatingBloom, FilterError> {
        if !(2..=1024).contains(&buckets) {
            return Err(FilterError::InvalidParameter(
                "buckets must be from 2 to 1024",
            ));
        }
        crate::plain::check_fpr(fpr)?;
        let per_bucket = 1.0 - (1.0 - fpr).powf(1.0 / buckets as f64);
        let bucket = PlainBloom::for_keys(keys_per_bucket, per_bucket)?;
        Ok(RotatingBloom {
            hasher,
            buckets: vec![bucket; buckets],
            newest: 0,
            slice: 0,
        })
    }

    /// Inserts `key` into the newest bucket.
    pub fn insert(&mut self, key: &[u8]) {
        let hash = self.hasher.hash(key);
        self.buckets[self.newest].insert_hash(hash);
    }

    /// Whether `key` may have been inserted into a bucket still in the window.
    pub fn contains(&self, key: &[u8]) -> bool {
        let hash = self.hasher.hash(key);
        self.buckets.iter().any(|b| b.contains_hash(hash))
    }

    /// Whether `key` was (maybe) seen in the window; inserts it if not. `false`: certainly new.
    pub fn check_and_insert(&mut self, key: &[u8]) -> bool {
        let hash = self.hasher.hash(key);
        if self.buckets.iter().any(|b| b.contains_hash(hash)) {
            return true;
        }
        self.buckets[self.newest].insert_hash(hash);
        false
    }

    /// Retires the oldest bucket: it is cleared and becomes the newest.
    pub fn rotate(&mut self) {
        self.newest = (self.newest + 1) % self.buckets.len();
        self.buckets[self.newest].clear();
    }

    /// Moves the window to slice number `slice` (a clock reading divided by the slice's
    /// length): one rotation per slice passed, at most one full turn. An earlier slice than the
    /// last one changes nothing.
    pub fn advance_to(&mut self, slice: u64) {
        if self.slice == 0 && self.buckets.iter().all(|b| b.inserted() == 0) {
            // A fresh window starts at the first slice it is told about.
            self.slice = slice;
            return;
        }
        let passed = slice.saturating_sub(self.slice);
        let turns = passed.min(self.buckets.len() as u64);
        for _ in 0..turns {
            self.rotate();
        }
        self.slice = self.slice.max(slice);
    }

    /// Buckets in the window.
    pub fn buckets(&self) -> usize {
        self.buckets.len()
    }

    /// Keys in the newest bucket.
    pub fn newest_len(&self) -> u64 {
        self.buckets[self.newest].inserted()
    }

    /// Bytes of bits over the window.
    pub fn size_bytes(&self) -> usize {
        self.buckets.iter().map(PlainBloom::size_bytes).sum()
    }

    /// The window's FPR now, from the bits set: `1 − Π(1 − pᵢ)`.
    pub fn current_fpr(&self) -> f64 {
        crate::plain::union_fpr(&self.buckets)
    }

    /// The serialized window: the envelope around u32 buckets, u32 newest, u64 slice, u64 0,
    /// then each bucket.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut payload =
            Vec::with_capacity(PAYLOAD_HEADER + self.size_bytes() + 24 * self.buckets.len());
        payload.extend_from_slice(&(self.buckets.len() as u32).to_le_bytes());
        payload.extend_from_slice(&(self.newest as u32).to_le_bytes());
        payload.extend_from_slice(&self.slice.to_le_bytes());
        payload.extend_from_slice(&0u64.to_le_bytes());
        for b in &self.buckets {
            b.encode_into(&mut payload);
        }
        envelope::seal(MAGIC, VERSION, &self.hasher, &payload)
    }

    /// Reads a window written by [`RotatingBloom::to_bytes`] under the same `hasher`.
    pub fn from_bytes(bytes: &[u8], hasher: &KeyHasher) -> Result<RotatingBloom, FilterError> {
        let payload = envelope::open_payload(bytes, MAGIC, VERSION, hasher, PAYLOAD_HEADER)?;
        let count = envelope::read_u32(payload, 0) as usize;
        let newest = envelope::read_u32(payload, 4) as usize;
        let slice = envelope::read_u64(payload, 8);
        if !(2..=1024).contains(&count) || newest >= count {
            return Err(FilterError::InvalidParameter(
                "bad bucket count or newest bucket",
            ));
        }
        let mut buckets = Vec::with_capacity(count);
        let mut at = PAYLOAD_HEADER;
        for _ in 0..count {
            let (bucket, used) = PlainBloom::decode(&payload[at..])?;
            buckets.push(bucket);
            at += used;
        }
        if at != payload.len() {
            return Err(FilterError::InvalidParameter("bytes after the last bucket"));
        }
        Ok(RotatingBloom {
            hasher: *hasher,
            buckets,
            newest,
            slice,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_lives_until_its_bucket_is_retired() {
        let mut w = RotatingBloom::new(4, 1_000, 0.001, KeyHasher::default()).unwrap();
        w.insert(b"k");
        for _ in 0..3 {
            w.rotate();
            assert!(w.contains(b"k"), "within the window");
        }
        w.rotate();
        assert!(!w.contains(b"k"), "its bucket was retired whole");
        let back = RotatingBloom::from_bytes(&w.to_bytes(), &KeyHasher::default()).unwrap();
        assert_eq!(back, w);
    }

    #[test]
    fn advancing_rotates_once_per_slice_and_at_most_a_turn() {
        let mut w = RotatingBloom::new(3, 100, 0.01, KeyHasher::default()).unwrap();
        w.advance_to(1_000);
        w.insert(b"a");
        w.advance_to(1_001);
        w.insert(b"b");
        w.advance_to(999); // the past: nothing
        assert!(w.contains(b"a") && w.contains(b"b"));
        w.advance_to(1_002);
        assert!(w.contains(b"a"), "a's bucket is the oldest, still in");
        w.advance_to(1_003);
        assert!(!w.contains(b"a") && w.contains(b"b"));
        w.advance_to(u64::MAX);
        assert!(!w.contains(b"b"));
        assert_eq!(w.newest_len(), 0);
    }
}
