//! A table's whole-key ribbon filter read under a bits-per-key cap: thinned as it is read (and
//! cached at that size), every key still found, absent keys filtered at the thinner filter's
//! rate; the prefix filter and other kinds are read as built.

use std::cmp::Reverse;
use std::sync::atomic::Ordering::Relaxed;

use crate::common::*;
use siftdb_filter::FilterKind;
use siftdb_sstable::{FilterSpec, ReadMode, TableBuildOptions, TableGet};

fn model(n: u64) -> Model {
    (0..n)
        .map(|i| {
            (
                (format!("key{i:08}").into_bytes(), Reverse(1)),
                Some(vec![b'v'; 20]),
            )
        })
        .collect()
}

fn options(kind: FilterKind, partitioned: bool) -> TableBuildOptions {
    TableBuildOptions {
        filter: Some(FilterSpec {
            kind,
            bits_per_key: 12.0,
        }),
        partition_above: if partitioned { Some(1) } else { None },
        metadata_block_size: 1024,
        ..TableBuildOptions::default()
    }
}

/// Looks every key up and 40,000 absent ones; returns the absent keys the filters let through.
fn lookups(table: &siftdb_sstable::Table, n: u64) -> u64 {
    for i in 0..n {
        let key = format!("key{i:08}");
        assert!(
            matches!(table.get(key.as_bytes(), 1).unwrap(), TableGet::Found(_)),
            "{key} lost"
        );
    }
    (0..40_000u64)
        .filter(|i| {
            let key = format!("key{:08}x", i % n);
            let mut trace = siftdb_sstable::GetTrace::default();
            table.get_traced(key.as_bytes(), 1, &mut trace).unwrap();
            trace.filter == siftdb_sstable::FilterOutcome::Maybe
        })
        .count() as u64
}

#[test]
fn a_capped_ribbon_filter_is_read_thinned_and_finds_every_key() {
    for partitioned in [false, true] {
        let n = 20_000;
        let (bytes, _) = build_bytes(&model(n), options(FilterKind::Ribbon, partitioned));
        let cache = cache(64 << 20);
        let (read, stats) = read_options();
        let (_tmp, table) = open_bytes(&bytes, cache.clone(), read, ReadMode::Pread);
        let table = table.unwrap();
        assert_eq!(table.is_partitioned(), partitioned);
        let built = table.properties().filter_bits_per_key;
        assert!(built > 11.0, "{built}");
        assert_eq!(table.filter_bits_per_key(), built);
        let rich = lookups(&table, n);
        let usage_rich = cache.stats().usage;

        table.set_filter_bits_cap(Some(5.0));
        assert_eq!(table.filter_bits_cap(), Some(5.0));
        assert_eq!(table.filter_bits_per_key(), 5.0);
        cache.erase_table(table.id());
        let reads = stats.filter_block_reads.load(Relaxed);
        let thin = lookups(&table, n);
        assert!(
            stats.filter_block_reads.load(Relaxed) > reads,
            "filters read again"
        );
        // About 2^-12 against 2^-5 of 40,000: a few against about 1,250.
        assert!(rich < 100, "{rich}");
        assert!(
            (700..2_000).contains(&thin),
            "{thin} false positives at 5 bits/key"
        );
        // The thinned filters take less of the cache (the same data and index blocks).
        let usage_thin = cache.stats().usage;
        assert!(
            usage_thin + (n as usize * 6 / 8) < usage_rich,
            "{usage_thin} against {usage_rich}"
        );

        // Lifted: read as built again.
        table.set_filter_bits_cap(None);
        cache.erase_table(table.id());
        assert!(lookups(&table, n) < 100);
    }
}

#[test]
fn a_cap_leaves_other_filter_kinds_as_built() {
    let n = 5_000;
    let (bytes, _) = build_bytes(&model(n), options(FilterKind::BlockedBloom, false));
    let (read, _) = read_options();
    let (_tmp, table) = open_bytes(&bytes, cache(64 << 20), read, ReadMode::Pread);
    let table = table.unwrap();
    table.set_filter_bits_cap(Some(3.0));
    assert_eq!(
        table.filter_bits_per_key(),
        table.properties().filter_bits_per_key
    );
    assert!(lookups(&table, n) < 400);
}

#[test]
fn a_cap_given_at_open_reads_the_filter_once_and_thinned() {
    for partitioned in [false, true] {
        let n = 20_000;
        let (bytes, _) = build_bytes(&model(n), options(FilterKind::Ribbon, partitioned));
        // Opened as built, then capped: what the cache holds once the table is read again.
        let capped_later = cache(64 << 20);
        let (read, _) = read_options();
        let (_tmp, table) = open_bytes(&bytes, capped_later.clone(), read, ReadMode::Pread);
        let table = table.unwrap();
        table.set_filter_bits_cap(Some(5.0));
        capped_later.erase_table(table.id());
        let thin_later = lookups(&table, n);

        let uncapped = cache(64 << 20);
        let (read, plain_stats) = read_options();
        let (_tmp, plain) = open_bytes(&bytes, uncapped, read, ReadMode::Pread);
        drop(plain.unwrap());

        let capped_at_open = cache(64 << 20);
        let (read, stats) = read_options();
        let read = siftdb_sstable::TableReadOptions {
            filter_bits_cap: Some(5.0),
            ..read
        };
        let (_tmp, table) = open_bytes(&bytes, capped_at_open.clone(), read, ReadMode::Pread);
        let table = table.unwrap();
        assert_eq!(table.filter_bits_cap(), Some(5.0));
        assert_eq!(table.filter_bits_per_key(), 5.0);
        // Opening read each filter block it reads anyway, once.
        assert_eq!(
            stats.filter_block_reads.load(Relaxed),
            plain_stats.filter_block_reads.load(Relaxed)
        );
        let thin = lookups(&table, n);
        assert_eq!(thin, thin_later, "the same thinned filters");
        // The same blocks in the cache, charged at the thinned size (within an entry's
        // bookkeeping), and well under the filters as built.
        let (at_open, later) = (capped_at_open.stats().usage, capped_later.stats().usage);
        assert!(at_open.abs_diff(later) <= 1024, "{at_open} against {later}");
        let rich = cache(64 << 20);
        let (read, _) = read_options();
        let (_tmp, table) = open_bytes(&bytes, rich.clone(), read, ReadMode::Pread);
        lookups(&table.unwrap(), n);
        assert!(at_open + (n as usize * 6 / 8) < rich.stats().usage);
    }
}
