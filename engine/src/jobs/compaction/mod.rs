//! Compaction: the background threads and `wait_for_compaction` (`compact_range` is in
//! `paths/manual_compaction.rs`). What one job does — prepare, write (or move, or drop), install —
//! is in `job.rs`; its output tables are cut in `sink.rs` where `cuts.rs` says, and adaptive
//! filters' heat is mapped in `heat_map.rs`.
//!
//! `Options::compaction_threads()` threads (`siftdb-compact-<i>`; `max_background_jobs - 1`, at
//! least one, unless `max_background_compactions` overrides it) wake after every version install
//! and every 200 ms, and run `compact_next` until nothing is due. `compact_next` asks
//! `VersionSet::pick_compaction`, which picks with the tree's style (`siftdb_compaction`'s
//! leveled, universal or FIFO picker; keyspaces in turn) and reserves the pick's input files and
//! the key range it writes into its output level in the same critical section. The pickers skip
//! reserved files, leave them out of their level's score and never write a range into a level
//! another job is writing into: jobs side by side never share an input, and their outputs never
//! overlap inside a sorted level. The reservation goes when the job is dropped, however it ends.
//!
//! Background jobs hold the compaction lock (`Compactions`) shared; `compact_range`,
//! `delete_files_in_range`, ingestion and `Db::resume` hold it exclusively and so run alone.
//! `wait_for_compaction` wakes the threads and waits until no pick is due and none runs; it runs
//! no job itself, so at most `compaction_threads()` ever run
//! (`Stats::compactions_peak_concurrency`).
//! In stepped mode (`Db::open_stepped`) there are no threads: `Db::step_compaction` calls
//! `compact_next`, and `wait_for_compaction` compacts inline until nothing is due.
//!
//! A job abandoned in the user's compaction filter (`Error::CompactionFilter`) loses nothing and
//! stops no write: it is counted, remembered for `wait_for_compaction` and stalled writers to
//! report, and retried after a pause that doubles up to 10 s. Any other failure but a dropped
//! keyspace is recorded as the background error.

mod cuts;
mod heat_map;
mod job;
mod sink;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, RwLock, RwLockWriteGuard};

use crate::base::error::{BackgroundJob, CompactionFilterError, Error, Result};
use crate::core::lock_order::{Rank, Ranked};
use crate::core::shared::Shared;
use crate::jobs::background::{contained, record_failure};
pub(crate) use job::CompactionJob;

/// What the background compactions share with the rest of the engine beyond [`Shared`].
#[derive(Default)]
pub(crate) struct Compactions {
    /// Background compactions hold it shared (they keep clear of each other through the
    /// version set's reservations); `compact_range` holds it exclusively and so runs alone.
    lock: RwLock<()>,
    /// Why the last background compaction was abandoned in the compaction filter (cleared by
    /// the next that succeeds); `wait_for_compaction` and stalled writers report it instead of
    /// waiting forever.
    filter_failure: Mutex<Option<CompactionFilterError>>,
    /// How many compaction threads may run compactions (`set_threads`): those numbered at or
    /// above it wait.
    threads_wanted: AtomicUsize,
    /// How many compaction threads were started (they run until the database closes).
    threads_started: Mutex<usize>,
}

impl Compactions {
    /// Runs alone while the guard lives: background compactions wait.
    pub(crate) fn exclusive(&self) -> Ranked<RwLockWriteGuard<'_, ()>> {
        Ranked::take(Rank::Compactions, || self.lock.write())
    }

    /// Why compactions keep failing in the user's compaction filter, if they do.
    pub(crate) fn filter_failure(&self) -> Option<CompactionFilterError> {
        self.filter_failure.lock().clone()
    }
}

/// Starts the background compaction threads (`Options::compaction_threads`).
pub(crate) fn start_background(
    shared: &Arc<Shared>,
    compactions: &Arc<Compactions>,
) -> Vec<std::thread::JoinHandle<()>> {
    set_threads(shared, compactions, shared.options().compaction_threads())
}

/// Lets `n` compaction threads run compactions (`Db::set_options`' `max_background_jobs`),
/// starting those missing; returns the new threads' handles. Threads beyond `n` finish the
/// compaction they run and then wait (they are not stopped: `n` may grow again).
pub(crate) fn set_threads(
    shared: &Arc<Shared>,
    compactions: &Arc<Compactions>,
    n: usize,
) -> Vec<std::thread::JoinHandle<()>> {
    let mut started = compactions.threads_started.lock();
    compactions.threads_wanted.store(n, Ordering::Release);
    let first = *started;
    *started = first.max(n);
    shared.state().work().notify_all();
    (first..n)
        .filter_map(|i| {
            let compactions = Arc::clone(compactions);
            crate::jobs::background::spawn(shared, &format!("siftdb-compact-{i}"), move |db| {
                background_loop(db, &compactions, i)
            })
        })
        .collect()
}

/// The longest pause between retries of a compaction whose filter keeps failing.
const MAX_FILTER_RETRY_PAUSE: Duration = Duration::from_secs(10);

/// Compaction thread `index`'s loop: runs compactions while some are due and it is among the
/// threads wanted.
fn background_loop(db: &Arc<Shared>, compactions: &Compactions, index: usize) {
    let mut filter_failures = 0u32;
    loop {
        {
            let mut state = db.state().lock();
            if db.is_shutting_down() {
                return;
            }
            db.state()
                .wait_work_for(&mut state, Duration::from_millis(200));
            if db.is_shutting_down() {
                return;
            }
            if state.bg_error.is_some() {
                continue;
            }
            if index >= compactions.threads_wanted.load(Ordering::Acquire) {
                continue; // fewer threads wanted now
            }
        }
        // Run compactions until the tree is in shape.
        loop {
            if db.is_shutting_down() {
                return;
            }
            if index >= compactions.threads_wanted.load(Ordering::Acquire) {
                break;
            }
            match compact_next(db, compactions) {
                Ok(true) => {
                    filter_failures = 0;
                    continue;
                }
                Ok(false) => break,
                // The keyspace went while its compaction ran: the outputs are orphans now.
                Err(Error::KeyspaceDropped(_)) => continue,
                // The user's filter failed: nothing was lost and writes go on; try again after
                // a pause that grows while it keeps failing.
                Err(Error::CompactionFilter(_)) => {
                    filter_failures = filter_failures.saturating_add(1);
                    let pause = Duration::from_millis(100)
                        .saturating_mul(1 << filter_failures.min(7))
                        .min(MAX_FILTER_RETRY_PAUSE);
                    pause_unless_shutting_down(db, pause);
                    break;
                }
                // Recorded as the background error by `compact_next`.
                Err(_) => break,
            }
        }
    }
}

/// One step of a compaction thread (and all of `Db::step_compaction`): picks and runs one
/// compaction if some keyspace needs one that fits beside those under way; returns whether it
/// did. A failure in the user's compaction filter is counted and remembered (nothing was lost;
/// `wait_for_compaction` and stalled writers report it); any other failure but a dropped
/// keyspace is recorded as the background error. Either way it is returned.
pub(crate) fn compact_next(db: &Arc<Shared>, compactions: &Compactions) -> Result<bool> {
    // Held until the failure is recorded: `Db::resume` takes the lock exclusively to let the
    // compactions under way finish first, and a failure recorded after it cleared the error
    // would stop writes again on a disk that has room by then.
    let _shared = Ranked::take(Rank::Compactions, || compactions.lock.read());
    match contained(db, BackgroundJob::Compaction, || maybe_compact(db)) {
        Ok(ran) => {
            if ran {
                compactions.filter_failure.lock().take();
            }
            Ok(ran)
        }
        Err(e @ Error::KeyspaceDropped(_)) => Err(e),
        Err(Error::CompactionFilter(why)) => {
            tracing::warn!("siftdb: compaction abandoned, will retry: {why}");
            db.counters()
                .compaction_filter_failures
                .fetch_add(1, Ordering::Relaxed);
            *compactions.filter_failure.lock() = Some(why.clone());
            Err(Error::CompactionFilter(why))
        }
        Err(e) => {
            record_failure(db, BackgroundJob::Compaction, &e);
            Err(e)
        }
    }
}

/// Sleeps for `pause`, waking early only to shut down.
fn pause_unless_shutting_down(db: &Shared, pause: Duration) {
    let deadline = std::time::Instant::now() + pause;
    let mut state = db.state().lock();
    while !db.is_shutting_down() {
        let now = std::time::Instant::now();
        if now >= deadline {
            return;
        }
        db.state().wait_changed_for(&mut state, deadline - now);
    }
}

/// Runs one compaction if some keyspace's tree needs one and one fits beside those under way;
/// returns whether it did.
/// The caller holds the compaction lock shared.
fn maybe_compact(db: &Arc<Shared>) -> Result<bool> {
    let Some(picked) = db.versions().pick_compaction() else {
        return Ok(false);
    };
    db.counters()
        .compactions_peak_concurrency
        .fetch_max(picked.running_now, Ordering::Relaxed);
    let job = CompactionJob::prepare(
        db,
        &picked.tree,
        picked.version,
        &picked.pick,
        Some(picked.reservation),
    );
    if let Some(job) = job {
        job.run()?;
    }
    Ok(true)
}

/// Waits until the tree needs no compaction and none is under way. The background threads do
/// the work (so at most `Options::compaction_threads()` ever run); the caller only wakes them and
/// waits. In stepped mode no thread would: the caller runs the compactions itself.
pub(crate) fn wait_for_compaction(db: &Arc<Shared>, compactions: &Compactions) -> Result<()> {
    if db.stepped() {
        return compact_until_settled(db, compactions);
    }
    let mut state = db.state().lock();
    loop {
        state.check_background()?;
        if db.is_shutting_down() {
            return Err(Error::Closed);
        }
        if db.versions().is_settled() {
            drop(state);
            // Returns with the tables the compactions made obsolete gone, as it always did.
            db.drain_deletions();
            return Ok(());
        }
        // A compaction the tree needs keeps failing in the user's filter: waiting would never
        // end.
        if let Some(why) = compactions.filter_failure() {
            return Err(Error::CompactionFilter(why));
        }
        db.state().work().notify_all();
        db.state()
            .wait_changed_for(&mut state, Duration::from_millis(50));
    }
}

/// `wait_for_compaction` in stepped mode: runs compactions on the calling thread until none is
/// due. Returns early when the only compactions due overlap ones another caller is running
/// (there is nothing this caller can run, and no thread to wait for).
fn compact_until_settled(db: &Arc<Shared>, compactions: &Compactions) -> Result<()> {
    loop {
        db.check_open()?;
        db.state().lock().check_background()?;
        if db.versions().is_settled() {
            return Ok(());
        }
        match compact_next(db, compactions) {
            Ok(true) | Err(Error::KeyspaceDropped(_)) => {}
            Ok(false) => return Ok(()),
            Err(e) => return Err(e),
        }
    }
}
