//! Reads never miss a key that exists, under constant overwrites, flushes and compactions on
//! several threads (issue 11's race, found by chance instead of by a pause point).
//!
//! Every key of a fixed set is written once before the readers start and is then only ever
//! overwritten, never deleted. Readers `get` random keys, read them through snapshots, and scan
//! the whole database with iterators (plain and through a snapshot): any `None`, or any scan
//! missing a key, fails. Tiny memtables and tables keep flushes and compactions (three
//! compaction threads) running the whole time.
//!
//! `SIFTDB_READ_STRESS_MILLIS` sets the duration (default 3000 ms).

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use siftdb::{Db, Options};

const KEYS: u64 = 300;
const WRITERS: u64 = 2;
const READERS: u64 = 2;

fn options() -> Options {
    Options {
        write_buffer_size: 12 << 10,
        target_file_size_base: 12 << 10,
        max_bytes_for_level_base: 32 << 10,
        max_bytes_for_level_multiplier: 3.0,
        level0_file_num_compaction_trigger: 2,
        max_background_compactions: 3,
        max_write_buffer_number: 3,
        ..Options::default()
    }
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn value(i: u64, version: u64) -> Vec<u8> {
    let mut v = format!("{i}:{version}:").into_bytes();
    v.resize(64, b'.');
    v
}

/// The key index a value was written for (values are checked to belong to their key).
fn owner(v: &[u8]) -> u64 {
    let s = std::str::from_utf8(v).expect("utf8 value");
    s.split(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("a value written by this test")
}

#[test]
fn reads_under_overwrites_and_compactions_never_miss_a_key() {
    let millis = siftdb_tests::env_count("SIFTDB_READ_STRESS_MILLIS", 3000);
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), options()).unwrap();
    for i in 0..KEYS {
        db.put(key(i), value(i, 0)).unwrap();
    }
    let all: BTreeSet<Vec<u8>> = (0..KEYS).map(key).collect();
    let stop = AtomicBool::new(false);
    let reads = AtomicU64::new(0);
    let scans = AtomicU64::new(0);
    let deadline = Instant::now() + Duration::from_millis(millis);
    std::thread::scope(|s| {
        for w in 0..WRITERS {
            let (db, stop) = (&db, &stop);
            s.spawn(move || {
                let mut rng = rand::rngs::StdRng::seed_from_u64(w);
                let mut version = 1;
                while !stop.load(Ordering::Relaxed) {
                    let i = rng.gen_range(0..KEYS);
                    db.put(key(i), value(i, version)).unwrap();
                    version += 1;
                }
            });
        }
        for r in 0..READERS {
            let (db, stop, all, reads, scans) = (&db, &stop, &all, &reads, &scans);
            s.spawn(move || {
                let mut rng = rand::rngs::StdRng::seed_from_u64(100 + r);
                let mut round = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    round += 1;
                    let i = rng.gen_range(0..KEYS);
                    let got = db.get(key(i)).unwrap();
                    let v = got.unwrap_or_else(|| panic!("get missed key {i}"));
                    assert_eq!(owner(&v), i);
                    reads.fetch_add(1, Ordering::Relaxed);
                    if round.is_multiple_of(64) {
                        let snapshot = db.snapshot();
                        for _ in 0..8 {
                            let i = rng.gen_range(0..KEYS);
                            let v = snapshot
                                .get(key(i))
                                .unwrap()
                                .unwrap_or_else(|| panic!("snapshot missed key {i}"));
                            assert_eq!(owner(&v), i);
                        }
                        let seen: BTreeSet<Vec<u8>> =
                            snapshot.iter().map(|kv| kv.unwrap().0).collect();
                        assert_eq!(&seen, all, "a snapshot scan missed keys");
                    }
                    if round.is_multiple_of(256) {
                        let seen: BTreeSet<Vec<u8>> = db.iter().map(|kv| kv.unwrap().0).collect();
                        assert_eq!(&seen, all, "a scan missed keys");
                        scans.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
        while Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        stop.store(true, Ordering::Relaxed);
    });
    let stats = db.stats();
    // The oracle that the race had a chance: the tree changed under the readers all along.
    assert!(stats.flushes >= 10, "only {} flushes", stats.flushes);
    assert!(
        stats.compactions >= 5,
        "only {} compactions",
        stats.compactions
    );
    assert!(reads.load(Ordering::Relaxed) > 1000);
    assert!(scans.load(Ordering::Relaxed) > 0);
    for i in 0..KEYS {
        assert!(db.get(key(i)).unwrap().is_some(), "key {i} lost");
    }
}
