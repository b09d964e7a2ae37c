//! A table built with data blocks compressed on worker threads (`compression_threads` above 1)
//! is byte for byte the table one thread builds: same blocks, same order, same index and
//! filters — whole and partitioned, LZ4 and Zstandard, blocks that compress and blocks that do
//! not.

use siftdb_sstable::{
    Compression, FilterSpec, InternalKey, TableBuildOptions, TableBuilder, ValueKind,
};

fn build(threads: usize, codec: Compression, partitioned: bool) -> Vec<u8> {
    let options = TableBuildOptions {
        compression: codec,
        compression_threads: threads,
        block_size: 512,
        partition_above: partitioned.then_some(256),
        metadata_block_size: 256,
        filter: Some(FilterSpec {
            kind: siftdb_filter::FilterKind::Ribbon,
            bits_per_key: 10.0,
        }),
        ..TableBuildOptions::default()
    };
    let mut out = Vec::new();
    let mut b = TableBuilder::new(&mut out, options);
    for i in 0..5000u32 {
        let key = format!("key{i:06}");
        // Every seventh value is noise that does not compress.
        let value: Vec<u8> = if i % 7 == 0 {
            (0..60u32)
                .map(|j| (j.wrapping_mul(2654435761) ^ i) as u8)
                .collect()
        } else {
            format!("value-{}-", i % 13).repeat(5).into_bytes()
        };
        b.add(
            InternalKey::new(key.as_bytes(), u64::from(i) + 1, ValueKind::Put).encoded(),
            &value,
        )
        .unwrap();
    }
    b.finish().unwrap();
    out
}

#[test]
fn parallel_compression_builds_the_same_table_bytes() {
    for codec in [Compression::Lz4, Compression::Zstd] {
        for partitioned in [false, true] {
            let one = build(1, codec, partitioned);
            for threads in [2, 3] {
                assert!(
                    build(threads, codec, partitioned) == one,
                    "{codec:?}, partitioned {partitioned}, {threads} threads"
                );
            }
        }
    }
}
