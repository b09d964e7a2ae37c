//! A block cache that several databases share (`Options::block_cache`; RocksDB's `Cache` handed
//! to each database's table options, fjall's shared `Cache`).

use std::sync::Arc;

use siftdb_cache::{Admission, CacheOptions};
use siftdb_sstable::TableCache;

/// A block cache of a fixed capacity that any number of databases use together: put it in
/// each one's [`Options::block_cache`](crate::Options::block_cache), and their data, index,
/// filter and blob blocks compete for one memory budget. Cloning it makes another handle to the
/// same cache. The cache lives while a handle or a database using it does.
///
/// Each open of a database caches its blocks under ids of its own, so databases never read
/// each other's blocks; a database's blocks leave the cache when it closes (and its last
/// iterator or snapshot goes).
///
/// ```
/// use siftdb::{BlockCache, Db, Options};
///
/// let cache = BlockCache::new(64 << 20);
/// let options = Options {
///     block_cache: Some(cache.clone()),
///     ..Options::default()
/// };
/// let (a, b) = (tempfile::tempdir()?, tempfile::tempdir()?);
/// let first = Db::open(a.path(), options.clone())?;
/// let second = Db::open(b.path(), options)?;
/// first.put("k", "v")?;
/// first.flush()?;
/// assert_eq!(first.get("k")?.as_deref(), Some(&b"v"[..]));
/// assert!(cache.usage() > 0);
/// assert_eq!(second.stats().cache.capacity, cache.capacity());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct BlockCache {
    inner: Arc<TableCache>,
}

impl BlockCache {
    /// A cache of `capacity_bytes`, admitting data blocks on their second sighting once full
    /// (the default of [`Options::block_cache_admission`](crate::Options::block_cache_admission)).
    pub fn new(capacity_bytes: usize) -> BlockCache {
        BlockCache::with_admission(capacity_bytes, Admission::SecondSighting)
    }

    /// A cache of `capacity_bytes` with the given admission policy.
    pub fn with_admission(capacity_bytes: usize, admission: Admission) -> BlockCache {
        BlockCache {
            inner: new_table_cache(capacity_bytes, admission),
        }
    }

    /// The capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.inner.capacity()
    }

    /// Bytes charged to the cache now, pinned blocks included, by every database using it.
    pub fn usage(&self) -> usize {
        self.inner.stats().usage
    }

    /// Bytes of pinned blocks (L0 tables' filters and indexes when pinned).
    pub fn pinned_usage(&self) -> usize {
        self.inner.stats().pinned_usage
    }

    /// The cache itself, for a database opened with this handle.
    pub(crate) fn table_cache(&self) -> &Arc<TableCache> {
        &self.inner
    }
}

impl std::fmt::Debug for BlockCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockCache")
            .field("capacity", &self.capacity())
            .field("usage", &self.usage())
            .finish()
    }
}

/// A block cache of `capacity` bytes: shards of at least 4 MiB so a large table's filter block
/// (often over a megabyte) is never refused as oversize.
pub(crate) fn new_table_cache(capacity: usize, admission: Admission) -> Arc<TableCache> {
    let shards = (capacity / (4 << 20)).max(1).next_power_of_two();
    let bits = shards.trailing_zeros().min(6) as u8;
    Arc::new(TableCache::new(
        CacheOptions::new(capacity)
            .with_num_shard_bits(bits)
            .with_admission(admission),
    ))
}
