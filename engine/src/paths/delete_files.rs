//! `delete_files_in_range` (RocksDB's `DeleteFilesInRange`): the tables of levels 1 and below
//! that lie wholly inside a key range leave the tree by one manifest edit, without a tombstone
//! written or a byte compacted — how a service drops a removed shard's data at once.
//!
//! L0 tables stay (they overlap each other and newer writes; RocksDB's rule too), as do tables
//! that reach out of the range. A deleted table may have hidden older versions of its keys in a
//! deeper table that stays (one reaching out of the range): those versions are visible again.
//! Follow with `delete_range` over the same range to remove what is left, edges included.

use std::sync::Arc;

use crate::base::error::Result;
use crate::base::version_edit::VersionEdit;
use crate::core::keyspace_tree::KeyspaceTree;
use crate::paths::engine::Engine;

impl Engine {
    /// Deletes the tables of `tree` below L0 whose keys all lie in `[start, end]`; returns how
    /// many. Background compactions wait meanwhile (none holds a table this deletes).
    pub(crate) fn delete_files_in_range(
        &self,
        tree: &Arc<KeyspaceTree>,
        start: &[u8],
        end: &[u8],
    ) -> Result<usize> {
        let db = self.shared();
        db.check_open()?;
        db.check_writable()?;
        tree.check_live()?;
        if start > end {
            return Ok(0);
        }
        let _exclusive = self.compactions().exclusive();
        let version = db.versions().current(tree);
        let mut edit = VersionEdit::default();
        for level in 1..version.num_levels() {
            for f in version.level(level) {
                if f.smallest_user_key() >= start && f.largest_user_key() <= end {
                    edit.deleted.push((level, f.meta.number));
                }
            }
        }
        let deleted = edit.deleted.len();
        if deleted > 0 {
            let numbers: Vec<u64> = edit.deleted.iter().map(|(_, n)| *n).collect();
            db.versions().log_and_apply(tree, edit, &[], |_| {})?;
            for number in numbers {
                db.uncache_table(number);
            }
            db.counters()
                .files_deleted_in_range
                .fetch_add(deleted as u64, std::sync::atomic::Ordering::Relaxed);
            crate::jobs::obsolete::delete_obsolete_files(db);
            // Returns with the files gone (a reader's older version may still hold some: those
            // go when it does).
            db.drain_deletions();
        }
        Ok(deleted)
    }
}
