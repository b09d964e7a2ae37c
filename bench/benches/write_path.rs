//! The write path's two halves, each against the obvious baseline in the same run:
//!
//! - memtable insert and get (`Memtable`: internal keys with sequence and kind, a 16-byte key
//!   head inline) against a bare `crossbeam_skiplist::SkipMap<Vec<u8>, Vec<u8>>` holding the
//!   same user keys and values: the price of MVCC keys over a plain ordered map;
//! - WAL append (`LogWriter::add_record` + `flush` per record, as one write group does: framing,
//!   CRC32C-style checksum, one `write` syscall) against `BufWriter<File>::write_all` + `flush`
//!   of the same bytes: the price of the log format over a raw append.
//!
//! Run: `cargo bench -p siftdb-bench --bench write_path`.

use std::hint::black_box;
use std::io::Write;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use crossbeam_skiplist::SkipMap;
use siftdb::fs::{FileSystem, RealFs};
use siftdb::internals::{LogWriter, MemGet, Memtable};
use siftdb_sstable::ValueKind;

const INSERTS: u64 = 100_000;
const RESIDENT: u64 = 1_000_000;
const VALUE: [u8; 100] = [b'v'; 100];

fn key(i: u64) -> [u8; 16] {
    // 16-byte keys in a scattered order, like hashed ids.
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes());
    k[8..].copy_from_slice(&i.to_be_bytes());
    k
}

fn bench_memtable_insert(c: &mut Criterion) {
    let mut g = c.benchmark_group("memtable_insert_100k");
    g.throughput(Throughput::Elements(INSERTS));
    g.sample_size(10);
    g.bench_function("siftdb_memtable", |b| {
        b.iter_batched(
            || Memtable::new(1),
            |m| {
                for i in 0..INSERTS {
                    m.insert(&key(i), i + 1, ValueKind::Put, &VALUE);
                }
                m
            },
            BatchSize::PerIteration,
        )
    });
    g.bench_function("baseline_skipmap", |b| {
        b.iter_batched(
            SkipMap::<Vec<u8>, Vec<u8>>::new,
            |m| {
                for i in 0..INSERTS {
                    m.insert(key(i).to_vec(), VALUE.to_vec());
                }
                m
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

fn bench_memtable_get(c: &mut Criterion) {
    let mem = Memtable::new(1);
    let map = SkipMap::<Vec<u8>, Vec<u8>>::new();
    for i in 0..RESIDENT {
        mem.insert(&key(i), i + 1, ValueKind::Put, &VALUE);
        map.insert(key(i).to_vec(), VALUE.to_vec());
    }
    let mut g = c.benchmark_group("memtable_get_1m");
    g.throughput(Throughput::Elements(1));
    let mut i = 0u64;
    g.bench_function("siftdb_memtable_hit", |b| {
        b.iter(|| {
            i = (i + 7_919) % RESIDENT;
            let found = matches!(mem.get(&key(i), u64::MAX >> 8), MemGet::Found(_));
            black_box(found)
        })
    });
    g.bench_function("baseline_skipmap_hit", |b| {
        b.iter(|| {
            i = (i + 7_919) % RESIDENT;
            black_box(map.get(key(i).as_slice()).map(|e| e.value().len()))
        })
    });
    g.bench_function("siftdb_memtable_miss", |b| {
        b.iter(|| {
            i = (i + 7_919) % RESIDENT;
            black_box(mem.get(&key(i + RESIDENT), u64::MAX >> 8))
        })
    });
    g.finish();
}

fn bench_wal_append(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    // One record as a write batch of one 16-byte key and a 100-byte value would be.
    let record = [0x5Au8; 16 + 100 + 12];
    let mut g = c.benchmark_group("wal_append");
    g.throughput(Throughput::Bytes(record.len() as u64));
    let mut n = 0u64;
    let mut log = LogWriter::new(
        RealFs
            .create(&dir.path().join("bench.log"))
            .unwrap_or_else(|e| panic!("{e}")),
    );
    g.bench_function("siftdb_log_writer_flush_each", |b| {
        b.iter(|| {
            log.add_record(&record).unwrap_or_else(|e| panic!("{e}"));
            log.flush().unwrap_or_else(|e| panic!("{e}"));
            n += 1;
        })
    });
    let mut raw = std::io::BufWriter::new(
        std::fs::File::create(dir.path().join("raw.log")).unwrap_or_else(|e| panic!("{e}")),
    );
    g.bench_function("baseline_bufwriter_flush_each", |b| {
        b.iter(|| {
            raw.write_all(&record).unwrap_or_else(|e| panic!("{e}"));
            raw.flush().unwrap_or_else(|e| panic!("{e}"));
        })
    });
    g.bench_function("siftdb_log_writer_no_flush", |b| {
        b.iter(|| log.add_record(&record).unwrap_or_else(|e| panic!("{e}")))
    });
    g.finish();
    black_box(n);
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    targets = bench_memtable_insert, bench_memtable_get, bench_wal_append
}
criterion_main!(benches);
