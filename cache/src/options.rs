//! Cache configuration.

use crate::admission::Admission;

/// Configuration of a [`BlockCache`](crate::BlockCache).
///
/// The cache never rejects options: out-of-range values are clamped by
/// [`BlockCache::new`](crate::BlockCache::new) as documented on each field, so
/// a typo in a config file degrades the cache instead of failing a database
/// open.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CacheOptions {
    /// Total capacity in bytes, split evenly across the shards (each shard gets
    /// `capacity_bytes / 2^num_shard_bits`, rounded up). Entries are charged
    /// the byte count the caller gives on insert.
    pub capacity_bytes: usize,
    /// The cache has `2^num_shard_bits` shards, each with its own lock.
    /// Clamped to [`CacheOptions::MAX_SHARD_BITS`].
    /// [`CacheOptions::new`] derives it from the capacity.
    pub num_shard_bits: u8,
    /// Share of each shard's capacity reserved for [`Priority::High`](crate::Priority::High)
    /// entries (RocksDB's `high_pri_pool_ratio`). Clamped to `0.0..=1.0`; NaN
    /// counts as `0.0`. With `0.0`, high-priority entries behave like low ones.
    pub high_priority_pool_ratio: f64,
    /// Which data blocks a full shard lets in (see [`Admission`]); index and filter blocks
    /// always enter.
    pub admission: Admission,
}

impl CacheOptions {
    /// Default share of the high-priority pool, as in RocksDB's `LRUCacheOptions`.
    pub const DEFAULT_HIGH_PRIORITY_POOL_RATIO: f64 = 0.5;

    /// Upper bound on `num_shard_bits` (65 536 shards); more would only cost
    /// memory and make every shard too small to hold a block.
    pub const MAX_SHARD_BITS: u8 = 16;

    /// Smallest shard [`default_shard_bits`](Self::default_shard_bits) aims
    /// for: 512 KiB, RocksDB's rule.
    pub const MIN_DEFAULT_SHARD_BYTES: usize = 512 * 1024;

    /// Most shards [`default_shard_bits`](Self::default_shard_bits) picks: 64
    /// shards (6 bits), RocksDB's rule. Enough to make lock contention
    /// negligible on typical core counts.
    pub const MAX_DEFAULT_SHARD_BITS: u8 = 6;

    /// Options for a cache of `capacity_bytes`, with the shard count derived
    /// from the capacity and the default high-priority pool ratio.
    pub fn new(capacity_bytes: usize) -> Self {
        Self {
            capacity_bytes,
            num_shard_bits: Self::default_shard_bits(capacity_bytes),
            high_priority_pool_ratio: Self::DEFAULT_HIGH_PRIORITY_POOL_RATIO,
            admission: Admission::default(),
        }
    }

    /// The shard-count rule of RocksDB's `GetDefaultCacheShardBits`: as many
    /// shards as keep each at least [`MIN_DEFAULT_SHARD_BYTES`](Self::MIN_DEFAULT_SHARD_BYTES),
    /// at most `2^`[`MAX_DEFAULT_SHARD_BITS`](Self::MAX_DEFAULT_SHARD_BITS).
    ///
    /// Small shards are the cost of many shards: an entry larger than one
    /// shard's capacity is not cached unless pinned.
    pub fn default_shard_bits(capacity_bytes: usize) -> u8 {
        let shards = capacity_bytes / Self::MIN_DEFAULT_SHARD_BYTES;
        // floor(log2(shards)), 0 for 0 or 1 shard.
        let bits = shards.checked_ilog2().unwrap_or(0);
        bits.min(u32::from(Self::MAX_DEFAULT_SHARD_BITS)) as u8
    }

    /// These options with `num_shard_bits` replaced.
    pub fn with_num_shard_bits(mut self, num_shard_bits: u8) -> Self {
        self.num_shard_bits = num_shard_bits;
        self
    }

    /// These options with `admission` replaced.
    pub fn with_admission(mut self, admission: Admission) -> Self {
        self.admission = admission;
        self
    }

    /// These options with `high_priority_pool_ratio` replaced.
    pub fn with_high_priority_pool_ratio(mut self, ratio: f64) -> Self {
        self.high_priority_pool_ratio = ratio;
        self
    }

    /// `num_shard_bits` after clamping.
    pub(crate) fn effective_shard_bits(&self) -> u8 {
        self.num_shard_bits.min(Self::MAX_SHARD_BITS)
    }

    /// `high_priority_pool_ratio` after clamping.
    pub(crate) fn effective_high_priority_ratio(&self) -> f64 {
        let ratio = self.high_priority_pool_ratio;
        if ratio.is_nan() {
            0.0
        } else {
            ratio.clamp(0.0, 1.0)
        }
    }
}

impl Default for CacheOptions {
    /// A 32 MiB cache (RocksDB's default block cache size), 64 shards.
    fn default() -> Self {
        Self::new(32 * 1024 * 1024)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_shard_bits_follows_rocksdb_rule() {
        assert_eq!(CacheOptions::default_shard_bits(0), 0);
        assert_eq!(CacheOptions::default_shard_bits(1 << 20), 1);
        assert_eq!(CacheOptions::default_shard_bits(8 << 20), 4);
        assert_eq!(CacheOptions::default_shard_bits(1 << 30), 6);
    }

    #[test]
    fn clamps() {
        let o = CacheOptions::new(1)
            .with_num_shard_bits(200)
            .with_high_priority_pool_ratio(f64::NAN);
        assert_eq!(o.effective_shard_bits(), CacheOptions::MAX_SHARD_BITS);
        assert_eq!(o.effective_high_priority_ratio(), 0.0);
        assert_eq!(
            o.with_high_priority_pool_ratio(3.0)
                .effective_high_priority_ratio(),
            1.0
        );
    }
}
