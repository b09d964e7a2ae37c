//! Reading a table's blocks: from the file (checked against their trailer's CRC, decompressed),
//! through the block cache, or from what the table holds.
//!
//! A block read from the file is checked against its trailer's CRC before it is parsed, then
//! decompressed if its trailer names a codec, and cached uncompressed (charged by that size), so a
//! cache hit never pays decompression; parsing is bounds-checked, so damaged bytes are an
//! `SstError`, never a wrong answer or a panic. Reads without `fill_cache` (compactions,
//! `ReadOptions::fill_cache = false`) use a cached block through `BlockCache::peek` (no lookup
//! counted, recency unchanged) and read any other from the file without inserting it.

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
        let len = self.stored_len(handle)?;
        let raw = self.read_raw(handle.offset, len, once)?;
        if let Some(stats) = stats {
            stats.record_file_read(kind, len);
        }
        self.decode_stored(handle, raw)
    }

    /// Bytes of `handle`'s block in the file, with its trailer; an error if it does not fit.
    pub(super) fn stored_len(&self, handle: BlockHandle) -> Result<usize> {
        if !handle.fits(self.file.size()) {
            return Err(self.corruption(
                handle.offset,
                format!("block handle {handle:?} out of range"),
            ));
        }
        usize::try_from(handle.size)
            .ok()
            .and_then(|s| s.checked_add(BLOCK_TRAILER_LEN))
            .ok_or_else(|| self.corruption(handle.offset, "block size overflows"))
    }

    fn read_raw(&self, offset: u64, len: usize, once: bool) -> Result<Vec<u8>> {
        let read = if once {
            self.file.read_at_once(offset, len)
        } else {
            self.file.read_at(offset, len)
        };
        read.map_err(|source| SstError::Io {
            file: self.name.clone(),
            source,
        })
    }

    /// A block as stored (contents and trailer) checked against its checksum and decompressed.
    fn decode_stored(&self, handle: BlockHandle, mut raw: Vec<u8>) -> Result<Vec<u8>> {
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

    /// A data block for an iterator that reads ahead (`options.readahead_bytes`, without
    /// filling the cache): from what the table holds or the cache if there, else out of
    /// `ahead`, which is refilled — `readahead_bytes` from the block's start, or the rest of the
    /// file — when it does not hold the whole block. Each block is still checked by itself.
    pub(super) fn block_read_ahead(
        &self,
        handle: BlockHandle,
        kind: BlockKind,
        options: &TableIterOptions,
        ahead: &mut Readahead,
    ) -> Result<Arc<Block>> {
        if let Some(b) = self.held_partition(handle, kind) {
            return Ok(b);
        }
        if let Some(entry) = self.cache.peek(&self.block_key(handle))
            && let CachedBlock::Block(b) = entry.as_ref()
        {
            return Ok(Arc::clone(b));
        }
        let len = self.stored_len(handle)?;
        let raw = match ahead.slice(handle.offset, len) {
            Some(raw) => raw.to_vec(),
            None => {
                // `stored_len` checked that the block ends inside the file.
                let rest = self.file.size().saturating_sub(handle.offset);
                let want = options.readahead_bytes.max(len);
                let want = usize::try_from(rest).map_or(want, |rest| want.min(rest));
                ahead.refill(self, handle.offset, want)?;
                ahead
                    .slice(handle.offset, len)
                    .ok_or_else(|| self.corruption(handle.offset, "short read ahead"))?
                    .to_vec()
            }
        };
        let stats = options.stats.as_deref().or(self.options.stats.as_deref());
        if let Some(stats) = stats {
            stats.record_file_read(kind, len);
        }
        let contents = self.decode_stored(handle, raw)?;
        let block = Block::new(contents).map_err(|r| self.corruption(handle.offset, r))?;
        Ok(Arc::new(block))
    }

    /// A data block for an iterator that fills the cache and reads ahead (a scan read front to
    /// back, `want` bytes at a time): from the table or the cache if there, else out of
    /// `ahead` — refilled with `want` bytes from the block's start (or the rest of the file)
    /// when it does not hold the whole block — and inserted into the cache as a block read by
    /// itself would be. Each block is still checked by itself. Also returns whether `ahead` was
    /// refilled (a read from the file).
    pub(super) fn cached_block_read_ahead(
        &self,
        handle: BlockHandle,
        kind: BlockKind,
        want: usize,
        ahead: &mut Readahead,
    ) -> Result<(Arc<Block>, bool)> {
        if let Some(b) = self.held_partition(handle, kind) {
            return Ok((b, false));
        }
        let mut refilled = false;
        let entry = self.cache.get_or_insert_with(
            self.block_key(handle),
            kind,
            priority_of(kind),
            || {
                let len = self.stored_len(handle)?;
                if ahead.slice(handle.offset, len).is_none() {
                    // `stored_len` checked that the block ends inside the file.
                    let rest = self.file.size().saturating_sub(handle.offset);
                    let want = want.max(len);
                    let want = usize::try_from(rest).map_or(want, |rest| want.min(rest));
                    ahead.refill(self, handle.offset, want)?;
                    refilled = true;
                }
                let raw = ahead
                    .slice(handle.offset, len)
                    .ok_or_else(|| self.corruption(handle.offset, "short read ahead"))?
                    .to_vec();
                if let Some(stats) = self.options.stats.as_deref() {
                    stats.record_file_read(kind, len);
                }
                let contents = self.decode_stored(handle, raw)?;
                let block = Block::new(contents).map_err(|r| self.corruption(handle.offset, r))?;
                let charge = block.size();
                Ok((CachedBlock::Block(Arc::new(block)), charge))
            },
        )?;
        match entry.as_ref() {
            CachedBlock::Block(b) => Ok((Arc::clone(b), refilled)),
            _ => Err(self.corruption(handle.offset, "cache holds a filter at a block offset")),
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
        if let Some(entry) = self.cache.peek(&self.block_key(handle))
            && let CachedBlock::Block(b) = entry.as_ref()
        {
            return Ok((Arc::clone(b), BlockAccess::CacheHit));
        }
        let block = self.read_block(handle, kind, stats, once)?;
        Ok((Arc::new(block), BlockAccess::FileRead))
    }

    /// Reads and decodes the filter at `handle`; a whole-key filter (or partition) is thinned to
    /// the table's cap ([`Table::set_filter_bits_cap`]) and charged at its thinned size.
    pub(super) fn load_filter(&self, handle: BlockHandle) -> Result<(CachedBlock, usize)> {
        let contents = self.read_block_contents(handle, BlockKind::Filter)?;
        let filter = Filter::decode(&contents, &self.options.key_hasher).map_err(|source| {
            SstError::Filter {
                file: self.name.clone(),
                offset: handle.offset,
                source,
            }
        })?;
        let cap = self
            .filter_bits_cap()
            .filter(|_| handle != self.footer.prefix_filter);
        if let Some(thin) = cap.and_then(|cap| filter.thinned_to(cap)) {
            let charge = thin.encoded_len();
            return Ok((CachedBlock::Filter(Arc::new(thin)), charge));
        }
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
            CachedBlock::Block(_)
            | CachedBlock::Filter(_)
            | CachedBlock::Reservation
            | CachedBlock::Blob(_) => Err(self.corruption(
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
            CachedBlock::Filter(_)
            | CachedBlock::RangeFilter(_)
            | CachedBlock::Reservation
            | CachedBlock::Blob(_) => {
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
            CachedBlock::Block(_)
            | CachedBlock::RangeFilter(_)
            | CachedBlock::Reservation
            | CachedBlock::Blob(_) => {
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

/// Bytes of a table file read ahead of an iterator (see [`Table::block_read_ahead`]).
#[derive(Debug, Default)]
pub(super) struct Readahead {
    /// File offset of `buffer[0]`.
    offset: u64,
    /// Holds the bytes read in its first `len` (it keeps its largest size: a refill reuses it).
    buffer: Vec<u8>,
    len: usize,
}

impl Readahead {
    /// `len` bytes at file offset `offset`, if all of them were read ahead.
    fn slice(&self, offset: u64, len: usize) -> Option<&[u8]> {
        let start = usize::try_from(offset.checked_sub(self.offset)?).ok()?;
        self.buffer[..self.len].get(start..start.checked_add(len)?)
    }

    /// Reads `len` bytes of `table`'s file at `offset` (one-pass reads) in place of the others.
    fn refill(&mut self, table: &Table, offset: u64, len: usize) -> Result<()> {
        self.len = 0;
        if self.buffer.len() < len {
            self.buffer.resize(len, 0);
        }
        table
            .file
            .read_into_once(offset, &mut self.buffer[..len])
            .map_err(|source| SstError::Io {
                file: table.name.clone(),
                source,
            })?;
        self.offset = offset;
        self.len = len;
        Ok(())
    }
}
