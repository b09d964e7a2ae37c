//! Block codecs on siftdb's own data blocks: compress and decompress throughput, and the size
//! each codec stores, for the codecs the table format has (LZ4 through `lz4_flex`, Zstd level 3
//! through `zstd`) and the pure-Rust Zstd candidate (`ruzstd`, its "fastest" level ≈ zstd 1 and
//! its decoder), so the choice in docs/TUNING.md rests on a measurement.
//!
//! The blocks are real data blocks (`BlockBuilder`, restart interval 16, ~4 KiB) of the runner's
//! keys and db_bench-style values at `--compression_ratio` 0.5 (compressible) and 1.0 (random
//! printable bytes).
//!
//! Run: `cargo bench -p siftdb-bench --bench codecs`.

use std::hint::black_box;
use std::io::Read;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use siftdb_bench::runner::keys::{Rng, ValueSource};
use siftdb_sstable::block::BlockBuilder;
use siftdb_sstable::{Compression, InternalKey, ValueKind};

const BLOCK_SIZE: usize = 4096;
const BLOCKS: usize = 256;

/// `BLOCKS` data blocks of sorted 16-byte keys and 100-byte values.
fn data_blocks(compression_ratio: f64) -> Vec<Vec<u8>> {
    let values = ValueSource::new(100, 7, compression_ratio);
    let mut rng = Rng::new(11, 0);
    let mut blocks = Vec::with_capacity(BLOCKS);
    let mut i = 0u64;
    while blocks.len() < BLOCKS {
        let mut b = BlockBuilder::new(16);
        while b.estimated_size() < BLOCK_SIZE {
            let key = format!("{i:016}");
            i += 1;
            let ikey = InternalKey::new(key.as_bytes(), i, ValueKind::Put);
            b.add(ikey.encoded(), values.value(&mut rng));
        }
        blocks.push(b.finish());
    }
    blocks
}

/// ruzstd under the table's rule: kept only when it saves an eighth.
fn ruzstd_compress(block: &[u8]) -> Option<Vec<u8>> {
    let stored =
        ruzstd::encoding::compress_to_vec(block, ruzstd::encoding::CompressionLevel::Fastest);
    (stored.len() <= block.len() - block.len() / 8).then_some(stored)
}

fn ruzstd_decompress(mut stored: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(BLOCK_SIZE + 256);
    let mut decoder = ruzstd::decoding::StreamingDecoder::new(&mut stored)
        .unwrap_or_else(|e| panic!("ruzstd frame: {e}"));
    decoder
        .read_to_end(&mut out)
        .unwrap_or_else(|e| panic!("ruzstd decode: {e}"));
    out
}

/// A codec under test: its name, how it compresses a block (`None`: stored as is, as a table
/// does when the codec saves less than an eighth), how it restores a compressed one.
struct Codec {
    name: &'static str,
    compress: fn(&[u8]) -> Option<Vec<u8>>,
    decompress: fn(&[u8]) -> Vec<u8>,
}

/// A stored block: compressed, or the block itself.
enum Stored {
    Compressed(Vec<u8>),
    Raw(Vec<u8>),
}

impl Stored {
    fn len(&self) -> usize {
        match self {
            Stored::Compressed(b) | Stored::Raw(b) => b.len(),
        }
    }

    /// What a read does: decompress, or copy the block into the cache as it is.
    fn restore(&self, codec: &Codec) -> Vec<u8> {
        match self {
            Stored::Compressed(b) => (codec.decompress)(b),
            Stored::Raw(b) => b.clone(),
        }
    }
}

fn codecs() -> [Codec; 3] {
    [
        Codec {
            name: "lz4_flex",
            compress: |b| Compression::Lz4.compress(b),
            decompress: |s| {
                Compression::Lz4
                    .decompress(s)
                    .unwrap_or_else(|e| panic!("lz4: {e}"))
            },
        },
        Codec {
            name: "zstd-3",
            compress: |b| Compression::Zstd.compress(b),
            decompress: |s| {
                Compression::Zstd
                    .decompress(s)
                    .unwrap_or_else(|e| panic!("zstd: {e}"))
            },
        },
        Codec {
            name: "ruzstd-fastest",
            compress: ruzstd_compress,
            decompress: ruzstd_decompress,
        },
    ]
}

fn bench_codecs(c: &mut Criterion) {
    for ratio in [0.5, 1.0] {
        let blocks = data_blocks(ratio);
        let raw: usize = blocks.iter().map(Vec::len).sum();
        let mut group = c.benchmark_group(format!("codecs/ratio-{ratio}"));
        group.throughput(Throughput::Bytes(raw as u64));
        for codec in codecs() {
            let stored: Vec<Stored> = blocks
                .iter()
                .map(|b| {
                    (codec.compress)(b).map_or_else(|| Stored::Raw(b.clone()), Stored::Compressed)
                })
                .collect();
            let stored_bytes: usize = stored.iter().map(Stored::len).sum();
            let kept = stored
                .iter()
                .filter(|s| matches!(s, Stored::Compressed(_)))
                .count();
            for (block, s) in blocks.iter().zip(&stored) {
                assert_eq!(&s.restore(&codec), block, "{} round trip", codec.name);
            }
            println!(
                "{:<16} ratio {ratio}: {raw} bytes in {BLOCKS} blocks stored as {stored_bytes} ({:.3}; {kept} blocks kept compressed)",
                codec.name,
                stored_bytes as f64 / raw as f64
            );
            group.bench_function(BenchmarkId::new("compress", codec.name), |b| {
                b.iter(|| {
                    for block in &blocks {
                        black_box((codec.compress)(black_box(block)));
                    }
                })
            });
            group.bench_function(BenchmarkId::new("decompress", codec.name), |b| {
                b.iter(|| {
                    for s in &stored {
                        black_box(black_box(s).restore(&codec));
                    }
                })
            });
        }
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(500));
    targets = bench_codecs
}
criterion_main!(benches);
