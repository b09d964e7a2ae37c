//! `get_pinned` answers as `get` does, in every place a value can live, and holds a plain put
//! found in a table inside its data block without a copy: the handle keeps reading right after
//! the block leaves the cache and the table itself is compacted away.

use std::sync::Arc;
use std::time::Duration;

use siftdb::{Db, KeyspaceOptions, Options, ReadOptions};

fn options() -> Options {
    Options {
        merge_operator: Some(Arc::new(siftdb::merge::U64Add)),
        block_cache_capacity: 64 << 10,
        ..Options::default()
    }
}

#[test]
fn get_pinned_holds_a_table_value_in_its_block_and_copies_the_rest() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), options()).unwrap();
    db.put(b"table", b"in a table").unwrap();
    db.put(b"ttl", b"").unwrap();
    db.put_with_ttl(b"ttl", b"expiring", Duration::from_secs(3600))
        .unwrap();
    db.merge(b"count", 2u64.to_le_bytes()).unwrap();
    db.put(b"hidden", b"gone soon").unwrap();
    db.flush().unwrap();
    db.delete_range(b"hidden", b"hiddeo").unwrap();
    db.put(b"memtable", b"in the memtable").unwrap();

    let table = db.get_pinned(b"table").unwrap().expect("stored");
    assert_eq!(&*table, b"in a table");
    assert!(table.is_pinned(), "a plain put in a table is not copied");

    let memtable = db.get_pinned(b"memtable").unwrap().expect("stored");
    assert_eq!(memtable, b"in the memtable".to_vec());
    assert!(!memtable.is_pinned());

    let ttl = db.get_pinned(b"ttl").unwrap().expect("not expired");
    assert_eq!(&*ttl, b"expiring", "the expiry is not part of the value");
    assert!(!ttl.is_pinned());

    let count = db.get_pinned(b"count").unwrap().expect("merged");
    assert_eq!(&*count, 2u64.to_le_bytes());

    assert_eq!(db.get_pinned(b"hidden").unwrap(), None, "range-deleted");
    assert_eq!(db.get_pinned(b"absent").unwrap(), None);

    let uncached = ReadOptions {
        fill_cache: false,
        ..ReadOptions::default()
    };
    let read_once = db.get_pinned_opt(b"table", &uncached).unwrap();
    assert_eq!(read_once.as_deref(), Some(&b"in a table"[..]));
}

#[test]
fn a_pinned_value_outlives_its_cache_entry_and_its_table() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), options()).unwrap();
    let value: Vec<u8> = (0..300u32).map(|i| (i * 7) as u8).collect();
    db.put(b"k", &value).unwrap();
    db.flush().unwrap();
    let held = db.get_pinned(b"k").unwrap().expect("stored");
    assert!(held.is_pinned());
    // Overwrite it, fill the 64 KiB cache many times over and compact the old table away.
    db.put(b"k", b"new").unwrap();
    for i in 0..20_000u32 {
        db.put(format!("filler{i:06}"), [7u8; 100]).unwrap();
    }
    db.compact_range(None, None).unwrap();
    for i in (0..20_000u32).step_by(97) {
        db.get(format!("filler{i:06}")).unwrap();
    }
    assert_eq!(held.to_vec(), value, "the handle kept its block");
    assert_eq!(db.get_pinned(b"k").unwrap().as_deref(), Some(&b"new"[..]));
    drop(db);
    assert_eq!(&*held, value.as_slice(), "and outlives the database");
}

#[test]
fn get_pinned_on_keyspaces_snapshots_and_blob_files() {
    let dir = siftdb_tests::temp_dir();
    let options = Options {
        enable_blob_files: true,
        min_blob_size: 64,
        ..options()
    };
    let db = Db::open(dir.path(), options).unwrap();
    let ks = db
        .create_keyspace("ks", KeyspaceOptions::default())
        .unwrap();
    let big = vec![b'b'; 200];
    ks.put(b"small", b"v1").unwrap();
    db.put(b"big", &big).unwrap(); // the database's options (blob files) hold for "default"
    db.put(b"small", b"default").unwrap();
    db.flush().unwrap();
    ks.flush().unwrap();
    let snapshot = db.snapshot();
    ks.put(b"small", b"v2").unwrap();
    ks.flush().unwrap();

    let small = ks.get_pinned(b"small").unwrap().expect("stored");
    assert_eq!((&*small, small.is_pinned()), (&b"v2"[..], true));
    let old = snapshot
        .get_pinned_in(&ks, b"small")
        .unwrap()
        .expect("seen");
    assert_eq!(&*old, b"v1");
    let default = snapshot.get_pinned(b"small").unwrap().expect("seen");
    assert_eq!(&*default, b"default");
    let blob = db.get_pinned(b"big").unwrap().expect("stored");
    assert_eq!(&*blob, big.as_slice());
    assert!(!blob.is_pinned(), "a blob file's value is read, not pinned");
}
