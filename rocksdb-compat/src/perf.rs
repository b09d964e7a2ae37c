//! Performance context and memory usage. siftdb counts per database (`rocksdb.stats`), not
//! per thread: the per-thread perf context reads 0.

use crate::{Cache, Error};

/// How much the perf context records (siftdb records nothing per thread).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PerfStatsLevel {
    /// Unknown.
    Uninitialized,
    /// Nothing.
    Disable,
    /// Counts only.
    EnableCount,
    /// Counts and times except mutexes.
    EnableTimeExceptForMutex,
    /// Counts and times but no CPU time.
    EnableTimeAndCPUTimeExceptForMutex,
    /// Everything.
    EnableTime,
    /// Not a level.
    OutOfBound,
}

/// Sets the perf level: no effect.
pub fn set_perf_stats(lvl: PerfStatsLevel) {
    let _ = lvl;
}

/// Per-thread counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PerfMetric {
    /// Block cache hits.
    BlockCacheHitCount,
    /// Blocks read.
    BlockReadCount,
    /// Bytes read.
    BlockReadByte,
    /// Keys compared.
    UserKeyComparisonCount,
    /// Memtable hits.
    GetFromMemtableCount,
    /// Bloom filter useful.
    BloomSstHitCount,
    /// Bloom filter misses.
    BloomSstMissCount,
}

/// The calling thread's counters: siftdb keeps none per thread, so every metric reads 0.
#[derive(Debug, Default)]
pub struct PerfContext {
    _private: (),
}

impl PerfContext {
    /// Resets the counters.
    pub fn reset(&mut self) {}

    /// The counters as text.
    pub fn report(&self, exclude_zero_counters: bool) -> String {
        let _ = exclude_zero_counters;
        String::new()
    }

    /// One counter: 0.
    pub fn metric(&self, id: PerfMetric) -> u64 {
        let _ = id;
        0
    }
}

/// Memory in use by databases and caches.
#[derive(Debug, Clone, Copy, Default)]
pub struct MemoryUsageStats {
    /// Bytes of every memtable.
    pub mem_table_total: u64,
    /// Bytes of memtables not yet flushed.
    pub mem_table_unflushed: u64,
    /// Bytes of table readers.
    pub mem_table_readers_total: u64,
    /// Bytes in use in the caches.
    pub cache_total: u64,
}

/// Memory used by `dbs` (their memtables) and `caches` (their usage).
pub fn get_memory_usage_stats(
    dbs: Option<&[&crate::DB]>,
    caches: Option<&[&Cache]>,
) -> Result<MemoryUsageStats, Error> {
    let mut stats = MemoryUsageStats::default();
    for db in dbs.unwrap_or_default() {
        let total = db
            .property_int_value(crate::properties::SIZE_ALL_MEM_TABLES)?
            .unwrap_or(0);
        let unflushed = db
            .property_int_value(crate::properties::CUR_SIZE_ALL_MEM_TABLES)?
            .unwrap_or(0);
        stats.mem_table_total += total;
        stats.mem_table_unflushed += unflushed;
    }
    for cache in caches.unwrap_or_default() {
        stats.cache_total += cache.get_usage() as u64;
    }
    Ok(stats)
}
