//! Flushing immutable memtables to L0 tables, on a background thread.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use siftdb_sstable::{Table, TableBuilder, TableReadOptions};

use crate::api::db::{DbInner, DbState};
use crate::base::error::{Error, Result};
use crate::core::filter_plan::FilterPlan;
use crate::base::fs::names;
use crate::core::memtable::Memtable;
use crate::base::options::Options;
use crate::core::tree::Tree;
use crate::core::version::TableFile;
use crate::base::version_edit::{FileMeta, VersionEdit};

/// Starts the background thread that flushes immutable memtables.
pub(crate) fn start_background(inner: &Arc<DbInner>) {
    *inner.background.lock() = spawn_background(inner, "siftdb-flush", background_loop);
}

/// Spawns a named background thread running `body` and records its handle in `slot` (joined
/// at shutdown). If the thread cannot start, writes stop with a background error.
pub(crate) fn spawn_background(
    inner: &Arc<DbInner>,
    name: &str,
    body: fn(&Arc<DbInner>),
) -> Option<std::thread::JoinHandle<()>> {
    let db = Arc::clone(inner);
    match std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || body(&db))
    {
        Ok(handle) => Some(handle),
        Err(e) => {
            inner.state.lock().bg_error = Some(format!("cannot start thread {name}: {e}"));
            inner.state_changed.notify_all();
            None
        }
    }
}

fn background_loop(db: &Arc<DbInner>) {
    let mut warned = std::collections::HashMap::new();
    loop {
        let (tree, next) = {
            let mut state = db.state.lock();
            loop {
                if db.shutting_down.load(Ordering::Acquire) {
                    return;
                }
                if state.bg_error.is_none() {
                    if let Some(next) = oldest_immutable(&state) {
                        break next;
                    }
                }
                db.work_available
                    .wait_for(&mut state, Duration::from_millis(200));
                drop(state);
                warn_on_overfull_filters(db, &mut warned);
                state = db.state.lock();
            }
        };
        match flush_memtable(db, &tree, &next) {
            Ok(()) => {}
            // A dropped keyspace's memtable has nowhere to go: it went with the keyspace.
            Err(Error::KeyspaceDropped(_)) => {}
            Err(e) => {
                let mut state = db.state.lock();
                state.bg_error.get_or_insert(format!("flush failed: {e}"));
                tracing::error!("siftdb: flush failed, writes stopped: {e}");
                db.state_changed.notify_all();
            }
        }
    }
}

/// The immutable memtable to flush next: of all keyspaces', the one in the oldest WAL (its
/// flush is what lets that WAL go).
fn oldest_immutable(state: &DbState) -> Option<(Arc<Tree>, Arc<Memtable>)> {
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
    db: &DbInner,
    warned: &mut std::collections::HashMap<(u32, usize), bool>,
) {
    for (tree, version) in db.versions.all_current() {
        let reports = crate::paths::properties::level_reports(&tree, &version);
        let overfull = crate::paths::properties::overfull_levels(&reports);
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

/// Switches `tree`'s memtable (if it holds anything) and waits until every memtable of the tree
/// frozen so far is in a table.
pub(crate) fn flush_and_wait(db: &Arc<DbInner>, tree: &Tree) -> Result<()> {
    db.check_open()?;
    db.check_writable()?;
    let target = db.writes.exclusive(|| -> Result<Option<u64>> {
        let mut state = db.state.lock();
        if let Some(e) = &state.bg_error {
            return Err(Error::Background(e.clone()));
        }
        let t = state
            .trees
            .get(&tree.id)
            .ok_or_else(|| Error::KeyspaceDropped(tree.name.clone()))?;
        if !t.mem.is_empty() {
            db.switch_memtables(&mut state, &[tree.id])?;
        }
        Ok(state
            .trees
            .get(&tree.id)
            .and_then(|t| t.imm.last())
            .map(|m| m.wal_number()))
    })?;
    let Some(target) = target else { return Ok(()) };
    let mut state = db.state.lock();
    loop {
        if let Some(e) = &state.bg_error {
            return Err(Error::Background(e.clone()));
        }
        let Some(t) = state.trees.get(&tree.id) else {
            return Err(Error::KeyspaceDropped(tree.name.clone()));
        };
        if t.imm.first().is_none_or(|m| m.wal_number() > target) {
            return Ok(());
        }
        if db.shutting_down.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        db.work_available.notify_all();
        db.state_changed
            .wait_for(&mut state, Duration::from_millis(200));
    }
}

/// Writes `mem` to a new L0 table of `tree`, records it in the manifest and retires the memtable
/// and the WALs it no longer needs.
fn flush_memtable(db: &Arc<DbInner>, tree: &Tree, mem: &Arc<Memtable>) -> Result<()> {
    let number = db.versions.new_output();
    let plan = crate::core::filter_plan::for_flush(&tree.options, &db.versions.current(tree), mem);
    let file = match write_l0_table(db, &tree.options, mem, number, plan) {
        Ok(file) => file,
        Err(e) => {
            db.versions.release_outputs(&[number]);
            return Err(e);
        }
    };
    match &file {
        None => db.versions.release_outputs(&[number]),
        Some(file) => file.heat.start(tree.lookups.now(), 1.0),
    }
    let mut edit = log_numbers_after_flush(db, tree);
    if let Some(file) = &file {
        edit.added.push((0, file.meta.clone()));
    }
    let installed = db
        .versions
        .log_and_apply(db, tree, edit, file.as_slice(), |state| {
            if let Some(t) = state.trees.get_mut(&tree.id) {
                t.imm.retain(|m| !Arc::ptr_eq(m, mem));
            }
            // Counted where the flush becomes visible: a caller of `Db::flush` wakes once the
            // memtable has left `imm`, and must see the flush in `Db::stats`.
            db.counters.flushes.fetch_add(1, Ordering::Relaxed);
        });
    if installed.is_err() {
        // The table is an orphan (its keyspace was dropped) — or, after a failed manifest
        // append, possibly named by the manifest, which `delete_obsolete_files` then respects
        // by deleting nothing until reopen.
        db.versions.release_outputs(&[number]);
    }
    crate::paths::recovery::delete_obsolete_files(db);
    installed
}

/// The log numbers a flush of `tree`'s oldest memtable records: the tree's own — the memtable
/// after it (`imm[1]`, or the active one) still needs its WAL, the flushed one's is obsolete
/// once the edit is durable — and those of idle keyspaces (nothing in memory), so that they do
/// not keep old WALs alive.
fn log_numbers_after_flush(db: &DbInner, tree: &Tree) -> VersionEdit {
    let state = db.state.lock();
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

/// Builds the table of a memtable (none if it is empty) and opens it for L0 reads.
pub(crate) fn write_l0_table(
    db: &DbInner,
    options: &Options,
    mem: &Memtable,
    number: u64,
    plan: FilterPlan,
) -> Result<Option<Arc<TableFile>>> {
    if mem.is_empty() {
        return Ok(None);
    }
    let path = names::table(&db.dir, number);
    let mut file = db.fs.create(&path)?;
    let build = options.table_build_options(plan.build_level, plan.filter);
    let mut builder = TableBuilder::new(&mut file, build);
    for (key, value) in mem.entries() {
        builder.add(key.encoded(), &value)?;
    }
    if let Some(tombstones) = mem.range_tombstones() {
        builder.set_range_tombstones((*tombstones).clone());
    }
    let meta = builder.finish()?;
    file.sync()?;
    drop(file);
    // The table's directory entry must be durable before the manifest names it.
    db.fs.sync_dir(&db.dir)?;
    db.counters
        .flush_bytes
        .fetch_add(meta.file_size, Ordering::Relaxed);
    db.counters
        .table_bytes_uncompressed
        .fetch_add(meta.uncompressed_size, Ordering::Relaxed);
    let file_meta = FileMeta {
        number,
        file_size: meta.file_size,
        smallest: siftdb_sstable::InternalKey::from_encoded(meta.properties.smallest_key.clone())
            .ok_or_else(|| {
            Error::corruption("flushed table has no smallest key".to_string())
        })?,
        largest: siftdb_sstable::InternalKey::from_encoded(meta.properties.largest_key.clone())
            .ok_or_else(|| Error::corruption("flushed table has no largest key".to_string()))?,
        entries: meta.properties.entries,
        distinct_keys: meta.properties.distinct_keys,
        filter_level: plan.level,
    };
    Ok(Some(open_table(db, options, 0, &file_meta)?))
}

/// Opens a live table of `level` of a tree with `options` (L0 tables pin their filter and index
/// blocks if configured).
pub(crate) fn open_table(
    db: &DbInner,
    options: &Options,
    level: usize,
    meta: &FileMeta,
) -> Result<Arc<TableFile>> {
    let path = names::table(&db.dir, meta.number);
    let file = db
        .fs
        .open_random(&path, db.options.read_mode)
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Error::corruption(format!("live table {} is missing", path.display()))
            } else {
                Error::Io(e)
            }
        })?;
    let read = TableReadOptions {
        key_hasher: db.options.filter_hasher,
        prefix_extractor: options.prefix_extractor.clone(),
        pin_filter_and_index: level == 0 && options.pin_l0_filter_and_index_blocks_in_cache,
        stats: Some(Arc::clone(&db.counters.reads)),
        false_positive_memo: db.memo.clone(),
    };
    let name = path.display().to_string();
    let table = Table::open(file, meta.number, name, Arc::clone(&db.cache), read)?;
    Ok(Arc::new(TableFile::new(meta.clone(), Arc::new(table))))
}
