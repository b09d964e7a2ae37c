//! One shard: the eviction policy and the accounting, with no locking.
//!
//! The owner ([`crate::BlockCache`]) keeps each shard behind its own mutex;
//! everything here assumes exclusive access. Every resident entry is in exactly
//! one of three places:
//!
//! - `low`: the low-priority LRU, evicted first;
//! - `high`: the high-priority pool, an LRU bounded to `high_capacity` bytes
//!   whose oldest entries overflow into `low` (RocksDB's midpoint insertion);
//! - `pinned`: entries with at least one pin, outside both LRUs, so eviction
//!   cannot see them.
//!
//! Accounting follows RocksDB: pinned entries count in `usage` (and also in
//! `pinned_usage`) but are never evicted. Eviction removes unpinned entries,
//! oldest low-priority first, until `usage <= capacity` or no unpinned entry is
//! left, so after every operation `usage <= max(capacity, pinned_usage)`: the
//! shard exceeds its capacity only by pinned bytes.
//!
//! Values removed by an operation are handed back in a [`Garbage`] list so the
//! caller can drop them (possibly freeing large blocks) after unlocking.

use std::collections::HashMap;
use std::sync::Arc;

use lru::LruCache;

use crate::admission::{Admission, Admitter};
use crate::key::{BlockKey, BlockKeyHashBuilder, BlockKind, Priority};
use crate::stats::{CacheStats, KindStats};

/// Values removed from a shard, to be dropped once its lock is released.
pub(crate) type Garbage<V> = Vec<Arc<V>>;

/// A resident value and what it costs.
struct Entry<V> {
    value: Arc<V>,
    charge: usize,
    kind: BlockKind,
    /// Which LRU the entry goes back to when unpinned.
    priority: Priority,
}

/// An entry held out of the LRUs by `pins` pin guards.
struct PinnedEntry<V> {
    entry: Entry<V>,
    pins: usize,
    /// Identifies this pinned episode. Guards carry it so that a guard whose
    /// entry was erased (and maybe re-inserted and re-pinned under the same
    /// key) cannot unpin an entry it never pinned.
    pin_id: u64,
}

/// A shard of the cache. See the module documentation for the invariants.
pub(crate) struct Shard<V> {
    low: LruCache<BlockKey, Entry<V>, BlockKeyHashBuilder>,
    high: LruCache<BlockKey, Entry<V>, BlockKeyHashBuilder>,
    pinned: HashMap<BlockKey, PinnedEntry<V>, BlockKeyHashBuilder>,
    capacity: usize,
    high_capacity: usize,
    /// Bytes charged by every resident entry (all three places).
    usage: usize,
    /// Bytes charged by entries in `high`.
    high_usage: usize,
    /// Bytes charged by entries in `pinned`.
    pinned_usage: usize,
    next_pin_id: u64,
    counters: [KindStats; BlockKind::COUNT],
    /// Which data blocks enter once the shard is full.
    admitter: Admitter,
}

impl<V> Shard<V> {
    /// An empty shard holding up to `capacity` bytes of unpinned entries, of
    /// which up to `high_capacity` in the high-priority pool.
    pub(crate) fn new(capacity: usize, high_capacity: usize, admission: Admission) -> Self {
        Self {
            // Unbounded in entry count: the shard bounds bytes itself.
            low: LruCache::unbounded_with_hasher(BlockKeyHashBuilder),
            high: LruCache::unbounded_with_hasher(BlockKeyHashBuilder),
            pinned: HashMap::with_hasher(BlockKeyHashBuilder),
            capacity,
            high_capacity: high_capacity.min(capacity),
            usage: 0,
            high_usage: 0,
            pinned_usage: 0,
            next_pin_id: 0,
            counters: [KindStats::default(); BlockKind::COUNT],
            admitter: Admitter::new(admission, capacity),
        }
    }

    /// Looks `key` up, counting a hit or a miss for `kind`; a hit becomes the
    /// most recently used entry of its LRU.
    pub(crate) fn lookup(&mut self, key: &BlockKey, kind: BlockKind) -> Option<Arc<V>> {
        let found = self.find(key);
        self.count_lookup(kind, found.is_some());
        if kind == BlockKind::Data {
            self.admitter.record_access(key);
        }
        found
    }

    /// Inserts an unpinned entry and returns the value now cached under `key`:
    /// the resident one if `key` was already present (`value` is then
    /// discarded: blocks are immutable, so both are the same bytes), else
    /// `value`. An entry larger than the shard's capacity is not admitted
    /// (counted as a rejection) and `value` is returned uncached.
    pub(crate) fn insert(
        &mut self,
        key: BlockKey,
        value: Arc<V>,
        charge: usize,
        kind: BlockKind,
        priority: Priority,
        garbage: &mut Garbage<V>,
    ) -> Arc<V> {
        if let Some(resident) = self.find(&key) {
            garbage.push(value);
            return resident;
        }
        if charge > self.capacity {
            // Admitting it would flush the whole shard for an entry that must
            // then be evicted at once; RocksDB ends in the same state.
            self.counters[kind.index()].rejections += 1;
            return value;
        }
        if !self.admits(&key, charge, kind, priority) {
            self.counters[kind.index()].not_admitted += 1;
            return value;
        }
        self.account_insert(kind, charge);
        let entry = Entry {
            value: Arc::clone(&value),
            charge,
            kind,
            priority,
        };
        self.push_unpinned(key, entry);
        self.evict_to_fit(garbage);
        value
    }

    /// Whether the admission policy lets an unpinned entry in (see `admission.rs`): data
    /// blocks and blob values of low priority are asked, with the entry they would evict
    /// first; everything else enters. (A blob value read once, as most are under random
    /// reads of large values, would otherwise push its size of data blocks out.)
    fn admits(
        &mut self,
        key: &BlockKey,
        charge: usize,
        kind: BlockKind,
        priority: Priority,
    ) -> bool {
        let asked = matches!(kind, BlockKind::Data | BlockKind::Blob);
        if !asked || priority != Priority::Low {
            return true;
        }
        let full = self.usage + charge > self.capacity;
        let victim = self.low.peek_lru().map(|(k, _)| *k);
        self.admitter.admit(key, full, victim.as_ref())
    }

    /// Pins the resident entry under `key`, without counting a lookup.
    /// Returns the value and the pin id for the guard.
    pub(crate) fn pin(&mut self, key: &BlockKey) -> Option<(Arc<V>, u64)> {
        if let Some(pinned) = self.pinned.get_mut(key) {
            pinned.pins += 1;
            return Some((Arc::clone(&pinned.entry.value), pinned.pin_id));
        }
        let entry = if let Some(entry) = self.low.pop(key) {
            entry
        } else if let Some(entry) = self.high.pop(key) {
            self.high_usage -= entry.charge;
            entry
        } else {
            return None;
        };
        Some(self.move_to_pinned(*key, entry))
    }

    /// [`pin`](Self::pin), counting a hit or a miss for `kind`.
    pub(crate) fn lookup_and_pin(
        &mut self,
        key: &BlockKey,
        kind: BlockKind,
    ) -> Option<(Arc<V>, u64)> {
        let found = self.pin(key);
        self.count_lookup(kind, found.is_some());
        found
    }

    /// Inserts `value` pinned (or pins the resident entry if `key` is
    /// present, discarding `value`). Always admitted whatever its size, since
    /// pinned entries are never evicted; unpinned entries are evicted to make
    /// room for it.
    pub(crate) fn insert_pinned(
        &mut self,
        key: BlockKey,
        value: Arc<V>,
        charge: usize,
        kind: BlockKind,
        priority: Priority,
        garbage: &mut Garbage<V>,
    ) -> (Arc<V>, u64) {
        if let Some(resident) = self.pin(&key) {
            garbage.push(value);
            return resident;
        }
        self.account_insert(kind, charge);
        let entry = Entry {
            value,
            charge,
            kind,
            priority,
        };
        let pinned = self.move_to_pinned(key, entry);
        self.evict_to_fit(garbage);
        pinned
    }

    /// Adds a pin to the entry pinned as `pin_id` (a guard being cloned). A
    /// no-op if that pinned episode is over (the entry was erased).
    pub(crate) fn add_pin(&mut self, key: &BlockKey, pin_id: u64) {
        if let Some(pinned) = self.pinned.get_mut(key)
            && pinned.pin_id == pin_id
        {
            pinned.pins += 1;
        }
    }

    /// Drops one pin of the entry pinned as `pin_id`. The last pin returns the
    /// entry to its LRU as most recently used (and may evict others); an entry
    /// larger than the shard's capacity is evicted instead, as it could not be
    /// admitted unpinned. A no-op if the entry was erased meanwhile.
    pub(crate) fn unpin(&mut self, key: &BlockKey, pin_id: u64, garbage: &mut Garbage<V>) {
        let Some(pinned) = self.pinned.get_mut(key) else {
            return;
        };
        if pinned.pin_id != pin_id {
            return;
        }
        pinned.pins -= 1;
        if pinned.pins > 0 {
            return;
        }
        let Some(pinned) = self.pinned.remove(key) else {
            return;
        };
        let entry = pinned.entry;
        self.pinned_usage -= entry.charge;
        if entry.charge > self.capacity {
            self.account_remove(entry.kind, entry.charge);
            self.counters[entry.kind.index()].evictions += 1;
            garbage.push(entry.value);
            return;
        }
        self.push_unpinned(*key, entry);
        self.evict_to_fit(garbage);
    }

    /// Removes `key`, pinned or not. Returns whether it was resident.
    ///
    /// Outstanding pin guards and `Arc`s keep the value alive, but its charge
    /// leaves the cache now: the memory is theirs from here on.
    pub(crate) fn erase(&mut self, key: &BlockKey, garbage: &mut Garbage<V>) -> bool {
        let entry = if let Some(entry) = self.low.pop(key) {
            entry
        } else if let Some(entry) = self.high.pop(key) {
            self.high_usage -= entry.charge;
            entry
        } else if let Some(pinned) = self.pinned.remove(key) {
            self.pinned_usage -= pinned.entry.charge;
            pinned.entry
        } else {
            return false;
        };
        self.account_remove(entry.kind, entry.charge);
        self.counters[entry.kind.index()].erasures += 1;
        garbage.push(entry.value);
        true
    }

    /// Erases every entry of the tables in `table_ids`; returns how many. Scans
    /// the whole shard, since keys of one table are spread over all shards.
    pub(crate) fn erase_tables(
        &mut self,
        table_ids: &std::ops::RangeInclusive<u64>,
        garbage: &mut Garbage<V>,
    ) -> usize {
        let keys: Vec<BlockKey> = self
            .low
            .iter()
            .map(|(key, _)| key)
            .chain(self.high.iter().map(|(key, _)| key))
            .chain(self.pinned.keys())
            .filter(|key| table_ids.contains(&key.table_id))
            .copied()
            .collect();
        for key in &keys {
            self.erase(key, garbage);
        }
        keys.len()
    }

    /// Adds this shard's counters and usage figures to `stats`.
    pub(crate) fn add_to(&self, stats: &mut CacheStats) {
        for (sum, shard) in stats.per_kind.iter_mut().zip(&self.counters) {
            sum.accumulate(shard);
        }
        stats.usage += self.usage;
        stats.pinned_usage += self.pinned_usage;
        stats.high_priority_usage += self.high_usage;
        stats.high_priority_capacity += self.high_capacity;
        stats.entries += self.low.len() + self.high.len() + self.pinned.len();
        stats.pinned_entries += self.pinned.len();
    }

    /// The resident value under `key`, promoted in its LRU.
    /// The entry under `key` without counting a lookup or changing its
    /// recency (`LruCache::peek`).
    pub(crate) fn peek(&self, key: &BlockKey) -> Option<Arc<V>> {
        self.low
            .peek(key)
            .or_else(|| self.high.peek(key))
            .or_else(|| self.pinned.get(key).map(|p| &p.entry))
            .map(|entry| Arc::clone(&entry.value))
    }

    fn find(&mut self, key: &BlockKey) -> Option<Arc<V>> {
        if let Some(entry) = self.low.get(key) {
            return Some(Arc::clone(&entry.value));
        }
        if let Some(entry) = self.high.get(key) {
            return Some(Arc::clone(&entry.value));
        }
        // Usually empty: skip hashing the key a third time.
        if self.pinned.is_empty() {
            return None;
        }
        self.pinned
            .get(key)
            .map(|pinned| Arc::clone(&pinned.entry.value))
    }

    fn count_lookup(&mut self, kind: BlockKind, hit: bool) {
        let counters = &mut self.counters[kind.index()];
        if hit {
            counters.hits += 1;
        } else {
            counters.misses += 1;
        }
    }

    fn account_insert(&mut self, kind: BlockKind, charge: usize) {
        self.usage += charge;
        let counters = &mut self.counters[kind.index()];
        counters.inserts += 1;
        counters.entries += 1;
        counters.bytes += charge;
    }

    fn account_remove(&mut self, kind: BlockKind, charge: usize) {
        self.usage -= charge;
        let counters = &mut self.counters[kind.index()];
        counters.entries -= 1;
        counters.bytes -= charge;
    }

    /// Puts an already-accounted entry into the pinned set with one pin.
    fn move_to_pinned(&mut self, key: BlockKey, entry: Entry<V>) -> (Arc<V>, u64) {
        let pin_id = self.next_pin_id;
        self.next_pin_id += 1;
        self.pinned_usage += entry.charge;
        let value = Arc::clone(&entry.value);
        self.pinned.insert(
            key,
            PinnedEntry {
                entry,
                pins: 1,
                pin_id,
            },
        );
        (value, pin_id)
    }

    /// Puts an already-accounted, non-resident entry at the most recently used
    /// end of its LRU, overflowing the high-priority pool into the low one.
    fn push_unpinned(&mut self, key: BlockKey, entry: Entry<V>) {
        if entry.priority == Priority::Low || self.high_capacity == 0 {
            self.low.push(key, entry);
            return;
        }
        self.high_usage += entry.charge;
        self.high.push(key, entry);
        while self.high_usage > self.high_capacity {
            let Some((key, entry)) = self.high.pop_lru() else {
                break;
            };
            self.high_usage -= entry.charge;
            // Becomes the newest low-priority entry: it outlives the older
            // data blocks, as in RocksDB's midpoint insertion.
            self.low.push(key, entry);
        }
    }

    /// Evicts unpinned entries, oldest low-priority first, until the shard
    /// fits its capacity or only pinned entries are left.
    fn evict_to_fit(&mut self, garbage: &mut Garbage<V>) {
        while self.usage > self.capacity {
            let (_, entry) = if let Some(victim) = self.low.pop_lru() {
                victim
            } else if let Some(victim) = self.high.pop_lru() {
                self.high_usage -= victim.1.charge;
                victim
            } else {
                break;
            };
            self.account_remove(entry.kind, entry.charge);
            self.counters[entry.kind.index()].evictions += 1;
            garbage.push(entry.value);
        }
    }

    /// Whether `key` is resident, without touching LRU order or counters.
    #[cfg(test)]
    pub(crate) fn contains(&self, key: &BlockKey) -> bool {
        self.low.contains(key) || self.high.contains(key) || self.pinned.contains_key(key)
    }

    /// Recomputes every figure from the entries and checks the invariants.
    #[cfg(test)]
    pub(crate) fn check_invariants(&self) {
        let mut per_kind = [(0usize, 0usize); BlockKind::COUNT];
        let mut add = |entry: &Entry<V>| {
            per_kind[entry.kind.index()].0 += 1;
            per_kind[entry.kind.index()].1 += entry.charge;
            entry.charge
        };
        let low: usize = self.low.iter().map(|(_, e)| add(e)).sum();
        let high: usize = self.high.iter().map(|(_, e)| add(e)).sum();
        let pinned: usize = self.pinned.values().map(|p| add(&p.entry)).sum();
        assert_eq!(self.high_usage, high, "high-priority usage");
        assert_eq!(self.pinned_usage, pinned, "pinned usage");
        assert_eq!(self.usage, low + high + pinned, "usage");
        assert!(self.high_usage <= self.high_capacity, "high pool overfull");
        assert!(
            self.usage <= self.capacity.max(self.pinned_usage),
            "over capacity by more than the pinned bytes"
        );
        assert!(
            self.pinned.values().all(|p| p.pins > 0),
            "unpinned in pinned set"
        );
        for (counters, (entries, bytes)) in self.counters.iter().zip(per_kind) {
            assert_eq!(counters.entries, entries, "per-kind entries");
            assert_eq!(counters.bytes, bytes, "per-kind bytes");
            assert_eq!(
                counters.inserts - counters.evictions - counters.erasures,
                entries as u64,
                "inserts - evictions - erasures"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(offset: u64) -> BlockKey {
        BlockKey::new(1, offset)
    }

    fn insert(shard: &mut Shard<u64>, offset: u64, charge: usize, priority: Priority) {
        let kind = match priority {
            Priority::Low => BlockKind::Data,
            Priority::High => BlockKind::Index,
        };
        let mut garbage = Vec::new();
        shard.insert(
            key(offset),
            Arc::new(offset),
            charge,
            kind,
            priority,
            &mut garbage,
        );
        shard.check_invariants();
    }

    fn resident(shard: &Shard<u64>, offset: u64) -> bool {
        let k = key(offset);
        shard.low.contains(&k) || shard.high.contains(&k) || shard.pinned.contains_key(&k)
    }

    #[test]
    fn high_pool_overflows_into_low_as_newest() {
        // 100 bytes, 40 for the high pool.
        let mut shard = Shard::new(100, 40, Admission::All);
        insert(&mut shard, 0, 10, Priority::Low);
        for offset in 1..=4 {
            insert(&mut shard, offset, 10, Priority::High);
        }
        assert_eq!(shard.high_usage, 40);
        // A fifth high entry pushes the oldest (1) into the low LRU, where it
        // is newer than data block 0.
        insert(&mut shard, 5, 10, Priority::High);
        assert_eq!(shard.high_usage, 40);
        assert!(shard.low.contains(&key(1)));
        assert_eq!(shard.low.peek_lru().map(|(k, _)| *k), Some(key(0)));
    }

    #[test]
    fn pinned_then_erased_guard_cannot_unpin_a_new_entry() {
        let mut shard = Shard::new(100, 50, Admission::All);
        let mut garbage = Vec::new();
        let (_, old_id) = shard.insert_pinned(
            key(1),
            Arc::new(1),
            10,
            BlockKind::Filter,
            Priority::High,
            &mut garbage,
        );
        assert!(shard.erase(&key(1), &mut garbage));
        let (_, new_id) = shard.insert_pinned(
            key(1),
            Arc::new(2),
            10,
            BlockKind::Filter,
            Priority::High,
            &mut garbage,
        );
        assert_ne!(old_id, new_id);
        shard.unpin(&key(1), old_id, &mut garbage);
        assert_eq!(shard.pinned_usage, 10, "stale guard unpinned the new entry");
        shard.unpin(&key(1), new_id, &mut garbage);
        assert_eq!(shard.pinned_usage, 0);
        assert!(resident(&shard, 1));
        shard.check_invariants();
    }

    #[test]
    fn a_full_shard_admits_a_blob_value_on_its_second_sighting_like_a_data_block() {
        let mut shard = Shard::new(4 * 4096, 0, Admission::SecondSighting);
        let mut garbage = Vec::new();
        let mut put = |shard: &mut Shard<u64>, offset: u64, kind: BlockKind| {
            shard.insert(
                key(offset),
                Arc::new(offset),
                4096,
                kind,
                Priority::Low,
                &mut garbage,
            );
        };
        for offset in 0..4 {
            put(&mut shard, offset, BlockKind::Data);
        }
        // Full: a blob value seen once stays out, and the data blocks stay in.
        put(&mut shard, 100, BlockKind::Blob);
        assert!(!resident(&shard, 100));
        assert!((0..4).all(|o| resident(&shard, o)));
        // Seen again: in.
        put(&mut shard, 100, BlockKind::Blob);
        assert!(resident(&shard, 100));
        // Index blocks are never asked.
        put(&mut shard, 200, BlockKind::Index);
        assert!(resident(&shard, 200));
        shard.check_invariants();
    }

    #[test]
    fn zero_high_ratio_puts_everything_in_low() {
        let mut shard = Shard::new(100, 0, Admission::All);
        insert(&mut shard, 1, 10, Priority::High);
        assert!(shard.low.contains(&key(1)));
        assert!(shard.high.is_empty());
    }
}
