//! Merges and range deletes under concurrency: merge operands written by many threads at once
//! are all counted, with flushes and compactions running; readers see a batch of merges and a
//! range delete all at once or not at all — by multi_get, iterators and snapshots.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;

use siftdb::merge::U64Add;
use siftdb::{Db, Options, WriteBatch};

fn options() -> Options {
    Options {
        write_buffer_size: 8 << 10,
        target_file_size_base: 8 << 10,
        max_bytes_for_level_base: 32 << 10,
        level0_file_num_compaction_trigger: 2,
        max_background_compactions: 2,
        merge_operator: Some(Arc::new(U64Add)),
        ..Options::default()
    }
}

fn le(n: u64) -> Vec<u8> {
    n.to_le_bytes().to_vec()
}

fn as_u64(v: &[u8]) -> u64 {
    u64::from_le_bytes(v.try_into().expect("an 8-byte counter"))
}

fn counter(i: u64) -> Vec<u8> {
    format!("counter{i:02}").into_bytes()
}

/// Four threads merge +1 into ten counters (with filler puts, so memtables flush and tables
/// compact meanwhile) while a reader watches them: no increment is lost, and no counter is ever
/// seen going down.
#[test]
fn merges_from_many_threads_are_all_counted() {
    const THREADS: u64 = 4;
    const PER_THREAD: u64 = 4_000;
    const COUNTERS: u64 = 10;
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), options()).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let (db, stop) = (db.clone(), Arc::clone(&stop));
        thread::spawn(move || {
            let mut last = vec![0u64; COUNTERS as usize];
            let mut reads = 0u64;
            while !stop.load(Ordering::Relaxed) {
                for (c, seen) in last.iter_mut().enumerate() {
                    let now = db.get(counter(c as u64)).unwrap().map_or(0, |v| as_u64(&v));
                    assert!(now >= *seen, "counter {c} went down: {seen} -> {now}");
                    *seen = now;
                    reads += 1;
                }
            }
            reads
        })
    };
    let writers: Vec<_> = (0..THREADS)
        .map(|t| {
            let db = db.clone();
            thread::spawn(move || {
                for n in 0..PER_THREAD {
                    db.merge(counter(n % COUNTERS), le(1)).unwrap();
                    if n % 8 == 0 {
                        db.put(format!("filler{t}-{n:06}"), [b'f'; 64]).unwrap();
                    }
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    assert!(reader.join().unwrap() > 0);
    let want = THREADS * PER_THREAD / COUNTERS;
    let check = |db: &Db, ctx: &str| {
        for c in 0..COUNTERS {
            assert_eq!(
                db.get(counter(c)).unwrap(),
                Some(le(want)),
                "{ctx}: counter {c}"
            );
        }
    };
    check(&db, "right after the writers");
    assert!(db.stats().flushes > 0, "no flush ran during the merges");
    db.wait_for_compaction().unwrap();
    db.compact_range(None, None).unwrap();
    check(&db, "compacted");
    drop(db);
    let db = Db::open(dir.path(), options()).unwrap();
    check(&db, "reopened");
}

/// Each batch adds 1 to every counter: a reader (multi_get, an iterator, a snapshot) must see all
/// counters equal, whatever it catches the writers doing.
#[test]
fn a_batch_of_merges_is_seen_all_at_once() {
    const COUNTERS: u64 = 16;
    const BATCHES: u64 = 1_500;
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), options()).unwrap();
    let keys: Vec<Vec<u8>> = (0..COUNTERS).map(counter).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|r| {
            let (db, stop, keys) = (db.clone(), Arc::clone(&stop), keys.clone());
            thread::spawn(move || {
                let mut checks = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let values: Vec<u64> = if r == 0 {
                        db.multi_get(&keys)
                            .into_iter()
                            .map(|v| v.unwrap().map_or(0, |v| as_u64(&v)))
                            .collect()
                    } else if checks.is_multiple_of(2) {
                        db.prefix_iter(b"counter")
                            .map(|kv| as_u64(&kv.unwrap().1))
                            .collect()
                    } else {
                        let s = db.snapshot();
                        keys.iter()
                            .map(|k| s.get(k).unwrap().map_or(0, |v| as_u64(&v)))
                            .collect()
                    };
                    let first = values.first().copied().unwrap_or(0);
                    if !(values.is_empty() || values.len() == COUNTERS as usize) {
                        panic!("reader {r}: {} counters of {COUNTERS}", values.len());
                    }
                    assert!(
                        values.iter().all(|&v| v == first),
                        "reader {r} saw half a batch: {values:?}"
                    );
                    checks += 1;
                }
                checks
            })
        })
        .collect();
    for n in 0..BATCHES {
        let mut b = WriteBatch::new();
        for k in &keys {
            b.merge(k, le(1));
        }
        b.put(format!("filler{n:06}"), [b'f'; 48]);
        db.write(b).unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
    for k in &keys {
        assert_eq!(db.get(k).unwrap(), Some(le(BATCHES)));
    }
}

/// A writer puts a range of keys in one batch and removes them with one range delete, over and
/// over; readers must see the whole range or none of it, one generation at a time.
#[test]
fn a_range_delete_is_seen_all_at_once() {
    const KEYS: u32 = 100;
    const ROUNDS: u32 = 300;
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), options()).unwrap();
    let key = |i: u32| format!("r{i:03}").into_bytes();
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|r| {
            let (db, stop) = (db.clone(), Arc::clone(&stop));
            thread::spawn(move || {
                let keys: Vec<Vec<u8>> = (0..KEYS).map(key).collect();
                let mut checks = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let values: Vec<Vec<u8>> = match checks % 3 {
                        0 => db
                            .multi_get(&keys)
                            .into_iter()
                            .filter_map(|v| v.unwrap())
                            .collect(),
                        1 => db
                            .range(b"r".as_slice()..b"s".as_slice())
                            .map(|kv| kv.unwrap().1)
                            .collect(),
                        _ => db
                            .range(b"r".as_slice()..b"s".as_slice())
                            .rev()
                            .map(|kv| kv.unwrap().1)
                            .collect(),
                    };
                    assert!(
                        values.is_empty() || values.len() == KEYS as usize,
                        "reader {r} saw {} keys of the range",
                        values.len()
                    );
                    assert!(
                        values.iter().all(|v| v == &values[0]),
                        "reader {r} saw two generations at once"
                    );
                    checks += 1;
                }
                checks
            })
        })
        .collect();
    for round in 0..ROUNDS {
        let mut b = WriteBatch::new();
        for i in 0..KEYS {
            b.put(key(i), round.to_le_bytes());
        }
        db.write(b).unwrap();
        if round % 50 == 49 {
            db.flush().unwrap();
        }
        db.delete_range(b"r", b"s").unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
    assert_eq!(db.range(b"r".as_slice()..b"s".as_slice()).count(), 0);
    db.compact_range(None, None).unwrap();
    assert_eq!(db.level_info().iter().map(|l| l.keys).sum::<u64>(), 0);
}
