//! What iteration costs on a deep tree, through the cache's and the engine's counters (issue 12):
//! a seek reads one index block per sorted level (a level iterator opens one table), not one per
//! table; a scan with `fill_cache = false` leaves the cache's contents in place.

use siftdb::{BlockKind, Db, Options, ReadOptions, Stats};

fn deep_options(cache: usize) -> Options {
    Options {
        write_buffer_size: 16 << 10,
        target_file_size_base: 16 << 10,
        max_bytes_for_level_base: 64 << 10,
        max_bytes_for_level_multiplier: 4.0,
        level0_file_num_compaction_trigger: 2,
        block_cache_capacity: cache,
        // Uncompressed, so that the level targets (in bytes) give the tree shape the test needs.
        compression: siftdb::Compression::None,
        compression_per_level: Vec::new(),
        // Scans only: the filter index (point lookups) would charge the small cache of
        // `a_scan_without_fill_cache_leaves_the_hot_set_cached` a reservation its hot set needs.
        filter_index_bits_per_key: 0.0,
        ..Options::default()
    }
}

fn key(i: u64) -> Vec<u8> {
    format!("key{:08}", i.wrapping_mul(2_654_435_761) % 100_000_000).into_bytes()
}

/// A tree of `n` scattered keys of 100-byte values, compactions settled.
fn deep_tree(dir: &std::path::Path, n: u64, cache: usize) -> Db {
    let db = Db::open(dir, deep_options(cache)).unwrap();
    for i in 0..n {
        db.put(key(i), [b'v'; 100]).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compaction().unwrap();
    db
}

fn lookups(s: &Stats, kind: BlockKind) -> u64 {
    s.cache.kind(kind).lookups()
}

#[test]
fn a_seek_reads_one_index_block_per_level_not_per_table() {
    let dir = siftdb_tests::temp_dir();
    let db = deep_tree(dir.path(), 60_000, 64 << 20);
    let levels = db.level_info();
    let tables: usize = levels.iter().map(|l| l.files).sum();
    let sorted_levels = levels.iter().skip(1).filter(|l| l.files > 0).count();
    let l0_tables = levels[0].files;
    assert!(tables >= 200, "{tables} tables");
    assert!(sorted_levels >= 3, "{sorted_levels} sorted levels");

    const SEEKS: u64 = 200;
    let before = db.stats();
    for i in 0..SEEKS {
        let mut it = db.iter();
        it.seek(key(i * 7919));
        let got = it.next().unwrap().unwrap();
        assert!(got.0 >= key(i * 7919));
    }
    let after = db.stats();
    // L0 tables' index blocks are pinned (no lookup); each sorted level opens one table.
    let per_seek = (lookups(&after, BlockKind::Index) - lookups(&before, BlockKind::Index)) as f64
        / SEEKS as f64;
    let bound = (sorted_levels + l0_tables) as f64;
    assert!(
        per_seek <= bound,
        "{per_seek:.1} index blocks per seek over {tables} tables in {sorted_levels} levels + {l0_tables} L0 tables"
    );
    let data_per_seek = (lookups(&after, BlockKind::Data) - lookups(&before, BlockKind::Data))
        as f64
        / SEEKS as f64;
    assert!(
        data_per_seek <= bound + 1.0,
        "{data_per_seek:.1} data blocks per seek"
    );
}

#[test]
fn a_scan_without_fill_cache_leaves_the_hot_set_cached() {
    let dir = siftdb_tests::temp_dir();
    // A cache far smaller than the data: a scan through it would push everything else out.
    let db = deep_tree(dir.path(), 40_000, 1 << 20);
    let hot: Vec<Vec<u8>> = (0..200).map(|i| key(i * 13)).collect();
    let read_hot = |db: &Db| {
        for k in &hot {
            assert!(db.get(k).unwrap().is_some());
        }
    };
    read_hot(&db);
    read_hot(&db);
    let data = |s: &Stats| *s.cache.kind(BlockKind::Data);

    let before = db.stats();
    // Built the way users should: `ReadOptions` will grow fields.
    #[allow(clippy::needless_update)]
    let quiet = ReadOptions {
        fill_cache: false,
        ..ReadOptions::default()
    };
    assert_eq!(db.iter_opt(&quiet).count(), 40_000);
    let after_scan = db.stats();
    assert_eq!(
        data(&after_scan).inserts,
        data(&before).inserts,
        "the scan filled the cache"
    );
    assert_eq!(data(&after_scan).evictions, data(&before).evictions);
    read_hot(&db);
    let after_hot = db.stats();
    assert_eq!(
        data(&after_hot).misses,
        data(&after_scan).misses,
        "the hot set left the cache"
    );
    // A point lookup without fill_cache inserts nothing either.
    assert!(db.get_opt(key(39_999), &quiet).unwrap().is_some());
    assert_eq!(data(&db.stats()).inserts, data(&after_hot).inserts);

    // The same scan through the cache pushes the hot set out: the counters can tell.
    assert_eq!(db.iter().count(), 40_000);
    let after_filling = db.stats();
    assert!(data(&after_filling).evictions > data(&after_hot).evictions);
    read_hot(&db);
    assert!(data(&db.stats()).misses > data(&after_filling).misses);
}
