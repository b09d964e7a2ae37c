//! Scan-resistant block cache admission (`Options::block_cache_admission`): lookups keep
//! reading a hot set that fits in the cache while a full scan of a database ten times the cache
//! runs beside them. Under a plain LRU the scan pushes the hot blocks out; with admission the
//! hot set's hit rate (the cache's data-block counters over the hot reads only) stays near its
//! value without the scan.

use siftdb::{BlockKind, CacheAdmission, Db, Options};

const KEYS: u32 = 100_000;
/// The hot set: the first 5 % of the key space (about half the cache).
const HOT: u32 = KEYS / 20;

fn key(i: u32) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

fn options(admission: CacheAdmission) -> Options {
    Options {
        // About 11 MiB of data blocks: ten times the cache.
        block_cache_capacity: 1 << 20,
        block_cache_admission: admission,
        write_buffer_size: 4 << 20,
        compression: siftdb::Compression::None,
        compression_per_level: Vec::new(),
        ..Options::default()
    }
}

/// Data-block (hits, misses) so far.
fn data_blocks(db: &Db) -> (u64, u64) {
    let cache = db.stats().cache;
    let data = cache.kind(BlockKind::Data);
    (data.hits, data.misses)
}

/// Reads `n` hot keys (a fixed pseudo-random walk) and returns the data-block hit rate over
/// them.
fn hot_reads(db: &Db, n: u32, round: u32) -> (u64, u64) {
    let (h0, m0) = data_blocks(db);
    for j in 0..n {
        let i = (round.wrapping_mul(7_919) + j).wrapping_mul(2_654_435_761) % HOT;
        assert!(db.get(key(i)).unwrap().is_some());
    }
    let (h1, m1) = data_blocks(db);
    (h1 - h0, m1 - m0)
}

/// The hot set's hit rate (without the scan, with it).
fn hit_rates(admission: CacheAdmission) -> (f64, f64) {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), options(admission)).unwrap();
    for i in 0..KEYS {
        db.put(key(i), [b'v'; 100]).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    // Warm the hot set, then measure it alone.
    for round in 0..3 {
        hot_reads(&db, HOT, round);
    }
    let rate = |(h, m): (u64, u64)| h as f64 / (h + m).max(1) as f64;
    let alone = rate(hot_reads(&db, 20_000, 10));
    // A full scan in 10 chunks, each about the cache's size and followed by hot reads (only
    // those are measured): under LRU each chunk replaces the whole cache.
    let mut scan = db.iter();
    let (mut hits, mut misses, mut scanned) = (0, 0, 0);
    for round in 0..10 {
        scanned += scan.by_ref().take((KEYS / 10) as usize).count();
        let (h, m) = hot_reads(&db, 300, 100 + round);
        hits += h;
        misses += m;
    }
    assert_eq!(scanned, KEYS as usize);
    let with_scan = rate((hits, misses));
    println!("{admission:?}: hot hit rate {alone:.3} alone, {with_scan:.3} beside the scan");
    (alone, with_scan)
}

#[test]
fn a_full_scan_does_not_push_the_hot_set_out_with_admission() {
    let (alone, with_scan) = hit_rates(CacheAdmission::SecondSighting);
    assert!(alone > 0.9, "{alone}");
    assert!(with_scan >= 0.9 * alone, "{with_scan} vs {alone}");
    let (alone, with_scan) = hit_rates(CacheAdmission::TinyLfu);
    assert!(alone > 0.9, "{alone}");
    assert!(with_scan >= 0.9 * alone, "{with_scan} vs {alone}");
    // The plain LRU, for contrast: the scan flushes it.
    let (alone, with_scan) = hit_rates(CacheAdmission::All);
    assert!(alone > 0.9, "{alone}");
    assert!(with_scan < 0.8 * alone, "{with_scan} vs {alone}");
}
