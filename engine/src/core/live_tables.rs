//! Tables still referenced by a reader, so that none is deleted under it.
//!
//! A table leaves the current version when a compaction replaces it, but an iterator, a
//! `multi_get` or a compaction may still hold an older version that names it. With every
//! table's file open for its whole life, deleting it was harmless (the open descriptor keeps
//! the bytes), but the table cache closes files and opens them again by name: so a table's
//! file is deleted only once no live table object refers to it (LevelDB keeps every version's
//! files the same way). A cleanup that finds an obsolete table still referenced leaves it, and
//! the last reference deletes it when it goes. That deletion needs no checkpoint's pause
//! (`FileDeletions`): a checkpoint links the tables of the versions it holds, which are live
//! here until it lets them go, and a table deferred once is out of every current version for
//! good (no later edit, failed or not, brings it back).

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::base::fs::FileSystem;
use crate::core::file_deleter::FileDeleter;

/// See the module documentation.
pub(crate) struct LiveTables {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    /// Where the last reference's deletion goes (`core/file_deleter.rs`).
    deleter: Arc<FileDeleter>,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Live table objects per table number.
    counts: HashMap<u64, usize>,
    /// Obsolete tables a cleanup left to their last reference.
    deferred: HashSet<u64>,
    /// Which of the numbers held are blob files (file numbers are unique across kinds).
    blobs: HashSet<u64>,
}

/// Held by a live table: while it exists, its file is not deleted.
pub(crate) struct LiveTable {
    number: u64,
    tables: Arc<LiveTables>,
}

impl std::fmt::Debug for LiveTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("LiveTable").field(&self.number).finish()
    }
}

impl LiveTables {
    /// Tables of the database in `dir` on `fs`.
    pub(crate) fn new(
        fs: Arc<dyn FileSystem>,
        dir: PathBuf,
        deleter: Arc<FileDeleter>,
    ) -> LiveTables {
        LiveTables {
            fs,
            dir,
            deleter,
            inner: Mutex::new(Inner::default()),
        }
    }

    /// Registers a live table object of table `number`.
    pub(crate) fn register(self: &Arc<Self>, number: u64) -> LiveTable {
        *self.inner.lock().counts.entry(number).or_insert(0) += 1;
        LiveTable {
            number,
            tables: Arc::clone(self),
        }
    }

    /// Registers a live blob file object of blob file `number`: kept, and deleted when obsolete,
    /// the same way as a table.
    pub(crate) fn register_blob(self: &Arc<Self>, number: u64) -> LiveTable {
        self.inner.lock().blobs.insert(number);
        self.register(number)
    }

    /// Whether obsolete table `number` may be deleted now; if a reader still holds it, the
    /// deletion is left to the last one.
    pub(crate) fn deletable_now(&self, number: u64) -> bool {
        let mut inner = self.inner.lock();
        if inner.counts.contains_key(&number) {
            inner.deferred.insert(number);
            false
        } else {
            true
        }
    }

    fn release(&self, number: u64) {
        let delete = {
            let mut inner = self.inner.lock();
            let Some(count) = inner.counts.get_mut(&number) else {
                return;
            };
            *count -= 1;
            if *count > 0 {
                return;
            }
            inner.counts.remove(&number);
            let blob = inner.blobs.remove(&number);
            (inner.deferred.remove(&number), blob)
        };
        if let (true, blob) = delete {
            let path = if blob {
                crate::base::fs::names::blob(&self.dir, number)
            } else {
                crate::base::fs::names::table(&self.dir, number)
            };
            self.deleter.delete(self.fs.as_ref(), path);
        }
    }
}

impl Drop for LiveTable {
    fn drop(&mut self) {
        self.tables.release(self.number);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::fs::RealFs;

    #[test]
    fn an_obsolete_table_goes_with_its_last_reference() {
        let dir = tempfile::tempdir().unwrap();
        let path = crate::base::fs::names::table(dir.path(), 7);
        std::fs::write(&path, b"t").unwrap();
        let tables = Arc::new(LiveTables::new(
            Arc::new(RealFs),
            dir.path().to_path_buf(),
            Arc::default(),
        ));
        let (a, b) = (tables.register(7), tables.register(7));
        assert!(!tables.deletable_now(7), "held twice");
        drop(a);
        assert!(path.exists(), "one reference left");
        drop(b);
        assert!(!path.exists(), "the last reference deletes it");
        // Never held, or held and released before any cleanup judged it: deletable now, and
        // a release without a deferral deletes nothing.
        assert!(tables.deletable_now(8));
        let other = crate::base::fs::names::table(dir.path(), 9);
        std::fs::write(&other, b"t").unwrap();
        drop(tables.register(9));
        assert!(other.exists());
        // A blob file goes by its own name.
        let blob = crate::base::fs::names::blob(dir.path(), 10);
        std::fs::write(&blob, b"b").unwrap();
        let held = tables.register_blob(10);
        assert!(!tables.deletable_now(10));
        drop(held);
        assert!(!blob.exists(), "the last reference deletes the blob file");
    }
}
