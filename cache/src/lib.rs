//! siftdb-cache: the block cache of siftdb.
//!
//! A sharded LRU cache of table blocks (data, index, filter, properties),
//! bounded in bytes, with pinning, a high-priority pool for index and filter
//! blocks, and per-kind hit/miss/insert/evict counters. See [`BlockCache`] for
//! the behaviour and an example.
//!
//! Modules, one job each: `key` (what a block is), `options` (configuration),
//! `admission` (which data blocks a full shard lets in),
//! `stats` (counters), `shard` (eviction and accounting of one shard, no
//! locking), `cache` (sharding and locking), `pin` (the pin guard).

mod admission;
mod cache;
mod key;
mod memo;
mod options;
mod pin;
mod shard;
mod stats;

pub use admission::Admission;
pub use cache::BlockCache;
pub use key::{BlockKey, BlockKind, Priority};
pub use memo::{FalsePositiveMemo, MemoStats, ENTRY_OVERHEAD as MEMO_ENTRY_OVERHEAD};
pub use options::CacheOptions;
pub use pin::PinnedBlock;
pub use stats::{CacheStats, KindStats};

#[cfg(test)]
mod tests;
