//! Reads a table: point lookups that check the filter first, prefix checks, and iterators.

use std::sync::Arc;

use parking_lot::RwLock;
use siftdb_cache::{BlockCache, BlockKey, BlockKind, PinnedBlock, Priority};
use siftdb_filter::{Filter, KeyHasher};

use crate::block::{Block, BlockIter};
use crate::compression::Compression;
use crate::error::{Result, SstError};
use crate::file::RandomAccessFile;
use crate::format::{
    check_block, BlockCheckError, BlockHandle, Footer, FooterError, BLOCK_TRAILER_LEN, FOOTER_LEN,
    NO_COMPRESSION,
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

/// Result of a point lookup that writes the value into the caller's buffer
/// ([`Table::get_prepared_into`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// The newest visible version is a value, now in the caller's buffer.
    Found,
    /// The newest visible version is a tombstone.
    Deleted,
    /// The table has no visible version of the key.
    NotFound,
}

/// How a [`TableIter`] reads blocks.
#[derive(Debug, Clone)]
pub struct TableIterOptions {
    /// Insert the blocks read from the file into the block cache (RocksDB's `fill_cache`). A
    /// compaction reads every block of its inputs exactly once: it sets this to `false`, so it
    /// uses blocks already cached but neither inserts, promotes nor counts a lookup, and the
    /// readers' working set stays in the cache.
    pub fill_cache: bool,
    /// Where reads from the file are counted; `None` = the table's
    /// [`TableReadOptions::stats`].
    pub stats: Option<Arc<ReadStatistics>>,
}

impl Default for TableIterOptions {
    fn default() -> Self {
        TableIterOptions {
            fill_cache: true,
            stats: None,
        }
    }
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
    fill_cache: bool,
}

impl PreparedGet {
    /// Whether the lookup inserts the index and data blocks it reads from the file into the
    /// block cache (default `true`; filters always go through the cache).
    pub fn filling_cache(mut self, fill_cache: bool) -> PreparedGet {
        self.fill_cache = fill_cache;
        self
    }
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
        self.read_block_counted(handle, kind, self.options.stats.as_deref())
    }

    /// [`Table::read_block_contents`], counting the read in `stats`.
    fn read_block_counted(
        &self,
        handle: BlockHandle,
        kind: BlockKind,
        stats: Option<&ReadStatistics>,
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
        let mut raw = self
            .file
            .read_at(handle.offset, len)
            .map_err(|source| SstError::Io {
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

    fn load_block(&self, handle: BlockHandle, kind: BlockKind) -> Result<(CachedBlock, usize)> {
        let block = self.read_block(handle, kind, self.options.stats.as_deref())?;
        let charge = block.size();
        Ok((CachedBlock::Block(Arc::new(block)), charge))
    }

    fn read_block(
        &self,
        handle: BlockHandle,
        kind: BlockKind,
        stats: Option<&ReadStatistics>,
    ) -> Result<Block> {
        let contents = self.read_block_counted(handle, kind, stats)?;
        Block::new(contents).map_err(|r| self.corruption(handle.offset, r))
    }

    /// A block for an iterator: through the cache, or — without `fill_cache` — as
    /// [`Table::block_uncached`] reads it.
    fn block_for_iter(
        &self,
        handle: BlockHandle,
        kind: BlockKind,
        options: &TableIterOptions,
    ) -> Result<Arc<Block>> {
        if options.fill_cache {
            let priority = if kind == BlockKind::Data {
                Priority::Low
            } else {
                Priority::High
            };
            return self.cached_block(handle, kind, priority).map(|(b, _)| b);
        }
        let stats = options.stats.as_deref().or(self.options.stats.as_deref());
        self.block_uncached(handle, kind, stats).map(|(b, _)| b)
    }

    /// A block from the cache if it is there (no lookup counted, recency unchanged), else from
    /// the file without inserting it (the read counted in `stats`).
    fn block_uncached(
        &self,
        handle: BlockHandle,
        kind: BlockKind,
        stats: Option<&ReadStatistics>,
    ) -> Result<(Arc<Block>, BlockAccess)> {
        if let Some(entry) = self.cache.peek(&self.block_key(handle)) {
            if let CachedBlock::Block(b) = entry.as_ref() {
                return Ok((Arc::clone(b), BlockAccess::CacheHit));
            }
        }
        let block = self.read_block(handle, kind, stats)?;
        Ok((Arc::new(block), BlockAccess::FileRead))
    }

    /// The index block for a lookup that must not fill the cache.
    fn index_block_uncached(&self) -> Result<(Arc<Block>, BlockAccess)> {
        if let Some(p) = self.pinned.read().as_ref() {
            return Ok((Arc::clone(&p.index), BlockAccess::Pinned));
        }
        self.block_uncached(
            self.footer.index,
            BlockKind::Index,
            self.options.stats.as_deref(),
        )
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
        self.prepare_get_hashed(self.options.key_hasher.hash(user_key))
    }

    /// [`Table::prepare_get`] with the key already hashed: `hash` must be
    /// `key_hasher.hash(user_key)` under [`TableReadOptions::key_hasher`] (the only hasher a
    /// filter of this table can have been built with: a block built under another is refused at
    /// open). A lookup across many tables hashes its key once and passes the hash to each.
    pub fn prepare_get_hashed(&self, hash: u64) -> Result<PreparedGet> {
        let filter = self
            .filter(self.footer.filter)?
            .map(|(filter, access)| (filter, access, hash));
        if let Some((filter, _, hash)) = &filter {
            filter.prefetch_hash(*hash);
        }
        Ok(PreparedGet {
            filter,
            fill_cache: true,
        })
    }

    /// The whole-key filter and the key's hash under its hasher.
    fn filter_for(&self, user_key: &[u8]) -> Result<PreparedGet> {
        let filter = self.filter(self.footer.filter)?.map(|(filter, access)| {
            let hash = filter.hasher().hash(user_key);
            (filter, access, hash)
        });
        Ok(PreparedGet {
            filter,
            fill_cache: true,
        })
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
        let mut value = Vec::new();
        Ok(
            match self.get_prepared_into(user_key, snapshot, prepared, trace, &mut value)? {
                Lookup::Found => TableGet::Found(value),
                Lookup::Deleted => TableGet::Deleted,
                Lookup::NotFound => TableGet::NotFound,
            },
        )
    }

    /// [`Table::get_prepared`] that copies a found value straight from the data block into
    /// `value` (cleared first; untouched unless the result is [`Lookup::Found`]), so a
    /// caller reusing one buffer allocates nothing per lookup.
    pub fn get_prepared_into(
        &self,
        user_key: &[u8],
        snapshot: u64,
        prepared: PreparedGet,
        trace: &mut GetTrace,
        value: &mut Vec<u8>,
    ) -> Result<Lookup> {
        *trace = GetTrace::default();
        if let Some((filter, access, hash)) = prepared.filter {
            trace.filter_block = access;
            if !filter.may_contain_hash(hash) {
                trace.filter = FilterOutcome::No;
                return Ok(Lookup::NotFound);
            }
            trace.filter = FilterOutcome::Maybe;
        }
        let target = InternalKey::for_lookup(user_key, snapshot);
        let (index, access) = if prepared.fill_cache {
            self.index_block()?
        } else {
            self.index_block_uncached()?
        };
        trace.index_block = access;
        let mut index_iter = index.iter();
        index_iter.seek(target.encoded(), compare_internal);
        if let Some(e) = index_iter.error() {
            return Err(self.corruption(self.footer.index.offset, e));
        }
        if !index_iter.valid() {
            return Ok(Lookup::NotFound);
        }
        let handle = BlockHandle::decode(index_iter.value())
            .ok_or_else(|| self.corruption(self.footer.index.offset, "undecodable index entry"))?;
        let (block, access) = if prepared.fill_cache {
            self.cached_block(handle, BlockKind::Data, Priority::Low)?
        } else {
            self.block_uncached(handle, BlockKind::Data, self.options.stats.as_deref())?
        };
        trace.data_block = access;
        let mut it = block.iter();
        it.seek(target.encoded(), compare_internal);
        if let Some(e) = it.error() {
            return Err(self.corruption(handle.offset, e));
        }
        if !it.valid() {
            return Ok(Lookup::NotFound);
        }
        let parsed = ParsedKey::parse(it.key())
            .ok_or_else(|| self.corruption(handle.offset, "undecodable internal key"))?;
        if parsed.user_key != user_key {
            return Ok(Lookup::NotFound);
        }
        trace.key_found = true;
        Ok(match parsed.kind {
            ValueKind::Put => {
                value.clear();
                value.extend_from_slice(it.value());
                Lookup::Found
            }
            ValueKind::Delete => Lookup::Deleted,
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
        self.prefix_may_match_hashed(self.options.key_hasher.hash(p))
    }

    /// [`Table::prefix_may_match`] for a prefix already extracted (by
    /// [`TableReadOptions::prefix_extractor`]) and hashed (by [`TableReadOptions::key_hasher`]):
    /// a prefix seek over many tables does both once.
    pub fn prefix_may_match_hashed(&self, prefix_hash: u64) -> Result<bool> {
        if !self.prefix_filter_usable {
            return Ok(true);
        }
        let Some((filter, _)) = self.filter(self.footer.prefix_filter)? else {
            return Ok(true);
        };
        let maybe = filter.may_contain_hash(prefix_hash);
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
        self.iter_with(TableIterOptions::default())
    }

    /// [`Table::iter`] reading blocks as `options` say (compaction: without filling the cache).
    pub fn iter_with(self: &Arc<Self>, options: TableIterOptions) -> TableIter {
        TableIter {
            table: Arc::clone(self),
            options,
            index: None,
            data: None,
            error: None,
        }
    }
}

/// A two-level iterator: index block → data blocks.
pub struct TableIter {
    table: Arc<Table>,
    options: TableIterOptions,
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
            let index = if self.table.is_pinned() {
                self.table.index_block().map(|(block, _)| block)
            } else {
                let handle = self.table.footer.index;
                self.table
                    .block_for_iter(handle, BlockKind::Index, &self.options)
            };
            match index {
                Ok(block) => self.index = Some(block.iter()),
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
            .block_for_iter(handle, BlockKind::Data, &self.options)
        {
            Ok(block) => {
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

    /// After positioning within a data block: move back to earlier blocks while invalid.
    fn skip_exhausted_blocks_backward(&mut self) {
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
            index.prev();
            if !self.load_data_block() {
                return;
            }
            if let Some(d) = self.data.as_mut() {
                d.seek_to_last();
            }
        }
    }

    /// Moves to the last entry.
    pub fn seek_to_last(&mut self) {
        self.error = None;
        let Some(index) = self.index_iter() else {
            return;
        };
        index.seek_to_last();
        if self.load_data_block() {
            if let Some(d) = self.data.as_mut() {
                d.seek_to_last();
            }
        }
        self.skip_exhausted_blocks_backward();
    }

    /// Moves to the last entry whose internal key is ≤ `target` (an encoded internal key).
    pub fn seek_for_prev(&mut self, target: &[u8]) {
        self.seek(target);
        if self.error.is_some() {
            return;
        }
        if !self.valid() {
            self.seek_to_last();
        } else if compare_internal(self.key(), target) == std::cmp::Ordering::Greater {
            self.prev();
        }
    }

    /// Moves to the previous entry (invalid before the first).
    pub fn prev(&mut self) {
        if let Some(d) = self.data.as_mut() {
            d.prev();
        }
        self.skip_exhausted_blocks_backward();
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
