//! Flushing immutable memtables to L0 tables, on a background thread.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use siftdb_sstable::{Table, TableBuilder, TableReadOptions};

use crate::db::DbInner;
use crate::error::{Error, Result};
use crate::filter_plan::FilterPlan;
use crate::fs::names;
use crate::memtable::Memtable;
use crate::version::TableFile;
use crate::version_edit::{FileMeta, VersionEdit};

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
    let mut warned = [false; crate::options::MAX_LEVELS];
    loop {
        let next = {
            let mut state = db.state.lock();
            loop {
                if db.shutting_down.load(Ordering::Acquire) {
                    return;
                }
                if state.bg_error.is_none() {
                    if let Some(mem) = state.imm.first() {
                        break Arc::clone(mem);
                    }
                }
                db.work_available
                    .wait_for(&mut state, Duration::from_millis(200));
                drop(state);
                warn_on_overfull_filters(db, &mut warned);
                state = db.state.lock();
            }
        };
        if let Err(e) = flush_memtable(db, &next) {
            let mut state = db.state.lock();
            state.bg_error.get_or_insert(format!("flush failed: {e}"));
            tracing::error!("siftdb: flush failed, writes stopped: {e}");
            db.state_changed.notify_all();
        }
    }
}

/// Logs (once per episode) every level whose measured FPR exceeds twice the expected one:
/// silent over-fill is the most common way filters fail in production.
fn warn_on_overfull_filters(db: &DbInner, warned: &mut [bool]) {
    let version = db.versions.current();
    let reports = crate::properties::level_reports(db, &version);
    let overfull = crate::properties::overfull_levels(&reports);
    for (level, flag) in warned.iter_mut().enumerate() {
        match overfull.iter().find(|o| o.0 == level) {
            Some(&(_, measured, expected)) if !*flag => {
                tracing::warn!(
                    "siftdb: L{level} filters measure FPR {measured:.5}, over twice the expected {expected:.5}: over-full or mismatched filters"
                );
                *flag = true;
            }
            Some(_) => {}
            None => *flag = false,
        }
    }
}

/// Switches the memtable (if it holds anything) and waits until every memtable frozen so far
/// is in a table.
pub(crate) fn flush_and_wait(db: &Arc<DbInner>) -> Result<()> {
    db.check_open()?;
    let target = db.writes.exclusive(|| -> Result<Option<u64>> {
        let mut state = db.state.lock();
        if let Some(e) = &state.bg_error {
            return Err(Error::Background(e.clone()));
        }
        if !state.mem.is_empty() {
            db.switch_memtable(&mut state)?;
        }
        Ok(state.imm.last().map(|m| m.wal_number()))
    })?;
    let Some(target) = target else { return Ok(()) };
    let mut state = db.state.lock();
    loop {
        if let Some(e) = &state.bg_error {
            return Err(Error::Background(e.clone()));
        }
        if state.imm.first().is_none_or(|m| m.wal_number() > target) {
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

/// Writes `mem` to a new L0 table, records it in the manifest and retires the memtable and the
/// WALs it no longer needs.
fn flush_memtable(db: &Arc<DbInner>, mem: &Arc<Memtable>) -> Result<()> {
    let number = db.versions.new_output();
    let plan = crate::filter_plan::for_flush(&db.options, &db.versions.current(), mem);
    let file = match write_l0_table(db, mem, number, plan) {
        Ok(file) => file,
        Err(e) => {
            db.versions.release_outputs(&[number]);
            return Err(e);
        }
    };
    if file.is_none() {
        db.versions.release_outputs(&[number]);
    }
    // The memtable after this one (`imm[0]`, the oldest) still needs its WAL; this one's is
    // obsolete once the edit is durable.
    let next_log = {
        let state = db.state.lock();
        state
            .imm
            .get(1)
            .map_or(state.mem.wal_number(), |m| m.wal_number())
    };
    let mut edit = VersionEdit {
        log_number: Some(next_log),
        ..VersionEdit::default()
    };
    if let Some(file) = &file {
        edit.added.push((0, file.meta.clone()));
    }
    db.versions
        .log_and_apply(db, edit, file.as_slice(), |state| {
            state.imm.retain(|m| !Arc::ptr_eq(m, mem));
            // Counted where the flush becomes visible: a caller of `Db::flush` wakes once the
            // memtable has left `imm`, and must see the flush in `Db::stats`.
            db.counters.flushes.fetch_add(1, Ordering::Relaxed);
        })?;
    crate::recovery::delete_obsolete_files(db);
    Ok(())
}

/// Builds the table of a memtable (none if it is empty) and opens it for L0 reads.
pub(crate) fn write_l0_table(
    db: &DbInner,
    mem: &Memtable,
    number: u64,
    plan: FilterPlan,
) -> Result<Option<Arc<TableFile>>> {
    if mem.is_empty() {
        return Ok(None);
    }
    let path = names::table(&db.dir, number);
    let mut file = db.fs.create(&path)?;
    let options = db.options.table_build_options(plan.build_level, plan.spec);
    let mut builder = TableBuilder::new(&mut file, options);
    for (key, value) in mem.entries() {
        builder.add(key.encoded(), &value)?;
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
    Ok(Some(open_table(db, 0, &file_meta)?))
}

/// Opens a live table of `level` (L0 tables pin their filter and index blocks if configured).
pub(crate) fn open_table(db: &DbInner, level: usize, meta: &FileMeta) -> Result<Arc<TableFile>> {
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
    let options = TableReadOptions {
        key_hasher: db.options.filter_hasher,
        prefix_extractor: db.options.prefix_extractor.clone(),
        pin_filter_and_index: level == 0 && db.options.pin_l0_filter_and_index_blocks_in_cache,
        stats: Some(Arc::clone(&db.counters.reads)),
    };
    let name = path.display().to_string();
    let table = Table::open(file, meta.number, name, Arc::clone(&db.cache), options)?;
    Ok(Arc::new(TableFile::new(meta.clone(), Arc::new(table))))
}
