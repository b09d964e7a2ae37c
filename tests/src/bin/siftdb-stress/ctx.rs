//! What the threads of a run share: the database and its keyspaces, the expected state, the
//! locks, the counters, and the handles some operations keep between calls.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard, PoisonError};

use siftdb::backup::BackupEngine;
use siftdb::{Db, Keyspace, Options};
use siftdb_tests::FaultFs;

use crate::cli::Args;
use crate::expected::Expected;
use crate::locks::KeyLocks;
use crate::ops_admin::Scratch;
use crate::stats::Stats;
use crate::verify::Checker;

/// The shared state of a run.
pub struct Ctx<'a> {
    /// The command line.
    pub args: &'a Args,
    /// The expected state.
    pub exp: &'a Expected,
    /// The counters.
    pub stats: &'a Stats,
    /// The key locks.
    pub locks: KeyLocks,
    /// The database.
    pub db: Db,
    /// Its keyspaces, by index of `KEYSPACES`.
    pub ks: Vec<Keyspace>,
    /// The bank's keyspace (`ops_bank.rs`; no key lock).
    pub bank: Keyspace,
    /// The excise range's keyspace (`ops_excise.rs`; no key lock).
    pub excise: Keyspace,
    /// What the excise range's writers did.
    pub excise_state: crate::ops_excise::State,
    /// The claims' keyspace (`ops_claims.rs`; no key lock).
    pub claims: Keyspace,
    /// What the claimers did.
    pub claims_state: crate::ops_claims::State,
    /// The options it was opened with (checkpoints, backups and the read-only instance open
    /// with them too).
    pub options: Options,
    /// Its directory.
    pub db_path: PathBuf,
    /// Where table files to ingest, checkpoints and backups go.
    pub scratch: PathBuf,
    /// The fault-injecting file system (`--faults`).
    pub fault: Option<FaultFs>,
    /// The backup engine, once opened.
    pub backup: Mutex<Option<BackupEngine>>,
    /// The read-only instance beside the writer, once opened.
    pub secondary: Mutex<Option<Db>>,
    /// The scratch keyspace, while it exists.
    pub scratch_ks: Mutex<Option<Scratch>>,
    /// One `Db::resume` at a time.
    pub resume_lock: Mutex<()>,
    /// Names scratch files apart.
    pub unique: AtomicU64,
}

impl Ctx<'_> {
    /// The checker of reads.
    pub fn checker(&self) -> Checker<'_> {
        Checker {
            exp: self.exp,
            stats: self.stats,
            faults: self.fault.is_some(),
        }
    }

    /// A new path under the scratch directory.
    pub fn scratch_path(&self, what: &str) -> PathBuf {
        let n = self.unique.fetch_add(1, Relaxed);
        self.scratch.join(format!("{what}-{n}"))
    }

    /// Removes a scratch file or directory (on whichever file system the run uses).
    pub fn remove_tree(&self, path: &Path) {
        match &self.fault {
            Some(fs) => {
                use siftdb::fs::FileSystem;
                for p in fs.paths().into_iter().filter(|p| p.starts_with(path)) {
                    let _ = fs.remove(&p);
                }
            }
            None => {
                let _ = std::fs::remove_dir_all(path).or_else(|_| std::fs::remove_file(path));
            }
        }
    }
}

/// Locks a mutex, whatever a panicking holder left.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
