//! Write batches: counted, cleared, serialized, read back by iteration, applied atomically.

use std::collections::HashMap;

use siftdb_rocksdb::{Options, WriteBatch, WriteBatchIterator, WriteBatchIteratorCf, DB};

#[derive(Default)]
struct Seen {
    puts: Vec<(Vec<u8>, Vec<u8>)>,
    deletes: Vec<Vec<u8>>,
}

impl WriteBatchIterator for Seen {
    fn put(&mut self, key: &[u8], value: &[u8]) {
        self.puts.push((key.to_vec(), value.to_vec()));
    }
    fn delete(&mut self, key: &[u8]) {
        self.deletes.push(key.to_vec());
    }
}

#[test]
fn a_batch_counts_and_replays_its_operations_in_order() {
    let mut batch = WriteBatch::default();
    assert!(batch.is_empty());
    batch.put(b"a", b"1");
    batch.delete(b"b");
    batch.put(b"c", b"3");
    batch.put_log_data(b"not an operation");
    assert_eq!(batch.len(), 3);
    let mut seen = Seen::default();
    WriteBatch::from_data(batch.data()).iterate(&mut seen);
    assert_eq!(
        seen.puts,
        vec![
            (b"a".to_vec(), b"1".to_vec()),
            (b"c".to_vec(), b"3".to_vec())
        ]
    );
    assert_eq!(seen.deletes, vec![b"b".to_vec()]);
    batch.clear();
    assert_eq!(batch.len(), 0);
}

#[test]
fn iterate_cf_names_each_operation_s_family() {
    struct ByCf(HashMap<u32, usize>);
    impl WriteBatchIteratorCf for ByCf {
        fn put_cf(&mut self, cf: u32, _: &[u8], _: &[u8]) {
            *self.0.entry(cf).or_default() += 1;
        }
        fn delete_cf(&mut self, cf: u32, _: &[u8]) {
            *self.0.entry(cf).or_default() += 1;
        }
        fn merge_cf(&mut self, cf: u32, _: &[u8], _: &[u8]) {
            *self.0.entry(cf).or_default() += 1;
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let mut opts = Options::default();
    opts.create_if_missing(true);
    opts.create_missing_column_families(true);
    let db = DB::open_cf(&opts, dir.path(), ["cf"]).unwrap();
    let cf = db.cf_handle("cf").unwrap();
    let mut batch = WriteBatch::default();
    batch.put(b"a", b"1");
    batch.put_cf(&cf, b"b", b"2");
    batch.delete_cf(&cf, b"c");
    let mut by_cf = ByCf(HashMap::new());
    batch.iterate_cf(&mut by_cf);
    assert_eq!(by_cf.0.get(&0), Some(&1));
    assert_eq!(by_cf.0.values().sum::<usize>(), 3);
    assert_eq!(by_cf.0.len(), 2);
}

#[test]
fn a_batch_is_applied_whole_with_range_deletes_and_single_deletes() {
    let dir = tempfile::tempdir().unwrap();
    let db = DB::open_default(dir.path()).unwrap();
    for k in [b"k1", b"k2", b"k3", b"k4"] {
        db.put(k, b"v").unwrap();
    }
    let mut batch = WriteBatch::with_capacity_bytes(64);
    batch.delete_range(b"k1", b"k3");
    batch.single_delete(b"k4");
    batch.put(b"k5", b"new");
    assert!(batch.size_in_bytes() > 0);
    db.write(batch).unwrap();
    let keys: Vec<_> = db
        .iterator(siftdb_rocksdb::IteratorMode::Start)
        .map(|r| r.unwrap().0)
        .collect();
    assert_eq!(keys, vec![Box::from(&b"k3"[..]), Box::from(&b"k5"[..])]);
}

#[test]
fn a_batched_put_into_a_ttl_family_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = Options::default();
    opts.create_if_missing(true);
    let db = DB::open_with_ttl(&opts, dir.path(), std::time::Duration::from_secs(60)).unwrap();
    db.put(b"direct", b"ok").unwrap();
    let mut batch = WriteBatch::default();
    batch.put(b"batched", b"no");
    let err = db.write(batch).unwrap_err();
    assert_eq!(err.kind(), siftdb_rocksdb::ErrorKind::NotSupported);
    assert_eq!(db.get(b"batched").unwrap(), None);
}
