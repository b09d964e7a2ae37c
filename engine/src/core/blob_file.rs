//! Live blob files: what a version holds of each (its manifest record and its open reader),
//! and reading a value through the block cache by the blob index a table stores.

use std::sync::Arc;

use siftdb_cache::{BlockKey, BlockKind, Priority};
use siftdb_sstable::blob::{BlobFileReader, BlobIndex};
use siftdb_sstable::{CachedBlock, TableCache};

use crate::base::error::{Error, Result};
use crate::base::version_edit::BlobMeta;

/// A live blob file: opened (header and footer checked) when the version that adds it is made,
/// like a table, and kept on disk while any version holding it lives (`core::live_tables`).
pub(crate) struct BlobFile {
    /// What the manifest records about it.
    pub(crate) meta: BlobMeta,
    /// The file's id in the block cache ([`Shared::cache_id`](crate::core::shared::Shared::cache_id)).
    cache_id: u64,
    reader: BlobFileReader,
    _live: Option<crate::core::live_tables::LiveTable>,
}

impl std::fmt::Debug for BlobFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlobFile")
            .field("meta", &self.meta)
            .finish()
    }
}

impl BlobFile {
    /// The live blob file `meta` describes, read through `reader` and cached under `cache_id`,
    /// its file kept while `live` is held.
    pub(crate) fn new(
        meta: BlobMeta,
        cache_id: u64,
        reader: BlobFileReader,
        live: Option<crate::core::live_tables::LiveTable>,
    ) -> BlobFile {
        BlobFile {
            meta,
            cache_id,
            reader,
            _live: live,
        }
    }

    /// The value at `index`'s reference: from the block cache, or read (one positioned read,
    /// checked) and cached when `fill_cache`. A read that does not fill the cache (a
    /// compaction's, or a user's with `fill_cache = false`) only peeks: it counts no lookup
    /// and promotes nothing.
    fn read(
        &self,
        index: &BlobIndex,
        cache: &TableCache,
        fill_cache: bool,
    ) -> Result<Arc<Vec<u8>>> {
        let reference = &index.reference;
        let key = BlockKey::new(self.cache_id, reference.offset);
        let cached = if fill_cache {
            cache.get(&key, BlockKind::Blob)
        } else {
            cache.peek(&key)
        };
        if let Some(entry) = cached {
            if let CachedBlock::Blob(value) = entry.as_ref() {
                return Ok(Arc::clone(value));
            }
            return Err(Error::corruption(format!(
                "block cache holds another block at blob file {} offset {}",
                self.meta.number, reference.offset
            )));
        }
        let value = Arc::new(self.reader.get(reference)?);
        if fill_cache {
            let charge = value.len() + std::mem::size_of::<CachedBlock>();
            let entry = CachedBlock::Blob(Arc::clone(&value));
            cache.insert(key, Arc::new(entry), charge, BlockKind::Blob, Priority::Low);
        }
        Ok(value)
    }
}

/// The blob files of one keyspace's version, by number.
pub(crate) type BlobFiles = std::collections::BTreeMap<u64, Arc<BlobFile>>;

/// The value `index` points to.
pub(crate) fn fetch(
    blobs: &BlobFiles,
    cache: &TableCache,
    fill_cache: bool,
    key: &[u8],
    index: &BlobIndex,
) -> Result<Arc<Vec<u8>>> {
    let number = index.reference.file_number;
    let file = blobs.get(&number).ok_or_else(|| {
        Error::corruption(format!(
            "key {} points into blob file {number}, which is not live",
            crate::base::error::printable_key(key)
        ))
    })?;
    file.read(index, cache, fill_cache)
}

/// Decodes a stored blob index of `key`.
pub(crate) fn decode_index(key: &[u8], stored: &[u8]) -> Result<BlobIndex> {
    BlobIndex::decode(stored).ok_or_else(|| {
        Error::corruption(format!(
            "the blob index of key {} does not decode",
            crate::base::error::printable_key(key)
        ))
    })
}

/// What a cursor needs to read the values its blob indexes point to: the blob files of the
/// version it reads, the block cache, and whether to fill it.
#[derive(Clone)]
pub(crate) struct BlobReads {
    pub files: Arc<BlobFiles>,
    pub cache: Arc<TableCache>,
    pub fill_cache: bool,
}

impl BlobReads {
    /// The value the stored blob index `stored` of `key` points to (expiry is the caller's to
    /// judge, by [`decode_index`]).
    pub(crate) fn fetch(&self, key: &[u8], stored: &[u8]) -> Result<Arc<Vec<u8>>> {
        let index = decode_index(key, stored)?;
        fetch(&self.files, &self.cache, self.fill_cache, key, &index)
    }
}
