//! `Options::range_filter_bits_per_key`: a range scan over a stretch of keys that holds none
//! skips the tables whose range filter says so — no index or data block of them is touched —
//! in both directions, and a range that holds keys returns exactly them.

use siftdb::{BlockKind, Db, Options};

fn options(range_bits: f64) -> Options {
    Options {
        write_buffer_size: 64 << 10,
        target_file_size_base: 64 << 10,
        max_bytes_for_level_base: 256 << 10,
        range_filter_bits_per_key: range_bits,
        ..Options::default()
    }
}

/// Key number `n` (decimal, fixed width).
fn key(n: u32) -> Vec<u8> {
    format!("id{n:09}").into_bytes()
}

/// Every tenth number is written. Stepped (every due flush and compaction after each put), so
/// the tables, and so the scans that fall between two tables and ask no filter at all, are the
/// same on every run (with background threads a run once asked 8,994 filters, not 9,000).
fn filled(range_bits: f64) -> (tempfile::TempDir, Db) {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open_stepped(dir.path(), options(range_bits)).unwrap();
    for i in 0..30_000u32 {
        let n = (i.wrapping_mul(7_919) % 30_000) * 10;
        db.put(key(n), format!("v{n}")).unwrap();
        siftdb_tests::run_due_work(&db);
    }
    db.flush().unwrap();
    db.wait_for_compaction().unwrap();
    (dir, db)
}

/// Data and index blocks looked up in the cache so far (hits and misses).
fn block_lookups(db: &Db) -> u64 {
    let cache = db.stats().cache;
    [BlockKind::Data, BlockKind::Index]
        .iter()
        .map(|&k| cache.kind(k).hits + cache.kind(k).misses)
        .sum()
}

#[test]
fn range_filter_empty_ranges_touch_no_block() {
    let (_dir, db) = filled(12.0);
    let before = db.stats();
    let lookups_before = block_lookups(&db);
    for i in 0..3_000u32 {
        let n = i * 100;
        // The nine numbers after a written one: empty; forward, backward, both bound kinds.
        assert_eq!(db.range(key(n + 1)..key(n + 10)).count(), 0);
        assert_eq!(db.range(key(n + 1)..key(n + 10)).rev().count(), 0);
        assert_eq!(db.range(key(n + 1)..=key(n + 9)).count(), 0);
    }
    let stats = db.stats();
    let checked = stats.range_checked - before.range_checked;
    let useful = stats.range_useful - before.range_useful;
    let lookups = block_lookups(&db) - lookups_before;
    println!(
        "{checked} range filters asked, {useful} ruled their table out, {lookups} block lookups"
    );
    assert!(checked >= 9_000, "{checked}");
    // ~9 positions at ~12 bits/key: FPR under 1 %.
    assert!(
        useful as f64 >= 0.97 * checked as f64,
        "{useful} of {checked}"
    );
    // Only the few false positives touch a block (an index and a data block each, at most a
    // few per scan).
    assert!(
        lookups <= 4 * (checked - useful) + 10,
        "{lookups} block lookups for {} false positives",
        checked - useful
    );
}

#[test]
fn range_filter_ranges_with_keys_return_exactly_them_both_ways() {
    let (_dir, db) = filled(12.0);
    for i in (0..3_000u32).step_by(7) {
        let n = i * 100;
        let forward: Vec<Vec<u8>> = db
            .range(key(n)..key(n + 35))
            .map(|e| e.unwrap().0)
            .collect();
        let want: Vec<Vec<u8>> = (0..4).map(|j| key(n + 10 * j)).collect();
        assert_eq!(forward, want);
        let mut backward: Vec<Vec<u8>> = db
            .range(key(n + 1)..=key(n + 30))
            .rev()
            .map(|e| e.unwrap().0)
            .collect();
        backward.reverse();
        assert_eq!(backward, want[1..].to_vec());
    }
}

#[test]
fn range_filter_off_reads_blocks_for_empty_ranges() {
    let (_dir, db) = filled(0.0);
    let before = block_lookups(&db);
    for i in 0..300u32 {
        let n = i * 100;
        assert_eq!(db.range(key(n + 1)..key(n + 10)).count(), 0);
    }
    assert!(block_lookups(&db) - before >= 300);
    assert_eq!(db.stats().range_checked, 0);
}

/// Read options keeping iterators to `[lower, upper)`.
fn bounded(lower: Vec<u8>, upper: Vec<u8>) -> siftdb::ReadOptions {
    siftdb::ReadOptions {
        iterate_lower_bound: Some(lower),
        iterate_upper_bound: Some(upper),
        ..Default::default()
    }
}

/// Bounded cursors: a `RawIterator` with `iterate_lower_bound`/`iterate_upper_bound` and a
/// `DbIterator::seek` under an upper bound ask the range filters of the part of the range the
/// seek can reach (the target to the bound), in both directions.
#[test]
fn range_filter_bounded_seeks_skip_tables_both_ways() {
    let (_dir, db) = filled(12.0);
    let before = db.stats();
    let lookups_before = block_lookups(&db);
    let mut seeks = 0u64;
    for i in 0..1_000u32 {
        let n = i * 300;
        let opts = bounded(key(n + 1), key(n + 10));
        let mut raw = db.raw_iter_opt(&opts);
        raw.seek(&key(n + 3));
        assert!(!raw.valid());
        raw.seek_for_prev(&key(n + 8));
        assert!(!raw.valid());
        raw.seek_to_last();
        assert!(!raw.valid());
        raw.status().unwrap();
        // No lower bound: only the seek target tells which stretch a forward walk reads.
        let mut it = db.range(..key(n + 10));
        it.seek(key(n + 1));
        assert!(it.next().is_none());
        // No upper bound: the same backward.
        let mut it = db.range(key(n + 1)..);
        it.seek_for_prev(key(n + 9));
        assert!(it.next_back().is_none());
        seeks += 5;
    }
    let stats = db.stats();
    let checked = stats.range_checked - before.range_checked;
    let useful = stats.range_useful - before.range_useful;
    let lookups = block_lookups(&db) - lookups_before;
    println!("{seeks} seeks: {checked} range filters asked, {useful} ruled out, {lookups} blocks");
    // Each seek meets at least one table (the tree has at least one level holding the keys).
    assert!(checked >= seeks, "{checked}");
    assert!(
        useful as f64 >= 0.97 * checked as f64,
        "{useful} of {checked}"
    );
    assert!(
        lookups <= 4 * (checked - useful) + 10,
        "{lookups} block lookups"
    );

    // Where the stretch holds keys, the same cursors find exactly them.
    for i in (0..1_000u32).step_by(13) {
        let n = i * 300;
        let opts = bounded(key(n + 1), key(n + 31));
        let mut raw = db.raw_iter_opt(&opts);
        raw.seek_to_first();
        let mut got = Vec::new();
        while raw.valid() {
            got.push(raw.key().to_vec());
            raw.next();
        }
        raw.status().unwrap();
        assert_eq!(got, [key(n + 10), key(n + 20), key(n + 30)]);
        raw.seek_for_prev(&key(n + 25));
        assert_eq!(raw.key(), key(n + 20));
        raw.prev();
        raw.prev();
        assert!(!raw.valid(), "the lower bound ends the walk");
    }
}
