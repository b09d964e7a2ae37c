//! `Snapshot::clone`: a second handle on the same point in time, which keeps the versions it
//! reads after the first handle is gone, through overwrites, flushes and a full compaction.

use siftdb::{Db, Options};

#[test]
fn a_cloned_snapshot_outlives_its_original_through_a_full_compaction() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    for i in 0..100 {
        db.put(format!("k{i:03}"), "old").unwrap();
    }
    let original = db.snapshot();
    let clone = original.clone();
    assert_eq!(clone.sequence(), original.sequence());
    drop(original);
    for i in 0..100 {
        db.put(format!("k{i:03}"), "new").unwrap();
    }
    db.delete("k050").unwrap();
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    for i in 0..100 {
        assert_eq!(
            clone.get(format!("k{i:03}")).unwrap().as_deref(),
            Some(&b"old"[..]),
            "k{i:03}"
        );
    }
    assert_eq!(db.get("k050").unwrap(), None);
    drop(clone);
    // With no snapshot left, the next compaction drops the old versions.
    db.compact_range(None, None).unwrap();
    assert_eq!(db.get("k001").unwrap().as_deref(), Some(&b"new"[..]));
}
