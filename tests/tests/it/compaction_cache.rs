//! Compactions read their inputs without disturbing the block cache (RocksDB's
//! `fill_cache = false`, issue 11): they insert no data block, count no lookup, and their reads
//! are counted apart from users' reads. The cache's and the engine's counters are the oracle.

use siftdb::{BlockKind, Db, Options};

fn options() -> Options {
    Options {
        write_buffer_size: 64 << 10,
        target_file_size_base: 64 << 10,
        max_bytes_for_level_base: 256 << 10,
        block_cache_capacity: 64 << 20,
        ..Options::default()
    }
}

fn key(i: u64) -> Vec<u8> {
    format!("key{:08}", i * 7919 % 30_000).into_bytes()
}

#[test]
fn compaction_reads_neither_fill_nor_count_in_the_cache() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), options()).unwrap();
    for i in 0..30_000 {
        db.put(key(i), [b'v'; 100]).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compaction().unwrap();
    // Warm the cache with a part of the keys.
    for i in 0..2_000 {
        assert!(db.get(key(i)).unwrap().is_some());
    }
    let before = db.stats();
    db.compact_range(None, None).unwrap();
    let after = db.stats();
    let data = |s: &siftdb::Stats| *s.cache.kind(BlockKind::Data);
    let (d0, d1) = (data(&before), data(&after));
    assert!(after.compactions > before.compactions);
    assert!(
        after.compaction_blocks_read > before.compaction_blocks_read,
        "the compaction read its inputs from the files"
    );
    assert_eq!(d1.inserts, d0.inserts, "compaction inserted data blocks");
    assert_eq!(
        d1.lookups(),
        d0.lookups(),
        "compaction counted cache lookups"
    );
    assert_eq!(
        after.data_block_reads, before.data_block_reads,
        "compaction reads counted as user reads"
    );
    // The inputs' blocks are gone with their tables; the data is all there.
    for i in (0..30_000).step_by(101) {
        assert!(db.get(key(i)).unwrap().is_some());
    }
}
