//! `WriteBatch::put_log_data`: the blob goes into the WAL record of its batch and nowhere
//! else. It takes no sequence number, changes no read, and batches of log data alone are
//! written too; WAL replay (a reopen, a read-only open) reads past it with every write intact.

use std::collections::BTreeMap;

use siftdb::{Db, Error, Options, WriteBatch};

fn wal_bytes(dir: &std::path::Path) -> Vec<u8> {
    let mut logs: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    logs.sort();
    logs.iter()
        .flat_map(|p| std::fs::read(p).unwrap())
        .collect()
}

fn holds(haystack: &[u8], blob: &[u8]) -> bool {
    haystack.windows(blob.len()).any(|w| w == blob)
}

#[test]
fn log_data_is_logged_and_changes_no_read_or_sequence() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let mut model = BTreeMap::new();
    for i in 0u32..300 {
        let mut batch = WriteBatch::new();
        if i % 3 != 0 {
            let (k, v) = (format!("k{:03}", i % 50), format!("v{i}"));
            batch.put(&k, &v);
            model.insert(k.into_bytes(), v.into_bytes());
        }
        // Log data before, after and alone (every third batch holds nothing else).
        batch.put_log_data(format!("blob-{i}-"));
        if i % 2 == 0 {
            batch.delete(format!("k{:03}", (i + 7) % 50));
            model.remove(format!("k{:03}", (i + 7) % 50).as_bytes());
        }
        db.write(batch).unwrap();
    }
    let writes = (0u32..300).filter(|i| i % 3 != 0).count() + 150;
    assert_eq!(db.snapshot().sequence(), writes as u64);
    let wal = wal_bytes(dir.path());
    assert!(holds(&wal, b"blob-0-") && holds(&wal, b"blob-299-"));
    let all = |db: &Db| -> BTreeMap<Vec<u8>, Vec<u8>> { db.iter().map(Result::unwrap).collect() };
    assert_eq!(all(&db), model);

    let reader = Db::open_read_only(dir.path(), Options::default()).unwrap();
    assert_eq!(
        all(&reader),
        model,
        "a read-only open replays past log data"
    );
    drop(reader);
    drop(db);
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(all(&db), model, "a reopen replays past log data");
    assert_eq!(db.snapshot().sequence(), writes as u64);
    // Writes go on after the replay, numbered on from there.
    db.put("after", "reopen").unwrap();
    assert_eq!(db.snapshot().sequence(), writes as u64 + 1);
}

#[test]
fn log_data_counts_no_operation_and_over_the_limit_fails_the_batch() {
    let mut batch = WriteBatch::new();
    batch.put_log_data(b"x");
    assert_eq!(batch.len(), 0);
    assert!(batch.is_empty(), "no operation");
    assert!(batch.size_bytes() > 12, "but bytes to log");

    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let mut too_big = WriteBatch::new();
    too_big.put(b"k", b"v");
    too_big.put_log_data(vec![0u8; siftdb::MAX_VALUE_SIZE + 1]);
    assert!(matches!(db.write(too_big), Err(Error::InvalidArgument(_))));
    assert_eq!(db.get(b"k").unwrap(), None, "the whole batch is refused");
}
