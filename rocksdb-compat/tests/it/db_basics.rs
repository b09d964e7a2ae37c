//! A database opened, written and read through the rust-rocksdb API; destroy refuses an open
//! database; errors carry RocksDB's kinds.

use siftdb_rocksdb::{ColumnFamilyDescriptor, ErrorKind, Options, WriteOptions, DB};

fn open(dir: &tempfile::TempDir) -> DB {
    DB::open_default(dir.path()).unwrap()
}

#[test]
fn put_get_delete_and_the_opt_forms() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    db.put(b"k1", b"v1").unwrap();
    let mut sync = WriteOptions::new();
    sync.set_sync(true);
    db.put_opt(b"k2", b"v2", &sync).unwrap();
    assert_eq!(db.get(b"k1").unwrap(), Some(b"v1".to_vec()));
    assert_eq!(&*db.get_pinned(b"k2").unwrap().unwrap(), b"v2");
    db.delete(b"k1").unwrap();
    db.delete_opt(b"k2", &sync).unwrap();
    assert_eq!(db.get(b"k1").unwrap(), None);
    assert_eq!(db.get(b"k2").unwrap(), None);
    assert_eq!(db.path(), dir.path());
}

#[test]
fn writes_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(&dir);
        db.put(b"kept", b"yes").unwrap();
        db.flush().unwrap();
        db.put(b"in-wal", b"also").unwrap();
    }
    let db = open(&dir);
    assert_eq!(db.get(b"kept").unwrap(), Some(b"yes".to_vec()));
    assert_eq!(db.get(b"in-wal").unwrap(), Some(b"also".to_vec()));
}

#[test]
fn multi_get_answers_each_key_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    db.put(b"a", b"1").unwrap();
    db.put(b"c", b"3").unwrap();
    let got: Vec<_> = db
        .multi_get([b"a", b"b", b"c"])
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(got, vec![Some(b"1".to_vec()), None, Some(b"3".to_vec())]);
}

#[test]
fn destroy_refuses_an_open_database_and_removes_a_closed_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = DB::open_default(&path).unwrap();
    let err = DB::destroy(&Options::default(), &path).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::IOError);
    assert!(err.to_string().contains("/LOCK:"), "{err}");
    drop(db);
    DB::destroy(&Options::default(), &path).unwrap();
    assert!(!path.exists());
}

#[test]
fn opening_a_missing_database_without_create_if_missing_is_an_invalid_argument() {
    let dir = tempfile::tempdir().unwrap();
    let err = DB::open(&Options::default(), dir.path().join("none")).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(
        err.clone().into_string().starts_with("Invalid argument"),
        "{err}"
    );
}

#[test]
fn read_only_open_reads_and_refuses_writes() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(&dir);
        db.put(b"k", b"v").unwrap();
    }
    let db = DB::open_for_read_only(&Options::default(), dir.path(), false).unwrap();
    assert_eq!(db.get(b"k").unwrap(), Some(b"v".to_vec()));
    assert!(db.put(b"k", b"w").is_err());
}

#[test]
fn sequence_numbers_count_operations() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    assert_eq!(db.latest_sequence_number(), 0);
    db.put(b"a", b"1").unwrap();
    let mut batch = siftdb_rocksdb::WriteBatch::default();
    batch.put(b"b", b"2");
    batch.delete(b"a");
    db.write(batch).unwrap();
    assert_eq!(db.latest_sequence_number(), 3);
}

#[test]
fn get_updates_since_reads_the_batches_in_the_wal() {
    struct Count(usize, usize);
    impl siftdb_rocksdb::WriteBatchIterator for Count {
        fn put(&mut self, _: &[u8], _: &[u8]) {
            self.0 += 1;
        }
        fn delete(&mut self, _: &[u8]) {
            self.1 += 1;
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    db.put(b"a", b"1").unwrap();
    let mut batch = siftdb_rocksdb::WriteBatch::default();
    batch.put(b"b", b"2");
    batch.delete(b"a");
    db.write(batch).unwrap();
    let updates: Vec<_> = db
        .get_updates_since(1)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(updates.len(), 1);
    assert_eq!(updates[0].0, 2);
    let mut count = Count(0, 0);
    updates[0].1.iterate(&mut count);
    assert_eq!((count.0, count.1), (1, 1));
    assert!(db.get_updates_since(100).is_err());
}

#[test]
fn error_kinds_follow_rocksdb_s_status_codes() {
    use siftdb_rocksdb::Error;
    assert_eq!(
        Error::new("Invalid argument: x".into()).kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(Error::new("IO error: x".into()).kind(), ErrorKind::IOError);
    assert_eq!(
        Error::new("Corruption: x".into()).kind(),
        ErrorKind::Corruption
    );
    assert_eq!(
        Error::new("something else".into()).kind(),
        ErrorKind::Unknown
    );
    assert_eq!(
        Error::new("NotFound: x".into()).into_string(),
        "NotFound: x"
    );

    let dir = tempfile::tempdir().unwrap();
    let primary = dir.path().join("primary");
    drop(DB::open_default(&primary).unwrap());
    let reader = DB::open_for_read_only(&Options::default(), &primary, false).unwrap();
    let err = reader.put(b"k", b"v").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotSupported);
    assert!(err.to_string().starts_with("Not implemented"), "{err}");
}

#[test]
fn a_dropped_column_family_reports_column_family_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let db =
        siftdb_rocksdb::DBWithThreadMode::<siftdb_rocksdb::MultiThreaded>::open_default(dir.path())
            .unwrap();
    db.create_cf("gone", &Options::default()).unwrap();
    let cf = db.cf_handle("gone").unwrap();
    db.drop_cf("gone").unwrap();
    let err = db.put_cf(&cf, b"k", b"v").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ColumnFamilyDropped, "{err}");
}

#[test]
fn disabled_file_deletions_keep_replaced_tables_until_enabled() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    let tables = || {
        std::fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .path()
                    .extension()
                    .is_some_and(|x| x == "sst")
            })
            .count()
    };
    db.disable_file_deletions().unwrap();
    for round in 0..2 {
        db.put(format!("k{round}"), b"v").unwrap();
        db.flush().unwrap();
    }
    db.compact_range(None::<&[u8]>, None::<&[u8]>);
    assert!(tables() >= 3, "{} tables", tables());
    db.enable_file_deletions().unwrap();
    assert_eq!(tables(), 1);
    assert_eq!(db.get(b"k0").unwrap(), Some(b"v".to_vec()));
}

#[test]
fn a_secondary_catches_up_with_its_primary() {
    let dir = tempfile::tempdir().unwrap();
    let (primary_path, secondary_path) = (dir.path().join("primary"), dir.path().join("s"));
    let mut opts = Options::default();
    opts.create_if_missing(true);
    opts.create_missing_column_families(true);
    let primary = DB::open_cf(&opts, &primary_path, ["cf1"]).unwrap();
    primary.put(b"a", b"1").unwrap();
    let cfs = ["cf1"].map(|n| ColumnFamilyDescriptor::new(n, Options::default()));
    let secondary = DB::open_cf_descriptors_as_secondary(
        &Options::default(),
        &primary_path,
        &secondary_path,
        cfs,
    )
    .unwrap();
    assert!(secondary_path.is_dir());
    let cf1 = secondary.cf_handle("cf1").unwrap();
    assert_eq!(secondary.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(
        secondary.put(b"b", b"2").unwrap_err().kind(),
        ErrorKind::NotSupported
    );

    // Writes in the primary's WAL, then flushed and compacted tables: the handle taken
    // before the catch-up reads the new state.
    primary
        .put_cf(&primary.cf_handle("cf1").unwrap(), b"k", b"v")
        .unwrap();
    primary.put(b"a", b"2").unwrap();
    assert_eq!(secondary.get_cf(&cf1, b"k").unwrap(), None);
    secondary.try_catch_up_with_primary().unwrap();
    assert_eq!(
        secondary.get_cf(&cf1, b"k").unwrap().as_deref(),
        Some(&b"v"[..])
    );
    assert_eq!(secondary.get(b"a").unwrap().as_deref(), Some(&b"2"[..]));
    primary.delete(b"a").unwrap();
    primary.flush().unwrap();
    primary.compact_range(None::<&[u8]>, None::<&[u8]>);
    secondary.try_catch_up_with_primary().unwrap();
    assert_eq!(secondary.get(b"a").unwrap(), None);

    // A snapshot of the secondary holds catch-ups off; the primary itself cannot catch up.
    let snapshot = secondary.snapshot();
    assert_eq!(
        secondary.try_catch_up_with_primary().unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    drop(snapshot);
    secondary.try_catch_up_with_primary().unwrap();
    assert_eq!(
        primary.try_catch_up_with_primary().unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
}

#[test]
fn log_data_goes_to_the_wal_and_back_through_get_updates_since() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    let mut batch = siftdb_rocksdb::WriteBatch::default();
    batch.put(b"k1", b"v1");
    batch.put_log_data(b"first blob");
    db.write(batch).unwrap();
    // Log data alone: written, takes no sequence number.
    let mut alone = siftdb_rocksdb::WriteBatch::default();
    alone.put_log_data(b"second blob");
    db.write(alone).unwrap();
    db.put(b"k2", b"v2").unwrap();
    assert_eq!(db.latest_sequence_number(), 2);
    let updates: Vec<_> = db
        .get_updates_since(0)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let holds = |b: &siftdb_rocksdb::WriteBatch, blob: &[u8]| {
        b.data().windows(blob.len()).any(|w| w == blob)
    };
    assert_eq!(updates.len(), 3, "two batches of puts and one of log data");
    assert_eq!((updates[0].0, updates[0].1.len()), (1, 1));
    assert!(holds(&updates[0].1, b"first blob"));
    assert_eq!(updates[1].1.len(), 0);
    assert!(holds(&updates[1].1, b"second blob"));
    assert_eq!((updates[2].0, updates[2].1.len()), (2, 1));
    // The reads are the puts' alone, also after a reopen replays the WAL.
    drop(db);
    let db = open(&dir);
    assert_eq!(db.get(b"k1").unwrap().as_deref(), Some(&b"v1"[..]));
    assert_eq!(db.get(b"k2").unwrap().as_deref(), Some(&b"v2"[..]));
    assert_eq!(db.latest_sequence_number(), 2);
}
