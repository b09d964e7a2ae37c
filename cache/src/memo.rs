//! A memo of hot false positives: "table T does not hold key K" for keys whose lookups T's
//! filter said "maybe" to and whose index and data blocks then showed K absent.
//!
//! Why: a missing key that is queried constantly and happens to be a false positive of some
//! table's filter pays an index and a data block read on every query (the source articles name
//! it as a production failure). Tables are immutable, so the fact stays true for the table's
//! whole life: remembering it turns the next lookup's two block reads into one hash-map probe.
//! Only filter "maybe"s reach the memo, so lookups the filter answers pay nothing for it.
//!
//! Never a false negative: an entry holds the table's id and the *exact* key, and a lookup
//! matches only when both are equal (the 64-bit slot is a hash of them; a collision replaces
//! the older entry, it never answers for another key). The caller inserts only what the table
//! showed absent at every sequence number (see `Table::get_prepared_into`).
//!
//! Bounded: an LRU per shard, in bytes (the key plus [`ENTRY_OVERHEAD`]); entries of a table
//! leave with it ([`FalsePositiveMemo::forget_table`], called when the table is closed).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use lru::LruCache;
use parking_lot::Mutex;

/// Shards (each with its own lock and LRU order): lookups of many threads rarely meet.
const SHARDS: usize = 16;

/// Bytes charged per entry besides its key: the LRU node and hash slot, the boxed key's header
/// and the table id — an estimate, so the budget holds to within a few percent.
pub const ENTRY_OVERHEAD: usize = 80;

/// One remembered absence.
#[derive(Debug)]
struct Entry {
    table_id: u64,
    key: Box<[u8]>,
}

impl Entry {
    fn charge(&self) -> usize {
        self.key.len() + ENTRY_OVERHEAD
    }
}

#[derive(Debug)]
struct Shard {
    entries: LruCache<u64, Entry>,
    bytes: usize,
}

/// Counters of a memo ([`FalsePositiveMemo::stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoStats {
    /// Lookups the memo answered (an index and a data block read saved each).
    pub hits: u64,
    /// Absences remembered.
    pub inserts: u64,
    /// Entries pushed out by newer ones (memory pressure).
    pub evictions: u64,
    /// Entries dropped because their table was closed (compacted away or the database closed).
    pub forgotten: u64,
    /// Entries held now.
    pub entries: u64,
    /// Bytes charged now (keys plus per-entry overhead).
    pub bytes: u64,
}

impl MemoStats {
    /// The counters of `self` less those of `before` (an earlier reading); the size figures
    /// stay as `self` has them.
    pub fn since(&self, before: &MemoStats) -> MemoStats {
        crate::stats_since!(MemoStats, self, before,
            counters [hits, inserts, evictions, forgotten], gauges [entries, bytes])
    }
}

/// The memo (see the module docs). Shared by every table of a database.
#[derive(Debug)]
pub struct FalsePositiveMemo {
    shards: Box<[Mutex<Shard>]>,
    shard_capacity: usize,
    hits: AtomicU64,
    inserts: AtomicU64,
    evictions: AtomicU64,
    forgotten: AtomicU64,
}

impl FalsePositiveMemo {
    /// A memo of at most `capacity_bytes` (split evenly over its shards).
    ///
    /// ```
    /// use siftdb_cache::FalsePositiveMemo;
    /// let memo = FalsePositiveMemo::new(64 << 10);
    /// let (table, key) = (7, b"user42".as_slice());
    /// let hash = 0x1234; // the key's filter hash
    /// assert!(!memo.is_known_absent(table, hash, key));
    /// memo.remember_absent(table, hash, key);
    /// assert!(memo.is_known_absent(table, hash, key));
    /// assert!(!memo.is_known_absent(8, hash, key)); // another table: not known
    /// memo.forget_table(table);
    /// assert!(!memo.is_known_absent(table, hash, key));
    /// ```
    pub fn new(capacity_bytes: usize) -> FalsePositiveMemo {
        let shards = (0..SHARDS)
            .map(|_| {
                Mutex::new(Shard {
                    entries: LruCache::unbounded(),
                    bytes: 0,
                })
            })
            .collect();
        FalsePositiveMemo {
            shards,
            shard_capacity: capacity_bytes / SHARDS,
            hits: AtomicU64::new(0),
            inserts: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
            forgotten: AtomicU64::new(0),
        }
    }

    /// The slot of (`table_id`, key with hash `key_hash`), and its shard.
    fn slot(&self, table_id: u64, key_hash: u64) -> (u64, &Mutex<Shard>) {
        // SplitMix64 finalizer over both: a table's keys spread over all shards.
        let mut x = key_hash ^ table_id.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        x ^= x >> 31;
        (x, &self.shards[(x >> 59) as usize % SHARDS])
    }

    /// True if table `table_id` is known not to hold `key` (whose filter hash is `key_hash`).
    /// A hit refreshes the entry's place in the LRU order.
    pub fn is_known_absent(&self, table_id: u64, key_hash: u64, key: &[u8]) -> bool {
        let (slot, shard) = self.slot(table_id, key_hash);
        let hit = shard
            .lock()
            .entries
            .get(&slot)
            .is_some_and(|e| e.table_id == table_id && *e.key == *key);
        if hit {
            self.hits.fetch_add(1, Relaxed);
        }
        hit
    }

    /// Remembers that table `table_id` holds no version of `key`. The caller must know it for
    /// every sequence number (the memo is consulted by lookups at any snapshot).
    pub fn remember_absent(&self, table_id: u64, key_hash: u64, key: &[u8]) {
        let entry = Entry {
            table_id,
            key: key.into(),
        };
        let charge = entry.charge();
        if charge > self.shard_capacity {
            return; // a zero-sized memo (or an absurd key) remembers nothing
        }
        let (slot, shard) = self.slot(table_id, key_hash);
        let mut shard = shard.lock();
        if let Some(old) = shard.entries.put(slot, entry) {
            shard.bytes -= old.charge();
        }
        shard.bytes += charge;
        self.inserts.fetch_add(1, Relaxed);
        while shard.bytes > self.shard_capacity {
            let Some((_, old)) = shard.entries.pop_lru() else {
                break;
            };
            shard.bytes -= old.charge();
            self.evictions.fetch_add(1, Relaxed);
        }
    }

    /// Drops every entry of table `table_id` (it was closed: compacted away, its keyspace
    /// dropped, or the database closed). Returns how many.
    pub fn forget_table(&self, table_id: u64) -> usize {
        let mut dropped = 0;
        for shard in self.shards.iter() {
            let mut shard = shard.lock();
            let slots: Vec<u64> = shard
                .entries
                .iter()
                .filter(|(_, e)| e.table_id == table_id)
                .map(|(&slot, _)| slot)
                .collect();
            for slot in slots {
                if let Some(old) = shard.entries.pop(&slot) {
                    shard.bytes -= old.charge();
                    dropped += 1;
                }
            }
        }
        self.forgotten.fetch_add(dropped as u64, Relaxed);
        dropped
    }

    /// The memo's counters and size.
    pub fn stats(&self) -> MemoStats {
        let (mut entries, mut bytes) = (0u64, 0u64);
        for shard in self.shards.iter() {
            let shard = shard.lock();
            entries += shard.entries.len() as u64;
            bytes += shard.bytes as u64;
        }
        MemoStats {
            hits: self.hits.load(Relaxed),
            inserts: self.inserts.load(Relaxed),
            evictions: self.evictions.load(Relaxed),
            forgotten: self.forgotten.load(Relaxed),
            entries,
            bytes,
        }
    }

    /// The most bytes the memo holds.
    pub fn capacity(&self) -> usize {
        self.shard_capacity * SHARDS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: u32) -> Vec<u8> {
        format!("key{i:08}").into_bytes()
    }

    #[test]
    fn memo_answers_only_the_exact_table_and_key() {
        let memo = FalsePositiveMemo::new(1 << 20);
        memo.remember_absent(1, 99, &key(1));
        assert!(memo.is_known_absent(1, 99, &key(1)));
        // Same hash, another key (a hash collision): never answered for it.
        assert!(!memo.is_known_absent(1, 99, &key(2)));
        assert!(!memo.is_known_absent(2, 99, &key(1)));
        assert!(!memo.is_known_absent(1, 98, &key(1)));
        // A colliding insert replaces the older entry; the older key is simply not known.
        memo.remember_absent(1, 99, &key(2));
        assert!(memo.is_known_absent(1, 99, &key(2)));
        assert!(!memo.is_known_absent(1, 99, &key(1)));
        let s = memo.stats();
        assert_eq!((s.hits, s.inserts, s.entries), (2, 2, 1));
    }

    #[test]
    fn memo_stays_within_its_bytes_and_evicts_the_least_recent() {
        let memo = FalsePositiveMemo::new(16 * 1024);
        for i in 0..10_000u32 {
            memo.remember_absent(1, u64::from(i), &key(i));
            // Keep key 0 hot: it survives the churn.
            assert!(
                memo.is_known_absent(1, 0, &key(0)),
                "hot key evicted at {i}"
            );
        }
        let s = memo.stats();
        assert!(s.bytes as usize <= memo.capacity(), "{s:?}");
        assert!(s.evictions > 9_000 && s.entries > 0, "{s:?}");
        assert_eq!(s.inserts, s.entries + s.evictions);
    }

    #[test]
    fn memo_forgets_a_closed_tables_entries_only() {
        let memo = FalsePositiveMemo::new(1 << 20);
        for i in 0..100u32 {
            memo.remember_absent(u64::from(i % 2), u64::from(i), &key(i));
        }
        assert_eq!(memo.forget_table(0), 50);
        for i in 0..100u32 {
            let table = u64::from(i % 2);
            assert_eq!(
                memo.is_known_absent(table, u64::from(i), &key(i)),
                table == 1
            );
        }
        let s = memo.stats();
        assert_eq!((s.entries, s.forgotten), (50, 50));
        assert_eq!(s.bytes, 50 * (key(0).len() + ENTRY_OVERHEAD) as u64);
    }

    #[test]
    fn a_zero_sized_memo_remembers_nothing() {
        let memo = FalsePositiveMemo::new(0);
        memo.remember_absent(1, 1, b"k");
        assert!(!memo.is_known_absent(1, 1, b"k"));
        assert_eq!(memo.stats(), MemoStats::default());
    }
}
