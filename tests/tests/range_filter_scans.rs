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

/// Every tenth number is written.
fn filled(range_bits: f64) -> (tempfile::TempDir, Db) {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), options(range_bits)).unwrap();
    for i in 0..30_000u32 {
        let n = (i.wrapping_mul(7_919) % 30_000) * 10;
        db.put(key(n), format!("v{n}")).unwrap();
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
