//! Three windows held open on purpose, with other threads acting inside them (stepped background
//! work, `Db::open_stepped`, so that nothing runs but what a test starts):
//!
//! * `write:wal_switch_io` — a memtable switch has released the state lock to create the new WAL
//!   and sync the old one: readers, snapshots, a flush and a file cleanup run to the end inside
//!   it, writers queue behind the leader and nothing they write is visible before it;
//! * `version_set:manifest_appended` — a flush's edit is in the manifest and not yet installed:
//!   reads still see its memtable, writes go on, a file cleanup keeps its table (pending) and the
//!   WALs the memtable needs, a second flush and a compaction wait their turn; each job counts
//!   once and nothing is lost;
//! * `obsolete:files_listed` — a cleanup has listed the directory and not yet read the live
//!   state: tables a flush and a compaction create and install meanwhile, and a table listed
//!   while still pending, are never deleted; the compaction's inputs are.
//!
//! Every test ends by reopening the database (a live table or needed WAL deleted would fail it
//! or lose keys there: open files keep working for the instance that deleted them).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::thread;

use siftdb::sync_point::{
    MANIFEST_APPENDED, MANIFEST_CREATED, OBSOLETE_FILES_LISTED, WAL_SWITCH_IO,
};
use siftdb::{Db, Options, WriteBatch, WriteOptions};
use siftdb_tests::pause::{must_finish, wait_until, Window};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn options() -> Options {
    Options {
        write_buffer_size: 4096,
        max_write_buffer_number: 16,
        level0_file_num_compaction_trigger: 2,
        target_file_size_base: 8 << 10,
        max_bytes_for_level_base: 1 << 20,
        ..Options::default()
    }
}

fn key(i: usize) -> Vec<u8> {
    format!("k{i:04}").into_bytes()
}

fn value(i: usize, round: usize) -> Vec<u8> {
    format!("v{round}-{i}-").into_bytes().repeat(8)
}

/// Puts keys `keys` of round `round`, in the database and the model.
fn put_round(db: &Db, model: &mut Model, keys: std::ops::Range<usize>, round: usize) {
    for i in keys {
        db.put(key(i), value(i, round)).expect("put");
        model.insert(key(i), value(i, round));
    }
}

/// Every key of `model` through `get`, and a full scan.
fn check(db: &Db, model: &Model, what: &str) {
    for (k, v) in model {
        let got = db.get(k).unwrap_or_else(|e| panic!("{what}: get: {e}"));
        assert_eq!(
            got.as_ref(),
            Some(v),
            "{what}: {}",
            String::from_utf8_lossy(k)
        );
    }
    let scanned: Vec<(Vec<u8>, Vec<u8>)> = db
        .iter()
        .map(|r| r.unwrap_or_else(|e| panic!("{what}: scan: {e}")))
        .collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.clone().into_iter().collect();
    assert_eq!(scanned, want, "{what}: scan");
}

/// The numbers of the files in `dir` ending in `suffix`.
fn on_disk(dir: &Path, suffix: &str) -> BTreeSet<u64> {
    std::fs::read_dir(dir)
        .expect("list the database")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|n| n.strip_suffix(suffix)?.parse().ok())
        .collect()
}

fn tables_on_disk(dir: &Path) -> BTreeSet<u64> {
    on_disk(dir, ".sst")
}

fn wals_on_disk(dir: &Path) -> BTreeSet<u64> {
    on_disk(dir, ".log")
}

/// The tables of the current version (the `siftdb.sstables` rows).
fn live_tables(db: &Db) -> BTreeSet<u64> {
    let table = db.property("siftdb.sstables").expect("siftdb.sstables");
    table
        .lines()
        .filter(|l| l.starts_with('L'))
        .filter_map(|l| l.split_whitespace().nth(1)?.parse().ok())
        .collect()
}

fn frozen(db: &Db) -> usize {
    db.property("siftdb.num-immutable-mem-table")
        .and_then(|n| n.parse().ok())
        .expect("siftdb.num-immutable-mem-table")
}

/// A stepped database holding 300 keys in several frozen memtables (no thread flushes them).
fn setup() -> (tempfile::TempDir, PathBuf, Db, Model) {
    let dir = siftdb_tests::temp_dir();
    let path = dir.path().join("db");
    let db = Db::open_stepped(&path, options()).expect("open");
    let mut model = Model::new();
    put_round(&db, &mut model, 0..300, 0);
    assert!(
        frozen(&db) >= 3,
        "the setup froze {} memtables",
        frozen(&db)
    );
    (dir, path, db, model)
}

/// Closes `db`, reopens it with background threads and checks it against `model`.
fn reopen_and_check(db: Db, path: &Path, model: &Model) {
    db.close().expect("close");
    drop(db);
    let db = Db::open(path, options()).expect("reopen");
    check(&db, model, "after reopen");
}

#[test]
fn wal_switch_io_lets_readers_a_flush_and_a_cleanup_run_while_writers_queue() {
    let (_dir, path, db, mut model) = setup();
    // The active memtable over its size: the next write switches it.
    db.put(b"big", vec![b'b'; 5000]).expect("put");
    model.insert(b"big".to_vec(), vec![b'b'; 5000]);
    let before_window = model.clone();
    let frozen_before = frozen(&db);
    let wals_before = wals_on_disk(&path);
    let mut window = Window::arm(&db, WAL_SWITCH_IO);
    let leader = {
        let db = db.clone();
        thread::spawn(move || db.put(b"w1", b"leader"))
    };
    window.wait_entered("the switching writer");

    // Readers and snapshots need no lock the switch holds.
    let (d, m) = (db.clone(), model.clone());
    must_finish("reads in the switch", move || {
        check(&d, &m, "in the switch")
    });
    let d = db.clone();
    let snapshot = must_finish("a snapshot in the switch", move || d.snapshot());
    assert_eq!(
        frozen(&db),
        frozen_before,
        "the switch froze before its I/O"
    );
    // A flush of an older memtable runs to its end (manifest and install included).
    let d = db.clone();
    let flushed = must_finish("a flush in the switch", move || d.step_flush());
    assert!(flushed.expect("step_flush"), "nothing flushed");
    assert_eq!(frozen(&db), frozen_before - 1, "the flush did not install");
    // A cleanup keeps the new log (created, not yet in the state) and every log still needed.
    let d = db.clone();
    must_finish("a cleanup in the switch", move || d.step_obsolete_files()).expect("cleanup");
    let wals = wals_on_disk(&path);
    let new_wal = *wals.iter().max().expect("a WAL");
    assert!(
        !wals_before.contains(&new_wal),
        "no new WAL on disk: {wals:?}"
    );
    // Writers queue behind the leader (which owns the write path): none is visible yet.
    let followers: Vec<_> = (0..3)
        .map(|i| {
            let db = db.clone();
            thread::spawn(move || {
                let mut batch = WriteBatch::new();
                batch.put(format!("w2-{i}"), b"follower");
                batch.put(format!("w3-{i}"), b"follower");
                db.write_opt(batch, &WriteOptions { sync: i == 0 })
            })
        })
        .collect();
    for k in ["w1", "w2-0", "w2-1", "w2-2"] {
        let d = db.clone();
        let got = must_finish("a read in the switch", move || d.get(k)).expect("get");
        assert_eq!(got, None, "{k} visible before the switch finished");
    }

    window.close();
    leader.join().expect("leader").expect("the switching write");
    for f in followers {
        f.join().expect("follower").expect("a queued write");
    }
    model.insert(b"w1".to_vec(), b"leader".to_vec());
    for i in 0..3 {
        model.insert(format!("w2-{i}").into_bytes(), b"follower".to_vec());
        model.insert(format!("w3-{i}").into_bytes(), b"follower".to_vec());
    }
    check(&db, &model, "after the switch");
    assert_eq!(
        frozen(&db),
        frozen_before,
        "one frozen by the switch, one flushed"
    );
    for (k, v) in &before_window {
        assert_eq!(snapshot.get(k).expect("snapshot get").as_ref(), Some(v));
    }
    assert_eq!(snapshot.get(b"w1").expect("snapshot get"), None);
    drop(snapshot);
    reopen_and_check(db, &path, &model);
}

#[test]
fn manifest_append_to_install_gap_loses_nothing_and_counts_once() {
    let (_dir, path, db, mut model) = setup();
    // Two L0 tables: a compaction is due on the version the gap still shows.
    for _ in 0..2 {
        assert!(db.step_flush().expect("step_flush"));
    }
    let stats = db.stats();
    let frozen_before = frozen(&db);
    let tables_before = tables_on_disk(&path);
    let wals_before = wals_on_disk(&path);
    let mut window = Window::arm(&db, MANIFEST_APPENDED);
    let flush = {
        let db = db.clone();
        thread::spawn(move || db.step_flush())
    };
    window.wait_entered("the flush");
    let new_tables: Vec<u64> = tables_on_disk(&path)
        .difference(&tables_before)
        .copied()
        .collect();
    let [table] = new_tables[..] else {
        panic!("the flush in the gap wrote {new_tables:?}");
    };

    // Not installed: readers still read the memtable, nothing is counted yet.
    let (d, m) = (db.clone(), model.clone());
    must_finish("reads in the gap", move || check(&d, &m, "in the gap"));
    assert_eq!(frozen(&db), frozen_before, "installed before the gap ended");
    assert_eq!(
        db.stats().flushes,
        stats.flushes,
        "counted before installed"
    );
    assert!(
        !live_tables(&db).contains(&table),
        "the table is live before its install"
    );
    let d = db.clone();
    let snapshot = must_finish("a snapshot in the gap", move || d.snapshot());
    let at_snapshot = model.clone();
    // Writes need no manifest, switches included.
    let (d, mut m) = (db.clone(), model.clone());
    model = must_finish("writes in the gap", move || {
        put_round(&d, &mut m, 100..200, 1);
        m
    });
    // A cleanup keeps the pending table and the WALs of every memtable not yet installed.
    let d = db.clone();
    must_finish("a cleanup in the gap", move || d.step_obsolete_files()).expect("cleanup");
    assert!(
        tables_on_disk(&path).contains(&table),
        "the pending table was deleted"
    );
    let wals = wals_on_disk(&path);
    assert!(
        wals.is_superset(&wals_before),
        "needed WALs deleted: {wals_before:?} -> {wals:?}"
    );
    // A second flush and a compaction wait for the manifest (and the flush role); the
    // compaction may pick before the install or after it.
    let second = {
        let db = db.clone();
        thread::spawn(move || db.step_flush())
    };
    let compaction = {
        let db = db.clone();
        thread::spawn(move || db.step_compaction())
    };

    window.close();
    assert!(flush.join().expect("flush").expect("the flush"));
    assert!(second.join().expect("flush").expect("the second flush"));
    assert!(compaction
        .join()
        .expect("compaction")
        .expect("the compaction"));
    let after = db.stats();
    assert_eq!(after.flushes, stats.flushes + 2, "flushes counted");
    assert_eq!(
        after.compactions,
        stats.compactions + 1,
        "compactions counted"
    );
    check(&db, &model, "after the gap");
    for (k, v) in &at_snapshot {
        assert_eq!(snapshot.get(k).expect("snapshot get").as_ref(), Some(v));
    }
    drop(snapshot);
    // The compaction picked on the version the gap showed (the two older tables) or, started
    // late, on the next (all three): either way the disk holds what the version names, and the
    // contents are whole.
    let live = live_tables(&db);
    db.step_obsolete_files().expect("cleanup");
    assert_eq!(
        tables_on_disk(&path),
        live,
        "tables on disk against the version"
    );
    reopen_and_check(db, &path, &model);
}

#[test]
fn cleanup_between_listing_and_live_state_keeps_tables_installed_meanwhile() {
    let (_dir, path, db, model) = setup();
    assert!(db.step_flush().expect("step_flush"));
    let stats = db.stats();
    let mut window = Window::arm(&db, OBSOLETE_FILES_LISTED);
    let cleanup = {
        let db = db.clone();
        thread::spawn(move || db.step_obsolete_files())
    };
    window.wait_entered("the cleanup");
    let listed = tables_on_disk(&path);

    // A flush and then a compaction install in the window; each then waits to clean up after
    // itself behind the held cleanup.
    let flush = {
        let db = db.clone();
        thread::spawn(move || db.step_flush())
    };
    wait_until("the flush's install", || {
        db.stats().flushes == stats.flushes + 1
    });
    let compaction = {
        let db = db.clone();
        thread::spawn(move || db.step_compaction())
    };
    wait_until("the compaction's install", || {
        db.stats().compactions == stats.compactions + 1
    });
    let live = live_tables(&db);
    let created: BTreeSet<u64> = live.difference(&listed).copied().collect();
    let inputs: BTreeSet<u64> = listed.difference(&live).copied().collect();
    assert!(!created.is_empty(), "nothing installed in the window");
    assert!(!inputs.is_empty(), "the compaction replaced nothing listed");

    window.close();
    cleanup.join().expect("cleanup").expect("the cleanup");
    assert!(flush.join().expect("flush").expect("the flush"));
    assert!(compaction
        .join()
        .expect("compaction")
        .expect("the compaction"));
    let on_disk = tables_on_disk(&path);
    assert!(
        on_disk.is_superset(&live),
        "live tables deleted: {live:?}, on disk {on_disk:?}"
    );
    assert!(
        on_disk.is_disjoint(&inputs),
        "compaction inputs left: {on_disk:?}"
    );
    check(&db, &model, "after the cleanup");
    reopen_and_check(db, &path, &model);
}

/// A table on disk but still pending (its flush held between manifest append and install) when
/// the cleanup lists the directory; the install lands before (`installed_first`) or after the
/// cleanup reads the live state.
fn pending_table_listed(installed_first: bool) {
    let (_dir, path, db, model) = setup();
    let stats = db.stats();
    let tables_before = tables_on_disk(&path);
    let mut gap = Window::arm(&db, MANIFEST_APPENDED);
    let flush = {
        let db = db.clone();
        thread::spawn(move || db.step_flush())
    };
    gap.wait_entered("the flush");
    let new_tables: Vec<u64> = tables_on_disk(&path)
        .difference(&tables_before)
        .copied()
        .collect();
    let [table] = new_tables[..] else {
        panic!("the flush wrote {new_tables:?}");
    };
    let mut listing = Window::arm(&db, OBSOLETE_FILES_LISTED);
    let cleanup = {
        let db = db.clone();
        thread::spawn(move || db.step_obsolete_files())
    };
    listing.wait_entered("the cleanup");
    if installed_first {
        gap.close();
        wait_until("the flush's install", || {
            db.stats().flushes == stats.flushes + 1
        });
        listing.close();
    } else {
        listing.close();
        // The cleanup ends with the flush still held in its gap.
        wait_until("the cleanup's end", || cleanup.is_finished());
        assert!(
            tables_on_disk(&path).contains(&table),
            "the pending table was deleted"
        );
        gap.close();
    }
    cleanup.join().expect("cleanup").expect("the cleanup");
    assert!(flush.join().expect("flush").expect("the flush"));
    assert!(
        tables_on_disk(&path).contains(&table),
        "the flushed table was deleted"
    );
    assert!(
        live_tables(&db).contains(&table),
        "the flushed table is not live"
    );
    check(&db, &model, "after the cleanup");
    reopen_and_check(db, &path, &model);
}

#[test]
fn cleanup_keeps_a_listed_pending_table_installed_before_it_reads_the_live_state() {
    pending_table_listed(true);
}

#[test]
fn cleanup_keeps_a_listed_table_still_pending_when_it_reads_the_live_state() {
    pending_table_listed(false);
}

/// A cleanup while a manifest rollover has written the new manifest and pointed `CURRENT` at
/// it, before the version set records its number: the new manifest must survive (it once was
/// deleted there as "not the live one", and the next open found `CURRENT` naming nothing).
#[test]
fn cleanup_inside_a_rollover_keeps_the_manifest_current_names() {
    let dir = siftdb_tests::temp_dir();
    let path = dir.path().join("db");
    let rolling = Options {
        max_manifest_file_size: 1, // every edit rolls the manifest over
        ..options()
    };
    let db = Db::open_stepped(&path, rolling).expect("open");
    let mut model = Model::new();
    put_round(&db, &mut model, 0..300, 0);
    let mut window = Window::arm(&db, MANIFEST_CREATED);
    let flush = {
        let db = db.clone();
        thread::spawn(move || db.step_flush())
    };
    window.wait_entered("the rollover");
    db.step_obsolete_files()
        .expect("a cleanup inside the rollover");
    let current = std::fs::read_to_string(path.join("CURRENT")).expect("CURRENT");
    assert!(
        path.join(current.trim_end()).exists(),
        "CURRENT names {current:?}, which the cleanup deleted"
    );
    window.close();
    assert!(flush.join().expect("flush").expect("the flush"));
    reopen_and_check(db, &path, &model);
}
