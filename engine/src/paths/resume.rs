//! `Db::resume`: clearing a recoverable background error (RocksDB's `DB::Resume`).
//!
//! A background error stops writes because the database can no longer promise what it
//! acknowledges. When its cause was I/O (no space left, an I/O error writing a job's output or a
//! log), the disk may work again later. Resuming puts back what the failure left uncertain,
//! with the write path held so no write lands in between:
//! 1. a manifest whose append failed ends in an unknown tail: a new manifest holding every
//!    keyspace's current version replaces it;
//! 2. a WAL whose write, sync or switch failed may have lost unsynced pages (a failed `fsync`
//!    can drop them): every memtable is frozen into a new WAL, the old one is dropped without
//!    another sync (that sync could succeed without the lost pages), and resume waits until the
//!    frozen memtables are in tables, so no later write depends on the damaged log;
//! 3. the error is cleared and the background jobs retry (a failed flush waits for its retry);
//! 4. when no flush recorded it, a manifest edit says where the new WAL starts and moves idle
//!    keyspaces' log numbers to it: the failed group's sequence numbers are in no log, and
//!    recovery would read the gap as missing records.
//!
//! Errors that are not I/O (a panic in a callback, corruption) are returned as they are: the
//! job would fail the same way again.

use std::sync::Arc;
use std::time::Duration;

use crate::base::error::{BackgroundError, BackgroundJob, Error, Result};
use crate::base::event_listener::FlushReason;
use crate::base::version_edit::VersionEdit;
use crate::core::state::StateGuard;
use crate::paths::engine::Engine;

impl Engine {
    /// See the module documentation. Returns `Ok` without a background error.
    pub(crate) fn resume(&self) -> Result<()> {
        self.shared.check_open()?;
        self.shared.check_writable()?;
        // A flush under way finishes first: one that began on a full disk, and failed only
        // after the error below is cleared, would stop writes again, and `resume` would report
        // a failure the disk no longer has. None starts while the error stands.
        drop(self.shared.flush_role());
        // Background compactions under way finish first (one that started on the full disk
        // would fail after the error is cleared and stop writes again), and none starts until
        // the error is cleared.
        let resumed = {
            let _no_compactions = self.compactions.exclusive();
            self.writes.exclusive(|| self.resume_holding_writes())
        };
        let Some(failed) = resumed? else {
            return Ok(());
        };
        // A failed compaction is retried too, and waited for (without holding up writes): a
        // disk still too full for it stops writes again, and `resume` says so.
        if failed == BackgroundJob::Compaction {
            self.wait_for_compaction()?;
        }
        Ok(())
    }

    /// Steps 1-3 of the module documentation; returns the job that had failed (`None`: no
    /// background error).
    fn resume_holding_writes(&self) -> Result<Option<BackgroundJob>> {
        let state_cell = self.shared.state();
        let Some(error) = state_cell.lock().bg_error.clone() else {
            return Ok(None);
        };
        if error.io_kind().is_none() {
            return Err(Error::Background(error));
        }
        let starts = state_cell.lock().wal_starts.clone();
        self.shared
            .versions()
            .roll_failed_manifest(|log| starts.get(&log).copied())?;
        let wal_failed = matches!(
            error.job(),
            BackgroundJob::WalWrite | BackgroundJob::WalSync | BackgroundJob::WalSwitch
        );
        let mut state = state_cell.lock();
        state.bg_error = None;
        if wal_failed || state.wal.is_none() {
            self.replace_wal(&mut state)?;
        }
        state_cell.notify_all();
        if self.shared.stepped() {
            // No flush thread to wait for (`Db::open_stepped`): flush them here.
            drop(state);
            while crate::jobs::flush::flush_next(&self.shared)? {}
        } else {
            self.wait_for_frozen_memtables(&mut state)?;
            drop(state);
        }
        self.record_new_wal()?;
        Ok(Some(error.job()))
    }

    /// Records in the manifest that every keyspace's data before the current WAL is in tables
    /// (their log numbers move to it, with where it starts), when no flush did.
    ///
    /// The failed group took sequence numbers that no log holds, so the new WAL starts past a
    /// gap. Recovery treats a gap as missing records unless the manifest says the log starts
    /// there; a flush's edit says so, but with nothing in memory (the failed write was the
    /// first) no flush runs, and the next open would refuse the logs as corrupt. The write path
    /// is held: no memtable changes until this returns, and only keyspaces with nothing in
    /// memory (active or frozen) move their log numbers (after a WAL failure, all of them).
    fn record_new_wal(&self) -> Result<()> {
        let (tree, edit) = {
            let state = self.shared.state().lock();
            let wal = state.wal_number;
            if self
                .shared
                .versions()
                .min_log_number()
                .is_none_or(|m| m >= wal)
            {
                return Ok(());
            }
            let idle: Vec<(u32, u64)> = state
                .trees
                .iter()
                .filter(|(_, t)| t.imm.is_empty() && t.mem.is_empty())
                .map(|(id, t)| (*id, t.mem.wal_number()))
                .collect();
            let Some(tree) = state.trees.values().next().map(|t| Arc::clone(&t.tree)) else {
                return Ok(());
            };
            let edit = VersionEdit {
                wal_starts: state.wal_starts_of(idle.iter().map(|i| i.1)),
                other_log_numbers: idle,
                ..VersionEdit::default()
            };
            (tree, edit)
        };
        self.shared
            .versions()
            .log_and_apply(&tree, edit, &[], |_| {})
            .inspect_err(|e| {
                self.shared
                    .state()
                    .lock()
                    .set_background_error(|| BackgroundError::new(BackgroundJob::ManifestWrite, e));
            })
    }

    /// Freezes every memtable that holds anything into a new WAL, dropping the old log without
    /// syncing it.
    fn replace_wal(&self, state: &mut StateGuard<'_>) -> Result<()> {
        drop(state.wal.take());
        self.shared.closed_wals().discard();
        let ids: Vec<u32> = state
            .trees
            .iter()
            .filter(|(_, t)| !t.mem.is_empty())
            .map(|(id, _)| *id)
            .collect();
        self.switch_memtables(state, &ids, FlushReason::ErrorRecovery)
            .inspect_err(|e| {
                state.set_background_error(|| BackgroundError::new(BackgroundJob::WalSwitch, e));
            })
    }

    /// Waits until every memtable frozen so far is in a table, or a background error (the
    /// retried job failing again) or shutdown ends the wait.
    fn wait_for_frozen_memtables(&self, state: &mut StateGuard<'_>) -> Result<()> {
        loop {
            state.check_background()?;
            if state.trees.values().all(|t| t.imm.is_empty()) {
                return Ok(());
            }
            if self.shared.is_shutting_down() {
                return Err(Error::Closed);
            }
            self.shared.state().work().notify_all();
            self.shared
                .state()
                .wait_changed_for(state, Duration::from_millis(100));
        }
    }
}
