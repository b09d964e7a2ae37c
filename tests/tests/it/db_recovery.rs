//! Recovery: unflushed writes survive through the WAL, a torn WAL tail recovers to a prefix,
//! damaged metadata is an error (never an empty database), and bad directories are refused.

use std::fs::OpenOptions;
use std::io::Write;

use siftdb::{Db, Error, Options, WriteBatch, WriteOptions};

fn small() -> Options {
    Options {
        write_buffer_size: 4096,
        ..Options::default()
    }
}

fn wal_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    v.sort();
    v
}

#[test]
fn unflushed_writes_survive_reopen() {
    let dir = siftdb_tests::temp_dir();
    {
        let db = Db::open(dir.path(), Options::default()).unwrap();
        for i in 0..1000u32 {
            db.put(format!("k{i:05}").as_bytes(), i.to_le_bytes())
                .unwrap();
        }
        db.delete(b"k00007").unwrap();
        let mut b = WriteBatch::new();
        b.put(b"batch-a", b"1").put(b"batch-b", b"2");
        db.write_opt(b, &WriteOptions { sync: true }).unwrap();
        assert_eq!(
            db.stats().flushes,
            0,
            "nothing may be flushed for this test"
        );
    }
    let db = Db::open(dir.path(), Options::default()).unwrap();
    for i in 0..1000u32 {
        let want = (i != 7).then(|| i.to_le_bytes().to_vec());
        assert_eq!(db.get(format!("k{i:05}").as_bytes()).unwrap(), want);
    }
    assert_eq!(db.get(b"batch-b").unwrap(), Some(b"2".to_vec()));
    // New writes work and win over recovered ones.
    db.put(b"k00001", b"new").unwrap();
    drop(db);
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(db.get(b"k00001").unwrap(), Some(b"new".to_vec()));
}

#[test]
fn truncated_wal_tail_recovers_a_prefix() {
    let dir = siftdb_tests::temp_dir();
    {
        let db = Db::open(dir.path(), Options::default()).unwrap();
        for i in 0..100u32 {
            db.put(format!("k{i:03}").as_bytes(), [b'v'; 100]).unwrap();
        }
    }
    let wal = wal_files(dir.path()).pop().unwrap();
    let len = std::fs::metadata(&wal).unwrap().len();
    // The log ends with the sync mark of the close's sync (15 bytes), after the last record.
    for cut in [len - 1, len - 16, len - 50, len / 2, 3] {
        let copy = siftdb_tests::temp_dir();
        for entry in std::fs::read_dir(dir.path()).unwrap() {
            let p = entry.unwrap().path();
            std::fs::copy(&p, copy.path().join(p.file_name().unwrap())).unwrap();
        }
        let cwal = copy.path().join(wal.file_name().unwrap());
        OpenOptions::new()
            .write(true)
            .open(&cwal)
            .unwrap()
            .set_len(cut)
            .unwrap();
        let db = Db::open(copy.path(), Options::default()).unwrap();
        // A prefix: every key up to some point, none after.
        let present: Vec<bool> = (0..100u32)
            .map(|i| db.get(format!("k{i:03}").as_bytes()).unwrap().is_some())
            .collect();
        let n = present.iter().take_while(|p| **p).count();
        assert!(
            present[n..].iter().all(|p| !p),
            "cut {cut}: not a prefix: {present:?}"
        );
        if cut == len - 1 {
            assert_eq!(n, 100, "only the mark is cut");
        }
        if cut == len - 16 {
            assert_eq!(n, 99, "the last record is cut");
        }
    }
}

#[test]
fn damage_before_wal_tail_is_corruption() {
    let dir = siftdb_tests::temp_dir();
    {
        let db = Db::open(dir.path(), Options::default()).unwrap();
        for i in 0..2000u32 {
            db.put(format!("k{i:05}").as_bytes(), [b'v'; 100]).unwrap();
        }
    }
    let wal = wal_files(dir.path()).pop().unwrap();
    let mut bytes = std::fs::read(&wal).unwrap();
    bytes[100] ^= 0x40; // first block; valid records follow
    std::fs::write(&wal, &bytes).unwrap();
    match Db::open(dir.path(), Options::default()) {
        Err(Error::Corruption(c)) => {
            // The error names the log and where in it the damage is.
            let name = wal.file_name().unwrap().to_str().unwrap();
            assert_eq!(c.file(), Some(name), "{c}");
            assert!(c.offset().is_some_and(|o| o <= 100), "{c}");
            assert!(c.reason().contains("WAL"), "{c}");
        }
        other => panic!("expected corruption, got {other:?}"),
    }
    // With paranoid checks off, recovery stops at the damage instead.
    let lenient = Options {
        paranoid_checks: false,
        ..Options::default()
    };
    let db = Db::open(dir.path(), lenient).unwrap();
    assert_eq!(db.get(b"k01999").unwrap(), None);
}

#[test]
fn corrupted_manifest_is_an_error_not_an_empty_database() {
    let dir = siftdb_tests::temp_dir();
    {
        let db = Db::open(dir.path(), small()).unwrap();
        for i in 0..500u32 {
            db.put(format!("k{i:05}").as_bytes(), [b'v'; 50]).unwrap();
        }
        db.flush().unwrap();
    }
    let manifest = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("MANIFEST-")
        })
        .unwrap();
    let mut bytes = std::fs::read(&manifest).unwrap();
    bytes[10] ^= 0xff;
    std::fs::write(&manifest, &bytes).unwrap();
    let err = Db::open(dir.path(), small()).unwrap_err();
    assert!(err.is_corruption(), "{err}");
    // And a missing CURRENT with siftdb files around is corruption too, not a fresh database.
    std::fs::remove_file(dir.path().join("CURRENT")).unwrap();
    assert!(Db::open(dir.path(), small()).unwrap_err().is_corruption());
}

#[test]
fn second_open_is_locked() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert!(matches!(
        Db::open(dir.path(), Options::default()),
        Err(Error::Locked(_))
    ));
    db.put(b"k", b"v").unwrap();
    drop(db);
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(db.get(b"k").unwrap(), Some(b"v".to_vec()));
}

#[test]
fn foreign_directory_is_refused_untouched() {
    let dir = siftdb_tests::temp_dir();
    std::fs::write(dir.path().join("notes.txt"), b"mine").unwrap();
    assert!(matches!(
        Db::open(dir.path(), Options::default()),
        Err(Error::NotADatabase { .. })
    ));
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("notes.txt")]);
}

#[test]
fn future_format_version_is_refused() {
    let dir = siftdb_tests::temp_dir();
    {
        let db = Db::open(dir.path(), Options::default()).unwrap();
        db.put(b"k", b"v").unwrap();
    }
    let path = dir.path().join("OPTIONS");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        text.replace(
            &format!("format_version={}", siftdb::FORMAT_VERSION),
            "format_version=99",
        ),
    )
    .unwrap();
    assert!(matches!(
        Db::open(dir.path(), Options::default()),
        Err(Error::UnsupportedVersion { found: 99, .. })
    ));
    // Nothing was lost: restore the version and the data is there.
    std::fs::write(&path, text).unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(db.get(b"k").unwrap(), Some(b"v".to_vec()));
}

#[test]
fn oversized_keys_and_values_are_refused_and_nothing_is_lost() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.put(b"keep", b"me").unwrap();
    let big_key = vec![0u8; siftdb::MAX_KEY_SIZE + 1];
    assert!(matches!(
        db.put(&big_key, b"v"),
        Err(Error::InvalidArgument(_))
    ));
    let mut b = WriteBatch::new();
    b.put(b"a", b"1").put(&big_key, b"2");
    assert!(matches!(db.write(b), Err(Error::InvalidArgument(_))));
    assert_eq!(
        db.get(b"a").unwrap(),
        None,
        "a rejected batch must not be partly applied"
    );
    // Empty keys are keys.
    db.put(b"", b"empty").unwrap();
    assert_eq!(db.get(b"").unwrap(), Some(b"empty".to_vec()));
    drop(db);
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(db.get(b"keep").unwrap(), Some(b"me".to_vec()));
    assert_eq!(db.get(b"").unwrap(), Some(b"empty".to_vec()));
}

#[test]
fn changed_prefix_extractor_is_safe() {
    let dir = siftdb_tests::temp_dir();
    {
        let db = Db::open(dir.path(), Options::default().with_fixed_prefix(3)).unwrap();
        for i in 0..300u32 {
            db.put(format!("p{:02}-{i:04}", i % 30).as_bytes(), b"v")
                .unwrap();
        }
        db.flush().unwrap();
    }
    // Reopen with another extractor: the old tables' prefix filters must be ignored.
    let db = Db::open(dir.path(), Options::default().with_fixed_prefix(5)).unwrap();
    for p in 0..30u32 {
        let prefix = format!("p{p:02}-");
        assert_eq!(db.prefix_iter(prefix.as_bytes()).count(), 10, "{prefix}");
    }
    assert_eq!(db.stats().prefix_checked, 0);
    let text = std::fs::read_to_string(dir.path().join("OPTIONS")).unwrap();
    assert!(text.contains("prefix_extractor=fixed:5"), "{text}");
}

#[test]
fn writes_after_close_fail_cleanly() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.put(b"k", b"v").unwrap();
    db.close().unwrap();
    assert!(matches!(db.put(b"k2", b"v"), Err(Error::Closed)));
    assert!(matches!(db.get(b"k"), Err(Error::Closed)));
    drop(db);
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(db.get(b"k").unwrap(), Some(b"v".to_vec()));
    let _ = std::io::stdout().flush();
}

/// Two keyspaces whose WALs differ: "second" still needs the oldest log while "default" has
/// flushed past it. Emptying or removing that oldest log loses "second"'s write: recovery must
/// say so, not open without it (the manifest's last sequence, which the flush of "default"
/// advanced, cannot show the gap).
#[test]
fn lost_oldest_wal_of_a_lagging_keyspace_is_corruption() {
    for removed in [false, true] {
        let dir = siftdb_tests::temp_dir();
        {
            let db = Db::open(dir.path(), Options::default()).unwrap();
            let second = db
                .create_keyspace("second", siftdb::KeyspaceOptions::default())
                .unwrap();
            second.put(b"lagging", b"1").unwrap();
            db.put(b"a", b"1").unwrap();
            db.flush().unwrap(); // a new WAL; "second" still needs the old one
            db.put(b"b", b"2").unwrap();
            second.put(b"later", b"2").unwrap();
        }
        let wals = wal_files(dir.path());
        assert_eq!(wals.len(), 2, "{wals:?}");
        if removed {
            std::fs::remove_file(&wals[0]).unwrap();
        } else {
            std::fs::write(&wals[0], b"").unwrap();
        }
        match Db::open(dir.path(), Options::default()) {
            Err(Error::Corruption(c)) => assert!(c.reason().contains("WAL"), "{c}"),
            Ok(db) => {
                let second = db.keyspace("second").unwrap();
                panic!(
                    "opened with lagging = {:?}, later = {:?}",
                    second.get(b"lagging").unwrap(),
                    second.get(b"later").unwrap()
                );
            }
            Err(e) => panic!("expected corruption, got {e}"),
        }
    }
}

/// What a power loss with unordered writeback leaves of the newest WAL: a database that wrote
/// `synced` keys with a synced write each, then `unsynced` keys without, then (if `last`) one
/// more synced write, and whose process then died (no close, no sync at close). Returns the
/// directory, its newest WAL and the WAL's length right after the first synced writes.
fn crashed_writer(
    synced: u32,
    unsynced: u32,
    last: bool,
) -> (tempfile::TempDir, std::path::PathBuf, u64) {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let put_synced = |key: String| {
        let mut b = WriteBatch::new();
        b.put(key.as_bytes(), [b's'; 100]);
        db.write_opt(b, &WriteOptions { sync: true }).unwrap();
    };
    for i in 0..synced {
        put_synced(format!("s{i:05}"));
    }
    let wal = wal_files(dir.path()).pop().unwrap();
    let synced_len = std::fs::metadata(&wal).unwrap().len();
    for i in 0..unsynced {
        db.put(format!("u{i:05}").as_bytes(), [b'u'; 100]).unwrap();
    }
    if last {
        put_synced("z-last".to_string());
    }
    // The process dies: nothing more reaches the files (no close, so no sync at close).
    std::mem::forget(db);
    let copy = siftdb_tests::temp_dir();
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let p = entry.unwrap().path();
        if p.file_name().is_some_and(|n| n != "LOCK") {
            std::fs::copy(&p, copy.path().join(p.file_name().unwrap())).unwrap();
        }
    }
    let wal = copy.path().join(wal.file_name().unwrap());
    (copy, wal, synced_len)
}

/// Zeroes the 4 KiB page of `wal` that starts at `page` (a page never written back).
fn lose_page(wal: &std::path::Path, page: u64) {
    let mut bytes = std::fs::read(wal).unwrap();
    let at = page as usize;
    assert!(
        at + 4096 < bytes.len(),
        "the log holds pages after the lost one"
    );
    bytes[at..at + 4096].fill(0);
    std::fs::write(wal, &bytes).unwrap();
}

#[test]
fn lost_unsynced_page_before_surviving_later_pages_opens_with_a_prefix() {
    let (dir, wal, synced_len) = crashed_writer(50, 600, false);
    // The first page wholly past the synced bytes (and past the sync mark after them).
    let page = (synced_len + 15).div_ceil(4096) * 4096 + 4096;
    lose_page(&wal, page);
    let db = Db::open(dir.path(), Options::default()).unwrap();
    for i in 0..50u32 {
        assert!(
            db.get(format!("s{i:05}")).unwrap().is_some(),
            "synced s{i:05}"
        );
    }
    let present: Vec<bool> = (0..600u32)
        .map(|i| db.get(format!("u{i:05}")).unwrap().is_some())
        .collect();
    let n = present.iter().take_while(|p| **p).count();
    assert!(present[n..].iter().all(|p| !p), "not a prefix: {present:?}");
    assert!(n > 0 && n < 600, "{n} unsynced writes kept");
    // Not silently: the dropped fragments and bytes are counted (and logged).
    let stats = db.stats();
    assert!(stats.recovery_dropped_wal_fragments > 0, "{stats:?}");
    assert!(stats.recovery_dropped_wal_bytes > 4096, "{stats:?}");
    // The next open starts clean.
    drop(db);
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(db.stats().recovery_dropped_wal_bytes, 0);
    assert_eq!(
        db.get(format!("u{:05}", n - 1)).unwrap(),
        Some(vec![b'u'; 100])
    );
}

#[test]
fn damage_before_a_later_synced_write_is_corruption() {
    let (dir, wal, synced_len) = crashed_writer(50, 600, true);
    let page = (synced_len + 15).div_ceil(4096) * 4096 + 4096;
    lose_page(&wal, page);
    match Db::open(dir.path(), Options::default()) {
        Err(Error::Corruption(c)) => assert!(c.reason().contains("sync mark"), "{c}"),
        other => panic!("a synced write after the damage was lost silently: {other:?}"),
    }
    // With paranoid checks off, recovery stops at the damage and says so.
    let lenient = Options {
        paranoid_checks: false,
        ..Options::default()
    };
    let db = Db::open(dir.path(), lenient).unwrap();
    assert_eq!(db.get(b"z-last").unwrap(), None);
    assert!(db.get(b"s00049").unwrap().is_some());
    assert!(db.stats().recovery_dropped_wal_bytes > 4096);
}
