//! A failed `fsync` is dropped pages: make the Nth file sync of a workload fail the way a disk
//! does (`FaultFs::fail_sync_in`: the file's unsynced bytes are gone, as after Linux's failed
//! `fsync`), for every N — WAL syncs of synced writes and of memtable switches, manifest
//! appends, flushed tables and compaction outputs. The engine must never retry and carry on:
//! every later write fails with `Error::Background`. After a power loss then, no write
//! acknowledged as synced is missing.

use std::path::Path;

use siftdb::{Db, Error, Options, WriteBatch, WriteOptions};
use siftdb_tests::FaultFs;

fn options(fs: &FaultFs) -> Options {
    // Every value in blob files: their syncs (before the flush's manifest edit) fail too.
    Options {
        enable_blob_files: true,
        min_blob_size: 16,
        ..siftdb_tests::small_tree_options(fs)
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

/// How a workload run ended: the keys acknowledged as synced (a synced write also makes every
/// earlier one durable), and the database if a call on it failed (`None` if it ran clean or its
/// open failed).
struct Run {
    durable: u32,
    failed: bool,
    db: Option<Db>,
}

/// Writes 300 keys, every third one synced, with flushes and a full compaction.
fn workload(fs: &FaultFs, dir: &Path) -> Run {
    let Ok(db) = Db::open(dir, options(fs)) else {
        return Run {
            durable: 0,
            failed: true,
            db: None,
        };
    };
    let mut durable = 0;
    let failed = |durable, db| Run {
        durable,
        failed: true,
        db: Some(db),
    };
    for i in 0..300u32 {
        let mut b = WriteBatch::new();
        b.put(key(i), [b'v'; 40]);
        let sync = i % 3 == 2;
        if db.write_opt(b, &WriteOptions { sync }).is_err() {
            return failed(durable, db);
        }
        if sync {
            durable = i + 1;
        }
        if i % 100 == 99 && db.flush().is_err() {
            return failed(durable, db);
        }
    }
    if db.compact_range(None, None).is_err() || db.wait_for_compaction().is_err() {
        return failed(durable, db);
    }
    // The close's WAL sync fails like any other: reported, not swallowed.
    Run {
        durable,
        failed: db.close().is_err(),
        db: None,
    }
}

/// What kind of file `path` is, for the printed figure.
fn kind(path: &Path) -> &'static str {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if name.ends_with(".log") {
        "WAL"
    } else if name.starts_with("MANIFEST") {
        "manifest"
    } else if name.ends_with(".sst") {
        "table"
    } else if name.ends_with(".blob") {
        "blob file"
    } else if name.starts_with("CURRENT") {
        "CURRENT"
    } else if name.starts_with("OPTIONS") {
        "OPTIONS"
    } else {
        "other"
    }
}

#[test]
fn a_failed_sync_stops_writes_and_loses_no_synced_write() {
    let clean = FaultFs::new();
    let dir = Path::new("/db");
    let run = workload(&clean, dir);
    assert!(!run.failed && run.durable == 300);
    let total = clean.syncs();
    let mut by_kind = std::collections::BTreeMap::<&str, u32>::new();
    let mut not_reached = 0;
    for n in 0..total {
        let fs = FaultFs::new();
        fs.fail_sync_in(n);
        let Run {
            durable,
            failed,
            db,
        } = workload(&fs, dir);
        // Background work interleaves differently from run to run, so a run may make a sync
        // or two fewer than the clean one: then the last few failures are never reached.
        let Some(path) = fs.failed_sync() else {
            assert!(
                fs.syncs() <= n,
                "sync {n}: the injected failure never happened ({} syncs)",
                fs.syncs()
            );
            not_reached += 1;
            continue;
        };
        *by_kind.entry(kind(&path)).or_default() += 1;
        assert!(
            failed,
            "sync {n} ({}) failed and nothing noticed",
            path.display()
        );
        // Never "retry and carry on": the next write fails too, with the background error.
        if let Some(db) = db {
            match db.put("after", "v") {
                Err(Error::Background(_)) => {}
                other => panic!("sync {n} ({}): a later write: {other:?}", path.display()),
            }
        }
        // Power loss: only what was synced survives.
        fs.crash();
        fs.restart(0);
        let db = Db::open(dir, options(&fs))
            .unwrap_or_else(|e| panic!("sync {n} ({}): reopen failed: {e}", path.display()));
        for i in 0..durable {
            assert_eq!(
                db.get(key(i)).unwrap(),
                Some(vec![b'v'; 40]),
                "sync {n} ({}): synced key {i} lost",
                path.display()
            );
        }
    }
    assert!(
        by_kind.contains_key("blob file"),
        "no blob file sync failed: {by_kind:?}"
    );
    let kinds: Vec<String> = by_kind.iter().map(|(k, n)| format!("{k} {n}")).collect();
    println!(
        "failed syncs injected: {} ({}; of {total} in a clean run), lost synced writes: 0",
        total - not_reached,
        kinds.join(", ")
    );
}

#[test]
fn after_a_failed_wal_sync_every_write_fails_with_the_background_error() {
    let fs = FaultFs::new();
    let dir = Path::new("/db");
    let db = Db::open(dir, options(&fs)).unwrap();
    db.put("before", "v").unwrap();
    // The next file sync is the synced write's WAL sync.
    fs.fail_sync_in(0);
    let mut b = WriteBatch::new();
    b.put("synced", "v");
    assert!(db.write_opt(b, &WriteOptions { sync: true }).is_err());
    for _ in 0..3 {
        match db.put("after", "v") {
            Err(Error::Background(e)) => assert_eq!(e.job(), siftdb::BackgroundJob::WalWrite),
            other => panic!("a write after a failed WAL sync: {other:?}"),
        }
    }
    assert!(matches!(db.flush(), Err(Error::Background(_))));
}
