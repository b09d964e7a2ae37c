//! Options: a mapped setter shows in behaviour; a tuning setter without a counterpart is
//! accepted; a setter siftdb cannot honour makes the open fail with NotSupported.

use siftdb_rocksdb::{
    BlockBasedOptions, Cache, CuckooTableOptions, DBCompressionType, ErrorKind, Options, DB,
};

#[test]
fn error_if_exists_and_create_if_missing_are_honoured() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = Options::default();
    assert!(DB::open(&opts, dir.path()).is_err());
    opts.create_if_missing(true);
    drop(DB::open(&opts, dir.path()).unwrap());
    opts.set_error_if_exists(true);
    assert!(DB::open(&opts, dir.path()).is_err());
}

#[test]
fn mapped_setters_reach_siftdb_s_options() {
    let mut opts = Options::default();
    opts.set_write_buffer_size(1 << 20);
    opts.set_max_write_buffer_number(3);
    opts.set_max_open_files(-1);
    opts.set_compression_type(DBCompressionType::Zstd);
    opts.set_disable_auto_compactions(true);
    let mut table = BlockBasedOptions::default();
    table.set_block_size(8192);
    table.set_bloom_filter(12.0, false);
    table.set_block_cache(&Cache::new_lru_cache(1 << 20));
    opts.set_block_based_table_factory(&table);
    let inner = opts.as_siftdb();
    assert_eq!(inner.write_buffer_size, 1 << 20);
    assert_eq!(inner.max_write_buffer_number, 3);
    assert_eq!(inner.max_open_files, -1);
    assert_eq!(inner.compression, siftdb::Compression::Zstd);
    assert!(inner.compression_per_level.is_empty());
    assert!(inner.disable_auto_compactions);
    assert_eq!(inner.block_size, 8192);
    assert_eq!(inner.filter_bits_per_key, 12.0);
    assert_eq!(inner.block_cache_capacity, 1 << 20);
}

#[test]
fn a_small_write_buffer_makes_tables_as_it_fills() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = Options::default();
    opts.create_if_missing(true);
    opts.set_write_buffer_size(64 << 10);
    opts.set_disable_auto_compactions(true);
    let db = DB::open(&opts, dir.path()).unwrap();
    for i in 0..5_000u32 {
        db.put(i.to_be_bytes(), [7u8; 100]).unwrap();
    }
    db.flush().unwrap();
    let files = db.live_files().unwrap();
    assert!(files.len() > 1, "{} table(s)", files.len());
    assert!(files.iter().all(|f| f.column_family_name == "default"));
}

#[test]
fn tuning_setters_without_a_counterpart_are_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = Options::default();
    opts.create_if_missing(true);
    opts.set_use_adaptive_mutex(true);
    opts.set_unordered_write(true);
    opts.set_level_compaction_dynamic_level_bytes(false);
    opts.set_use_fsync(true);
    opts.set_cuckoo_table_factory(&CuckooTableOptions::default());
    let db = DB::open(&opts, dir.path()).unwrap();
    db.put(b"k", b"v").unwrap();
    assert_eq!(db.get(b"k").unwrap(), Some(b"v".to_vec()));
}

#[test]
fn statistics_count_what_goes_through_the_layer() {
    use siftdb_rocksdb::statistics::{Histogram, Ticker};
    let dir = tempfile::tempdir().unwrap();
    let mut opts = Options::default();
    opts.create_if_missing(true);
    assert_eq!(opts.get_ticker_count(Ticker::BytesWritten), 0);
    opts.enable_statistics();
    let db = DB::open(&opts, dir.path()).unwrap();
    db.put(b"key", b"value").unwrap();
    assert_eq!(opts.get_ticker_count(Ticker::BytesWritten), 8);
    assert_eq!(opts.get_ticker_count(Ticker::NumberKeysWritten), 1);
    assert_eq!(db.get(b"key").unwrap(), Some(b"value".to_vec()));
    assert_eq!(opts.get_ticker_count(Ticker::NumberKeysRead), 1);
    let writes = opts.get_histogram_data(Histogram::DbWrite);
    assert_eq!(writes.count(), 1);
    assert!(writes.max() > 0.0);
}

#[test]
fn setters_siftdb_cannot_honour_refuse_the_open() {
    let dir = tempfile::tempdir().unwrap();
    let mut timestamps = Options::default();
    timestamps.create_if_missing(true);
    timestamps.set_comparator_with_ts(
        "ts",
        8,
        Box::new(|a: &[u8], b: &[u8]| a.cmp(b)),
        Box::new(|a: &[u8], b: &[u8]| a.cmp(b)),
        Box::new(|a: &[u8], _: bool, b: &[u8], _: bool| a.cmp(b)),
    );
    let err = DB::open(&timestamps, dir.path()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotSupported);

    let mut comparator = Options::default();
    comparator.create_if_missing(true);
    comparator.set_comparator("reverse", Box::new(|a: &[u8], b: &[u8]| b.cmp(a)));
    let err = DB::open(&comparator, dir.path()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotSupported);
    assert!(err.to_string().contains("comparator"), "{err}");

    let mut snappy = Options::default();
    snappy.create_if_missing(true);
    snappy.set_compression_type(DBCompressionType::Snappy);
    assert_eq!(
        DB::open(&snappy, dir.path()).unwrap_err().kind(),
        ErrorKind::NotSupported
    );
}

#[test]
fn set_options_changes_live_options_and_rejects_bad_ones() {
    let dir = tempfile::tempdir().unwrap();
    let db = DB::open_default(dir.path()).unwrap();
    db.set_options(&[("disable_auto_compactions", "true")])
        .unwrap();
    assert!(db
        .set_options(&[("disable_auto_compactions", "maybe")])
        .is_err());
    assert!(db.set_options(&[("no_such_option", "1")]).is_err());
    assert!(db.set_options(&[]).is_err());
}

#[test]
fn one_cache_serves_every_database_that_names_it() {
    let cache = Cache::new_lru_cache(4 << 20);
    assert_eq!(cache.get_usage(), 0);
    let mut table = BlockBasedOptions::default();
    table.set_block_cache(&cache);
    let mut opts = Options::default();
    opts.create_if_missing(true);
    opts.set_block_based_table_factory(&table);
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let dbs: Vec<DB> = dirs
        .iter()
        .map(|d| DB::open(&opts, d.path()).unwrap())
        .collect();
    for (n, db) in dbs.iter().enumerate() {
        for i in 0..500 {
            db.put(format!("k{i:04}"), format!("db{n}-{i}")).unwrap();
        }
        db.flush().unwrap();
    }
    for (n, db) in dbs.iter().enumerate() {
        for i in (0..500).step_by(13) {
            assert_eq!(
                db.get(format!("k{i:04}")).unwrap(),
                Some(format!("db{n}-{i}").into_bytes())
            );
        }
    }
    let used = cache.get_usage();
    assert!(used > 0);
    let stats = siftdb_rocksdb::perf::get_memory_usage_stats(None, Some(&[&cache])).unwrap();
    assert_eq!(stats.cache_total, used as u64);
    drop(dbs);
    assert_eq!(
        cache.get_usage(),
        0,
        "closed databases leave nothing behind"
    );
}
