//! `delete_files_in_range`: tables below L0 wholly inside the range leave by one edit; nothing
//! outside the range changes; L0 and tables reaching out of the range stay; a `delete_range`
//! after it removes the rest; the files are gone from the disk and the state survives reopen.

use std::collections::{BTreeMap, BTreeSet};

use siftdb::{Db, Options};

fn options() -> Options {
    Options {
        write_buffer_size: 64 << 10,
        target_file_size_base: 16 << 10,
        max_bytes_for_level_base: 256 << 10,
        compression: siftdb::Compression::None,
        compression_per_level: Vec::new(),
        ..Options::default()
    }
}

fn key(shard: char, i: usize) -> Vec<u8> {
    format!("{shard}/{i:05}").into_bytes()
}

/// The table numbers of the current version (`siftdb.sstables`).
fn live_tables(db: &Db) -> BTreeSet<u64> {
    let table = db.property("siftdb.sstables").unwrap();
    table
        .lines()
        .filter(|l| l.starts_with('L'))
        .filter_map(|l| l.split_whitespace().nth(1)?.parse().ok())
        .collect()
}

fn check(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>, what: &str) {
    let scanned: BTreeMap<Vec<u8>, Vec<u8>> = db.iter().map(|r| r.unwrap()).collect();
    assert_eq!(&scanned, model, "{what}");
}

#[test]
fn whole_tables_in_the_range_go_and_nothing_else_changes() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), options()).unwrap();
    let mut model = BTreeMap::new();
    for shard in ['a', 'b', 'c'] {
        for i in 0..3000 {
            let v = format!("{shard}-{i}-").repeat(4).into_bytes();
            db.put(key(shard, i), &v).unwrap();
            model.insert(key(shard, i), v);
        }
    }
    db.compact_range(None, None).unwrap();
    // A few b/ keys in L0 as well: they stay.
    for i in (0..3000).step_by(500) {
        db.put(key('b', i), b"in L0").unwrap();
        model.insert(key('b', i), b"in L0".to_vec());
    }
    db.flush().unwrap();
    // No background compaction may change the tables between the two listings below (one ran
    // here once, under load, and replaced a table outside the range).
    db.wait_for_compaction().unwrap();
    let before = live_tables(&db);
    let deleted = db.delete_files_in_range(b"b/", b"b/\xff").unwrap();
    assert!(deleted > 3, "deleted {deleted} tables");
    assert_eq!(db.stats().files_deleted_in_range, deleted as u64);
    let after = live_tables(&db);
    let gone: Vec<u64> = before.difference(&after).copied().collect();
    assert_eq!(gone.len(), deleted, "{before:?} -> {after:?}");
    // Their files go too (at once, unless a background reader still held the old version for
    // a moment).
    siftdb_tests::pause::wait_until("the deleted tables' files removed", || {
        gone.iter()
            .all(|n| !dir.path().join(format!("{n:06}.sst")).exists())
    });
    // Outside the range: untouched. Inside: what L0 and the edge tables hold, nothing else.
    let scanned: BTreeMap<Vec<u8>, Vec<u8>> = db.iter().map(|r| r.unwrap()).collect();
    for (k, v) in &model {
        if !k.starts_with(b"b/") {
            assert_eq!(scanned.get(k), Some(v), "{k:?} outside the range");
        }
    }
    let left: Vec<&Vec<u8>> = scanned.keys().filter(|k| k.starts_with(b"b/")).collect();
    assert!(left.len() < 3000 / 2, "{} b/ keys left", left.len());
    for k in &left {
        assert_eq!(
            scanned.get(*k),
            model.get(*k),
            "{k:?} left with another value"
        );
    }
    for i in (0..3000).step_by(500) {
        assert_eq!(db.get(key('b', i)).unwrap().as_deref(), Some(&b"in L0"[..]));
    }
    // A range delete removes the rest.
    db.delete_range(b"b/", b"c/").unwrap();
    model.retain(|k, _| !k.starts_with(b"b/"));
    check(&db, &model, "after delete_range");
    db.close().unwrap();
    drop(db);
    let db = Db::open(dir.path(), options()).unwrap();
    check(&db, &model, "after reopen");
    // An empty or reversed range deletes nothing.
    assert_eq!(db.delete_files_in_range(b"x", b"y").unwrap(), 0);
    assert_eq!(db.delete_files_in_range(b"c/", b"a/").unwrap(), 0);
    check(&db, &model, "after empty calls");
}
