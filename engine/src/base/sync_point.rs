//! Named pause points for tests (cargo feature `test-hooks`), after RocksDB's `TEST_SYNC_POINT`.
//!
//! A race between two steps of the engine (say, a read choosing its sequence number and taking
//! its view of the tree) is too narrow to hit by chance in a test. A sync point names the gap:
//! a test installs a callback for it with `Db::set_sync_point`, and
//! the thread that reaches the point runs the callback there — typically it signals the test and
//! waits while the test runs a write, a flush and a compaction inside the gap.
//!
//! Without the feature the points compile to nothing.
#![cfg_attr(not(feature = "test-hooks"), allow(dead_code))]

#[cfg(feature = "test-hooks")]
pub(crate) use enabled::SyncPoints;

#[cfg(feature = "test-hooks")]
mod enabled {
    use std::collections::HashMap;
    use std::sync::Arc;

    use parking_lot::RwLock;

    type Callback = Arc<dyn Fn() + Send + Sync>;

    /// The callbacks installed per point name.
    #[derive(Default)]
    pub(crate) struct SyncPoints {
        callbacks: RwLock<HashMap<&'static str, Callback>>,
    }

    impl SyncPoints {
        pub(crate) fn set(&self, name: &'static str, callback: Callback) {
            self.callbacks.write().insert(name, callback);
        }

        pub(crate) fn clear(&self, name: &str) {
            self.callbacks.write().remove(name);
        }

        /// Runs the callback of `name`, if any, without holding the registry lock (the callback
        /// may block for as long as the test needs, and other points must stay reachable).
        pub(crate) fn hit(&self, name: &str) {
            let callback = self.callbacks.read().get(name).cloned();
            if let Some(callback) = callback {
                callback();
            }
        }
    }
}

/// Marks the named pause point `$name` on `$db` (a `Shared`).
macro_rules! sync_point {
    ($db:expr, $name:expr) => {
        #[cfg(feature = "test-hooks")]
        $db.sync_points().hit($name);
    };
}
pub(crate) use sync_point;

/// Between a read choosing the sequence number it reads at and taking its view of the tree
/// (`get`, iterators).
pub const READ_SEQUENCE_AND_VIEW: &str = "read:sequence_and_view";
/// A snapshot has chosen its sequence number (and, since the fix, registered it).
pub const SNAPSHOT_SEQUENCE_CHOSEN: &str = "snapshot:sequence_chosen";
/// A flush has written its table and not yet recorded it: its file number is taken, so
/// a compaction that runs meanwhile numbers its outputs after a table holding newer data.
pub const FLUSH_TABLE_WRITTEN: &str = "flush:table_written";
/// A checkpoint has chosen its point (writes run again) and is about to link and copy files.
pub const CHECKPOINT_POINT_CHOSEN: &str = "checkpoint:point_chosen";
/// A memtable switch has created the new WAL and not yet closed the old one: the state lock is
/// released for that I/O while the write leader keeps the write path (`paths/write.rs`).
pub const WAL_SWITCH_IO: &str = "write:wal_switch_io";
/// `VersionSet::log_and_apply` has appended (and synced) an edit to the manifest and not yet
/// installed its version; the manifest lock is held, the state lock is not.
pub const MANIFEST_APPENDED: &str = "version_set:manifest_appended";
/// `delete_obsolete_files` has listed the directory and not yet read the live state; the
/// file-deletion lock is held.
pub const OBSOLETE_FILES_LISTED: &str = "obsolete:files_listed";
/// A new manifest is written and named by `CURRENT`, and the version set does not yet record
/// its number (a rollover, or the manifest an open or `resume` starts).
pub const MANIFEST_CREATED: &str = "version_set:manifest_created";
