//! `Options::block_cache`: databases opened with one `BlockCache` share its budget, and never
//! read each other's blocks, though their file numbers and block offsets are the same.

use siftdb::{BlockCache, Db, Options};

fn options(cache: &BlockCache) -> Options {
    Options {
        block_cache: Some(cache.clone()),
        // Every block read goes into the cache (no second-sighting wait).
        block_cache_admission: siftdb::CacheAdmission::All,
        ..Options::default()
    }
}

/// The same keys, in the same order, with values naming `db`: the two databases' tables get
/// the same numbers and the same block offsets.
fn fill(db: &Db, name: &str) {
    for round in 0..3 {
        for i in 0..2_000 {
            db.put(format!("key{i:05}"), format!("{name}-{round}-{i}"))
                .unwrap();
        }
        db.flush().unwrap();
    }
}

fn check(db: &Db, name: &str) {
    for i in (0..2_000).step_by(7) {
        assert_eq!(
            db.get(format!("key{i:05}")).unwrap(),
            Some(format!("{name}-2-{i}").into_bytes()),
            "{name}: key {i}"
        );
    }
}

#[test]
fn databases_sharing_a_cache_read_their_own_blocks() {
    let cache = BlockCache::new(8 << 20);
    assert_eq!(cache.usage(), 0);
    let (dir_a, dir_b) = (siftdb_tests::temp_dir(), siftdb_tests::temp_dir());
    let a = Db::open(dir_a.path(), options(&cache)).unwrap();
    let b = Db::open(dir_b.path(), options(&cache)).unwrap();
    fill(&a, "a");
    fill(&b, "b");
    // Interleaved reads: each one's blocks are cached before the other reads the same ids.
    for _ in 0..2 {
        check(&a, "a");
        check(&b, "b");
    }
    let both = cache.usage();
    assert!(both > 0);
    assert_eq!(a.stats().cache.capacity, 8 << 20);
    assert_eq!(a.stats().cache.usage, b.stats().cache.usage);
    // Once a closes (and nothing else holds its state), its blocks go; b's stay.
    a.close().unwrap();
    drop(a);
    let left = cache.usage();
    assert!(left < both, "{left} of {both} left");
    assert!(left > 0);
    check(&b, "b");
    // Reopened, a caches under a new namespace and still reads its own values.
    let a = Db::open(dir_a.path(), options(&cache)).unwrap();
    check(&a, "a");
    check(&b, "b");
}

#[test]
fn a_shared_cache_holds_its_capacity_across_databases() {
    let cache = BlockCache::new(256 << 10);
    let dirs: Vec<_> = (0..3).map(|_| siftdb_tests::temp_dir()).collect();
    let dbs: Vec<Db> = dirs
        .iter()
        .map(|d| Db::open(d.path(), options(&cache)).unwrap())
        .collect();
    for (n, db) in dbs.iter().enumerate() {
        fill(db, &format!("db{n}"));
    }
    for (n, db) in dbs.iter().enumerate() {
        check(db, &format!("db{n}"));
    }
    assert!(cache.usage() <= cache.capacity(), "{cache:?}");
    assert!(cache.usage() > 0);
}

#[test]
fn without_a_shared_cache_each_database_has_its_own() {
    let (dir_a, dir_b) = (siftdb_tests::temp_dir(), siftdb_tests::temp_dir());
    let own = Options {
        block_cache_capacity: 4 << 20,
        ..Options::default()
    };
    let a = Db::open(dir_a.path(), own.clone()).unwrap();
    let b = Db::open(dir_b.path(), own).unwrap();
    fill(&a, "a");
    check(&a, "a");
    assert!(a.stats().cache.usage > 0);
    assert_eq!(b.stats().cache.usage, 0);
    assert_eq!(b.stats().cache.capacity, 4 << 20);
}
