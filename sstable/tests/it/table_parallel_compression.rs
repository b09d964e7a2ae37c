//! A table built with worker threads (`compression_threads` above 1: data blocks compressed and
//! filter partitions built off the building thread) is byte for byte the table one thread
//! builds: same blocks, same order, same index and filters — whole and partitioned, LZ4,
//! Zstandard and no codec, blocks that compress and blocks that do not, keys whose versions
//! span blocks, and a filter resized while the table is written.

use siftdb_sstable::{
    Compression, FilterSpec, InternalKey, TableBuildOptions, TableBuilder, ValueKind,
};

/// How the table is written besides its codec and threads.
#[derive(Debug, Clone, Copy, Default)]
struct Shape {
    partitioned: bool,
    /// Versions of each key (newest first).
    versions: u64,
    /// Bits/key set halfway through (`None`: the filter keeps its spec).
    resize_to: Option<f64>,
    keys: u32,
}

fn build(threads: usize, codec: Compression, partitioned: bool) -> Vec<u8> {
    build_shaped(
        threads,
        codec,
        Shape {
            partitioned,
            versions: 1,
            resize_to: None,
            keys: 5000,
        },
    )
}

fn build_shaped(threads: usize, codec: Compression, shape: Shape) -> Vec<u8> {
    let partitioned = shape.partitioned;
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
    for i in 0..shape.keys {
        if shape.resize_to.is_some() && i == shape.keys / 2 {
            b.set_filter_bits_per_key(shape.resize_to.unwrap_or(10.0));
        }
        let key = format!("key{i:06}");
        // Every seventh value is noise that does not compress.
        let value: Vec<u8> = if i % 7 == 0 {
            (0..60u32)
                .map(|j| (j.wrapping_mul(2654435761) ^ i) as u8)
                .collect()
        } else {
            format!("value-{}-", i % 13).repeat(5).into_bytes()
        };
        for version in (0..shape.versions).rev() {
            let sequence = u64::from(i) * shape.versions + version + 1;
            b.add(
                InternalKey::new(key.as_bytes(), sequence, ValueKind::Put).encoded(),
                &value,
            )
            .unwrap();
        }
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

#[test]
fn worker_threads_build_the_same_table_bytes_in_every_shape() {
    let shapes = [
        // Versions of one key span blocks, so filter partitions share a key.
        Shape {
            partitioned: true,
            versions: 9,
            resize_to: None,
            keys: 2000,
        },
        // The filter is resized after the worker built the first partitions.
        Shape {
            partitioned: true,
            versions: 1,
            resize_to: Some(6.5),
            keys: 5000,
        },
        // Too small to partition: the worker's partitions are not used.
        Shape {
            partitioned: true,
            versions: 1,
            resize_to: None,
            keys: 12,
        },
    ];
    for codec in [Compression::Lz4, Compression::None] {
        for shape in shapes {
            let one = build_shaped(1, codec, shape);
            for threads in [2, 3] {
                assert!(
                    build_shaped(threads, codec, shape) == one,
                    "{codec:?}, {shape:?}, {threads} threads"
                );
            }
        }
    }
}
