//! Memory held outside the block cache but charged to its budget (RocksDB's
//! `CacheReservationManager`): pinned placeholder entries of at most [`CHUNK`] bytes each, spread
//! over the shards by their keys, so that the cache evicts blocks to make room for the memory and
//! gives it back when the reservation is dropped.

use std::sync::atomic::{AtomicU64, Ordering};

use siftdb_cache::{BlockKey, BlockKind, PinnedBlock, Priority};
use siftdb_sstable::{CachedBlock, TableCache, RESERVATION_TABLE_ID};

/// Bytes per placeholder entry: small next to a shard (a whole reservation in one entry could
/// take a shard's capacity and evict every block in it), large enough that a 10 MB reservation
/// is forty entries.
pub(crate) const CHUNK: usize = 256 << 10;

/// Distinct keys for every placeholder of the process (offsets under [`RESERVATION_TABLE_ID`]).
static NEXT_OFFSET: AtomicU64 = AtomicU64::new(0);

/// `bytes` charged to a block cache until dropped.
pub(crate) struct CacheReservation {
    cache: TableCache,
    pins: Vec<PinnedBlock<CachedBlock>>,
    bytes: usize,
}

impl std::fmt::Debug for CacheReservation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CacheReservation")
            .field("bytes", &self.bytes)
            .finish()
    }
}

impl CacheReservation {
    /// Charges `bytes` to `cache` (pinned: counted in its usage and pinned usage).
    pub(crate) fn charge(cache: &TableCache, bytes: usize) -> CacheReservation {
        let chunk = chunk_for(cache);
        let chunks = bytes.div_ceil(chunk);
        let pins = (0..chunks)
            .map(|i| {
                let charge = if i + 1 == chunks {
                    bytes - i * chunk
                } else {
                    chunk
                };
                let offset = NEXT_OFFSET.fetch_add(1, Ordering::Relaxed);
                cache.insert_pinned(
                    BlockKey::new(RESERVATION_TABLE_ID, offset),
                    std::sync::Arc::new(CachedBlock::Reservation),
                    charge,
                    BlockKind::Filter,
                    Priority::High,
                )
            })
            .collect();
        CacheReservation {
            cache: cache.clone(),
            pins,
            bytes,
        }
    }

    /// The bytes charged.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }
}

/// The placeholder size for `cache`: [`CHUNK`], or an eighth of a shard if that is smaller (a
/// small cache's shards hold a few hundred KiB; one placeholder must not fill one).
fn chunk_for(cache: &TableCache) -> usize {
    let shard = cache.capacity() / cache.num_shards().max(1);
    CHUNK.min(shard / 8).max(4 << 10)
}

impl Drop for CacheReservation {
    fn drop(&mut self) {
        // Erased, not just unpinned: an unpinned placeholder would sit in the LRU charging
        // memory nobody holds. Dropping an erased entry's pin afterwards changes nothing.
        for pin in &self.pins {
            self.cache.erase(&pin.key());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_reservation_charges_pinned_bytes_and_returns_them() {
        let cache = TableCache::new(siftdb_cache::CacheOptions::new(64 << 20));
        let reservation = CacheReservation::charge(&cache, 3 * CHUNK + 100);
        assert_eq!(reservation.bytes(), 3 * CHUNK + 100);
        assert_eq!(cache.stats().pinned_usage, 3 * CHUNK + 100);
        assert_eq!(cache.stats().usage, 3 * CHUNK + 100);
        drop(reservation);
        assert_eq!(cache.stats().usage, 0);
        assert_eq!(cache.stats().pinned_usage, 0);
    }

    #[test]
    fn cache_reservation_of_a_small_cache_uses_placeholders_a_shard_can_hold() {
        let cache = TableCache::new(siftdb_cache::CacheOptions::new(1 << 20));
        let shard = cache.capacity() / cache.num_shards();
        let reservation = CacheReservation::charge(&cache, 300 << 10);
        assert_eq!(cache.stats().pinned_usage, 300 << 10);
        assert!(cache.stats().pinned_entries >= (300 << 10) / (shard / 8));
        drop(reservation);
        assert_eq!(cache.stats().pinned_entries, 0);
    }
}
