//! The database's options and its opening: small memtables and tables so flushes and
//! compactions run all the time, the U64Add merge operator, a prefix extractor on "default",
//! blob files on "blob", the compaction style of the open.

use std::path::Path;
use std::sync::Arc;

use siftdb::fs::FileSystem;
use siftdb::{
    CompactionStyle, Db, FifoCompactionOptions, FixedPrefix, Keyspace, KeyspaceOptions, Options,
};

use crate::cli::{Args, StyleArg};
use crate::values::{KEYSPACES, SCRATCH_KEYSPACE};

/// The compaction style of the `n`th open of the run's database.
pub fn style(args: &Args, n: usize) -> CompactionStyle {
    match args.compaction_style {
        StyleArg::Leveled => CompactionStyle::Level,
        StyleArg::Universal => CompactionStyle::Universal,
        StyleArg::Fifo => CompactionStyle::Fifo,
        StyleArg::All => [
            CompactionStyle::Level,
            CompactionStyle::Universal,
            CompactionStyle::Fifo,
        ][(args.open_index + n) % 3],
    }
}

/// The options of an open in `style`, on `fs` (the real file system when `None`).
pub fn options(args: &Args, fs: Option<Arc<dyn FileSystem>>, style: CompactionStyle) -> Options {
    let small = args.faults;
    let mut options = Options {
        write_buffer_size: if small { 256 << 10 } else { 1 << 20 },
        max_write_buffer_number: 3,
        target_file_size_base: if small { 256 << 10 } else { 1 << 20 },
        max_bytes_for_level_base: if small { 1 << 20 } else { 4 << 20 },
        level0_file_num_compaction_trigger: 4,
        max_subcompactions: 2,
        compaction_style: style,
        // FIFO drops the oldest tables past this size: no run gets there, so nothing acknowledged
        // is dropped and every read stays exact.
        compaction_options_fifo: FifoCompactionOptions {
            max_table_files_size: 1 << 40,
            ttl: None,
        },
        block_cache_capacity: 16 << 20,
        merge_operator: Some(Arc::new(siftdb::merge::U64Add)),
        prefix_extractor: Some(FixedPrefix::shared(8)),
        memtable_prefix_bloom_size_ratio: 0.1,
        metrics_interval: None,
        ..Options::default()
    };
    if let Some(fs) = fs {
        options.fs = fs;
    }
    options.keyspaces = KEYSPACES
        .iter()
        .enumerate()
        .skip(1)
        .map(|(i, name)| (name.to_string(), keyspace_options(&options, i)))
        .collect();
    options
}

/// The options of keyspace `ks` (not "default").
fn keyspace_options(options: &Options, ks: usize) -> KeyspaceOptions {
    let mut opts = KeyspaceOptions::from(options);
    opts.prefix_extractor = None;
    opts.memtable_prefix_bloom_size_ratio = 0.0;
    if KEYSPACES[ks] == "blob" {
        opts.enable_blob_files = true;
        opts.min_blob_size = 128;
        opts.blob_file_size = 4 << 20;
        opts.enable_blob_garbage_collection = true;
        opts.blob_garbage_collection_age_cutoff = 0.5;
    }
    opts
}

/// Opens the database (creating the run's keyspaces it lacks); the handles of its keyspaces in
/// the order of `KEYSPACES`.
pub fn open(path: &Path, options: &Options) -> siftdb::Result<(Db, Vec<Keyspace>)> {
    let db = Db::open(path, options.clone())?;
    let names = db.keyspace_names();
    let mut handles = Vec::new();
    for (i, name) in KEYSPACES.iter().enumerate() {
        let handle = if i == 0 || names.iter().any(|n| n == name) {
            db.keyspace(name)?
        } else {
            db.create_keyspace(name, keyspace_options(options, i))?
        };
        handles.push(handle);
    }
    for name in LOCK_FREE_KEYSPACES {
        if !names.iter().any(|n| n == name) {
            db.create_keyspace(name, plain_keyspace_options(options))?;
        }
    }
    Ok((db, handles))
}

/// The keyspaces of the lock-free workloads (`ops_bank.rs`, `ops_excise.rs`), beside
/// `KEYSPACES`: `open` creates them, `lock_free_handles` hands them out.
pub const LOCK_FREE_KEYSPACES: [&str; 3] = [
    crate::ops_bank::BANK_KEYSPACE,
    crate::ops_excise::EXCISE_KEYSPACE,
    crate::ops_claims::CLAIMS_KEYSPACE,
];

/// The options of a keyspace of the lock-free workloads.
fn plain_keyspace_options(options: &Options) -> KeyspaceOptions {
    let mut opts = KeyspaceOptions::from(options);
    opts.prefix_extractor = None;
    opts.memtable_prefix_bloom_size_ratio = 0.0;
    opts
}

/// The bank's keyspace, the excise range's and the claims' (made by `open`).
pub fn lock_free_handles(db: &Db) -> siftdb::Result<(Keyspace, Keyspace, Keyspace)> {
    Ok((
        db.keyspace(LOCK_FREE_KEYSPACES[0])?,
        db.keyspace(LOCK_FREE_KEYSPACES[1])?,
        db.keyspace(LOCK_FREE_KEYSPACES[2])?,
    ))
}

/// Whether the database has the scratch keyspace now.
pub fn has_scratch(db: &Db) -> bool {
    db.keyspace_names().iter().any(|n| n == SCRATCH_KEYSPACE)
}
