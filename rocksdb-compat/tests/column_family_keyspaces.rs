//! Column families are siftdb keyspaces: created, listed, required at open, written in batches
//! across families, dropped.

use siftdb_rocksdb::{ColumnFamilyDescriptor, Options, WriteBatch, DB, DEFAULT_COLUMN_FAMILY_NAME};

fn create_opts() -> Options {
    let mut opts = Options::default();
    opts.create_if_missing(true);
    opts.create_missing_column_families(true);
    opts
}

#[test]
fn families_are_separate_key_spaces() {
    let dir = tempfile::tempdir().unwrap();
    let db = DB::open_cf(&create_opts(), dir.path(), ["users", "items"]).unwrap();
    let users = db.cf_handle("users").unwrap();
    let items = db.cf_handle("items").unwrap();
    db.put_cf(&users, b"k", b"ann").unwrap();
    db.put_cf(&items, b"k", b"pen").unwrap();
    assert_eq!(db.get_cf(&users, b"k").unwrap(), Some(b"ann".to_vec()));
    assert_eq!(db.get_cf(&items, b"k").unwrap(), Some(b"pen".to_vec()));
    assert_eq!(db.get(b"k").unwrap(), None);
    db.delete_range_cf(&users, b"a", b"z").unwrap();
    assert_eq!(db.get_cf(&users, b"k").unwrap(), None);
    assert_eq!(db.get_cf(&items, b"k").unwrap(), Some(b"pen".to_vec()));
}

#[test]
fn an_existing_family_must_be_named_at_open() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut db =
            siftdb_rocksdb::DBWithThreadMode::<siftdb_rocksdb::SingleThreaded>::open_default(
                dir.path(),
            )
            .unwrap();
        db.create_cf("cf1", &Options::default()).unwrap();
    }
    let err = DB::open(&Options::default(), dir.path()).unwrap_err();
    assert!(err.to_string().starts_with("Invalid argument"), "{err}");
    let names = DB::list_cf(&Options::default(), dir.path()).unwrap();
    assert_eq!(
        names,
        vec![DEFAULT_COLUMN_FAMILY_NAME.to_string(), "cf1".to_string()]
    );
    let db = DB::open_cf(&Options::default(), dir.path(), names).unwrap();
    assert!(db.cf_handle("cf1").is_some());
}

#[test]
fn a_missing_family_is_an_error_unless_created() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = Options::default();
    opts.create_if_missing(true);
    assert!(DB::open_cf(&opts, dir.path(), ["absent"]).is_err());
    let descriptors = [ColumnFamilyDescriptor::new("absent", Options::default())];
    let db = DB::open_cf_descriptors(&create_opts(), dir.path(), descriptors).unwrap();
    assert!(db.cf_handle("absent").is_some());
}

#[test]
fn one_batch_writes_several_families_and_drop_cf_removes_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut db = siftdb_rocksdb::DBWithThreadMode::<siftdb_rocksdb::SingleThreaded>::open_cf(
        &create_opts(),
        dir.path(),
        ["a", "b"],
    )
    .unwrap();
    let mut batch = WriteBatch::default();
    batch.put_cf(&db.cf_handle("a").unwrap(), b"k", b"1");
    batch.put_cf(&db.cf_handle("b").unwrap(), b"k", b"2");
    batch.put(b"k", b"0");
    db.write(batch).unwrap();
    assert_eq!(
        db.get_cf(&db.cf_handle("b").unwrap(), b"k").unwrap(),
        Some(b"2".to_vec())
    );
    assert_eq!(db.get(b"k").unwrap(), Some(b"0".to_vec()));
    db.drop_cf("a").unwrap();
    assert!(db.cf_handle("a").is_none());
    assert_eq!(
        DB::list_cf(&Options::default(), dir.path()).unwrap().len(),
        2
    );
}

#[test]
fn multi_threaded_mode_creates_families_through_shared_references() {
    let dir = tempfile::tempdir().unwrap();
    let db =
        siftdb_rocksdb::DBWithThreadMode::<siftdb_rocksdb::MultiThreaded>::open_default(dir.path())
            .unwrap();
    let (r1, r2) = (&db, &db);
    r1.create_cf("x", &Options::default()).unwrap();
    r2.create_cf("y", &Options::default()).unwrap();
    let x = db.cf_handle("x").unwrap();
    db.put_cf(&x, b"k", b"v").unwrap();
    assert_eq!(db.get_cf(&x, b"k").unwrap(), Some(b"v".to_vec()));
    let got = db.batched_multi_get_cf(&x, [b"k".as_slice(), b"none"], false);
    assert_eq!(got[0].as_ref().unwrap().as_deref(), Some(&b"v"[..]));
    assert!(got[1].as_ref().unwrap().is_none());
}
