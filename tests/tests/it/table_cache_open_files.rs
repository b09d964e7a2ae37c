//! The table cache (`Options::max_open_files`): a database of several hundred tables stays
//! within its bound of open files, answers every get and a full scan, and reopens — under
//! `ulimit -n 96` in a child process, where keeping every table open (`-1`) cannot even open;
//! tables evicted and opened again read right in both read modes while compactions replace
//! them; a table an old iterator still reads is not deleted under it, and goes once the
//! iterator does.

use std::process::Command;

use siftdb::{Compression, Db, Options, ReadMode};

const CHILD_ENV: &str = "SIFTDB_OPEN_FILES_CHILD_DIR";

/// Small tables: several hundred of them from a few MiB.
fn options(max_open_files: i32, read_mode: ReadMode) -> Options {
    Options {
        write_buffer_size: 16 << 10,
        target_file_size_base: 8 << 10,
        max_bytes_for_level_base: 64 << 10,
        max_bytes_for_level_multiplier: 4.0,
        level0_file_num_compaction_trigger: 2,
        block_cache_capacity: 256 << 10,
        max_open_files,
        read_mode,
        compression: Compression::None,
        compression_per_level: vec![Compression::None],
        ..Options::default()
    }
}

fn key(i: u64) -> Vec<u8> {
    format!("key{:08}", i.wrapping_mul(0x9E37_79B9) % 1_000_000_007).into_bytes()
}

fn value(i: u64, round: u64) -> Vec<u8> {
    let mut v = format!("value-{i}-{round}-").into_bytes();
    v.resize(100, b'x');
    v
}

fn fill(db: &Db, keys: u64, round: u64) {
    for i in 0..keys {
        db.put(key(i), value(i, round)).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compaction().unwrap();
}

fn table_count(db: &Db) -> u64 {
    (0..7)
        .map(|l| {
            db.property(&format!("siftdb.num-files-at-level{l}"))
                .and_then(|s| s.parse::<u64>().ok())
                .unwrap_or(0)
        })
        .sum()
}

/// Every key reads `round`'s value, by get and by one full scan in key order.
fn check_all(db: &Db, keys: u64, round: u64) {
    for i in 0..keys {
        assert_eq!(db.get(key(i)).unwrap(), Some(value(i, round)), "key {i}");
    }
    let mut want: Vec<(Vec<u8>, Vec<u8>)> = (0..keys).map(|i| (key(i), value(i, round))).collect();
    want.sort();
    let got: Vec<(Vec<u8>, Vec<u8>)> = db.iter().map(|r| r.unwrap()).collect();
    assert_eq!(got.len(), want.len());
    assert!(got == want, "the scan differs from what was written");
}

/// Descriptors this process holds.
fn open_descriptors() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

/// The child: under `ulimit -n 96`, several hundred tables with `max_open_files = 32`.
#[test]
fn open_files_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let keys = 30_000;
    {
        let db = Db::open(&dir, options(32, ReadMode::Pread)).expect("child open");
        fill(&db, keys, 0);
        let tables = table_count(&db);
        assert!(tables >= 300, "only {tables} tables");
        check_all(&db, keys, 0);
        let stats = db.stats();
        assert!(
            stats.open_table_files <= 32,
            "{} open",
            stats.open_table_files
        );
        assert!(stats.table_cache_evictions > 0 && stats.table_cache_misses > 0);
        assert!(
            open_descriptors() <= 32 + 24,
            "{} descriptors",
            open_descriptors()
        );
        println!(
            "child: {tables} tables, {} open, {} descriptors in the process, {} reopens",
            stats.open_table_files,
            open_descriptors(),
            stats.table_cache_misses
        );
        db.close().unwrap();
    }
    let db = Db::open(&dir, options(32, ReadMode::Mmap)).expect("child reopen");
    check_all(&db, keys, 0);
    drop(db);
    // The control: every table open does not fit under this limit.
    match Db::open(&dir, options(-1, ReadMode::Pread)) {
        Err(e) => assert!(e.to_string().contains("Too many open files"), "{e}"),
        Ok(_) => panic!("opened {keys} keys' tables with every table open under ulimit -n 96"),
    }
    println!("child done");
}

#[test]
fn several_hundred_tables_answer_under_ulimit_96() {
    let dir = siftdb_tests::temp_dir();
    let exe = std::env::current_exe().unwrap();
    let out = Command::new("sh")
        .arg("-c")
        .arg(r#"ulimit -n 96 && exec "$0" --exact table_cache_open_files::open_files_child --nocapture --test-threads=1"#)
        .arg(&exe)
        .env(CHILD_ENV, dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    if let Some((_, line)) = stdout.lines().find_map(|l| l.split_once("child: ")) {
        println!("under ulimit -n 96 with max_open_files = 32: {line}");
    }
    assert!(
        out.status.success() && stdout.contains("child done"),
        "child failed: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Readers on four threads while compactions replace tables, with room for only four open
/// files: every read right, in both read modes.
#[test]
fn evicted_tables_read_right_while_compactions_replace_them() {
    for mode in [ReadMode::Pread, ReadMode::Mmap] {
        let dir = siftdb_tests::temp_dir();
        let db = Db::open(dir.path(), options(4, mode)).unwrap();
        let keys = 6_000;
        fill(&db, keys, 0);
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let db = &db;
                s.spawn(move || {
                    for n in 0..3_000u64 {
                        let i = (n * 7 + t * 1_001) % keys;
                        let got = db.get(key(i)).unwrap().expect("present");
                        assert!(got == value(i, 0) || got == value(i, 1), "key {i}");
                    }
                });
            }
            // Overwrite everything meanwhile: flushes and compactions replace every table.
            for i in 0..keys {
                db.put(key(i), value(i, 1)).unwrap();
            }
        });
        db.flush().unwrap();
        db.wait_for_compaction().unwrap();
        check_all(&db, keys, 1);
        let stats = db.stats();
        assert!(
            stats.open_table_files <= 4,
            "{mode:?}: {} open",
            stats.open_table_files
        );
        assert!(stats.table_cache_misses > 0, "{mode:?}: nothing reopened");
        assert!(stats.table_cache_opens >= stats.table_cache_misses);
    }
}

fn table_files_on_disk(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".sst"))
        })
        .count()
}

/// An iterator made before a compaction keeps its tables (closed by the cache, opened again by
/// name); once it is dropped, they are deleted (by the deleter thread).
#[test]
fn a_table_an_old_iterator_reads_is_kept_until_it_goes() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), options(2, ReadMode::Pread)).unwrap();
    let keys = 3_000;
    fill(&db, keys, 0);
    let mut old = db.iter();
    let first = old.next().unwrap().unwrap();
    // Rewrite every table, several times over.
    for round in 1..=3 {
        fill(&db, keys, round);
    }
    db.compact_range(None, None).unwrap();
    let live = table_count(&db) as usize;
    assert!(
        table_files_on_disk(dir.path()) > live,
        "the old iterator's tables were deleted"
    );
    // The old iterator reads its whole view, round 0, through files it must open again.
    let mut rest: Vec<(Vec<u8>, Vec<u8>)> = vec![first];
    rest.extend(old.by_ref().map(|r| r.unwrap()));
    assert_eq!(rest.len() as u64, keys);
    let index: std::collections::HashMap<Vec<u8>, u64> = (0..keys).map(|i| (key(i), i)).collect();
    for (k, v) in &rest {
        assert_eq!(v, &value(index[k], 0));
    }
    drop(old);
    // The last reader hands its tables to the deleter thread; waiting for compaction waits for
    // it too.
    db.wait_for_compaction().unwrap();
    assert_eq!(
        table_files_on_disk(dir.path()),
        live,
        "the old tables outlived their last reader"
    );
    check_all(&db, keys, 3);
}

/// The same for L0 tables under a raw iterator, which reads each through a cursor of its own:
/// one made while the tree is three L0 tables keeps them after a compaction replaced them and the cache
/// closed their files (a cursor once held only the table, not its file's registration, and the
/// file was deleted under it: "table file ... is gone").
#[test]
fn an_old_iterator_keeps_the_l0_tables_it_reads() {
    let dir = siftdb_tests::temp_dir();
    let options = Options {
        level0_file_num_compaction_trigger: 8,
        level0_stop_writes_trigger: 16,
        // A tiny block cache: the old cursors read from the files again.
        block_cache_capacity: 4 << 10,
        ..options(1, ReadMode::Pread)
    };
    let db = Db::open_stepped(dir.path(), options).unwrap();
    let keys = 600;
    for round in 0..3 {
        for i in 0..keys {
            db.put(key(i), value(i, round)).unwrap();
        }
        db.flush().unwrap();
    }
    assert!(
        db.level_info()[0].files >= 3,
        "{}",
        db.property("siftdb.levels").unwrap()
    );
    let mut old = db.raw_iter();
    old.seek_to_first();
    let mut rest = vec![(old.key().to_vec(), old.value().to_vec())];
    db.compact_range(None, None).unwrap();
    db.step_obsolete_files().unwrap();
    assert_eq!(db.level_info()[0].files, 0);
    // Reads of the new tables push the old ones out of the one-file table cache.
    check_all(&db, keys, 2);
    old.next();
    while old.valid() {
        rest.push((old.key().to_vec(), old.value().to_vec()));
        old.next();
    }
    old.status().unwrap();
    assert_eq!(rest.len() as u64, keys);
    let index: std::collections::HashMap<Vec<u8>, u64> = (0..keys).map(|i| (key(i), i)).collect();
    for (k, v) in &rest {
        assert_eq!(v, &value(index[k], 2));
    }
    drop(old);
    db.step_obsolete_files().unwrap();
    assert_eq!(table_files_on_disk(dir.path()), table_count(&db) as usize);
}

/// `max_open_files` set above what the process may open: when opening a table fails with
/// "too many open files" (`EMFILE`, from `FaultFs::set_descriptor_limit`), the cache closes
/// half its files and opens it again; every read still answers, and the files open stay within
/// what the process allows.
#[test]
fn a_bound_above_the_descriptor_limit_closes_files_and_goes_on() {
    let fs = siftdb_tests::FaultFs::new();
    fs.set_descriptor_limit(Some(6));
    let bounded = Options {
        fs: std::sync::Arc::new(fs.clone()),
        ..options(64, ReadMode::Pread)
    };
    let db = Db::open("/db", bounded).unwrap();
    let keys = 6_000;
    fill(&db, keys, 0);
    assert!(table_count(&db) > 12, "{} tables", table_count(&db));
    check_all(&db, keys, 0);
    let stats = db.stats();
    assert!(stats.table_cache_evictions > 0, "the cache never made room");
    assert!(fs.open_readers() <= 6, "{} open", fs.open_readers());
    // Keeping every table open cannot work here: the limit is an error, not a wrong answer.
    drop(db);
    let every = Options {
        fs: std::sync::Arc::new(fs.clone()),
        ..options(-1, ReadMode::Pread)
    };
    match Db::open("/db", every) {
        Err(err) => assert!(err.to_string().contains("Too many open files"), "{err}"),
        Ok(_) => panic!("opened more tables than files allowed"),
    }
}
