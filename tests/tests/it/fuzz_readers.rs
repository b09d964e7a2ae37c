//! The fuzz targets' entry points (`siftdb_tests::fuzz_entry`, also run by cargo-fuzz from
//! `tests/fuzz/`) over random bytes and over mutations of valid inputs: no panic, ever.

use proptest::prelude::*;
use siftdb_tests::fuzz_entry;

/// A blob file of 8 records (blob file 7, as the fuzz entry opens it).
fn valid_blob_file(compression: siftdb_sstable::Compression) -> Vec<u8> {
    use siftdb_sstable::blob::BlobFileWriter;
    let mut w = BlobFileWriter::new(Vec::new(), "fuzz.blob", 7, 0, compression).unwrap();
    for i in 0..8u32 {
        let value: Vec<u8> = (0..40 * i).map(|j| (j % 11) as u8).collect();
        w.add(format!("key{i}").as_bytes(), &value).unwrap();
    }
    w.finish().unwrap().1
}

fn valid_table() -> Vec<u8> {
    table_with(siftdb_sstable::Compression::None)
}

fn table_with(compression: siftdb_sstable::Compression) -> Vec<u8> {
    use siftdb_sstable::{InternalKey, TableBuildOptions, TableBuilder, ValueKind};
    let mut out = Vec::new();
    let mut b = TableBuilder::new(
        &mut out,
        TableBuildOptions {
            block_size: 128,
            compression,
            // A range filter block too (the fuzz entry asks it ranges).
            range_filter_bits_per_key: 10.0,
            // And an age, so mutations land in the optional `creation_time` property.
            creation_time: 1_800_000_000,
            ..TableBuildOptions::default()
        },
    );
    for i in 0..50u32 {
        b.add(
            InternalKey::new(format!("key{i:03}").as_bytes(), 1, ValueKind::Put).encoded(),
            b"value",
        )
        .unwrap();
    }
    b.finish().unwrap();
    out
}

fn valid_filter(kind: siftdb_filter::FilterKind) -> Vec<u8> {
    let mut b = siftdb_filter::FilterBuilder::new(kind, 7.0, siftdb_filter::KeyHasher::default());
    for i in 0..100u32 {
        b.add_key(&i.to_le_bytes());
    }
    b.finish().unwrap()
}

/// A range filter block's contents: the block a table with a range filter holds.
fn valid_range_filter() -> Vec<u8> {
    use siftdb_sstable::{InternalKey, TableBuildOptions, TableBuilder, ValueKind};
    let mut out = Vec::new();
    let mut b = TableBuilder::new(
        &mut out,
        TableBuildOptions {
            range_filter_bits_per_key: 8.0,
            ..TableBuildOptions::default()
        },
    );
    for i in 0..100u32 {
        b.add(
            InternalKey::new(format!("key{i:03}").as_bytes(), 1, ValueKind::Put).encoded(),
            b"v",
        )
        .unwrap();
    }
    let handle = b.finish().unwrap().properties.range_filter_handle.unwrap();
    // The block's contents, without its trailer.
    out[handle.offset as usize..(handle.offset + handle.size) as usize].to_vec()
}

/// One serialized instance of each standalone structure, holding a few keys.
fn valid_standalone_filters() -> Vec<Vec<u8>> {
    use siftdb_filter::{
        CountingBloom, CuckooFilter, KeyHasher, QuotientFilter, RotatingBloom, ScalableBloom,
    };
    let h = KeyHasher::default();
    let mut quotient = QuotientFilter::new(50, 6, h).unwrap();
    let mut counting = CountingBloom::new(50, 0.05, h).unwrap();
    let mut scalable = ScalableBloom::new(8, 0.05, h).unwrap();
    let mut rotating = RotatingBloom::new(3, 16, 0.05, h).unwrap();
    let mut cuckoo = CuckooFilter::new(50, 8, h).unwrap();
    for i in 0..40u32 {
        let k = i.to_le_bytes();
        counting.insert(&k);
        scalable.insert(&k);
        rotating.insert(&k);
        cuckoo.insert(&k).unwrap();
        quotient.insert(&k).unwrap();
        if i % 10 == 9 {
            rotating.rotate();
        }
    }
    vec![
        counting.to_bytes(),
        scalable.to_bytes(),
        rotating.to_bytes(),
        cuckoo.to_bytes(),
        quotient.to_bytes(),
    ]
}

fn mutate(mut data: Vec<u8>, edits: &[(usize, u8)], cut: Option<usize>) -> Vec<u8> {
    if !data.is_empty() {
        for &(at, v) in edits {
            let len = data.len();
            data[at % len] = v;
        }
    }
    if let Some(c) = cut {
        data.truncate(c % (data.len() + 1));
    }
    data
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn fuzz_table(bytes in proptest::collection::vec(any::<u8>(), 0..2048),
                  edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..6),
                  cut in any::<Option<usize>>()) {
        fuzz_entry::table_open_and_iterate(&bytes);
        fuzz_entry::table_open_and_iterate(&mutate(valid_table(), &edits, cut));
        let lz4 = table_with(siftdb_sstable::Compression::Lz4);
        fuzz_entry::table_open_and_iterate(&mutate(lz4, &edits, cut));
    }

    #[test]
    fn fuzz_compressed_block(bytes in proptest::collection::vec(any::<u8>(), 0..1024),
                             edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..6)) {
        fuzz_entry::compressed_block_decode(&bytes);
        // Mutations of real compressed blocks reach deeper into the decoders than noise.
        let block: Vec<u8> = (0..600u32).flat_map(|i| (i % 37).to_le_bytes()).collect();
        for codec in [siftdb_sstable::Compression::Lz4, siftdb_sstable::Compression::Zstd] {
            if let Some(stored) = codec.compress(&block) {
                fuzz_entry::compressed_block_decode(&mutate(stored, &edits, None));
            }
        }
    }

    #[test]
    fn fuzz_blob_file(bytes in proptest::collection::vec(any::<u8>(), 0..1024),
                      edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..6),
                      cut in any::<Option<usize>>()) {
        fuzz_entry::blob_file_decode(&bytes);
        for codec in [siftdb_sstable::Compression::None, siftdb_sstable::Compression::Lz4] {
            fuzz_entry::blob_file_decode(&mutate(valid_blob_file(codec), &edits, cut));
        }
    }

    #[test]
    fn fuzz_block(bytes in proptest::collection::vec(any::<u8>(), 0..1024)) {
        fuzz_entry::block_decode(&bytes);
    }

    #[test]
    fn fuzz_filter(bytes in proptest::collection::vec(any::<u8>(), 0..1024),
                   edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..6),
                   cut in any::<Option<usize>>()) {
        fuzz_entry::filter_decode(&bytes);
        for kind in siftdb_filter::FilterKind::ALL {
            fuzz_entry::filter_decode(&mutate(valid_filter(kind), &edits, cut));
        }
    }

    /// The standalone structures: random bytes, mutations of valid ones (sealed, so mostly
    /// refused by the checksum), and mutated payloads in valid envelopes (so the payload
    /// parsers see them).
    #[test]
    fn fuzz_standalone_filters(bytes in proptest::collection::vec(any::<u8>(), 0..1024),
                               edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..6),
                               cut in any::<Option<usize>>()) {
        fuzz_entry::standalone_filters_decode(&bytes);
        for valid in valid_standalone_filters() {
            fuzz_entry::standalone_filters_decode(&mutate(valid.clone(), &edits, cut));
            // The payload alone (the envelope's 24-byte header and 4-byte CRC cut off), mutated:
            // the entry wraps it in a fresh envelope.
            let payload = valid[24..valid.len() - 4].to_vec();
            fuzz_entry::standalone_filters_decode(&mutate(payload, &edits, cut));
        }
    }

    #[test]
    fn fuzz_range_filter(bytes in proptest::collection::vec(any::<u8>(), 0..1024),
                         edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..6),
                         cut in any::<Option<usize>>()) {
        fuzz_entry::range_filter_decode(&bytes);
        fuzz_entry::range_filter_decode(&mutate(valid_range_filter(), &edits, cut));
    }
}

proptest! {
    // Each case opens a database (in memory): fewer cases.
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn fuzz_wal_replay(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
        fuzz_entry::wal_replay(&bytes);
    }

    #[test]
    fn fuzz_manifest_replay(bytes in proptest::collection::vec(any::<u8>(), 0..1024)) {
        fuzz_entry::manifest_replay(&bytes);
    }

    #[test]
    fn fuzz_backup_meta(bytes in proptest::collection::vec(any::<u8>(), 0..1024),
                        edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..6),
                        cut in proptest::option::of(any::<usize>())) {
        fuzz_entry::backup_meta_decode(&bytes);
        static SEED: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
        let seed = SEED.get_or_init(fuzz_entry::valid_backup_meta);
        prop_assert!(!seed.is_empty(), "the seed backup has a metadata file");
        fuzz_entry::backup_meta_decode(&mutate(seed.clone(), &edits, cut));
    }

    #[test]
    fn fuzz_keyspace_wal_records(edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..6),
                                 cut in proptest::option::of(any::<usize>()),
                                 extra in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..64))) {
        let records = mutated_records(fuzz_entry::keyspace_log_records(true), &edits, cut, extra);
        fuzz_entry::wal_records_replay(&records);
    }

    #[test]
    fn fuzz_keyspace_manifest_records(edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..6),
                                      cut in proptest::option::of(any::<usize>()),
                                      extra in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..64))) {
        let records = mutated_records(fuzz_entry::keyspace_log_records(false), &edits, cut, extra);
        fuzz_entry::manifest_records_replay(&records);
    }
}

/// Valid log records with bytes overwritten (`edits`: position over all records, new byte), the
/// last one cut short, and an arbitrary record appended.
fn mutated_records(
    mut records: Vec<Vec<u8>>,
    edits: &[(usize, u8)],
    cut: Option<usize>,
    extra: Option<Vec<u8>>,
) -> Vec<Vec<u8>> {
    assert!(!records.is_empty(), "the seed log holds records");
    let total: usize = records.iter().map(Vec::len).sum();
    for &(at, byte) in edits {
        let mut at = at % total.max(1);
        for r in records.iter_mut() {
            if at < r.len() {
                r[at] = byte;
                break;
            }
            at -= r.len();
        }
    }
    if let (Some(cut), Some(last)) = (cut, records.last_mut()) {
        let keep = cut % (last.len() + 1);
        last.truncate(keep);
    }
    records.extend(extra);
    records
}
