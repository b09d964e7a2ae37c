//! Random tables read back exactly as a `BTreeMap` model says: point lookups at every snapshot
//! and full iteration, through both read modes.

use std::cmp::Reverse;
use std::sync::Arc;

use crate::common::*;
use proptest::prelude::*;
use siftdb_filter::FilterKind;
use siftdb_sstable::{Compression, FilterSpec, ReadMode, TableBuildOptions};

fn check_table(model: &Model, options: TableBuildOptions, mode: ReadMode) {
    let (bytes, meta) = build_bytes(model, options);
    assert_eq!(meta.file_size, bytes.len() as u64);
    assert_eq!(meta.properties.entries, model.len() as u64);
    let (read, _) = read_options();
    let (_tmp, table) = open_bytes(&bytes, cache(1 << 20), read, mode);
    let table = Arc::new(table.unwrap());
    assert_eq!(table.properties(), &meta.properties);

    // Point lookups: every key at every interesting snapshot, plus absent keys.
    let mut probes: Vec<Vec<u8>> = model.keys().map(|(k, _)| k.clone()).collect();
    probes.dedup();
    probes.push(b"\xff\xff\xffabsent".to_vec());
    probes.push(Vec::new());
    let mut snapshots: Vec<u64> = model.keys().map(|(_, s)| s.0).collect();
    snapshots.extend([0, u64::MAX >> 8]);
    snapshots.sort_unstable();
    snapshots.dedup();
    for key in &probes {
        for &snap in snapshots.iter().take(12) {
            assert_eq!(
                table.get(key, snap).unwrap(),
                model_get(model, key, snap),
                "key {key:?} at {snap}"
            );
        }
    }

    // Iteration yields exactly the sorted entries.
    let expected = sorted_entries(model);
    let mut it = table.iter();
    it.seek_to_first();
    for (k, v) in &expected {
        assert!(it.valid(), "iterator ended early: {:?}", it.status());
        assert_eq!(it.key(), k.encoded());
        assert_eq!(it.value(), v.as_slice());
        it.next();
    }
    assert!(!it.valid());
    assert!(it.status().is_none());

    // Seek to each key lands on it.
    for (k, _) in expected.iter().step_by(7) {
        it.seek(k.encoded());
        assert!(it.valid());
        assert_eq!(it.key(), k.encoded());
    }

    // Backward from the last entry yields the entries in reverse, across blocks.
    it.seek_to_last();
    for (k, v) in expected.iter().rev() {
        assert!(
            it.valid(),
            "backward iteration ended early: {:?}",
            it.status()
        );
        assert_eq!(it.key(), k.encoded());
        assert_eq!(it.value(), v.as_slice());
        it.prev();
    }
    assert!(!it.valid());
    assert!(it.status().is_none());

    // seek_for_prev lands on the last entry <= the target; prev/next zig-zag stays consistent.
    for (i, (k, _)) in expected.iter().enumerate().step_by(5) {
        it.seek_for_prev(k.encoded());
        assert!(it.valid());
        assert_eq!(it.key(), k.encoded());
        it.prev();
        match i.checked_sub(1) {
            Some(p) => {
                assert_eq!(it.key(), expected[p].0.encoded());
                it.next();
                assert_eq!(it.key(), k.encoded());
            }
            None => assert!(!it.valid()),
        }
    }
    if let Some((first, _)) = expected.first() {
        // Before the first key: nothing <= it.
        let before =
            siftdb_sstable::InternalKey::new(&[], u64::MAX >> 8, siftdb_sstable::ValueKind::Put);
        if !first.user_key().is_empty() {
            it.seek_for_prev(before.encoded());
            assert!(!it.valid());
        }
    }
}

fn options(block_size: usize, kind: FilterKind) -> TableBuildOptions {
    TableBuildOptions {
        block_size,
        block_restart_interval: 4,
        filter: Some(FilterSpec {
            kind,
            bits_per_key: 10.0,
        }),
        ..TableBuildOptions::default()
    }
}

#[test]
fn table_with_zero_and_one_entry() {
    let empty = Model::new();
    check_table(&empty, TableBuildOptions::default(), ReadMode::Mmap);
    let mut one = Model::new();
    one.insert((b"k".to_vec(), Reverse(1)), Some(b"v".to_vec()));
    check_table(&one, TableBuildOptions::default(), ReadMode::Pread);
    let mut tomb = Model::new();
    tomb.insert((b"k".to_vec(), Reverse(1)), None);
    check_table(&tomb, options(64, FilterKind::Ribbon), ReadMode::Mmap);
}

#[test]
fn table_with_huge_keys_and_values() {
    let mut m = Model::new();
    for i in 0..20u8 {
        let key = vec![i; 64 * 1024];
        m.insert((key, Reverse(u64::from(i))), Some(vec![i; 100_000]));
    }
    check_table(&m, options(4096, FilterKind::BlockedBloom), ReadMode::Mmap);
}

#[test]
fn table_with_many_versions_across_blocks() {
    let mut m = Model::new();
    for seq in 1..500u64 {
        let v = if seq % 5 == 0 {
            None
        } else {
            Some(seq.to_le_bytes().to_vec())
        };
        m.insert((b"hot".to_vec(), Reverse(seq)), v);
    }
    m.insert((b"a".to_vec(), Reverse(3)), Some(b"x".to_vec()));
    m.insert((b"z".to_vec(), Reverse(3)), Some(Vec::new()));
    check_table(&m, options(128, FilterKind::BlockedBloom), ReadMode::Pread);
    // The same with the versions of "hot" spread over many index and filter partitions.
    let partitioned = TableBuildOptions {
        partition_above: Some(0),
        metadata_block_size: 40,
        ..options(128, FilterKind::Ribbon)
    };
    check_table(&m, partitioned.clone(), ReadMode::Mmap);
    // A partitioned index beside one whole filter (what L0 tables get).
    let index_only = TableBuildOptions {
        partition_filters: false,
        ..partitioned
    };
    let (_, meta) = build_bytes(&m, index_only.clone());
    assert!(
        meta.properties.index_partitions > 1,
        "{:?}",
        meta.properties
    );
    assert_eq!(meta.properties.filter_partitions, 0);
    assert!(meta.properties.filter_bytes > 0);
    check_table(&m, index_only, ReadMode::Pread);
}

#[test]
fn large_tables_partition_their_index_and_filter() {
    let mut m = Model::new();
    for i in 0..20_000u32 {
        m.insert(
            (format!("key{i:08}").into_bytes(), Reverse(1)),
            Some(format!("value {i}").into_bytes()),
        );
    }
    let options = TableBuildOptions {
        partition_above: Some(8 << 10),
        ..options(4096, FilterKind::Ribbon)
    };
    let (bytes, meta) = build_bytes(&m, options.clone());
    assert!(
        meta.properties.index_partitions > 1,
        "{:?}",
        meta.properties
    );
    assert_eq!(
        meta.properties.filter_partitions,
        meta.properties.index_partitions
    );
    assert!(
        meta.properties.filter_expected_fpr > 0.0 && meta.properties.filter_expected_fpr < 0.01
    );
    // Below the threshold: one index and one filter.
    let whole = TableBuildOptions {
        partition_above: None,
        ..options
    };
    let (_, meta) = build_bytes(&m, whole);
    assert_eq!(meta.properties.index_partitions, 0);
    let (read, stats) = read_options();
    let (_tmp, table) = open_bytes(&bytes, cache(1 << 20), read, ReadMode::Pread);
    let table = table.unwrap();
    assert!(table.is_partitioned());
    // A present key: one filter partition, one index partition, one data block.
    let before = stats
        .filter_block_reads
        .load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(
        table.get(b"key00012345", 5).unwrap(),
        siftdb_sstable::TableGet::Found(b"value 12345".to_vec())
    );
    let after = stats
        .filter_block_reads
        .load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(after - before, 1, "one filter partition read");
    // Missing keys between and beyond the table's keys.
    assert_eq!(
        table.get(b"key00012345x", 5).unwrap(),
        siftdb_sstable::TableGet::NotFound
    );
    assert_eq!(
        table.get(b"zzz", 5).unwrap(),
        siftdb_sstable::TableGet::NotFound
    );
    assert_eq!(
        table.get(b"", 5).unwrap(),
        siftdb_sstable::TableGet::NotFound
    );
}

fn arb_model() -> impl Strategy<Value = Model> {
    let key = prop_oneof![
        proptest::collection::vec(0u8..4, 0..4),
        proptest::collection::vec(any::<u8>(), 0..24),
    ];
    let value = proptest::option::weighted(0.8, proptest::collection::vec(any::<u8>(), 0..40));
    proptest::collection::btree_map((key, (1u64..50).prop_map(Reverse)), value, 0..300)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn table_round_trips_random_contents(
        model in arb_model(),
        block_size in prop_oneof![Just(64usize), Just(512), Just(4096)],
        ribbon in any::<bool>(),
        pread in any::<bool>(),
        codec in prop_oneof![Just(Compression::None), Just(Compression::Lz4), Just(Compression::Zstd)],
        compress_index in any::<bool>(),
        partitions in prop_oneof![Just(None), Just(Some(64usize)), Just(Some(300))],
    ) {
        let kind = if ribbon { FilterKind::Ribbon } else { FilterKind::BlockedBloom };
        let mode = if pread { ReadMode::Pread } else { ReadMode::Mmap };
        let options = TableBuildOptions {
            compression: codec,
            compress_index,
            // Partitioned from the first byte, into partitions of a few index entries.
            partition_above: partitions.map(|_| 0),
            metadata_block_size: partitions.unwrap_or(4096),
            ..options(block_size, kind)
        };
        check_table(&model, options, mode);
    }
}

#[test]
fn builder_refuses_out_of_order_keys_and_stays_usable() {
    use siftdb_sstable::{InternalKey, TableBuilder, ValueKind};
    let mut bytes = Vec::new();
    let mut b = TableBuilder::new(&mut bytes, TableBuildOptions::default());
    b.add(InternalKey::new(b"b", 5, ValueKind::Put).encoded(), b"1")
        .unwrap();
    assert!(b
        .add(InternalKey::new(b"a", 9, ValueKind::Put).encoded(), b"2")
        .is_err());
    // Same user key, newer sequence: also out of order (newest must come first).
    assert!(b
        .add(InternalKey::new(b"b", 6, ValueKind::Put).encoded(), b"3")
        .is_err());
    // Same internal key twice.
    assert!(b
        .add(InternalKey::new(b"b", 5, ValueKind::Put).encoded(), b"4")
        .is_err());
    assert!(b.add(b"short", b"").is_err());
    b.add(InternalKey::new(b"b", 4, ValueKind::Delete).encoded(), b"")
        .unwrap();
    let meta = b.finish().unwrap();
    assert_eq!(meta.properties.entries, 2);
    assert_eq!(meta.properties.deletions, 1);
    assert_eq!(meta.properties.distinct_keys, 1);
}
