//! Point lookups, filter first, and prefix checks.
//!
//! A lookup on a partitioned table reads: the held top-level filter index → one filter
//! partition (cache) → if "maybe", the held top-level index → one index partition (cache) → one
//! data block. On an unpartitioned table: the filter → the index → one data block.
//!
//! 1. **Filter.** Pinned with the table (L0), or from the block cache at high priority, loaded
//!    and decoded on a miss. On a partitioned table the first separator ≥ the key names the one
//!    partition to load (a key beyond the last separator is absent without a read). The decoder
//!    refuses a block built with another hash function or seed (`SstError::Filter`): it would
//!    give false negatives. A "no" ends the lookup with no index or data block touched.
//! 2. **False-positive memo** (`TableReadOptions::false_positive_memo`, one per database): after a
//!    "maybe", a remembered (table, key) ends the lookup the same way. A key is remembered when
//!    the steps below find it absent and the lookup's snapshot sees every entry of the table
//!    (snapshot ≥ its largest sequence number: "absent" then holds for the table's life); a
//!    closed table's entries go with it (`Drop for Table`).
//! 3. **Index.** Seek `(user_key, snapshot, Put)`: the first entry ≥ it names the only data block
//!    that can hold the newest visible version.
//! 4. **Data block** (cache, low priority, or the file): the entry found answers if its user key
//!    matches (`Found` / `Deleted`), else the filter's "maybe" was a false positive.
//!
//! The engine hashes a key once per lookup and hands the hash to every table; one table ahead it
//! calls `prepare_get_hashed`, which locates the next table's filter and prefetches the cache
//! lines its probe will read, so on a deep tree the probes' memory waits overlap. Every step is
//! recorded in a `GetTrace` (filter verdict; per block: not read, pinned, cache hit or file read)
//! and added to the shared `ReadStatistics`, from which the measured FPR is
//! `(positive − true positive) / (positive − true positive + useful)`.
//! `get_prepared_pinned` hands back the data block and where the value lies in it
//! (`PinnedValue`) instead of copying the value out.
//!
//! Why partitions: a 1M-key table's index is about 1.5 MB; searching it cost about 3 µs per
//! present-key lookup, and its filter had to fit the cache whole. With partitions a lookup
//! searches a ~100-entry top level and a ~4 KiB partition, and a cache smaller than all filters
//! evicts partitions rather than whole-table filters.

use std::sync::Arc;

use siftdb_cache::BlockKind;
use siftdb_filter::Filter;

use super::{FilterSource, Held, HeldFilter, Lookup, Table, TableGet};
use crate::block::Block;
use crate::error::Result;
use crate::format::BlockHandle;
use crate::internal_key::{compare_internal, InternalKey, ParsedKey, ValueKind, TRAILER_LEN};
use crate::stats::{BlockAccess, FilterOutcome, GetTrace, MemoOutcome};

/// The filter a prepared lookup probes.
enum FilterRef {
    /// Held by the table: read through the guard that keeps its [`Held`] alive, so a lookup of
    /// a pinned table neither locks nor counts a reference on a line every reader writes.
    Held(arc_swap::Guard<Option<Arc<Held>>>, HeldFilter),
    /// From the block cache.
    Cached(Arc<Filter>),
}

impl FilterRef {
    /// The filter (`None` only if the guard holds no such filter, which `filter_source`
    /// rules out; the probe then says "maybe").
    #[inline]
    fn get(&self) -> Option<&Filter> {
        match self {
            FilterRef::Held(held, which) => held.as_deref()?.filter_at(*which),
            FilterRef::Cached(filter) => Some(filter),
        }
    }
}

impl Clone for FilterRef {
    fn clone(&self) -> FilterRef {
        match self {
            FilterRef::Held(held, which) => {
                FilterRef::Held(arc_swap::Guard::from_inner(Option::clone(held)), *which)
            }
            FilterRef::Cached(filter) => FilterRef::Cached(Arc::clone(filter)),
        }
    }
}

impl std::fmt::Debug for FilterRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FilterRef::Held(_, which) => write!(f, "Held({which:?})"),
            FilterRef::Cached(_) => f.write_str("Cached"),
        }
    }
}

/// A lookup's filter work done ahead ([`Table::prepare_get`]): the filter (or filter partition)
/// that may hold the key, how it was reached, and the key's hash (`None`: no filter to ask).
#[derive(Debug, Clone)]
pub struct PreparedGet {
    filter: Option<(FilterRef, BlockAccess, u64)>,
    /// The key sorts after every key of the table (found while choosing a filter partition).
    beyond: bool,
    fill_cache: bool,
    /// The preparation does not depend on the key (the table's filter is one block, or none).
    whole_table: bool,
}

impl PreparedGet {
    /// Whether the lookup inserts the index and data blocks it reads from the file into the
    /// block cache (default `true`; filters always go through the cache).
    pub fn filling_cache(mut self, fill_cache: bool) -> PreparedGet {
        self.fill_cache = fill_cache;
        self
    }

    /// The same preparation for another key of the same table, whose hash is `hash`, when the
    /// preparation does not depend on the key (the table's filter is one block, or it has
    /// none): the filter is reused without asking the block cache again, and the cache lines
    /// `hash` probes are requested. `None` when it depends on the key (a partitioned filter).
    /// A batched lookup prepares each table once for all its keys this way.
    pub fn for_hash(&self, hash: u64) -> Option<PreparedGet> {
        if !self.whole_table {
            return None;
        }
        let mut prepared = self.clone();
        if let Some((filter, access, h)) = &mut prepared.filter {
            *h = hash;
            // Held by the batch: no cache lookup, no I/O.
            *access = BlockAccess::Pinned;
            if let Some(filter) = filter.get() {
                filter.prefetch_hash(hash);
            }
        }
        Some(prepared)
    }
}

impl Table {
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
            .prepare_get(user_key)
            .and_then(|prepared| self.get_prepared(user_key, snapshot, prepared, trace));
        if let Some(stats) = &self.options.stats {
            stats.record(trace);
        }
        result
    }

    /// Gets the filter (or filter partition) a lookup of `user_key` probes and starts loading
    /// the part of it the probe will read, without probing it yet. A lookup across levels
    /// prepares the next table this way before probing the current one, so the two memory waits
    /// overlap; the result goes to [`Table::get_prepared`].
    pub fn prepare_get(&self, user_key: &[u8]) -> Result<PreparedGet> {
        self.prepare_get_hashed(user_key, self.options.key_hasher.hash(user_key))
    }

    /// [`Table::prepare_get`] with the key already hashed: `hash` must be
    /// `key_hasher.hash(user_key)` under [`TableReadOptions::key_hasher`](super::TableReadOptions)
    /// (the only hasher a filter of this table can have been built with: a block built under
    /// another is refused). A lookup across many tables hashes its key once.
    #[inline]
    pub fn prepare_get_hashed(&self, user_key: &[u8], hash: u64) -> Result<PreparedGet> {
        let mut prepared = PreparedGet {
            filter: None,
            beyond: false,
            fill_cache: true,
            whole_table: false,
        };
        let held = self.held.load();
        let source = match held.as_deref() {
            Some(h) => h.filter_source(user_key, &self.footer),
            None => FilterSource::Cache(self.footer.filter, true),
        };
        prepared.filter = match source {
            FilterSource::Beyond => {
                prepared.beyond = true;
                return Ok(prepared);
            }
            FilterSource::Held(which, whole_table) => {
                prepared.whole_table = whole_table;
                Some((FilterRef::Held(held, which), BlockAccess::Pinned, hash))
            }
            FilterSource::Cache(handle, whole_table) => {
                prepared.whole_table = whole_table;
                self.cached_filter(handle)?
                    .map(|(f, access)| (FilterRef::Cached(f), access, hash))
            }
        };
        if let Some(filter) = prepared.filter.as_ref().and_then(|(f, _, _)| f.get()) {
            filter.prefetch_hash(hash);
        }
        Ok(prepared)
    }

    /// The handle held by the first entry ≥ `target` of an index-like block (an index, or the
    /// top level of a partitioned index or filter): the block or partition that may hold the
    /// target; `None` past the last entry.
    fn seek_handle(&self, top: &Arc<Block>, target: &[u8], at: u64) -> Result<Option<BlockHandle>> {
        let mut it = top.iter();
        it.seek(target, compare_internal);
        if let Some(e) = it.error() {
            return Err(self.corruption(at, e));
        }
        if !it.valid() {
            return Ok(None);
        }
        BlockHandle::decode(it.value())
            .map(Some)
            .ok_or_else(|| self.corruption(at, "undecodable partition handle"))
    }

    /// [`Table::get_traced`] with the filter work done by [`Table::prepare_get`] for the same
    /// `user_key`. Unlike `get_traced` it leaves recording `trace` in
    /// [`TableReadOptions::stats`](super::TableReadOptions) to the caller (the engine records it
    /// per level instead, sparing every probe of a lookup two shared atomic updates); block reads
    /// from the file are still counted there.
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
                Lookup::Found | Lookup::FoundExpiring | Lookup::Merge => TableGet::Found(value),
                Lookup::Deleted => TableGet::Deleted,
                Lookup::NotFound => TableGet::NotFound,
                Lookup::FoundBlob => TableGet::FoundBlob(value),
            },
        )
    }

    /// [`Table::get_prepared`] that copies a found value straight from the data block into
    /// `value` (cleared first; untouched unless the result is [`Lookup::Found`]), so a caller
    /// reusing one buffer allocates nothing per lookup.
    #[inline]
    pub fn get_prepared_into(
        &self,
        user_key: &[u8],
        snapshot: u64,
        prepared: PreparedGet,
        trace: &mut GetTrace,
        value: &mut Vec<u8>,
    ) -> Result<Lookup> {
        self.get_prepared_out(user_key, snapshot, prepared, trace, ValueOut::Copy(value))
    }

    /// [`Table::get_prepared_into`] that does not copy the value: `pinned` holds it inside its
    /// data block (set whenever the entry is found, whatever its kind).
    #[inline]
    pub fn get_prepared_pinned(
        &self,
        user_key: &[u8],
        snapshot: u64,
        prepared: PreparedGet,
        trace: &mut GetTrace,
        pinned: &mut Option<PinnedValue>,
    ) -> Result<Lookup> {
        self.get_prepared_out(user_key, snapshot, prepared, trace, ValueOut::Pin(pinned))
    }

    #[inline]
    fn get_prepared_out(
        &self,
        user_key: &[u8],
        snapshot: u64,
        prepared: PreparedGet,
        trace: &mut GetTrace,
        value: ValueOut<'_>,
    ) -> Result<Lookup> {
        *trace = GetTrace::default();
        if prepared.beyond {
            return Ok(Lookup::NotFound);
        }
        if self.global_seqno.is_some_and(|g| snapshot < g) {
            // Every entry of the table carries the global seqno: none is visible.
            return Ok(Lookup::NotFound);
        }
        let mut memo_key = None;
        if let Some((filter, access, hash)) = prepared.filter {
            trace.filter_block = access;
            trace.filter_expected_fpr_ppb = self.expected_fpr_ppb;
            if !filter.get().is_none_or(|f| f.may_contain_hash(hash)) {
                trace.filter = FilterOutcome::No;
                return Ok(Lookup::NotFound);
            }
            trace.filter = FilterOutcome::Maybe;
            if let Some(memo) = &self.options.false_positive_memo {
                if memo.is_known_absent(self.id, hash, user_key) {
                    trace.memo = MemoOutcome::Hit;
                    return Ok(Lookup::NotFound);
                }
                trace.memo = MemoOutcome::Miss;
                memo_key = Some((memo, hash));
            }
        }
        let found = self.lookup_blocks(user_key, snapshot, prepared.fill_cache, trace, value)?;
        if let (Lookup::NotFound, Some((memo, hash))) = (found, memo_key) {
            // Absent at `snapshot`; absent at every sequence number only if the snapshot sees
            // all of the table's entries (a newer version of the key would sort before the
            // lookup target and be skipped). Only then is it true for the table's whole life.
            if snapshot >= self.max_sequence() {
                memo.remember_absent(self.id, hash, user_key);
                trace.memo = MemoOutcome::Inserted;
            }
        }
        Ok(found)
    }

    /// The index and data block part of [`Table::get_prepared_into`]: the newest version of
    /// `user_key` visible at `snapshot`.
    fn lookup_blocks(
        &self,
        user_key: &[u8],
        snapshot: u64,
        fill_cache: bool,
        trace: &mut GetTrace,
        value: ValueOut<'_>,
    ) -> Result<Lookup> {
        // At a global seqno the caller has ruled out snapshots below it, so every stored entry
        // of the key (all of sequence 0) is visible: seek to the first.
        let seek_sequence = if self.global_seqno.is_some() {
            0
        } else {
            snapshot
        };
        let target = InternalKey::for_lookup(user_key, seek_sequence);
        let Some((handle, access)) = self.data_handle(target.encoded(), fill_cache)? else {
            return Ok(Lookup::NotFound);
        };
        trace.index_block = access;
        let (block, access) = self.block_for_get(handle, BlockKind::Data, fill_cache)?;
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
        trace.sequence = self.global_seqno.unwrap_or(parsed.sequence);
        let found = match parsed.kind {
            ValueKind::Put => Lookup::Found,
            ValueKind::ExpiringPut => Lookup::FoundExpiring,
            ValueKind::Merge => Lookup::Merge,
            ValueKind::BlobIndex => Lookup::FoundBlob,
            // Range tombstones are never point entries; one in a data block is damage.
            ValueKind::Delete | ValueKind::RangeDelete => return Ok(Lookup::Deleted),
        };
        match value {
            ValueOut::Copy(value) => {
                value.clear();
                value.extend_from_slice(it.value());
            }
            ValueOut::Pin(pinned) => *pinned = Some(PinnedValue::of(&block, it.value())),
        }
        Ok(found)
    }

    /// The data block that may hold `target` (the first entry ≥ it), through the index (and, if
    /// partitioned, one index partition), and how the index block was reached; `None` when the
    /// target sorts after the table's last key.
    fn data_handle(
        &self,
        target: &[u8],
        fill_cache: bool,
    ) -> Result<Option<(BlockHandle, BlockAccess)>> {
        if !self.is_partitioned() {
            let (index, access) = self.index_block_filling(fill_cache)?;
            let handle = self.seek_handle(&index, target, self.footer.index.offset)?;
            return Ok(handle.map(|h| (h, access)));
        }
        let (user_key, trailer) = split_internal(target);
        let Some((part_handle, held)) = self.index_partition_for(user_key, trailer) else {
            return Ok(None);
        };
        let (partition, access) = match held {
            Some(block) => (block, BlockAccess::Pinned),
            None => self.block_for_get(part_handle, BlockKind::Index, fill_cache)?,
        };
        // The partition's last key is the separator just found, so it holds an entry ≥ target.
        let handle = self
            .seek_handle(&partition, target, part_handle.offset)?
            .ok_or_else(|| {
                self.corruption(
                    part_handle.offset,
                    "index partition ends before its separator",
                )
            })?;
        Ok(Some((handle, access)))
    }

    /// Whether the table may hold a point entry whose user key is in `[start, end)` (`None`:
    /// unbounded on that side), by its range filter: `Ok(false)` means certainly none, so a
    /// range scan can skip the table. `true` without a range filter, and for a table holding
    /// range tombstones (they delete keys of other tables, so a scan must read it).
    pub fn range_may_overlap(&self, start: Option<&[u8]>, end: Option<&[u8]>) -> Result<bool> {
        let Some(handle) = self.properties.range_filter_handle else {
            return Ok(true);
        };
        if self.range_tombstones.is_some() {
            return Ok(true);
        }
        let block = self.range_filter(handle)?;
        let maybe = block.may_overlap(start, end);
        if let Some(stats) = &self.options.stats {
            use std::sync::atomic::Ordering::Relaxed;
            stats.range_checked.fetch_add(1, Relaxed);
            if !maybe {
                stats.range_useful.fetch_add(1, Relaxed);
            }
        }
        Ok(maybe)
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
    /// [`TableReadOptions::prefix_extractor`](super::TableReadOptions)) and hashed: a prefix
    /// seek over many tables does both once.
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
}

/// An encoded internal key's user key and trailer (a lookup key: always ≥ 8 bytes).
fn split_internal(key: &[u8]) -> (&[u8], u64) {
    let (user_key, trailer) = key.split_at(key.len().saturating_sub(TRAILER_LEN));
    let trailer = trailer.try_into().map_or(0, u64::from_le_bytes);
    (user_key, trailer)
}

/// Where a lookup puts the value it found.
enum ValueOut<'a> {
    /// Copied into this buffer (cleared first).
    Copy(&'a mut Vec<u8>),
    /// Held in its data block.
    Pin(&'a mut Option<PinnedValue>),
}

/// A value read from a table without copying it: a handle on the data block that holds it
/// (shared with the block cache, which may evict the block meanwhile: the handle keeps it
/// alive) and where the value is in it.
#[derive(Clone)]
pub struct PinnedValue {
    block: Arc<Block>,
    start: usize,
    len: usize,
}

impl PinnedValue {
    /// `value`, a slice of `block`'s bytes, held with the block. (Were it not inside the block,
    /// the handle would read as empty rather than point anywhere else; block iterators hand
    /// out values as slices of their block, so that does not happen.)
    fn of(block: &Arc<Block>, value: &[u8]) -> PinnedValue {
        let base = block.bytes().as_ptr() as usize;
        let start = (value.as_ptr() as usize)
            .checked_sub(base)
            .filter(|start| start + value.len() <= block.bytes().len());
        PinnedValue {
            block: Arc::clone(block),
            start: start.unwrap_or(0),
            len: if start.is_some() { value.len() } else { 0 },
        }
    }

    /// The value's bytes.
    pub fn as_slice(&self) -> &[u8] {
        self.block
            .bytes()
            .get(self.start..self.start + self.len)
            .unwrap_or_default()
    }
}

impl std::fmt::Debug for PinnedValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PinnedValue")
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}
