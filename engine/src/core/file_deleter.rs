//! Obsolete table files handed to a background thread to delete (`jobs/deleter_thread.rs`), so
//! that the compaction and flush threads do not wait for the file system to free a table's
//! blocks: on ext4 an `unlink` of a 4 MiB table took about 1.5 ms, 1.3 s of the compaction
//! thread's time in one configuration-B fill (905 tables; `docs/benchmarks/writes.md`).
//!
//! Only tables already judged deletable come here (out of every current version, no reader
//! holding them, no background error); nothing brings such a table back, so deleting it later
//! changes nothing but when its space is freed. Without a thread serving the queue (stepped
//! mode, before the threads start, after they stop) a caller deletes the file itself.

use std::path::PathBuf;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use crate::base::event_listener::TableFileDeletionInfo;
use crate::base::fs::names::{self, FileKind};
use crate::base::fs::FileSystem;
use crate::core::events::{Event, Events};

/// Removes `path`, logging a failure (an obsolete file left behind is deleted by a later
/// cleanup or the next open).
pub(crate) fn remove_logged(fs: &dyn FileSystem, path: &std::path::Path) {
    if let Err(e) = fs.remove(path) {
        tracing::warn!("siftdb: cannot delete obsolete {}: {e}", path.display());
    }
}

/// See the module documentation.
#[derive(Default)]
pub(crate) struct FileDeleter {
    queue: Mutex<Queue>,
    /// Notified when paths are queued, and when a batch is done.
    changed: Condvar,
    /// Told of every table deleted (`on_table_file_deleted`).
    events: Events,
}

#[derive(Default)]
struct Queue {
    paths: Vec<PathBuf>,
    /// Paths the thread took and is deleting.
    in_flight: usize,
    /// Whether a thread serves the queue.
    served: bool,
    /// The database is closing: [`FileDeleter::take`] no longer waits for work.
    closing: bool,
}

impl std::fmt::Debug for FileDeleter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let queue = self.queue.lock();
        f.debug_struct("FileDeleter")
            .field("queued", &queue.paths.len())
            .field("in_flight", &queue.in_flight)
            .finish()
    }
}

impl FileDeleter {
    /// A deleter announcing the tables it deletes to `events`.
    pub(crate) fn new(events: Events) -> FileDeleter {
        FileDeleter {
            events,
            ..FileDeleter::default()
        }
    }

    /// Removes the obsolete `path` now (a failure is logged: a later cleanup or the next open
    /// deletes it), announcing a table's deletion.
    pub(crate) fn remove(&self, fs: &dyn FileSystem, path: &std::path::Path) {
        let removed = fs.remove(path);
        match &removed {
            // Queued twice (a later cleanup listed it before the first deletion): announced by
            // the deletion that removed it.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Err(e) => tracing::warn!("siftdb: cannot delete obsolete {}: {e}", path.display()),
            Ok(()) => {}
        }
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if let FileKind::Table(number) = names::parse(name) {
            self.events.emit(|| {
                Event::TableFileDeleted(TableFileDeletionInfo {
                    number,
                    path: path.to_path_buf(),
                    error: removed.err().map(|e| e.to_string()),
                })
            });
        }
    }

    /// Queues `path` for the deleter thread; gives it back when no thread serves the queue
    /// (the caller deletes it then).
    pub(crate) fn offer(&self, path: PathBuf) -> Result<(), PathBuf> {
        let mut queue = self.queue.lock();
        if !queue.served {
            return Err(path);
        }
        queue.paths.push(path);
        self.changed.notify_all();
        Ok(())
    }

    /// Deletes `path`: through the deleter thread when one serves the queue, else now (a
    /// failure is logged; the next open deletes what is left).
    pub(crate) fn delete(&self, fs: &dyn FileSystem, path: PathBuf) {
        if let Err(path) = self.offer(path) {
            self.remove(fs, &path);
        }
    }

    /// The database is closing: the thread waiting in [`FileDeleter::take`] returns now, and
    /// later calls do not wait, so that it sees the shutdown at once instead of at the end of
    /// its tick (`Db::close` would otherwise wait that long).
    pub(crate) fn begin_closing(&self) {
        self.queue.lock().closing = true;
        self.changed.notify_all();
    }

    /// Marks the queue as served by a thread (from now on `offer` queues).
    pub(crate) fn start_serving(&self) {
        self.queue.lock().served = true;
    }

    /// Marks the queue as no longer served and returns what is left in it, for the caller to
    /// delete: no later `offer` queues anything.
    pub(crate) fn stop_serving(&self) -> Vec<PathBuf> {
        let mut queue = self.queue.lock();
        queue.served = false;
        let left = std::mem::take(&mut queue.paths);
        queue.in_flight += left.len();
        left
    }

    /// The queued paths, waiting up to `tick` for one; marked in flight until
    /// [`FileDeleter::done`].
    pub(crate) fn take(&self, tick: Duration) -> Vec<PathBuf> {
        let mut queue = self.queue.lock();
        if queue.paths.is_empty() && !queue.closing {
            self.changed.wait_for(&mut queue, tick);
        }
        let taken = std::mem::take(&mut queue.paths);
        queue.in_flight += taken.len();
        taken
    }

    /// `n` paths taken are deleted (or failed to be).
    pub(crate) fn done(&self, n: usize) {
        let mut queue = self.queue.lock();
        queue.in_flight -= n;
        self.changed.notify_all();
    }

    /// Waits until every path queued so far is deleted (`Db::wait_for_compaction` and
    /// `compact_range` return with the obsolete tables gone, as before they were queued).
    pub(crate) fn drain(&self) {
        let mut queue = self.queue.lock();
        while !queue.paths.is_empty() || queue.in_flight > 0 {
            if !queue.served && queue.in_flight == 0 {
                return; // nobody left to delete them: the next open does
            }
            self.changed.wait_for(&mut queue, Duration::from_millis(50));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unserved_queue_gives_paths_back_and_a_served_one_drains() {
        let deleter = FileDeleter::default();
        assert_eq!(deleter.offer("a".into()), Err(PathBuf::from("a")));
        deleter.drain(); // nothing queued: returns at once
        deleter.start_serving();
        deleter.offer("b".into()).unwrap();
        std::thread::scope(|s| {
            s.spawn(|| {
                let taken = deleter.take(Duration::from_secs(5));
                assert_eq!(taken, [PathBuf::from("b")]);
                deleter.done(taken.len());
            });
            deleter.drain();
        });
        deleter.offer("c".into()).unwrap();
        assert_eq!(deleter.stop_serving(), [PathBuf::from("c")]);
        deleter.done(1);
        assert_eq!(deleter.offer("d".into()), Err(PathBuf::from("d")));
    }

    #[test]
    fn closing_wakes_a_waiting_take_and_later_takes_do_not_wait() {
        let deleter = FileDeleter::default();
        deleter.start_serving();
        std::thread::scope(|s| {
            // A take that would wait an hour for work returns once closing begins, whether it
            // waits already (most likely, after the pause) or not yet: a lost wakeup would
            // hang the test.
            let waiter = s.spawn(|| deleter.take(Duration::from_secs(3600)));
            std::thread::sleep(Duration::from_millis(20));
            deleter.begin_closing();
            assert!(waiter.join().unwrap().is_empty());
        });
        assert!(deleter.take(Duration::from_secs(3600)).is_empty());
        // What is queued meanwhile is still handed out.
        deleter.offer("e".into()).unwrap();
        assert_eq!(
            deleter.take(Duration::from_secs(3600)),
            [PathBuf::from("e")]
        );
    }
}
