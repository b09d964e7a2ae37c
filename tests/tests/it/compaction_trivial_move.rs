//! Trivial moves: a table that overlaps nothing in the level below moves down by a manifest edit
//! alone (issue 11). The engine's own counters are the oracle: bytes written by compactions,
//! tables moved, blocks pinned.

use siftdb::{Db, Options};

fn options() -> Options {
    Options {
        write_buffer_size: 32 << 10,
        target_file_size_base: 32 << 10,
        max_bytes_for_level_base: 128 << 10,
        max_bytes_for_level_multiplier: 4.0,
        level0_file_num_compaction_trigger: 2,
        // Uncompressed, so the level targets (in bytes) give the tree the test expects.
        compression: siftdb::Compression::None,
        compression_per_level: Vec::new(),
        // The tree-wide filter index charges the cache with pinned reservation entries of its
        // own (tests/filter_index_lookups.rs covers them); this test counts the pins of tables.
        filter_index_bits_per_key: 0.0,
        // One compaction at a time, so which tables move and which are rewritten does not hang
        // on how two compactions interleave on a loaded machine.
        max_background_compactions: 1,
        ..Options::default()
    }
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

fn value(i: u64) -> Vec<u8> {
    let mut v = format!("value of {i}:").into_bytes();
    v.resize(100, b'v');
    v
}

/// Files per level, as `level_info` reports them.
fn shape(db: &Db) -> Vec<usize> {
    db.level_info().iter().map(|l| l.files).collect()
}

#[test]
fn a_sequential_load_moves_tables_down_without_rewriting_them() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), options()).unwrap();
    for i in 0..20_000 {
        db.put(key(i), value(i)).unwrap();
        // Settle well within each memtable (about 250 entries), so what a flush plans does not
        // hang on how fast this machine's background threads run: on a loaded machine, more
        // flushes are planned while L1 is still the bottom, and those tables are rewritten.
        if i % 100 == 99 {
            db.wait_for_compaction().unwrap();
        }
    }
    db.flush().unwrap();
    db.wait_for_compaction().unwrap();
    let stats = db.stats();
    let tree = shape(&db);
    assert!(stats.trivial_moves > 20, "{} moves", stats.trivial_moves);
    // Only the first tables are rewritten: planned while L1 was the bottom (blocked bloom),
    // they cannot move into a ribbon level. Everything after moves.
    assert!(
        stats.compaction_bytes_written * 10 < stats.flush_bytes,
        "a key-ordered load was rewritten: {} of {} flushed bytes (tree {tree:?})",
        stats.compaction_bytes_written,
        stats.flush_bytes
    );
    assert!(
        tree.iter().skip(2).any(|&files| files > 0),
        "tables reached L2 or deeper: {tree:?}"
    );
    // Tables that left L0 released their pinned filter and index blocks.
    let pinned_tables = tree[0];
    assert!(
        stats.cache.pinned_entries <= 3 * pinned_tables,
        "{} entries pinned for {pinned_tables} L0 tables",
        stats.cache.pinned_entries
    );
    // Their filters were planned for the bottom level (see docs/TUNING.md), so the tree keeps
    // its filter budget. (Planned, not built: filters of tables this small carry a fixed
    // overhead of their own.)
    let (keys, planned_bits) = db.level_info().iter().fold((0, 0.0), |(k, b), l| {
        (k + l.keys, b + l.planned_bits_per_key * l.keys as f64)
    });
    let planned = planned_bits / keys as f64;
    let budget = options().filter_bits_per_key;
    assert!(
        planned < 1.1 * budget,
        "{planned:.2} bits/key planned for a budget of {budget}"
    );
    for i in (0..20_000).step_by(97) {
        assert_eq!(db.get(key(i)).unwrap(), Some(value(i)), "key {i}");
    }
    let scanned = db.iter().count();
    assert_eq!(scanned, 20_000);
    // The moves are in the manifest: the same tree comes back.
    drop(db);
    let db = Db::open(dir.path(), options()).unwrap();
    assert_eq!(shape(&db), tree);
    for i in (0..20_000).step_by(89) {
        assert_eq!(
            db.get(key(i)).unwrap(),
            Some(value(i)),
            "key {i} after reopen"
        );
    }
}

#[test]
fn overlapping_tables_are_rewritten_not_moved() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), options()).unwrap();
    // Every memtable spans the whole key space: no table can move down unchanged onto another.
    for round in 0..4u64 {
        for i in (round..4_000).step_by(4) {
            db.put(key(i * 7 % 4_000), value(i)).unwrap();
        }
        db.flush().unwrap();
    }
    db.wait_for_compaction().unwrap();
    let stats = db.stats();
    assert!(stats.compactions > 0);
    assert!(stats.compaction_bytes_written > 0);
    assert_eq!(db.iter().count(), 4_000);
}

/// A random-order fill under Monkey: when the tree grows a level, tables of the level above move
/// into the new bottom level unchanged (RocksDB's moves of a level's overflow) wherever their
/// filters are within 10 % of what the plan gives the new level, and the tree keeps its budget.
#[test]
fn a_new_bottom_level_receives_tables_by_moves_under_monkey() {
    let dir = siftdb_tests::temp_dir();
    let opts = Options {
        filter_allocation: siftdb::FilterAllocation::Monkey,
        ..options()
    };
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    let n: u64 = 60_000;
    // A bijection of 0..2^32 scatters the write order (the same one as compaction_monkey.rs).
    let scattered = |i: u64| (i as u32).wrapping_mul(2_654_435_761) as u64;
    for i in 0..n {
        db.put(key(scattered(i)), value(i)).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compaction().unwrap();
    let stats = db.stats();
    let tree = shape(&db);
    assert!(
        tree.iter().skip(3).any(|&files| files > 0),
        "the tree grew to L3 or deeper: {tree:?}"
    );
    assert!(
        stats.trivial_moves > 0,
        "no table moved into a new bottom level (tree {tree:?}, {} compactions)",
        stats.compactions
    );
    let (keys, planned_bits) = db.level_info().iter().fold((0, 0.0), |(k, b), l| {
        (k + l.keys, b + l.planned_bits_per_key * l.keys as f64)
    });
    let planned = planned_bits / keys as f64;
    assert!(
        planned < 1.1 * opts.filter_bits_per_key,
        "{planned:.2} bits/key planned for a budget of {}",
        opts.filter_bits_per_key
    );
    for i in (0..n).step_by(101) {
        assert_eq!(
            db.get(key(scattered(i))).unwrap(),
            Some(value(i)),
            "key {i}"
        );
    }
    assert_eq!(db.iter().count() as u64, n);
}
