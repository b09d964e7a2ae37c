//! Flushing immutable memtables to L0 tables, on a background thread (`siftdb-flush`).
//!
//! One flush runs at a time (the flush role, `Shared::flush_role`), for the whole flush, so L0
//! tables are installed in the order their memtables were frozen. Of all keyspaces' immutable
//! memtables, the next is the one in the oldest WAL: its flush is what lets that WAL go.
//!
//! A flush, step by step (`flush_next`, the thread's loop body and all of `Db::step_flush`):
//! 1. a new output number (pending in the version set, so no cleanup deletes the file);
//! 2. the table's filter planned by `filter_plan::for_flush`: as an L0 run of its size, or, when
//!    its keys overlap no table of the tree (a sequential load whose table will move down
//!    unchanged), as a bottom-level table;
//! 3. the memtable written as an L0 table (`table_io::write_l0_table`: large values go to blob
//!    files; the file is synced, then opened, its filter and index pinned unless
//!    `pin_l0_filter_and_index_blocks_in_cache` is off), its keys added to the tree's filter
//!    index before it is installed;
//! 4. the logs closed by WAL switches synced (`core/closed_wals.rs`): the edit makes older logs
//!    obsolete for this keyspace, and a power loss must never keep the table but lose older
//!    writes of other keyspaces still in those logs;
//! 5. one edit through `VersionSet::log_and_apply`: the table added, the keyspace's new log
//!    number (the WAL of the next memtable), and the log numbers of idle keyspaces (nothing in
//!    memory), so that they do not pin old WALs. The memtable leaves the immutable list under the
//!    state lock, in the same step that installs the version;
//! 6. obsolete files deleted.
//!
//! A keyspace dropped meanwhile makes `log_and_apply` fail with `KeyspaceDropped`: the flush
//! ends quietly and its outputs are orphans, deleted as such. Any other failure is recorded as
//! the background error (writes stop until `Db::resume`). The thread also wakes every 200 ms to
//! warn, once per episode, about levels whose measured FPR is over twice the expected one.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::base::error::{BackgroundError, BackgroundJob, Error, Result};
use crate::base::event_listener::{FlushJobInfo, TableFileCreationInfo, TableFileCreationReason};
use crate::base::version_edit::VersionEdit;
use crate::core::events::{table_info, Event};
use crate::core::keyspace_tree::KeyspaceTree;
use crate::core::memtable::Memtable;
use crate::core::shared::Shared;
use crate::core::state::DbState;
use crate::core::version::TableFile;
use crate::jobs::background::{contained, record_failure};

/// Starts the background thread that flushes immutable memtables.
pub(crate) fn start_background(shared: &Arc<Shared>) -> Option<std::thread::JoinHandle<()>> {
    crate::jobs::background::spawn(shared, "siftdb-flush", background_loop)
}

fn background_loop(db: &Arc<Shared>) {
    let mut warned = std::collections::HashMap::new();
    loop {
        {
            let mut state = db.state().lock();
            loop {
                if db.is_shutting_down() {
                    return;
                }
                if state.bg_error.is_none() && oldest_immutable(&state).is_some() {
                    break;
                }
                db.state()
                    .wait_work_for(&mut state, Duration::from_millis(200));
                drop(state);
                warn_on_overfull_filters(db, &mut warned);
                state = db.state().lock();
            }
        }
        // The failure is recorded as the background error: writers and waiters see it there.
        let _ = flush_next(db);
    }
}

/// One step of the flush thread (and all of `Db::step_flush`): flushes the oldest immutable
/// memtable of any keyspace, if there is one; returns whether there was. A failure is recorded
/// as the background error (writes stop) and returned; a keyspace dropped while its memtable
/// was being flushed is no failure (the memtable went with it).
pub(crate) fn flush_next(db: &Arc<Shared>) -> Result<bool> {
    // Chosen under the flush role: a second caller (stepped mode) waits and then sees the
    // memtable gone, instead of flushing it twice.
    let _flushing = db.flush_role();
    let (tree, next) = {
        let state = db.state().lock();
        state.check_background()?;
        match oldest_immutable(&state) {
            Some(next) => next,
            None => return Ok(false),
        }
    };
    let announced = FlushAnnouncement::begin(db, &tree, &next);
    let flushed = contained(db, BackgroundJob::Flush, || {
        flush_memtable(db, &tree, &next)
    });
    announced.completed(db, &flushed);
    match flushed {
        Ok(_) => Ok(true),
        // A dropped keyspace's memtable has nowhere to go: it went with the keyspace.
        Err(Error::KeyspaceDropped(_)) => Ok(true),
        Err(e) => {
            record_failure(db, BackgroundJob::Flush, &e);
            Err(e)
        }
    }
}

/// A flush's events: `on_flush_begin` when it starts, and with its end `on_flush_completed`
/// (and `on_table_file_created` for its table).
struct FlushAnnouncement {
    info: Option<FlushJobInfo>,
    start: std::time::Instant,
}

impl FlushAnnouncement {
    /// Announces the flush of `mem`, of `tree`, beginning (if anyone listens).
    fn begin(db: &Shared, tree: &KeyspaceTree, mem: &Memtable) -> FlushAnnouncement {
        let info = db.events().listening().then(|| FlushJobInfo {
            keyspace: tree.name.to_string(),
            job_id: db.events().next_job_id(),
            reason: mem.sealed_for(),
            memtable_entries: mem.len() as u64,
            memtable_bytes: mem.approximate_size() as u64,
            table: None,
            duration: Duration::ZERO,
            error: None,
        });
        if let Some(info) = &info {
            db.events().emit(|| Event::FlushBegin(info.clone()));
        }
        FlushAnnouncement {
            info,
            start: std::time::Instant::now(),
        }
    }

    /// Announces how the flush ended: its table installed (or none needed), or `flushed`'s error.
    fn completed(self, db: &Shared, flushed: &Result<Option<Arc<TableFile>>>) {
        let Some(mut info) = self.info else {
            return;
        };
        info.duration = self.start.elapsed();
        match flushed {
            Ok(table) => {
                info.table = table.as_ref().map(|t| table_info(db.dir(), 0, &t.meta));
                if let Some(file) = &info.table {
                    let created = TableFileCreationInfo {
                        keyspace: info.keyspace.clone(),
                        job_id: info.job_id,
                        reason: TableFileCreationReason::Flush,
                        file: file.clone(),
                    };
                    db.events().emit(|| Event::TableFileCreated(created));
                }
            }
            Err(e) => info.error = Some(e.to_string()),
        }
        db.events().emit(|| Event::FlushCompleted(info));
    }
}

/// The immutable memtable to flush next: of all keyspaces', the one in the oldest WAL (its
/// flush is what lets that WAL go).
fn oldest_immutable(state: &DbState) -> Option<(Arc<KeyspaceTree>, Arc<Memtable>)> {
    state
        .trees
        .values()
        .filter_map(|t| t.imm.first().map(|m| (t, m)))
        .min_by_key(|(_, m)| m.wal_number())
        .map(|(t, m)| (Arc::clone(&t.tree), Arc::clone(m)))
}

/// Logs (once per episode) every level of every keyspace whose measured FPR exceeds twice the
/// expected one: silent over-fill is the most common way filters fail in production.
fn warn_on_overfull_filters(
    db: &Shared,
    warned: &mut std::collections::HashMap<(u32, usize), bool>,
) {
    for (tree, version) in db.versions().all_current() {
        let reports = crate::core::level_info::level_reports(&tree, &version);
        let overfull = crate::core::level_info::overfull_levels(&reports);
        for level in 0..reports.len() {
            let flag = warned.entry((tree.id, level)).or_insert(false);
            match overfull.iter().find(|o| o.0 == level) {
                Some(&(_, measured, expected)) if !*flag => {
                    tracing::warn!(
                        "siftdb: keyspace {:?} L{level} filters measure FPR {measured:.5}, over twice the expected {expected:.5}: over-full or mismatched filters",
                        tree.name
                    );
                    *flag = true;
                }
                Some(_) => {}
                None => *flag = false,
            }
        }
    }
}

/// Writes `mem` to a new L0 table of `tree`, records it in the manifest and retires the memtable
/// and the WALs it no longer needs. Returns the table installed (`None`: nothing to keep).
fn flush_memtable(
    db: &Arc<Shared>,
    tree: &KeyspaceTree,
    mem: &Arc<Memtable>,
) -> Result<Option<Arc<TableFile>>> {
    let number = db.versions().new_output();
    let plan =
        crate::core::filter_plan::for_flush(&tree.options(), &db.versions().current(tree), mem);
    let written =
        crate::jobs::table_io::write_l0_table(db, &tree.options(), tree.id, mem, number, plan);
    let flushed = match written {
        Ok(flushed) => flushed,
        Err(e) => {
            db.versions().release_outputs(&[number]);
            return Err(e);
        }
    };
    let file = flushed.as_ref().map(|f| Arc::clone(&f.table));
    match &file {
        None => db.versions().release_outputs(&[number]),
        Some(file) => {
            file.heat.start(tree.lookups.now(), 1.0);
            // Before the table is installed: a reader that sees it covered finds its keys.
            index_flushed(db, tree, mem, file);
        }
    }
    crate::base::sync_point::sync_point!(db, crate::base::sync_point::FLUSH_TABLE_WRITTEN);
    let blobs = flushed
        .as_ref()
        .map(|f| f.blobs.clone())
        .unwrap_or_default();
    let blob_numbers: Vec<u64> = blobs.iter().map(|b| b.meta.number).collect();
    let release = |db: &Shared| {
        db.versions().release_outputs(&[number]);
        db.versions().release_outputs(&blob_numbers);
    };
    let mut edit = log_numbers_after_flush(db, tree);
    // The edit makes the logs before its log numbers obsolete for this keyspace, so they must
    // be durable first: a power loss must never keep this table and lose older writes of other
    // keyspaces still in those logs (recovery relies on it; see `core/closed_wals.rs`).
    if let Err(e) = db.closed_wals().sync_all() {
        release(db);
        // A log sync failed, not the flush: `Db::resume` must drop those logs unsynced (a
        // retried `fdatasync` can succeed without the pages the failed one lost).
        let e = Error::from(e);
        record_failure(db, BackgroundJob::WalSync, &e);
        return Err(Error::Background(BackgroundError::new(
            BackgroundJob::WalSync,
            &e,
        )));
    }
    if let Some(flushed) = &flushed {
        edit.added.push((0, flushed.table.meta.clone()));
        edit.blob_files = flushed.blob_metas();
    }
    let installed =
        db.versions()
            .log_and_apply_with_blobs(tree, edit, file.as_slice(), &blobs, |state| {
                if let Some(t) = state.trees.get_mut(&tree.id) {
                    t.imm.retain(|m| !Arc::ptr_eq(m, mem));
                }
                // Counted where the flush becomes visible: a caller of `Db::flush` wakes once the
                // memtable has left `imm`, and must see the flush in `Db::stats`.
                db.counters().flushes.fetch_add(1, Ordering::Relaxed);
            });
    if let (Ok(()), Some(file)) = (&installed, &file) {
        // Again once installed: a filter index rebuild that began in between did not see it.
        index_flushed(db, tree, mem, file);
    }
    if installed.is_err() {
        // The table is an orphan (its keyspace was dropped) — or, after a failed manifest
        // append, possibly named by the manifest, which `delete_obsolete_files` then respects
        // by deleting nothing until reopen.
        release(db);
    }
    crate::jobs::obsolete::delete_obsolete_files(db);
    installed.map(|()| file)
}

/// Adds the keys of `mem`, flushed to `file`, to `tree`'s filter index (see
/// `FilterIndex::add_flushed`).
fn index_flushed(db: &Shared, tree: &KeyspaceTree, mem: &Memtable, file: &Arc<TableFile>) {
    let hasher = db.options().filter_hasher;
    tree.filter_index.add_flushed(file, |add| {
        mem.for_each_user_key(|key| add(hasher.hash(key)));
    });
}

/// The log numbers a flush of `tree`'s oldest memtable records: the tree's own — the memtable
/// after it (`imm[1]`, or the active one) still needs its WAL, the flushed one's is obsolete
/// once the edit is durable — and those of idle keyspaces (nothing in memory), so that they do
/// not keep old WALs alive.
fn log_numbers_after_flush(db: &Shared, tree: &KeyspaceTree) -> VersionEdit {
    let state = db.state().lock();
    let next_log = state.trees.get(&tree.id).map(|t| {
        t.imm
            .get(1)
            .map_or_else(|| t.mem.wal_number(), |m| m.wal_number())
    });
    let idle: Vec<(u32, u64)> = state
        .trees
        .iter()
        .filter(|(id, t)| **id != tree.id && t.imm.is_empty() && t.mem.is_empty())
        .map(|(id, t)| (*id, t.mem.wal_number()))
        .collect();
    let wal_starts = state.wal_starts_of(next_log.into_iter().chain(idle.iter().map(|i| i.1)));
    VersionEdit {
        log_number: next_log,
        other_log_numbers: idle,
        wal_starts,
        ..VersionEdit::default()
    }
}
