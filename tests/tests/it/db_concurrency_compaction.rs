//! Writers, readers, iterators and snapshots on several threads while flushes and compactions
//! run constantly; each thread checks what it can know: its own writes, sorted iteration with
//! only values that were written, and snapshots that never change.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use siftdb::{Db, Options};

const WRITERS: u64 = 2;
const KEYS_PER_WRITER: u64 = 400;
const ROUNDS: u64 = 20;

fn options() -> Options {
    Options {
        write_buffer_size: 16 << 10,
        target_file_size_base: 16 << 10,
        max_bytes_for_level_base: 48 << 10,
        max_bytes_for_level_multiplier: 3.0,
        level0_file_num_compaction_trigger: 2,
        ..Options::default()
    }
}

fn key(w: u64, i: u64) -> Vec<u8> {
    format!("w{w}-{i:05}").into_bytes()
}

/// Values encode (writer, key, round) so any reader can check a value is one that was written.
fn value(w: u64, i: u64, round: u64) -> Vec<u8> {
    let mut v = format!("{w}:{i}:{round}:").into_bytes();
    v.resize(48, b'#');
    v
}

fn parse(v: &[u8]) -> (u64, u64, u64) {
    let s = std::str::from_utf8(v).expect("utf8 value");
    let mut it = s.split(':').map(|p| p.parse::<u64>().unwrap_or(u64::MAX));
    (
        it.next().unwrap_or(u64::MAX),
        it.next().unwrap_or(u64::MAX),
        it.next().unwrap_or(u64::MAX),
    )
}

#[test]
fn concurrent_readers_iterators_snapshots_under_compaction() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), options()).unwrap();
    // Round each writer has completed (all its keys written with that round's value).
    let done: Arc<Vec<AtomicU64>> = Arc::new((0..WRITERS).map(|_| AtomicU64::new(0)).collect());
    let stop = Arc::new(AtomicBool::new(false));
    std::thread::scope(|s| {
        for w in 0..WRITERS {
            let db = db.clone();
            let done = Arc::clone(&done);
            s.spawn(move || {
                for round in 1..=ROUNDS {
                    for i in 0..KEYS_PER_WRITER {
                        db.put(key(w, i), value(w, i, round)).unwrap();
                    }
                    done[w as usize].store(round, Ordering::Release);
                }
            });
        }
        // Readers: a completed round's value (or a later one) must be visible.
        {
            let db = db.clone();
            let done = Arc::clone(&done);
            let stop = Arc::clone(&stop);
            s.spawn(move || {
                let mut n = 0u64;
                while !stop.load(Ordering::Acquire) {
                    let w = n % WRITERS;
                    let i = (n * 31) % KEYS_PER_WRITER;
                    let floor = done[w as usize].load(Ordering::Acquire);
                    if let Some(v) = db.get(key(w, i)).unwrap() {
                        let (vw, vi, round) = parse(&v);
                        assert_eq!((vw, vi), (w, i), "value of another key");
                        assert!(
                            round >= floor,
                            "stale read: round {round} < completed {floor}"
                        );
                    } else {
                        assert_eq!(floor, 0, "key vanished after round {floor}");
                    }
                    n += 1;
                }
            });
        }
        // Iterators: sorted, every value belongs to its key.
        {
            let db = db.clone();
            let stop = Arc::clone(&stop);
            s.spawn(move || {
                while !stop.load(Ordering::Acquire) {
                    let mut last: Option<Vec<u8>> = None;
                    for item in db.iter() {
                        let (k, v) = item.unwrap();
                        if let Some(l) = &last {
                            assert!(l < &k, "iteration out of order");
                        }
                        let (w, i, _) = parse(&v);
                        assert_eq!(k, key(w, i), "value under the wrong key");
                        last = Some(k);
                    }
                }
            });
        }
        // Snapshots: reading the same keys twice, with writes and compactions in between,
        // gives the same answers.
        {
            let db = db.clone();
            let stop = Arc::clone(&stop);
            s.spawn(move || {
                while !stop.load(Ordering::Acquire) {
                    let snap = db.snapshot();
                    let first: Vec<_> = (0..50)
                        .map(|i| snap.get(key(i % WRITERS, i * 7)).unwrap())
                        .collect();
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    let second: Vec<_> = (0..50)
                        .map(|i| snap.get(key(i % WRITERS, i * 7)).unwrap())
                        .collect();
                    assert_eq!(first, second, "snapshot changed");
                    let count_a = snap.iter().count();
                    let count_b = snap.iter().count();
                    assert_eq!(count_a, count_b);
                }
            });
        }
        // Stop the checkers once the writers are done.
        while done.iter().any(|d| d.load(Ordering::Acquire) < ROUNDS) {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        stop.store(true, Ordering::Release);
    });
    let stats = db.stats();
    assert!(
        stats.flushes > 5 && stats.compactions > 0,
        "{} flushes, {} compactions",
        stats.flushes,
        stats.compactions
    );
    for w in 0..WRITERS {
        for i in 0..KEYS_PER_WRITER {
            assert_eq!(db.get(key(w, i)).unwrap(), Some(value(w, i, ROUNDS)));
        }
    }
}
