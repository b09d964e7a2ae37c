//! The sharded cache: picks a shard per key and runs each shard operation
//! under that shard's lock.

use std::fmt;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::key::{BlockKey, BlockKind, Priority};
use crate::options::CacheOptions;
use crate::pin::PinnedBlock;
use crate::shard::{Garbage, Shard};
use crate::stats::CacheStats;

/// A sharded, byte-bounded LRU cache of table blocks, shared between threads.
///
/// - **Sharding.** `2^num_shard_bits` shards, each an independent cache of
///   `capacity / num_shards` bytes behind its own [`parking_lot::Mutex`]; a
///   key's shard is chosen by a hash of the key. Locks are held only for
///   map and list updates: loading a block and dropping evicted values happen
///   outside them.
/// - **Charges.** Every entry is charged the byte count given on insert.
/// - **Shared values.** Values are `Arc<V>`: a reader keeps a block alive
///   after eviction without holding any lock.
/// - **Priorities.** [`Priority::High`] entries (index and filter blocks) live
///   in a pool of `high_priority_pool_ratio` of each shard, evicted only once no
///   low-priority entry is left; when the pool is full its oldest entries
///   become the newest low-priority ones.
/// - **Pinning.** A [`PinnedBlock`] guard keeps its entry out of eviction
///   whatever the pressure. Pinned bytes count in `usage` and separately in
///   `pinned_usage`, so the cache exceeds its capacity only by pinned bytes.
///   Dropping the last guard returns the entry to its LRU as most recently
///   used.
/// - **Oversize entries.** An unpinned insert larger than one shard's capacity
///   is not cached: the value is returned to the caller and counted as a
///   rejection, and nothing else is evicted for it. Pinned inserts are always
///   admitted; such an entry is evicted when its last pin goes away.
///
/// Clones share the same cache (like an `Arc`).
///
/// # Example
///
/// ```
/// use std::sync::Arc;
/// use siftdb_cache::{BlockCache, BlockKey, BlockKind, CacheOptions, Priority};
///
/// let cache: BlockCache<Vec<u8>> = BlockCache::new(CacheOptions::new(64 << 20));
/// let key = BlockKey::new(7, 4096);
///
/// // The read path: a miss loads the block (outside any lock) and caches it.
/// let block = cache.get_or_insert_with(key, BlockKind::Data, Priority::Low, || {
///     let bytes = vec![0u8; 4096]; // read and checksum the block here
///     let charge = bytes.len();
///     Ok::<_, std::io::Error>((bytes, charge))
/// })?;
/// assert_eq!(block.len(), 4096);
/// assert!(cache.get(&key, BlockKind::Data).is_some());
///
/// // An L0 table pins its filter block for as long as it stays in L0.
/// let filter_key = BlockKey::new(7, 0);
/// let filter = cache.insert_pinned(
///     filter_key, Arc::new(vec![0xff; 1024]), 1024, BlockKind::Filter, Priority::High);
/// assert_eq!(cache.stats().pinned_usage, 1024);
/// drop(filter); // back into the high-priority LRU
///
/// let stats = cache.stats();
/// assert_eq!(stats.kind(BlockKind::Data).misses, 1);
/// assert_eq!(stats.kind(BlockKind::Data).hits, 1);
/// assert_eq!(stats.usage, 4096 + 1024);
/// assert_eq!(stats.pinned_usage, 0);
///
/// cache.erase_table(7); // the table became obsolete
/// assert_eq!(cache.stats().usage, 0);
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct BlockCache<V> {
    inner: Arc<Inner<V>>,
}

/// The state shared by a cache, its clones and its pin guards.
pub(crate) struct Inner<V> {
    shards: Box<[ShardSlot<V>]>,
    shard_mask: u64,
    capacity: usize,
}

/// A shard's lock on its own cache lines, so that threads working on
/// neighbouring shards do not invalidate each other's lock word (128 bytes:
/// adjacent-line prefetching pairs 64-byte lines).
#[repr(align(128))]
struct ShardSlot<V>(Mutex<Shard<V>>);

impl<V> Inner<V> {
    /// Runs `op` on `key`'s shard under its lock, then drops the values the
    /// operation removed, after unlocking: freeing a block can be slow and
    /// must not extend the critical section.
    pub(crate) fn with_shard<R>(
        &self,
        key: &BlockKey,
        op: impl FnOnce(&mut Shard<V>, &mut Garbage<V>) -> R,
    ) -> R {
        let mut garbage = Garbage::new();
        let result = op(&mut self.shard(key).lock(), &mut garbage);
        drop(garbage);
        result
    }

    fn shard(&self, key: &BlockKey) -> &Mutex<Shard<V>> {
        // The mask keeps the index below `shards.len()`, a power of two.
        &self.shards[(key.shard_hash() & self.shard_mask) as usize].0
    }
}

impl<V> BlockCache<V> {
    /// An empty cache configured by `options` (clamped as documented on
    /// [`CacheOptions`]).
    pub fn new(options: CacheOptions) -> Self {
        let num_shards = 1usize << options.effective_shard_bits();
        let shard_capacity = options.capacity_bytes.div_ceil(num_shards);
        // Truncation is fine: the pool is a soft share, and the cast
        // saturates for huge capacities.
        let high_capacity =
            (shard_capacity as f64 * options.effective_high_priority_ratio()) as usize;
        let shards = (0..num_shards)
            .map(|_| {
                ShardSlot(Mutex::new(Shard::new(
                    shard_capacity,
                    high_capacity,
                    options.admission,
                )))
            })
            .collect();
        Self {
            inner: Arc::new(Inner {
                shards,
                shard_mask: num_shards as u64 - 1,
                capacity: options.capacity_bytes,
            }),
        }
    }

    /// Configured capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.inner.capacity
    }

    /// Number of shards (a power of two).
    pub fn num_shards(&self) -> usize {
        self.inner.shards.len()
    }

    /// The block under `key`, counting a hit or a miss for `kind`. A hit
    /// becomes the most recently used entry of its LRU.
    pub fn get(&self, key: &BlockKey, kind: BlockKind) -> Option<Arc<V>> {
        self.inner
            .with_shard(key, |shard, _| shard.lookup(key, kind))
    }

    /// The block under `key` if cached, without counting a lookup and without
    /// making it more recently used: for readers that must not disturb the
    /// cache (a compaction reads every block of its inputs once; counting or
    /// promoting those reads would skew the hit rate and keep blocks that no
    /// user reads).
    pub fn peek(&self, key: &BlockKey) -> Option<Arc<V>> {
        self.inner.with_shard(key, |shard, _| shard.peek(key))
    }

    /// Caches `value` under `key`, charged `charge` bytes, and returns the
    /// value now cached there.
    ///
    /// If `key` is already resident, the resident value is kept (and touched)
    /// and returned, and `value` is dropped: keys name immutable blocks, so
    /// both are the same bytes, and concurrent loaders of one block end up
    /// sharing one copy. Not counted as an insert.
    ///
    /// If `charge` exceeds one shard's capacity the value is returned without
    /// being cached (counted in [`KindStats::rejections`](crate::KindStats::rejections)).
    /// Otherwise the entry is admitted and least recently used unpinned
    /// entries are evicted until the shard fits; if pinned entries fill the
    /// shard, that may be the new entry itself (counted as insert then
    /// eviction); the returned value stays valid either way.
    pub fn insert(
        &self,
        key: BlockKey,
        value: Arc<V>,
        charge: usize,
        kind: BlockKind,
        priority: Priority,
    ) -> Arc<V> {
        self.inner.with_shard(&key, |shard, garbage| {
            shard.insert(key, value, charge, kind, priority, garbage)
        })
    }

    /// The block under `key` if cached (a hit), else loads it with `load`,
    /// which returns the block and its charge, and inserts it (a miss).
    ///
    /// `load` runs without any lock held, so a slow read blocks no other key.
    /// Two threads missing on the same key may both load it; the first insert
    /// wins and both get its value. An error from `load` is returned as is and
    /// nothing is cached.
    pub fn get_or_insert_with<E>(
        &self,
        key: BlockKey,
        kind: BlockKind,
        priority: Priority,
        load: impl FnOnce() -> Result<(V, usize), E>,
    ) -> Result<Arc<V>, E> {
        if let Some(value) = self.get(&key, kind) {
            return Ok(value);
        }
        let (value, charge) = load()?;
        Ok(self.insert(key, Arc::new(value), charge, kind, priority))
    }

    /// Pins the cached block under `key`, if any: until the returned guard
    /// (and all its clones) are dropped, the entry cannot be evicted. Pins are
    /// counted, so pinning twice needs two drops. Not counted as a lookup.
    pub fn pin(&self, key: &BlockKey) -> Option<PinnedBlock<V>> {
        let (value, pin_id) = self.inner.with_shard(key, |shard, _| shard.pin(key))?;
        Some(PinnedBlock::new(
            Arc::clone(&self.inner),
            *key,
            value,
            pin_id,
        ))
    }

    /// Caches `value` under `key` pinned, charged `charge` bytes, whatever its
    /// size and the pressure (unpinned entries are evicted to make room). If
    /// `key` is resident, pins the resident value instead and drops `value`.
    pub fn insert_pinned(
        &self,
        key: BlockKey,
        value: Arc<V>,
        charge: usize,
        kind: BlockKind,
        priority: Priority,
    ) -> PinnedBlock<V> {
        let (value, pin_id) = self.inner.with_shard(&key, |shard, garbage| {
            shard.insert_pinned(key, value, charge, kind, priority, garbage)
        });
        PinnedBlock::new(Arc::clone(&self.inner), key, value, pin_id)
    }

    /// [`get_or_insert_with`](Self::get_or_insert_with), returning a pin: for
    /// blocks a table keeps for its lifetime in L0 (filter and index blocks).
    /// Counts a hit or a miss for `kind`.
    pub fn get_or_insert_pinned_with<E>(
        &self,
        key: BlockKey,
        kind: BlockKind,
        priority: Priority,
        load: impl FnOnce() -> Result<(V, usize), E>,
    ) -> Result<PinnedBlock<V>, E> {
        let pinned = self
            .inner
            .with_shard(&key, |shard, _| shard.lookup_and_pin(&key, kind));
        if let Some((value, pin_id)) = pinned {
            return Ok(PinnedBlock::new(
                Arc::clone(&self.inner),
                key,
                value,
                pin_id,
            ));
        }
        let (value, charge) = load()?;
        Ok(self.insert_pinned(key, Arc::new(value), charge, kind, priority))
    }

    /// Removes `key` from the cache, pinned or not; returns whether it was
    /// resident. Its charge leaves the cache at once; outstanding `Arc`s and
    /// pin guards keep the value alive, and dropping those guards later has
    /// no effect on the cache (even if `key` was re-inserted meanwhile).
    pub fn erase(&self, key: &BlockKey) -> bool {
        self.inner
            .with_shard(key, |shard, garbage| shard.erase(key, garbage))
    }

    /// Removes every block of table `table_id` (an obsolete table), pinned or
    /// not; returns how many. Scans every entry of every shard, one shard
    /// lock at a time: cheap next to deleting a table file, but not for a hot
    /// path.
    pub fn erase_table(&self, table_id: u64) -> usize {
        self.erase_tables(table_id..=table_id)
    }

    /// Removes every block of the tables whose ids are in `table_ids` (a closed
    /// database's, when several share the cache), pinned or not; returns how
    /// many. Scans like [`BlockCache::erase_table`].
    pub fn erase_tables(&self, table_ids: std::ops::RangeInclusive<u64>) -> usize {
        let mut erased = 0;
        for slot in self.inner.shards.iter() {
            let mut garbage = Garbage::new();
            erased += slot.0.lock().erase_tables(&table_ids, &mut garbage);
            drop(garbage);
        }
        erased
    }

    /// A snapshot of the counters and usage figures (see [`CacheStats`] for
    /// consistency under concurrent use).
    pub fn stats(&self) -> CacheStats {
        let mut stats = CacheStats {
            capacity: self.inner.capacity,
            num_shards: self.inner.shards.len(),
            ..CacheStats::default()
        };
        for slot in self.inner.shards.iter() {
            slot.0.lock().add_to(&mut stats);
        }
        stats
    }

    /// Whether `key` is resident, without touching LRU order or counters
    /// (tests only).
    #[cfg(test)]
    pub(crate) fn contains(&self, key: &BlockKey) -> bool {
        self.inner.shard(key).lock().contains(key)
    }

    /// Checks every shard's internal invariants (tests only).
    #[cfg(test)]
    pub(crate) fn check_invariants(&self) {
        for slot in self.inner.shards.iter() {
            slot.0.lock().check_invariants();
        }
    }
}

impl<V> Clone for BlockCache<V> {
    /// Another handle to the same cache.
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<V> fmt::Debug for BlockCache<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlockCache")
            .field("capacity", &self.inner.capacity)
            .field("num_shards", &self.inner.shards.len())
            .finish_non_exhaustive()
    }
}
