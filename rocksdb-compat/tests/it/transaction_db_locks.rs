//! `TransactionDB`: writes outside transactions wait for the locks transactions hold (as in
//! RocksDB), a rollback leaves the transaction usable, a transaction's iterator and
//! `multi_get` see its own writes, and two-phase commit is refused.

use std::time::{Duration, Instant};

use siftdb_rocksdb::{
    ErrorKind, IteratorMode, Options, TransactionDB, TransactionDBOptions,
    WriteBatchWithTransaction,
};

fn open(dir: &std::path::Path, default_lock_ms: i64) -> TransactionDB {
    let mut opts = Options::default();
    opts.create_if_missing(true);
    let mut txn_opts = TransactionDBOptions::new();
    txn_opts.set_txn_lock_timeout(50);
    txn_opts.set_default_lock_timeout(default_lock_ms);
    TransactionDB::open(&opts, &txn_opts, dir).unwrap()
}

#[test]
fn plain_writes_wait_for_a_transaction_s_lock() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), 100);
    db.put(b"k", b"v0").unwrap();
    let txn = db.transaction();
    txn.put(b"k", b"txn").unwrap();
    let started = Instant::now();
    assert_eq!(
        db.put(b"k", b"plain").unwrap_err().kind(),
        ErrorKind::TimedOut
    );
    assert!(started.elapsed() >= Duration::from_millis(100));
    assert_eq!(db.delete(b"k").unwrap_err().kind(), ErrorKind::TimedOut);
    let mut batch = WriteBatchWithTransaction::<true>::default();
    batch.put(b"other", b"x");
    batch.put(b"k", b"batch");
    assert_eq!(db.write(batch).unwrap_err().kind(), ErrorKind::TimedOut);
    assert_eq!(db.get(b"other").unwrap(), None, "the batch wrote nothing");
    // Keys no transaction holds are written at once.
    db.put(b"free", b"1").unwrap();
    txn.commit().unwrap();
    assert_eq!(db.get(b"k").unwrap(), Some(b"txn".to_vec()));
    // Once the lock is gone, the plain write goes through.
    db.put(b"k", b"plain").unwrap();
    assert_eq!(db.get(b"k").unwrap(), Some(b"plain".to_vec()));
}

#[test]
fn a_rollback_leaves_the_transaction_usable() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), 100);
    let txn = db.transaction();
    txn.put(b"a", b"1").unwrap();
    txn.rollback().unwrap();
    assert_eq!(txn.get(b"a").unwrap(), None);
    // Its lock went with the rollback.
    db.put(b"a", b"plain").unwrap();
    txn.put(b"b", b"2").unwrap();
    txn.commit().unwrap();
    assert_eq!(db.get(b"b").unwrap(), Some(b"2".to_vec()));
}

#[test]
fn a_transaction_reads_and_iterates_its_own_writes() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), 100);
    for k in [b"a", b"c", b"e"] {
        db.put(k, b"db").unwrap();
    }
    let txn = db.transaction();
    txn.put(b"b", b"txn").unwrap();
    txn.delete(b"c").unwrap();
    let before = txn.iterator(IteratorMode::Start);
    txn.put(b"d", b"later").unwrap();
    let seen: Vec<_> = before.map(|r| r.unwrap().0.to_vec()).collect();
    assert_eq!(seen, vec![b"a".to_vec(), b"b".to_vec(), b"e".to_vec()]);
    let back: Vec<_> = txn
        .iterator(IteratorMode::End)
        .map(|r| r.unwrap().0.to_vec())
        .collect();
    assert_eq!(
        back,
        vec![b"e".to_vec(), b"d".to_vec(), b"b".to_vec(), b"a".to_vec()]
    );
    let got = txn.multi_get([b"a", b"b", b"c"]);
    let got: Vec<_> = got.into_iter().map(Result::unwrap).collect();
    assert_eq!(got, vec![Some(b"db".to_vec()), Some(b"txn".to_vec()), None]);
    assert_eq!(txn.prepare().unwrap_err().kind(), ErrorKind::NotSupported);
    assert_eq!(
        txn.set_name(b"t").unwrap_err().kind(),
        ErrorKind::NotSupported
    );
    assert!(db.prepared_transactions().is_empty());
    txn.commit().unwrap();
}
