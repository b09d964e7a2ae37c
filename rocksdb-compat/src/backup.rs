//! Backups (rust-rocksdb's `backup` module): siftdb's [`siftdb::backup::BackupEngine`]
//! underneath, incremental (a table shared by several backups is copied once).

use std::path::{Path, PathBuf};

use crate::db::DBAccess;
use crate::{Env, Error};

/// Where backups go.
pub struct BackupEngineOptions {
    path: PathBuf,
}

impl BackupEngineOptions {
    /// Backups in the directory `path` (created when the engine opens).
    pub fn new<P: AsRef<Path>>(path: P) -> Result<Self, Error> {
        Ok(BackupEngineOptions {
            path: path.as_ref().to_path_buf(),
        })
    }

    /// Threads copying files: siftdb copies on the calling thread; no effect.
    pub fn set_max_background_operations(&mut self, max_background_operations: i32) {
        let _ = max_background_operations;
    }
}

/// How a restore goes.
#[derive(Default)]
pub struct RestoreOptions {
    keep_log_files: bool,
}

impl RestoreOptions {
    /// Keep the WAL files already in the target: a restore writes the backup's whole
    /// directory (its WAL included), so this has no effect.
    pub fn set_keep_log_files(&mut self, keep_log_files: bool) {
        self.keep_log_files = keep_log_files;
    }
}

/// One backup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupEngineInfo {
    /// Seconds since the Unix epoch when it was made.
    pub timestamp: i64,
    /// Its id.
    pub backup_id: u32,
    /// Bytes of its files.
    pub size: u64,
    /// How many files it has.
    pub num_files: u32,
}

/// A directory of backups (RocksDB's `BackupEngine`).
pub struct BackupEngine {
    inner: siftdb::backup::BackupEngine,
}

impl BackupEngine {
    /// Opens (creating it if needed) the backup directory of `opts`.
    pub fn open(opts: &BackupEngineOptions, env: &Env) -> Result<Self, Error> {
        let _ = env;
        Ok(BackupEngine {
            inner: siftdb::backup::BackupEngine::open(&opts.path)?,
        })
    }

    /// Backs up `db`: every write acknowledged before the call.
    pub fn create_new_backup<D: DBAccess>(&mut self, db: &D) -> Result<(), Error> {
        self.inner.create_new_backup(&db.core().db)?;
        Ok(())
    }

    /// Backs up `db`, after flushing its memtables if `flush_before_backup` (otherwise the
    /// backup carries the WAL: the same data either way).
    pub fn create_new_backup_flush<D: DBAccess>(
        &mut self,
        db: &D,
        flush_before_backup: bool,
    ) -> Result<(), Error> {
        if flush_before_backup {
            let inner = &db.core().db;
            for name in inner.keyspace_names() {
                inner.keyspace(&name)?.flush()?;
            }
        }
        self.create_new_backup(db)
    }

    /// Deletes all backups but the newest `num_backups_to_keep`.
    pub fn purge_old_backups(&mut self, num_backups_to_keep: usize) -> Result<(), Error> {
        Ok(self.inner.purge_old_backups(num_backups_to_keep)?)
    }

    /// Every backup, oldest first.
    pub fn get_backup_info(&self) -> Vec<BackupEngineInfo> {
        self.inner
            .get_backup_info()
            .into_iter()
            .map(|b| BackupEngineInfo {
                timestamp: i64::try_from(b.timestamp).unwrap_or(i64::MAX),
                backup_id: b.backup_id,
                size: b.size,
                num_files: b.number_files,
            })
            .collect()
    }

    /// Checks backup `backup_id`'s files against their recorded sizes and checksums.
    pub fn verify_backup(&self, backup_id: u32) -> Result<(), Error> {
        Ok(self.inner.verify_backup(backup_id)?)
    }

    /// Restores the newest backup into `db_dir` (siftdb keeps the WAL in the database's
    /// directory: `wal_dir` must be `db_dir`).
    pub fn restore_from_latest_backup<D: AsRef<Path>, W: AsRef<Path>>(
        &mut self,
        db_dir: D,
        wal_dir: W,
        opts: &RestoreOptions,
    ) -> Result<(), Error> {
        let _ = opts;
        check_wal_dir(db_dir.as_ref(), wal_dir.as_ref())?;
        Ok(self.inner.restore_db_from_latest_backup(db_dir)?)
    }

    /// Restores backup `backup_id` into `db_dir` (`wal_dir` as for
    /// [`restore_from_latest_backup`](Self::restore_from_latest_backup)).
    pub fn restore_from_backup<D: AsRef<Path>, W: AsRef<Path>>(
        &mut self,
        db_dir: D,
        wal_dir: W,
        opts: &RestoreOptions,
        backup_id: u32,
    ) -> Result<(), Error> {
        let _ = opts;
        check_wal_dir(db_dir.as_ref(), wal_dir.as_ref())?;
        Ok(self.inner.restore_db_from_backup(backup_id, db_dir)?)
    }
}

fn check_wal_dir(db_dir: &Path, wal_dir: &Path) -> Result<(), Error> {
    if db_dir == wal_dir {
        Ok(())
    } else {
        Err(Error::not_supported(
            "a WAL directory apart from the database's (siftdb keeps its WAL inside it)",
        ))
    }
}
