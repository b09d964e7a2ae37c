//! `Db::set_options` / `Keyspace::set_options` on a live database: a smaller write buffer makes
//! flushes happen, a lower L0 trigger makes a compaction happen, disabled automatic compactions
//! keep L0 as it is until enabled again, more compaction threads start; refused changes (unknown,
//! fixed at open, unreadable, invalid, of the wrong scope) change nothing; changes are recorded in
//! `OPTIONS` and gone after a reopen. (More compaction threads: `set_options_threads.rs`.)

use std::time::{Duration, Instant};

use siftdb::{Db, Error, KeyspaceOptions, Options};

fn key(i: u32) -> Vec<u8> {
    siftdb_tests::scattered_key(i)
}

/// Waits (at most 20 s) until `done` holds.
fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn l0_tables(db: &Db) -> usize {
    db.level_info().first().map_or(0, |l| l.files)
}

fn options_file(dir: &std::path::Path) -> String {
    std::fs::read_to_string(dir.join("OPTIONS")).unwrap()
}

#[test]
fn a_smaller_write_buffer_makes_the_memtable_flush() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    for i in 0..2_000 {
        db.put(key(i), [b'v'; 100]).unwrap();
    }
    assert_eq!(db.stats().flushes, 0, "64 MiB of memtable holds 200 KiB");
    db.set_options(&[("write_buffer_size", "65536")]).unwrap();
    for i in 2_000..4_000 {
        db.put(key(i), [b'v'; 100]).unwrap();
    }
    eventually("flushes of 64 KiB memtables", || db.stats().flushes >= 2);
    for i in (0..4_000).step_by(37) {
        assert!(db.get(key(i)).unwrap().is_some());
    }
    assert!(options_file(dir.path()).contains("set_options.default.write_buffer_size=65536\n"));
}

/// Flushes `n` L0 tables of 200 keys each.
fn flush_tables(db: &Db, n: u32) {
    for t in 0..n {
        for i in t * 200..(t + 1) * 200 {
            db.put(key(i), [b'v'; 50]).unwrap();
        }
        db.flush().unwrap();
    }
}

#[test]
fn a_lower_l0_trigger_makes_a_compaction_happen() {
    let dir = siftdb_tests::temp_dir();
    let options = Options {
        level0_file_num_compaction_trigger: 100,
        level0_stop_writes_trigger: 200,
        ..Options::default()
    };
    let db = Db::open(dir.path(), options).unwrap();
    flush_tables(&db, 4);
    db.wait_for_compaction().unwrap();
    assert_eq!((l0_tables(&db), db.stats().compactions), (4, 0));
    db.set_options(&[("level0_file_num_compaction_trigger", "2")])
        .unwrap();
    db.wait_for_compaction().unwrap();
    assert_eq!(l0_tables(&db), 0, "{:?}", db.level_info());
    assert!(db.stats().compactions >= 1);
    for i in (0..800).step_by(7) {
        assert!(db.get(key(i)).unwrap().is_some());
    }
}

#[test]
fn disabled_automatic_compactions_wait_until_enabled_again() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let other = db
        .create_keyspace("other", KeyspaceOptions::default())
        .unwrap();
    db.set_options(&[
        ("disable_auto_compactions", "true"),
        ("level0_file_num_compaction_trigger", "2"),
    ])
    .unwrap();
    flush_tables(&db, 5);
    db.wait_for_compaction().unwrap(); // settled: nothing may run
    assert_eq!((l0_tables(&db), db.stats().compactions), (5, 0));
    // Another keyspace's compactions still run.
    other
        .set_options(&[("level0_file_num_compaction_trigger", "2")])
        .unwrap();
    for t in 0..3 {
        other.put(key(t), b"x").unwrap();
        other.flush().unwrap();
    }
    db.wait_for_compaction().unwrap();
    assert!(other.level_info()[0].files < 3 && db.stats().compactions >= 1);
    assert_eq!(l0_tables(&db), 5);
    // By hand it still compacts; enabled again, the background does.
    db.set_options(&[("disable_auto_compactions", "false")])
        .unwrap();
    db.wait_for_compaction().unwrap();
    assert_eq!(l0_tables(&db), 0);
}

#[test]
fn refused_changes_change_nothing() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let other = db
        .create_keyspace("other", KeyspaceOptions::default())
        .unwrap();
    let refused = |r: siftdb::Result<()>, says: &str| match r {
        Err(Error::InvalidArgument(msg)) => assert!(msg.contains(says), "{msg}"),
        other => panic!("expected InvalidArgument saying {says:?}, got {other:?}"),
    };
    refused(db.set_options(&[("no_such_option", "1")]), "no such option");
    refused(db.set_options(&[("block_size", "8192")]), "cannot change");
    refused(
        db.set_options(&[("prefix_extractor", "fixed:4")]),
        "cannot change",
    );
    refused(
        db.set_options(&[("block_cache_capacity", "1")]),
        "cannot change",
    );
    refused(
        db.set_options(&[("write_buffer_size", "big")]),
        "cannot read",
    );
    refused(db.set_options(&[("compression", "brotli")]), "cannot read");
    refused(
        db.set_options(&[("write_buffer_size", "0")]),
        "write_buffer_size",
    );
    refused(
        db.set_options(&[("max_background_jobs", "0")]),
        "thread count",
    );
    refused(
        other.set_options(&[("max_background_jobs", "4")]),
        "Db::set_options",
    );
    // A good change beside a bad one is not applied either.
    refused(
        db.set_options(&[("write_buffer_size", "65536"), ("block_size", "1")]),
        "block_size",
    );
    assert!(!options_file(dir.path()).contains("set_options."));
    for i in 0..2_000 {
        db.put(key(i), [b'v'; 100]).unwrap();
    }
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(db.stats().flushes, 0, "the write buffer kept its size");
    drop((db, other));
    let ro = Db::open_read_only(dir.path(), Options::default()).unwrap();
    assert!(ro.set_options(&[("write_buffer_size", "65536")]).is_err());
}

#[test]
fn changes_are_recorded_in_options_until_a_reopen() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let other = db
        .create_keyspace("a=b%c", KeyspaceOptions::default())
        .unwrap();
    db.set_options(&[("max_background_jobs", "3"), ("filter_bits_per_key", "12")])
        .unwrap();
    other
        .set_options(&[("compression_per_level", "none,lz4,zstd")])
        .unwrap();
    let text = options_file(dir.path());
    for line in [
        "set_options.*.max_background_jobs=3",
        "set_options.default.filter_bits_per_key=12",
        "set_options.a%3Db%25c.compression_per_level=none,lz4,zstd",
        "format_version=",
    ] {
        assert!(text.contains(line), "{line:?} not in\n{text}");
    }
    other.put(b"k", b"v").unwrap();
    drop((db, other));
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert!(!options_file(dir.path()).contains("set_options."));
    assert_eq!(
        db.keyspace("a=b%c").unwrap().get(b"k").unwrap().as_deref(),
        Some(&b"v"[..])
    );
}

#[test]
fn changes_while_flushes_and_compactions_clean_up_files() {
    // The cleanup of obsolete files deletes temporary files: it once deleted `OPTIONS.tmp`
    // between its creation and its rename (found by the model test).
    // `OPTIONS.tmp` lingers a moment after its creation: a cleanup finds it then.
    let fs: std::sync::Arc<dyn siftdb::fs::FileSystem> =
        std::sync::Arc::new(siftdb_tests::CreateHookFs(|path: &std::path::Path| {
            let file = siftdb::fs::FileSystem::create(&siftdb::fs::RealFs, path);
            if path.ends_with("OPTIONS.tmp") {
                std::thread::sleep(Duration::from_millis(5));
            }
            file
        }));
    let dir = siftdb_tests::temp_dir();
    let options = Options {
        fs,
        ..siftdb_tests::small_tree()
    };
    let db = Db::open(dir.path(), options).unwrap();
    std::thread::scope(|s| {
        s.spawn(|| {
            for i in 0..20_000 {
                db.put(key(i), [b'v'; 64]).unwrap();
            }
        });
        for round in 0..300 {
            let bits = if round % 2 == 0 { "8" } else { "10" };
            db.set_options(&[("filter_bits_per_key", bits)]).unwrap();
        }
    });
    db.wait_for_compaction().unwrap();
    assert!(db.stats().compactions > 0);
    assert!(options_file(dir.path()).contains("set_options.default.filter_bits_per_key=10\n"));
    for i in (0..20_000).step_by(101) {
        assert!(db.get(key(i)).unwrap().is_some());
    }
}
