//! Snapshots see exactly the state at their creation, across later writes and flushes.

use siftdb::{Db, Options};

#[test]
fn snapshot_is_stable_across_writes_and_flushes() {
    let dir = siftdb_tests::temp_dir();
    let options = Options {
        write_buffer_size: 8192,
        ..Options::default()
    };
    let db = Db::open(dir.path(), options).unwrap();
    for i in 0..200u32 {
        db.put(format!("k{i:04}").as_bytes(), b"old").unwrap();
    }
    db.delete(b"k0005").unwrap();
    let snap = db.snapshot();
    let before: Vec<_> = snap.iter().map(|r| r.unwrap()).collect();
    assert_eq!(before.len(), 199);
    for i in 0..200u32 {
        db.put(format!("k{i:04}").as_bytes(), b"new").unwrap();
    }
    db.put(b"k0005", b"back").unwrap();
    db.put(b"zzz", b"later").unwrap();
    db.delete(b"k0010").unwrap();
    db.flush().unwrap();
    for i in 0..200u32 {
        let key = format!("k{i:04}");
        let want = (i != 5).then(|| b"old".to_vec());
        assert_eq!(snap.get(key.as_bytes()).unwrap(), want, "{key}");
    }
    assert_eq!(snap.get(b"zzz").unwrap(), None);
    let after: Vec<_> = snap.iter().map(|r| r.unwrap()).collect();
    assert_eq!(before, after);
    // The live view sees the new state.
    assert_eq!(db.get(b"k0005").unwrap(), Some(b"back".to_vec()));
    assert_eq!(db.get(b"k0010").unwrap(), None);
    assert_eq!(db.get(b"k0011").unwrap(), Some(b"new".to_vec()));
}

#[test]
fn iterator_moves_to_another_thread_and_keeps_its_view() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    for i in 0..100u32 {
        db.put(format!("k{i:03}").as_bytes(), b"v").unwrap();
    }
    let it = db.iter();
    db.put(b"k999", b"late").unwrap();
    let count = std::thread::spawn(move || it.count()).join().unwrap();
    assert_eq!(count, 100);
}
