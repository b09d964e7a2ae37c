//! The get path as the design describes it: a missing-key lookup across many L0 tables whose
//! filters say no reads zero data blocks; the statistics are the oracle.

use siftdb::{Db, Options};

#[test]
fn missing_keys_across_l0_tables_read_no_data_blocks() {
    let dir = siftdb_tests::temp_dir();
    // Keep the eight tables in L0 (no compaction) to test the L0 path.
    let options = Options {
        level0_file_num_compaction_trigger: 100,
        level0_stop_writes_trigger: 200,
        // The per-table path: filter_index_lookups.rs tests the tree-wide index in front of it.
        filter_index_bits_per_key: 0.0,
        ..Options::default()
    };
    let db = Db::open(dir.path(), options).unwrap();
    const TABLES: u32 = 8;
    for t in 0..TABLES {
        for i in 0..2000u32 {
            // Interleaved keys: every table spans the whole key range.
            db.put(format!("key{:06}", i * TABLES + t).as_bytes(), [b'v'; 64])
                .unwrap();
        }
        db.flush().unwrap();
    }
    assert_eq!(
        db.property("siftdb.num-files-at-level0").as_deref(),
        Some("8")
    );
    let before = db.stats();
    const LOOKUPS: u32 = 20_000;
    for i in 0..LOOKUPS {
        // Inside every table's key range (so only the filter can rule the table out).
        let key = format!("key{:06}x", i % 15_000 + 8);
        assert_eq!(db.get(key.as_bytes()).unwrap(), None);
    }
    let after = db.stats();
    let l0 = after.levels[0];
    let l0_before = before.levels[0];
    let useful = l0.useful - l0_before.useful;
    let positive = l0.positive - l0_before.positive;
    let data = l0.data_block_accesses - l0_before.data_block_accesses;
    assert_eq!(
        l0.true_positive, l0_before.true_positive,
        "no key was there"
    );
    // Every data block touched is accounted for by a filter false positive, nothing else; a
    // false positive seen before (the lookups repeat keys) is answered by the memo instead.
    let memo_hits = l0.memo_hits - l0_before.memo_hits;
    assert!(
        memo_hits > 0,
        "repeated false positives never reached the memo"
    );
    assert_eq!(
        data + memo_hits,
        positive,
        "data blocks {data} + memo hits {memo_hits} vs filter positives {positive}"
    );
    // Each lookup consults all eight tables' filters.
    assert_eq!(useful + positive, u64::from(LOOKUPS * TABLES));
    let fpr = positive as f64 / (positive + useful) as f64;
    assert!(fpr < 0.03, "measured FPR {fpr}");
    // With filters and indexes pinned (L0), no filter or index block is read from disk.
    assert_eq!(after.filter_block_reads, before.filter_block_reads);
    assert_eq!(after.index_block_reads, before.index_block_reads);
    let levels = db.property("siftdb.levels").unwrap();
    assert!(levels.contains("blocked_bloom"), "{levels}");
}
