//! Basic behaviour of the public API.

use siftdb::{Db, Options};

#[test]
fn db_iterates_after_flush() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.put(b"a", b"1").unwrap();
    db.put(b"b", b"2").unwrap();
    let before: Vec<_> = db.iter().map(|r| r.unwrap()).collect();
    assert_eq!(before.len(), 2, "{before:?}");
    db.flush().unwrap();
    eprintln!("{}", db.property("siftdb.levels").unwrap());
    assert_eq!(db.get(b"a").unwrap(), Some(b"1".to_vec()));
    let after: Vec<_> = db.iter().map(|r| r.unwrap()).collect();
    assert_eq!(after.len(), 2, "{after:?}");
}

#[test]
fn db_iterates_across_many_tables() {
    let dir = siftdb_tests::temp_dir();
    let o = Options {
        write_buffer_size: 2048,
        block_size: 256,
        ..Options::default()
    };
    let db = Db::open(dir.path(), o).unwrap();
    let mut model = std::collections::BTreeMap::new();
    for i in 0..400u32 {
        let k = format!("k{:03}", (i * 37) % 101).into_bytes();
        let v = vec![i as u8; 40];
        db.put(&k, &v).unwrap();
        model.insert(k, v);
    }
    db.flush().unwrap();
    let got: Vec<_> = db.iter().map(|r| r.unwrap()).collect();
    let want: Vec<_> = model.into_iter().collect();
    assert_eq!(got.len(), want.len());
    assert_eq!(got, want);
}

#[test]
fn db_seek_matches_model_across_tables() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let dir = siftdb_tests::temp_dir();
    let o = Options {
        write_buffer_size: 2048,
        block_size: 256,
        ..Options::default()
    };
    let db = Db::open(dir.path(), o).unwrap();
    let mut model = std::collections::BTreeMap::new();
    let key = |rng: &mut rand::rngs::StdRng| -> Vec<u8> {
        let n = rng.gen_range(0..5);
        (0..n).map(|_| b"abc"[rng.gen_range(0..3)]).collect()
    };
    for i in 0..300u32 {
        let k = key(&mut rng);
        if rng.gen_bool(0.2) {
            db.delete(&k).unwrap();
            model.remove(&k);
        } else {
            let v = vec![i as u8; rng.gen_range(0..200)];
            db.put(&k, &v).unwrap();
            model.insert(k, v);
        }
        if i % 50 == 49 {
            for _ in 0..20 {
                let t = key(&mut rng);
                let mut it = db.iter();
                it.seek(&t);
                let got: Vec<_> = it.map(|r| r.unwrap().0).collect();
                let want: Vec<_> = model.range(t.clone()..).map(|(k, _)| k.clone()).collect();
                assert_eq!(got, want, "seek {t:?} at {i}");
            }
        }
    }
}

#[test]
fn keys_and_values_are_anything_that_is_bytes() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.put("str key", "str value").unwrap();
    db.put(String::from("string key"), vec![1u8, 2, 3]).unwrap();
    db.put(b"array key", [9u8; 4]).unwrap();
    let owned: Vec<u8> = b"slice key".to_vec();
    db.put(&owned[..], &owned).unwrap();
    assert_eq!(db.get("str key").unwrap(), Some(b"str value".to_vec()));
    assert_eq!(
        db.get(String::from("string key")).unwrap(),
        Some(vec![1, 2, 3])
    );
    assert_eq!(db.get(b"array key").unwrap(), Some(vec![9; 4]));
    assert_eq!(db.get(&owned).unwrap(), Some(owned.clone()));
    let mut batch = siftdb::WriteBatch::new();
    batch.put("b1", "x").delete("str key");
    db.write(batch).unwrap();
    assert_eq!(db.get("str key").unwrap(), None);
    db.delete(String::from("b1")).unwrap();
    assert_eq!(db.get("b1").unwrap(), None);
    let snapshot = db.snapshot();
    assert_eq!(snapshot.get("array key").unwrap(), Some(vec![9; 4]));
    assert_eq!(db.prefix_iter("s").count(), 2); // "slice key", "string key"
}

#[test]
fn get_into_reuses_the_callers_buffer_from_memtable_and_table() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.put("in table", [1u8; 300]).unwrap();
    db.flush().unwrap();
    db.put("in memtable", [2u8; 200]).unwrap();
    let mut buf = Vec::with_capacity(1024);
    let capacity = buf.capacity();
    assert!(db.get_into("in table", &mut buf).unwrap());
    assert_eq!(buf, vec![1u8; 300]);
    assert!(db.get_into("in memtable", &mut buf).unwrap());
    assert_eq!(buf, vec![2u8; 200]);
    // A miss clears the buffer; the allocation is kept throughout.
    assert!(!db.get_into("absent", &mut buf).unwrap());
    assert!(buf.is_empty());
    assert_eq!(buf.capacity(), capacity);
    let snapshot = db.snapshot();
    assert!(snapshot.get_into("in table", &mut buf).unwrap());
    assert_eq!(buf.len(), 300);
    assert_eq!(buf.capacity(), capacity);
}

#[test]
fn iterators_and_snapshots_own_what_they_read() {
    fn send<T: Send + 'static>(_: &T) {}
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.put("k", "v").unwrap();
    let (it, raw, snapshot) = (db.iter(), db.raw_iter(), db.snapshot());
    send(&it);
    send(&raw);
    send(&snapshot);
    drop(db); // the handles outlive the `Db` and read on another thread
    let got = std::thread::spawn(move || {
        let mut raw = raw;
        raw.seek_to_last();
        let from_raw = raw.key().to_vec();
        let from_snapshot = snapshot.range::<&str, _>(..).rev().count();
        (it.count(), from_raw, from_snapshot)
    })
    .join()
    .unwrap();
    assert_eq!(got, (1, b"k".to_vec(), 1));
}
