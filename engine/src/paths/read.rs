//! The read path of one tree: point lookups (memtables, then L0 newest first, then one table per
//! deeper level) and the constructors of its iterators. `Db`, `Keyspace` and `Snapshot` all read
//! through here.

use std::sync::Arc;

use siftdb_sstable::blob::BlobIndex;
use siftdb_sstable::{FilterOutcome, GetTrace, Lookup, PinnedValue, PreparedGet};

use crate::base::error::Result;
use crate::base::merge::OperandStack;
use crate::base::options::ReadOptions;
use crate::core::key_head::KeyHead;
use crate::core::keyspace_tree::KeyspaceTree;
use crate::core::keyspace_tree::ReadView;
use crate::core::memtable::{Memtable, MemtableIter};
use crate::core::version::TableFile;
use crate::paths::engine::Engine;
use crate::paths::iterator::{
    blob_reads, merge_for, visibility, DbIterator, KeyBounds, RawIterator, ScanSpec,
};

impl Engine {
    /// The value of `key` in `tree` as of `sequence` (a registered snapshot's), or the newest
    /// without one, copied into `value` (cleared by the caller). With `pinned`, a value found
    /// as a plain put in a table's data block is left there, without a copy; every other value
    /// (from a memtable, merged, from a blob file, expiring) is still copied into `value`, and
    /// `pinned` left `None`.
    pub(crate) fn get_point(
        &self,
        tree: &KeyspaceTree,
        key: &[u8],
        sequence: Option<u64>,
        opts: &ReadOptions,
        value: &mut Vec<u8>,
        pinned: Option<&mut Option<PinnedValue>>,
    ) -> Result<bool> {
        tree.check_live()?;
        let (view, seq) = match sequence {
            Some(seq) => (tree.read_view_guard(), seq),
            None => self.read_point_borrowed(tree),
        };
        self.get_in(tree, &view, key, seq, opts, value, pinned)
    }

    /// The read path: memtables, then L0 newest first, then one table per deeper level. A found
    /// value is copied into `value` (cleared by the caller), or with `pinned`, left in its data
    /// block when it is a plain put found in a table.
    #[allow(clippy::too_many_arguments)]
    fn get_in(
        &self,
        tree: &KeyspaceTree,
        view: &ReadView,
        key: &[u8],
        seq: u64,
        opts: &ReadOptions,
        value: &mut Vec<u8>,
        mut pinned: Option<&mut Option<PinnedValue>>,
    ) -> Result<bool> {
        use std::sync::atomic::Ordering::Relaxed;
        self.shared.check_open()?;
        self.shared.counters().gets.fetch_add(1, Relaxed);
        let got = match self.get_from_memtables(view, key, seq, value) {
            Some(got) => got,
            None => {
                let out = match pinned.as_deref_mut() {
                    Some(pinned) => TableValue::Pin(pinned),
                    None => TableValue::Copy(value),
                };
                let got = self.get_from_tables(tree, view, key, seq, opts.fill_cache, out)?;
                unpin_unless_put(got, pinned, value);
                got
            }
        };
        let found = self.resolve(tree, view, key, seq, got, opts.fill_cache, value)?;
        if found {
            self.shared.counters().gets_found.fetch_add(1, Relaxed);
        }
        Ok(found)
    }

    /// The memtables' answer for `key` (newest first), once one holds a version of it or a
    /// range tombstone over it; `None` if none does.
    fn get_from_memtables(
        &self,
        view: &ReadView,
        key: &[u8],
        seq: u64,
        value: &mut Vec<u8>,
    ) -> Option<Lookup> {
        use std::sync::atomic::Ordering::Relaxed;
        for mem in std::iter::once(&view.mem).chain(view.imm.iter()) {
            // An empty memtable (the active one, right after a switch or an open) answers
            // nothing: two loads instead of a skiplist search and its epoch pin.
            if mem.is_empty() {
                continue;
            }
            let (got, version) = if self.memtable_may_contain(mem, key) {
                mem.get_versioned(key, seq, value)
            } else {
                (Lookup::NotFound, 0)
            };
            let covered = mem.covering_tombstone(key, seq);
            if got == Lookup::NotFound && covered.is_none() {
                continue;
            }
            self.shared.counters().memtable_hits.fetch_add(1, Relaxed);
            return Some(hidden_by(covered, got, version));
        }
        None
    }

    /// Whether `mem` may hold a point entry of `key`, by its bloom (counted in
    /// `Stats::memtable_bloom_*`); `true` for a memtable without one.
    fn memtable_may_contain(&self, mem: &Memtable, key: &[u8]) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        if !mem.has_bloom() {
            return true;
        }
        self.shared
            .counters()
            .memtable_bloom_checked
            .fetch_add(1, Relaxed);
        let maybe = mem.may_contain_key(key);
        if !maybe {
            self.shared
                .counters()
                .memtable_bloom_useful
                .fetch_add(1, Relaxed);
        }
        maybe
    }

    /// Whether a lookup's answer is a live value (then in `value`): a value, an expiring value
    /// that has not expired by the clock now (its expiry removed from `value`), a value kept in
    /// a blob file (read through the block cache, filling it if `fill_cache`), or merge
    /// operands, resolved with everything below them.
    #[allow(clippy::too_many_arguments)]
    fn resolve(
        &self,
        tree: &KeyspaceTree,
        view: &ReadView,
        key: &[u8],
        seq: u64,
        got: Lookup,
        fill_cache: bool,
        value: &mut Vec<u8>,
    ) -> Result<bool> {
        match got {
            Lookup::Merge => self.get_merged(tree, view, key, seq, fill_cache, value),
            Lookup::FoundBlob => {
                let stored = std::mem::take(value);
                self.read_blob(view, key, &stored, fill_cache)
                    .map(|read| read.map(|v| *value = v).is_some())
            }
            got => self.is_live(got, value),
        }
    }

    /// The value the blob index `stored` of `key` points to, `None` if it has expired.
    fn read_blob(
        &self,
        view: &ReadView,
        key: &[u8],
        stored: &[u8],
        fill_cache: bool,
    ) -> Result<Option<Vec<u8>>> {
        let index = crate::core::blob_file::decode_index(key, stored)?;
        self.read_indexed_blob(view, key, &index, fill_cache)
    }

    /// The value `index` (of `key`) points to, `None` if it has expired (the clock is read only
    /// for an expiring value). The value is moved out of its read when the cache did not keep
    /// it, copied otherwise.
    fn read_indexed_blob(
        &self,
        view: &ReadView,
        key: &[u8],
        index: &BlobIndex,
        fill_cache: bool,
    ) -> Result<Option<Vec<u8>>> {
        if let Some(expiry) = index.expiry {
            let now = crate::base::ttl::millis(self.shared.options().clock.now());
            if now >= expiry {
                return Ok(None);
            }
        }
        let files = view.version.blob_files();
        let value =
            crate::core::blob_file::fetch(files, self.shared.cache(), fill_cache, key, index)?;
        Ok(Some(
            Arc::try_unwrap(value).unwrap_or_else(|v| v.as_ref().clone()),
        ))
    }

    /// Whether a lookup's answer is a live value (then in `value`): a value, or an expiring
    /// value that has not expired by the clock now (its expiry removed from `value`).
    fn is_live(&self, got: Lookup, value: &mut Vec<u8>) -> Result<bool> {
        match got {
            Lookup::Found => Ok(true),
            Lookup::FoundExpiring => {
                let now = crate::base::ttl::millis(self.shared.options().clock.now());
                crate::base::ttl::resolve_in_place(value, now)
            }
            Lookup::Deleted | Lookup::NotFound | Lookup::Merge | Lookup::FoundBlob => Ok(false),
        }
    }

    /// The value of `key` whose newest visible version is a merge operand: the point path
    /// again (memtables, then the tables that may hold the key, filter first), now gathering in
    /// each memtable or table that holds versions of the key all of them, newest first, down to
    /// the operands' base — a value, or nothing at a tombstone, a newer range tombstone, an
    /// expired value or the end — and merging them (`merge_state.rs`).
    fn get_merged(
        &self,
        tree: &KeyspaceTree,
        view: &ReadView,
        key: &[u8],
        seq: u64,
        fill_cache: bool,
        value: &mut Vec<u8>,
    ) -> Result<bool> {
        let now = crate::base::ttl::millis(self.shared.options().clock.now());
        let mut state = OperandStack::new(now);
        let blob = |stored: &[u8]| self.read_blob(view, key, stored, fill_cache);
        for mem in std::iter::once(&view.mem).chain(view.imm.iter()) {
            let covered = mem.covering_tombstone(key, seq);
            let mut cursor = MemtableIter::new(Arc::clone(mem));
            if state.take_versions(&mut cursor, key, seq, covered, &blob)? {
                return state.merge(tree.options().merge_operator.as_ref(), key, value);
            }
        }
        let version = &view.version;
        let head = KeyHead::of(key);
        let hash = self.shared.options().filter_hasher.hash(key);
        let mut trace = GetTrace::default();
        let mut scratch = Vec::new();
        for file in version.tables_for_key(key, head) {
            let covered = file
                .table
                .range_tombstones()
                .and_then(|t| t.max_covering(key, seq));
            // Filter first: only a table that holds a version of the key is read for all of them.
            let got = if file.meta.entries > 0 {
                let prepared = file.table.prepare_get_hashed(key, hash)?;
                file.table
                    .get_prepared_into(key, seq, prepared, &mut trace, &mut scratch)?
            } else {
                Lookup::NotFound
            };
            if got == Lookup::NotFound && covered.is_none() {
                continue;
            }
            let mut cursor = file
                .table
                .iter_with(siftdb_sstable::TableIterOptions::default());
            if state.take_versions(&mut cursor, key, seq, covered, &blob)? {
                break;
            }
        }
        state.merge(tree.options().merge_operator.as_ref(), key, value)
    }

    /// The tables that may hold the key, in the order that finds its newest version (L0 newest
    /// first, then one table per level); the first that holds any version decides.
    fn get_from_tables(
        &self,
        tree: &KeyspaceTree,
        view: &ReadView,
        key: &[u8],
        seq: u64,
        fill_cache: bool,
        mut value: TableValue<'_>,
    ) -> Result<Lookup> {
        let version = &*view.version;
        let head = KeyHead::of(key);
        if tree.counts_heat {
            tree.lookups.tick_by(1);
        }
        // One hash for every table: all filters of a database share its hasher (a table built
        // with another is refused at open).
        let hash = self.shared.options().filter_hasher.hash(key);
        let verdict = IndexVerdict::of(tree, view, hash);
        if verdict == IndexVerdict::Absent {
            return Ok(Lookup::NotFound);
        }
        let skip_gen = verdict.skip_gen();
        let mut candidates = version
            .level(0)
            .iter()
            .filter(move |f| f.contains_key_with_head(key, head))
            .map(|f| (0usize, f))
            .chain((1..version.num_levels()).filter_map(move |level| {
                version.find_with_head(level, key, head).map(|f| (level, f))
            }))
            .filter(move |(_, f)| !f.ruled_out_by(skip_gen));
        // One table ahead: the next table's filter is fetched and its memory requested before
        // this table's filter is probed, so on a tree whose filters do not fit the CPU's caches
        // the two waits overlap. A failure to prepare a table only counts once it is reached.
        fn prepare<'v>(
            key: &[u8],
            hash: u64,
            fill_cache: bool,
            (level, file): (usize, &'v Arc<TableFile>),
        ) -> (
            usize,
            &'v TableFile,
            Option<siftdb_sstable::Result<PreparedGet>>,
        ) {
            // A table of range tombstones alone (no entries) has no point lookup to prepare.
            let prepared = (file.meta.entries > 0).then(|| {
                let prepared = file.table.prepare_get_hashed(key, hash);
                prepared.map(|p| p.filling_cache(fill_cache))
            });
            (level, file, prepared)
        }
        let mut trace = GetTrace::default();
        let mut next = candidates.next().map(|c| prepare(key, hash, fill_cache, c));
        while let Some((level, file, prepared)) = next.take() {
            next = candidates.next().map(|c| prepare(key, hash, fill_cache, c));
            let got = match prepared {
                Some(prepared) => {
                    let table = &file.table;
                    let got = match &mut value {
                        TableValue::Copy(value) => {
                            table.get_prepared_into(key, seq, prepared?, &mut trace, value)?
                        }
                        TableValue::Pin(pinned) => {
                            table.get_prepared_pinned(key, seq, prepared?, &mut trace, pinned)?
                        }
                    };
                    tree.levels[level].record(&trace);
                    if tree.counts_heat && trace.filter != FilterOutcome::NotChecked {
                        file.heat
                            .probed(trace.filter == FilterOutcome::Maybe && !trace.key_found);
                    }
                    got
                }
                None => Lookup::NotFound,
            };
            // A table without range tombstones costs one `None` check here.
            let covered = file
                .table
                .range_tombstones()
                .and_then(|t| t.max_covering(key, seq));
            if got != Lookup::NotFound || covered.is_some() {
                return Ok(hidden_by(covered, got, trace.sequence));
            }
        }
        verdict.count_miss_of(tree, view.index_covers_all);
        Ok(Lookup::NotFound)
    }
}

/// Where a table lookup puts the value it finds.
enum TableValue<'a> {
    /// Copied into this buffer.
    Copy(&'a mut Vec<u8>),
    /// Left in its data block.
    Pin(&'a mut Option<PinnedValue>),
}

/// Only a plain put stays pinned: any other answer (a merge operand, a blob index, an expiring
/// value, or a version a newer range tombstone hides) is copied into `value` for the resolution
/// that follows, which reads and rewrites it there.
fn unpin_unless_put(got: Lookup, pinned: Option<&mut Option<PinnedValue>>, value: &mut Vec<u8>) {
    let Some(pinned) = pinned else {
        return;
    };
    if got == Lookup::Found {
        return;
    }
    if let Some(held) = pinned.take() {
        value.clear();
        value.extend_from_slice(held.as_slice());
    }
}

/// What the tree's filter index (`core::filter_index`) says of a key before any table is
/// probed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IndexVerdict {
    /// No index in the view.
    NoIndex,
    /// The key may be in a table the index covers: every table is probed.
    Maybe,
    /// The index covers every table and rules the key out.
    Absent,
    /// The index rules the key out of the tables of generation `gen`; the others are probed.
    AbsentFrom { r#gen: u64 },
}

impl IndexVerdict {
    /// The verdict on the key of (per-table filter) hash `hash` in `view`, counted in the
    /// tree's index tickers.
    #[inline]
    fn of(tree: &KeyspaceTree, view: &ReadView, hash: u64) -> IndexVerdict {
        use std::sync::atomic::Ordering::Relaxed;
        let tickers = &tree.filter_index.tickers;
        let Some(index) = view.index.as_deref() else {
            tree.filter_index.count_unindexed(1);
            return IndexVerdict::NoIndex;
        };
        tickers.checked.fetch_add(1, Relaxed);
        if index.may_contain(hash) {
            return IndexVerdict::Maybe;
        }
        tickers.negative.fetch_add(1, Relaxed);
        if view.index_covers_all {
            IndexVerdict::Absent
        } else {
            IndexVerdict::AbsentFrom { r#gen: index.r#gen }
        }
    }

    /// The index generation whose tables need no probe.
    fn skip_gen(self) -> Option<u64> {
        match self {
            IndexVerdict::AbsentFrom { r#gen } => Some(r#gen),
            IndexVerdict::NoIndex | IndexVerdict::Maybe | IndexVerdict::Absent => None,
        }
    }

    /// Counts a lookup no table answered: a false positive of an index that said "maybe"
    /// while covering every table (`covers_all`), or a miss without an index.
    fn count_miss_of(self, tree: &KeyspaceTree, covers_all: bool) {
        use std::sync::atomic::Ordering::Relaxed;
        let tickers = &tree.filter_index.tickers;
        match self {
            IndexVerdict::Maybe if covers_all => tickers.false_positive.fetch_add(1, Relaxed),
            IndexVerdict::NoIndex if tree.filter_index.enabled() => {
                tickers.unindexed_misses.fetch_add(1, Relaxed);
            }
            _ => {}
        }
    }
}

/// The answer of one memtable or table that holds a version of the key (`got`, at sequence
/// `version`) or a range tombstone over it (the newest visible at `covered`): the version,
/// unless the range tombstone is newer. Everything in later memtables and tables is older than
/// both, so this answer decides.
fn hidden_by(covered: Option<u64>, got: Lookup, version: u64) -> Lookup {
    match covered {
        Some(tombstone) if got == Lookup::NotFound || tombstone > version => Lookup::Deleted,
        _ => got,
    }
}

/// How many keys ahead a `multi_get` requests the filter index's line: enough to cover a
/// memory wait (~100 ns) with checks of ~5 ns, few enough for the CPU's outstanding misses.
const PREFETCH_AHEAD: usize = 16;

/// One key of a `multi_get` on its way through the tables.
struct Probe<'k> {
    /// Its position in the caller's keys.
    index: usize,
    key: &'k [u8],
    head: KeyHead,
    hash: u64,
    /// The filter index generation whose tables cannot hold the key.
    skip_gen: Option<u64>,
}

/// The answers of a `multi_get` so far, in the caller's order (`None`: still looking).
type Answers = Vec<Option<Result<Option<Vec<u8>>>>>;

/// Keys of a `multi_get` whose value is in a blob file: (position in the caller's keys, the
/// stored blob index). Read together once every key is found, in blob file order.
type PendingBlobs = Vec<(usize, Vec<u8>)>;

impl Engine {
    /// Looks up every key of `keys` in `tree` at one point in time (one view, one sequence
    /// number); the answers come back in the order of `keys`.
    ///
    /// Each key is hashed once. Keys the memtables do not answer are sorted and go through the
    /// tables level by level, L0 newest first: for each table (or level) the filters of all its
    /// keys are located and their cache lines requested first, then probed, so the memory waits
    /// of the keys overlap instead of queuing (a single `get` overlaps only two tables). In key
    /// order, keys that share a data block read it one after another (the block cache then
    /// serves the others), keys that share a table share its filter (one block cache lookup for
    /// all of them, unless the filter is partitioned), and each key's table in a sorted level is
    /// found by galloping from the previous key's.
    pub(crate) fn multi_get(
        &self,
        tree: &KeyspaceTree,
        keys: &[&[u8]],
    ) -> Vec<Result<Option<Vec<u8>>>> {
        use std::sync::atomic::Ordering::Relaxed;
        if let Err(e) = tree.check_live().and_then(|()| self.shared.check_open()) {
            return keys.iter().map(|_| Err(e.duplicate())).collect();
        }
        let (view, seq) = self.read_point(tree);
        self.shared
            .counters()
            .gets
            .fetch_add(keys.len() as u64, Relaxed);
        let mut answers: Answers = keys.iter().map(|_| None).collect();
        let mut blobs = PendingBlobs::new();
        let verdicts = self.index_verdicts(tree, &view, keys);
        let mut probes = Vec::with_capacity(keys.len());
        let mut value = Vec::new();
        for (index, (key, &(hash, verdict))) in keys.iter().zip(&verdicts).enumerate() {
            value.clear();
            match self.get_from_memtables(&view, key, seq, &mut value) {
                Some(got) => {
                    let answer = self.answer(tree, &view, key, seq, got, &mut value);
                    answers[index] = Some(answer.map(|a| a.take_or_defer(index, &mut blobs)));
                }
                None if verdict == IndexVerdict::Absent => answers[index] = Some(Ok(None)),
                None => {
                    if verdict == IndexVerdict::NoIndex {
                        tree.filter_index.count_unindexed(1);
                    }
                    probes.push(Probe {
                        index,
                        key,
                        head: KeyHead::of(key),
                        hash,
                        skip_gen: verdict.skip_gen(),
                    });
                }
            }
        }
        probes.sort_unstable_by(|a, b| a.key.cmp(b.key));
        if tree.counts_heat {
            tree.lookups.tick_by(probes.len() as u64);
        }
        let version = &view.version;
        for file in version.level(0) {
            let batch: Vec<(&Arc<TableFile>, &Probe)> = probes
                .iter()
                .filter(|p| {
                    answers[p.index].is_none()
                        && !file.ruled_out_by(p.skip_gen)
                        && file.contains_key_with_head(p.key, p.head)
                })
                .map(|p| (file, p))
                .collect();
            self.probe_tables(tree, &view, 0, &batch, seq, (&mut answers, &mut blobs));
        }
        for level in 1..version.num_levels() {
            // The probes are sorted: each key's table is at or after the previous key's.
            let mut from = 0;
            let batch: Vec<(&Arc<TableFile>, &Probe)> = probes
                .iter()
                .filter(|p| answers[p.index].is_none())
                .filter_map(|p| {
                    let file = version.find_sorted_with_head(level, p.key, p.head, &mut from);
                    file.filter(|f| !f.ruled_out_by(p.skip_gen)).map(|f| (f, p))
                })
                .collect();
            self.probe_tables(tree, &view, level, &batch, seq, (&mut answers, &mut blobs));
        }
        for p in &probes {
            if answers[p.index].is_none() {
                verdicts[p.index]
                    .1
                    .count_miss_of(tree, view.index_covers_all);
            }
        }
        self.read_blobs(&view, keys, blobs, &mut answers);
        answers.into_iter().map(|a| a.unwrap_or(Ok(None))).collect()
    }

    /// Reads the values of `multi_get`'s keys kept in blob files, sorted by blob file and
    /// offset (so values of one file are read in file order, and one value's repeats once
    /// from the cache), into `answers`.
    fn read_blobs(
        &self,
        view: &ReadView,
        keys: &[&[u8]],
        blobs: PendingBlobs,
        answers: &mut Answers,
    ) {
        use std::sync::atomic::Ordering::Relaxed;
        let mut indexes = Vec::with_capacity(blobs.len());
        for (at, stored) in blobs {
            match crate::core::blob_file::decode_index(keys[at], &stored) {
                Ok(index) => indexes.push((at, index)),
                Err(e) => answers[at] = Some(Err(e)),
            }
        }
        indexes.sort_by_key(|(_, index)| (index.reference.file_number, index.reference.offset));
        for (at, index) in indexes {
            let read = self.read_indexed_blob(view, keys[at], &index, true);
            if matches!(read, Ok(Some(_))) {
                self.shared.counters().gets_found.fetch_add(1, Relaxed);
            }
            answers[at] = Some(read);
        }
    }

    /// Each key's per-table filter hash and the filter index's verdict on it. The index lines
    /// of keys [`PREFETCH_AHEAD`] places ahead are requested while a key is checked, so the
    /// memory waits of a batch overlap.
    fn index_verdicts(
        &self,
        tree: &KeyspaceTree,
        view: &ReadView,
        keys: &[&[u8]],
    ) -> Vec<(u64, IndexVerdict)> {
        let hasher = self.shared.options().filter_hasher;
        let hashes: Vec<u64> = keys.iter().map(|k| hasher.hash(k)).collect();
        let Some(index) = view.index.as_deref() else {
            return hashes
                .into_iter()
                .map(|h| (h, IndexVerdict::NoIndex))
                .collect();
        };
        hashes
            .iter()
            .take(PREFETCH_AHEAD)
            .for_each(|&h| index.prefetch(h));
        (0..hashes.len())
            .map(|i| {
                if let Some(&ahead) = hashes.get(i + PREFETCH_AHEAD) {
                    index.prefetch(ahead);
                }
                (hashes[i], IndexVerdict::of(tree, view, hashes[i]))
            })
            .collect()
    }

    /// Probes each (table, key) of `batch` — tables of one level — and records the answers
    /// found. Every filter is located and prefetched before the first is probed.
    fn probe_tables(
        &self,
        tree: &KeyspaceTree,
        view: &ReadView,
        level: usize,
        batch: &[(&Arc<TableFile>, &Probe)],
        seq: u64,
        (answers, blobs): (&mut Answers, &mut PendingBlobs),
    ) {
        // Keys of one table are next to each other (sorted): a table whose filter is one block
        // is prepared once and its filter reused for the others (`PreparedGet::for_hash`).
        let mut last: Option<(&Arc<TableFile>, PreparedGet)> = None;
        let prepared: Vec<Option<siftdb_sstable::Result<PreparedGet>>> = batch
            .iter()
            .map(|&(file, p)| {
                // A table of range tombstones alone has no point lookup to prepare.
                if file.meta.entries == 0 {
                    return None;
                }
                let reused = last
                    .as_ref()
                    .filter(|(f, _)| Arc::ptr_eq(f, file))
                    .and_then(|(_, prepared)| prepared.for_hash(p.hash));
                if let Some(prepared) = reused {
                    return Some(Ok(prepared));
                }
                let prepared = file.table.prepare_get_hashed(p.key, p.hash);
                if let Ok(prepared) = &prepared {
                    last = Some((file, prepared.clone()));
                }
                Some(prepared)
            })
            .collect();
        let mut trace = GetTrace::default();
        let mut value = Vec::new();
        for ((file, probe), prepared) in batch.iter().zip(prepared) {
            value.clear();
            let got = match prepared {
                Some(prepared) => {
                    let got = prepared.and_then(|prepared| {
                        file.table
                            .get_prepared_into(probe.key, seq, prepared, &mut trace, &mut value)
                    });
                    tree.levels[level].record(&trace);
                    if tree.counts_heat && trace.filter != FilterOutcome::NotChecked {
                        file.heat
                            .probed(trace.filter == FilterOutcome::Maybe && !trace.key_found);
                    }
                    got
                }
                None => Ok(Lookup::NotFound),
            };
            let covered = file
                .table
                .range_tombstones()
                .and_then(|t| t.max_covering(probe.key, seq));
            answers[probe.index] = match got {
                Ok(Lookup::NotFound) if covered.is_none() => continue,
                Ok(got) => {
                    let got = hidden_by(covered, got, trace.sequence);
                    let answer = self.answer(tree, view, probe.key, seq, got, &mut value);
                    Some(answer.map(|a| a.take_or_defer(probe.index, blobs)))
                }
                Err(e) => Some(Err(e.into())),
            };
        }
    }

    /// A `multi_get` key's answer from the lookup result `got` (the value in `value`); a value
    /// kept in a blob file is left for [`Engine::read_blobs`].
    fn answer(
        &self,
        tree: &KeyspaceTree,
        view: &ReadView,
        key: &[u8],
        seq: u64,
        got: Lookup,
        value: &mut Vec<u8>,
    ) -> Result<Answer> {
        use std::sync::atomic::Ordering::Relaxed;
        if got == Lookup::FoundBlob {
            return Ok(Answer::InBlob(std::mem::take(value)));
        }
        let found = self.resolve(tree, view, key, seq, got, true, value)?;
        if found {
            self.shared.counters().gets_found.fetch_add(1, Relaxed);
        }
        Ok(Answer::Now(found.then(|| std::mem::take(value))))
    }
}

/// A `multi_get` key's answer: known now, or to be read from a blob file (its stored index).
enum Answer {
    Now(Option<Vec<u8>>),
    InBlob(Vec<u8>),
}

impl Answer {
    /// The answer now; a blob value goes to `blobs` (key `at`), and a placeholder stands in
    /// until it is read, so that no deeper level is probed for the key.
    fn take_or_defer(self, at: usize, blobs: &mut PendingBlobs) -> Option<Vec<u8>> {
        match self {
            Answer::Now(value) => value,
            Answer::InBlob(stored) => {
                blobs.push((at, stored));
                None
            }
        }
    }
}

/// The view and sequence a scan of `tree` reads: the latest, or the tree's view at a snapshot's
/// `sequence`.
fn scan_point(db: &Engine, tree: &KeyspaceTree, sequence: Option<u64>) -> (Arc<ReadView>, u64) {
    match sequence {
        Some(seq) => (tree.read_view(), seq),
        None => db.read_point(tree),
    }
}

/// An iterator over `range` of `tree` (at `sequence`, or the latest).
pub(crate) fn iterator<K: AsRef<[u8]>, R: std::ops::RangeBounds<K>>(
    db: &Engine,
    tree: &Arc<KeyspaceTree>,
    sequence: Option<u64>,
    range: &R,
    prefix: Option<Vec<u8>>,
    opts: &ReadOptions,
) -> DbIterator {
    if let Err(e) = tree.check_live() {
        return DbIterator::failed(db.shared(), tree, e);
    }
    let (view, seq) = scan_point(db, tree, sequence);
    let bounds = match &prefix {
        Some(p) => KeyBounds::prefix(p),
        None => KeyBounds::of(range),
    }
    .narrowed(
        opts.iterate_lower_bound.as_deref(),
        opts.iterate_upper_bound.as_deref(),
    );
    DbIterator::new(db.shared(), tree, view, seq, bounds, prefix, opts.clone())
}

/// A raw cursor over `tree` (at `sequence`, or the latest), within `opts`' bounds.
pub(crate) fn raw_iterator(
    db: &Engine,
    tree: &Arc<KeyspaceTree>,
    sequence: Option<u64>,
    opts: &ReadOptions,
) -> RawIterator {
    let (view, seq) = scan_point(db, tree, sequence);
    if let Err(e) = tree.check_live() {
        return RawIterator::failed(Arc::clone(db.shared()), seq, e);
    }
    let bounds = KeyBounds::all().narrowed(
        opts.iterate_lower_bound.as_deref(),
        opts.iterate_upper_bound.as_deref(),
    );
    let spec = ScanSpec {
        bounds: &bounds,
        prefix: None,
        read: opts,
    };
    let now = crate::base::ttl::millis(db.shared().options().clock.now());
    match merge_for(tree, &view, &spec) {
        Ok(merge) => RawIterator::new(
            Some(Arc::clone(db.shared())),
            merge,
            visibility(tree, &view, seq, now, blob_reads(db.shared(), &view, opts)),
            bounds,
        ),
        Err(e) => RawIterator::failed(Arc::clone(db.shared()), seq, e),
    }
}
