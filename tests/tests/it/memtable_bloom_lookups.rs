//! The memtable bloom (`Options::memtable_prefix_bloom_size_ratio`): a lookup of a key the
//! memtable lacks is answered by the bloom without a skiplist search (counted in
//! `Stats::memtable_bloom_*`), every present key is still found, prefix scans still see every
//! key of their prefix, and the bloom's memory is charged to the memtable.

use siftdb::{Db, Options};

fn key(i: u32) -> Vec<u8> {
    format!("user{:04}:{:08}", i % 1_000, i.wrapping_mul(2_654_435_761)).into_bytes()
}

fn options(ratio: f64, whole_keys: bool) -> Options {
    Options {
        // Large enough that nothing is flushed: every read is a memtable read.
        write_buffer_size: 64 << 20,
        memtable_prefix_bloom_size_ratio: ratio,
        memtable_whole_key_filtering: whole_keys,
        ..Options::default().with_fixed_prefix(8)
    }
}

fn bloom_counts(db: &Db) -> (u64, u64) {
    let s = db.stats();
    (s.memtable_bloom_checked, s.memtable_bloom_useful)
}

#[test]
fn missing_keys_skip_the_skiplist_and_present_ones_are_found() {
    const N: u32 = 60_000;
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), options(0.05, true)).unwrap();
    for i in 0..N {
        db.put(key(i), i.to_le_bytes()).unwrap();
    }
    assert_eq!(db.property("siftdb.num-files-at-level0").unwrap(), "0");
    for i in (0..N).step_by(3) {
        assert_eq!(
            db.get(key(i)).unwrap(),
            Some(i.to_le_bytes().to_vec()),
            "key {i}"
        );
    }
    let (checked, useful) = bloom_counts(&db);
    assert_eq!(useful, 0, "a present key ruled out");
    assert!(checked >= u64::from(N / 3));

    // Missing keys of present prefixes: whole-key filtering answers them (FPR under ~1 %).
    for i in 0..20_000u32 {
        assert_eq!(db.get(format!("user{:04}:x{i}", i % 1_000)).unwrap(), None);
    }
    let (checked2, useful2) = bloom_counts(&db);
    assert_eq!(checked2 - checked, 20_000);
    assert!(useful2 >= 19_600, "{useful2} of 20,000 ruled out");
}

#[test]
fn prefix_only_bloom_rules_out_absent_prefixes_and_scans_see_every_key() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), options(0.05, false)).unwrap();
    for i in 0..20_000u32 {
        // Prefixes user0000..user0499 only.
        db.put(key(i % 500 + 1_000 * (i / 500)), b"v").unwrap();
    }
    // Absent prefixes: ruled out by prefix.
    for i in 500..1_000u32 {
        assert_eq!(db.get(format!("user{i:04}:00000000")).unwrap(), None);
    }
    let (checked, useful) = bloom_counts(&db);
    assert_eq!(checked, 500);
    assert!(useful >= 490, "{useful} of 500");
    // A present prefix's scan sees all its keys; an absent one's sees none.
    assert_eq!(db.prefix_iter(b"user0007").count(), 40);
    assert_eq!(db.prefix_iter(b"user0700").count(), 0);
    // Immutable memtables keep their blooms until flushed; the keys stay found after.
    db.flush().unwrap();
    assert_eq!(db.prefix_iter(b"user0007").count(), 40);
}

#[test]
fn the_bloom_is_charged_to_the_memtable_and_a_bad_ratio_is_refused() {
    let sizes: Vec<u64> = [0.0, 0.1]
        .iter()
        .map(|&ratio| {
            let dir = siftdb_tests::temp_dir();
            let db = Db::open(dir.path(), options(ratio, true)).unwrap();
            for i in 0..1_000u32 {
                db.put(key(i), b"v").unwrap();
            }
            let size = db.property("siftdb.cur-size-all-mem-tables").unwrap();
            size.parse().unwrap()
        })
        .collect();
    // The first filter is sized for write_buffer_size / 256 keys at 0.5 %: about 300 KiB.
    assert!(sizes[1] > sizes[0] + 200_000, "{sizes:?}");
    let dir = siftdb_tests::temp_dir();
    for bad in [-0.1, 0.3, f64::NAN] {
        let err = Db::open(dir.path(), options(bad, false)).unwrap_err();
        assert!(
            err.to_string().contains("memtable_prefix_bloom_size_ratio"),
            "{err}"
        );
    }
}
