//! The prefix filter skips tables without a prefix, and a table built under another extractor is
//! never skipped by mistake.

use std::cmp::Reverse;
use std::sync::atomic::Ordering::Relaxed;

use crate::common::*;
use siftdb_sstable::{FixedPrefix, ReadMode, TableBuildOptions};

fn model() -> Model {
    let mut m = Model::new();
    for p in 0..200u32 {
        for s in 0..5u32 {
            m.insert(
                (format!("p{p:05}:{s:03}").into_bytes(), Reverse(1)),
                Some(b"v".to_vec()),
            );
        }
    }
    m
}

#[test]
fn prefix_filter_skips_absent_prefixes() {
    let build = TableBuildOptions {
        prefix_extractor: Some(FixedPrefix::shared(6)),
        ..TableBuildOptions::default()
    };
    let (bytes, meta) = build_bytes(&model(), build);
    assert_eq!(meta.properties.distinct_prefixes, 200);
    assert_eq!(meta.properties.prefix_extractor, "fixed:6");
    let (mut read, stats) = read_options();
    read.prefix_extractor = Some(FixedPrefix::shared(6));
    let (_tmp, table) = open_bytes(&bytes, cache(1 << 20), read, ReadMode::Mmap);
    let table = table.unwrap();
    for p in 0..200u32 {
        assert!(table
            .prefix_may_match(format!("p{p:05}").as_bytes())
            .unwrap());
        // A longer prefix is checked by its first six bytes.
        assert!(table
            .prefix_may_match(format!("p{p:05}:00").as_bytes())
            .unwrap());
    }
    let mut skipped = 0;
    for p in 200..10_200u32 {
        if !table
            .prefix_may_match(format!("p{p:05}").as_bytes())
            .unwrap()
        {
            skipped += 1;
        }
    }
    assert!(skipped > 9_700, "{skipped}");
    assert_eq!(stats.prefix_useful.load(Relaxed), skipped);
    // Too short to be a prefix of the extractor: cannot be decided, so "maybe".
    assert!(table.prefix_may_match(b"q").unwrap());
}

#[test]
fn prefix_filter_of_another_extractor_is_never_consulted() {
    let build = TableBuildOptions {
        prefix_extractor: Some(FixedPrefix::shared(6)),
        ..TableBuildOptions::default()
    };
    let (bytes, _) = build_bytes(&model(), build);
    for reader_len in [3usize, 7, 8] {
        let (mut read, stats) = read_options();
        read.prefix_extractor = Some(FixedPrefix::shared(reader_len));
        let (_tmp, table) = open_bytes(&bytes, cache(1 << 20), read, ReadMode::Mmap);
        let table = table.unwrap();
        // Every prefix of the reader's length that some key has must be reported as possible.
        for key in model().keys() {
            let prefix = &key.0[..reader_len];
            assert!(table.prefix_may_match(prefix).unwrap());
        }
        for p in 0..1_000u32 {
            assert!(table
                .prefix_may_match(format!("x{p:07}").as_bytes())
                .unwrap());
        }
        assert_eq!(stats.prefix_checked.load(Relaxed), 0);
    }
    // No extractor at read time: same.
    let (read, _) = read_options();
    let (_tmp, table) = open_bytes(&bytes, cache(1 << 20), read, ReadMode::Mmap);
    assert!(table.unwrap().prefix_may_match(b"zzzzzz").unwrap());
}
