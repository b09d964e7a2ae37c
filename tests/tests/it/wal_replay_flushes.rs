//! WAL replay flushes memtables that fill up: a WAL much larger than the write buffer it is
//! replayed with recovers every value through several L0 tables written during the replay;
//! the newest write of a key wins across those tables; a power loss anywhere in such an open
//! leaves orphan tables that the next open deletes, and loses nothing; a read-only open writes
//! no table; the merge-operator guard sees operands in tables the replay flushed.

use std::path::Path;
use std::sync::Arc;

use siftdb::merge::Append;
use siftdb::{Db, Error, Options, WriteBatch};
use siftdb_tests::FaultFs;

/// Options that never flush or compact on their own while a test writes: everything written
/// stays in the WAL.
fn no_flush(write_buffer_size: usize) -> Options {
    Options {
        write_buffer_size,
        level0_file_num_compaction_trigger: 1000,
        level0_stop_writes_trigger: 1000,
        ..Options::default()
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{:08}", (i.wrapping_mul(2_654_435_761)) % 1_000_003).into_bytes()
}

fn value(i: u32, round: u32, len: usize) -> Vec<u8> {
    let mut v = format!("v{i}-r{round}-").into_bytes();
    v.resize(len, b'a' + (i % 26) as u8);
    v
}

/// Writes `n` keys of `len`-byte values in batches of 100, twice (the second round overwrites
/// the first, so the newest value must win across the tables the replay writes), with no flush.
fn write_rounds(db: &Db, n: u32, len: usize) {
    for round in 0..2 {
        for start in (0..n).step_by(100) {
            let mut batch = WriteBatch::new();
            for i in start..(start + 100).min(n) {
                batch.put(key(i), value(i, round, len));
            }
            db.write(batch).unwrap();
        }
    }
    assert_eq!(db.stats().flushes, 0, "the writes must stay in the WAL");
}

fn check_values(db: &Db, n: u32, len: usize) {
    for i in 0..n {
        let got = db.get(key(i)).unwrap();
        assert_eq!(got, Some(value(i, 1, len)), "key {i}");
    }
}

fn l0_files(db: &Db) -> usize {
    db.property("siftdb.num-files-at-level0")
        .and_then(|s| s.parse().ok())
        .unwrap()
}

/// Tables every level of the default keyspace holds.
fn live_tables(db: &Db) -> usize {
    (0..)
        .map_while(|level| db.property(&format!("siftdb.num-files-at-level{level}")))
        .map(|s| s.parse::<usize>().unwrap())
        .sum()
}

fn sst_files_on(fs: &FaultFs) -> usize {
    fs.paths()
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "sst"))
        .count()
}

fn sst_files_in(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "sst")
        })
        .count()
}

/// About 16 MiB of WAL (two rounds of 8,000 values of 1 KiB) replayed with a 1 MiB write
/// buffer: every value, the newest of each key, through a dozen or more L0 tables written
/// during the replay, and nothing left behind in the WAL after the next reopen.
#[test]
fn large_wal_replayed_with_a_small_write_buffer_recovers_through_several_l0_tables() {
    let dir = siftdb_tests::temp_dir();
    let (n, len) = (8_000, 1024);
    {
        let db = Db::open(dir.path(), no_flush(256 << 20)).unwrap();
        write_rounds(&db, n, len);
    }
    let db = Db::open(dir.path(), no_flush(1 << 20)).unwrap();
    let tables = l0_files(&db);
    assert!(
        tables >= 12,
        "expected a dozen or more L0 tables from the replay, got {tables}:\n{}",
        db.property("siftdb.levels").unwrap_or_default()
    );
    assert!(
        db.stats().flush_bytes > 8 << 20,
        "the replay's tables: {:?}",
        db.stats().flush_bytes
    );
    assert_eq!(sst_files_in(dir.path()), tables);
    check_values(&db, n, len);
    drop(db);
    // The commit made them part of the database: the next open replays nothing.
    let db = Db::open(dir.path(), no_flush(1 << 20)).unwrap();
    assert_eq!(l0_files(&db), tables);
    check_values(&db, n, len);
}

/// A power loss at points throughout an open that flushes during its replay: before its commit
/// the open fails, and the tables it wrote are orphans no manifest names; the next open
/// (flushing again) recovers everything and deletes them.
#[test]
fn power_loss_during_a_replay_that_flushes_leaves_orphans_the_next_open_deletes() {
    let (n, len) = (1_000, 1024);
    let fs = FaultFs::new();
    let on = |write_buffer_size| Options {
        fs: Arc::new(fs.clone()),
        ..no_flush(write_buffer_size)
    };
    {
        let db = Db::open("/db", on(64 << 20)).unwrap();
        write_rounds(&db, n, len);
    }
    // How many calls a good open makes, on a copy.
    let copy = fs.deep_clone();
    let before = copy.calls();
    let copy_options = Options {
        fs: Arc::new(copy.clone()),
        ..no_flush(256 << 10)
    };
    let tables = l0_files(&Db::open("/db", copy_options).unwrap());
    assert!(tables >= 4, "the replay should flush: {tables} L0 tables");
    let calls = copy.calls() - before;
    let mut orphans_seen = 0;
    let points = 24;
    for point in 1..points {
        let at = calls * point / points;
        let crashed = fs.deep_clone();
        crashed.crash_call_in(at);
        let options = Options {
            fs: Arc::new(crashed.clone()),
            ..no_flush(256 << 10)
        };
        // (A crash among the last calls, in the cleanup after the commit, may not fail it.)
        let failed = Db::open("/db", options.clone()).is_err();
        crashed.restart(0);
        if failed && sst_files_on(&crashed) > 0 {
            orphans_seen += 1;
        }
        let db = Db::open("/db", options).unwrap_or_else(|e| panic!("reopen after {at}: {e}"));
        let live = live_tables(&db);
        assert_eq!(
            sst_files_on(&crashed),
            live,
            "crash at call {at}: orphans left"
        );
        check_values(&db, n, len);
    }
    assert!(orphans_seen > 0, "no crash point left an orphan table");
}

/// A read-only open writes nothing: it replays the whole WAL into memory whatever its write
/// buffer.
#[test]
fn read_only_open_replays_into_memory_and_writes_no_table() {
    let dir = siftdb_tests::temp_dir();
    let (n, len) = (2_000, 1024);
    {
        let db = Db::open(dir.path(), no_flush(64 << 20)).unwrap();
        write_rounds(&db, n, len);
    }
    let db = Db::open_read_only(dir.path(), no_flush(64 << 10)).unwrap();
    check_values(&db, n, len);
    assert_eq!(l0_files(&db), 0);
    assert_eq!(sst_files_in(dir.path()), 0);
}

/// Merge operands that the replay flushed into tables still guard the operator's name: a
/// reopen under another operator is refused (its orphan tables deleted by the next open), the
/// right one reads the merged values.
#[test]
fn merge_operands_in_tables_flushed_by_the_replay_refuse_another_operator() {
    let dir = siftdb_tests::temp_dir();
    let with = |op: Option<Arc<dyn siftdb::MergeOperator>>, write_buffer_size| Options {
        merge_operator: op,
        ..no_flush(write_buffer_size)
    };
    let append = || -> Option<Arc<dyn siftdb::MergeOperator>> { Some(Arc::new(Append::new(b","))) };
    {
        let db = Db::open(dir.path(), with(append(), 64 << 20)).unwrap();
        // The operands come first: they end up in the replay's first tables, not the last
        // memtable.
        for i in 0..200u32 {
            db.merge(key(i), b"m").unwrap();
        }
        write_rounds(&db, 2_000, 1024);
    }
    match Db::open(dir.path(), with(None, 128 << 10)) {
        Err(Error::InvalidArgument(_)) => {}
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
    let db = Db::open(dir.path(), with(append(), 128 << 10)).unwrap();
    assert!(l0_files(&db) >= 4);
    assert_eq!(sst_files_in(dir.path()), live_tables(&db), "orphans left");
    // The values written after the operands replaced them.
    check_values(&db, 2_000, 1024);
    db.merge(b"merged after", b"x").unwrap();
    assert_eq!(db.get(b"merged after").unwrap(), Some(b"x".to_vec()));
}
