//! Several background compaction threads (`Options::max_background_jobs`: one flush thread and
//! the rest compacting): compactions that share no file and write disjoint ranges run side by
//! side, and the tree they leave holds exactly what was written.

use siftdb::{Db, Options};

fn options(threads: usize) -> Options {
    Options {
        write_buffer_size: 16 << 10,
        target_file_size_base: 8 << 10,
        max_bytes_for_level_base: 32 << 10,
        max_bytes_for_level_multiplier: 3.0,
        level0_file_num_compaction_trigger: 2,
        max_background_jobs: threads + 1,
        ..Options::default()
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("k{:010}", i.wrapping_mul(2_654_435_761)).into_bytes()
}

fn value(i: u32, round: u32) -> Vec<u8> {
    let mut v = format!("{i}:{round}:").into_bytes();
    v.resize(40, b'.');
    v
}

#[test]
fn compactions_run_side_by_side_and_lose_nothing() {
    let keys = siftdb_tests::env_count("SIFTDB_CONCURRENT_COMPACTION_KEYS", 40_000) as u32;
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), options(3)).unwrap();
    // Two writers over disjoint halves, two rounds each: overwrites give compactions garbage to
    // drop while they run.
    std::thread::scope(|s| {
        for half in 0..2u32 {
            let db = db.clone();
            s.spawn(move || {
                for round in 0..2 {
                    for i in (half..keys).step_by(2) {
                        db.put(key(i), value(i, round)).unwrap();
                    }
                }
            });
        }
    });
    db.flush().unwrap();
    db.wait_for_compaction().unwrap();
    let stats = db.stats();
    assert!(stats.compactions > 0);
    assert!(
        (2..=3).contains(&stats.compactions_peak_concurrency),
        "peak concurrency {} with 3 threads ({} compactions)",
        stats.compactions_peak_concurrency,
        stats.compactions
    );
    for i in 0..keys {
        assert_eq!(db.get(key(i)).unwrap(), Some(value(i, 1)), "key {i}");
    }
    // Sorted levels stayed sorted and disjoint: a full scan sees every key once, in order.
    let mut seen = 0u32;
    let mut previous: Option<Vec<u8>> = None;
    for item in db.iter() {
        let (k, _) = item.unwrap();
        if let Some(p) = &previous {
            assert!(p < &k, "scan out of order");
        }
        previous = Some(k);
        seen += 1;
    }
    assert_eq!(seen, keys);
    // And after a reopen, with the manifest as the only record.
    drop(db);
    let db = Db::open(dir.path(), options(1)).unwrap();
    for i in (0..keys).step_by(7) {
        assert_eq!(
            db.get(key(i)).unwrap(),
            Some(value(i, 1)),
            "key {i} after reopen"
        );
    }
}

#[test]
fn one_thread_never_runs_two_compactions() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), options(1)).unwrap();
    for i in 0..20_000u32 {
        db.put(key(i), value(i, 0)).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compaction().unwrap();
    let stats = db.stats();
    assert!(stats.compactions > 0);
    assert_eq!(stats.compactions_peak_concurrency, 1);
}
