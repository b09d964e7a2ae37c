//! What identifies a cached block, what kind of block it is, and how hard the
//! cache should try to keep it.

use std::fmt;

/// Identifies one block of one table file.
///
/// Table ids are never reused within a database and tables are immutable, so a
/// key names the same bytes for as long as the table exists. The cache relies
/// on that: inserting a key that is already resident keeps the resident value
/// (see [`BlockCache::insert`](crate::BlockCache::insert)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlockKey {
    /// The table (SST file) the block belongs to.
    pub table_id: u64,
    /// Byte offset of the block inside its table file.
    pub offset: u64,
}

impl BlockKey {
    /// The key of the block at `offset` in table `table_id`.
    pub const fn new(table_id: u64, offset: u64) -> Self {
        Self { table_id, offset }
    }

    /// A well-mixed 64-bit hash used only to pick a shard.
    ///
    /// Block offsets are multiples of roughly the block size and table ids are
    /// small and sequential, so their low bits alone would spread keys badly;
    /// xxh3 mixes all 128 input bits into every output bit. The shard maps
    /// hash the key again with their own (randomly seeded) hasher, so the two
    /// hashes are independent and shard choice does not skew a shard's map.
    pub(crate) fn shard_hash(&self) -> u64 {
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&self.table_id.to_le_bytes());
        bytes[8..].copy_from_slice(&self.offset.to_le_bytes());
        xxhash_rust::xxh3::xxh3_64(&bytes)
    }
}

impl fmt::Display for BlockKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.table_id, self.offset)
    }
}

/// The kind of a cached block; hit, miss, insert and eviction counters are kept
/// per kind so the read path's behaviour can be seen for each step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
#[non_exhaustive]
pub enum BlockKind {
    /// A data block (key/value entries).
    Data = 0,
    /// An index block (separator keys to data block handles).
    Index = 1,
    /// A filter block (bloom or ribbon).
    Filter = 2,
    /// A table-properties block.
    Properties = 3,
}

impl BlockKind {
    /// Number of kinds; the length of per-kind arrays.
    pub const COUNT: usize = 4;

    /// Every kind, in discriminant order (so `ALL[k.index()] == k`).
    pub const ALL: [BlockKind; Self::COUNT] = [
        BlockKind::Data,
        BlockKind::Index,
        BlockKind::Filter,
        BlockKind::Properties,
    ];

    /// Position of this kind in per-kind arrays such as
    /// [`CacheStats::per_kind`](crate::CacheStats::per_kind).
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Lower-case name, as used in statistics output (`"data"`, `"index"`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            BlockKind::Data => "data",
            BlockKind::Index => "index",
            BlockKind::Filter => "filter",
            BlockKind::Properties => "properties",
        }
    }
}

impl fmt::Display for BlockKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Eviction priority of an unpinned entry.
///
/// `High` entries live in the high-priority pool (a share of each shard's
/// capacity, see [`CacheOptions::high_priority_pool_ratio`](crate::CacheOptions::high_priority_pool_ratio))
/// and are evicted only once no low-priority entry is left; use it for index
/// and filter blocks, which every lookup in a table needs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Priority {
    /// Ordinary LRU entry, evicted first (data blocks).
    #[default]
    Low,
    /// Entry for the high-priority pool (index and filter blocks).
    High,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_is_in_index_order() {
        for (i, kind) in BlockKind::ALL.iter().enumerate() {
            assert_eq!(kind.index(), i);
        }
    }

    #[test]
    fn shard_hash_separates_fields() {
        assert_ne!(
            BlockKey::new(1, 0).shard_hash(),
            BlockKey::new(0, 1).shard_hash()
        );
    }
}
