//! Table files as the jobs write and open them: a memtable written as an L0 table, and a live
//! table opened for reads (through the block cache, with the false-positive memo).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use siftdb_sstable::{Table, TableBuilder, TableReadOptions};

use crate::base::error::{Error, Result};
use crate::base::fs::names;
use crate::base::options::Options;
use crate::base::version_edit::FileMeta;
use crate::core::filter_plan::FilterPlan;
use crate::core::memtable::Memtable;
use crate::core::shared::Shared;
use crate::core::version::TableFile;

/// Builds the table of a memtable (none if it is empty) and opens it for L0 reads.
pub(crate) fn write_l0_table(
    db: &Shared,
    options: &Options,
    mem: &Memtable,
    number: u64,
    plan: FilterPlan,
) -> Result<Option<Arc<TableFile>>> {
    if mem.is_empty() {
        return Ok(None);
    }
    let path = names::table(db.dir(), number);
    let mut file = crate::base::rate_limiter::paced(
        db.fs().create(&path)?,
        db.options().rate_limiter.as_ref(),
        crate::base::rate_limiter::IoPriority::High,
    );
    let build = options.table_build_options(plan.build_level, plan.filter);
    let mut builder = TableBuilder::new(&mut file, build);
    mem.try_for_each_entry(|key, value| builder.add(key, value))?;
    if let Some(tombstones) = mem.range_tombstones() {
        builder.set_range_tombstones((*tombstones).clone());
    }
    let meta = builder.finish()?;
    file.sync()?;
    drop(file);
    // The table's directory entry must be durable before the manifest names it.
    db.fs().sync_dir(db.dir())?;
    db.counters()
        .flush_bytes
        .fetch_add(meta.file_size, Ordering::Relaxed);
    db.counters()
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
        filter_cap_millibits: None,
    };
    Ok(Some(open_table(db, options, 0, &file_meta)?))
}

/// Opens a live table of `level` of a tree with `options` (L0 tables pin their filter and index
/// blocks if configured).
pub(crate) fn open_table(
    db: &Shared,
    options: &Options,
    level: usize,
    meta: &FileMeta,
) -> Result<Arc<TableFile>> {
    let path = names::table(db.dir(), meta.number);
    let file = db.files().open_table_file(path.clone()).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Error::corruption(format!("live table {} is missing", path.display()))
        } else {
            Error::Io(e)
        }
    })?;
    let read = TableReadOptions {
        key_hasher: db.options().filter_hasher,
        prefix_extractor: options.prefix_extractor.clone(),
        pin_filter_and_index: level == 0 && options.pin_l0_filter_and_index_blocks_in_cache,
        stats: Some(Arc::clone(&db.counters().reads)),
        false_positive_memo: db.memo().cloned(),
        filter_bits_cap: meta.filter_bits_cap(),
    };
    let name = path.display().to_string();
    let table = Table::open(file, meta.number, name, Arc::clone(db.cache()), read)?;
    let live = db.live_tables().register(meta.number);
    Ok(Arc::new(
        TableFile::new(meta.clone(), Arc::new(table)).kept_alive_by(live),
    ))
}
