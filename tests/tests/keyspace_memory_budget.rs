//! `Options::db_write_buffer_size`: several keyspaces, each allowed a large memtable, stay
//! within one memory budget together — the largest memtable is switched and flushed — and lose
//! nothing. Without the budget the same writes stay in memory (no flush), which shows the test
//! can fail.

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

/// Memtable bytes of every keyspace together.
fn memtable_bytes(db: &Db) -> usize {
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

/// Waits (up to 10 s) until no keyspace has a memtable waiting for flush. Writes do not stall
/// on the budget (RocksDB's default, `allow_stall = false`): memtables switched for it are
/// flushed in the background while writes go on.
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
    assert!(held > BUDGET * 4, "{held}");
}
