//! Databases written by older builds keep opening (redb-style backward-compatibility tests).
//!
//! Each fixture under `tests/fixtures/` was written by an older build (its README says which and
//! what it holds) and is never rewritten. The test opens a copy, reads every key back —
//! from tables and from the WAL — then writes, compacts and reopens it with this build.

use std::path::Path;

use siftdb::{Db, Options};

fn copy_fixture(name: &str, to: &Path) {
    let from = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name);
    for entry in std::fs::read_dir(&from).unwrap() {
        let entry = entry.unwrap();
        let file = entry.file_name();
        if file != "README.md" {
            std::fs::copy(entry.path(), to.join(&file)).unwrap();
        }
    }
}

/// The table format versions (from the footers) of the tables in `dir`.
fn table_versions(dir: &Path) -> Vec<u32> {
    let mut versions: Vec<u32> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sst"))
        .map(|p| {
            let bytes = std::fs::read(p).unwrap();
            let footer = bytes.len() - siftdb_sstable::format::FOOTER_LEN;
            u32::from_le_bytes(bytes[footer + 64..footer + 68].try_into().unwrap())
        })
        .collect();
    versions.sort_unstable();
    versions.dedup();
    versions
}

/// What `format-v1` holds (see its README).
fn v1_expected(i: u32) -> Option<Vec<u8>> {
    if i.is_multiple_of(5) {
        None
    } else if i.is_multiple_of(3) {
        Some(format!("v2-{i}").into_bytes())
    } else {
        Some(format!("v1-{i}").into_bytes())
    }
}

fn check_v1_contents(db: &Db) {
    for i in 0..2000u32 {
        let got = db.get(format!("fixture:{i:05}")).unwrap();
        assert_eq!(got, v1_expected(i), "fixture:{i:05}");
    }
    for i in 0..50u32 {
        let got = db.get(format!("wal-only:{i:03}")).unwrap();
        assert_eq!(got, Some(format!("w-{i}").into_bytes()), "wal-only:{i:03}");
    }
    let live = (0..2000u32).filter(|&i| v1_expected(i).is_some()).count();
    assert_eq!(db.prefix_iter("fixture:").count(), live);
    assert_eq!(db.prefix_iter("wal-only:").count(), 50);
}

#[test]
fn a_format_1_database_opens_reads_and_upgrades() {
    let dir = siftdb_tests::temp_dir();
    copy_fixture("format-v1", dir.path());
    assert_eq!(table_versions(dir.path()), vec![1]);
    let db = Db::open(dir.path(), Options::default()).unwrap();
    check_v1_contents(&db);
    // Opening upgrades OPTIONS to this build's format.
    let options = std::fs::read_to_string(dir.path().join("OPTIONS")).unwrap();
    assert!(
        options.contains(&format!("format_version={}", siftdb::FORMAT_VERSION)),
        "{options}"
    );
    // New writes, a full compaction and reopening all work on the old files.
    for i in 0..500u32 {
        db.put(format!("new:{i:04}"), "n").unwrap();
    }
    db.compact_range(None, None).unwrap();
    // The compaction rewrote every table in this build's table format.
    assert_eq!(
        table_versions(dir.path()),
        vec![siftdb_sstable::format::TABLE_FORMAT_VERSION]
    );
    drop(db);
    let db = Db::open(dir.path(), Options::default()).unwrap();
    check_v1_contents(&db);
    assert_eq!(db.prefix_iter("new:").count(), 500);
}

/// What `format-v2` holds (see its README).
fn v2_expected(k: u32) -> Option<Vec<u8>> {
    if k.is_multiple_of(5) {
        None
    } else if k.is_multiple_of(3) {
        Some(format!("s2-{k}").into_bytes())
    } else {
        Some(format!("s1-{k:020}").into_bytes())
    }
}

fn check_v2_contents(db: &Db) {
    for k in 0..2000u32 {
        assert_eq!(
            db.get(format!("seq:{k:05}")).unwrap(),
            v2_expected(k),
            "seq:{k:05}"
        );
    }
    for i in 0..50u32 {
        let got = db.get(format!("wal-only:{i:03}")).unwrap();
        assert_eq!(got, Some(format!("w-{i}").into_bytes()), "wal-only:{i:03}");
    }
    // Both directions see the same live keys.
    let live: Vec<Vec<u8>> = (0..2000u32)
        .filter(|&k| v2_expected(k).is_some())
        .map(|k| format!("seq:{k:05}").into_bytes())
        .collect();
    let forward: Vec<Vec<u8>> = db.prefix_iter("seq:").map(|kv| kv.unwrap().0).collect();
    assert_eq!(forward, live);
    let mut backward: Vec<Vec<u8>> = db
        .prefix_iter("seq:")
        .rev()
        .map(|kv| kv.unwrap().0)
        .collect();
    backward.reverse();
    assert_eq!(backward, live);
}

#[test]
fn a_format_2_database_opens_reads_and_upgrades() {
    let dir = siftdb_tests::temp_dir();
    copy_fixture("format-v2", dir.path());
    assert_eq!(table_versions(dir.path()), vec![1]);
    let recorded = std::fs::read_to_string(dir.path().join("OPTIONS")).unwrap();
    assert!(recorded.contains("format_version=2"), "{recorded}");
    let db = Db::open(dir.path(), Options::default()).unwrap();
    check_v2_contents(&db);
    // The tree of the old build is read as it was: L0, L1 and L2 hold tables.
    let levels = db.level_info();
    assert!(levels.len() >= 3 && levels[..3].iter().all(|l| l.files > 0));
    for i in 0..300u32 {
        db.put(format!("new:{i:04}"), "n").unwrap();
    }
    db.compact_range(None, None).unwrap();
    assert_eq!(
        table_versions(dir.path()),
        vec![siftdb_sstable::format::TABLE_FORMAT_VERSION]
    );
    drop(db);
    let db = Db::open(dir.path(), Options::default()).unwrap();
    check_v2_contents(&db);
    assert_eq!(db.prefix_iter("new:").count(), 300);
}

/// What `format-v3` holds (see its README).
fn v3_expected(k: u32) -> Option<Vec<u8>> {
    if k.is_multiple_of(7) {
        None
    } else if k.is_multiple_of(4) {
        Some(format!("t2-{k}").into_bytes())
    } else {
        Some(format!("t1-{k:020}").into_bytes())
    }
}

fn check_v3_contents(db: &Db) {
    for k in 0..3000u32 {
        assert_eq!(
            db.get(format!("v3:{k:05}")).unwrap(),
            v3_expected(k),
            "v3:{k:05}"
        );
    }
    for i in 0..40u32 {
        let got = db.get(format!("wal-only:{i:03}")).unwrap();
        assert_eq!(got, Some(format!("w-{i}").into_bytes()), "wal-only:{i:03}");
    }
    let live = (0..3000u32).filter(|&k| v3_expected(k).is_some()).count();
    assert_eq!(db.prefix_iter("v3:").count(), live);
    assert_eq!(db.prefix_iter("v3:").rev().count(), live);
}

#[test]
fn a_format_3_database_opens_as_the_default_keyspace_and_upgrades() {
    let dir = siftdb_tests::temp_dir();
    copy_fixture("format-v3", dir.path());
    assert_eq!(table_versions(dir.path()), vec![2]);
    let recorded = std::fs::read_to_string(dir.path().join("OPTIONS")).unwrap();
    assert!(recorded.contains("format_version=3"), "{recorded}");
    let db = Db::open(dir.path(), Options::default()).unwrap();
    check_v3_contents(&db);
    // Everything the old build wrote is the "default" keyspace; its tables are partitioned.
    assert_eq!(db.keyspace_names(), vec!["default".to_string()]);
    assert!(db.level_info().iter().any(|l| l.partitioned_tables > 0));
    // The old database takes keyspaces: a new one beside the old data, a cross-keyspace batch.
    let ks = db.keyspace("added").unwrap();
    let mut batch = siftdb::WriteBatch::new();
    batch.put("new:v3", "n").put_in(&ks, b"k", b"v");
    db.write(batch).unwrap();
    db.compact_range(None, None).unwrap();
    drop((db, ks));
    let db = Db::open(dir.path(), Options::default()).unwrap();
    check_v3_contents(&db);
    assert_eq!(db.get("new:v3").unwrap(), Some(b"n".to_vec()));
    assert_eq!(
        db.keyspace("added").unwrap().get("k").unwrap(),
        Some(b"v".to_vec())
    );
}
