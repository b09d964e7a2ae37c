//! Filter micro-benchmarks: build, positive and negative query for siftdb's blocked bloom and
//! ribbon, against fastbloom (standard bloom) and xorf's BinaryFuse8 in the same run, on a 1M-key
//! set. `filter-bench` is the fuller sweep; this is the criterion view of the same operations.
//!
//! Run: `cargo bench -p siftdb-bench --bench filters`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use siftdb_bench::filters::{key_hashes, Contender};

const KEYS: usize = 1_000_000;

fn bench_filters(c: &mut Criterion) {
    let keys = key_hashes(0, KEYS);
    let negatives = key_hashes(1 << 40, 1 << 20);
    let contenders = [
        (Contender::BlockedBloom, 10.0),
        (Contender::Ribbon, 7.0),
        (Contender::FastBloom, 10.0),
        (Contender::BinaryFuse8, 8.0),
    ];

    let mut g = c.benchmark_group("filter_build_1m");
    g.sample_size(10);
    g.throughput(Throughput::Elements(KEYS as u64));
    for (contender, bpk) in contenders {
        g.bench_function(contender.name(), |b| {
            b.iter(|| black_box(contender.build(&keys, bpk).map(|f| f.serialized_bytes())))
        });
    }
    g.finish();

    let mut g = c.benchmark_group("filter_query_1m");
    g.throughput(Throughput::Elements(1));
    g.measurement_time(Duration::from_secs(3));
    for (contender, bpk) in contenders {
        let Ok(filter) = contender.build(&keys, bpk) else {
            continue;
        };
        let mut i = 0usize;
        g.bench_function(format!("{}/positive", contender.name()), |b| {
            b.iter(|| {
                i = (i + 1) % KEYS;
                black_box(filter.contains(black_box(keys[i])))
            })
        });
        let mut i = 0usize;
        g.bench_function(format!("{}/negative", contender.name()), |b| {
            b.iter(|| {
                i = (i + 1) & ((1 << 20) - 1);
                black_box(filter.contains(black_box(negatives[i])))
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench_filters);
criterion_main!(benches);
