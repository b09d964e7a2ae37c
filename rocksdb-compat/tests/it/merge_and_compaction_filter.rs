//! Merge operators and compaction filters declared the rust-rocksdb way, run by siftdb.

use siftdb_rocksdb::{CompactionDecision, MergeOperands, Options, DB};

fn concat(_key: &[u8], existing: Option<&[u8]>, operands: &MergeOperands) -> Option<Vec<u8>> {
    let mut out = existing.map(<[u8]>::to_vec).unwrap_or_default();
    for op in operands {
        out.extend_from_slice(op);
    }
    Some(out)
}

fn fail(_key: &[u8], _existing: Option<&[u8]>, _operands: &MergeOperands) -> Option<Vec<u8>> {
    None
}

#[test]
fn merges_fold_into_the_value_before_and_after_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = Options::default();
    opts.create_if_missing(true);
    opts.set_merge_operator_associative("concat", concat);
    let db = DB::open(&opts, dir.path()).unwrap();
    db.put(b"k", b"a").unwrap();
    db.merge(b"k", b"b").unwrap();
    db.merge(b"k", b"c").unwrap();
    assert_eq!(db.get(b"k").unwrap(), Some(b"abc".to_vec()));
    db.compact_range(None::<&[u8]>, None::<&[u8]>);
    db.merge(b"k", b"d").unwrap();
    assert_eq!(db.get(b"k").unwrap(), Some(b"abcd".to_vec()));
}

#[test]
fn a_failed_merge_is_a_corruption_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = Options::default();
    opts.create_if_missing(true);
    opts.set_merge_operator("fails", fail, fail);
    let db = DB::open(&opts, dir.path()).unwrap();
    db.merge(b"k", b"x").unwrap();
    let err = db.get(b"k").unwrap_err();
    assert_eq!(err.kind(), siftdb_rocksdb::ErrorKind::Corruption);
    assert!(err.to_string().contains("Merge operator failed"), "{err}");
}

fn filter(_level: u32, key: &[u8], _value: &[u8]) -> CompactionDecision {
    match key.first() {
        Some(b'_') => CompactionDecision::Remove,
        Some(b'%') => CompactionDecision::Change(b"changed"),
        _ => CompactionDecision::Keep,
    }
}

#[test]
fn a_compaction_filter_removes_and_changes_values() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = Options::default();
    opts.create_if_missing(true);
    opts.set_compaction_filter("filter", filter);
    let db = DB::open(&opts, dir.path()).unwrap();
    db.put(b"keep", b"v").unwrap();
    db.put(b"_gone", b"v").unwrap();
    db.put(b"%new", b"v").unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>);
    assert_eq!(db.get(b"keep").unwrap(), Some(b"v".to_vec()));
    assert_eq!(db.get(b"_gone").unwrap(), None);
    assert_eq!(db.get(b"%new").unwrap(), Some(b"changed".to_vec()));
}

#[test]
fn one_merge_operator_per_database_and_another_per_family_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = Options::default();
    opts.create_if_missing(true);
    opts.create_missing_column_families(true);
    let mut concat_opts = Options::default();
    concat_opts.set_merge_operator_associative("concat", concat);
    let mut other_opts = Options::default();
    other_opts.set_merge_operator_associative("other", concat);
    let cfs = vec![
        siftdb_rocksdb::ColumnFamilyDescriptor::new("a", concat_opts.clone()),
        siftdb_rocksdb::ColumnFamilyDescriptor::new("b", other_opts.clone()),
    ];
    let err = DB::open_cf_descriptors(&opts, dir.path(), cfs).unwrap_err();
    assert_eq!(err.kind(), siftdb_rocksdb::ErrorKind::NotSupported);

    // A family's operator serves the database when its own options have none.
    let cfs = vec![siftdb_rocksdb::ColumnFamilyDescriptor::new(
        "a",
        concat_opts.clone(),
    )];
    #[allow(unused_mut)] // `create_cf` takes `&mut self` in the single-threaded mode only
    let mut db = DB::open_cf_descriptors(&opts, dir.path(), cfs).unwrap();
    let a = db.cf_handle("a").unwrap();
    db.merge_cf(&a, b"k", b"x").unwrap();
    db.merge_cf(&a, b"k", b"y").unwrap();
    assert_eq!(db.get_cf(&a, b"k").unwrap(), Some(b"xy".to_vec()));
    db.create_cf("same", &concat_opts).unwrap();
    let err = db.create_cf("different", &other_opts).unwrap_err();
    assert_eq!(err.kind(), siftdb_rocksdb::ErrorKind::NotSupported);
}
