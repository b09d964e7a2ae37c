//! Damaged tables: every read either returns the right answer (the damaged byte was not read)
//! or a typed corruption error. Never a wrong value, never a panic.

use std::cmp::Reverse;
use std::sync::Arc;

use crate::common::*;
use proptest::prelude::*;
use siftdb_filter::KeyHasher;
use siftdb_sstable::{
    Compression, InternalKey, ReadMode, SstError, TableBuildOptions, TableIter, TableIterOptions,
    TableReadOptions,
};

fn model() -> Model {
    let mut m = Model::new();
    for i in 0..60u32 {
        let v = if i % 7 == 0 {
            None
        } else {
            Some(format!("value-{i}-{i}-{i}-{i}").into_bytes())
        };
        m.insert(
            (
                format!("k{i:03}").into_bytes(),
                Reverse(u64::from(i % 3 + 1)),
            ),
            v,
        );
    }
    m
}

fn small_table() -> Vec<u8> {
    table_with(Compression::None)
}

fn table_with(compression: Compression) -> Vec<u8> {
    table_shaped(compression, None, true)
}

/// With `partitions`, the index (and, with `partition_filters`, the filter) is partitioned into
/// runs of that many bytes.
fn table_shaped(
    compression: Compression,
    partitions: Option<usize>,
    partition_filters: bool,
) -> Vec<u8> {
    let (bytes, meta) = build_bytes(
        &model(),
        TableBuildOptions {
            block_size: 256,
            compression,
            partition_above: partitions.map(|_| 0),
            metadata_block_size: partitions.unwrap_or(4096),
            partition_filters,
            // A range filter block too, so damage lands in it.
            range_filter_bits_per_key: 10.0,
            ..TableBuildOptions::default()
        },
    );
    assert!(meta.properties.range_filter_handle.is_some());
    if partitions.is_some() {
        assert!(meta.properties.index_partitions > 1);
    }
    if compression != Compression::None {
        assert!(
            meta.file_size < meta.uncompressed_size,
            "{compression:?} saved nothing"
        );
    }
    bytes
}

/// Opens `bytes` and does every read; returns (wrong answers, corruption errors seen).
fn exercise(bytes: &[u8]) -> (usize, usize) {
    let m = model();
    let (read, _) = read_options();
    let (_tmp, table) = open_bytes(bytes, cache(1 << 20), read, ReadMode::Pread);
    let table = match table {
        Ok(t) => Arc::new(t),
        Err(e) => {
            assert!(
                e.is_corruption(),
                "open failed with a non-corruption error: {e}"
            );
            return (0, 1);
        }
    };
    let mut wrong = 0;
    let mut errors = 0;
    for i in 0..65u32 {
        let key = format!("k{i:03}");
        match table.get(key.as_bytes(), 10) {
            Ok(got) => {
                if got != model_get(&m, key.as_bytes(), 10) {
                    wrong += 1;
                }
            }
            Err(e) => {
                assert!(e.is_corruption(), "{e}");
                errors += 1;
            }
        }
    }
    // The range filter: a range holding a key of the table must never be skipped.
    for i in 0..65u32 {
        let start = format!("k{i:03}").into_bytes();
        let mut end = start.clone();
        end.push(0);
        let held = m.keys().any(|(k, _)| *k == start);
        match table.range_may_overlap(Some(&start), Some(&end)) {
            Ok(false) if held => wrong += 1,
            Ok(_) => {}
            Err(e) => {
                assert!(e.is_corruption(), "{e}");
                errors += 1;
            }
        }
    }
    let expected = sorted_entries(&m);
    // Through the cache, and as a compaction reads: around the cache, a few blocks read at
    // once (a flipped byte inside a read-ahead window must fail its own block's check).
    let compaction_like = TableIterOptions {
        fill_cache: false,
        read_once: true,
        readahead_bytes: 700,
        ..TableIterOptions::default()
    };
    // Through the cache reading ahead, first (before the plain pass fills the cache): a
    // scan's automatic readahead, and a fixed one.
    let scan_auto = TableIterOptions {
        auto_readahead: true,
        ..TableIterOptions::default()
    };
    let scan_fixed = TableIterOptions {
        readahead_bytes: 700,
        ..TableIterOptions::default()
    };
    for it in [
        table.iter_with(scan_auto),
        table.iter_with(scan_fixed),
        table.iter(),
        table.iter_with(compaction_like),
    ] {
        let (w, e) = check_iter(it, &expected);
        wrong += w;
        errors += e;
    }
    (wrong, errors)
}

/// Walks `it` forward, then backward, against `expected`: (wrong answers, errors).
fn check_iter(mut it: TableIter, expected: &[(InternalKey, Vec<u8>)]) -> (usize, usize) {
    let (mut wrong, mut errors) = (0, 0);
    it.seek_to_first();
    let mut n = 0;
    while it.valid() {
        if n >= expected.len()
            || it.key() != expected[n].0.encoded()
            || it.value() != expected[n].1.as_slice()
        {
            wrong += 1;
            break;
        }
        n += 1;
        it.next();
    }
    if let Some(e) = it.status() {
        assert!(e.is_corruption(), "{e}");
        errors += 1;
    } else if n != expected.len() {
        wrong += 1;
    }
    // Backward, the same entries in reverse, or an error.
    it.seek_to_last();
    let mut n = 0;
    while it.valid() {
        let want = expected.len().checked_sub(n + 1).map(|i| &expected[i]);
        if want.is_none_or(|(k, v)| it.key() != k.encoded() || it.value() != v.as_slice()) {
            wrong += 1;
            break;
        }
        n += 1;
        it.prev();
    }
    if let Some(e) = it.status() {
        assert!(e.is_corruption(), "{e}");
        errors += 1;
    } else if n != expected.len() {
        wrong += 1;
    }
    (wrong, errors)
}

#[test]
fn table_flip_every_byte_never_gives_a_wrong_answer() {
    for compression in [Compression::None, Compression::Lz4, Compression::Zstd] {
        flip_every_byte(&table_with(compression));
    }
    flip_every_byte(&table_shaped(Compression::None, Some(100), true));
    flip_every_byte(&table_shaped(Compression::Lz4, Some(100), true));
    // L0's shape: a partitioned index beside one whole filter.
    flip_every_byte(&table_shaped(Compression::Lz4, Some(100), false));
}

fn flip_every_byte(bytes: &[u8]) {
    assert_eq!(exercise(bytes), (0, 0));
    let mut detected = 0;
    for at in 0..bytes.len() {
        for mask in [0x01u8, 0x80] {
            let mut bad = bytes.to_vec();
            bad[at] ^= mask;
            let (wrong, errors) = exercise(&bad);
            assert_eq!(
                wrong,
                0,
                "flip {mask:#x} at byte {at} of {} gave a wrong answer",
                bytes.len()
            );
            if errors > 0 {
                detected += 1;
            }
        }
    }
    // Every byte of the table is covered by a checksum and read by a full scan or open.
    assert_eq!(detected, bytes.len() * 2);
}

#[test]
fn table_truncations_are_corruption() {
    for (compression, partitions) in [
        (Compression::None, None),
        (Compression::Lz4, None),
        (Compression::Lz4, Some(100)),
    ] {
        let bytes = table_shaped(compression, partitions, true);
        for len in 0..bytes.len() {
            let (wrong, errors) = exercise(&bytes[..len]);
            assert_eq!(wrong, 0);
            assert!(errors > 0, "truncation to {len} not detected");
        }
    }
}

#[test]
fn a_compressed_block_that_does_not_decompress_is_corruption_naming_its_offset() {
    // Rewrite a compressed block's payload with garbage and fix its checksum: only the codec can
    // tell, and it must, with the file and offset.
    let bytes = table_with(Compression::Lz4);
    let (read, _) = read_options();
    let mut damaged = 0;
    for at in 0..bytes.len() - siftdb_sstable::format::FOOTER_LEN {
        // A block trailer: codec byte 1 followed by the CRC of everything since the last one.
        if bytes[at] != 1 {
            continue;
        }
        let Some(start) = (0..at).rev().find(|&s| {
            let trailer_crc = u32::from_le_bytes(bytes[at + 1..at + 5].try_into().unwrap());
            let mut h = crc32fast::Hasher::new();
            h.update(&bytes[s..at]);
            h.update(&[1]);
            h.finalize() == trailer_crc
        }) else {
            continue;
        };
        let mut bad = bytes.clone();
        for b in &mut bad[start + 2..at] {
            *b = 0xee;
        }
        let mut h = crc32fast::Hasher::new();
        h.update(&bad[start..at]);
        h.update(&[1]);
        bad[at + 1..at + 5].copy_from_slice(&h.finalize().to_le_bytes());
        let (_tmp, table) = open_bytes(&bad, cache(1 << 20), read.clone(), ReadMode::Pread);
        let err = match table {
            Err(e) => e,
            Ok(t) => {
                let t = Arc::new(t);
                let mut it = t.iter();
                it.seek_to_first();
                while it.valid() {
                    it.next();
                }
                it.take_error().expect("the damaged block was never read")
            }
        };
        match err {
            SstError::Corruption {
                offset, ref reason, ..
            } => {
                assert_eq!(offset, start as u64, "{reason}");
                damaged += 1;
            }
            other => panic!("expected corruption, got {other}"),
        }
        break;
    }
    assert_eq!(damaged, 1, "no compressed block found");
}

#[test]
fn table_with_foreign_filter_seed_is_refused() {
    let bytes = small_table();
    let read = TableReadOptions {
        key_hasher: KeyHasher::xxh3(12345),
        ..TableReadOptions::default()
    };
    let (_tmp, table) = open_bytes(&bytes, cache(1 << 20), read, ReadMode::Mmap);
    assert!(matches!(table, Err(SstError::Filter { .. })));
}

#[test]
fn table_from_future_version_is_refused() {
    let mut bytes = small_table();
    let footer = bytes.len() - siftdb_sstable::format::FOOTER_LEN;
    let future = siftdb_sstable::format::TABLE_FORMAT_VERSION + 1;
    bytes[footer + 64..footer + 68].copy_from_slice(&future.to_le_bytes());
    let crc = crc32fast::hash(&bytes[footer..footer + 68]);
    bytes[footer + 68..footer + 72].copy_from_slice(&crc.to_le_bytes());
    let (read, _) = read_options();
    let (_tmp, table) = open_bytes(&bytes, cache(1 << 20), read, ReadMode::Mmap);
    assert!(matches!(
        table,
        Err(SstError::UnsupportedVersion { version, .. }) if version == future
    ));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn table_open_random_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = exercise(&bytes);
    }

    #[test]
    fn table_random_damage_never_gives_a_wrong_answer(
        edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6),
    ) {
        let mut bytes = small_table();
        let len = bytes.len();
        for (at, v) in edits {
            bytes[at % len] = v;
        }
        let (wrong, _) = exercise(&bytes);
        prop_assert_eq!(wrong, 0);
    }
}
