//! `Db::disable_file_deletions` / `enable_file_deletions`: obsolete tables stay on disk while
//! deletions are disabled (calls nest), compactions and waits go on without hanging, and the
//! files go once deletions are enabled again.

use siftdb::{Db, Options};

fn tables(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|f| f.file_name().to_string_lossy().ends_with(".sst"))
        .count()
}

fn flush_two_tables(db: &Db) {
    for round in 0..2 {
        for i in 0..10 {
            db.put(format!("k{round}-{i}"), b"v").unwrap();
        }
        db.flush().unwrap();
    }
}

#[test]
fn obsolete_tables_stay_until_deletions_are_enabled_again() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.disable_file_deletions().unwrap();
    db.disable_file_deletions().unwrap(); // nested: two enables end it
    flush_two_tables(&db);
    assert_eq!(tables(dir.path()), 2);
    db.compact_range(None, None).unwrap();
    db.wait_for_compaction().unwrap();
    assert!(
        tables(dir.path()) >= 3,
        "the two inputs stay beside the output"
    );
    db.enable_file_deletions().unwrap();
    db.compact_range(None, None).unwrap();
    assert!(tables(dir.path()) >= 3, "one disable is still in effect");
    db.enable_file_deletions().unwrap();
    assert_eq!(tables(dir.path()), 1);
    db.enable_file_deletions().unwrap(); // none in effect: nothing happens
    for round in 0..2 {
        assert_eq!(
            db.get(format!("k{round}-3")).unwrap().as_deref(),
            Some(&b"v"[..])
        );
    }
    // Deletions work as before.
    flush_two_tables(&db);
    db.compact_range(None, None).unwrap();
    assert_eq!(tables(dir.path()), 1);
}

#[test]
fn a_checkpoint_while_deletions_are_disabled_holds_everything() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    flush_two_tables(&db);
    db.disable_file_deletions().unwrap();
    db.compact_range(None, None).unwrap();
    let copy = siftdb_tests::temp_dir();
    let target = copy.path().join("cp");
    db.checkpoint(&target).unwrap();
    db.enable_file_deletions().unwrap();
    assert_eq!(tables(dir.path()), 1);
    drop(db);
    let restored = Db::open(&target, Options::default()).unwrap();
    assert_eq!(restored.get("k1-9").unwrap().as_deref(), Some(&b"v"[..]));
}

/// `compact_range` merges L0 into the bottom level once: the table it wrote there is not
/// rewritten again, so with deletions disabled two flushed tables leave exactly three files
/// (RocksDB's count); and a table between two others at the bottom level keeps the others'
/// in-place rewrites apart (one job over both would have spanned it).
#[test]
fn compact_range_writes_each_bottom_table_once() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.disable_file_deletions().unwrap();
    flush_two_tables(&db);
    db.compact_range(None, None).unwrap();
    assert_eq!(tables(dir.path()), 3, "two inputs and one output");
    db.enable_file_deletions().unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(tables(dir.path()), 1);
    let stats = db.stats();
    drop(db);

    // Bottom tables a, b, c, one key each (a target size of one byte cuts after every key);
    // then b is overwritten and the target made large again: the next compact_range merges the
    // new b into the old one and rewrites a and c in place, each alone. A single job over a and
    // c would write one table spanning b's, overlapping it, and b would read wrong.
    let opts = Options {
        target_file_size_base: 1,
        ..Options::default()
    };
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), opts).unwrap();
    for key in ["a", "b", "c"] {
        db.put(key, "old").unwrap();
    }
    db.compact_range(None, None).unwrap();
    assert_eq!(
        db.property("siftdb.num-files-at-level1").as_deref(),
        Some("3")
    );
    db.set_options(&[("target_file_size_base", "67108864")])
        .unwrap();
    db.put("b", "new").unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(
        db.property("siftdb.num-files-at-level1").as_deref(),
        Some("3")
    );
    let all: Vec<_> = db.iter().map(|r| r.unwrap()).collect();
    let pairs = |kv: &[(&str, &str)]| -> Vec<(Vec<u8>, Vec<u8>)> {
        kv.iter()
            .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
            .collect()
    };
    assert_eq!(all, pairs(&[("a", "old"), ("b", "new"), ("c", "old")]));
    assert_eq!(db.get("b").unwrap(), Some(b"new".to_vec()));
    assert!(stats.compactions > 0);
}
