//! Making appended entries durable off openraft's path: `append` writes its batch unsynced
//! (readable as soon as it returns, as openraft asks) and hands its callback here; one worker
//! thread syncs the WAL once for every callback waiting and then answers them in append order.
//! The leader's sync thus overlaps replication to the followers, and appends that arrive while
//! a sync runs share the next one (group commit).

use std::sync::mpsc;
use std::thread::JoinHandle;

use openraft::storage::LogFlushed;
use siftdb::{Db, WriteBatch, WriteOptions};

use crate::{Error, TypeConfig};

type Callback = LogFlushed<TypeConfig>;

/// The sync worker of one store; dropping it stops the worker and waits for it, so the
/// database is closed once the store is dropped.
pub(crate) struct LogSyncer {
    sender: Option<mpsc::Sender<Callback>>,
    worker: Option<JoinHandle<()>>,
}

impl LogSyncer {
    /// Starts the worker over `db`.
    pub(crate) fn start(db: Db) -> Result<LogSyncer, Error> {
        let (sender, receiver) = mpsc::channel();
        let worker = std::thread::Builder::new()
            .name("siftdb-raft-log-sync".to_string())
            .spawn(move || sync_loop(&db, &receiver))?;
        Ok(LogSyncer {
            sender: Some(sender),
            worker: Some(worker),
        })
    }

    /// Calls `callback` once everything written to the database so far is durable.
    pub(crate) fn after_sync(&self, callback: Callback) {
        let Some(sender) = &self.sender else {
            return callback.log_io_completed(Err(stopped()));
        };
        if let Err(mpsc::SendError(callback)) = sender.send(callback) {
            callback.log_io_completed(Err(stopped()));
        }
    }
}

fn stopped() -> std::io::Error {
    std::io::Error::other("the log sync worker has stopped")
}

/// Waits for callbacks; for each group of them, one synced (empty) write, which makes every
/// earlier write in the WAL durable, then the answers, in the order the appends came.
fn sync_loop(db: &Db, receiver: &mpsc::Receiver<Callback>) {
    while let Ok(first) = receiver.recv() {
        let mut waiting = vec![first];
        waiting.extend(receiver.try_iter());
        let synced = db.write_opt(WriteBatch::new(), &WriteOptions { sync: true });
        for callback in waiting {
            let result = match &synced {
                Ok(()) => Ok(()),
                Err(e) => Err(std::io::Error::other(e.to_string())),
            };
            callback.log_io_completed(result);
        }
    }
}

impl Drop for LogSyncer {
    fn drop(&mut self) {
        drop(self.sender.take());
        if let Some(worker) = self.worker.take() {
            // The worker only ends by its channel closing; a panic in it has been reported.
            let _ = worker.join();
        }
    }
}
