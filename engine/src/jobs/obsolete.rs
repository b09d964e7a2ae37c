//! Deleting the files no live state needs (LevelDB's `RemoveObsoleteFiles`): called after every
//! flush, compaction, keyspace drop and checkpoint, and at open.

use crate::base::fs::names::{self, FileKind};
use crate::core::shared::Shared;

/// Deletes files no live state needs: WALs older than the oldest live memtable, manifests
/// other than the current one, and tables in no version (orphans of an interrupted flush or
/// compaction). Failures are logged, not fatal.
pub(crate) fn delete_obsolete_files(db: &Shared) {
    // List first, then look at the live state: a file created after the listing is not in it,
    // and every file in it was numbered before the state is read, so it is live, pending (being
    // written by a flush or compaction) or truly obsolete. The other order would delete outputs
    // created between the two steps.
    if db.read_only() {
        return; // a read-only open changes no file
    }
    // Held from the pause check to the last deletion: a checkpoint that pauses deletions waits
    // for a cleanup under way, which could otherwise delete what the checkpoint then names.
    let Some(_deleting) = db.deletions().begin() else {
        return; // a checkpoint is linking and copying the files
    };
    let Ok(entries) = db.fs().list(db.dir()) else {
        return;
    };
    crate::base::sync_point::sync_point!(db, crate::base::sync_point::OBSOLETE_FILES_LISTED);
    let min_wal = {
        let state = db.state().lock();
        if state.bg_error.is_some() {
            // After a failed write the files on disk may be needed by a manifest edit whose
            // fate is unknown until the next open: delete nothing.
            return;
        }
        // The log numbers the manifest holds, never ahead of what the memtables need: a WAL
        // above the smallest may still be replayed by the next open.
        let recorded = db.versions().min_log_number().unwrap_or(0);
        recorded.min(state.min_live_wal())
    };
    // Live tables and pending outputs are read together (`VersionSet::live_files`).
    let (live_tables, manifest) = db.versions().live_files();
    // Again, after reading the live set: a job whose manifest append failed meanwhile records
    // the background error before it gives its outputs back (leaving the pending set), so an
    // output missing from `live_tables` because of such a failure shows the error here. The
    // manifest may name that output (the append's fate is unknown until the next open): it
    // must not be deleted.
    if db.state().lock().bg_error.is_some() {
        return;
    }
    for name in entries {
        let obsolete = match names::parse(&name) {
            FileKind::Wal(n) => n < min_wal,
            // A table out of every current version may still be read through an older one:
            // then its last reader deletes it.
            FileKind::Table(n) | FileKind::Blob(n) => {
                !live_tables.contains(&n) && db.live_tables().deletable_now(n)
            }
            // Only older manifests: a newer one may be a rollover's, written and named by
            // `CURRENT` before the version set records its number (deleting it would leave
            // `CURRENT` naming nothing). A newer leftover of a failed creation goes once a
            // later manifest is live.
            FileKind::Manifest(n) => manifest != 0 && n < manifest,
            // Never while the database runs: a manifest rollover writes `CURRENT.tmp` and
            // `set_options` `OPTIONS.tmp` before renaming them, at any time. Leftovers of a
            // crash go at the next open (`delete_leftover_temp_files`).
            FileKind::Temp => false,
            FileKind::Other => false,
        };
        if !obsolete {
            continue;
        }
        let path = db.dir().join(&name);
        match names::parse(&name) {
            // Tables, the slow deletions (their blocks freed), go to the deleter thread.
            FileKind::Table(_) | FileKind::Blob(_) => {
                db.file_deleter().delete(db.fs().as_ref(), path)
            }
            _ => crate::core::file_deleter::remove_logged(db.fs().as_ref(), &path),
        }
    }
}

/// Deletes the temporary files a crash left (`CURRENT.tmp`, `OPTIONS.tmp`): called by an open
/// before any background work or write can create one. Failures are logged, not fatal.
pub(crate) fn delete_leftover_temp_files(db: &Shared) {
    if db.read_only() {
        return;
    }
    let Ok(entries) = db.fs().list(db.dir()) else {
        return;
    };
    for name in entries {
        if names::parse(&name) == FileKind::Temp {
            crate::core::file_deleter::remove_logged(db.fs().as_ref(), &db.dir().join(&name));
        }
    }
}
