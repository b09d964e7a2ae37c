//! Which data blocks a full shard lets in: the articles' "guard writes, not reads" pattern.
//!
//! A plain LRU admits every block it is handed, so one scan over more data than the cache
//! holds replaces everything the lookups keep reading. An admission policy asks, before a
//! data block displaces anything, whether the block has shown that it will be read again:
//!
//! - [`Admission::SecondSighting`]: a block enters on its second sighting within a window. The
//!   sightings are remembered by a rotating bloom filter (two count-bucketed buckets, the
//!   oldest retired whole every `window` sightings, never item by item), so a scan's blocks,
//!   each seen once, never enter, and a block read twice within about one to two cache-fulls
//!   of misses does.
//! - [`Admission::TinyLfu`] (Einziger, Friedman and Manes, "TinyLFU", 2017): every data-block
//!   access is counted in a frequency sketch (a counting bloom of 4-bit counters, halved every
//!   `10 · window` accesses so that it follows recent frequency); a block enters only if the
//!   sketch has seen it more often than the block it would evict.
//!
//! Only unpinned, low-priority data blocks are subject to it, and only once their shard is
//! full (until then, nothing is displaced and every block enters). Filter and index blocks,
//! high-priority and pinned entries always enter. See `docs/TUNING.md` for the measurements
//! behind the default.

use siftdb_filter::{CountingBloom, KeyHasher, RotatingBloom};

use crate::key::BlockKey;

/// How a full shard admits data blocks (see the module documentation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Admission {
    /// Every block (plain LRU): a scan larger than the cache replaces its contents. The
    /// cache's default (siftdb's engine picks its own, see `Options::block_cache_admission`).
    #[default]
    All,
    /// A data block enters on its second sighting within a window of recent misses.
    SecondSighting,
    /// A data block enters if a frequency sketch has seen it more often than its victim.
    TinyLfu,
}

/// Blocks a shard of `capacity` bytes is taken to hold (4 KiB blocks), at least 64: the
/// window the admission state is sized for.
fn window_for(capacity: usize) -> u64 {
    (capacity as u64 / 4096).max(64)
}

/// FPR of the sightings filter over its window.
const SIGHTINGS_FPR: f64 = 0.01;
/// FPR the frequency sketch is sized for over its sample.
const SKETCH_FPR: f64 = 0.03;
/// TinyLFU's sample: accesses between two halvings, in windows (the paper's 10 × cache size).
const SKETCH_SAMPLE_WINDOWS: u64 = 10;

/// One shard's admission state.
pub(crate) enum Admitter {
    All,
    Sightings {
        seen: RotatingBloom,
        sightings: u64,
        window: u64,
    },
    TinyLfu {
        sketch: CountingBloom,
        accesses: u64,
        sample: u64,
    },
}

impl Admitter {
    /// The state of `admission` for a shard of `capacity` bytes. A policy whose filter cannot
    /// be sized (never for sane capacities) falls back to admitting everything.
    pub(crate) fn new(admission: Admission, capacity: usize) -> Admitter {
        let window = window_for(capacity);
        let hasher = KeyHasher::default();
        match admission {
            Admission::All => Admitter::All,
            Admission::SecondSighting => RotatingBloom::new(2, window, SIGHTINGS_FPR, hasher)
                .map_or(Admitter::All, |seen| Admitter::Sightings {
                    seen,
                    sightings: 0,
                    window,
                }),
            Admission::TinyLfu => {
                let sample = window * SKETCH_SAMPLE_WINDOWS;
                CountingBloom::new(sample, SKETCH_FPR, hasher).map_or(Admitter::All, |sketch| {
                    Admitter::TinyLfu {
                        sketch,
                        accesses: 0,
                        sample,
                    }
                })
            }
        }
    }

    /// Counts a lookup of a data block (hit or miss) where the policy counts accesses.
    pub(crate) fn record_access(&mut self, key: &BlockKey) {
        if let Admitter::TinyLfu {
            sketch,
            accesses,
            sample,
        } = self
        {
            sketch.insert(&key_bytes(key));
            *accesses += 1;
            if *accesses >= *sample {
                sketch.halve();
                *accesses = 0;
            }
        }
    }

    /// Whether a data block about to be inserted may enter: `full` says whether it would
    /// displace something, `victim` is the entry it would displace first. A sighting is
    /// recorded either way.
    pub(crate) fn admit(&mut self, key: &BlockKey, full: bool, victim: Option<&BlockKey>) -> bool {
        match self {
            Admitter::All => true,
            Admitter::Sightings {
                seen,
                sightings,
                window,
            } => {
                let seen_before = seen.check_and_insert(&key_bytes(key));
                *sightings += 1;
                if sightings.is_multiple_of(*window) {
                    seen.rotate();
                }
                !full || seen_before
            }
            Admitter::TinyLfu { sketch, .. } => {
                !full
                    || victim.is_none_or(|v| {
                        sketch.estimate(&key_bytes(key)) > sketch.estimate(&key_bytes(v))
                    })
            }
        }
    }
}

fn key_bytes(key: &BlockKey) -> [u8; 16] {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&key.table_id.to_le_bytes());
    bytes[8..].copy_from_slice(&key.offset.to_le_bytes());
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_sighting_admits_a_block_seen_twice_and_not_a_scan() {
        let mut a = Admitter::new(Admission::SecondSighting, 64 * 4096);
        let hot = BlockKey::new(1, 0);
        assert!(!a.admit(&hot, true, None));
        assert!(a.admit(&hot, true, None));
        // A scan of 10 windows: no block of it is seen twice.
        let admitted = (0..640u64)
            .filter(|i| a.admit(&BlockKey::new(2, i * 4096), true, None))
            .count();
        assert!(admitted <= 13, "{admitted} scan blocks admitted");
        // Not full: everything enters.
        assert!(a.admit(&BlockKey::new(3, 0), false, None));
    }

    #[test]
    fn tiny_lfu_prefers_the_more_frequent_block() {
        let mut a = Admitter::new(Admission::TinyLfu, 64 * 4096);
        let (hot, cold) = (BlockKey::new(1, 0), BlockKey::new(2, 0));
        for _ in 0..3 {
            a.record_access(&hot);
        }
        a.record_access(&cold);
        assert!(!a.admit(&cold, true, Some(&hot)));
        assert!(a.admit(&hot, true, Some(&cold)));
        assert!(a.admit(&cold, false, Some(&hot)));
    }
}
