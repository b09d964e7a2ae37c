//! Tables carrying range tombstones: the block round-trips, the table's boundary keys and
//! sequence range cover the tombstones, a tombstone-only table works, tables without tombstones
//! (new or of an older format) have none, and damage to the block is a corruption error at open.

use std::cmp::Reverse;
use std::path::Path;
use std::sync::Arc;

use crate::common::*;
use siftdb_filter::FilterKind;
use siftdb_sstable::format::{block_trailer, FOOTER_LEN, NO_COMPRESSION, TABLE_FORMAT_VERSION};
use siftdb_sstable::{
    open_random_access, FilterSpec, FragmentedRangeTombstones, InternalKey, RangeTombstone,
    ReadMode, SstError, Table, TableBuildOptions, TableBuilder, TableGet, TableReadOptions,
    ValueKind, MAX_SEQUENCE,
};

fn tombstones(list: &[(&str, &str, u64)]) -> FragmentedRangeTombstones {
    FragmentedRangeTombstones::new(
        list.iter()
            .map(|&(s, e, q)| RangeTombstone::new(s.as_bytes(), e.as_bytes(), q)),
    )
}

/// Keys `k010, k012, …, k050` at sequences 1..=3; every fifth a point tombstone.
fn model() -> Model {
    let mut m = Model::new();
    for i in (10..=50u32).step_by(2) {
        let v = (i % 5 != 0).then(|| format!("value-{i}").into_bytes());
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

fn small_blocks() -> TableBuildOptions {
    TableBuildOptions {
        block_size: 128,
        ..TableBuildOptions::default()
    }
}

fn model_of(list: &[(&str, u64)]) -> Model {
    let mut m = Model::new();
    for &(k, seq) in list {
        m.insert((k.as_bytes().to_vec(), Reverse(seq)), Some(b"v".to_vec()));
    }
    m
}

fn footer_version(bytes: &[u8]) -> u32 {
    let footer = bytes.len() - FOOTER_LEN;
    u32::from_le_bytes(bytes[footer + 64..footer + 68].try_into().unwrap())
}

fn set_footer_version(bytes: &mut [u8], version: u32) {
    let footer = bytes.len() - FOOTER_LEN;
    bytes[footer + 64..footer + 68].copy_from_slice(&version.to_le_bytes());
    let crc = crc32fast::hash(&bytes[footer..footer + 68]);
    bytes[footer + 68..footer + 72].copy_from_slice(&crc.to_le_bytes());
}

fn open(bytes: &[u8], mode: ReadMode) -> (tempfile::NamedTempFile, siftdb_sstable::Result<Table>) {
    let (read, _) = read_options();
    open_bytes(bytes, cache(1 << 20), read, mode)
}

fn mentions_range_del(bytes: &[u8]) -> bool {
    bytes.windows(9).any(|w| w == b"range_del")
}

/// The offset a corruption error names.
fn error_offset(e: &SstError) -> Option<u64> {
    match e {
        SstError::Corruption { offset, .. } | SstError::ChecksumMismatch { offset, .. } => {
            Some(*offset)
        }
        _ => None,
    }
}

#[test]
fn points_and_tombstones_round_trip() {
    let m = model();
    let t = tombstones(&[
        ("k020", "k030", 50),
        ("k025", "k040", 60),
        ("k045", "k047", 5),
    ]);
    assert_eq!(t.len(), 4);
    for mode in [ReadMode::Mmap, ReadMode::Pread] {
        let (bytes, meta) = build_bytes_with_tombstones(&m, t.clone(), small_blocks());
        assert_eq!(footer_version(&bytes), TABLE_FORMAT_VERSION);
        assert_eq!(TABLE_FORMAT_VERSION, 3);
        let props = &meta.properties;
        assert_eq!(props.entries, m.len() as u64);
        assert_eq!(props.range_deletions, t.tombstone_count() as u64);
        assert!(props.range_del_handle.is_some());
        assert!(props.data_blocks > 1);
        // Points reach beyond the tombstones on both sides: the boundaries are point keys.
        let entries = sorted_entries(&m);
        assert_eq!(props.smallest_key, entries[0].0.encoded());
        assert_eq!(props.largest_key, entries.last().unwrap().0.encoded());
        // The sequence range spans points (1..=3) and tombstones (5..=60).
        assert_eq!((props.min_sequence, props.max_sequence), (1, 60));

        let (_tmp, table) = open(&bytes, mode);
        let table = Arc::new(table.unwrap());
        assert_eq!(table.properties(), props);
        assert_eq!(table.range_tombstones().map(|t| t.as_ref()), Some(&t));
        assert_eq!(
            table.range_tombstones().unwrap().max_covering(b"k026", 55),
            Some(50)
        );
        // The table layer returns point entries as stored; applying the tombstones is the
        // reader's job.
        for (k, _) in m.keys() {
            assert_eq!(table.get(k, 100).unwrap(), model_get(&m, k, 100));
        }
        let mut it = table.iter();
        it.seek_to_first();
        for (k, v) in &entries {
            assert!(it.valid(), "{:?}", it.status());
            assert_eq!((it.key(), it.value()), (k.encoded(), v.as_slice()));
            it.next();
        }
        assert!(!it.valid() && it.status().is_none());
    }
}

#[test]
fn boundary_keys_cover_the_tombstones() {
    let build = |points: &[(&str, u64)], t: &[(&str, &str, u64)]| {
        let (bytes, meta) = build_bytes_with_tombstones(
            &model_of(points),
            tombstones(t),
            TableBuildOptions::default(),
        );
        let (_tmp, table) = open(&bytes, ReadMode::Pread);
        assert_eq!(table.unwrap().properties(), &meta.properties);
        let p = meta.properties;
        (
            InternalKey::from_encoded(p.smallest_key).unwrap(),
            InternalKey::from_encoded(p.largest_key).unwrap(),
            (p.min_sequence, p.max_sequence),
        )
    };
    let put = |k: &str, s: u64| InternalKey::new(k.as_bytes(), s, ValueKind::Put);
    let range_start = |k: &str, s: u64| InternalKey::new(k.as_bytes(), s, ValueKind::RangeDelete);

    // Tombstones beyond the points on both sides: the first fragment's start at its newest
    // sequence (3: the fragment [a, b) has only 3), the end sentinel of the last end.
    let (smallest, largest, seqs) = build(&[("m", 5), ("n", 6)], &[("a", "z", 3), ("b", "c", 9)]);
    assert_eq!(smallest, range_start("a", 3));
    assert_eq!(largest, InternalKey::range_end_sentinel(b"z"));
    assert!(largest.is_range_end_sentinel());
    assert_eq!(seqs, (3, 9));
    // The first fragment's newest sequence, not the table's.
    let (smallest, _, _) = build(&[("m", 5)], &[("a", "c", 3), ("a", "b", 8), ("b", "c", 9)]);
    assert_eq!(smallest, range_start("a", 8));

    // A tombstone starting at the first point's user key: the newer sorts first.
    let (smallest, largest, _) = build(&[("b", 5), ("d", 1)], &[("b", "c", 9)]);
    assert_eq!(smallest, range_start("b", 9));
    assert_eq!(largest, put("d", 1));
    let (smallest, _, _) = build(&[("b", 5), ("d", 1)], &[("b", "c", 3)]);
    assert_eq!(smallest, put("b", 5));

    // A tombstone ending at the last point's user key: the sentinel sorts before every version
    // of it, so the point is the largest key.
    let (_, largest, _) = build(&[("a", 1), ("m", 1)], &[("b", "m", 2)]);
    assert_eq!(largest, put("m", 1));
    assert!(!largest.is_range_end_sentinel());
    assert!(InternalKey::range_end_sentinel(b"m") < put("m", MAX_SEQUENCE));
    // Ending just after it: the sentinel.
    let (_, largest, _) = build(&[("a", 1), ("m", 1)], &[("b", "m\0", 2)]);
    assert_eq!(largest, InternalKey::range_end_sentinel(b"m\0"));
    assert!(put("m", 1) < largest);
}

#[test]
fn a_table_of_tombstones_only() {
    let t = tombstones(&[("c", "f", 7), ("a", "d", 4), ("x", "y", 11)]);
    for (options, pin) in [
        (TableBuildOptions::default(), false),
        (TableBuildOptions::default(), true),
        (
            TableBuildOptions {
                filter: Some(FilterSpec {
                    kind: FilterKind::Ribbon,
                    bits_per_key: 8.0,
                }),
                partition_above: Some(0),
                ..TableBuildOptions::default()
            },
            false,
        ),
        (
            TableBuildOptions {
                filter: None,
                ..TableBuildOptions::default()
            },
            true,
        ),
    ] {
        let mut bytes = Vec::new();
        let mut b = TableBuilder::new(&mut bytes, options);
        b.set_range_tombstones(t.clone());
        assert!(b.estimated_size() >= t.encode().len() as u64);
        let meta = b.finish().unwrap();
        let p = &meta.properties;
        assert_eq!((p.entries, p.data_blocks), (0, 0));
        assert_eq!(p.range_deletions, t.tombstone_count() as u64);
        assert_eq!(
            p.smallest_key,
            InternalKey::new(b"a", 4, ValueKind::RangeDelete).encoded()
        );
        assert_eq!(
            p.largest_key,
            InternalKey::range_end_sentinel(b"y").encoded()
        );
        assert_eq!((p.min_sequence, p.max_sequence), (4, 11));

        for mode in [ReadMode::Mmap, ReadMode::Pread] {
            let (_tmp, table) = open_bytes(
                &bytes,
                cache(1 << 20),
                TableReadOptions {
                    pin_filter_and_index: pin,
                    ..TableReadOptions::default()
                },
                mode,
            );
            let table = Arc::new(table.unwrap());
            assert_eq!(table.range_tombstones().map(|t| t.as_ref()), Some(&t));
            for key in [&b"a"[..], b"c", b"x", b"z", b""] {
                assert_eq!(table.get(key, MAX_SEQUENCE).unwrap(), TableGet::NotFound);
            }
            let mut it = table.iter();
            it.seek_to_first();
            assert!(!it.valid());
            it.seek_to_last();
            assert!(!it.valid());
            it.seek(InternalKey::new(b"c", 5, ValueKind::Put).encoded());
            assert!(!it.valid());
            assert!(it.status().is_none());
        }
    }
}

#[test]
fn a_table_without_tombstones_has_none() {
    // Never set, or set empty (ranges that cover nothing).
    let empty = tombstones(&[("b", "b", 3), ("d", "c", 4)]);
    assert!(empty.is_empty());
    for t in [None, Some(empty)] {
        let (bytes, meta) = match t {
            None => build_bytes(&model(), small_blocks()),
            Some(t) => build_bytes_with_tombstones(&model(), t, small_blocks()),
        };
        assert_eq!(footer_version(&bytes), TABLE_FORMAT_VERSION);
        assert_eq!(meta.properties.range_deletions, 0);
        assert_eq!(meta.properties.range_del_handle, None);
        assert_eq!(meta.properties.min_sequence, 1);
        // Neither property is written.
        assert!(!mentions_range_del(&bytes));
        let (_tmp, table) = open(&bytes, ReadMode::Mmap);
        let table = table.unwrap();
        assert!(table.range_tombstones().is_none());
        assert_eq!(table.properties().range_deletions, 0);
    }
    // A table with tombstones names them.
    let (bytes, _) =
        build_bytes_with_tombstones(&model(), tombstones(&[("a", "b", 1)]), small_blocks());
    assert!(mentions_range_del(&bytes));
    // An empty table stays as it was: sequence range 0..=0, no boundaries.
    let (_, meta) = build_bytes(&Model::new(), TableBuildOptions::default());
    assert_eq!(
        (meta.properties.min_sequence, meta.properties.max_sequence),
        (0, 0)
    );
    assert!(meta.properties.smallest_key.is_empty() && meta.properties.largest_key.is_empty());
}

#[test]
fn the_builder_refuses_range_deletes_among_point_entries() {
    let mut bytes = Vec::new();
    let mut b = TableBuilder::new(&mut bytes, TableBuildOptions::default());
    b.add(InternalKey::new(b"a", 1, ValueKind::Put).encoded(), b"v")
        .unwrap();
    let err = b
        .add(
            InternalKey::new(b"b", 2, ValueKind::RangeDelete).encoded(),
            b"c",
        )
        .unwrap_err();
    assert!(matches!(err, SstError::InvalidArgument(_)), "{err}");
    assert!(b
        .add(InternalKey::range_end_sentinel(b"c").encoded(), b"")
        .is_err());
    // The builder is still usable.
    b.add(InternalKey::new(b"b", 2, ValueKind::Merge).encoded(), b"+1")
        .unwrap();
    assert_eq!(b.finish().unwrap().properties.entries, 2);
}

#[test]
fn a_damaged_tombstone_block_is_corruption_at_its_offset() {
    let t = tombstones(&[("k020", "k030", 50), ("k025", "k040", 60)]);
    let (bytes, meta) = build_bytes_with_tombstones(&model(), t, small_blocks());
    let handle = meta.properties.range_del_handle.unwrap();
    let (start, size) = (handle.offset as usize, handle.size as usize);
    // Every flipped bit of the block and its trailer: the CRC catches it at open.
    for at in start..start + size + 5 {
        for mask in [0x01u8, 0x80] {
            let mut bad = bytes.clone();
            bad[at] ^= mask;
            let (_tmp, table) = open(&bad, ReadMode::Pread);
            let err = table.expect_err("damage not detected at open");
            assert!(err.is_corruption(), "{err}");
            assert_eq!(error_offset(&err), Some(handle.offset), "{err}");
            assert!(err.to_string().contains("test.sst"), "{err}");
        }
    }

    // Contents that pass the CRC but do not decode.
    let rewrite = |contents: &[u8]| {
        assert_eq!(contents.len(), size);
        let mut bad = bytes.clone();
        bad[start..start + size].copy_from_slice(contents);
        let trailer = block_trailer(contents, NO_COMPRESSION);
        bad[start + size..start + size + 5].copy_from_slice(&trailer);
        let (_tmp, table) = open(&bad, ReadMode::Mmap);
        table.expect_err("damage not detected at open")
    };
    let mut garbage = vec![0xee; size];
    garbage[0] = 1;
    match rewrite(&garbage) {
        SstError::Corruption { offset, reason, .. } => {
            assert_eq!(offset, handle.offset);
            assert!(reason.contains("range tombstone"), "{reason}");
        }
        other => panic!("expected corruption, got {other}"),
    }
    // A valid block holding another count than the properties say.
    let exact = {
        // [a, bc){9} has one tombstone, [a, b){9, 8} two: the same number of bytes.
        let one = tombstones(&[("a", "bc", 9)]).encode();
        let two = tombstones(&[("a", "b", 9), ("a", "b", 8)]);
        assert_eq!(one.len(), two.encode().len());
        let (bytes, meta) = build_bytes_with_tombstones(&model(), two, small_blocks());
        let h = meta.properties.range_del_handle.unwrap();
        let (s, n) = (h.offset as usize, h.size as usize);
        let mut bad = bytes;
        bad[s..s + n].copy_from_slice(&one);
        bad[s + n..s + n + 5].copy_from_slice(&block_trailer(&one, NO_COMPRESSION));
        let (_tmp, table) = open(&bad, ReadMode::Pread);
        table.expect_err("count mismatch not detected")
    };
    match exact {
        SstError::Corruption { reason, .. } => assert!(reason.contains("tombstones"), "{reason}"),
        other => panic!("expected corruption, got {other}"),
    }

    // A table claiming an older format cannot have range tombstones.
    let mut old = bytes.clone();
    set_footer_version(&mut old, 2);
    let (_tmp, table) = open(&old, ReadMode::Pread);
    assert!(matches!(table, Err(SstError::Corruption { .. })));
}

#[test]
fn no_flipped_byte_changes_the_tombstones_silently() {
    let t = tombstones(&[("k020", "k030", 50), ("k025", "k040", 60), ("k1", "k2", 3)]);
    let (bytes, _) = build_bytes_with_tombstones(&model(), t.clone(), small_blocks());
    for at in 0..bytes.len() {
        for mask in [0x01u8, 0x80] {
            let mut bad = bytes.clone();
            bad[at] ^= mask;
            let (_tmp, table) = open(&bad, ReadMode::Pread);
            match table {
                Ok(table) => assert_eq!(
                    table.range_tombstones().map(|t| t.as_ref()),
                    Some(&t),
                    "flip {mask:#x} at {at}"
                ),
                Err(e) => assert!(e.is_corruption(), "{e}"),
            }
        }
    }
}

#[test]
fn tables_of_older_formats_open_without_tombstones() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures");
    let mut seen = std::collections::BTreeSet::new();
    for dir in ["format-v1", "format-v2", "format-v3"] {
        let mut ssts: Vec<_> = std::fs::read_dir(fixtures.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "sst"))
            .collect();
        ssts.sort();
        assert!(!ssts.is_empty(), "{dir}");
        for path in ssts {
            let bytes = std::fs::read(&path).unwrap();
            seen.insert(footer_version(&bytes));
            for mode in [ReadMode::Mmap, ReadMode::Pread] {
                let file = open_random_access(std::fs::File::open(&path).unwrap(), mode).unwrap();
                let table = Table::open(
                    file,
                    1,
                    path.display().to_string(),
                    cache(1 << 20),
                    TableReadOptions::default(),
                )
                .unwrap();
                assert!(table.range_tombstones().is_none());
                assert_eq!(table.properties().range_deletions, 0);
                assert_eq!(table.properties().range_del_handle, None);
                let table = Arc::new(table);
                let mut it = table.iter();
                it.seek_to_first();
                let mut n = 0;
                let mut first = None;
                while it.valid() {
                    first.get_or_insert_with(|| it.key().to_vec());
                    n += 1;
                    it.next();
                }
                assert!(it.status().is_none(), "{:?}", it.status());
                assert_eq!(n, table.properties().entries, "{}", path.display());
                let first = first.unwrap();
                assert_eq!(first, table.properties().smallest_key);
                let user_key = siftdb_sstable::user_key_of(&first);
                assert!(!matches!(
                    table.get(user_key, MAX_SEQUENCE).unwrap(),
                    TableGet::NotFound
                ));
            }
        }
    }
    // Both older table formats are among the fixtures.
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), vec![1, 2]);
}
