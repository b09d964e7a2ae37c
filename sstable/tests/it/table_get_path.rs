//! The get path touches only what it must: a filter "no" reads no index and no data block, and a
//! warm cache serves lookups with no file reads at all. The statistics are the oracle.

use std::cmp::Reverse;
use std::sync::atomic::Ordering::Relaxed;

use crate::common::*;
use siftdb_sstable::{BlockAccess, FilterOutcome, GetTrace, ReadMode, TableBuildOptions, TableGet};

fn model(n: u64) -> Model {
    (0..n)
        .map(|i| {
            (
                (format!("key{i:08}").into_bytes(), Reverse(1)),
                Some(vec![b'v'; 50]),
            )
        })
        .collect()
}

#[test]
fn filter_no_reads_no_index_and_no_data_block() {
    let m = model(5_000);
    let (bytes, _) = build_bytes(&m, TableBuildOptions::default());
    let (read, stats) = read_options();
    let (_tmp, table) = open_bytes(&bytes, cache(64 << 20), read, ReadMode::Pread);
    let table = table.unwrap();
    let mut filtered = 0;
    for i in 0..20_000u64 {
        let key = format!("absent{i:08}");
        let mut trace = GetTrace::default();
        assert_eq!(
            table.get_traced(key.as_bytes(), 9, &mut trace).unwrap(),
            TableGet::NotFound
        );
        if trace.filter == FilterOutcome::No {
            filtered += 1;
            assert_eq!(trace.index_block, BlockAccess::NotRead, "{trace:?}");
            assert_eq!(trace.data_block, BlockAccess::NotRead, "{trace:?}");
        } else {
            assert_eq!(trace.filter, FilterOutcome::Maybe);
        }
    }
    // ~1 % false positives at 10 bits/key.
    assert!(filtered > 19_500, "{filtered}");
    assert_eq!(stats.filter_useful.load(Relaxed), filtered);
    assert_eq!(stats.filter_checked.load(Relaxed), 20_000);
    assert_eq!(stats.filter_true_positive.load(Relaxed), 0);
    // Every data block access came from a false positive.
    let fp = stats.filter_positive.load(Relaxed);
    assert_eq!(fp, 20_000 - filtered);
    assert_eq!(stats.data_block_accesses.load(Relaxed), fp);
    assert!(stats.measured_fpr() < 0.02);
}

#[test]
fn warm_cache_serves_lookups_without_file_reads() {
    let m = model(2_000);
    let (bytes, _) = build_bytes(&m, TableBuildOptions::default());
    let (read, stats) = read_options();
    let (_tmp, table) = open_bytes(&bytes, cache(64 << 20), read, ReadMode::Mmap);
    let table = table.unwrap();
    // First pass warms the cache.
    for i in 0..2_000u64 {
        let key = format!("key{i:08}");
        assert!(matches!(
            table.get(key.as_bytes(), 1).unwrap(),
            TableGet::Found(_)
        ));
    }
    let reads_after_warmup = stats.data_block_reads.load(Relaxed)
        + stats.index_block_reads.load(Relaxed)
        + stats.filter_block_reads.load(Relaxed);
    let bytes_after_warmup = stats.bytes_read.load(Relaxed);
    for i in 0..2_000u64 {
        let mut trace = GetTrace::default();
        let key = format!("key{i:08}");
        table.get_traced(key.as_bytes(), 1, &mut trace).unwrap();
        assert_eq!(trace.file_reads(), 0, "{trace:?}");
        assert_eq!(trace.filter, FilterOutcome::Maybe);
        assert!(trace.key_found);
        let key = format!("nope{i:08}");
        table.get_traced(key.as_bytes(), 1, &mut trace).unwrap();
        assert_eq!(trace.file_reads(), 0, "{trace:?}");
    }
    let reads = stats.data_block_reads.load(Relaxed)
        + stats.index_block_reads.load(Relaxed)
        + stats.filter_block_reads.load(Relaxed);
    assert_eq!(reads, reads_after_warmup);
    assert_eq!(stats.bytes_read.load(Relaxed), bytes_after_warmup);
    assert_eq!(stats.filter_true_positive.load(Relaxed), 4_000);
}

#[test]
fn pinned_filter_and_index_survive_a_tiny_cache() {
    let m = model(3_000);
    let (bytes, _) = build_bytes(&m, TableBuildOptions::default());
    let (mut read, stats) = read_options();
    read.pin_filter_and_index = true;
    // A cache far smaller than the data: data blocks churn, filter and index stay.
    let (_tmp, table) = open_bytes(&bytes, cache(16 << 10), read, ReadMode::Pread);
    let table = table.unwrap();
    assert!(table.is_pinned());
    let filter_reads = stats.filter_block_reads.load(Relaxed);
    let index_reads = stats.index_block_reads.load(Relaxed);
    for round in 0..3 {
        for i in (0..3_000u64).step_by(7) {
            let mut trace = GetTrace::default();
            let key = format!("key{i:08}");
            table.get_traced(key.as_bytes(), 1, &mut trace).unwrap();
            assert_eq!(trace.filter_block, BlockAccess::Pinned, "round {round}");
            assert_eq!(trace.index_block, BlockAccess::Pinned, "round {round}");
        }
    }
    assert_eq!(stats.filter_block_reads.load(Relaxed), filter_reads);
    assert_eq!(stats.index_block_reads.load(Relaxed), index_reads);
    assert!(stats.data_block_reads.load(Relaxed) > 100);
    table.unpin();
    assert!(!table.is_pinned());
}

#[test]
fn unpinned_filter_evicted_from_cache_is_reloaded_not_skipped() {
    // The "evicted filter block" failure mode: with the filter out of cache, a lookup must
    // reload it (a counted file read), never treat the table as filterless or answer wrongly.
    let m = model(3_000);
    let (bytes, _) = build_bytes(&m, TableBuildOptions::default());
    let (read, stats) = read_options();
    let (_tmp, table) = open_bytes(&bytes, cache(8 << 10), read, ReadMode::Pread);
    let table = table.unwrap();
    for i in 0..3_000u64 {
        let key = format!("key{i:08}");
        assert!(matches!(
            table.get(key.as_bytes(), 1).unwrap(),
            TableGet::Found(_)
        ));
        assert_eq!(table.get(b"absent", 1).unwrap(), TableGet::NotFound);
    }
    assert!(stats.filter_block_reads.load(Relaxed) > 1);
    assert_eq!(stats.filter_checked.load(Relaxed), 6_000);
}

#[test]
fn pinned_partitioned_table_holds_every_partition_and_unpin_keeps_the_top_levels() {
    for partition_filters in [true, false] {
        pinned_partitioned_table(partition_filters);
    }
}

/// A table with a partitioned index and a partitioned or whole filter, pinned, unpinned and
/// pinned again.
fn pinned_partitioned_table(partition_filters: bool) {
    let m = model(3_000);
    let options = TableBuildOptions {
        partition_above: Some(0),
        metadata_block_size: 256,
        partition_filters,
        ..TableBuildOptions::default()
    };
    let (bytes, meta) = build_bytes(&m, options);
    assert!(
        meta.properties.index_partitions > 4,
        "{:?}",
        meta.properties
    );
    let filter_partitions = if partition_filters {
        meta.properties.index_partitions
    } else {
        0
    };
    assert_eq!(meta.properties.filter_partitions, filter_partitions);
    let (mut read, stats) = read_options();
    read.pin_filter_and_index = true;
    let (_tmp, table) = open_bytes(&bytes, cache(16 << 10), read, ReadMode::Pread);
    let table = table.unwrap();
    assert!(table.is_pinned());
    // Looks up every 7th key; `pinned` says whether filter and index must come from the table.
    let probe = |pinned: bool| {
        for i in (0..3_000u64).step_by(7) {
            let mut trace = GetTrace::default();
            let key = format!("key{i:08}");
            assert!(matches!(
                table.get_traced(key.as_bytes(), 1, &mut trace).unwrap(),
                TableGet::Found(_)
            ));
            for access in [trace.filter_block, trace.index_block] {
                let held = access == BlockAccess::Pinned;
                let cached = matches!(access, BlockAccess::CacheHit | BlockAccess::FileRead);
                assert!(if pinned { held } else { cached }, "{key}: {trace:?}");
            }
        }
    };
    let filter_reads = stats.filter_block_reads.load(Relaxed);
    let index_reads = stats.index_block_reads.load(Relaxed);
    probe(true);
    assert_eq!(stats.filter_block_reads.load(Relaxed), filter_reads);
    assert_eq!(stats.index_block_reads.load(Relaxed), index_reads);
    // Unpinned, partitions come through the cache (high priority: data blocks are evicted
    // first) while the top levels stay held.
    table.unpin();
    assert!(!table.is_pinned());
    assert!(table.is_partitioned());
    probe(false);
    // Pinning again holds them again.
    table.pin_filter_and_index().unwrap();
    assert!(table.is_pinned());
    probe(true);
}

/// A filter resized before `finish` (adaptive allocation sizes a compaction output when it is
/// sealed) is built, recorded and reported at the new size; the expected false positives the
/// statistics add up follow its expected FPR.
#[test]
fn filter_resized_before_finish_is_built_at_the_new_size() {
    let m = model(5_000);
    let options = TableBuildOptions {
        filter: Some(siftdb_sstable::FilterSpec {
            kind: siftdb_filter::FilterKind::Ribbon,
            bits_per_key: 3.0,
        }),
        ..TableBuildOptions::default()
    };
    let mut bytes = Vec::new();
    let mut builder = siftdb_sstable::TableBuilder::new(&mut bytes, options);
    for (k, v) in sorted_entries(&m) {
        builder.add(k.encoded(), &v).unwrap();
    }
    builder.set_filter_bits_per_key(14.0);
    assert_eq!(builder.filter().map(|f| f.bits_per_key), Some(14.0));
    let meta = builder.finish().unwrap();
    assert_eq!(meta.properties.filter_bits_per_key, 14.0);
    let fpr = meta.properties.filter_expected_fpr;
    assert!(fpr < 0.001, "{fpr}");
    let (read, stats) = read_options();
    let (_tmp, table) = open_bytes(&bytes, cache(64 << 20), read, ReadMode::Pread);
    let table = table.unwrap();
    let mut false_positives = 0;
    for i in 0..20_000u64 {
        let mut trace = GetTrace::default();
        table
            .get_traced(format!("absent{i:08}").as_bytes(), 9, &mut trace)
            .unwrap();
        assert_eq!(trace.filter_expected_fpr_ppb, (fpr * 1e9).round() as u32);
        false_positives += u64::from(trace.filter == FilterOutcome::Maybe);
    }
    // (The table records its lookups in `stats` itself.)
    // At 3 bits/key ribbon would pass ~12 % of absent keys; at 14 bits/key almost none.
    assert!(false_positives < 40, "{false_positives}");
    let expected = stats.filter_expected_fp_ppb.load(Relaxed) as f64 / 1e9;
    assert!((expected - 20_000.0 * fpr).abs() < 1e-3, "{expected}");
}
