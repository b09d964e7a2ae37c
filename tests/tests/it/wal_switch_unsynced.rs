//! A WAL switch leaves the old log unsynced (the writer does not wait for its pages): a power
//! loss may then take the end of a log older than the newest. Recovery must stop there — the
//! state a prefix of the writes, later logs dropped — and must not call it corruption. What
//! makes the closed logs durable: a synced write (every write acknowledged before it survives),
//! a flush (its table never survives without the older writes of other keyspaces). Damage that
//! a later sync mark proves synced stays corruption.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use siftdb::{Db, Error, KeyspaceOptions, Options, WriteBatch, WriteOptions};
use siftdb_tests::FaultFs;

fn options(fs: &FaultFs) -> Options {
    Options {
        write_buffer_size: 16 << 10,
        fs: Arc::new(fs.clone()),
        ..Options::default()
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:07}").into_bytes()
}

fn value(i: u32) -> Vec<u8> {
    let mut v = format!("value-{i}-").into_bytes();
    v.resize(100, b'v');
    v
}

/// The WAL files, oldest first.
fn wal_files(fs: &FaultFs) -> Vec<PathBuf> {
    let mut logs: Vec<PathBuf> = fs
        .paths()
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    logs
}

/// Flips a bit in the middle of the oldest WAL and expects the open to report corruption.
fn damaged_oldest_log_is_corruption(fs: &FaultFs, dir: &Path) {
    let logs = wal_files(fs);
    let oldest = &logs[0];
    let len = fs.file_len(oldest).unwrap();
    assert!(fs.flip_bit(oldest, len / 2, 3));
    match Db::open(dir, options(fs)) {
        Err(Error::Corruption(_)) => {}
        other => panic!("expected corruption, got {:?}", other.map(|_| ())),
    }
}

/// Writes `n` keys to the default keyspace (filling WALs) and every 100th to keyspace "a",
/// unsynced, in a database opened stepped; flushes the default keyspace's first memtable
/// (which records its logs obsolete for it, while "a" still needs them), then cuts the power.
fn write_two_keyspaces_flush_one_then_lose_power(fs: &FaultFs, dir: &Path, n: u32) {
    let db = Db::open_stepped(dir, options(fs)).unwrap();
    let a = db.create_keyspace("a", KeyspaceOptions::default()).unwrap();
    for i in 0..n {
        db.put(key(i), value(i)).unwrap();
        if i % 100 == 0 {
            a.put(key(i), value(i)).unwrap();
        }
    }
    assert!(db.step_flush().unwrap(), "a memtable was waiting");
    fs.crash();
    drop(a);
    drop(db);
}

/// Writes `n` keys in order, unsynced, in a database opened stepped (memtables switch to new
/// WALs as they fill, but nothing is flushed), then cuts the power. With `sync_last` the last
/// write is synced.
fn write_then_lose_power(fs: &FaultFs, dir: &Path, n: u32, sync_last: bool) {
    let db = Db::open_stepped(dir, options(fs)).unwrap();
    for i in 0..n {
        let sync = sync_last && i + 1 == n;
        let mut batch = WriteBatch::new();
        batch.put(key(i), value(i));
        db.write_opt(batch, &WriteOptions { sync }).unwrap();
    }
    assert!(wal_files(fs).len() >= 4, "the writes span several WALs");
    fs.crash();
    drop(db);
}

/// The keys of `db`, checked to be a prefix `0..len` of the writes; returns `len`.
fn prefix_len(db: &Db, n: u32) -> u32 {
    let found: Vec<bool> = (0..n).map(|i| db.get(key(i)).unwrap().is_some()).collect();
    let len = found.iter().take_while(|f| **f).count();
    assert!(
        found[len..].iter().all(|f| !f),
        "key {len} is missing but a later one survived: not a prefix"
    );
    for i in 0..len as u32 {
        assert_eq!(db.get(key(i)).unwrap(), Some(value(i)));
    }
    len as u32
}

#[test]
fn a_power_loss_after_unsynced_switches_recovers_a_prefix() {
    let n = 2_000;
    let mut dropped_logs = 0;
    for seed in 0..12 {
        let fs = FaultFs::new();
        let dir = Path::new("/db");
        write_then_lose_power(&fs, dir, n, false);
        fs.restart_scrambled(seed);
        let db =
            Db::open(dir, options(&fs)).expect("a power loss of unsynced writes is no corruption");
        prefix_len(&db, n);
        dropped_logs += db.stats().recovery_dropped_wals;
    }
    // Some power loss took the end of an older log and the newer logs went with it: the case
    // this test is about happened.
    assert!(dropped_logs > 0);
}

#[test]
fn a_synced_write_makes_every_closed_log_durable() {
    let n = 2_000;
    for seed in 0..6 {
        let fs = FaultFs::new();
        let dir = Path::new("/db");
        write_then_lose_power(&fs, dir, n, true);
        fs.restart_scrambled(seed);
        let db = Db::open(dir, options(&fs)).unwrap();
        assert_eq!(prefix_len(&db, n), n, "seed {seed}");
    }
}

#[test]
fn a_flush_makes_the_closed_logs_durable_first() {
    // Keyspace "a" takes a write now and then, keyspace "default" fills WALs: the flush of
    // "default"'s first memtable records its logs obsolete; "a"'s writes in them must survive.
    for seed in 0..6 {
        let fs = FaultFs::new();
        let dir = Path::new("/db");
        let n = 2_000;
        write_two_keyspaces_flush_one_then_lose_power(&fs, dir, n);
        fs.restart_scrambled(seed);
        let db = Db::open(dir, options(&fs)).unwrap();
        let a = db.keyspace("a").unwrap();
        // The flushed memtable is there, so every write to "a" before its end is too.
        let flushed = (0..n)
            .take_while(|i| db.get(key(*i)).unwrap().is_some())
            .count() as u32;
        assert!(flushed > 0);
        for i in (0..flushed).filter(|i| i % 100 == 0) {
            assert_eq!(
                a.get(key(i)).unwrap(),
                Some(value(i)),
                "seed {seed} key {i}"
            );
        }
    }
}

#[test]
fn damage_that_a_later_sync_proves_synced_is_corruption() {
    let fs = FaultFs::new();
    let dir = Path::new("/db");
    write_then_lose_power(&fs, dir, 2_000, true);
    fs.restart_without_loss();
    // The oldest log was synced by the last write, before that write's sync mark.
    damaged_oldest_log_is_corruption(&fs, dir);
}

#[test]
fn damage_in_a_log_a_flush_recorded_past_is_corruption() {
    // No synced write anywhere: only the flush's manifest edit (the "default" keyspace's log
    // number past the oldest log) proves that log synced, and "a" still needs it.
    let fs = FaultFs::new();
    let dir = Path::new("/db");
    write_two_keyspaces_flush_one_then_lose_power(&fs, dir, 2_000);
    fs.restart_without_loss();
    damaged_oldest_log_is_corruption(&fs, dir);
}

#[test]
fn an_older_log_lost_whole_ends_the_replay_before_the_next() {
    // The oldest log's pages and size never reached the disk: the next log starts with a gap
    // in the sequence numbers, which nothing proves synced.
    let fs = FaultFs::new();
    let dir = Path::new("/db");
    write_then_lose_power(&fs, dir, 2_000, false);
    fs.restart_without_loss();
    let logs = wal_files(&fs);
    assert!(fs.truncate(&logs[0], 0));
    let db = Db::open(dir, options(&fs)).unwrap();
    assert_eq!(prefix_len(&db, 2_000), 0);
    // Every log but the empty oldest: the second stopped the replay at its first record.
    assert_eq!(db.stats().recovery_dropped_wals as usize, logs.len() - 1);
}

#[test]
fn a_failed_sync_of_a_closed_log_stops_writes_until_resume_flushes_its_memtables() {
    let fs = FaultFs::new();
    let dir = Path::new("/db");
    let db = Db::open_stepped(dir, options(&fs)).unwrap();
    let n = 2_000;
    for i in 0..n {
        db.put(key(i), value(i)).unwrap();
    }
    assert!(wal_files(&fs).len() >= 4, "closed logs wait for a sync");
    // A synced write syncs the closed logs first: the oldest one's sync fails, and the kernel
    // may have dropped its pages.
    fs.fail_sync_in(0);
    let synced = |i: u32| {
        let mut batch = WriteBatch::new();
        batch.put(key(i), value(i));
        db.write_opt(batch, &WriteOptions { sync: true })
    };
    assert!(synced(n).is_err());
    assert!(fs.failed_sync().is_some());
    assert!(synced(n).is_err(), "writes stay stopped");
    // Resume drops the closed logs unsynced and flushes the memtables they held.
    db.resume().unwrap();
    synced(n).unwrap();
    fs.crash();
    drop(db);
    fs.restart_scrambled(1);
    let db = Db::open(dir, options(&fs)).unwrap();
    assert_eq!(prefix_len(&db, n + 1), n + 1);
}
