//! Helpers shared by the table tests: build a table file from entries, open it.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;

use siftdb_cache::CacheOptions;
use siftdb_sstable::{
    open_random_access, FragmentedRangeTombstones, InternalKey, ReadMode, ReadStatistics, Table,
    TableBuildOptions, TableBuilder, TableCache, TableMeta, TableReadOptions, ValueKind,
};

/// A model of a table's contents: (user key, sequence) → Some(value) for a put, None for a delete.
pub type Model = BTreeMap<(Vec<u8>, std::cmp::Reverse<u64>), Option<Vec<u8>>>;

/// Encodes the model as sorted (internal key, value) pairs.
pub fn sorted_entries(model: &Model) -> Vec<(InternalKey, Vec<u8>)> {
    let mut out: Vec<(InternalKey, Vec<u8>)> = model
        .iter()
        .map(|((k, seq), v)| match v {
            Some(v) => (InternalKey::new(k, seq.0, ValueKind::Put), v.clone()),
            None => (InternalKey::new(k, seq.0, ValueKind::Delete), Vec::new()),
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Builds a table image in memory.
pub fn build_bytes(model: &Model, options: TableBuildOptions) -> (Vec<u8>, TableMeta) {
    build_bytes_with_tombstones(model, FragmentedRangeTombstones::default(), options)
}

/// Builds a table image in memory with range tombstones (set halfway through the entries).
pub fn build_bytes_with_tombstones(
    model: &Model,
    tombstones: FragmentedRangeTombstones,
    options: TableBuildOptions,
) -> (Vec<u8>, TableMeta) {
    let mut bytes = Vec::new();
    let mut b = TableBuilder::new(&mut bytes, options);
    let entries = sorted_entries(model);
    let half = entries.len() / 2;
    let mut tombstones = Some(tombstones);
    for (i, (k, v)) in entries.into_iter().enumerate() {
        if i == half {
            b.set_range_tombstones(tombstones.take().unwrap());
        }
        b.add(k.encoded(), &v).unwrap();
    }
    if let Some(t) = tombstones {
        b.set_range_tombstones(t);
    }
    let meta = b.finish().unwrap();
    (bytes, meta)
}

/// A fresh cache of `capacity` bytes.
pub fn cache(capacity: usize) -> Arc<TableCache> {
    Arc::new(TableCache::new(CacheOptions::new(capacity)))
}

/// Writes `bytes` to a temporary file and opens it as a table.
pub fn open_bytes(
    bytes: &[u8],
    cache: Arc<TableCache>,
    options: TableReadOptions,
    mode: ReadMode,
) -> (tempfile::NamedTempFile, siftdb_sstable::Result<Table>) {
    let mut tmp = tempfile::NamedTempFile::new().unwrap();
    tmp.write_all(bytes).unwrap();
    tmp.flush().unwrap();
    let file = open_random_access(tmp.reopen().unwrap(), mode).unwrap();
    let table = Table::open(file, 1, "test.sst", cache, options);
    (tmp, table)
}

/// Read options with fresh statistics.
pub fn read_options() -> (TableReadOptions, Arc<ReadStatistics>) {
    let stats = Arc::new(ReadStatistics::default());
    (
        TableReadOptions {
            stats: Some(Arc::clone(&stats)),
            ..TableReadOptions::default()
        },
        stats,
    )
}

/// What the model says a lookup of `key` at `snapshot` returns.
pub fn model_get(model: &Model, key: &[u8], snapshot: u64) -> siftdb_sstable::TableGet {
    use siftdb_sstable::TableGet;
    let start = (key.to_vec(), std::cmp::Reverse(snapshot));
    match model.range(start..).next() {
        Some(((k, _), v)) if k.as_slice() == key => match v {
            Some(v) => TableGet::Found(v.clone()),
            None => TableGet::Deleted,
        },
        _ => TableGet::NotFound,
    }
}
