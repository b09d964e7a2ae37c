//! Each stall is counted under what it waited for (`Stats::stall_micros_*`), and the causes
//! add up to `stall_micros`: too many memtables (flushes behind), too many L0 tables
//! (compactions out of L0 behind), and the writes slowed down before the L0 stop.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use siftdb::fs::{FileSystem, RealFs};
use siftdb::{Db, Options, Stats};

/// The real file system with every table file's creation slowed: flushes and compactions fall
/// behind the writer.
fn slow_tables() -> Arc<dyn FileSystem> {
    Arc::new(siftdb_tests::CreateHookFs(|path: &Path| {
        if path.extension().is_some_and(|e| e == "sst") {
            std::thread::sleep(Duration::from_millis(30));
        }
        RealFs.create(path)
    }))
}

/// Writes until the writer has stalled and a few flushes are done (at most 400,000 keys), checks
/// a sample of the keys, and returns the statistics.
fn fill(options: Options) -> Stats {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), options).unwrap();
    let key = |i: u32| format!("key{:08}", i.wrapping_mul(2_654_435_761));
    let mut written = 0;
    while written < 400_000 {
        for i in written..written + 1_000 {
            db.put(key(i), [b'v'; 100]).unwrap();
        }
        written += 1_000;
        let stats = db.stats();
        if stats.stall_micros > 0 && stats.flushes >= 3 {
            break;
        }
    }
    for i in (0..written).step_by(101) {
        assert!(db.get(key(i)).unwrap().is_some());
    }
    db.stats()
}

fn causes_sum(s: &Stats) -> u64 {
    s.stall_micros_l0_files
        + s.stall_micros_memtables
        + s.stall_micros_memory_budget
        + s.stall_micros_l0_slowdown
}

#[test]
fn stalls_on_memtables_are_counted_as_such() {
    // L0 may grow without bound here: only the memtables can stall the writer.
    let stats = fill(Options {
        write_buffer_size: 64 << 10,
        max_write_buffer_number: 2,
        level0_stop_writes_trigger: 10_000,
        fs: slow_tables(),
        ..Options::default()
    });
    assert!(stats.stall_micros_memtables > 0, "{stats:?}");
    assert_eq!(stats.stall_micros_l0_files, 0);
    assert_eq!(stats.stall_micros_memory_budget, 0);
    assert_eq!(causes_sum(&stats), stats.stall_micros);
}

#[test]
fn stalls_on_l0_tables_are_counted_as_such() {
    // Many memtables may wait, few L0 tables: the writer stalls on L0.
    let stats = fill(Options {
        write_buffer_size: 64 << 10,
        max_write_buffer_number: 1_000,
        level0_file_num_compaction_trigger: 2,
        level0_stop_writes_trigger: 2,
        fs: slow_tables(),
        ..Options::default()
    });
    assert!(stats.stall_micros_l0_files > 0, "{stats:?}");
    assert_eq!(stats.stall_micros_memory_budget, 0);
    assert_eq!(causes_sum(&stats), stats.stall_micros);
}

#[test]
fn writes_slow_down_from_the_slowdown_trigger_and_never_stop_there() {
    // Compactions out of L0 fall behind; the stop is far away: from 2 L0 tables each write
    // group waits its bytes' time at `delayed_write_rate`, and no write stops.
    let stats = fill(Options {
        write_buffer_size: 64 << 10,
        max_write_buffer_number: 1_000,
        level0_file_num_compaction_trigger: 2,
        level0_slowdown_writes_trigger: 2,
        level0_stop_writes_trigger: 10_000,
        delayed_write_rate: 8 << 20,
        fs: slow_tables(),
        ..Options::default()
    });
    assert!(stats.stall_micros_l0_slowdown > 0, "{stats:?}");
    assert_eq!(stats.stall_micros_l0_files, 0);
    assert_eq!(stats.stall_micros_memory_budget, 0);
    assert_eq!(causes_sum(&stats), stats.stall_micros);
}

#[test]
fn no_write_slows_down_without_automatic_compactions_or_at_rate_zero() {
    for options in [
        Options {
            disable_auto_compactions: true,
            ..Options::default()
        },
        Options {
            delayed_write_rate: 0,
            ..Options::default()
        },
    ] {
        let dir = siftdb_tests::temp_dir();
        let options = Options {
            level0_file_num_compaction_trigger: 1,
            level0_slowdown_writes_trigger: 1,
            level0_stop_writes_trigger: 10_000,
            ..options
        };
        let db = Db::open(dir.path(), options).unwrap();
        for i in 0..3 {
            db.put(format!("k{i}"), "v").unwrap();
            db.flush().unwrap();
        }
        db.put("last", "v").unwrap();
        let stats = db.stats();
        assert_eq!(stats.stall_micros_l0_slowdown, 0, "{stats:?}");
    }
}
