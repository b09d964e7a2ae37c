//! Optimistic transactions: what commit-time validation counts as a conflict, where it looks
//! (memtables, then tables once the memtables no longer cover the snapshot), and what a
//! transaction sees and writes: its own writes over its snapshot, several keyspaces in one
//! atomic batch, merges, TTL puts, savepoints and synced commits.

use std::sync::Arc;
use std::time::Duration;

use siftdb::{merge, Db, Error, Options, WriteOptions};

fn open_with(opts: Options) -> (tempfile::TempDir, Db) {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), opts).unwrap();
    (dir, db)
}

fn open() -> (tempfile::TempDir, Db) {
    open_with(Options {
        merge_operator: Some(Arc::new(merge::Append::new(b","))),
        ..Options::default()
    })
}

#[test]
fn reads_see_own_writes_over_the_snapshot_and_commit_applies_them_together() {
    let (_dir, db) = open();
    db.put("a", "1").unwrap();
    db.put("b", "2").unwrap();
    let mut txn = db.transaction();
    db.put("c", "outside").unwrap(); // after the snapshot: invisible to the transaction
    txn.put("a", "10").unwrap();
    txn.delete("b").unwrap();
    txn.merge("m", "x").unwrap();
    txn.merge("a", "y").unwrap();
    assert_eq!(txn.get("a").unwrap(), Some(b"10,y".to_vec()));
    assert_eq!(txn.get("b").unwrap(), None);
    assert_eq!(txn.get("c").unwrap(), None);
    assert_eq!(
        db.get("a").unwrap(),
        Some(b"1".to_vec()),
        "nothing written before commit"
    );
    let all: Vec<_> = txn.range::<&[u8], _>(..).map(|r| r.unwrap()).collect();
    assert_eq!(
        all,
        [
            (b"a".to_vec(), b"10,y".to_vec()),
            (b"m".to_vec(), b"x".to_vec())
        ]
    );
    let back: Vec<_> = txn.prefix_iter("a").rev().map(|r| r.unwrap().0).collect();
    assert_eq!(back, [b"a".to_vec()]);
    txn.commit().unwrap();
    assert_eq!(db.get("a").unwrap(), Some(b"10,y".to_vec()));
    assert_eq!(db.get("b").unwrap(), None);
    assert_eq!(db.get("c").unwrap(), Some(b"outside".to_vec()));
    assert_eq!(db.get("m").unwrap(), Some(b"x".to_vec()));
}

#[test]
fn a_key_written_or_read_for_update_and_committed_by_another_is_a_conflict() {
    let (_dir, db) = open();
    // Written by both.
    let mut txn = db.transaction();
    txn.put("k", "mine").unwrap();
    db.put("k", "theirs").unwrap();
    assert!(matches!(txn.commit(), Err(Error::Conflict)));
    assert_eq!(
        db.get("k").unwrap(),
        Some(b"theirs".to_vec()),
        "nothing written"
    );
    // Read for update, written by the other (even a delete, even of an absent key).
    let mut txn = db.transaction();
    txn.get_for_update("absent").unwrap();
    txn.put("unrelated", "v").unwrap();
    db.delete("absent").unwrap();
    assert!(matches!(txn.commit(), Err(Error::Conflict)));
    assert_eq!(db.get("unrelated").unwrap(), None);
    // A plain read is not validated: snapshot isolation.
    let mut txn = db.transaction();
    txn.get("k").unwrap();
    txn.put("other", "v").unwrap();
    db.put("k", "changed").unwrap();
    txn.commit().unwrap();
    // A merge by the other counts; one by the transaction is a write of the key.
    let mut txn = db.transaction();
    txn.merge("k", "mine").unwrap();
    db.merge(b"k", b"theirs").unwrap();
    assert!(matches!(txn.commit(), Err(Error::Conflict)));
    // Two transactions on disjoint keys both commit.
    let (mut one, mut two) = (db.transaction(), db.transaction());
    one.put("x", "1").unwrap();
    two.put("y", "2").unwrap();
    one.commit().unwrap();
    two.commit().unwrap();
}

#[test]
fn a_range_delete_after_the_snapshot_conflicts_with_the_keys_it_covers() {
    let (_dir, db) = open();
    db.put("b", "1").unwrap();
    let mut txn = db.transaction();
    txn.get_for_update("b").unwrap();
    db.delete_range(b"a", b"c").unwrap();
    assert!(matches!(txn.commit(), Err(Error::Conflict)));
    let mut txn = db.transaction();
    txn.get_for_update("d").unwrap();
    db.delete_range(b"a", b"c").unwrap();
    txn.commit().unwrap();
    // Flushed, the range tombstone is in a table: still found.
    let mut txn = db.transaction();
    txn.put("b", "2").unwrap();
    db.delete_range(b"a", b"c").unwrap();
    db.flush().unwrap();
    assert!(matches!(txn.commit(), Err(Error::Conflict)));
}

/// The other's write is flushed to a table and more writes follow it in the memtable: the
/// memtable no longer holds every write since the snapshot, so validation must ask the tables.
#[test]
fn validation_finds_a_conflicting_write_that_was_flushed() {
    let (_dir, db) = open();
    let mut txn = db.transaction();
    txn.put("k", "mine").unwrap();
    db.put("k", "theirs").unwrap();
    db.flush().unwrap();
    db.put("later", "v").unwrap();
    assert!(matches!(txn.commit(), Err(Error::Conflict)));
    // And after a compaction moved it down the tree.
    let mut txn = db.transaction();
    txn.get_for_update("k").unwrap();
    db.put("k", "again").unwrap();
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    db.put("later", "w").unwrap();
    assert!(matches!(txn.commit(), Err(Error::Conflict)));
    // A key last written before the snapshot, in a table, is no conflict.
    db.flush().unwrap();
    let mut txn = db.transaction();
    txn.get_for_update("k").unwrap();
    db.put("later", "x").unwrap();
    db.flush().unwrap();
    txn.put("k", "mine").unwrap();
    txn.commit().unwrap();
    assert_eq!(db.get("k").unwrap(), Some(b"mine".to_vec()));
}

#[test]
fn one_transaction_commits_several_keyspaces_atomically() {
    let (dir, db) = open();
    let orders = db.keyspace("orders").unwrap();
    let stock = db.keyspace("stock").unwrap();
    stock.put("widget", 5u64.to_le_bytes()).unwrap();
    let mut txn = db.transaction();
    let left = txn.get_for_update_in(&stock, "widget").unwrap().unwrap();
    let left = u64::from_le_bytes(left.try_into().unwrap());
    txn.put_in(&stock, "widget", (left - 1).to_le_bytes())
        .unwrap();
    txn.put_in(&orders, "o1", "widget").unwrap();
    txn.put("log", "o1 placed").unwrap();
    assert_eq!(txn.get_in(&orders, "o1").unwrap(), Some(b"widget".to_vec()));
    assert_eq!(orders.get("o1").unwrap(), None);
    let in_orders: Vec<_> = txn
        .range_in::<&[u8], _>(&orders, ..)
        .map(|r| r.unwrap().0)
        .collect();
    assert_eq!(in_orders, [b"o1".to_vec()]);
    txn.commit_opt(&WriteOptions { sync: true }).unwrap();
    // A conflict in one keyspace fails the whole transaction.
    let mut txn = db.transaction();
    txn.put_in(&orders, "o2", "widget").unwrap();
    txn.get_for_update_in(&stock, "widget").unwrap();
    stock.put("widget", 0u64.to_le_bytes()).unwrap();
    assert!(matches!(txn.commit(), Err(Error::Conflict)));
    assert_eq!(orders.get("o2").unwrap(), None);
    drop((orders, stock));
    drop(db);
    let db = Db::open(
        dir.path(),
        Options {
            merge_operator: Some(Arc::new(merge::Append::new(b","))),
            ..Options::default()
        },
    )
    .unwrap();
    let orders = db.keyspace("orders").unwrap();
    assert_eq!(orders.get("o1").unwrap(), Some(b"widget".to_vec()));
    assert_eq!(db.get("log").unwrap(), Some(b"o1 placed".to_vec()));
}

#[test]
fn a_keyspace_dropped_before_commit_fails_the_commit_and_writes_nothing() {
    let (_dir, db) = open();
    let doomed = db.keyspace("doomed").unwrap();
    let mut txn = db.transaction();
    txn.put_in(&doomed, "k", "v").unwrap();
    txn.put("kept", "v").unwrap();
    db.drop_keyspace("doomed").unwrap();
    assert!(txn.commit().is_err());
    assert_eq!(db.get("kept").unwrap(), None);
}

#[test]
fn a_keyspace_of_another_database_is_refused() {
    let (_dir, db) = open();
    let (_other_dir, other) = open();
    let foreign = other.keyspace("ks").unwrap();
    let mut txn = db.transaction();
    assert!(matches!(
        txn.put_in(&foreign, "k", "v"),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        txn.get_in(&foreign, "k"),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn savepoints_nest_and_roll_back_writes_and_reads_for_update() {
    let (_dir, db) = open();
    let mut txn = db.transaction();
    assert!(matches!(
        txn.rollback_to_savepoint(),
        Err(Error::InvalidArgument(_))
    ));
    txn.put("a", "1").unwrap();
    txn.set_savepoint().unwrap();
    txn.put("b", "2").unwrap();
    txn.set_savepoint().unwrap();
    txn.put("a", "3").unwrap();
    txn.get_for_update("watched").unwrap();
    txn.rollback_to_savepoint().unwrap();
    assert_eq!(txn.get("a").unwrap(), Some(b"1".to_vec()));
    assert_eq!(txn.get("b").unwrap(), Some(b"2".to_vec()));
    // "watched" was read for update after the savepoint: no longer validated.
    db.put("watched", "changed").unwrap();
    txn.rollback_to_savepoint().unwrap();
    assert_eq!(txn.get("b").unwrap(), None);
    txn.commit().unwrap();
    assert_eq!(db.get("a").unwrap(), Some(b"1".to_vec()));
    assert_eq!(db.get("b").unwrap(), None);
}

#[test]
fn a_ttl_put_in_a_transaction_expires_like_any_other() {
    let clock = Arc::new(siftdb_tests::ManualClock::new());
    let (_dir, db) = open_with(Options {
        clock: clock.clone(),
        ..Options::default()
    });
    let mut txn = db.transaction();
    txn.put_with_ttl("session", "token", Duration::from_secs(10))
        .unwrap();
    assert_eq!(txn.get("session").unwrap(), Some(b"token".to_vec()));
    txn.commit().unwrap();
    assert_eq!(db.get("session").unwrap(), Some(b"token".to_vec()));
    clock.advance(Duration::from_secs(11));
    assert_eq!(db.get("session").unwrap(), None);
    // Inside a transaction too, before it commits.
    let mut txn = db.transaction();
    txn.put_with_ttl("short", "v", Duration::from_secs(1))
        .unwrap();
    clock.advance(Duration::from_secs(2));
    assert_eq!(txn.get("short").unwrap(), None);
    assert_eq!(txn.range::<&[u8], _>(..).count(), 0);
}

#[test]
fn a_merge_needs_a_merge_operator() {
    let (_dir, db) = open_with(Options::default());
    let mut txn = db.transaction();
    assert!(matches!(
        txn.merge("k", "x"),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn an_empty_transaction_commits_and_a_read_only_one_validates_its_reads() {
    let (_dir, db) = open();
    db.transaction().commit().unwrap();
    let mut txn = db.transaction();
    txn.get_for_update("k").unwrap();
    db.put("k", "v").unwrap();
    assert!(matches!(txn.commit(), Err(Error::Conflict)));
}

/// Many threads commit optimistic increments of one counter, retrying on conflicts: no
/// increment is lost, and the conflicts the commits report are the ones that happened.
#[test]
fn concurrent_increments_lose_nothing() {
    let (_dir, db) = open();
    db.put("n", 0u64.to_le_bytes()).unwrap();
    let per_thread = 500;
    let conflicts = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..per_thread {
                    loop {
                        let mut txn = db.transaction();
                        let v = txn.get_for_update("n").unwrap().unwrap();
                        let n = u64::from_le_bytes(v.try_into().unwrap());
                        txn.put("n", (n + 1).to_le_bytes()).unwrap();
                        match txn.commit() {
                            Ok(()) => break,
                            Err(Error::Conflict) => {
                                conflicts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            }
                            Err(e) => panic!("{e}"),
                        }
                    }
                }
            });
        }
    });
    let n = u64::from_le_bytes(db.get("n").unwrap().unwrap().try_into().unwrap());
    assert_eq!(n, 4 * per_thread);
    eprintln!("{} conflicts", conflicts.into_inner());
}
