//! Blob garbage collection (issue 37): compactions move the live values of the oldest blob
//! files into new ones, so that files holding mostly overwritten values go; with a force
//! threshold, compactions are scheduled for them. The engine's blob gauges are the oracle.

use siftdb::{Db, Options, Stats};

fn options(gc: bool) -> Options {
    Options {
        enable_blob_files: true,
        min_blob_size: 100,
        blob_file_size: 32 << 10,
        enable_blob_garbage_collection: gc,
        blob_garbage_collection_age_cutoff: 1.0,
        // The overwrites below leave files about half garbage: collected at a quarter.
        blob_garbage_collection_min_garbage_ratio: 0.25,
        write_buffer_size: 64 << 10,
        target_file_size_base: 32 << 10,
        max_bytes_for_level_base: 128 << 10,
        level0_file_num_compaction_trigger: 2,
        ..Options::default()
    }
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn value(i: u64, round: u64) -> Vec<u8> {
    let mut v = format!("{i}:{round}:").into_bytes();
    v.resize(400, b'v');
    v
}

/// Keys in a scrambled order, so that each blob file holds values of keys all over the range.
fn scrambled(n: u64, round: u64) -> impl Iterator<Item = u64> {
    (0..n).map(move |i| (i * 7_919 + round * 13) % n)
}

/// Writes `n` keys, then overwrites every other key (scrambled) `rounds` times, and compacts.
fn overwrite(db: &Db, n: u64, rounds: u64) {
    for i in scrambled(n, 0) {
        db.put(key(i), value(i, 0)).unwrap();
    }
    for round in 1..=rounds {
        for i in scrambled(n, round).filter(|i| i % 2 == 0) {
            db.put(key(i), value(i, round)).unwrap();
        }
    }
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    db.wait_for_compaction().unwrap();
}

fn check(db: &Db, n: u64, rounds: u64) {
    for i in 0..n {
        let round = if i % 2 == 0 { rounds } else { 0 };
        assert_eq!(db.get(key(i)).unwrap(), Some(value(i, round)), "key {i}");
    }
}

fn live(stats: &Stats) -> u64 {
    stats.blob_file_bytes - stats.blob_garbage_bytes
}

#[test]
fn without_collection_half_dead_files_stay_and_with_it_they_go() {
    let (n, rounds) = (3_000, 3);
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), options(false)).unwrap();
    overwrite(&db, n, rounds);
    check(&db, n, rounds);
    let kept = db.stats();
    // The first round's files hold the odd keys' values, still live, beside dead even ones.
    assert!(
        kept.blob_garbage_bytes * 4 > live(&kept),
        "without collection: {} garbage of {} bytes",
        kept.blob_garbage_bytes,
        kept.blob_file_bytes
    );
    assert_eq!(kept.blob_bytes_relocated, 0);
    drop(db);

    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), options(true)).unwrap();
    overwrite(&db, n, rounds);
    check(&db, n, rounds);
    let collected = db.stats();
    assert!(collected.blob_bytes_relocated > 0);
    // What is left is the live values (and at most what the last compaction's new files
    // hold of their own): within 1.5x of the live bytes.
    assert!(
        collected.blob_file_bytes * 2 <= live(&collected) * 3,
        "with collection: {} bytes for {} live",
        collected.blob_file_bytes,
        live(&collected)
    );
    drop(db);
    let db = Db::open(dir.path(), options(true)).unwrap();
    check(&db, n, rounds);
}

#[test]
fn a_force_threshold_schedules_compactions_for_garbage_no_other_compaction_needs() {
    let (n, rounds) = (3_000, 1);
    let dir = siftdb_tests::temp_dir();
    // Garbage made without collection: the tree is in shape, and its oldest blob files are
    // half dead.
    let db = Db::open(dir.path(), options(false)).unwrap();
    overwrite(&db, n, rounds);
    let before = db.stats();
    assert!(
        before.blob_garbage_bytes * 4 > before.blob_file_bytes,
        "{before:?}"
    );
    drop(db);
    // Reopened with collection and a force threshold: compactions run for the garbage alone.
    let forced = Options {
        blob_garbage_collection_age_cutoff: 0.5,
        blob_garbage_collection_force_threshold: 0.2,
        ..options(true)
    };
    let db = Db::open(dir.path(), forced.clone()).unwrap();
    db.wait_for_compaction().unwrap();
    let after = db.stats();
    assert!(after.blob_bytes_relocated > 0, "{after:?}");
    assert!(after.compactions > 0);
    assert!(
        after.blob_garbage_bytes * 2 < before.blob_garbage_bytes,
        "{} garbage left of {}",
        after.blob_garbage_bytes,
        before.blob_garbage_bytes
    );
    check(&db, n, rounds);
    drop(db);
    // Without a threshold, the same reopen runs nothing.
    let dir2 = siftdb_tests::temp_dir();
    let db = Db::open(dir2.path(), options(false)).unwrap();
    overwrite(&db, n, rounds);
    drop(db);
    let db = Db::open(dir2.path(), options(true)).unwrap();
    db.wait_for_compaction().unwrap();
    assert_eq!(db.stats().compactions, 0);
}

/// Fills `n` keys, overwrites every tenth, and compacts everything, with `min_garbage_ratio`.
fn overwrite_a_tenth(min_garbage_ratio: f64) -> Stats {
    let n = 3_000;
    let dir = siftdb_tests::temp_dir();
    let options = Options {
        blob_garbage_collection_min_garbage_ratio: min_garbage_ratio,
        ..options(true)
    };
    let db = Db::open(dir.path(), options).unwrap();
    for i in scrambled(n, 0) {
        db.put(key(i), value(i, 0)).unwrap();
    }
    for i in scrambled(n, 1).filter(|i| i % 10 == 0) {
        db.put(key(i), value(i, 1)).unwrap();
    }
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    db.wait_for_compaction().unwrap();
    for i in 0..n {
        let round = u64::from(i % 10 == 0);
        assert_eq!(db.get(key(i)).unwrap(), Some(value(i, round)), "key {i}");
    }
    db.stats()
}

#[test]
fn files_under_the_minimum_garbage_ratio_are_not_relocated() {
    // Every file of the fill holds a tenth of garbage: under a minimum of a half, none is
    // collected, however old.
    let kept = overwrite_a_tenth(0.5);
    assert_eq!(kept.blob_bytes_relocated, 0, "{kept:?}");
    assert!(kept.blob_garbage_bytes > 0, "{kept:?}");
    // At a minimum of 0 (RocksDB's rule), the same files are relocated and their garbage goes.
    let collected = overwrite_a_tenth(0.0);
    assert!(collected.blob_bytes_relocated > 0, "{collected:?}");
    assert!(
        collected.blob_garbage_bytes < kept.blob_garbage_bytes,
        "{} garbage left, {} without collection",
        collected.blob_garbage_bytes,
        kept.blob_garbage_bytes
    );
}
