//! `Options::db_write_buffer_size`: several keyspaces, each allowed a large memtable, stay
//! within one memory budget together — the largest memtable is switched and flushed — and lose
//! nothing. Without the budget the same writes stay in memory (no flush), which shows the test
//! can fail. When flushes fall behind, writers stall on the budget (`allow_stall`), so memory
//! stays bounded; without the stall it passes the budget many times over.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use siftdb::fs::{FileSystem, RealFs};
use siftdb::{Db, KeyspaceOptions, Options};

const KEYSPACES: usize = 4;
const BUDGET: usize = 256 << 10;

fn options(db_write_buffer_size: usize) -> Options {
    Options {
        write_buffer_size: 4 << 20,
        db_write_buffer_size,
        ..Options::default()
    }
}

/// Memtable bytes of every keyspace together, at one instant (summing each keyspace's own
/// property beside writers would add figures from different instants: memory freed by one
/// keyspace's flush and taken by another's writes in between would count twice).
fn memtable_bytes(db: &Db) -> usize {
    db.property("siftdb.total-size-all-mem-tables")
        .and_then(|v| v.parse::<usize>().ok())
        .expect("memtable size")
}

/// The sum of each keyspace's own memtable property: equal to `memtable_bytes` when no write
/// runs.
fn memtable_bytes_of_each(db: &Db) -> usize {
    db.keyspace_names()
        .iter()
        .map(|n| {
            let ks = db.keyspace(n).expect("keyspace");
            ks.property("siftdb.cur-size-all-mem-tables")
                .and_then(|v| v.parse::<usize>().ok())
                .expect("memtable size")
        })
        .sum()
}

/// Writes 1.5 MiB round robin over the keyspaces and reads it back; returns the keyspaces.
fn fill(db: &Db) -> Vec<siftdb::Keyspace> {
    let keyspaces: Vec<_> = (0..KEYSPACES)
        .map(|i| {
            db.create_keyspace(&format!("ks{i}"), KeyspaceOptions::from(&options(0)))
                .expect("create")
        })
        .collect();
    for i in 0..12_000u32 {
        let ks = &keyspaces[i as usize % KEYSPACES];
        ks.put(format!("key{i:08}"), [b'v'; 100]).expect("put");
    }
    for i in 0..12_000u32 {
        let ks = &keyspaces[i as usize % KEYSPACES];
        assert_eq!(
            ks.get(format!("key{i:08}")).expect("get"),
            Some(vec![b'v'; 100]),
            "key{i:08}"
        );
    }
    keyspaces
}

/// Waits (up to 10 s) until no keyspace has a memtable waiting for flush: memtables switched
/// for the budget are flushed in the background while writes go on (they stall only once the
/// frozen ones and the active ones together hold the whole budget).
fn settle(db: &Db) {
    for _ in 0..1000 {
        let waiting = db.keyspace_names().iter().any(|n| {
            db.keyspace(n)
                .expect("keyspace")
                .property("siftdb.num-immutable-mem-table")
                .is_some_and(|v| v != "0")
        });
        if !waiting {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("memtables still waiting for flush after 10 s");
}

#[test]
fn all_keyspaces_memtables_stay_within_the_shared_budget() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), options(BUDGET)).expect("open");
    let keyspaces = fill(&db);
    settle(&db);
    // The next write switches memtables until the active ones fit 7/8 of the budget.
    keyspaces[0].put("one-more", "v").expect("put");
    settle(&db);
    let held = memtable_bytes(&db);
    assert_eq!(held, memtable_bytes_of_each(&db));
    assert!(
        held <= BUDGET,
        "memtables hold {held} bytes against a budget of {BUDGET}"
    );
    assert!(db.stats().flushes >= 4, "{:?}", db.stats().flushes);
    drop((keyspaces, db));
    let db = Db::open(dir.path(), options(BUDGET)).expect("reopen");
    let ks = db.keyspace("ks3").expect("keyspace");
    assert_eq!(ks.get("key00000003").expect("get"), Some(vec![b'v'; 100]));
}

#[test]
fn without_a_budget_each_keyspace_keeps_its_own_memtable() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), options(0)).expect("open");
    let _keyspaces = fill(&db);
    assert_eq!(db.stats().flushes, 0);
    let held = memtable_bytes(&db);
    assert_eq!(held, memtable_bytes_of_each(&db));
    assert!(held > BUDGET * 4, "{held}");
}

/// The real file system, with every table file's creation slowed down: flushes fall behind
/// writers.
fn slow_tables() -> Arc<dyn FileSystem> {
    Arc::new(siftdb_tests::CreateHookFs(|path: &Path| {
        if path.extension().is_some_and(|e| e == "sst") {
            std::thread::sleep(Duration::from_millis(40));
        }
        RealFs.create(path)
    }))
}

/// Four writers, one per keyspace, write 2.4 MiB while flushes lag; a monitor samples the
/// memtables of every keyspace together. Returns the most it saw and the time writers stalled
/// on the budget.
fn write_while_flushes_lag(allow_stall: bool) -> (usize, u64) {
    let dir = siftdb_tests::temp_dir();
    let db_options = Options {
        fs: slow_tables(),
        allow_stall,
        ..options(BUDGET)
    };
    let db = Db::open(dir.path(), db_options).expect("open");
    let keyspaces: Vec<_> = (0..KEYSPACES)
        .map(|i| {
            db.create_keyspace(&format!("ks{i}"), KeyspaceOptions::from(&options(0)))
                .expect("create")
        })
        .collect();
    let done = AtomicBool::new(false);
    let most = AtomicUsize::new(0);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                most.fetch_max(memtable_bytes(&db), Ordering::Relaxed);
                std::thread::sleep(Duration::from_micros(200));
            }
        });
        let writers: Vec<_> = keyspaces
            .iter()
            .enumerate()
            .map(|(w, ks)| {
                s.spawn(move || {
                    for i in 0..6_000u32 {
                        ks.put(format!("w{w}-{i:08}"), [b'v'; 100]).expect("put");
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().expect("writer");
        }
        done.store(true, Ordering::Relaxed);
    });
    for (w, ks) in keyspaces.iter().enumerate() {
        for i in (0..6_000u32).step_by(97) {
            assert_eq!(
                ks.get(format!("w{w}-{i:08}")).expect("get"),
                Some(vec![b'v'; 100])
            );
        }
    }
    let stats = db.stats();
    assert_eq!(
        stats.stall_micros,
        stats.stall_micros_l0_files
            + stats.stall_micros_memtables
            + stats.stall_micros_memory_budget
            + stats.stall_micros_l0_slowdown
    );
    let result = (
        most.load(Ordering::Relaxed),
        stats.stall_micros_memory_budget,
    );
    drop((keyspaces, db));
    // Reopened: what the WALs held is replayed, nothing is lost.
    let db_options = Options {
        fs: slow_tables(),
        ..options(BUDGET)
    };
    let db = Db::open(dir.path(), db_options).expect("reopen");
    for w in 0..KEYSPACES {
        let ks = db.keyspace(&format!("ks{w}")).expect("keyspace");
        assert_eq!(
            ks.get(format!("w{w}-{:08}", 5_999)).expect("get"),
            Some(vec![b'v'; 100])
        );
    }
    result
}

#[test]
fn writers_stall_on_the_shared_budget_while_flushes_lag() {
    let (most, stalled) = write_while_flushes_lag(true);
    // A write group checks for room before it inserts: memory passes the budget by at most
    // the groups in flight (four writers of 100-byte values here) and a skiplist node each.
    assert!(
        most <= BUDGET + (16 << 10),
        "memtables held {most} bytes against a budget of {BUDGET}"
    );
    assert!(stalled > 0, "no writer stalled on the budget");
    // Without the stall the same writes pass the budget many times over: the bound above is
    // the stall's doing.
    let (most, _) = write_while_flushes_lag(false);
    assert!(
        most > 2 * BUDGET,
        "without the stall memtables held only {most} bytes"
    );
}
