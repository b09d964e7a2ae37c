//! The logs a WAL switch closed before they were durable.
//!
//! A switch hands the old log's bytes to the OS and starts the next log at once; the old log's
//! `fdatasync` waits here for whoever next needs it durable, as RocksDB's `SyncClosedLogs`
//! does: a synced write (everything acknowledged before it must survive with it), a flush
//! before its manifest edit makes the log obsolete for its keyspace (the table must never
//! survive without the older writes of other keyspaces), a keyspace change, and close. The
//! writer that switched never waits for the old log's pages to reach the disk.
//!
//! Recovery reads the consequence (see `paths/recovery/wal_replay.rs`): a log older than the
//! newest may end in unsynced loss unless a sync mark in a later log, or a keyspace's log
//! number past it, proves it synced.

use std::io;

use parking_lot::Mutex;

use crate::base::fs::WritableFile;

/// See the module documentation.
#[derive(Default)]
pub(crate) struct ClosedWals {
    /// Logs closed and not yet synced, oldest first. Held only to push or take (never across
    /// an `fdatasync`), so a switch never waits behind a sync under way.
    pending: Mutex<Vec<ClosedWal>>,
    /// One syncer at a time: a second caller waits for the first, whose logs it needs durable
    /// too, and then finds them gone from `pending`. A leaf lock: nothing is taken under it but
    /// `pending`. It holds whether a sync failed: from then on every `sync_all` fails until
    /// `discard` (a retried `fdatasync` can succeed without the pages the failed one dropped,
    /// so a second caller must not retry what the first could not make durable).
    syncing: Mutex<bool>,
}

/// A closed log and its still open file.
struct ClosedWal {
    number: u64,
    file: Box<dyn WritableFile>,
}

impl std::fmt::Debug for ClosedWals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let numbers: Vec<u64> = self.pending.lock().iter().map(|w| w.number).collect();
        f.debug_struct("ClosedWals")
            .field("pending", &numbers)
            .finish()
    }
}

impl ClosedWals {
    /// Records log `number`, whose bytes are all with the OS, as closed and not yet synced.
    pub(crate) fn push(&self, number: u64, file: Box<dyn WritableFile>) {
        self.pending.lock().push(ClosedWal { number, file });
    }

    /// Makes every log closed before this call durable, oldest first. On failure the logs not
    /// yet synced stay pending, and this and every later call fail until [`Self::discard`]
    /// (the caller stops writes: after a failed `fdatasync` nothing about the file's pages can
    /// be trusted).
    pub(crate) fn sync_all(&self) -> io::Result<()> {
        let mut failed = self.syncing.lock();
        if *failed {
            return Err(io::Error::other(
                "an earlier sync of a closed WAL failed; its unsynced pages may be gone",
            ));
        }
        let mut taken = std::mem::take(&mut *self.pending.lock());
        let mut synced = 0;
        let result = taken.iter_mut().try_for_each(|wal| {
            wal.file.sync()?;
            synced += 1;
            Ok(())
        });
        if result.is_err() {
            *failed = true;
            let mut pending = self.pending.lock();
            let newer = std::mem::take(&mut *pending);
            pending.extend(taken.drain(synced..));
            pending.extend(newer);
        }
        result
    }

    /// Forgets the pending logs without syncing them (`Db::resume` after a failed log write or
    /// sync: a retried `fdatasync` could succeed without the pages the failed one dropped; the
    /// memtables those logs hold are flushed to tables instead).
    pub(crate) fn discard(&self) {
        let mut failed = self.syncing.lock();
        self.pending.lock().clear();
        *failed = false;
    }

    /// The numbers of the logs closed and not yet synced, oldest first.
    #[cfg(test)]
    pub(crate) fn pending_numbers(&self) -> Vec<u64> {
        self.pending.lock().iter().map(|w| w.number).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// A file whose syncs are counted, failing from the `fail_from`th sync on.
    #[derive(Debug)]
    struct Counted {
        syncs: Arc<AtomicUsize>,
        fail_from: usize,
    }

    impl Write for Counted {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl WritableFile for Counted {
        fn sync(&mut self) -> io::Result<()> {
            let n = self.syncs.fetch_add(1, Ordering::SeqCst);
            if n >= self.fail_from {
                return Err(io::Error::other("injected"));
            }
            Ok(())
        }
    }

    fn file(syncs: &Arc<AtomicUsize>, fail_from: usize) -> Box<dyn WritableFile> {
        Box::new(Counted {
            syncs: Arc::clone(syncs),
            fail_from,
        })
    }

    #[test]
    fn sync_all_syncs_each_pending_log_once() {
        let syncs = Arc::new(AtomicUsize::new(0));
        let closed = ClosedWals::default();
        closed.push(5, file(&syncs, usize::MAX));
        closed.push(6, file(&syncs, usize::MAX));
        assert_eq!(closed.pending_numbers(), vec![5, 6]);
        closed.sync_all().unwrap();
        assert_eq!(syncs.load(Ordering::SeqCst), 2);
        assert!(closed.pending_numbers().is_empty());
        closed.sync_all().unwrap();
        assert_eq!(
            syncs.load(Ordering::SeqCst),
            2,
            "a synced log is not synced again"
        );
    }

    #[test]
    fn a_failed_sync_keeps_the_unsynced_logs_pending_in_order() {
        let syncs = Arc::new(AtomicUsize::new(0));
        let closed = ClosedWals::default();
        closed.push(5, file(&syncs, usize::MAX));
        closed.push(6, file(&syncs, 1));
        closed.push(7, file(&syncs, usize::MAX));
        assert!(closed.sync_all().is_err());
        assert_eq!(closed.pending_numbers(), vec![6, 7]);
        // Never retried: the failed sync may have dropped log 6's pages.
        let before = syncs.load(Ordering::SeqCst);
        assert!(closed.sync_all().is_err());
        assert_eq!(syncs.load(Ordering::SeqCst), before);
        closed.discard();
        assert!(closed.pending_numbers().is_empty());
        closed.push(8, file(&syncs, usize::MAX));
        assert!(closed.sync_all().is_ok(), "a new log after discard syncs");
    }
}
