//! `siftdb.memtables-memory-bytes`: the heap bytes memtables hold (RocksDB's
//! `rocksdb.size-all-mem-tables`), next to the data bytes the flush trigger counts.

use siftdb::{Db, KeyspaceOptions, Options};

fn number(db: &Db, name: &str) -> usize {
    db.property(name).unwrap().parse().unwrap()
}

#[test]
fn memtable_memory_counts_the_fixed_part_the_arena_and_the_nodes() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let empty = number(&db, "siftdb.memtables-memory-bytes");
    assert!(empty > 0, "an empty memtable still holds its skiplist head");
    assert_eq!(number(&db, "siftdb.cur-size-all-mem-tables"), 0);
    // A second keyspace brings a memtable of its own.
    let _ks = db
        .create_keyspace("other", KeyspaceOptions::default())
        .unwrap();
    let two = number(&db, "siftdb.memtables-memory-bytes");
    assert!(two > empty);

    for i in 0..10_000 {
        db.put(format!("key{i:05}"), b"v").unwrap();
    }
    let data = number(&db, "siftdb.cur-size-all-mem-tables");
    let memory = number(&db, "siftdb.memtables-memory-bytes");
    // At least the arena's first chunk (1 MiB) and a node per entry.
    assert!(memory >= (1 << 20) + 10_000 * 32, "{memory}");
    assert!(memory > data, "{memory} of memory for {data} bytes of data");

    db.flush().unwrap();
    assert_eq!(number(&db, "siftdb.memtables-memory-bytes"), two);
}
