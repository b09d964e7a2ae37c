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
    /// hash the key again with their own hasher ([`BlockKeyHashBuilder`]), so
    /// the two hashes are independent and shard choice does not skew a
    /// shard's map.
    pub(crate) fn shard_hash(&self) -> u64 {
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&self.table_id.to_le_bytes());
        bytes[8..].copy_from_slice(&self.offset.to_le_bytes());
        xxhash_rust::xxh3::xxh3_64(&bytes)
    }
}

/// The hasher of the shard maps: a multiply-xorshift over a key's two words.
///
/// The maps used `std`'s SipHash, keyed at random against keys an attacker chooses; a block
/// key is a table id and a file offset, which no user chooses, and SipHash of its 16 bytes cost
/// a cache hit more than the rest of its lookup (a filter hit hashes twice: the low-priority
/// LRU, then the high). Its constants differ from xxh3's, so within a shard (keys sharing
/// [`BlockKey::shard_hash`]'s low bits) the buckets still spread.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct BlockKeyHashBuilder;

/// See [`BlockKeyHashBuilder`].
#[derive(Debug, Default)]
pub(crate) struct BlockKeyHasher(u64);

impl std::hash::BuildHasher for BlockKeyHashBuilder {
    type Hasher = BlockKeyHasher;

    fn build_hasher(&self) -> BlockKeyHasher {
        BlockKeyHasher(0x243F_6A88_85A3_08D3)
    }
}

impl std::hash::Hasher for BlockKeyHasher {
    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(31);
    }

    /// Any other input (not used by `BlockKey`'s derived `Hash`), folded eight bytes at a time.
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    #[inline]
    fn finish(&self) -> u64 {
        // Murmur3's finalizer: every input bit reaches the high bits hashbrown tags with and
        // the low bits it indexes by.
        let mut x = self.0;
        x ^= x >> 33;
        x = x.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
        x ^= x >> 33;
        x = x.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
        x ^ (x >> 33)
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
    /// A value read from a blob file (key-value separation).
    Blob = 4,
}

impl BlockKind {
    /// Number of kinds; the length of per-kind arrays.
    pub const COUNT: usize = 5;

    /// Every kind, in discriminant order (so `ALL[k.index()] == k`).
    pub const ALL: [BlockKind; Self::COUNT] = [
        BlockKind::Data,
        BlockKind::Index,
        BlockKind::Filter,
        BlockKind::Properties,
        BlockKind::Blob,
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
            BlockKind::Blob => "blob",
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
    fn map_hash_spreads_sequential_keys_over_buckets() {
        use std::hash::BuildHasher;
        // Keys as tables make them: small sequential ids, offsets ~4 KiB apart. Within one
        // shard, 4096 keys over 4096 buckets (by the low 12 bits) must not pile up.
        let keys: Vec<BlockKey> = (0..64u64)
            .flat_map(|t| (0..4096u64).map(move |b| BlockKey::new(t, b * 4133)))
            .filter(|k| k.shard_hash() % 16 == 3)
            .take(4096)
            .collect();
        assert_eq!(keys.len(), 4096);
        let mut buckets = vec![0u32; 4096];
        for k in &keys {
            buckets[(BlockKeyHashBuilder.hash_one(k) & 4095) as usize] += 1;
        }
        let fullest = buckets.iter().copied().max().unwrap_or(0);
        assert!(fullest <= 12, "a bucket holds {fullest} of 4096 keys");
    }

    #[test]
    fn shard_hash_separates_fields() {
        assert_ne!(
            BlockKey::new(1, 0).shard_hash(),
            BlockKey::new(0, 1).shard_hash()
        );
    }
}
