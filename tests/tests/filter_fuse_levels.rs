//! `Options::deep_filter_kind = BinaryFuse`: deep levels get binary fuse filters, planned by
//! Monkey in the steps they come in, and every key is still found (no false negative), across
//! compaction and reopen; the choice is recorded per keyspace.

use siftdb::{Db, FilterKind, Options};

fn options() -> Options {
    Options {
        write_buffer_size: 64 << 10,
        target_file_size_base: 64 << 10,
        max_bytes_for_level_base: 256 << 10,
        bloom_before_level: 1,
        deep_filter_kind: FilterKind::BinaryFuse,
        ..Options::default()
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{:08}", i.wrapping_mul(2_654_435_761) % 1_000_000).into_bytes()
}

#[test]
fn deep_levels_get_binary_fuse_filters_and_find_every_key() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), options()).unwrap();
    for i in 0..20_000u32 {
        db.put(key(i), format!("v{i}")).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let levels = db.property("siftdb.levels").unwrap();
    println!("{levels}");
    assert!(levels.contains("binary_fuse"), "{levels}");
    for i in (0..20_000u32).step_by(7) {
        assert_eq!(db.get(key(i)).unwrap(), Some(format!("v{i}").into_bytes()));
    }
    // Missing keys: the fuse filters answer for them (an FPR of about 2^-8 or less).
    let stats_before = db.stats();
    for i in 0..20_000u32 {
        assert_eq!(db.get(format!("key{:08}m", i * 50)).unwrap(), None);
    }
    let stats = db.stats();
    let checked: u64 = stats.levels.iter().map(|l| l.checked).sum::<u64>()
        - stats_before.levels.iter().map(|l| l.checked).sum::<u64>();
    let useful: u64 = stats.levels.iter().map(|l| l.useful).sum::<u64>()
        - stats_before.levels.iter().map(|l| l.useful).sum::<u64>();
    assert!(
        checked > 0 && useful as f64 >= 0.98 * checked as f64,
        "{useful} of {checked}"
    );
    drop(db);
    let db = Db::open(dir.path(), options()).unwrap();
    for i in (0..20_000u32).step_by(11) {
        assert_eq!(db.get(key(i)).unwrap(), Some(format!("v{i}").into_bytes()));
    }
    // A keyspace records its own choice: reopened without it in the options, it keeps fuse.
    let ks = db
        .create_keyspace(
            "fused",
            siftdb::KeyspaceOptions {
                bloom_before_level: 0,
                deep_filter_kind: FilterKind::BinaryFuse,
                ..Default::default()
            },
        )
        .unwrap();
    for i in 0..5_000u32 {
        ks.put(key(i), b"x").unwrap();
    }
    ks.flush().unwrap();
    drop((ks, db));
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let ks = db.keyspace("fused").unwrap();
    assert!(ks
        .property("siftdb.levels")
        .unwrap()
        .contains("binary_fuse"));
    assert_eq!(ks.get(key(17)).unwrap(), Some(b"x".to_vec()));
}
