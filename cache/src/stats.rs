//! Cache statistics: per-kind counters and usage figures.
//!
//! Counters live inside each shard and change only while that shard's lock is
//! held (every event they count happens under the lock anyway). That makes a
//! counter update a plain add instead of an atomic read-modify-write on a cache
//! line shared by every reader thread, which would undo much of what sharding
//! buys; and a shard's figures are always mutually consistent.
//! [`BlockCache::stats`](crate::BlockCache::stats) sums the shards, locking each
//! briefly in turn.

use crate::key::BlockKind;

/// `$after − $before` of a statistics struct, field by field: `counters` subtract (saturating,
/// in case a counter was reset), `gauges` keep `$after`'s value, `nested` fields are computed
/// by the expression given (which may name the field of `$after`). The struct is destructured
/// without `..`, so a field added to it does not compile until it is sorted here.
#[doc(hidden)]
#[macro_export]
macro_rules! stats_since {
    ($ty:ident, $after:expr, $before:expr,
     counters [$($c:ident),* $(,)?], gauges [$($g:ident),* $(,)?]
     $(, nested [$($n:ident => $e:expr),* $(,)?])?) => {{
        let $ty { $($c,)* $($g,)* $($($n,)*)? } = $after;
        $ty {
            $($c: $c.saturating_sub($before.$c),)*
            $($g: ::core::clone::Clone::clone($g),)*
            $($($n: $e,)*)?
        }
    }};
}

/// Counters and current residency for one [`BlockKind`].
///
/// Invariant (per shard, hence for the sum once the cache is quiescent):
/// `inserts - evictions - erasures == entries`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KindStats {
    /// Lookups that found the block.
    pub hits: u64,
    /// Lookups that did not find the block.
    pub misses: u64,
    /// Entries added to the cache (an insert of a key already resident is not
    /// counted: the resident value is kept).
    pub inserts: u64,
    /// Entries removed to make room (or, for an entry larger than its shard,
    /// dropped when its last pin went away).
    pub evictions: u64,
    /// Entries removed by [`erase`](crate::BlockCache::erase) or
    /// [`erase_table`](crate::BlockCache::erase_table).
    pub erasures: u64,
    /// Unpinned inserts not admitted because the entry alone is larger than
    /// its shard's capacity (not counted in `inserts`).
    pub rejections: u64,
    /// Data blocks the admission policy kept out of a full shard (see
    /// [`Admission`](crate::Admission); not counted in `inserts`).
    pub not_admitted: u64,
    /// Entries of this kind now resident (pinned or not).
    pub entries: usize,
    /// Bytes charged by resident entries of this kind (pinned or not).
    pub bytes: usize,
}

impl KindStats {
    /// `hits + misses`.
    pub fn lookups(&self) -> u64 {
        self.hits + self.misses
    }

    /// `hits / lookups`, or `0.0` before the first lookup.
    pub fn hit_ratio(&self) -> f64 {
        match self.lookups() {
            0 => 0.0,
            n => self.hits as f64 / n as f64,
        }
    }

    /// Adds `other` field by field.
    pub(crate) fn accumulate(&mut self, other: &KindStats) {
        self.hits += other.hits;
        self.misses += other.misses;
        self.inserts += other.inserts;
        self.evictions += other.evictions;
        self.erasures += other.erasures;
        self.rejections += other.rejections;
        self.not_admitted += other.not_admitted;
        self.entries += other.entries;
        self.bytes += other.bytes;
    }
}

/// A snapshot of a cache's statistics, from [`BlockCache::stats`](crate::BlockCache::stats).
///
/// Each shard is read atomically, but shards are read one after another, so
/// while other threads use the cache the totals mix slightly different
/// moments; with the cache quiescent every invariant documented here holds
/// exactly.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CacheStats {
    /// Counters per kind, indexed by [`BlockKind::index`].
    pub per_kind: [KindStats; BlockKind::COUNT],
    /// Configured capacity in bytes.
    pub capacity: usize,
    /// Bytes charged by all resident entries, pinned ones included
    /// (equals the sum of `per_kind[..].bytes`). May exceed `capacity`, but
    /// only by pinned bytes: per shard, `usage <= max(shard capacity, pinned)`.
    pub usage: usize,
    /// Bytes charged by pinned entries (part of `usage`).
    pub pinned_usage: usize,
    /// Bytes charged by unpinned entries in the high-priority pool (part of
    /// `usage`; pinned entries are outside both pools).
    pub high_priority_usage: usize,
    /// Capacity of the high-priority pool summed over shards.
    pub high_priority_capacity: usize,
    /// Resident entries, pinned ones included.
    pub entries: usize,
    /// Resident entries with at least one pin.
    pub pinned_entries: usize,
    /// Number of shards.
    pub num_shards: usize,
}

impl KindStats {
    /// The counters of `self` less those of `before` (an earlier reading); the residency
    /// figures stay as `self` has them.
    pub fn since(&self, before: &KindStats) -> KindStats {
        stats_since!(KindStats, self, before,
            counters [hits, misses, inserts, evictions, erasures, rejections, not_admitted],
            gauges [entries, bytes])
    }
}

impl CacheStats {
    /// The counters of `self` less those of `before` (an earlier reading), per kind; the
    /// usage and capacity figures stay as `self` has them.
    pub fn since(&self, before: &CacheStats) -> CacheStats {
        stats_since!(CacheStats, self, before,
            counters [],
            gauges [capacity, usage, pinned_usage, high_priority_usage, high_priority_capacity,
                entries, pinned_entries, num_shards],
            nested [per_kind => std::array::from_fn(|i| per_kind[i].since(&before.per_kind[i]))])
    }

    /// The counters of one kind.
    pub fn kind(&self, kind: BlockKind) -> &KindStats {
        &self.per_kind[kind.index()]
    }

    /// All kinds added together.
    pub fn total(&self) -> KindStats {
        let mut total = KindStats::default();
        for kind in &self.per_kind {
            total.accumulate(kind);
        }
        total
    }
}
