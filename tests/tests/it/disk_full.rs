//! A disk that fills up and stays full (`FaultFs::set_space_limit`): writes stop with a clean
//! error, nothing acknowledged is lost, `Db::resume` fails while the disk is still full and
//! brings writes back once space is freed; a read-write open on a full disk with nothing to
//! write opens, and a read-only open always does.

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::path::Path;

use siftdb::{BackgroundJob, Db, Error, WriteBatch, WriteOptions};
use siftdb_tests::FaultFs;

/// The fault sweeps' small tree and table cache, with the default manifest size: a manifest
/// rolled over just before a close may still be on disk, and the next open's cleanup frees its
/// bytes, which would let a write fit on a disk the tests call full.
fn options(fs: &FaultFs) -> siftdb::Options {
    siftdb::Options {
        max_manifest_file_size: 64 << 20,
        ..siftdb_tests::small_tree_options(fs)
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn value(i: u32) -> Vec<u8> {
    format!("value-{i}-{}", "v".repeat(40)).into_bytes()
}

/// Writes keys from `from` on (every fifth synced) until a write fails or `to` is reached;
/// returns the keys acknowledged (in `acked`), the last synced one, and the error.
fn write_until_full(
    db: &Db,
    from: u32,
    to: u32,
    acked: &mut BTreeMap<Vec<u8>, Vec<u8>>,
) -> (Option<u32>, Option<Error>) {
    let mut synced = None;
    for i in from..to {
        let mut b = WriteBatch::new();
        b.put(key(i), value(i));
        let sync = i % 5 == 4;
        if let Err(e) = db.write_opt(b, &WriteOptions { sync }) {
            return (synced, Some(e));
        }
        acked.insert(key(i), value(i));
        if sync {
            synced = Some(i);
        }
    }
    (synced, None)
}

fn check_contents(db: &Db, acked: &BTreeMap<Vec<u8>, Vec<u8>>, what: &str) {
    let got: BTreeMap<Vec<u8>, Vec<u8>> = db.iter().map(|r| r.unwrap()).collect();
    let missing: Vec<String> = acked
        .keys()
        .filter(|k| !got.contains_key(*k))
        .take(5)
        .map(|k| String::from_utf8_lossy(k).into_owned())
        .collect();
    let extra: Vec<String> = got
        .keys()
        .filter(|k| !acked.contains_key(*k))
        .take(5)
        .map(|k| String::from_utf8_lossy(k).into_owned())
        .collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{what}: missing {missing:?}, extra {extra:?}"
    );
    assert!(got == *acked, "{what}: contents differ");
}

/// The background job a full disk stopped, if writes stopped on it.
fn stopped_on(db: &Db) -> Option<BackgroundJob> {
    match db.put(b"probe", b"x") {
        Err(Error::Background(why)) => {
            assert_eq!(why.io_kind(), Some(ErrorKind::StorageFull), "{why}");
            Some(why.job())
        }
        Err(e) => panic!("a write on a full disk: {e:?}"),
        Ok(()) => {
            db.delete(b"probe").unwrap();
            None
        }
    }
}

/// For many fill levels: the disk fills after a different amount of data each time, so the
/// write that meets it is a WAL append, a flush, a compaction output or a manifest edit.
#[test]
fn a_disk_that_stays_full_stops_writes_cleanly_and_resume_brings_them_back() {
    let points = siftdb_tests::env_count("SIFTDB_DISK_FULL_POINTS", 40) as u32;
    let mut by_job = BTreeMap::<String, u32>::new();
    let mut resume_refused = 0;
    for p in 0..points {
        let fs = FaultFs::new();
        let dir = Path::new("/db");
        let db = Db::open(dir, options(&fs)).unwrap();
        let mut acked = BTreeMap::new();
        let (_, e) = write_until_full(&db, 0, 500, &mut acked);
        assert!(e.is_none());
        db.wait_for_compaction().unwrap();
        // Every third point, a full compaction meets the full disk first (unless background
        // compaction got to the overwrites before the limit was set and left it nothing that
        // does not fit: then the writes meet it).
        let compacted = p % 3 == 2 && {
            // Overwrites in L0 over the keys below: the compaction has to rewrite them.
            let (_, e) = write_until_full(&db, 0, 100, &mut acked);
            assert!(e.is_none(), "point {p}: {e:?}");
            db.flush().unwrap();
            fs.set_space_limit(Some(fs.used_bytes() + 500 + u64::from(p) * 100));
            db.compact_range(None, None).is_ok()
        };
        let first = if p % 3 == 2 && !compacted {
            db.put(b"probe", b"x")
                .expect_err("a write after a compaction met the full disk")
        } else {
            // Room for a varying amount more, then the disk is full and stays full.
            if !compacted {
                fs.set_space_limit(Some(fs.used_bytes() + 2_000 + u64::from(p / 3) * 3_000));
            }
            let (_, e) = write_until_full(&db, 500, 20_000, &mut acked);
            e.unwrap_or_else(|| panic!("point {p}: the disk never filled"))
        };
        assert!(
            first.io_kind() == Some(ErrorKind::StorageFull),
            "point {p}: the write that met the full disk: {first:?}"
        );
        // Background work may still be meeting it: let it settle, then every write fails.
        let _ = db.wait_for_compaction();
        let job = stopped_on(&db).unwrap_or_else(|| panic!("point {p}: writes went on"));
        *by_job.entry(job.to_string()).or_default() += 1;
        // Reads still answer, with every acknowledged write.
        check_contents(&db, &acked, "while full");
        // Still full: resume fails with the no-space error when the work it retries needs
        // space, or succeeds when finishing it freed some (the WAL it made obsolete is
        // deleted); either way nothing is lost, and a write then either succeeds or fails with
        // the no-space error.
        let resumed = db.resume();
        // The retried job's error again, or the I/O error of a step of its own (a new manifest
        // or WAL that did not fit).
        if let Err(e) = resumed {
            assert_eq!(
                e.io_kind(),
                Some(ErrorKind::StorageFull),
                "point {p}: {e:?}"
            );
            resume_refused += 1;
        }
        check_contents(&db, &acked, "after resuming on a full disk");
        match db.put(b"probe", b"x") {
            Ok(()) => {
                acked.insert(b"probe".to_vec(), b"x".to_vec());
            }
            Err(e) => assert_eq!(
                e.io_kind(),
                Some(ErrorKind::StorageFull),
                "point {p}: {e:?}"
            ),
        }
        // Space freed: resume, and writes work again.
        fs.set_space_limit(None);
        db.resume()
            .unwrap_or_else(|e| panic!("point {p}: resume after freeing space: {e}"));
        let (_, e) = write_until_full(&db, 30_000, 30_200, &mut acked);
        assert!(e.is_none(), "point {p}: a write after resume: {e:?}");
        db.flush().unwrap();
        db.wait_for_compaction().unwrap();
        check_contents(&db, &acked, "after resume");
        // Nothing acknowledged is lost across a reopen either.
        db.close().unwrap();
        drop(db);
        let db = Db::open(dir, options(&fs)).unwrap();
        check_contents(&db, &acked, "after reopen");
    }
    let jobs: Vec<String> = by_job.iter().map(|(j, n)| format!("{j} {n}")).collect();
    println!(
        "disk-full points: {points} (writes stopped on: {}; resume refused while full: {resume_refused}), resumed after freeing space: {points}, lost writes: 0",
        jobs.join(", ")
    );
}

/// Power fails while the disk is full: every write acknowledged as synced survives, and the
/// database opens again once there is room.
#[test]
fn power_loss_on_a_full_disk_loses_no_synced_write() {
    for p in 0..10u32 {
        let fs = FaultFs::new();
        let dir = Path::new("/db");
        let db = Db::open(dir, options(&fs)).unwrap();
        let mut acked = BTreeMap::new();
        write_until_full(&db, 0, 300, &mut acked);
        fs.set_space_limit(Some(fs.used_bytes() + 3_000 + u64::from(p) * 2_000));
        let (synced, e) = write_until_full(&db, 300, 20_000, &mut acked);
        assert!(e.is_some(), "point {p}: the disk never filled");
        fs.crash();
        drop(db);
        fs.restart_scrambled(u64::from(p));
        fs.set_space_limit(None);
        let db = Db::open(dir, options(&fs)).unwrap();
        let last = synced.unwrap_or(299);
        for i in 0..=last {
            assert_eq!(
                db.get(key(i)).unwrap(),
                Some(value(i)),
                "point {p}: synced {i}"
            );
        }
    }
}

#[test]
fn opens_on_a_full_disk_that_has_nothing_to_write() {
    let fs = FaultFs::new();
    let dir = Path::new("/db");
    let mut acked = BTreeMap::new();
    {
        let db = Db::open(dir, options(&fs)).unwrap();
        write_until_full(&db, 0, 400, &mut acked);
        db.flush().unwrap();
        db.wait_for_compaction().unwrap();
        db.close().unwrap();
    }
    // Not a byte more fits.
    fs.set_space_limit(Some(fs.used_bytes()));
    let db = Db::open(dir, options(&fs)).expect("read-write open on a full disk");
    check_contents(&db, &acked, "open on a full disk");
    // Writes fail cleanly (the WAL append meets the full disk) and lose nothing.
    let e = db.put(b"more", b"x").expect_err("a write on a full disk");
    assert_eq!(e.io_kind(), Some(ErrorKind::StorageFull), "{e:?}");
    drop(db);
    // A read-only open always works, full disk or not.
    let ro = Db::open_read_only(dir, options(&fs)).expect("read-only open on a full disk");
    check_contents(&ro, &acked, "read-only open");
    drop(ro);
    // Reopened full again, then space freed: resume, write, reopen.
    let db = Db::open(dir, options(&fs)).expect("second open on a full disk");
    fs.set_space_limit(None);
    let _ = db.put(b"more", b"x"); // may meet the error the first open left, or succeed
    db.resume().expect("resume after freeing space");
    db.put(b"more", b"x").unwrap();
    acked.insert(b"more".to_vec(), b"x".to_vec());
    db.flush().unwrap();
    db.close().unwrap();
    drop(db);
    let db = Db::open(dir, options(&fs)).unwrap();
    check_contents(&db, &acked, "after freeing space");
}

/// A database whose WALs hold writes must write them to tables at open: on a full disk that
/// open fails with a clean error and changes nothing; the read-only open serves the writes.
#[test]
fn an_open_that_must_write_fails_cleanly_on_a_full_disk() {
    let fs = FaultFs::new();
    let dir = Path::new("/db");
    let mut acked = BTreeMap::new();
    {
        let db = Db::open(dir, options(&fs)).unwrap();
        write_until_full(&db, 0, 50, &mut acked);
        db.close().unwrap();
    }
    fs.set_space_limit(Some(fs.used_bytes()));
    match Db::open(dir, options(&fs)) {
        Err(e) => assert_eq!(e.io_kind(), Some(ErrorKind::StorageFull), "{e:?}"),
        Ok(_) => panic!("an open that had to write its WALs out opened on a full disk"),
    }
    let ro = Db::open_read_only(dir, options(&fs)).unwrap();
    check_contents(&ro, &acked, "read-only open");
    drop(ro);
    fs.set_space_limit(None);
    let db = Db::open(dir, options(&fs)).unwrap();
    check_contents(&db, &acked, "open once there is room");
}
