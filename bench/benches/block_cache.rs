//! Block cache lookup throughput: the sharded `siftdb_cache::BlockCache`
//! against a single `parking_lot::Mutex<lru::LruCache>`, with 1 and 2 threads,
//! in the same run.
//!
//! Both caches are warm with 100 000 resident blocks charged 4 KiB each and
//! every lookup is a hit on a uniformly random block (the hot path of a read
//! whose blocks are cached). Throughput counts lookups over all threads. The
//! figure the project reports: sharded with 2 threads ≥ 1.5× the single mutex
//! with 2 threads.
//!
//! Run: `cargo bench -p siftdb-bench --bench block_cache`.

use std::hint::black_box;
use std::num::NonZeroUsize;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use lru::LruCache;
use parking_lot::Mutex;
use siftdb_cache::{BlockCache, BlockKey, BlockKind, CacheOptions, Priority};

/// Resident blocks in each cache.
const ENTRIES: u64 = 100_000;
/// Charge of each block: a typical data block size.
const CHARGE: usize = 4096;
/// Blocks per table, to give keys a realistic (table id, offset) shape.
const BLOCKS_PER_TABLE: u64 = 1_000;

fn key_of(block: u64) -> BlockKey {
    BlockKey::new(
        block / BLOCKS_PER_TABLE,
        (block % BLOCKS_PER_TABLE) * CHARGE as u64,
    )
}

/// The operation measured, implemented by both caches.
trait Lookup: Sync {
    fn lookup(&self, key: &BlockKey) -> Option<Arc<u64>>;
}

impl Lookup for BlockCache<u64> {
    fn lookup(&self, key: &BlockKey) -> Option<Arc<u64>> {
        self.get(key, BlockKind::Data)
    }
}

/// The baseline: one LRU behind one lock, bounded by entry count (no byte
/// accounting, so if anything it does less work per lookup than the cache).
struct SingleMutexLru(Mutex<LruCache<BlockKey, Arc<u64>>>);

impl Lookup for SingleMutexLru {
    fn lookup(&self, key: &BlockKey) -> Option<Arc<u64>> {
        self.0.lock().get(key).cloned()
    }
}

fn sharded_cache() -> BlockCache<u64> {
    // Twice the resident bytes, so uneven shard filling never evicts; the
    // shard count is the default one for this capacity (64).
    let cache = BlockCache::new(CacheOptions::new(2 * ENTRIES as usize * CHARGE));
    for block in 0..ENTRIES {
        cache.insert(
            key_of(block),
            Arc::new(block),
            CHARGE,
            BlockKind::Data,
            Priority::Low,
        );
    }
    assert_eq!(
        cache.stats().entries,
        ENTRIES as usize,
        "cache must be warm"
    );
    cache
}

fn single_mutex_lru() -> SingleMutexLru {
    let capacity = NonZeroUsize::new(ENTRIES as usize).unwrap_or(NonZeroUsize::MIN);
    let mut lru = LruCache::new(capacity);
    for block in 0..ENTRIES {
        lru.put(key_of(block), Arc::new(block));
    }
    assert_eq!(lru.len(), ENTRIES as usize, "baseline must be warm");
    SingleMutexLru(Mutex::new(lru))
}

/// Runs `iters` random hits on each of `threads` threads, started together;
/// returns the wall time from the start signal until the last thread ends.
fn run_lookups<C: Lookup>(cache: &C, threads: usize, iters: u64) -> Duration {
    let start_line = Barrier::new(threads + 1);
    let started = thread::scope(|scope| {
        for thread in 0..threads {
            let start_line = &start_line;
            scope.spawn(move || {
                // SplitMix64: a few cycles per key, the same for both caches.
                let mut state = 0x9e37_79b9_7f4a_7c15_u64.wrapping_mul(thread as u64 + 1);
                start_line.wait();
                for _ in 0..iters {
                    state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
                    let mut z = state;
                    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                    z ^= z >> 31;
                    let hit = cache.lookup(&key_of(z % ENTRIES));
                    debug_assert!(hit.is_some());
                    black_box(hit);
                }
            });
        }
        start_line.wait();
        Instant::now()
        // The scope joins every thread before returning.
    });
    started.elapsed()
}

fn lookup_throughput(c: &mut Criterion) {
    let sharded = sharded_cache();
    let baseline = single_mutex_lru();

    let mut group = c.benchmark_group("block_cache_hit");
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(20);
    for threads in [1usize, 2] {
        group.throughput(Throughput::Elements(threads as u64));
        group.bench_with_input(
            BenchmarkId::new(format!("sharded_{}", sharded.num_shards()), threads),
            &threads,
            |b, &threads| b.iter_custom(|iters| run_lookups(&sharded, threads, iters)),
        );
        group.bench_with_input(
            BenchmarkId::new("single_mutex_lru", threads),
            &threads,
            |b, &threads| b.iter_custom(|iters| run_lookups(&baseline, threads, iters)),
        );
    }
    group.finish();
}

criterion_group!(benches, lookup_throughput);
criterion_main!(benches);
