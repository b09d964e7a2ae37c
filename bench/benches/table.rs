//! `Table::get` on a 1M-key table with filter and index cached: missing keys (the filter says
//! no: one filter probe plus overhead) and present keys (filter, index, data block from cache);
//! and table build throughput. Baseline in the same run: the same lookups on a table built
//! without a filter, so the filter's saving is visible.
//!
//! Run: `cargo bench -p siftdb-bench --bench table`.

use std::hint::black_box;
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use siftdb_cache::CacheOptions;
use siftdb_sstable::{
    open_random_access, FilterSpec, InternalKey, ReadMode, Table, TableBuildOptions, TableBuilder,
    TableCache, TableReadOptions, ValueKind,
};

const KEYS: u64 = 1_000_000;
const VALUE: [u8; 100] = [b'v'; 100];

fn key(i: u64) -> Vec<u8> {
    // 16-byte keys, spread over the key space like hashed user ids.
    format!("{:016x}", i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).into_bytes()
}

fn sorted_keys() -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = (0..KEYS).map(key).collect();
    keys.sort();
    keys
}

fn build(keys: &[Vec<u8>], filter: Option<FilterSpec>) -> Vec<u8> {
    let mut out = Vec::with_capacity(keys.len() * 140);
    let mut b = TableBuilder::new(
        &mut out,
        TableBuildOptions {
            filter,
            ..TableBuildOptions::default()
        },
    );
    for k in keys {
        b.add(InternalKey::new(k, 1, ValueKind::Put).encoded(), &VALUE)
            .unwrap_or_else(|e| panic!("build: {e}"));
    }
    b.finish().unwrap_or_else(|e| panic!("finish: {e}"));
    out
}

fn open(bytes: &[u8]) -> (tempfile::NamedTempFile, Table) {
    let mut tmp = tempfile::NamedTempFile::new().unwrap_or_else(|e| panic!("{e}"));
    tmp.write_all(bytes).unwrap_or_else(|e| panic!("{e}"));
    let file = open_random_access(
        tmp.reopen().unwrap_or_else(|e| panic!("{e}")),
        ReadMode::Mmap,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    // Cache large enough for the whole table; filter and index pinned as for L0.
    let cache = Arc::new(TableCache::new(
        CacheOptions::new(512 << 20).with_num_shard_bits(4),
    ));
    let options = TableReadOptions {
        pin_filter_and_index: true,
        ..TableReadOptions::default()
    };
    let table = Table::open(file, 1, "bench.sst", cache, options).unwrap_or_else(|e| panic!("{e}"));
    (tmp, table)
}

fn bench_table(c: &mut Criterion) {
    let keys = sorted_keys();
    let bloom = Some(FilterSpec {
        kind: siftdb_filter::FilterKind::BlockedBloom,
        bits_per_key: 10.0,
    });
    let (_t1, with_filter) = open(&build(&keys, bloom));
    let (_t2, no_filter) = open(&build(&keys, None));
    // Warm every data block.
    for k in &keys {
        let _ = with_filter.get(k, 1);
        let _ = no_filter.get(k, 1);
    }
    let missing: Vec<Vec<u8>> = (KEYS..KEYS + 100_000).map(key).collect();
    let present: Vec<Vec<u8>> = (0..100_000u64).map(|i| key(i * 7 % KEYS)).collect();

    let mut g = c.benchmark_group("table_get_1m");
    g.throughput(Throughput::Elements(1));
    g.measurement_time(Duration::from_secs(4));
    for (name, table) in [("bloom", &with_filter), ("no_filter", &no_filter)] {
        let mut i = 0usize;
        g.bench_function(format!("{name}/missing"), |b| {
            b.iter(|| {
                i = (i + 1) % missing.len();
                black_box(table.get(black_box(&missing[i]), 1))
            })
        });
        let mut i = 0usize;
        g.bench_function(format!("{name}/present"), |b| {
            b.iter(|| {
                i = (i + 1) % present.len();
                black_box(table.get(black_box(&present[i]), 1))
            })
        });
    }
    g.finish();

    let bytes = (keys.len() * (16 + 8 + VALUE.len())) as u64;
    let mut g = c.benchmark_group("table_build_1m");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(bytes));
    g.bench_function("bloom", |b| b.iter(|| black_box(build(&keys, bloom).len())));
    g.bench_function("ribbon", |b| {
        b.iter(|| {
            black_box(
                build(
                    &keys,
                    Some(FilterSpec {
                        kind: siftdb_filter::FilterKind::Ribbon,
                        bits_per_key: 7.0,
                    }),
                )
                .len(),
            )
        })
    });
    g.finish();
}

criterion_group!(benches, bench_table);
criterion_main!(benches);
