//! Checkpoints: a consistent copy of an open database in another directory (siftdb's
//! `Db::checkpoint`: hard links to the tables, a fresh manifest).

use std::marker::PhantomData;
use std::path::Path;

use crate::{DBAccess, Error};

/// Makes checkpoints of one database.
pub struct Checkpoint<'db> {
    db: siftdb::Db,
    life: PhantomData<&'db ()>,
}

/// Checkpoints of a [`TransactionDB`](crate::TransactionDB).
pub type TransactionDBCheckpoint<'db> = Checkpoint<'db>;

impl<'db> Checkpoint<'db> {
    /// Checkpoints of `db`.
    pub fn new<D: DBAccess>(db: &'db D) -> Result<Self, Error> {
        Ok(Checkpoint {
            db: db.core().db.clone(),
            life: PhantomData,
        })
    }

    /// Writes a checkpoint to `path`, which must not exist.
    pub fn create_checkpoint<P: AsRef<Path>>(&self, path: P) -> Result<(), Error> {
        Ok(self.db.checkpoint(path)?)
    }

    /// Writes a checkpoint; with `log_size_for_flush` 0 every column family is flushed first
    /// (otherwise siftdb's checkpoint carries the WAL).
    pub fn create_checkpoint_with_log_size<P: AsRef<Path>>(
        &self,
        path: P,
        log_size_for_flush: u64,
    ) -> Result<(), Error> {
        if log_size_for_flush == 0 {
            for name in self.db.keyspace_names() {
                self.db.keyspace(&name)?.flush()?;
            }
        }
        self.create_checkpoint(path)
    }
}
