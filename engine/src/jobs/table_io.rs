//! Table files as the jobs write and open them: a memtable written as an L0 table, and a live
//! table opened for reads (through the block cache, with the false-positive memo).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use siftdb_sstable::{Table, TableBuilder, TableReadOptions};

use crate::base::error::{Error, Result};
use crate::base::fs::names;
use crate::base::options::Options;
use crate::base::version_edit::{BlobMeta, BlobRefs, FileMeta};
use crate::core::blob_file::BlobFile;
use crate::core::filter_plan::FilterPlan;
use crate::core::memtable::Memtable;
use crate::core::shared::Shared;
use crate::core::version::TableFile;
use crate::jobs::blob_io::{BlobRefCounter, BlobSink};

/// What a flush wrote: the L0 table, and the blob files its large values went to.
pub(crate) struct Flushed {
    /// The table, open for L0 reads.
    pub table: Arc<TableFile>,
    /// The blob files the table references, open (empty without `enable_blob_files`).
    pub blobs: Vec<Arc<BlobFile>>,
}

impl Flushed {
    /// The manifest records of the blob files.
    pub(crate) fn blob_metas(&self) -> Vec<BlobMeta> {
        self.blobs.iter().map(|b| b.meta).collect()
    }
}

/// Builds the table of a memtable of keyspace `keyspace` (none if it is empty) and opens it
/// for L0 reads; with `enable_blob_files`, its large values go to blob files first. Blob file
/// numbers are pending outputs, given back here if the flush fails.
pub(crate) fn write_l0_table(
    db: &Shared,
    options: &Options,
    keyspace: u32,
    mem: &Memtable,
    number: u64,
    plan: FilterPlan,
) -> Result<Option<Flushed>> {
    if mem.is_empty() {
        return Ok(None);
    }
    let mut blobs = BlobSink::for_options(db, options, keyspace);
    let written = write_table_and_blobs(db, options, mem, number, &plan, blobs.as_mut());
    let blob_numbers = blobs
        .as_ref()
        .map(|b| b.numbers().to_vec())
        .unwrap_or_default();
    let finished = written.and_then(|(meta, refs)| {
        let blob_metas = match blobs {
            Some(sink) => sink.finish()?,
            None => Vec::new(),
        };
        // The table's and the blob files' directory entries must be durable before the
        // manifest names them.
        db.fs().sync_dir(db.dir())?;
        Ok((meta, refs, blob_metas))
    });
    let opened = finished.and_then(|(meta, refs, blob_metas)| {
        let table = open_flushed(db, options, number, &plan, meta, refs)?;
        let blobs = blob_metas
            .iter()
            .map(|b| crate::jobs::blob_io::open_blob_file(db, b))
            .collect::<Result<Vec<_>>>()?;
        Ok(Flushed { table, blobs })
    });
    if opened.is_err() {
        db.versions().release_outputs(&blob_numbers);
    }
    opened.map(Some)
}

/// Writes and syncs the table of `mem` (separating large values into `blobs`), returning what
/// it holds and its references into blob files.
fn write_table_and_blobs(
    db: &Shared,
    options: &Options,
    mem: &Memtable,
    number: u64,
    plan: &FilterPlan,
    mut blobs: Option<&mut BlobSink<'_>>,
) -> Result<(siftdb_sstable::TableMeta, Vec<BlobRefs>)> {
    let path = names::table(db.dir(), number);
    let mut file = db.create_output(&path, crate::base::rate_limiter::IoPriority::High)?;
    let build = options.table_build_options(plan.build_level, plan.filter);
    let mut builder = TableBuilder::new(&mut file, build);
    let mut refs = BlobRefCounter::default();
    mem.try_for_each_entry(|key, value| -> Result<()> {
        match blobs.as_mut().map(|b| b.separate(key, value)).transpose()? {
            Some(Some((index_key, index))) => {
                refs.observe(index_key.encoded(), &index)?;
                builder.add(index_key.encoded(), &index)?;
            }
            _ => builder.add(key, value)?,
        }
        Ok(())
    })?;
    if let Some(tombstones) = mem.range_tombstones() {
        builder.set_range_tombstones((*tombstones).clone());
    }
    let meta = builder.finish()?;
    file.sync()?;
    Ok((meta, refs.take()))
}

/// Opens the flushed table `number` for L0 reads, counting what was written.
fn open_flushed(
    db: &Shared,
    options: &Options,
    number: u64,
    plan: &FilterPlan,
    meta: siftdb_sstable::TableMeta,
    blob_refs: Vec<BlobRefs>,
) -> Result<Arc<TableFile>> {
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
        blob_refs,
        global_seqno: None,
    };
    open_table(db, options, 0, &file_meta)
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
        global_seqno: meta.global_seqno,
    };
    let name = path.display().to_string();
    let table = Table::open(
        file,
        db.cache_id(meta.number),
        name,
        Arc::clone(db.cache()),
        read,
    )?;
    let live = db.live_tables().register(meta.number);
    Ok(Arc::new(
        TableFile::new(meta.clone(), Arc::new(table)).kept_alive_by(live),
    ))
}
