//! Reads a table: point lookups that check the filter first, prefix checks, and iterators.

use std::sync::Arc;

use parking_lot::RwLock;
use siftdb_cache::{BlockCache, BlockKey, BlockKind, PinnedBlock, Priority};
use siftdb_filter::{Filter, KeyHasher};

use crate::block::{Block, BlockIter};
use crate::error::{Result, SstError};
use crate::file::RandomAccessFile;
use crate::format::{
    check_block, BlockCheckError, BlockHandle, Footer, FooterError, BLOCK_TRAILER_LEN, FOOTER_LEN,
};
use crate::internal_key::{compare_internal, InternalKey, ParsedKey, ValueKind};
use crate::prefix::PrefixExtractor;
use crate::properties::TableProperties;
use crate::stats::{BlockAccess, FilterOutcome, GetTrace, ReadStatistics};

/// What the block cache holds for tables.
#[derive(Debug)]
pub enum CachedBlock {
    /// A data or index block.
    Block(Arc<Block>),
    /// A decoded filter.
    Filter(Arc<Filter>),
}

/// The block cache type tables share.
pub type TableCache = BlockCache<CachedBlock>;

/// How a table is read.
#[derive(Debug, Clone, Default)]
pub struct TableReadOptions {
    /// Hasher the filters must have been built with (a block built under another is refused).
    pub key_hasher: KeyHasher,
    /// The extractor prefix checks use; a table built under another extractor (by name) never
    /// has its prefix filter consulted.
    pub prefix_extractor: Option<Arc<dyn PrefixExtractor>>,
    /// Pin the filter and index blocks in the cache at open (the engine does this for L0).
    pub pin_filter_and_index: bool,
    /// Shared counters every lookup reports to.
    pub stats: Option<Arc<ReadStatistics>>,
}

/// Result of a point lookup in one table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableGet {
    /// The newest visible version is this value.
    Found(Vec<u8>),
    /// The newest visible version is a tombstone.
    Deleted,
    /// The table has no visible version of the key.
    NotFound,
}

/// Blocks a pinned table holds directly, with the pins that keep them in the cache.
struct PinnedParts {
    index: Arc<Block>,
    filter: Option<Arc<Filter>>,
    prefix_filter: Option<Arc<Filter>>,
    _pins: Vec<PinnedBlock<CachedBlock>>,
}

/// An open table.
pub struct Table {
    id: u64,
    name: String,
    file: Box<dyn RandomAccessFile>,
    cache: Arc<TableCache>,
    options: TableReadOptions,
    footer: Footer,
    properties: TableProperties,
    prefix_filter_usable: bool,
    pinned: RwLock<Option<PinnedParts>>,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("entries", &self.properties.entries)
            .finish()
    }
}

/// A lookup's filter work done ahead ([`Table::prepare_get`]): the table's whole-key filter, how
/// it was reached, and the key's hash under the filter's hasher (`None`: the table has no
/// filter).
#[derive(Debug, Clone)]
pub struct PreparedGet {
    filter: Option<(Arc<Filter>, BlockAccess, u64)>,
}

impl Table {
    /// Opens a table: reads and verifies the footer and properties, and loads the index and
    /// filter blocks through the cache (pinned if the options say so). Any damage is a typed
    /// error naming the file and offset.
    pub fn open(
        file: Box<dyn RandomAccessFile>,
        table_id: u64,
        name: impl Into<String>,
        cache: Arc<TableCache>,
        options: TableReadOptions,
    ) -> Result<Table> {
        let name = name.into();
        let size = file.size();
        if size < FOOTER_LEN as u64 {
            return Err(SstError::Corruption {
                file: name,
                offset: 0,
                reason: format!("file of {size} bytes is shorter than a footer"),
            });
        }
        let footer_at = size - FOOTER_LEN as u64;
        let footer_bytes = file
            .read_at(footer_at, FOOTER_LEN)
            .map_err(|source| SstError::Io {
                file: name.clone(),
                source,
            })?;
        let footer = Footer::decode(&footer_bytes).map_err(|e| match e {
            FooterError::Version(version) => SstError::UnsupportedVersion {
                file: name.clone(),
                version,
            },
            other => SstError::Corruption {
                file: name.clone(),
                offset: footer_at,
                reason: format!("bad footer: {other:?}"),
            },
        })?;
        for (what, h) in [
            ("index", footer.index),
            ("properties", footer.properties),
            ("filter", footer.filter),
            ("prefix filter", footer.prefix_filter),
        ] {
            let optional = matches!(what, "filter" | "prefix filter");
            let absent_and_allowed = optional && h.is_absent();
            if !absent_and_allowed && !h.fits(size) {
                return Err(SstError::Corruption {
                    file: name.clone(),
                    offset: footer_at,
                    reason: format!("{what} block handle {h:?} out of range"),
                });
            }
        }
        let mut table = Table {
            id: table_id,
            name,
            file,
            cache,
            options,
            footer,
            properties: TableProperties::default(),
            prefix_filter_usable: false,
            pinned: RwLock::new(None),
        };
        let props_raw = table.read_block_contents(footer.properties, BlockKind::Properties)?;
        table.properties = TableProperties::decode(props_raw)
            .map_err(|reason| table.corruption(footer.properties.offset, reason))?;
        table.prefix_filter_usable = !footer.prefix_filter.is_absent()
            && table
                .options
                .prefix_extractor
                .as_ref()
                .is_some_and(|p| p.name() == table.properties.prefix_extractor);
        if table.options.pin_filter_and_index {
            table.pin_filter_and_index()?;
        } else {
            // Warm the cache and validate the blocks every lookup needs.
            table.index_block()?;
            table.filter(footer.filter)?;
            if table.prefix_filter_usable {
                table.filter(footer.prefix_filter)?;
            }
        }
        Ok(table)
    }

    /// The table's id (its file number).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The table's file name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The table's properties.
    pub fn properties(&self) -> &TableProperties {
        &self.properties
    }

    /// File size in bytes.
    pub fn file_size(&self) -> u64 {
        self.file.size()
    }

    /// Whether the table has a whole-key filter.
    pub fn has_filter(&self) -> bool {
        !self.footer.filter.is_absent()
    }

    /// Pins the filter and index blocks in the cache and keeps them in the table, so lookups
    /// skip the cache for them. Idempotent.
    pub fn pin_filter_and_index(&self) -> Result<()> {
        if self.pinned.read().is_some() {
            return Ok(());
        }
        let mut pins = Vec::new();
        let index_pin = self.cache.get_or_insert_pinned_with(
            self.block_key(self.footer.index),
            BlockKind::Index,
            Priority::High,
            || self.load_block(self.footer.index, BlockKind::Index),
        )?;
        let index = match index_pin.value().as_ref() {
            CachedBlock::Block(b) => Arc::clone(b),
            CachedBlock::Filter(_) => {
                return Err(self.corruption(
                    self.footer.index.offset,
                    "cache holds a filter at the index offset",
                ))
            }
        };
        pins.push(index_pin);
        let mut pin_filter = |handle: BlockHandle| -> Result<Option<Arc<Filter>>> {
            if handle.is_absent() {
                return Ok(None);
            }
            let pin = self.cache.get_or_insert_pinned_with(
                self.block_key(handle),
                BlockKind::Filter,
                Priority::High,
                || self.load_filter(handle),
            )?;
            let filter = match pin.value().as_ref() {
                CachedBlock::Filter(f) => Arc::clone(f),
                CachedBlock::Block(_) => {
                    return Err(
                        self.corruption(handle.offset, "cache holds a block at the filter offset")
                    )
                }
            };
            pins.push(pin);
            Ok(Some(filter))
        };
        let filter = pin_filter(self.footer.filter)?;
        let prefix_filter = if self.prefix_filter_usable {
            pin_filter(self.footer.prefix_filter)?
        } else {
            None
        };
        *self.pinned.write() = Some(PinnedParts {
            index,
            filter,
            prefix_filter,
            _pins: pins,
        });
        Ok(())
    }

    /// Releases the pins: the blocks return to the cache's LRU (a table leaving L0).
    pub fn unpin(&self) {
        *self.pinned.write() = None;
    }

    /// Whether the filter and index are pinned.
    pub fn is_pinned(&self) -> bool {
        self.pinned.read().is_some()
    }

    fn block_key(&self, handle: BlockHandle) -> BlockKey {
        BlockKey {
            table_id: self.id,
            offset: handle.offset,
        }
    }

    fn corruption(&self, offset: u64, reason: impl Into<String>) -> SstError {
        SstError::Corruption {
            file: self.name.clone(),
            offset,
            reason: reason.into(),
        }
    }

    /// Reads a block and verifies its trailer; returns the contents.
    fn read_block_contents(&self, handle: BlockHandle, kind: BlockKind) -> Result<Vec<u8>> {
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
        let mut raw = self
            .file
            .read_at(handle.offset, len)
            .map_err(|source| SstError::Io {
                file: self.name.clone(),
                source,
            })?;
        if let Some(stats) = &self.options.stats {
            stats.record_file_read(kind, len);
        }
        match check_block(&raw) {
            Ok(contents_len) => {
                raw.truncate(contents_len);
                Ok(raw)
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

    fn load_block(&self, handle: BlockHandle, kind: BlockKind) -> Result<(CachedBlock, usize)> {
        let contents = self.read_block_contents(handle, kind)?;
        let block = Block::new(contents).map_err(|r| self.corruption(handle.offset, r))?;
        let charge = block.size();
        Ok((CachedBlock::Block(Arc::new(block)), charge))
    }

    fn load_filter(&self, handle: BlockHandle) -> Result<(CachedBlock, usize)> {
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

    /// A block through the cache; reports how it was obtained.
    fn cached_block(
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
            CachedBlock::Filter(_) => {
                Err(self.corruption(handle.offset, "cache holds a filter at a block offset"))
            }
        }
    }

    fn index_block(&self) -> Result<(Arc<Block>, BlockAccess)> {
        if let Some(p) = self.pinned.read().as_ref() {
            return Ok((Arc::clone(&p.index), BlockAccess::Pinned));
        }
        self.cached_block(self.footer.index, BlockKind::Index, Priority::High)
    }

    fn filter(&self, handle: BlockHandle) -> Result<Option<(Arc<Filter>, BlockAccess)>> {
        if handle.is_absent() {
            return Ok(None);
        }
        if let Some(p) = self.pinned.read().as_ref() {
            let pinned = if handle == self.footer.filter {
                &p.filter
            } else {
                &p.prefix_filter
            };
            if let Some(f) = pinned {
                return Ok(Some((Arc::clone(f), BlockAccess::Pinned)));
            }
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
            CachedBlock::Block(_) => {
                Err(self.corruption(handle.offset, "cache holds a block at the filter offset"))
            }
        }
    }

    /// Point lookup of the newest version of `user_key` visible at sequence `snapshot`.
    ///
    /// Filter first: a "no" ends the lookup without touching the index or any data block.
    pub fn get(&self, user_key: &[u8], snapshot: u64) -> Result<TableGet> {
        let mut trace = GetTrace::default();
        self.get_traced(user_key, snapshot, &mut trace)
    }

    /// [`Table::get`], also reporting in `trace` exactly which structures it touched.
    pub fn get_traced(
        &self,
        user_key: &[u8],
        snapshot: u64,
        trace: &mut GetTrace,
    ) -> Result<TableGet> {
        *trace = GetTrace::default();
        let result = self
            .filter_for(user_key)
            .and_then(|prepared| self.get_prepared(user_key, snapshot, prepared, trace));
        if let Some(stats) = &self.options.stats {
            stats.record(trace);
        }
        result
    }

    /// Gets this table's whole-key filter and starts loading the part of it a lookup of
    /// `user_key` will probe, without probing it yet. A lookup across levels prepares the next
    /// table this way before probing the current one, so the two memory waits overlap; the
    /// result goes to [`Table::get_prepared`].
    pub fn prepare_get(&self, user_key: &[u8]) -> Result<PreparedGet> {
        let prepared = self.filter_for(user_key)?;
        if let Some((filter, _, hash)) = &prepared.filter {
            filter.prefetch_hash(*hash);
        }
        Ok(prepared)
    }

    /// The whole-key filter and the key's hash under its hasher.
    fn filter_for(&self, user_key: &[u8]) -> Result<PreparedGet> {
        let filter = self.filter(self.footer.filter)?.map(|(filter, access)| {
            let hash = filter.hasher().hash(user_key);
            (filter, access, hash)
        });
        Ok(PreparedGet { filter })
    }

    /// [`Table::get_traced`] with the filter work done by [`Table::prepare_get`] for the same
    /// `user_key`. Unlike `get_traced` it leaves recording `trace` in
    /// [`TableReadOptions::stats`] to the caller (the engine records it per level instead,
    /// sparing every probe of a lookup two shared atomic updates); block reads from the file are
    /// still counted there.
    pub fn get_prepared(
        &self,
        user_key: &[u8],
        snapshot: u64,
        prepared: PreparedGet,
        trace: &mut GetTrace,
    ) -> Result<TableGet> {
        *trace = GetTrace::default();
        if let Some((filter, access, hash)) = prepared.filter {
            trace.filter_block = access;
            if !filter.may_contain_hash(hash) {
                trace.filter = FilterOutcome::No;
                return Ok(TableGet::NotFound);
            }
            trace.filter = FilterOutcome::Maybe;
        }
        let target = InternalKey::for_lookup(user_key, snapshot);
        let (index, access) = self.index_block()?;
        trace.index_block = access;
        let mut index_iter = index.iter();
        index_iter.seek(target.encoded(), compare_internal);
        if let Some(e) = index_iter.error() {
            return Err(self.corruption(self.footer.index.offset, e));
        }
        if !index_iter.valid() {
            return Ok(TableGet::NotFound);
        }
        let handle = BlockHandle::decode(index_iter.value())
            .ok_or_else(|| self.corruption(self.footer.index.offset, "undecodable index entry"))?;
        let (block, access) = self.cached_block(handle, BlockKind::Data, Priority::Low)?;
        trace.data_block = access;
        let mut it = block.iter();
        it.seek(target.encoded(), compare_internal);
        if let Some(e) = it.error() {
            return Err(self.corruption(handle.offset, e));
        }
        if !it.valid() {
            return Ok(TableGet::NotFound);
        }
        let parsed = ParsedKey::parse(it.key())
            .ok_or_else(|| self.corruption(handle.offset, "undecodable internal key"))?;
        if parsed.user_key != user_key {
            return Ok(TableGet::NotFound);
        }
        trace.key_found = true;
        Ok(match parsed.kind {
            ValueKind::Put => TableGet::Found(it.value().to_vec()),
            ValueKind::Delete => TableGet::Deleted,
        })
    }

    /// Whether the table may hold keys starting with `prefix`, by its prefix filter.
    ///
    /// `true` when the table has no usable prefix filter (built under another extractor, or
    /// none), or when `prefix` is shorter than the extractor's prefix: only a "no" from a filter
    /// over exactly the configured prefixes is trusted.
    pub fn prefix_may_match(&self, prefix: &[u8]) -> Result<bool> {
        if !self.prefix_filter_usable {
            return Ok(true);
        }
        let Some(extractor) = &self.options.prefix_extractor else {
            return Ok(true);
        };
        let Some(p) = extractor.prefix(prefix) else {
            return Ok(true);
        };
        let Some((filter, _)) = self.filter(self.footer.prefix_filter)? else {
            return Ok(true);
        };
        let maybe = filter.may_contain(p);
        if let Some(stats) = &self.options.stats {
            use std::sync::atomic::Ordering::Relaxed;
            stats.prefix_checked.fetch_add(1, Relaxed);
            if !maybe {
                stats.prefix_useful.fetch_add(1, Relaxed);
            }
        }
        Ok(maybe)
    }

    /// An iterator over all entries (internal keys) of the table. It holds an `Arc` of the
    /// table, so it can outlive the caller's borrow and move to another thread.
    pub fn iter(self: &Arc<Self>) -> TableIter {
        TableIter {
            table: Arc::clone(self),
            index: None,
            data: None,
            error: None,
        }
    }
}

/// A two-level iterator: index block → data blocks.
pub struct TableIter {
    table: Arc<Table>,
    index: Option<BlockIter>,
    data: Option<BlockIter>,
    error: Option<SstError>,
}

impl std::fmt::Debug for TableIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableIter")
            .field("table", &self.table.id)
            .field("valid", &self.valid())
            .finish()
    }
}

impl TableIter {
    /// Whether the iterator is on an entry.
    pub fn valid(&self) -> bool {
        self.error.is_none() && self.data.as_ref().is_some_and(BlockIter::valid)
    }

    /// Current internal key.
    pub fn key(&self) -> &[u8] {
        self.data.as_ref().map_or(&[], |d| d.key())
    }

    /// Current value.
    pub fn value(&self) -> &[u8] {
        self.data.as_ref().map_or(&[], |d| d.value())
    }

    /// The error that stopped the iterator, if any. Check it when `valid()` turns false.
    pub fn status(&self) -> Option<&SstError> {
        self.error.as_ref()
    }

    /// Takes the error out, if any (the iterator then stays invalid until repositioned).
    pub fn take_error(&mut self) -> Option<SstError> {
        let error = self.error.take();
        if error.is_some() {
            self.data = None;
        }
        error
    }

    fn fail(&mut self, e: SstError) {
        self.error = Some(e);
        self.data = None;
    }

    fn index_iter(&mut self) -> Option<&mut BlockIter> {
        if self.index.is_none() {
            match self.table.index_block() {
                Ok((block, _)) => self.index = Some(block.iter()),
                Err(e) => {
                    self.fail(e);
                    return None;
                }
            }
        }
        self.index.as_mut()
    }

    /// Loads the data block the index iterator points at; skips empty blocks forward.
    fn load_data_block(&mut self) -> bool {
        let Some(index) = self.index.as_ref() else {
            return false;
        };
        if let Some(e) = index.error() {
            let offset = self.table.footer.index.offset;
            self.fail(self.table.corruption(offset, e));
            return false;
        }
        if !index.valid() {
            self.data = None;
            return false;
        }
        let Some(handle) = BlockHandle::decode(index.value()) else {
            let offset = self.table.footer.index.offset;
            self.fail(self.table.corruption(offset, "undecodable index entry"));
            return false;
        };
        match self
            .table
            .cached_block(handle, BlockKind::Data, Priority::Low)
        {
            Ok((block, _)) => {
                self.data = Some(block.iter());
                true
            }
            Err(e) => {
                self.fail(e);
                false
            }
        }
    }

    /// After positioning within a data block: move on to following blocks while invalid.
    fn skip_exhausted_blocks(&mut self) {
        loop {
            let Some(data) = self.data.as_ref() else {
                return;
            };
            if data.valid() {
                return;
            }
            if let Some(e) = data.error() {
                self.fail(self.table.corruption(0, e));
                return;
            }
            let Some(index) = self.index.as_mut() else {
                return;
            };
            index.next();
            if !self.load_data_block() {
                return;
            }
            if let Some(d) = self.data.as_mut() {
                d.seek_to_first();
            }
        }
    }

    /// Moves to the first entry.
    pub fn seek_to_first(&mut self) {
        self.error = None;
        let Some(index) = self.index_iter() else {
            return;
        };
        index.seek_to_first();
        if self.load_data_block() {
            if let Some(d) = self.data.as_mut() {
                d.seek_to_first();
            }
        }
        self.skip_exhausted_blocks();
    }

    /// Moves to the first entry whose internal key is ≥ `target` (an encoded internal key).
    pub fn seek(&mut self, target: &[u8]) {
        self.error = None;
        let Some(index) = self.index_iter() else {
            return;
        };
        index.seek(target, compare_internal);
        if self.load_data_block() {
            if let Some(d) = self.data.as_mut() {
                d.seek(target, compare_internal);
            }
        }
        self.skip_exhausted_blocks();
    }

    /// Moves to the next entry.
    pub fn next(&mut self) {
        if let Some(d) = self.data.as_mut() {
            d.next();
        }
        self.skip_exhausted_blocks();
    }
}
