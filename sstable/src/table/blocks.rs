//! Reading a table's blocks: from the file (checked against their trailer's CRC, decompressed),
//! through the block cache, or from what the table holds.

use std::sync::Arc;

use siftdb_cache::{BlockKind, Priority};
use siftdb_filter::Filter;

use super::{CachedBlock, Table, TableIterOptions};
use crate::block::Block;
use crate::compression::Compression;
use crate::error::{Result, SstError};
use crate::format::{check_block, BlockCheckError, BlockHandle, BLOCK_TRAILER_LEN, NO_COMPRESSION};
use crate::stats::{BlockAccess, ReadStatistics};

impl Table {
    /// Reads a block and verifies its trailer; returns the (uncompressed) contents.
    pub(super) fn read_block_contents(
        &self,
        handle: BlockHandle,
        kind: BlockKind,
    ) -> Result<Vec<u8>> {
        self.read_block_counted(handle, kind, self.options.stats.as_deref(), false)
    }

    /// [`Table::read_block_contents`], counting the read in `stats`; `once`: a one-pass scan's
    /// read ([`RandomAccessFile::read_at_once`](crate::RandomAccessFile::read_at_once)).
    fn read_block_counted(
        &self,
        handle: BlockHandle,
        kind: BlockKind,
        stats: Option<&ReadStatistics>,
        once: bool,
    ) -> Result<Vec<u8>> {
        if !handle.fits(self.file.size()) {
            return Err(self.corruption(
                handle.offset,
                format!("block handle {handle:?} out of range"),
            ));
        }
        let len = usize::try_from(handle.size)
            .ok()
            .and_then(|s| s.checked_add(BLOCK_TRAILER_LEN))
            .ok_or_else(|| self.corruption(handle.offset, "block size overflows"))?;
        let read = if once {
            self.file.read_at_once(handle.offset, len)
        } else {
            self.file.read_at(handle.offset, len)
        };
        let mut raw = read.map_err(|source| SstError::Io {
            file: self.name.clone(),
            source,
        })?;
        if let Some(stats) = stats {
            stats.record_file_read(kind, len);
        }
        match check_block(&raw) {
            Ok((stored_len, NO_COMPRESSION)) => {
                raw.truncate(stored_len);
                Ok(raw)
            }
            Ok((stored_len, codec)) => {
                // Format 1 wrote every block uncompressed: a codec byte there is damage.
                let codec = Compression::from_byte(codec)
                    .filter(|_| self.footer.version >= 2)
                    .ok_or_else(|| {
                        self.corruption(handle.offset, format!("unknown compression type {codec}"))
                    })?;
                codec
                    .decompress(&raw[..stored_len])
                    .map_err(|reason| self.corruption(handle.offset, reason))
            }
            Err(BlockCheckError::Checksum { got, expected }) => Err(SstError::ChecksumMismatch {
                file: self.name.clone(),
                offset: handle.offset,
                got,
                expected,
            }),
            Err(other) => {
                Err(self.corruption(handle.offset, format!("bad block trailer: {other:?}")))
            }
        }
    }

    pub(super) fn load_block(
        &self,
        handle: BlockHandle,
        kind: BlockKind,
    ) -> Result<(CachedBlock, usize)> {
        let block = self.read_block(handle, kind, self.options.stats.as_deref(), false)?;
        let charge = block.size();
        Ok((CachedBlock::Block(Arc::new(block)), charge))
    }

    fn read_block(
        &self,
        handle: BlockHandle,
        kind: BlockKind,
        stats: Option<&ReadStatistics>,
        once: bool,
    ) -> Result<Block> {
        let contents = self.read_block_counted(handle, kind, stats, once)?;
        Block::new(contents).map_err(|r| self.corruption(handle.offset, r))
    }

    /// A block for an iterator: through the cache, or — without `fill_cache` — as
    /// [`Table::block_uncached`] reads it.
    pub(super) fn block_for_iter(
        &self,
        handle: BlockHandle,
        kind: BlockKind,
        options: &TableIterOptions,
    ) -> Result<Arc<Block>> {
        if let Some(b) = self.held_partition(handle, kind) {
            return Ok(b);
        }
        if options.fill_cache {
            return self
                .cached_block(handle, kind, priority_of(kind))
                .map(|(b, _)| b);
        }
        let stats = options.stats.as_deref().or(self.options.stats.as_deref());
        self.block_uncached(handle, kind, stats, options.read_once)
            .map(|(b, _)| b)
    }

    /// A block for a lookup: through the cache, or without filling it.
    pub(super) fn block_for_get(
        &self,
        handle: BlockHandle,
        kind: BlockKind,
        fill_cache: bool,
    ) -> Result<(Arc<Block>, BlockAccess)> {
        if let Some(b) = self.held_partition(handle, kind) {
            return Ok((b, BlockAccess::Pinned));
        }
        if fill_cache {
            self.cached_block(handle, kind, priority_of(kind))
        } else {
            self.block_uncached(handle, kind, self.options.stats.as_deref(), false)
        }
    }

    /// A block from the cache if it is there (no lookup counted, recency unchanged), else from
    /// the file without inserting it (the read counted in `stats`).
    fn block_uncached(
        &self,
        handle: BlockHandle,
        kind: BlockKind,
        stats: Option<&ReadStatistics>,
        once: bool,
    ) -> Result<(Arc<Block>, BlockAccess)> {
        if let Some(entry) = self.cache.peek(&self.block_key(handle)) {
            if let CachedBlock::Block(b) = entry.as_ref() {
                return Ok((Arc::clone(b), BlockAccess::CacheHit));
            }
        }
        let block = self.read_block(handle, kind, stats, once)?;
        Ok((Arc::new(block), BlockAccess::FileRead))
    }

    pub(super) fn load_filter(&self, handle: BlockHandle) -> Result<(CachedBlock, usize)> {
        let contents = self.read_block_contents(handle, BlockKind::Filter)?;
        let filter = Filter::decode(&contents, &self.options.key_hasher).map_err(|source| {
            SstError::Filter {
                file: self.name.clone(),
                offset: handle.offset,
                source,
            }
        })?;
        Ok((CachedBlock::Filter(Arc::new(filter)), contents.len()))
    }

    /// Reads and decodes the range filter block at `handle` (cache charge: its decoded size).
    fn load_range_filter(&self, handle: BlockHandle) -> Result<(CachedBlock, usize)> {
        let contents = self.read_block_contents(handle, BlockKind::Filter)?;
        let block = crate::RangeFilterBlock::decode(&contents)
            .map_err(|reason| self.corruption(handle.offset, reason))?;
        let charge = block.size_bytes();
        Ok((CachedBlock::RangeFilter(Arc::new(block)), charge))
    }

    /// The range filter block at `handle`, through the cache (high priority, like filters).
    pub(super) fn range_filter(&self, handle: BlockHandle) -> Result<Arc<crate::RangeFilterBlock>> {
        let entry = self.cache.get_or_insert_with(
            self.block_key(handle),
            BlockKind::Filter,
            Priority::High,
            || self.load_range_filter(handle),
        )?;
        match entry.as_ref() {
            CachedBlock::RangeFilter(f) => Ok(Arc::clone(f)),
            CachedBlock::Block(_) | CachedBlock::Filter(_) | CachedBlock::Reservation => Err(self
                .corruption(
                    handle.offset,
                    "cache holds another block at the range filter offset",
                )),
        }
    }

    /// A block through the cache; reports how it was obtained.
    pub(super) fn cached_block(
        &self,
        handle: BlockHandle,
        kind: BlockKind,
        priority: Priority,
    ) -> Result<(Arc<Block>, BlockAccess)> {
        let mut access = BlockAccess::CacheHit;
        let entry =
            self.cache
                .get_or_insert_with(self.block_key(handle), kind, priority, || {
                    access = BlockAccess::FileRead;
                    self.load_block(handle, kind)
                })?;
        match entry.as_ref() {
            CachedBlock::Block(b) => Ok((Arc::clone(b), access)),
            CachedBlock::Filter(_) | CachedBlock::RangeFilter(_) | CachedBlock::Reservation => {
                Err(self.corruption(handle.offset, "cache holds a filter at a block offset"))
            }
        }
    }

    /// The index block — of a partitioned table, the top-level index (always held).
    pub(super) fn index_block(&self) -> Result<(Arc<Block>, BlockAccess)> {
        self.index_block_filling(true)
    }

    /// [`Table::index_block`], reading it from the file without filling the cache if it is not
    /// held or cached.
    pub(super) fn index_block_filling(
        &self,
        fill_cache: bool,
    ) -> Result<(Arc<Block>, BlockAccess)> {
        if let Some(h) = self.held.load().as_deref() {
            return Ok((Arc::clone(&h.index), BlockAccess::Pinned));
        }
        self.block_for_get(self.footer.index, BlockKind::Index, fill_cache)
    }

    /// The filter at `handle` (the whole-key filter, a filter partition or the prefix filter):
    /// held by the table, or through the cache.
    pub(super) fn filter(&self, handle: BlockHandle) -> Result<Option<(Arc<Filter>, BlockAccess)>> {
        if handle.is_absent() {
            return Ok(None);
        }
        if let Some(f) = self.held_filter(handle) {
            return Ok(Some((f, BlockAccess::Pinned)));
        }
        self.cached_filter(handle)
    }

    /// The filter at `handle` through the block cache (read from the file on a miss), not
    /// asking what the table holds; `None` when the handle is absent.
    pub(super) fn cached_filter(
        &self,
        handle: BlockHandle,
    ) -> Result<Option<(Arc<Filter>, BlockAccess)>> {
        if handle.is_absent() {
            return Ok(None);
        }
        let mut access = BlockAccess::CacheHit;
        let entry = self.cache.get_or_insert_with(
            self.block_key(handle),
            BlockKind::Filter,
            Priority::High,
            || {
                access = BlockAccess::FileRead;
                self.load_filter(handle)
            },
        )?;
        match entry.as_ref() {
            CachedBlock::Filter(f) => Ok(Some((Arc::clone(f), access))),
            CachedBlock::Block(_) | CachedBlock::RangeFilter(_) | CachedBlock::Reservation => {
                Err(self.corruption(handle.offset, "cache holds a block at the filter offset"))
            }
        }
    }
}

/// Data blocks are evicted first; index and filter blocks (and their partitions) go to the
/// high-priority pool.
fn priority_of(kind: BlockKind) -> Priority {
    if kind == BlockKind::Data {
        Priority::Low
    } else {
        Priority::High
    }
}
