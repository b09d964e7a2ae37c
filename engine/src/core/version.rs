//! Versions: the set of live tables per level, replaced (never mutated) by each edit.
//!
//! A version is what a reader holds while it reads (inside the tree's published `ReadView`), so a
//! compaction may replace tables under an iterator that still reads them; a table's file goes only
//! once no live `TableFile` refers to it (`core/live_tables.rs`).
//!
//! The order a lookup meets the candidates in (`tables_for_key`) finds the newest version first:
//! L0 newest first — by largest sequence number, not file number, since an intra-L0 compaction's
//! output is numbered after a flush that began before it — then at most one table per level ≥ 1,
//! found by binary search over the level's key ranges (`find_with_head`). The searches compare
//! key heads first (`core/key_head.rs`), kept per level in one contiguous array, so they rarely
//! touch a table's own metadata or call `memcmp`. A table whose largest key is a range
//! tombstone's end sentinel ends just before that user key, which the next table of the level may
//! start with.

use std::sync::{Arc, OnceLock};

use siftdb_sstable::{FragmentedRangeTombstones, Table};

use crate::base::error::{Error, Result};
use crate::base::options::MAX_LEVELS;
use crate::base::version_edit::{BlobMeta, FileMeta, VersionEdit};
use crate::core::blob_file::{BlobFile, BlobFiles};
use crate::core::key_head::KeyHead;

/// A live table: what the manifest says about it, and the open reader.
#[derive(Debug)]
pub struct TableFile {
    /// Manifest metadata.
    pub meta: FileMeta,
    /// The open table.
    pub table: Arc<Table>,
    /// The heads of the smallest and largest user keys ([`KeyHead`]): most range checks of a
    /// lookup are decided by them without a `memcmp`.
    heads: (KeyHead, KeyHead),
    /// The largest key is a range tombstone's end sentinel: the table's range ends just before
    /// its user key (which may be the next table's smallest).
    largest_exclusive: bool,
    /// Its filter probes (counted under adaptive filter allocation).
    pub(crate) heat: crate::core::heat::TableHeat,
    /// The generation of the tree's filter index that holds every key of this table (0: none
    /// does; see `core::filter_index`).
    index_gen: std::sync::atomic::AtomicU64,
    /// Keeps the file from being deleted while this table is referenced (`None`: not
    /// registered, a table outside a database's live set).
    live: Option<crate::core::live_tables::LiveTable>,
}

impl TableFile {
    /// A live table over `table`, described by `meta`.
    pub fn new(meta: FileMeta, table: Arc<Table>) -> TableFile {
        let heads = (
            KeyHead::of(meta.smallest.user_key()),
            KeyHead::of(meta.largest.user_key()),
        );
        let largest_exclusive = meta.largest.is_range_end_sentinel();
        TableFile {
            meta,
            table,
            heads,
            largest_exclusive,
            heat: crate::core::heat::TableHeat::default(),
            index_gen: std::sync::atomic::AtomicU64::new(0),
            live: None,
        }
    }

    /// This table, its file kept while it lives (see `core::live_tables`).
    pub(crate) fn kept_alive_by(mut self, live: crate::core::live_tables::LiveTable) -> TableFile {
        self.live = Some(live);
        self
    }

    /// The filter index generation that covers this table (0: none).
    #[inline]
    pub(crate) fn index_gen(&self) -> u64 {
        self.index_gen.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Whether a lookup the filter index ruled out of the tables of generation `skip_gen` may
    /// pass this table by: it is covered, and holds no range tombstone (which the index does
    /// not know of, and which may hide an older version in a table it does not cover).
    #[inline]
    pub(crate) fn ruled_out_by(&self, skip_gen: Option<u64>) -> bool {
        skip_gen == Some(self.index_gen()) && self.table.range_tombstones().is_none()
    }

    /// Marks the table covered by filter index generation `gen`: every key of it is in that
    /// filter already (released to the readers that see the mark).
    pub(crate) fn mark_covered(&self, r#gen: u64) {
        self.index_gen
            .fetch_max(r#gen, std::sync::atomic::Ordering::Release);
    }

    /// The largest sequence number of the table's entries: an ingested table's global seqno,
    /// else what its properties record.
    pub fn max_sequence(&self) -> u64 {
        self.meta
            .global_seqno
            .unwrap_or(self.table.properties().max_sequence)
    }

    /// Smallest user key.
    pub fn smallest_user_key(&self) -> &[u8] {
        self.meta.smallest.user_key()
    }

    /// Largest user key.
    pub fn largest_user_key(&self) -> &[u8] {
        self.meta.largest.user_key()
    }

    /// Whether `user_key` (whose head is `head`) lies within the table's key range.
    pub(crate) fn contains_key_with_head(&self, user_key: &[u8], head: KeyHead) -> bool {
        use std::cmp::Ordering::Greater;
        self.heads
            .0
            .cmp_then(head, || self.smallest_user_key().cmp(user_key))
            != Greater
            && head.cmp_then(self.heads.1, || user_key.cmp(self.largest_user_key())) != Greater
    }
}

/// An immutable snapshot of the live tables. L0 is ordered newest first (its tables overlap);
/// deeper levels are ordered by key and do not overlap.
#[derive(Debug, Clone, Default)]
pub struct Version {
    levels: Vec<Vec<Arc<TableFile>>>,
    /// Per level, each table's (smallest, largest) key heads, in `levels` order: a lookup's
    /// binary search over a level reads this contiguous array and touches a table's own
    /// (separately allocated, likely uncached) metadata only on a head tie.
    heads: Vec<Vec<(KeyHead, KeyHead)>>,
    /// The range tombstones of the tables that have any.
    tombstone_lists: Vec<Arc<FragmentedRangeTombstones>>,
    /// All of them fragmented together, built by the first iterator that needs them.
    tombstones: OnceLock<Option<Arc<FragmentedRangeTombstones>>>,
    /// The blob files the tables' blob indexes point into: exactly those some table references
    /// (a blob file leaves with the last table that references it).
    blob_files: Arc<BlobFiles>,
}

impl Version {
    /// An empty version.
    pub fn empty() -> Version {
        Version::from_levels(vec![Vec::new(); MAX_LEVELS], Arc::default())
    }

    fn from_levels(levels: Vec<Vec<Arc<TableFile>>>, blob_files: Arc<BlobFiles>) -> Version {
        let heads = levels
            .iter()
            .map(|files| files.iter().map(|f| f.heads).collect())
            .collect();
        let tombstone_lists = levels
            .iter()
            .flatten()
            .filter_map(|f| f.table.range_tombstones().cloned())
            .collect();
        Version {
            levels,
            heads,
            tombstone_lists,
            tombstones: OnceLock::new(),
            blob_files,
        }
    }

    /// The range tombstones of every table, fragmented together (`None` if no table has any):
    /// what an iterator checks each key against.
    pub(crate) fn range_tombstones(&self) -> Option<Arc<FragmentedRangeTombstones>> {
        self.tombstones
            .get_or_init(|| match self.tombstone_lists.as_slice() {
                [] => None,
                [one] => Some(Arc::clone(one)),
                lists => Some(Arc::new(FragmentedRangeTombstones::new(
                    lists.iter().flat_map(|l| l.tombstones()),
                ))),
            })
            .clone()
    }

    /// The live blob files, by number.
    pub(crate) fn blob_files(&self) -> &Arc<BlobFiles> {
        &self.blob_files
    }

    /// Stored bytes the tables reference, per live blob file.
    pub(crate) fn blob_live_bytes(&self) -> std::collections::BTreeMap<u64, u64> {
        let mut live = std::collections::BTreeMap::new();
        for (_, f) in self.all() {
            for r in &f.meta.blob_refs {
                *live.entry(r.file).or_insert(0) += r.bytes;
            }
        }
        live
    }

    /// Live blob files, their stored bytes, and the bytes of those no table references.
    pub(crate) fn blob_totals(&self) -> (u64, u64, u64) {
        let live = self.blob_live_bytes();
        self.blob_files
            .values()
            .fold((0, 0, 0), |(files, bytes, garbage), b| {
                let referenced = live.get(&b.meta.number).copied().unwrap_or(0);
                (
                    files + 1,
                    bytes + b.meta.stored_bytes,
                    garbage + b.meta.stored_bytes.saturating_sub(referenced),
                )
            })
    }

    /// Tables of `level`.
    pub fn level(&self, level: usize) -> &[Arc<TableFile>] {
        self.levels.get(level).map_or(&[], Vec::as_slice)
    }

    /// All tables with their levels.
    pub fn all(&self) -> impl Iterator<Item = (usize, &Arc<TableFile>)> {
        self.levels
            .iter()
            .enumerate()
            .flat_map(|(l, files)| files.iter().map(move |f| (l, f)))
    }

    /// Number of levels.
    pub fn num_levels(&self) -> usize {
        self.levels.len()
    }

    /// The one table of a sorted level (≥ 1) whose range may hold `user_key`.
    pub(crate) fn find_with_head(
        &self,
        level: usize,
        user_key: &[u8],
        head: KeyHead,
    ) -> Option<&Arc<TableFile>> {
        let n = self.level(level).len();
        let at = self.first_not_below(level, user_key, head, 0, n);
        self.holding(level, at, user_key, head)
    }

    /// The tables that may hold `user_key`, in the order that meets its newest version first:
    /// L0 newest first (those whose range holds it), then the one table per deeper level.
    pub(crate) fn tables_for_key<'v>(
        &'v self,
        user_key: &'v [u8],
        head: KeyHead,
    ) -> impl Iterator<Item = &'v Arc<TableFile>> + 'v {
        self.level(0)
            .iter()
            .filter(move |f| f.contains_key_with_head(user_key, head))
            .chain(
                (1..self.num_levels()).filter_map(move |l| self.find_with_head(l, user_key, head)),
            )
    }

    /// [`Version::find_with_head`] for keys looked up in ascending order: the search starts at
    /// `*from`, the previous key's position (updated), and gallops forward, so a batch of sorted
    /// keys costs O(log gap) per key instead of O(log tables).
    pub(crate) fn find_sorted_with_head(
        &self,
        level: usize,
        user_key: &[u8],
        head: KeyHead,
        from: &mut usize,
    ) -> Option<&Arc<TableFile>> {
        let n = self.level(level).len();
        let (mut lo, mut bound, mut step) = ((*from).min(n), (*from).min(n), 1);
        while bound < n && self.below(level, bound, user_key, head) {
            lo = bound + 1;
            bound = (bound + step).min(n);
            step *= 2;
        }
        let at = self.first_not_below(level, user_key, head, lo, bound.max(lo));
        *from = at;
        self.holding(level, at, user_key, head)
    }

    /// Whether table `i` of `level` ends before `user_key` (whose head is `head`).
    fn below(&self, level: usize, i: usize, user_key: &[u8], head: KeyHead) -> bool {
        use std::cmp::Ordering::{Equal, Greater, Less};
        let (Some(file), Some(heads)) = (self.level(level).get(i), self.heads.get(level)) else {
            return false;
        };
        let Some(&(_, largest)) = heads.get(i) else {
            return false;
        };
        match largest.cmp_then(head, || file.largest_user_key().cmp(user_key)) {
            Less => true,
            // A table ending just before the key (a range tombstone's end) does not hold it.
            Equal => file.largest_exclusive,
            Greater => false,
        }
    }

    /// The first table of `level` in `lo..hi` that does not end before `user_key` (`hi` if
    /// none): a binary search deciding by key heads where they differ (`heads[i]` belongs to
    /// `files[i]`, built together in `from_levels`).
    fn first_not_below(
        &self,
        level: usize,
        user_key: &[u8],
        head: KeyHead,
        mut lo: usize,
        mut hi: usize,
    ) -> usize {
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.below(level, mid, user_key, head) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Table `at` of `level` if its range holds `user_key` (it does not end before it).
    fn holding(
        &self,
        level: usize,
        at: usize,
        user_key: &[u8],
        head: KeyHead,
    ) -> Option<&Arc<TableFile>> {
        let (smallest, _) = *self.heads.get(level)?.get(at)?;
        let file = self.level(level).get(at)?;
        let starts_after = smallest.cmp_then(head, || file.smallest_user_key().cmp(user_key))
            == std::cmp::Ordering::Greater;
        (!starts_after).then_some(file)
    }

    /// Whether any table of any level holds a key in `[smallest, largest]` (user keys).
    pub(crate) fn overlaps(&self, smallest: &[u8], largest: &[u8]) -> bool {
        self.all()
            .any(|(_, f)| f.smallest_user_key() <= largest && f.largest_user_key() >= smallest)
    }

    /// Distinct keys per level (the Monkey allocation's input).
    pub fn level_keys(&self) -> Vec<u64> {
        self.levels
            .iter()
            .map(|files| files.iter().map(|f| f.meta.distinct_keys).sum())
            .collect()
    }

    /// The version after `edit`, opening added tables with `open` and added blob files with
    /// `open_blob`.
    pub(crate) fn apply(
        &self,
        edit: &VersionEdit,
        mut open: impl FnMut(usize, &FileMeta) -> Result<Arc<TableFile>>,
        open_blob: impl FnMut(&BlobMeta) -> Result<Arc<BlobFile>>,
    ) -> Result<Version> {
        let mut levels = self.levels.clone();
        for &(level, number) in &edit.deleted {
            let files = levels
                .get_mut(level)
                .ok_or_else(|| Error::corruption(format!("edit names level {level}")))?;
            let before = files.len();
            files.retain(|f| f.meta.number != number);
            if files.len() == before {
                return Err(Error::corruption(format!(
                    "edit deletes table {number} not in level {level}"
                )));
            }
        }
        for (level, meta) in &edit.added {
            let files = levels
                .get_mut(*level)
                .ok_or_else(|| Error::corruption(format!("edit names level {level}")))?;
            files.push(open(*level, meta)?);
        }
        for (level, files) in levels.iter_mut().enumerate() {
            if level == 0 {
                // Newest data first. By sequence, not file number: an intra-L0 compaction's
                // output takes a number newer than tables flushed while it ran, yet holds
                // older data than they do.
                files.sort_by_key(|f| std::cmp::Reverse((f.max_sequence(), f.meta.number)));
            } else {
                files.sort_by(|a, b| a.meta.smallest.cmp(&b.meta.smallest));
            }
        }
        let blob_files = self.blob_files_after(edit, &levels, open_blob)?;
        Ok(Version::from_levels(levels, Arc::new(blob_files)))
    }

    /// The blob files of the version with `levels`: this one's and `edit`'s additions, less
    /// those no table references any more. A table referencing a blob file the version does
    /// not hold is corruption.
    fn blob_files_after(
        &self,
        edit: &VersionEdit,
        levels: &[Vec<Arc<TableFile>>],
        mut open_blob: impl FnMut(&BlobMeta) -> Result<Arc<BlobFile>>,
    ) -> Result<BlobFiles> {
        let referenced: std::collections::BTreeSet<u64> = levels
            .iter()
            .flatten()
            .flat_map(|f| f.meta.blob_refs.iter().map(|r| r.file))
            .collect();
        let mut blobs = (*self.blob_files).clone();
        for meta in &edit.blob_files {
            // A blob file added and left unreferenced in one edit (its tables dropped by the
            // same edit) is never opened.
            if referenced.contains(&meta.number) {
                blobs.insert(meta.number, open_blob(meta)?);
            }
        }
        blobs.retain(|number, _| referenced.contains(number));
        if let Some(missing) = referenced.iter().find(|n| !blobs.contains_key(n)) {
            return Err(Error::corruption(format!(
                "a table references blob file {missing}, which the manifest does not hold"
            )));
        }
        Ok(blobs)
    }
}
