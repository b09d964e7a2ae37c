//! Manifest rollover (`Options::max_manifest_file_size`): a database that runs for a long time
//! without reopening keeps its manifests small, every rollover keeps every keyspace's tables,
//! and power lost at any file-system call of a rollover loses no synced write.

use std::path::Path;
use std::sync::Arc;

use siftdb::{Db, KeyspaceOptions, Options, WriteOptions};
use siftdb_tests::FaultFs;

fn key(i: u64) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn value(i: u64, round: u64) -> Vec<u8> {
    let mut v = format!("v{i}-{round}-").into_bytes();
    v.resize(48, b'.');
    v
}

/// The manifests in `dir`: (number of files, their bytes).
fn manifests(dir: &Path) -> (usize, u64) {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("MANIFEST-"))
        .fold((0, 0), |(n, bytes), e| {
            (n + 1, bytes + e.metadata().map_or(0, |m| m.len()))
        })
}

/// Sixty rounds of overwrites, each flushed and compacted, with 64 KiB manifests: the manifest
/// files stay under 512 KiB in total all along (the manifest is started afresh many times), and
/// the database reopens with every value of the last round.
#[test]
fn sixty_rounds_keep_the_manifests_small() {
    let dir = siftdb_tests::temp_dir();
    let options = || Options {
        write_buffer_size: 16 << 10,
        target_file_size_base: 16 << 10,
        max_bytes_for_level_base: 256 << 10,
        level0_file_num_compaction_trigger: 2,
        max_manifest_file_size: 64 << 10,
        ..Options::default()
    };
    let db = Db::open(dir.path(), options()).unwrap();
    let keys = 8_000;
    let mut largest_total = 0;
    for round in 0..60 {
        for i in 0..keys {
            db.put(key(i), value(i, round)).unwrap();
        }
        db.flush().unwrap();
        db.wait_for_compaction().unwrap();
        let (files, bytes) = manifests(dir.path());
        largest_total = largest_total.max(bytes);
        assert!(
            bytes < 512 << 10,
            "round {round}: {files} manifests hold {bytes} bytes"
        );
    }
    // What one manifest would have grown to: every rollover started at the bound, and the
    // last one is on its way to it.
    let stats = db.stats();
    let written = stats.manifest_rollovers * (64 << 10) + stats.manifest_file_size;
    assert!(
        written > 512 << 10,
        "only about {written} manifest bytes written: the bound proves nothing"
    );
    drop(db);
    let db = Db::open(dir.path(), options()).unwrap();
    for i in 0..keys {
        assert_eq!(db.get(key(i)).unwrap(), Some(value(i, 59)), "key {i}");
    }
    println!(
        "60 rounds: {} rollovers (over {written} manifest bytes), at most {largest_total} bytes on disk at once",
        stats.manifest_rollovers
    );
}

fn options(fs: &FaultFs) -> Options {
    Options {
        write_buffer_size: 1 << 20,
        // Every edit starts a new manifest: each flush below is a rollover.
        max_manifest_file_size: 1,
        fs: Arc::new(fs.clone()),
        ..Options::default()
    }
}

/// What a database left by the rollover crash holds: the synced writes of both keyspaces.
fn check(fs: &FaultFs, dir: &Path, synced: u64, what: &str) {
    let db = Db::open(dir, options(fs)).unwrap_or_else(|e| panic!("{what}: reopen: {e}"));
    let other = db.keyspace("other").unwrap();
    for i in 0..synced {
        assert_eq!(
            db.get(key(i)).unwrap(),
            Some(value(i, 0)),
            "{what}: key {i}"
        );
        assert_eq!(
            other.get(key(i)).unwrap(),
            Some(value(i, 1)),
            "{what}: other's key {i}"
        );
    }
    db.put(b"after", b"ok").unwrap();
    db.flush().unwrap();
    assert_eq!(db.get(b"after").unwrap(), Some(b"ok".to_vec()));
}

/// Writes `from..to` into both keyspaces, synced.
fn write_both(db: &Db, from: u64, to: u64) {
    let other = db.keyspace("other").unwrap();
    for i in from..to {
        db.put(key(i), value(i, 0)).unwrap();
        other.put(key(i), value(i, 1)).unwrap();
    }
    db.write_opt(siftdb::WriteBatch::new(), &WriteOptions { sync: true })
        .unwrap();
}

/// Power fails at every file-system call of a flush whose edit rolls the manifest over (the
/// new manifest written and synced, `CURRENT.tmp` written, synced and renamed, the directory
/// synced, the edit appended, the old manifest deleted), then the machine restarts with its
/// unsynced pages torn or scrambled: every synced write of both keyspaces is there, and the
/// database works.
#[test]
fn power_loss_at_every_call_of_a_rollover() {
    let base = FaultFs::new();
    let dir = Path::new("/db");
    {
        let db = Db::open(dir, options(&base)).unwrap();
        db.create_keyspace("other", KeyspaceOptions::default())
            .unwrap();
        write_both(&db, 0, 200);
        db.flush().unwrap();
        db.keyspace("other").unwrap().flush().unwrap();
        write_both(&db, 200, 400);
        db.close().unwrap();
    }
    // How many calls opening and flushing make.
    let probe = base.deep_clone();
    let db = Db::open(dir, options(&probe)).unwrap();
    write_both(&db, 400, 410);
    let before = probe.calls();
    db.flush().unwrap();
    let flush_calls = probe.calls() - before;
    drop(db);
    let mut points = 0;
    for k in 0..flush_calls + 4 {
        let copy = base.deep_clone();
        let db = Db::open(dir, options(&copy)).unwrap();
        write_both(&db, 400, 410);
        copy.crash_call_in(k);
        let _ = db.flush();
        copy.crash();
        drop(db);
        if k % 2 == 1 {
            copy.restart_scrambled(k);
        } else {
            copy.restart((k % 5) as usize * 7);
        }
        check(&copy, dir, 410, &format!("crash at call {k} of the flush"));
        points += 1;
    }
    println!("power lost at {points} calls of a rollover flush ({flush_calls} calls each), lost synced writes: 0");
}

/// Temporary files are never deleted while the database runs: a manifest rollover writes
/// `CURRENT.tmp` (and `set_options` `OPTIONS.tmp`) before renaming it, at any time, and the
/// cleanup after a flush or compaction used to delete one mid-rollover (the rename then failed:
/// a `ManifestWrite` background error, seen once in the model test). A leftover of a crash goes
/// at the next open.
#[test]
fn the_cleanup_leaves_temporary_files_to_the_next_open() {
    let dir = siftdb_tests::temp_dir();
    let db = siftdb::Db::open(dir.path(), siftdb::Options::default()).unwrap();
    let tmp = dir.path().join("CURRENT.tmp");
    std::fs::write(&tmp, b"MANIFEST-000999\n").unwrap();
    for round in 0..3 {
        db.put(format!("k{round}"), b"v").unwrap();
        db.flush().unwrap();
    }
    db.compact_range(None, None).unwrap();
    assert!(tmp.exists(), "deleted while the database runs");
    drop(db);
    let db = siftdb::Db::open(dir.path(), siftdb::Options::default()).unwrap();
    assert!(!tmp.exists(), "a leftover temporary file survives the open");
    assert_eq!(db.get(b"k1").unwrap(), Some(b"v".to_vec()));
}
