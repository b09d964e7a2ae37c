//! Basic behaviour of the public API.

use siftdb::{Db, Options};

#[test]
fn db_iterates_after_flush() {
    let dir = tempfile::tempdir().unwrap();
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
