//! The deleter thread: deletes the obsolete tables the flush and compaction threads queue
//! (`core/file_deleter.rs`), off their paths.

use std::sync::Arc;
use std::time::Duration;

use crate::base::error::BackgroundJob;
use crate::core::shared::Shared;
use crate::jobs::background::contained;

/// How long the thread waits for work before it looks at the shutdown flag again.
const TICK: Duration = Duration::from_millis(50);

/// Starts the deleter thread; from now on obsolete tables are queued for it.
pub(crate) fn start_background(shared: &Arc<Shared>) -> Option<std::thread::JoinHandle<()>> {
    shared.file_deleter().start_serving();
    let handle = crate::jobs::background::spawn(shared, "siftdb-delete", background_loop);
    if handle.is_none() {
        delete_all(shared, shared.file_deleter().stop_serving());
    }
    handle
}

fn background_loop(db: &Arc<Shared>) {
    loop {
        let paths = db.file_deleter().take(TICK);
        if !paths.is_empty() {
            delete_all(db, paths);
        } else if db.is_shutting_down() {
            // The other threads may still queue while they wind down: from here on they
            // delete themselves, and what they queued before goes now.
            delete_all(db, db.file_deleter().stop_serving());
            return;
        }
    }
}

/// Deletes `paths`, never while a checkpoint pauses deletions. A panic of the file system is
/// contained (it becomes the background error, as in any background job) and the batch still
/// counts as done: a waiter of `FileDeleter::drain` must not wait for a thread that unwound.
fn delete_all(db: &Shared, paths: Vec<std::path::PathBuf>) {
    let n = paths.len();
    if n == 0 {
        return;
    }
    let _ = contained(db, BackgroundJob::FileDeletion, || loop {
        if let Some(_deleting) = db.deletions().begin() {
            for path in &paths {
                db.file_deleter().remove(db.fs().as_ref(), path);
            }
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(5));
    });
    db.file_deleter().done(n);
}
