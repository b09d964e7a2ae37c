//! A [`ScalableBloom`](crate::ScalableBloom) that threads insert into and query at the same
//! time, without a lock: what a memtable needs (RocksDB's memtable bloom), since readers search
//! a memtable while its writer fills it, and nobody knows how many keys it will hold when it is
//! made.
//!
//! The chain is a fixed row of slots, each filled once (`OnceLock`) with a cache-line blocked
//! bloom filter of atomic words (one cache line per key and filter, as the articles advise:
//! count cache misses, not hash operations). The `n`-th insert goes to the filter whose room covers `n` (filter `i` has room for
//! `initial · growth^i` keys at FPR `p₀ · tightening^i`, as in the scalable bloom), created by
//! the first insert that reaches it. Bits are set with atomic OR and read with atomic loads, so a
//! query never waits and never sees a torn word. A query asks every filter created so far.
//!
//! **Memory ceiling.** `max_bytes` (0: none) stops the growth: the last filter that fits takes
//! every later key, so its FPR rises with them — a ceiling costs precision, never a key.
//!
//! **Visibility.** An insert is visible to a query that starts after the insert returned (the
//! atomic OR is done by then); a caller that publishes its writes through a release store (a
//! memtable's sequence number) makes them visible to readers that acquire it.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;

use crate::atomic_bloom::AtomicBlockedBloom;
use crate::bloom::{
    best_num_probes, blocked_bloom_fpr, num_blocks_for, BLOCK_BITS, BLOCK_BYTES, MAX_BITS_PER_KEY,
};
use crate::error::FilterError;
use crate::hash::KeyHasher;

/// Slots of the chain: with growth 2, room for `initial · (2^32 − 1)` keys before the last
/// filter takes the rest.
const SLOTS: usize = 32;

/// Bits per key are searched in these steps for the smallest that meets an FPR.
const BITS_PER_KEY_STEP: f64 = 0.25;

/// Blocks and probes of a blocked bloom filter for `keys` keys at an FPR of at most `fpr`: the
/// fewest bits per key (in steps of [`BITS_PER_KEY_STEP`]) whose blocked FPR meets it (blocked
/// filters need about half a bit per key more than plain ones for the same FPR).
fn blocked_sizing(keys: u64, fpr: f64) -> Result<(usize, u8), FilterError> {
    crate::plain::check_fpr(fpr)?;
    let keys = usize::try_from(keys)
        .map_err(|_| FilterError::InvalidParameter("the filter does not fit in memory"))?;
    let mut bits_per_key = 2.0;
    while bits_per_key <= MAX_BITS_PER_KEY {
        let load = f64::from(BLOCK_BITS) / bits_per_key;
        let probes = best_num_probes(load);
        if blocked_bloom_fpr(load, probes) <= fpr {
            return Ok((num_blocks_for(keys.max(1), bits_per_key), probes));
        }
        bits_per_key += BITS_PER_KEY_STEP;
    }
    Err(FilterError::InvalidParameter(
        "fpr too small for a blocked bloom filter",
    ))
}

impl AtomicBlockedBloom {
    /// A filter for `keys` keys at an FPR of at most `fpr`.
    fn for_keys(keys: u64, fpr: f64) -> Result<AtomicBlockedBloom, FilterError> {
        let (blocks, num_probes) = blocked_sizing(keys, fpr)?;
        Ok(AtomicBlockedBloom::with_blocks(blocks, num_probes))
    }
}

/// See the module documentation.
///
/// ```
/// use std::sync::Arc;
/// use siftdb_filter::{ConcurrentScalableBloom, KeyHasher};
///
/// # fn main() -> Result<(), siftdb_filter::FilterError> {
/// let seen = Arc::new(ConcurrentScalableBloom::new(1_000, 0.01, 0, KeyHasher::default())?);
/// let writer = {
///     let seen = Arc::clone(&seen);
///     std::thread::spawn(move || (0..20_000u32).for_each(|i| seen.insert(&i.to_be_bytes())))
/// };
/// writer.join().expect("the writer thread");
/// assert!((0..20_000u32).all(|i| seen.contains(&i.to_be_bytes())));
/// assert!(seen.filters() > 1);
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct ConcurrentScalableBloom {
    hasher: KeyHasher,
    slots: Box<[OnceLock<AtomicBlockedBloom>]>,
    /// The slots the memory ceiling allows (at least one).
    usable_slots: usize,
    /// The highest slot created so far.
    newest: AtomicUsize,
    inserts: AtomicU64,
    initial_capacity: u64,
    initial_fpr: f64,
    growth: u32,
    tightening: f64,
}

impl ConcurrentScalableBloom {
    /// Room for `initial_capacity` keys before it first grows, a chain FPR below `fpr` (while
    /// under the ceiling), the paper's growth (2) and tightening (0.5), and at most `max_bytes`
    /// of filters (0: no ceiling; the first filter is always made, whatever its size).
    pub fn new(
        initial_capacity: u64,
        fpr: f64,
        max_bytes: usize,
        hasher: KeyHasher,
    ) -> Result<ConcurrentScalableBloom, FilterError> {
        crate::scalable::check_parameters(fpr, 2, 0.5)?;
        let mut bloom = ConcurrentScalableBloom {
            hasher,
            slots: (0..SLOTS).map(|_| OnceLock::new()).collect(),
            usable_slots: 1,
            newest: AtomicUsize::new(0),
            inserts: AtomicU64::new(0),
            initial_capacity,
            initial_fpr: fpr * 0.5,
            growth: 2,
            tightening: 0.5,
        };
        // Every slot's size is known now: count the ones that fit under the ceiling.
        let mut total = 0usize;
        for i in 0..SLOTS {
            let Ok(bytes) = bloom.bytes_of(i) else {
                break;
            };
            total = total.saturating_add(bytes);
            if i > 0 && max_bytes > 0 && total > max_bytes {
                break;
            }
            bloom.usable_slots = i + 1;
        }
        // The first filter is made now, so that an empty bloom already answers (and its size is
        // charged from the start).
        bloom.slot(0)?;
        Ok(bloom)
    }

    fn capacity_of(&self, i: usize) -> u64 {
        let factor = u64::from(self.growth).saturating_pow(i as u32);
        self.initial_capacity.saturating_mul(factor)
    }

    fn fpr_of(&self, i: usize) -> f64 {
        self.initial_fpr * self.tightening.powi(i as i32)
    }

    /// Bytes filter `i` will take (without making it).
    fn bytes_of(&self, i: usize) -> Result<usize, FilterError> {
        let (blocks, _) = blocked_sizing(self.capacity_of(i), self.fpr_of(i))?;
        Ok(blocks.saturating_mul(BLOCK_BYTES))
    }

    /// Filter `i`, made on first use.
    fn slot(&self, i: usize) -> Result<&AtomicBlockedBloom, FilterError> {
        if let Some(filter) = self.slots[i].get() {
            return Ok(filter);
        }
        let made = AtomicBlockedBloom::for_keys(self.capacity_of(i), self.fpr_of(i))?;
        let filter = self.slots[i].get_or_init(|| made);
        self.newest.fetch_max(i, Ordering::Release);
        Ok(filter)
    }

    /// The slot the `n`-th insert (from 0) goes to.
    fn slot_for(&self, n: u64) -> usize {
        let mut room = 0u64;
        for i in 0..self.usable_slots {
            room = room.saturating_add(self.capacity_of(i));
            if n < room {
                return i;
            }
        }
        self.usable_slots - 1
    }

    /// Inserts `key`.
    pub fn insert(&self, key: &[u8]) {
        self.insert_hash(self.hasher.hash(key));
    }

    /// Inserts a key by its hash (from [`ConcurrentScalableBloom::hasher`]). A key the chain
    /// already answers "maybe" for is not inserted again (as in [`ScalableBloom`]), so repeated
    /// keys — a memtable's shared prefixes — do not use up room.
    ///
    /// [`ScalableBloom`]: crate::ScalableBloom
    pub fn insert_hash(&self, hash: u64) {
        if self.contains_hash(hash) {
            return;
        }
        let n = self.inserts.fetch_add(1, Ordering::Relaxed);
        let mut i = self.slot_for(n);
        // Sizing only fails for an FPR too small to express; slot 0 exists since `new`, so
        // the newest slot that does takes the key.
        loop {
            if let Ok(filter) = self.slot(i) {
                filter.insert_hash(hash);
                return;
            }
            i = i.saturating_sub(1);
        }
    }

    /// Whether `key` may have been inserted: `false` is certain.
    pub fn contains(&self, key: &[u8]) -> bool {
        self.contains_hash(self.hasher.hash(key))
    }

    /// [`ConcurrentScalableBloom::contains`] by the key's hash.
    pub fn contains_hash(&self, hash: u64) -> bool {
        let newest = self.newest.load(Ordering::Acquire);
        // Newest first: it holds the most keys. A slot may still be empty while a later one is
        // made (two inserts racing across a boundary): skipped, it holds nothing yet.
        self.slots[..=newest]
            .iter()
            .rev()
            .filter_map(OnceLock::get)
            .any(|f| f.may_contain_hash(hash))
    }

    /// The hasher keys are hashed with.
    pub fn hasher(&self) -> &KeyHasher {
        &self.hasher
    }

    /// Keys inserted (a key already "maybe" when inserted is not counted).
    pub fn len(&self) -> u64 {
        self.inserts.load(Ordering::Relaxed)
    }

    /// Whether nothing was inserted.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Filters in the chain so far.
    pub fn filters(&self) -> usize {
        self.slots.iter().filter(|s| s.get().is_some()).count()
    }

    /// Bytes of the filters made so far.
    pub fn size_bytes(&self) -> usize {
        self.slots
            .iter()
            .filter_map(OnceLock::get)
            .map(AtomicBlockedBloom::size_bytes)
            .sum()
    }

    /// The FPR the chain is built to stay under while its keys fit under the ceiling.
    pub fn fpr_bound(&self) -> f64 {
        self.initial_fpr / (1.0 - self.tightening)
    }

    /// Whether the ceiling stopped the growth (the last filter takes keys beyond its room, and
    /// the FPR rises above [`ConcurrentScalableBloom::fpr_bound`]).
    pub fn is_saturated(&self) -> bool {
        let room: u64 = (0..self.usable_slots)
            .map(|i| self.capacity_of(i))
            .fold(0u64, u64::saturating_add);
        self.len() > room
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_inserted_key_is_found_across_growth() {
        let bloom = ConcurrentScalableBloom::new(100, 0.01, 0, KeyHasher::default()).unwrap();
        for i in 0..50_000u32 {
            bloom.insert(&i.to_le_bytes());
        }
        assert!(bloom.filters() >= 9);
        assert!((0..50_000u32).all(|i| bloom.contains(&i.to_le_bytes())));
        let false_positives = (50_000..250_000u32)
            .filter(|i| bloom.contains(&i.to_le_bytes()))
            .count();
        assert!(false_positives < 2_000, "{false_positives} of 200,000");
        assert!(!bloom.is_saturated());
    }

    #[test]
    fn the_ceiling_stops_growth_and_loses_no_key() {
        let bloom = ConcurrentScalableBloom::new(1_000, 0.01, 4_096, KeyHasher::default()).unwrap();
        for i in 0..30_000u32 {
            bloom.insert(&i.to_le_bytes());
        }
        assert!(bloom.size_bytes() <= 4_096, "{}", bloom.size_bytes());
        assert!(bloom.is_saturated());
        assert!((0..30_000u32).all(|i| bloom.contains(&i.to_le_bytes())));
    }

    #[test]
    fn readers_racing_a_writer_never_miss_a_finished_insert() {
        let bloom = std::sync::Arc::new(
            ConcurrentScalableBloom::new(64, 0.01, 0, KeyHasher::default()).unwrap(),
        );
        let done = std::sync::Arc::new(AtomicU64::new(0));
        let reader = {
            let (bloom, done) = (std::sync::Arc::clone(&bloom), std::sync::Arc::clone(&done));
            std::thread::spawn(move || {
                let mut checked = 0u64;
                while done.load(Ordering::Acquire) < 20_000 {
                    let upto = done.load(Ordering::Acquire);
                    for i in upto.saturating_sub(64)..upto {
                        assert!(bloom.contains(&i.to_le_bytes()), "key {i} of {upto}");
                        checked += 1;
                    }
                }
                checked
            })
        };
        for i in 0..20_000u64 {
            bloom.insert(&i.to_le_bytes());
            done.store(i + 1, Ordering::Release);
        }
        assert!(reader.join().unwrap() > 0);
    }
}
