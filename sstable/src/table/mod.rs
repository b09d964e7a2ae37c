//! Reads a table. One job per file:
//!
//! * here — opening a table (footer, properties, range tombstones, the blocks every lookup
//!   needs) and pinning;
//! * `blocks.rs` — reading, checking, decompressing and caching blocks;
//! * `get.rs` — point lookups (filter first) and prefix checks;
//! * `iter.rs` — the cursor over a table's entries, both ways.
//!
//! A table of format 2 may have a *partitioned* index and filter: the footer's index and filter
//! handles then name small top-level blocks (held by the table for its life) whose entries point
//! to index partitions and filter partitions, read through the block cache.

mod blocks;
mod get;
mod global_seqno;
mod iter;
mod partitions;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwapOption;
use siftdb_cache::{BlockCache, BlockKey, BlockKind, FalsePositiveMemo, PinnedBlock, Priority};
use siftdb_filter::{Filter, KeyHasher};

pub use get::{PinnedValue, PreparedGet};
pub use iter::TableIter;

use crate::block::Block;
use crate::error::{Result, SstError};
use crate::file::RandomAccessFile;
use crate::format::{BlockHandle, Footer, FooterError, FOOTER_LEN, RANGE_TOMBSTONES_SINCE_VERSION};
use crate::prefix::PrefixExtractor;
use crate::properties::TableProperties;
use crate::range_tombstones::FragmentedRangeTombstones;
use crate::stats::ReadStatistics;
use partitions::PartitionIndex;

/// What the block cache holds for tables.
#[derive(Debug)]
pub enum CachedBlock {
    /// A data or index block.
    Block(Arc<Block>),
    /// A decoded filter.
    Filter(Arc<Filter>),
    /// A decoded range filter block.
    RangeFilter(Arc<crate::RangeFilterBlock>),
    /// A value read from a blob file (keyed by the blob file's number and the value's offset).
    Blob(Arc<Vec<u8>>),
    /// No block: a pinned entry that charges memory held outside the cache (the engine's filter
    /// index) to the cache's budget, as RocksDB's cache reservations do.
    Reservation,
}

/// The table id of [`CachedBlock::Reservation`] entries: no table file is ever numbered so.
pub const RESERVATION_TABLE_ID: u64 = u64::MAX;

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
    /// The database's memo of hot false positives (`None`: off). A lookup whose filter says
    /// "maybe" asks it before reading the index, and tells it when the table turned out not to
    /// hold the key; the table's entries are dropped when it is closed.
    pub false_positive_memo: Option<Arc<FalsePositiveMemo>>,
    /// The cap on the whole-key filter's bits per key from the start (`None`: as built): the
    /// table opens as [`Table::set_filter_bits_cap`] would leave it, and the filter that
    /// opening reads into the cache is the thinned one (set after opening, the filter would be
    /// read twice: as built, then thinned).
    pub filter_bits_cap: Option<f64>,
    /// The sequence number every entry of the table is read at (RocksDB's global seqno of an
    /// ingested file, recorded by the engine, not in the file); `None`: as written. The table
    /// must then hold only sequence 0 ([`Table::open`] refuses it otherwise); its keys, point
    /// lookups and range tombstones all carry this number instead.
    pub global_seqno: Option<u64>,
}

/// Result of a point lookup in one table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableGet {
    /// The newest visible version is this value (of an expiring value, its stored bytes: the
    /// expiry time, then the value).
    Found(Vec<u8>),
    /// The newest visible version is a tombstone.
    Deleted,
    /// The table has no visible version of the key.
    NotFound,
    /// The newest visible version is a value kept in a blob file: this is its blob index
    /// ([`BlobIndex`](crate::blob::BlobIndex)), which the engine resolves.
    FoundBlob(Vec<u8>),
}

/// Result of a point lookup that writes the value into the caller's buffer
/// ([`Table::get_prepared_into`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// The newest visible version is a value, now in the caller's buffer.
    Found,
    /// The newest visible version is an expiring value
    /// ([`ValueKind::ExpiringPut`](crate::ValueKind::ExpiringPut)): the caller's buffer holds its
    /// expiry time (8 bytes) followed by the value.
    FoundExpiring,
    /// The newest visible version is a merge operand ([`ValueKind::Merge`](crate::ValueKind)),
    /// now in the caller's buffer: the answer needs the older versions too.
    Merge,
    /// The newest visible version is a tombstone.
    Deleted,
    /// The table has no visible version of the key.
    NotFound,
    /// The newest visible version is a value kept in a blob file
    /// ([`ValueKind::BlobIndex`](crate::ValueKind)): the caller's buffer holds its blob index.
    FoundBlob,
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
    /// The iterator reads each block once, front to back, and nothing will read them again
    /// soon (a compaction's inputs): blocks not in the cache are read with
    /// [`RandomAccessFile::read_at_once`](crate::RandomAccessFile::read_at_once), which keeps
    /// them out of a memory-mapped table's resident pages. Only with `fill_cache: false`.
    pub read_once: bool,
    /// Bytes read from the file at once, ahead of the data block asked for. Without
    /// `fill_cache` (RocksDB's `compaction_readahead_size`): a compaction reading its inputs
    /// front to back makes one read per this many bytes instead of one per block. With it
    /// (RocksDB's `ReadOptions::readahead_size`): a scan's blocks read ahead enter the cache as
    /// the scan reaches them. 0: see `auto_readahead`.
    pub readahead_bytes: usize,
    /// With `fill_cache` and no `readahead_bytes`: once the cursor has read two data blocks in
    /// a row, each right after the one before, it reads ahead — 8 KiB, doubling with each read
    /// up to 256 KiB — until it jumps (RocksDB's automatic readahead of iterators).
    pub auto_readahead: bool,
}

impl Default for TableIterOptions {
    fn default() -> Self {
        TableIterOptions {
            fill_cache: true,
            stats: None,
            read_once: false,
            readahead_bytes: 0,
            auto_readahead: false,
        }
    }
}

/// Blocks the table holds directly (pinned in the cache, so the cache counts their memory).
///
/// A partitioned table always holds its top-level index and filter. A *pinned* table (L0) also
/// holds what lookups need beyond that — the whole index and filter of an unpartitioned table,
/// or every partition of a partitioned one — and its prefix filter, so its lookups never ask
/// the cache (RocksDB pins an L0 table's partitions the same way).
///
/// Immutable once published: pinning or unpinning publishes a new `Held` (its parts shared by
/// `Arc`), so a lookup reads it through one [`ArcSwapOption::load`] — no lock, no reference
/// count on a cache line every reading thread writes.
#[derive(Clone)]
pub(crate) struct Held {
    /// The index, or the top-level index of a partitioned one.
    index: Arc<Block>,
    /// The whole-key filter of an unpartitioned table.
    filter: Option<Arc<Filter>>,
    /// The top levels of a partitioned table decoded for lookups: index, filter.
    index_parts: Option<Arc<PartitionIndex>>,
    filter_parts: Option<Arc<PartitionIndex>>,
    _pins: Arc<Vec<PinnedBlock<CachedBlock>>>,
    /// Present while the table is pinned.
    pinned: Option<Arc<PinnedParts>>,
}

/// Which filter of a [`Held`] a lookup probes.
#[derive(Debug, Clone, Copy)]
enum HeldFilter {
    /// The whole-key filter of an unpartitioned table.
    Whole,
    /// The whole filter of a pinned table whose index alone is partitioned.
    PinnedWhole,
    /// A pinned filter partition, by position.
    Partition(usize),
}

/// Where a lookup of one key finds the filter to probe.
enum FilterSource {
    /// The key sorts after every key of the table (found while choosing a filter partition).
    Beyond,
    /// Held by the table; `bool`: the choice does not depend on the key.
    Held(HeldFilter, bool),
    /// Through the block cache, at this handle (absent: no filter); `bool` as for `Held`.
    Cache(BlockHandle, bool),
}

impl Held {
    /// The filter `which` names, if this `Held` has it.
    #[inline]
    fn filter_at(&self, which: HeldFilter) -> Option<&Filter> {
        match which {
            HeldFilter::Whole => self.filter.as_deref(),
            HeldFilter::PinnedWhole => self.pinned.as_ref()?.whole_filter.as_deref(),
            HeldFilter::Partition(i) => {
                self.pinned.as_ref()?.filter_partitions.get(i).map(|f| &**f)
            }
        }
    }

    /// Where a lookup of `user_key` finds its filter, given the table's `footer`.
    #[inline]
    fn filter_source(&self, user_key: &[u8], footer: &Footer) -> FilterSource {
        if let Some(parts) = &self.filter_parts {
            // The partition holding the key's first version: if the key is in the table at
            // all, that partition's filter holds it (a key whose versions straddle two
            // partitions is in both).
            return match parts.find(user_key, u64::MAX) {
                None => FilterSource::Beyond,
                Some((i, handle)) => match &self.pinned {
                    Some(p) if i < p.filter_partitions.len() => {
                        FilterSource::Held(HeldFilter::Partition(i), false)
                    }
                    _ => FilterSource::Cache(handle, false),
                },
            };
        }
        if self.filter.is_some() {
            FilterSource::Held(HeldFilter::Whole, true)
        } else if self
            .pinned
            .as_ref()
            .is_some_and(|p| p.whole_filter.is_some())
        {
            FilterSource::Held(HeldFilter::PinnedWhole, true)
        } else {
            FilterSource::Cache(footer.filter, true)
        }
    }
}

/// What a pinned table holds beyond its top levels.
struct PinnedParts {
    prefix_filter: Option<Arc<Filter>>,
    /// The whole filter of a table whose index alone is partitioned.
    whole_filter: Option<Arc<Filter>>,
    /// Filter partitions in key order (the filter top level's order).
    filter_partitions: Vec<Arc<Filter>>,
    /// Index partitions in key order (the index top level's order).
    index_partitions: Vec<Arc<Block>>,
    /// Index partitions by offset, for iterators, which hold handles.
    index_by_offset: Vec<(u64, Arc<Block>)>,
    _pins: Vec<PinnedBlock<CachedBlock>>,
}

/// The entry for `offset` in a list sorted by offset.
fn by_offset<T: Clone>(list: &[(u64, T)], offset: u64) -> Option<T> {
    list.binary_search_by_key(&offset, |(o, _)| *o)
        .ok()
        .map(|i| list[i].1.clone())
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
    /// The whole-key filter's expected FPR (from the properties) in parts per billion, for
    /// [`GetTrace::filter_expected_fpr_ppb`](crate::GetTrace).
    expected_fpr_ppb: u32,
    /// The range tombstone block, decoded at open; `None` when the table has none.
    range_tombstones: Option<Arc<FragmentedRangeTombstones>>,
    held: ArcSwapOption<Held>,
    /// The most bits per key a ribbon whole-key filter (or each partition) is read with, as
    /// `f64` bits ([`NO_FILTER_CAP`]: as built); see [`Table::set_filter_bits_cap`].
    filter_bits_cap: AtomicU64,
    /// The global seqno the entries are patched to; `None` also at a global seqno of 0, where
    /// the entries read as written.
    global_seqno: Option<u64>,
}

/// [`Table::filter_bits_cap`] of a table whose filters are read as built.
const NO_FILTER_CAP: u64 = u64::MAX;

impl Drop for Table {
    /// A closed table's memo entries go with it: its id is never looked up again.
    fn drop(&mut self) {
        if let Some(memo) = &self.options.false_positive_memo {
            memo.forget_table(self.id);
        }
    }
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("entries", &self.properties.entries)
            .field("range_deletions", &self.properties.range_deletions)
            .finish()
    }
}

impl Table {
    /// Opens a table: reads and verifies the footer and properties, reads and decodes the range
    /// tombstone block if there is one, and loads the index and filter blocks through the cache
    /// (pinned if the options say so, and always the top levels of a partitioned table). Any
    /// damage is a typed error naming the file and offset. With
    /// [`TableReadOptions::global_seqno`], a table holding a sequence number other than 0 is
    /// refused as corruption.
    pub fn open(
        file: Box<dyn RandomAccessFile>,
        table_id: u64,
        name: impl Into<String>,
        cache: Arc<TableCache>,
        options: TableReadOptions,
    ) -> Result<Table> {
        let name = name.into();
        let footer = read_footer(file.as_ref(), &name)?;
        let mut table = Table {
            id: table_id,
            name,
            file,
            cache,
            options,
            footer,
            properties: TableProperties::default(),
            prefix_filter_usable: false,
            expected_fpr_ppb: 0,
            range_tombstones: None,
            held: ArcSwapOption::empty(),
            filter_bits_cap: AtomicU64::new(NO_FILTER_CAP),
            global_seqno: None,
        };
        table.set_filter_bits_cap(table.options.filter_bits_cap);
        let props_raw = table.read_block_contents(footer.properties, BlockKind::Properties)?;
        table.properties = TableProperties::decode(props_raw)
            .map_err(|reason| table.corruption(footer.properties.offset, reason))?;
        // (A corrupt FPR outside [0, 1] is clamped: it only feeds a statistic.)
        table.expected_fpr_ppb =
            (table.properties.filter_expected_fpr.clamp(0.0, 1.0) * 1e9).round() as u32;
        if let Some(handle) = table.properties.range_del_handle {
            table.range_tombstones = Some(Arc::new(table.read_range_tombstones(handle)?));
        }
        table.apply_global_seqno()?;
        table.prefix_filter_usable = !footer.prefix_filter.is_absent()
            && table
                .options
                .prefix_extractor
                .as_ref()
                .is_some_and(|p| p.name() == table.properties.prefix_extractor);
        if table.options.pin_filter_and_index {
            table.pin_filter_and_index()?;
        } else if table.is_partitioned() {
            table.held.store(Some(Arc::new(table.hold_top_levels()?)));
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

    /// The table's properties, as written in the file: a table read at a global seqno keeps
    /// sequence 0 here (see [`Table::max_sequence`] and [`Table::global_seqno`]).
    pub fn properties(&self) -> &TableProperties {
        &self.properties
    }

    /// The table's range tombstones, `None` when it has none (every table of format 1 or 2);
    /// at the table's global seqno if it has one.
    /// Held for the table's life: a lookup reaching the table checks them with
    /// [`FragmentedRangeTombstones::max_covering`], no I/O.
    pub fn range_tombstones(&self) -> Option<&Arc<FragmentedRangeTombstones>> {
        self.range_tombstones.as_ref()
    }

    /// Reads and decodes the range tombstone block at `handle` (named by the properties). A
    /// table of a format before range tombstones, a block that does not decode, an empty one
    /// or one holding another count than `range_deletions` says is corruption.
    fn read_range_tombstones(&self, handle: BlockHandle) -> Result<FragmentedRangeTombstones> {
        if self.footer.version < RANGE_TOMBSTONES_SINCE_VERSION {
            return Err(self.corruption(
                self.footer.properties.offset,
                format!(
                    "a table of format {} names a range tombstone block",
                    self.footer.version
                ),
            ));
        }
        let contents = self.read_block_contents(handle, BlockKind::Properties)?;
        let tombstones = FragmentedRangeTombstones::decode(&contents)
            .ok_or_else(|| self.corruption(handle.offset, "undecodable range tombstone block"))?;
        let count = tombstones.tombstone_count() as u64;
        if count == 0 || count != self.properties.range_deletions {
            return Err(self.corruption(
                handle.offset,
                format!(
                    "range tombstone block holds {count} tombstones, the properties say {}",
                    self.properties.range_deletions
                ),
            ));
        }
        Ok(tombstones)
    }

    /// File size in bytes.
    pub fn file_size(&self) -> u64 {
        self.file.size()
    }

    /// Caps the bits per key the whole-key filter is read with (`None`: as built). A ribbon
    /// filter, or each of its partitions, is thinned to the cap as it is read from the file
    /// ([`Filter::thinned_to`]: every key still answers "maybe", at the FPR of the smaller
    /// layout), and is cached at that size; other kinds are read as built. A table moved to a
    /// level planned for fewer filter bits is capped there instead of rewritten. Filter blocks
    /// already cached keep their size until they are read again: the caller erases the table's
    /// cached blocks after a change. The prefix filter is never thinned.
    pub fn set_filter_bits_cap(&self, cap: Option<f64>) {
        let bits = cap
            .filter(|c| c.is_finite() && *c >= 0.0)
            .map_or(NO_FILTER_CAP, f64::to_bits);
        self.filter_bits_cap.store(bits, Ordering::Relaxed);
    }

    /// The cap [`Table::set_filter_bits_cap`] set, if any.
    pub fn filter_bits_cap(&self) -> Option<f64> {
        match self.filter_bits_cap.load(Ordering::Relaxed) {
            NO_FILTER_CAP => None,
            bits => Some(f64::from_bits(bits)),
        }
    }

    /// Bits per key of the whole-key filter as it is read: the built figure
    /// ([`TableProperties::filter_bits_per_key`]), or the cap where a ribbon filter is thinned
    /// to it.
    pub fn filter_bits_per_key(&self) -> f64 {
        let built = self.properties.filter_bits_per_key;
        match self.filter_bits_cap() {
            Some(cap) if self.properties.filter_kind == "ribbon" => built.min(cap),
            _ => built,
        }
    }

    /// Bytes of the whole-key filter as it is read: the built figure
    /// ([`TableProperties::filter_bytes`]), scaled to the cap where a ribbon filter is thinned.
    pub fn filter_bytes(&self) -> u64 {
        let (built_bytes, built) = (
            self.properties.filter_bytes,
            self.properties.filter_bits_per_key,
        );
        let read = self.filter_bits_per_key();
        if read >= built || built <= 0.0 {
            return built_bytes;
        }
        (built_bytes as f64 * read / built).round() as u64
    }

    /// The whole-key filter's expected FPR as it is read: the built figure
    /// ([`TableProperties::filter_expected_fpr`]), or a ribbon filter's at the cap.
    pub fn filter_expected_fpr(&self) -> f64 {
        let read = self.filter_bits_per_key();
        if read >= self.properties.filter_bits_per_key {
            return self.properties.filter_expected_fpr;
        }
        let keys = usize::try_from(self.properties.distinct_keys).unwrap_or(usize::MAX);
        siftdb_filter::ribbon_expected_fpr(keys, read)
    }

    /// Whether the table has a whole-key filter.
    pub fn has_filter(&self) -> bool {
        !self.footer.filter.is_absent()
    }

    /// Whether the index (and the filter, if any) is partitioned.
    pub fn is_partitioned(&self) -> bool {
        self.properties.index_partitions > 0
    }

    fn filter_partitioned(&self) -> bool {
        self.properties.filter_partitions > 0
    }

    /// Pins the filter and index blocks in the cache and keeps them in the table, so lookups
    /// skip the cache for them: the whole filter and index, or every partition and both top
    /// levels of a partitioned table, and the prefix filter. Idempotent.
    pub fn pin_filter_and_index(&self) -> Result<()> {
        if self.is_pinned() {
            return Ok(());
        }
        // Readers keep using the top levels while the rest is pinned: `held` is only ever
        // replaced whole or completed, never emptied on the way.
        let top = match self.held.load_full() {
            Some(top) => top,
            None => Arc::new(self.hold_top_levels()?),
        };
        let parts =
            Arc::new(self.pin_parts(top.index_parts.as_deref(), top.filter_parts.as_deref())?);
        // Published with the top levels it was built from, unless another pin got there first.
        self.held.rcu(|current| match current {
            Some(h) if h.pinned.is_some() => Some(Arc::clone(h)),
            _ => Some(Arc::new(Held {
                pinned: Some(Arc::clone(&parts)),
                ..Held::clone(&top)
            })),
        });
        Ok(())
    }

    /// The blocks every lookup starts from: the index and the filter, or the top levels of a
    /// partitioned table.
    fn hold_top_levels(&self) -> Result<Held> {
        let mut pins = Vec::new();
        let index = self.pin_block(self.footer.index, BlockKind::Index, &mut pins)?;
        let (filter, filter_top) = if self.footer.filter.is_absent() {
            (None, None)
        } else if self.filter_partitioned() {
            let top = self.pin_block(self.footer.filter, BlockKind::Filter, &mut pins)?;
            (None, Some(top))
        } else if self.is_partitioned() {
            // A whole filter beside a partitioned index: held only while pinned (`PinnedParts`),
            // through the cache otherwise.
            (None, None)
        } else {
            (Some(self.pin_filter(self.footer.filter, &mut pins)?), None)
        };
        let decode = |block: &Arc<Block>, at: u64| {
            PartitionIndex::decode(block)
                .map(Arc::new)
                .map_err(|reason| self.corruption(at, reason))
        };
        let index_parts = if self.is_partitioned() {
            Some(decode(&index, self.footer.index.offset)?)
        } else {
            None
        };
        let filter_parts = match &filter_top {
            Some(top) => Some(decode(top, self.footer.filter.offset)?),
            None => None,
        };
        Ok(Held {
            index,
            filter,
            index_parts,
            filter_parts,
            _pins: Arc::new(pins),
            pinned: None,
        })
    }

    /// Pins the prefix filter and, of a partitioned table, every partition its decoded top
    /// levels name.
    fn pin_parts(
        &self,
        index_parts: Option<&PartitionIndex>,
        filter_parts: Option<&PartitionIndex>,
    ) -> Result<PinnedParts> {
        let mut pins = Vec::new();
        let prefix_filter = if self.prefix_filter_usable {
            Some(self.pin_filter(self.footer.prefix_filter, &mut pins)?)
        } else {
            None
        };
        let whole_filter = if self.is_partitioned()
            && !self.filter_partitioned()
            && !self.footer.filter.is_absent()
        {
            Some(self.pin_filter(self.footer.filter, &mut pins)?)
        } else {
            None
        };
        let mut parts = PinnedParts {
            prefix_filter,
            whole_filter,
            filter_partitions: Vec::new(),
            index_partitions: Vec::new(),
            index_by_offset: Vec::new(),
            _pins: Vec::new(),
        };
        for &handle in index_parts.map_or(&[][..], PartitionIndex::handles) {
            let block = self.pin_block(handle, BlockKind::Index, &mut pins)?;
            parts
                .index_by_offset
                .push((handle.offset, Arc::clone(&block)));
            parts.index_partitions.push(block);
        }
        for &handle in filter_parts.map_or(&[][..], PartitionIndex::handles) {
            parts
                .filter_partitions
                .push(self.pin_filter(handle, &mut pins)?);
        }
        parts.index_by_offset.sort_unstable_by_key(|(o, _)| *o);
        parts._pins = pins;
        Ok(parts)
    }

    /// Releases the pins: the blocks return to the cache's LRU (a table leaving L0). A
    /// partitioned table keeps its top levels.
    pub fn unpin(&self) {
        let partitioned = self.is_partitioned();
        self.held.rcu(|current| match current {
            Some(h) if partitioned => Some(Arc::new(Held {
                pinned: None,
                ..Held::clone(h)
            })),
            _ => None,
        });
    }

    /// Whether the table is pinned: its filter and index (or all their partitions) and its
    /// prefix filter are held.
    pub fn is_pinned(&self) -> bool {
        self.held
            .load()
            .as_ref()
            .is_some_and(|h| h.pinned.is_some())
    }

    /// The filter at `handle` if the table holds it: the whole filter, or — pinned — the
    /// prefix filter or a filter partition.
    fn held_filter(&self, handle: BlockHandle) -> Option<Arc<Filter>> {
        let held = self.held.load();
        let held = held.as_deref()?;
        if handle == self.footer.filter && held.filter.is_some() {
            return held.filter.clone();
        }
        let pinned = held.pinned.as_ref()?;
        if handle == self.footer.filter {
            pinned.whole_filter.clone()
        } else if handle == self.footer.prefix_filter {
            pinned.prefix_filter.clone()
        } else {
            None
        }
    }

    /// Of a partitioned index: the index partition that may hold the internal key
    /// (`user_key`, `trailer`) — its handle, and the partition when the table holds it — or
    /// `None` past the last separator.
    fn index_partition_for(
        &self,
        user_key: &[u8],
        trailer: u64,
    ) -> Option<(BlockHandle, Option<Arc<Block>>)> {
        let held = self.held.load();
        let held = held.as_deref()?;
        let (i, handle) = held.index_parts.as_ref()?.find(user_key, trailer)?;
        let pinned = held.pinned.as_ref();
        Some((
            handle,
            pinned.and_then(|p| p.index_partitions.get(i).cloned()),
        ))
    }

    /// The index partition at `handle` if the table holds it (pinned tables only).
    fn held_partition(&self, handle: BlockHandle, kind: BlockKind) -> Option<Arc<Block>> {
        if kind != BlockKind::Index {
            return None;
        }
        let held = self.held.load();
        by_offset(
            &held.as_ref()?.pinned.as_ref()?.index_by_offset,
            handle.offset,
        )
    }

    fn pin_block(
        &self,
        handle: BlockHandle,
        kind: BlockKind,
        pins: &mut Vec<PinnedBlock<CachedBlock>>,
    ) -> Result<Arc<Block>> {
        let pin = self.cache.get_or_insert_pinned_with(
            self.block_key(handle),
            kind,
            Priority::High,
            || self.load_block(handle, kind),
        )?;
        let block = match pin.value().as_ref() {
            CachedBlock::Block(b) => Arc::clone(b),
            CachedBlock::Filter(_)
            | CachedBlock::RangeFilter(_)
            | CachedBlock::Reservation
            | CachedBlock::Blob(_) => {
                return Err(self.corruption(handle.offset, "cache holds a filter at a block offset"))
            }
        };
        pins.push(pin);
        Ok(block)
    }

    fn pin_filter(
        &self,
        handle: BlockHandle,
        pins: &mut Vec<PinnedBlock<CachedBlock>>,
    ) -> Result<Arc<Filter>> {
        let pin = self.cache.get_or_insert_pinned_with(
            self.block_key(handle),
            BlockKind::Filter,
            Priority::High,
            || self.load_filter(handle),
        )?;
        let filter = match pin.value().as_ref() {
            CachedBlock::Filter(f) => Arc::clone(f),
            CachedBlock::Block(_)
            | CachedBlock::RangeFilter(_)
            | CachedBlock::Reservation
            | CachedBlock::Blob(_) => {
                return Err(
                    self.corruption(handle.offset, "cache holds a block at the filter offset")
                )
            }
        };
        pins.push(pin);
        Ok(filter)
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
}

/// Reads and checks the footer: the magic, its checksum, a version this build reads, and
/// handles inside the file.
fn read_footer(file: &dyn RandomAccessFile, name: &str) -> Result<Footer> {
    let size = file.size();
    if size < FOOTER_LEN as u64 {
        return Err(SstError::Corruption {
            file: name.to_string(),
            offset: 0,
            reason: format!("file of {size} bytes is shorter than a footer"),
        });
    }
    let footer_at = size - FOOTER_LEN as u64;
    let footer_bytes = file
        .read_at(footer_at, FOOTER_LEN)
        .map_err(|source| SstError::Io {
            file: name.to_string(),
            source,
        })?;
    let footer = Footer::decode(&footer_bytes).map_err(|e| match e {
        FooterError::Version(version) => SstError::UnsupportedVersion {
            file: name.to_string(),
            version,
        },
        other => SstError::Corruption {
            file: name.to_string(),
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
                file: name.to_string(),
                offset: footer_at,
                reason: format!("{what} block handle {h:?} out of range"),
            });
        }
    }
    Ok(footer)
}
