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

#[test]
fn every_cf_form_reads_and_writes_its_own_family() {
    use siftdb_rocksdb::{IteratorMode, SliceTransform, WriteOptions};
    let dir = tempfile::tempdir().unwrap();
    let mut cf_opts = Options::default();
    cf_opts.set_prefix_extractor(SliceTransform::create_fixed_prefix(1));
    cf_opts.set_merge_operator_associative(
        "concat",
        |_: &[u8], old: Option<&[u8]>, ops: &siftdb_rocksdb::MergeOperands| {
            let mut v = old.map(<[u8]>::to_vec).unwrap_or_default();
            ops.iter().for_each(|o| v.extend_from_slice(o));
            Some(v)
        },
    );
    {
        let cfs = [ColumnFamilyDescriptor::new("cf", cf_opts.clone())];
        let db = DB::open_cf_descriptors(&create_opts(), dir.path(), cfs).unwrap();
        let cf = db.cf_handle("cf").unwrap();
        let mut batch = WriteBatch::default();
        for k in ["a1", "a2", "b1", "b2"] {
            batch.put_cf(&cf, k, k);
        }
        db.write_opt(batch, &WriteOptions::default()).unwrap();
        db.merge_cf(&cf, b"m1", b"x").unwrap();
        db.merge_cf(&cf, b"m1", b"y").unwrap();
        db.delete_cf(&cf, b"b2").unwrap();
        db.flush_cf(&cf).unwrap();
        db.compact_range_cf(&cf, None::<&[u8]>, None::<&[u8]>);
        assert_eq!(&*db.get_pinned_cf(&cf, b"m1").unwrap().unwrap(), b"xy");
        let prefix: Vec<_> = db
            .prefix_iterator_cf(&cf, b"a")
            .map(|r| r.unwrap().0)
            .collect();
        assert_eq!(prefix, [Box::from(&b"a1"[..]), Box::from(&b"a2"[..])]);
        let all = db.iterator_cf(&cf, IteratorMode::End).count();
        assert_eq!(all, 4);
        let mut raw = db.raw_iterator_cf(&cf);
        raw.seek(b"b");
        assert_eq!(raw.key(), Some(&b"b1"[..]));
        assert_eq!(
            db.property_int_value_cf(&cf, siftdb_rocksdb::properties::ESTIMATE_NUM_KEYS)
                .unwrap(),
            Some(4)
        );
        assert_eq!(db.get(b"a1").unwrap(), None);
    }
    let cfs = [ColumnFamilyDescriptor::new("cf", cf_opts)];
    let reader =
        DB::open_cf_descriptors_read_only(&Options::default(), dir.path(), cfs, false).unwrap();
    let cf = reader.cf_handle("cf").unwrap();
    assert_eq!(reader.get_cf(&cf, b"a2").unwrap(), Some(b"a2".to_vec()));
    assert!(reader.put_cf(&cf, b"x", b"y").is_err());
    let names = ["cf"];
    let reader2 = DB::open_cf_for_read_only(&Options::default(), dir.path(), names, false).unwrap();
    assert!(reader2.cf_handle("cf").is_some());
}
