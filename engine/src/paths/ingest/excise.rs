//! Range replace (Pebble's `IngestAndExcise`): an ingestion with `IngestOptions::excise` makes
//! every older key of the range disappear in the same edit that makes the files appear.
//!
//! How, cheaply: the ingestion adds one more table, written here, that holds nothing but a range
//! deletion of the range. It gets the files' global seqno, so it hides every older version in
//! the range (whatever level, and the memtable's, flushed first as for any overlapping file)
//! and none of the files' own entries (a range deletion hides only what is older than it). The
//! tables that lie wholly inside the range leave the tree in the same edit — their space comes
//! back at once — unless a snapshot still reads them; the tables at the range's edges stay,
//! and compactions drop what the deletion covers as they meet it.

use std::ops::Range;
use std::path::Path;

use siftdb_sstable::{FragmentedRangeTombstones, RangeTombstone, TableBuilder};

use super::{open_staged, staged_from, Staged};
use crate::base::error::{Error, Result};
use crate::base::fs::names;
use crate::core::keyspace_tree::KeyspaceTree;
use crate::core::shared::Shared;
use crate::core::version::Version;

/// Refuses an excise range that is empty or does not hold every file.
pub(super) fn check_inside(files: &[Staged], range: &Range<Vec<u8>>) -> Result<()> {
    if range.start >= range.end {
        return Err(Error::InvalidArgument(
            "excise: the range's start must be below its end".to_string(),
        ));
    }
    for f in files {
        let (smallest, largest) = f.user_range();
        let below_end = if f.largest.is_range_end_sentinel() {
            largest <= range.end.as_slice()
        } else {
            largest < range.end.as_slice()
        };
        if smallest < range.start.as_slice() || !below_end {
            return Err(Error::InvalidArgument(format!(
                "excise: {} holds keys outside the excised range",
                f.source.display()
            )));
        }
    }
    Ok(())
}

/// Writes table `number` holding only the range deletion of `range` (at sequence 0, as an
/// external file), synced, and stages it.
pub(super) fn stage_tombstone(
    db: &Shared,
    tree: &KeyspaceTree,
    range: &Range<Vec<u8>>,
    number: u64,
) -> Result<Staged> {
    let path = names::table(db.dir(), number);
    let mut file = db.create_output(&path, crate::base::rate_limiter::IoPriority::High)?;
    let no_keys = crate::core::filter_plan::TableFilter::omitted("");
    let build = tree
        .options()
        .table_build_options(crate::core::filter_plan::BOTTOM, no_keys);
    let mut builder = TableBuilder::new(&mut file, build);
    let deletion = RangeTombstone::new(range.start.clone(), range.end.clone(), 0);
    builder.set_range_tombstones(FragmentedRangeTombstones::new([deletion]));
    builder.finish()?;
    file.sync()?;
    let table = open_staged(db, tree, &path, number)?;
    let mut staged = staged_from(&table, Path::new(&path), number)?;
    staged.tombstone = true;
    Ok(staged)
}

/// The tables (level, number) of `version` whose keys all lie inside `range`.
pub(super) fn covered_tables(version: &Version, range: &Range<Vec<u8>>) -> Vec<(usize, u64)> {
    let mut covered = Vec::new();
    for level in 0..version.num_levels() {
        for t in version.level(level) {
            if t.smallest_user_key() >= range.start.as_slice()
                && t.largest_user_key() < range.end.as_slice()
            {
                covered.push((level, t.meta.number));
            }
        }
    }
    covered
}
