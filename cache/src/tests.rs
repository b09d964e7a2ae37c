//! Behaviour tests of the public API, plus the internal invariant check after
//! each scenario.

// A failed expectation in a test should panic with its message.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::{BlockCache, BlockKey, BlockKind, CacheOptions, Priority};

/// A single-shard cache, so eviction order is fully determined.
fn one_shard(capacity: usize, high_ratio: f64) -> BlockCache<u64> {
    BlockCache::new(
        CacheOptions::new(capacity)
            .with_num_shard_bits(0)
            .with_high_priority_pool_ratio(high_ratio),
    )
}

fn key(offset: u64) -> BlockKey {
    BlockKey::new(1, offset)
}

fn put(cache: &BlockCache<u64>, offset: u64, charge: usize) {
    cache.insert(
        key(offset),
        Arc::new(offset),
        charge,
        BlockKind::Data,
        Priority::Low,
    );
}

fn put_high(cache: &BlockCache<u64>, offset: u64, charge: usize) {
    cache.insert(
        key(offset),
        Arc::new(offset),
        charge,
        BlockKind::Index,
        Priority::High,
    );
}

/// Residency without counting a lookup or changing LRU order.
fn resident(cache: &BlockCache<u64>, offset: u64) -> bool {
    cache.contains(&key(offset))
}

#[test]
fn block_cache_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<BlockCache<Vec<u8>>>();
    assert_send_sync::<crate::PinnedBlock<Vec<u8>>>();
}

#[test]
fn lru_evicts_least_recently_used_first() {
    let cache = one_shard(40, 0.0);
    for offset in 0..4 {
        put(&cache, offset, 10);
    }
    // Touch 0: now 1 is the least recently used.
    assert_eq!(cache.get(&key(0), BlockKind::Data).as_deref(), Some(&0));
    put(&cache, 4, 10);
    assert!(cache.get(&key(1), BlockKind::Data).is_none());
    put(&cache, 5, 10);
    assert!(cache.get(&key(2), BlockKind::Data).is_none());
    for offset in [0, 3, 4, 5] {
        assert!(
            cache.get(&key(offset), BlockKind::Data).is_some(),
            "{offset}"
        );
    }
    let data = *cache.stats().kind(BlockKind::Data);
    assert_eq!(data.evictions, 2);
    assert_eq!((data.hits, data.misses), (5, 2));
    cache.check_invariants();
}

#[test]
fn usage_is_sum_of_resident_charges() {
    let cache = one_shard(100, 0.5);
    put(&cache, 0, 30);
    put_high(&cache, 1, 20);
    cache.insert(key(2), Arc::new(2), 5, BlockKind::Filter, Priority::High);
    cache.insert(key(3), Arc::new(3), 7, BlockKind::Properties, Priority::Low);
    let stats = cache.stats();
    assert_eq!(stats.usage, 62);
    assert_eq!(stats.high_priority_usage, 25);
    assert_eq!(stats.entries, 4);
    assert_eq!(stats.kind(BlockKind::Data).bytes, 30);
    assert_eq!(stats.kind(BlockKind::Index).bytes, 20);
    assert_eq!(stats.kind(BlockKind::Filter).bytes, 5);
    assert_eq!(stats.kind(BlockKind::Properties).bytes, 7);
    assert_eq!(stats.total().bytes, stats.usage);
    assert_eq!(stats.total().inserts, 4);

    // 45 more bytes need 7 evicted: 0 (30, oldest low) goes first, and then
    // the cache fits; the high-priority entries are untouched.
    put(&cache, 4, 45);
    let stats = cache.stats();
    assert_eq!(stats.usage, 77);
    assert_eq!(stats.kind(BlockKind::Data).evictions, 1);
    assert_eq!(stats.kind(BlockKind::Data).bytes, 45);
    assert!(!resident(&cache, 0));
    cache.check_invariants();
}

#[test]
fn inserting_a_resident_key_keeps_the_resident_value() {
    let cache = one_shard(100, 0.0);
    put(&cache, 1, 10);
    let kept = cache.insert(key(1), Arc::new(99), 50, BlockKind::Data, Priority::Low);
    assert_eq!(*kept, 1);
    let stats = cache.stats();
    assert_eq!((stats.usage, stats.total().inserts), (10, 1));
}

#[test]
fn get_or_insert_with_loads_once_and_propagates_errors() {
    let cache = one_shard(100, 0.0);
    let failed: Result<_, &str> =
        cache.get_or_insert_with(key(1), BlockKind::Data, Priority::Low, || Err("io"));
    assert_eq!(failed.err(), Some("io"));
    assert_eq!(cache.stats().usage, 0);

    let mut loads = 0;
    for _ in 0..3 {
        let value = cache.get_or_insert_with(key(1), BlockKind::Data, Priority::Low, || {
            loads += 1;
            Ok::<_, ()>((7, 10))
        });
        assert_eq!(value.as_deref(), Ok(&7));
    }
    assert_eq!(loads, 1);
    let data = *cache.stats().kind(BlockKind::Data);
    assert_eq!((data.hits, data.misses, data.inserts), (2, 2, 1));
}

#[test]
fn pinned_entry_survives_any_pressure_and_returns_to_lru() {
    let cache = one_shard(50, 0.0);
    put(&cache, 0, 10);
    let pin = cache.pin(&key(0)).expect("resident");
    assert_eq!(*pin, 0);
    assert_eq!(cache.stats().pinned_usage, 10);
    for offset in 1..100 {
        put(&cache, offset, 10);
        cache.check_invariants();
    }
    let stats = cache.stats();
    assert_eq!(stats.pinned_usage, 10);
    assert_eq!(stats.pinned_entries, 1);
    assert_eq!(stats.usage, 50, "pinned bytes count in usage");
    assert!(cache.get(&key(0), BlockKind::Data).is_some());

    // Unpinned, it is the most recently used entry: the next 4 inserts evict
    // the 4 older ones, not it.
    drop(pin);
    assert_eq!(cache.stats().pinned_usage, 0);
    for offset in 100..104 {
        put(&cache, offset, 10);
    }
    assert!(resident(&cache, 0));
    put(&cache, 104, 10);
    assert!(!resident(&cache, 0));
    cache.check_invariants();
}

#[test]
fn pins_are_counted() {
    let cache = one_shard(30, 0.0);
    let first = cache.insert_pinned(key(0), Arc::new(0), 10, BlockKind::Filter, Priority::High);
    let second = cache
        .pin(&key(0))
        .expect("pinned entries can be pinned again");
    let third = second.clone();
    drop(first);
    drop(second);
    for offset in 1..10 {
        put(&cache, offset, 10);
    }
    assert_eq!(cache.stats().pinned_entries, 1, "one pin left");
    assert!(resident(&cache, 0));
    drop(third);
    assert_eq!(cache.stats().pinned_usage, 0);
    for offset in 10..13 {
        put(&cache, offset, 10);
    }
    assert!(!resident(&cache, 0));
    cache.check_invariants();
}

#[test]
fn cache_exceeds_capacity_only_by_pinned_bytes() {
    let cache = one_shard(30, 0.5);
    let pins: Vec<_> = (0..4)
        .map(|offset| {
            cache.insert_pinned(
                key(offset),
                Arc::new(offset),
                10,
                BlockKind::Index,
                Priority::High,
            )
        })
        .collect();
    let stats = cache.stats();
    assert_eq!((stats.usage, stats.pinned_usage), (40, 40));

    // Still works while full of pins: returned, counted, evicted at once.
    let value = cache.insert(key(9), Arc::new(9), 5, BlockKind::Data, Priority::Low);
    assert_eq!(*value, 9);
    let data = *cache.stats().kind(BlockKind::Data);
    assert_eq!((data.inserts, data.evictions, data.entries), (1, 1, 0));
    assert_eq!(cache.stats().usage, 40);
    cache.check_invariants();

    // Releasing pins brings usage back under capacity.
    drop(pins);
    let stats = cache.stats();
    assert_eq!(stats.pinned_usage, 0);
    assert_eq!(stats.usage, 30);
    cache.check_invariants();
}

#[test]
fn high_priority_entries_outlive_low_priority_ones() {
    // 100 bytes; the pool holds up to 50.
    let cache = one_shard(100, 0.5);
    for offset in 0..3 {
        put_high(&cache, offset, 10);
    }
    // A long scan of data blocks evicts only data blocks.
    for offset in 100..200 {
        put(&cache, offset, 10);
        cache.check_invariants();
    }
    for offset in 0..3 {
        assert!(
            cache.get(&key(offset), BlockKind::Index).is_some(),
            "{offset}"
        );
    }
    let stats = cache.stats();
    assert_eq!(stats.kind(BlockKind::Index).evictions, 0);
    assert_eq!(stats.high_priority_usage, 30);
    assert_eq!(stats.usage, 100);
}

#[test]
fn full_high_pool_overflows_oldest_into_low_lru() {
    let cache = one_shard(100, 0.5);
    put(&cache, 100, 10); // the oldest data block
    for offset in 0..7 {
        put_high(&cache, offset, 10);
    }
    // 0 and 1 overflowed into the low LRU, as its newest entries.
    let stats = cache.stats();
    assert_eq!(stats.high_priority_usage, 50);
    assert_eq!(stats.usage, 80);
    // Pressure: data block 100 goes first, then the overflowed 0 and 1, in
    // LRU order; the pool is kept.
    put(&cache, 101, 40);
    assert!(!resident(&cache, 100));
    assert!(!resident(&cache, 0));
    assert!(resident(&cache, 1));
    put(&cache, 102, 10);
    assert!(!resident(&cache, 1));
    for offset in 2..7 {
        assert!(resident(&cache, offset), "{offset}");
    }
    cache.check_invariants();
}

#[test]
fn high_pool_is_evicted_when_no_low_entry_is_left() {
    let cache = one_shard(100, 0.5);
    let _pins: Vec<_> = (0..5)
        .map(|offset| {
            cache.insert_pinned(
                key(offset),
                Arc::new(offset),
                10,
                BlockKind::Data,
                Priority::Low,
            )
        })
        .collect();
    for offset in 10..15 {
        put_high(&cache, offset, 10);
    }
    // Full: 50 pinned + 50 high. A new high entry must push the oldest out.
    put_high(&cache, 15, 10);
    assert!(!resident(&cache, 10));
    assert_eq!(cache.stats().kind(BlockKind::Index).evictions, 1);
    cache.check_invariants();
}

#[test]
fn oversize_entries() {
    let cache = one_shard(100, 0.5);
    put(&cache, 0, 60);
    // Too big for the shard: returned uncached, nothing evicted for it.
    let value = cache.insert(key(1), Arc::new(1), 101, BlockKind::Filter, Priority::High);
    assert_eq!(*value, 1);
    let stats = cache.stats();
    assert_eq!(stats.kind(BlockKind::Filter).rejections, 1);
    assert_eq!(stats.kind(BlockKind::Filter).inserts, 0);
    assert_eq!(stats.usage, 60);
    assert!(cache.get(&key(1), BlockKind::Filter).is_none());

    // Pinned, it is admitted (evicting the unpinned entry) ...
    let pin = cache.insert_pinned(key(1), Arc::new(1), 150, BlockKind::Filter, Priority::High);
    let stats = cache.stats();
    assert_eq!((stats.usage, stats.pinned_usage), (150, 150));
    assert!(cache.get(&key(1), BlockKind::Filter).is_some());
    cache.check_invariants();
    // ... and evicted when its last pin goes.
    drop(pin);
    let stats = cache.stats();
    assert_eq!(stats.usage, 0);
    assert_eq!(stats.kind(BlockKind::Filter).evictions, 1);
    assert!(!resident(&cache, 1));
    cache.check_invariants();
}

#[test]
fn multi_shard_oversize_is_per_shard() {
    let cache: BlockCache<u64> = BlockCache::new(CacheOptions::new(1000).with_num_shard_bits(2));
    assert_eq!(cache.num_shards(), 4);
    cache.insert(key(1), Arc::new(1), 251, BlockKind::Data, Priority::Low);
    assert_eq!(cache.stats().kind(BlockKind::Data).rejections, 1);
    cache.insert(key(1), Arc::new(1), 250, BlockKind::Data, Priority::Low);
    assert_eq!(cache.stats().usage, 250);
}

#[test]
fn erase_and_erase_table() {
    let cache = BlockCache::new(CacheOptions::new(1 << 20).with_num_shard_bits(3));
    for table in 1..=3u64 {
        for offset in 0..20u64 {
            cache.insert(
                BlockKey::new(table, offset * 4096),
                Arc::new(offset),
                100,
                BlockKind::Data,
                Priority::Low,
            );
        }
    }
    assert!(cache.erase(&BlockKey::new(1, 0)));
    assert!(!cache.erase(&BlockKey::new(1, 0)));
    assert!(cache.get(&BlockKey::new(1, 0), BlockKind::Data).is_none());

    // A pinned block of an obsolete table goes too; its guard stays valid
    // and its drop no longer touches the cache.
    let pin = cache.pin(&BlockKey::new(2, 4096)).expect("resident");
    assert_eq!(cache.erase_table(2), 20);
    assert_eq!(*pin, 1);
    cache.insert(
        BlockKey::new(2, 4096),
        Arc::new(5),
        100,
        BlockKind::Data,
        Priority::Low,
    );
    let repin = cache.pin(&BlockKey::new(2, 4096)).expect("resident");
    drop(pin);
    assert_eq!(
        cache.stats().pinned_entries,
        1,
        "stale guard must not unpin"
    );
    drop(repin);

    let stats = cache.stats();
    assert_eq!(stats.entries, 19 + 1 + 20);
    assert_eq!(stats.usage, 40 * 100);
    assert_eq!(stats.pinned_usage, 0);
    assert_eq!(stats.total().erasures, 21);
    cache.check_invariants();

    // A range of tables: 1 and 2 go (19 + 1), 3 stays.
    assert_eq!(cache.erase_tables(1..=2), 20);
    assert_eq!(cache.stats().entries, 20);
    assert!(cache.get(&BlockKey::new(3, 0), BlockKind::Data).is_some());
    cache.check_invariants();
}

#[test]
fn get_or_insert_pinned_with_counts_and_pins() {
    let cache = one_shard(100, 0.5);
    let pin = cache
        .get_or_insert_pinned_with(key(1), BlockKind::Filter, Priority::High, || {
            Ok::<_, ()>((1, 30))
        })
        .expect("loads");
    let again = cache
        .get_or_insert_pinned_with(key(1), BlockKind::Filter, Priority::High, || Err(()))
        .expect("cached, so not loaded");
    let filter = *cache.stats().kind(BlockKind::Filter);
    assert_eq!((filter.hits, filter.misses, filter.inserts), (1, 1, 1));
    assert_eq!(cache.stats().pinned_usage, 30);
    drop((pin, again));
    let stats = cache.stats();
    assert_eq!((stats.pinned_usage, stats.high_priority_usage), (0, 30));
}

#[test]
fn zero_capacity_caches_nothing_unpinned() {
    let cache = one_shard(0, 0.5);
    put(&cache, 1, 1);
    assert!(cache.get(&key(1), BlockKind::Data).is_none());
    let pin = cache.insert_pinned(key(2), Arc::new(2), 1, BlockKind::Index, Priority::High);
    assert!(cache.get(&key(2), BlockKind::Index).is_some());
    drop(pin);
    assert_eq!(cache.stats().usage, 0);
}

/// Charge of a block in the stress test: a function of its key, so resident
/// charges can be summed from the outside.
fn stress_charge(offset: u64) -> usize {
    64 + (offset as usize * 37) % 512
}

#[test]
fn concurrent_stress_counters_add_up() {
    const THREADS: u64 = 4;
    const OPS: usize = 20_000;
    const KEYS: u64 = 600;
    let cache: BlockCache<u64> = BlockCache::new(
        CacheOptions::new(64 * 1024)
            .with_num_shard_bits(2)
            .with_high_priority_pool_ratio(0.3),
    );
    let kind_of = |offset: u64| BlockKind::ALL[(offset % 4) as usize];
    let priority_of = |offset: u64| match kind_of(offset) {
        BlockKind::Index | BlockKind::Filter => Priority::High,
        _ => Priority::Low,
    };

    let lookups: u64 = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..THREADS)
            .map(|thread| {
                let cache = &cache;
                scope.spawn(move || {
                    let mut rng = StdRng::seed_from_u64(thread);
                    let mut pins = Vec::new();
                    let mut lookups = 0u64;
                    for _ in 0..OPS {
                        let offset = rng.gen_range(0..KEYS);
                        let key = BlockKey::new(offset % 3, offset);
                        let (kind, priority) = (kind_of(offset), priority_of(offset));
                        match rng.gen_range(0..100) {
                            0..=49 => {
                                lookups += 1;
                                if let Some(value) = cache.get(&key, kind) {
                                    assert_eq!(*value, offset);
                                }
                            }
                            50..=74 => {
                                lookups += 1;
                                let value = cache
                                    .get_or_insert_with(key, kind, priority, || {
                                        Ok::<_, ()>((offset, stress_charge(offset)))
                                    })
                                    .expect("infallible");
                                assert_eq!(*value, offset);
                            }
                            75..=84 => {
                                let value = Arc::new(offset);
                                let charge = stress_charge(offset);
                                cache.insert(key, value, charge, kind, priority);
                            }
                            85..=89 => {
                                if let Some(pin) = cache.pin(&key) {
                                    assert_eq!(*pin, offset);
                                    pins.push(pin);
                                }
                            }
                            90..=93 => {
                                let value = Arc::new(offset);
                                let charge = stress_charge(offset);
                                pins.push(cache.insert_pinned(key, value, charge, kind, priority));
                            }
                            94..=97 => {
                                if !pins.is_empty() {
                                    let i = rng.gen_range(0..pins.len());
                                    let pin = pins.swap_remove(i);
                                    if rng.gen_bool(0.5) {
                                        pins.push(pin.clone());
                                    }
                                }
                            }
                            98 => {
                                cache.erase(&key);
                            }
                            _ => {
                                if rng.gen_range(0..50) == 0 {
                                    cache.erase_table(offset % 3);
                                }
                            }
                        }
                        // Keep a bounded set of pins so the cache stays under pressure.
                        while pins.len() > 8 {
                            pins.swap_remove(0);
                        }
                    }
                    lookups
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().expect("stress thread panicked"))
            .sum()
    });

    cache.check_invariants();
    let stats = cache.stats();
    let total = stats.total();
    assert_eq!(total.lookups(), lookups, "hits + misses == lookups");
    assert_eq!(
        total.inserts - total.evictions - total.erasures,
        stats.entries as u64,
        "inserts - evictions - erasures == resident entries"
    );
    for kind in BlockKind::ALL {
        let k = stats.kind(kind);
        assert_eq!(
            k.inserts - k.evictions - k.erasures,
            k.entries as u64,
            "{kind}"
        );
    }
    assert_eq!(total.bytes, stats.usage, "per-kind bytes sum to usage");
    assert_eq!(stats.pinned_usage, 0, "every guard was dropped");
    assert!(stats.usage <= stats.capacity);
    assert!(
        total.evictions > 0,
        "the test must put the cache under pressure"
    );

    // usage == sum of the charges of the resident entries (pin does not count
    // as a lookup, so the counters above stay as they were).
    let mut resident_charges = 0;
    let mut resident_entries = 0;
    for offset in 0..KEYS {
        if cache.pin(&BlockKey::new(offset % 3, offset)).is_some() {
            resident_charges += stress_charge(offset);
            resident_entries += 1;
        }
    }
    assert_eq!(resident_entries, stats.entries);
    assert_eq!(resident_charges, stats.usage);
    assert_eq!(cache.stats().total().lookups(), lookups);
}

#[test]
fn peek_neither_counts_nor_promotes() {
    let cache = one_shard(30, 0.0);
    for offset in 0..3 {
        put(&cache, offset, 10);
    }
    // Peeking 0 must not save it: it is still the least recently used.
    assert_eq!(cache.peek(&key(0)).as_deref(), Some(&0));
    assert!(cache.peek(&key(9)).is_none());
    put(&cache, 3, 10);
    assert!(!resident(&cache, 0));
    assert!(resident(&cache, 1));
    let data = *cache.stats().kind(BlockKind::Data);
    assert_eq!((data.hits, data.misses), (0, 0));
    cache.check_invariants();
}
