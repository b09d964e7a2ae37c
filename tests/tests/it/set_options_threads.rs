//! `Db::set_options` with `max_background_compactions`: more compaction threads start at once,
//! and with fewer wanted no more than that many compactions run together. In a process of its
//! own (`siftdb_tests::own_process`): it counts the process's compaction threads (Linux:
//! `/proc/self/task/*/comm`), which other tests' databases would add to.

#![cfg(target_os = "linux")]

use siftdb::{Db, Options};

/// This process's threads whose name begins "siftdb-compact" (names are cut at 15 bytes).
fn compaction_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.starts_with("siftdb-compact"))
        .count()
}

/// Waits (at most 10 s) until [`compaction_threads`] is `n`: a thread names itself once it
/// runs, a moment after it is spawned.
fn expect_compaction_threads(n: usize) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while compaction_threads() != n {
        assert!(
            std::time::Instant::now() < deadline,
            "{} compaction threads, expected {n}",
            compaction_threads()
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

#[test]
fn more_compaction_threads_start_and_fewer_run_at_once() {
    let name = "more_compaction_threads_start_and_fewer_run_at_once";
    siftdb_tests::own_process::run_alone(module_path!(), name, || {
        let dir = siftdb_tests::temp_dir();
        let options = Options {
            max_background_compactions: 1,
            ..siftdb_tests::small_tree()
        };
        let db = Db::open(dir.path(), options).unwrap();
        expect_compaction_threads(1);
        db.set_options(&[("max_background_compactions", "6")])
            .unwrap();
        expect_compaction_threads(6);
        // Fewer wanted: the threads stay (idle), at most two compactions run together.
        db.set_options(&[("max_background_compactions", "2")])
            .unwrap();
        expect_compaction_threads(6);
        for i in 0..30_000u32 {
            db.put(siftdb_tests::scattered_key(i), [b'v'; 64]).unwrap();
        }
        db.wait_for_compaction().unwrap();
        let stats = db.stats();
        assert!(stats.compactions > 5, "{}", stats.compactions);
        assert!(
            stats.compactions_peak_concurrency <= 2,
            "{}",
            stats.compactions_peak_concurrency
        );
        db.close().unwrap();
        assert_eq!(compaction_threads(), 0, "joined at close");
    });
}
