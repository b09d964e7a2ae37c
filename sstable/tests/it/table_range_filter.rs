//! A table's range filter (`TableBuildOptions::range_filter_bits_per_key`): empty ranges between
//! keys are mostly answered "none" without reading a data block, a range holding a key never is,
//! and a table with range tombstones is never skipped.

use std::cmp::Reverse;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use crate::common::{
    build_bytes, build_bytes_with_tombstones, cache, open_bytes, read_options, Model,
};
use siftdb_sstable::{FragmentedRangeTombstones, RangeTombstone, ReadMode, TableBuildOptions};

fn key(n: u32) -> Vec<u8> {
    format!("user{n:010}").into_bytes()
}

/// Keys 0, 10, 20, … (every tenth position), one version each.
fn model(keys: u32) -> Model {
    (0..keys)
        .map(|i| ((key(i * 10), Reverse(1)), Some(b"v".to_vec())))
        .collect()
}

fn options(bits: f64) -> TableBuildOptions {
    TableBuildOptions {
        range_filter_bits_per_key: bits,
        ..TableBuildOptions::default()
    }
}

#[test]
fn table_range_filter_skips_most_empty_ranges_and_no_full_one() {
    let (bytes, meta) = build_bytes(&model(20_000), options(12.0));
    let handle = meta
        .properties
        .range_filter_handle
        .expect("a range filter block");
    assert!(handle.size > 0);
    let (read, stats) = read_options();
    let (_tmp, table) = open_bytes(&bytes, cache(8 << 20), read, ReadMode::Pread);
    let table = Arc::new(table.unwrap());
    let mut maybes = 0;
    for i in 0..20_000u32 {
        let n = i * 10;
        // Holding key n: never skipped.
        assert!(table
            .range_may_overlap(Some(&key(n)), Some(&key(n + 1)))
            .unwrap());
        assert!(table
            .range_may_overlap(Some(&key(n.saturating_sub(5))), Some(&key(n + 3)))
            .unwrap());
        // Empty: the nine positions after it.
        maybes += u32::from(
            table
                .range_may_overlap(Some(&key(n + 1)), Some(&key(n + 10)))
                .unwrap(),
        );
    }
    // Ranges of 9 positions at ~12 bits/key: bound 9/2^10 (< 1 %); allow 2 %.
    assert!(maybes < 400, "{maybes} of 20,000 empty ranges not skipped");
    assert_eq!(stats.range_checked.load(Relaxed), 60_000);
    assert_eq!(stats.range_useful.load(Relaxed), 20_000 - u64::from(maybes));
    // Unbounded sides.
    assert!(table.range_may_overlap(None, None).unwrap());
    assert!(!table.range_may_overlap(Some(b"zzz"), None).unwrap());
    assert!(!table.range_may_overlap(None, Some(b"a")).unwrap());
}

#[test]
fn table_without_range_filter_or_with_tombstones_is_never_skipped() {
    let (bytes, meta) = build_bytes(&model(100), options(0.0));
    assert!(meta.properties.range_filter_handle.is_none());
    let (read, _) = read_options();
    let (_tmp, table) = open_bytes(&bytes, cache(1 << 20), read, ReadMode::Pread);
    assert!(table
        .unwrap()
        .range_may_overlap(Some(&key(1)), Some(&key(2)))
        .unwrap());

    let tombstones = FragmentedRangeTombstones::new([RangeTombstone::new(key(1), key(9), 5)]);
    let (bytes, meta) = build_bytes_with_tombstones(&model(100), tombstones, options(12.0));
    assert!(meta.properties.range_filter_handle.is_some());
    let (read, _) = read_options();
    let (_tmp, table) = open_bytes(&bytes, cache(1 << 20), read, ReadMode::Pread);
    assert!(table
        .unwrap()
        .range_may_overlap(Some(&key(1)), Some(&key(2)))
        .unwrap());
}
