//! Checkpoints, properties, pinned values and transactions through the rust-rocksdb API.

use siftdb_rocksdb::checkpoint::Checkpoint;
use siftdb_rocksdb::{
    properties, OptimisticTransactionDB, Options, TransactionDB, TransactionDBOptions, DB,
};

#[test]
fn a_checkpoint_opens_as_a_database_with_the_data() {
    let dir = tempfile::tempdir().unwrap();
    let db = DB::open_default(dir.path().join("db")).unwrap();
    db.put(b"k", b"v").unwrap();
    let cp = Checkpoint::new(&db).unwrap();
    cp.create_checkpoint(dir.path().join("cp")).unwrap();
    cp.create_checkpoint_with_log_size(dir.path().join("cp0"), 0)
        .unwrap();
    for name in ["cp", "cp0"] {
        let copy = DB::open_default(dir.path().join(name)).unwrap();
        assert_eq!(copy.get(b"k").unwrap(), Some(b"v".to_vec()));
    }
}

#[test]
fn properties_answer_from_siftdb_s() {
    let dir = tempfile::tempdir().unwrap();
    let db = DB::open_default(dir.path()).unwrap();
    assert_eq!(
        db.property_int_value(properties::ESTIMATE_NUM_KEYS)
            .unwrap(),
        Some(0)
    );
    db.put(b"a", b"1").unwrap();
    db.put(b"b", b"2").unwrap();
    assert_eq!(
        db.property_int_value("rocksdb.estimate-num-keys").unwrap(),
        Some(2)
    );
    assert!(db
        .property_value(properties::STATS)
        .unwrap()
        .unwrap()
        .contains("Stats"));
    db.flush().unwrap();
    assert_eq!(
        db.property_value(&properties::num_files_at_level(0))
            .unwrap(),
        Some("1".to_string())
    );
    assert!(
        db.property_int_value(properties::TOTAL_SST_FILES_SIZE)
            .unwrap()
            .unwrap()
            > 0
    );
    assert_eq!(db.property_value("rocksdb.no-such-property").unwrap(), None);
}

#[test]
fn a_pinned_value_dereferences_to_its_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let db = DB::open_default(dir.path()).unwrap();
    db.put(b"k", b"value12345").unwrap();
    db.flush().unwrap();
    let pinned = db.get_pinned(b"k").unwrap().unwrap();
    assert_eq!(&pinned[5..], b"12345");
    assert!(db.get_pinned(b"none").unwrap().is_none());
}

#[test]
fn pessimistic_transactions_commit_and_roll_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = Options::default();
    opts.create_if_missing(true);
    let db: TransactionDB =
        TransactionDB::open(&opts, &TransactionDBOptions::default(), dir.path()).unwrap();
    let txn = db.transaction();
    txn.put(b"k", b"v").unwrap();
    assert_eq!(txn.get(b"k").unwrap(), Some(b"v".to_vec()));
    assert_eq!(db.get(b"k").unwrap(), None);
    txn.commit().unwrap();
    assert_eq!(db.get(b"k").unwrap(), Some(b"v".to_vec()));
    let txn = db.transaction();
    txn.delete(b"k").unwrap();
    txn.rollback().unwrap();
    assert_eq!(db.get(b"k").unwrap(), Some(b"v".to_vec()));
}

#[test]
fn an_optimistic_transaction_conflicts_on_a_key_changed_after_its_read() {
    let dir = tempfile::tempdir().unwrap();
    let db: OptimisticTransactionDB = OptimisticTransactionDB::open_default(dir.path()).unwrap();
    db.put(b"k", b"0").unwrap();
    let txn = db.transaction();
    assert_eq!(txn.get_for_update(b"k", true).unwrap(), Some(b"0".to_vec()));
    db.put(b"k", b"1").unwrap();
    txn.put(b"k", b"2").unwrap();
    let err = txn.commit().unwrap_err();
    assert_eq!(err.kind(), siftdb_rocksdb::ErrorKind::Busy);
    assert_eq!(db.get(b"k").unwrap(), Some(b"1".to_vec()));
}
