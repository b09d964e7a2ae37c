//! The memtables of every keyspace and the write-ahead log they share, under one lock, with the
//! condition variables that waiters on them sleep on. The trees' metadata (versions, file
//! numbers, the manifest) belongs to the [`VersionSet`](super::version_set::VersionSet).
//!
//! Per keyspace id the state holds its `KeyspaceMemtables` (the active memtable and the immutable ones
//! waiting for flush) beside the one WAL every keyspace appends to, the numbers of the live WALs
//! and the sequence each starts at, and the first background error. A batch may write several
//! keyspaces: each op carries its keyspace id in the WAL record, so the batch is atomic across
//! them; the write leader resolves the ids here. A WAL is obsolete once it is older than every
//! keyspace's log number in the manifest and than every live memtable's oldest WAL (the latter
//! is `min_live_wal`). Lookups and scans never take this lock: they load a tree's published
//! view.

use std::collections::BTreeMap;
use std::sync::Arc;

use std::time::Duration;

use parking_lot::{Condvar, Mutex, MutexGuard};

use crate::base::error::{BackgroundError, BackgroundJob, Error, Result};
use crate::base::event_listener::WriteStallCondition::{self, Normal, Stopped};
use crate::base::event_listener::{BackgroundErrorInfo, WriteStallCause, WriteStallInfo};
use crate::base::wal::writer::LogWriter;
use crate::core::events::{Event, Events};
use crate::core::keyspace_tree::{KeyspaceMemtables, KeyspaceTree};
use crate::core::lock_order::{Rank, Ranked};

/// What the state lock guards (see the module documentation).
pub(crate) struct DbState {
    /// Per keyspace id (0 = "default" first), its memtables.
    pub trees: BTreeMap<u32, KeyspaceMemtables>,
    /// The WAL being appended to (taken out by the write leader while it appends).
    pub wal: Option<LogWriter>,
    /// The number of that WAL.
    pub wal_number: u64,
    /// Sizes of the earlier WALs (by number) that may still be live, for
    /// `Options::max_total_wal_size`.
    pub closed_wal_sizes: BTreeMap<u64, u64>,
    /// The sequence number the first record of each WAL that may still be live has (its
    /// `last_sequence + 1` when it was created), for the manifest edits that name it.
    pub wal_starts: BTreeMap<u64, u64>,
    /// First background error; writes fail once it is set.
    pub bg_error: Option<BackgroundError>,
    /// Where a new background error is announced (`on_background_error`), and a change of the
    /// write stall condition.
    pub events: Events,
    /// The stall writes are in now, if they wait (`on_stall_conditions_changed`): its cause and
    /// keyspace.
    pub stall: Option<Stall>,
    /// While writes are slowed down: when the bytes let through so far would all be written
    /// at `Options::delayed_write_rate` (the write path's pacing; `None` at full speed).
    pub delayed_until: Option<std::time::Instant>,
}

impl DbState {
    /// A state holding `trees`, before any WAL is open.
    pub(crate) fn new(trees: BTreeMap<u32, KeyspaceMemtables>) -> DbState {
        DbState {
            trees,
            wal: None,
            wal_number: 0,
            closed_wal_sizes: BTreeMap::new(),
            wal_starts: BTreeMap::new(),
            bg_error: None,
            events: Events::default(),
            stall: None,
            delayed_until: None,
        }
    }

    /// Bytes of every keyspace's memtables together: (active, frozen). Read under the state
    /// lock, so it is one instant's figure (the memory budget and the database-wide property
    /// rely on that).
    pub(crate) fn memtable_bytes(&self) -> (usize, usize) {
        let active = self.trees.values().map(|t| t.mem.approximate_size()).sum();
        let frozen = self
            .trees
            .values()
            .flat_map(|t| &t.imm)
            .map(|m| m.approximate_size())
            .sum();
        (active, frozen)
    }

    /// Heap bytes of every keyspace's active and immutable memtables
    /// ([`Memtable::memory_usage`](crate::core::memtable::Memtable::memory_usage)).
    pub(crate) fn memtables_memory(&self) -> usize {
        self.trees
            .values()
            .flat_map(|t| std::iter::once(&t.mem).chain(&t.imm))
            .map(|m| m.memory_usage())
            .sum()
    }

    /// The oldest WAL any keyspace still needs: every older one can be deleted.
    pub(crate) fn min_live_wal(&self) -> u64 {
        self.trees
            .values()
            .map(KeyspaceMemtables::oldest_wal)
            .min()
            .unwrap_or(self.wal_number)
    }

    /// Manifest edit entries saying where WALs `numbers` start (those still known).
    pub(crate) fn wal_starts_of(&self, numbers: impl IntoIterator<Item = u64>) -> Vec<(u64, u64)> {
        let mut starts: Vec<(u64, u64)> = numbers
            .into_iter()
            .filter_map(|n| self.wal_starts.get(&n).map(|s| (n, *s)))
            .collect();
        starts.sort_unstable();
        starts.dedup();
        starts
    }

    /// The live tree named `name`.
    pub(crate) fn tree_named(&self, name: &str) -> Option<Arc<KeyspaceTree>> {
        self.trees
            .values()
            .find(|t| &*t.tree.name == name)
            .map(|t| Arc::clone(&t.tree))
    }

    /// Every live tree, "default" first.
    pub(crate) fn all_trees(&self) -> Vec<Arc<KeyspaceTree>> {
        self.trees.values().map(|t| Arc::clone(&t.tree)).collect()
    }

    /// Fails with the background error once one is set.
    pub(crate) fn check_background(&self) -> Result<()> {
        match &self.bg_error {
            Some(e) => Err(Error::Background(e.clone())),
            None => Ok(()),
        }
    }

    /// Records `why` as the background error unless one is set already (the first one wins).
    pub(crate) fn set_background_error(&mut self, why: impl FnOnce() -> BackgroundError) {
        if self.bg_error.is_some() {
            return;
        }
        let error = why();
        self.events.emit(|| {
            Event::BackgroundError(BackgroundErrorInfo {
                error: error.clone(),
            })
        });
        self.bg_error = Some(error);
    }

    /// Records the stall writes are in (`None`: they go through), announcing a change
    /// (`on_stall_conditions_changed`).
    pub(crate) fn set_stall(&mut self, stall: Option<Stall>) {
        if self.stall == stall {
            return;
        }
        let previous = self.stall.map_or(Normal, |s| s.condition);
        let Some(Stall {
            cause, keyspace, ..
        }) = stall.or(self.stall)
        else {
            return;
        };
        let condition = stall.map_or(Normal, |s| s.condition);
        self.stall = stall;
        let keyspace = keyspace
            .and_then(|id| self.trees.get(&id))
            .map(|t| t.tree.name.to_string());
        self.events.emit(|| {
            Event::StallConditionsChanged(WriteStallInfo {
                keyspace,
                cause,
                condition,
                previous,
            })
        });
    }
}

/// A stall of writes: stopped or slowed down, why, and the keyspace that causes it (`None`:
/// all of them, the memory budget).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stall {
    pub condition: WriteStallCondition,
    pub cause: WriteStallCause,
    pub keyspace: Option<u32>,
}

impl Stall {
    /// Writes stop for `cause`.
    pub(crate) fn stopped(cause: WriteStallCause, keyspace: Option<u32>) -> Stall {
        Stall {
            condition: Stopped,
            cause,
            keyspace,
        }
    }
}

/// Records a background error when dropped by a panicking thread (see
/// [`StateCell::fail_on_panic`]).
pub(crate) struct FailOnPanic<'a> {
    cell: &'a StateCell,
    job: BackgroundJob,
    what: &'static str,
}

impl Drop for FailOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let (job, what) = (self.job, self.what);
            self.cell.fail(|| BackgroundError::described(job, what));
        }
    }
}

/// The state lock held (see `core/lock_order.rs`: taken after the manifest, before the files).
pub(crate) type StateGuard<'a> = Ranked<MutexGuard<'a, DbState>>;

/// The state lock and its condition variables.
pub(crate) struct StateCell {
    state: Mutex<DbState>,
    /// Signalled when memtables are flushed, a version is installed or a background error occurs.
    changed: Condvar,
    /// Signalled when there is background work.
    work: Condvar,
    /// Test pause points (`Db::set_sync_point`). Kept here rather than in `Shared` because the
    /// version set holds this cell and not `Shared`, and it has a window of its own to pause in.
    #[cfg(feature = "test-hooks")]
    sync_points: crate::base::sync_point::SyncPoints,
}

impl StateCell {
    pub(crate) fn new(state: DbState) -> StateCell {
        StateCell {
            state: Mutex::new(state),
            changed: Condvar::new(),
            work: Condvar::new(),
            #[cfg(feature = "test-hooks")]
            sync_points: Default::default(),
        }
    }

    /// The test pause points of this database.
    #[cfg(feature = "test-hooks")]
    pub(crate) fn sync_points(&self) -> &crate::base::sync_point::SyncPoints {
        &self.sync_points
    }

    /// Takes the state lock.
    pub(crate) fn lock(&self) -> StateGuard<'_> {
        Ranked::take(Rank::State, || self.state.lock())
    }

    /// Waits (the lock released meanwhile) until the state changes.
    pub(crate) fn wait_changed(&self, guard: &mut StateGuard<'_>) {
        self.changed.wait(guard.guard_mut());
    }

    /// Waits (the lock released meanwhile) until the state changes or `timeout` passes.
    pub(crate) fn wait_changed_for(&self, guard: &mut StateGuard<'_>, timeout: Duration) {
        self.changed.wait_for(guard.guard_mut(), timeout);
    }

    /// Waits (the lock released meanwhile) until there is background work or `timeout` passes.
    pub(crate) fn wait_work_for(&self, guard: &mut StateGuard<'_>, timeout: Duration) {
        self.work.wait_for(guard.guard_mut(), timeout);
    }

    /// The condition variable of state changes (flushes, installs, background errors).
    pub(crate) fn changed(&self) -> &Condvar {
        &self.changed
    }

    /// The condition variable the background threads wait on for work.
    pub(crate) fn work(&self) -> &Condvar {
        &self.work
    }

    /// Wakes every waiter of both kinds.
    pub(crate) fn notify_all(&self) {
        self.changed.notify_all();
        self.work.notify_all();
    }

    /// A guard for a step that changes shared state outside the state lock (a WAL append with
    /// the WAL taken out, a manifest append): if the step panics (a user callback's or the file
    /// system's panic), writes stop with a background error of `job` saying `what`, instead of
    /// later callers meeting the half-done step. The caller must not hold the state lock.
    pub(crate) fn fail_on_panic(&self, job: BackgroundJob, what: &'static str) -> FailOnPanic<'_> {
        FailOnPanic {
            cell: self,
            job,
            what,
        }
    }

    /// Records a background error (the first wins) and wakes the waiters that must see it.
    pub(crate) fn fail(&self, why: impl FnOnce() -> BackgroundError) {
        let mut state = self.lock();
        state.set_background_error(why);
        self.changed.notify_all();
    }
}
