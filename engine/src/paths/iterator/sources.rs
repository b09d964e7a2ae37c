//! What a scan merges: one child per memtable, one per L0 table, one level iterator per sorted
//! level — each limited to the tables whose key range meets the scan's bounds and, for a prefix
//! scan, whose prefix filter does not rule the prefix out. Table children also pass over a
//! table at each seek whose range filter rules out what the seek would read (`range_skip.rs`).
//!
//! The tables of a sorted level a scan meets are a contiguous run, read by one level iterator
//! that opens one table at a time, so a seek reads one index and one data block per level, plus
//! the L0 tables (`tests/tests/it/iterator_cost.rs`); a prefix scan's prefix is hashed once for
//! all the prefix filters. A prefix filter that cannot be read makes the cursor report that
//! error after every seek (`RawIterator::failed`); a range filter that cannot be read stops its
//! child with the error. The merge switches direction with `seek_for_prev` (not LevelDB's
//! `seek` + `prev`), so each child is told which way the walk goes. Compaction reads its inputs
//! through the same merge, a sorted level's inputs as one level iterator.

use std::sync::Arc;

use siftdb_sstable::{InternalIterator, MergingIterator};
use siftdb_sstable::{SstError, TableIterOptions};

use super::raw::Visibility;
use crate::base::error::Result;
use crate::base::options::ReadOptions;
use crate::core::blob_file::BlobReads;
use crate::core::key_bounds::KeyBounds;
use crate::core::keyspace_tree::KeyspaceTree;
use crate::core::keyspace_tree::ReadView;
use crate::core::level_iter::LevelIterator;
use crate::core::memtable::MemtableIter;
use crate::core::range_skip::{RangeProbe, RangeSkippingTable};
use crate::core::shared::Shared;
use crate::core::version::TableFile;

impl InternalIterator for MemtableIter {
    fn valid(&self) -> bool {
        MemtableIter::valid(self)
    }
    fn key(&self) -> &[u8] {
        MemtableIter::key(self)
    }
    fn value(&self) -> &[u8] {
        MemtableIter::value(self)
    }
    fn seek_to_first(&mut self) {
        MemtableIter::seek_to_first(self)
    }
    fn seek_to_last(&mut self) {
        MemtableIter::seek_to_last(self)
    }
    fn seek(&mut self, target: &[u8]) {
        MemtableIter::seek(self, target)
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        MemtableIter::seek_for_prev(self, target)
    }
    fn next(&mut self) {
        MemtableIter::next(self)
    }
    fn prev(&mut self) {
        MemtableIter::prev(self)
    }
    fn take_error(&mut self) -> Option<SstError> {
        None
    }
}

/// What one scan reads: its bounds, its prefix (whose filter may skip tables) and how.
pub(crate) struct ScanSpec<'a> {
    pub bounds: &'a KeyBounds,
    pub prefix: Option<&'a [u8]>,
    pub read: &'a ReadOptions,
}

/// How tables are read for `read` (user scans count their reads as users' reads).
fn table_options(read: &ReadOptions) -> TableIterOptions {
    TableIterOptions {
        fill_cache: read.fill_cache,
        stats: None,
        read_once: false,
        readahead_bytes: read.readahead_size,
        auto_readahead: true,
    }
}

/// The tables of a sorted level that hold keys within `bounds`: a contiguous run.
fn overlapping(files: &[Arc<TableFile>], bounds: &KeyBounds) -> std::ops::Range<usize> {
    // Tables entirely below the lower bound come first, tables entirely above the upper last.
    let start = files.partition_point(|f| !bounds.above_lower(f.largest_user_key()));
    let end = start + files[start..].partition_point(|f| bounds.below_upper(f.smallest_user_key()));
    start..end
}

/// What a read of `view` at `sequence` sees (expiring values judged at `now`): the range
/// tombstones of its memtables and of its version's tables (fragmented together once per
/// version), and the merge operator.
pub(crate) fn visibility(
    tree: &KeyspaceTree,
    view: &ReadView,
    sequence: u64,
    now: u64,
    blobs: BlobReads,
) -> Visibility {
    let tombstones = std::iter::once(&view.mem)
        .chain(view.imm.iter())
        .filter_map(|m| m.range_tombstones())
        .chain(view.version.range_tombstones())
        .collect();
    Visibility {
        sequence,
        now,
        tombstones,
        merge_operator: tree.options().merge_operator.clone(),
        blobs: Some(blobs),
    }
}

/// How a cursor over `view` reads blob values: through `db`'s block cache, filling it as
/// `read` says.
pub(crate) fn blob_reads(db: &Shared, view: &ReadView, read: &ReadOptions) -> BlobReads {
    BlobReads {
        files: Arc::clone(view.version.blob_files()),
        cache: Arc::clone(db.cache()),
        fill_cache: read.fill_cache,
    }
}

/// The merge of everything in `view` that `spec` may need. Fails if a table's prefix filter
/// cannot be read.
pub(crate) fn merge_for(
    tree: &KeyspaceTree,
    view: &ReadView,
    spec: &ScanSpec<'_>,
) -> Result<MergingIterator> {
    let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
    let prefix_hash = spec.prefix.and_then(|p| tree.prefix_hash(p));
    for mem in std::iter::once(&view.mem).chain(view.imm.iter()) {
        // A memtable whose bloom rules the prefix out holds none of its keys (its range
        // tombstones reach the scan through `visibility`, not through this child).
        if prefix_hash.is_some_and(|hash| !mem.may_contain_prefix_hash(hash)) {
            continue;
        }
        children.push(Box::new(MemtableIter::new(Arc::clone(mem))));
    }
    let wanted = |f: &Arc<TableFile>| -> Result<bool> {
        if !spec
            .bounds
            .overlaps(f.smallest_user_key(), f.largest_user_key())
        {
            return Ok(false);
        }
        Ok(match prefix_hash {
            Some(hash) => f.table.prefix_may_match_hashed(hash)?,
            None => true,
        })
    };
    let options = table_options(spec.read);
    let probe = Arc::new(RangeProbe::of(spec.bounds));
    let version = &view.version;
    for file in version.level(0) {
        if wanted(file)? {
            let iter = file.table.iter_with(options.clone());
            children.push(Box::new(RangeSkippingTable::new(
                Arc::clone(file),
                iter,
                Arc::clone(&probe),
            )));
        }
    }
    for level in 1..version.num_levels() {
        let files = version.level(level);
        let range = overlapping(files, spec.bounds);
        let mut excluded = Vec::new();
        // Prefix scans ask every table in range (a prefix's tables are few: the filter is
        // what makes a prefix seek cheap).
        if prefix_hash.is_some() {
            for i in range.clone() {
                if !wanted(&files[i])? {
                    excluded.push(i);
                }
            }
        }
        if range.len() > excluded.len() {
            children.push(Box::new(LevelIterator::new(
                Arc::clone(version),
                level,
                range,
                excluded,
                options.clone(),
                Arc::clone(&probe),
            )));
        }
    }
    Ok(MergingIterator::new(children))
}
