//! `Options::rate_limiter`: every byte of every table a flush or a compaction writes goes
//! through the limiter (flushes at high priority, compactions at low), the database stays
//! correct under it, and writing more than the first burst waits for refills.

use std::sync::Arc;
use std::time::{Duration, Instant};

use siftdb::{Db, IoPriority, Options, RateLimiter};

fn key(i: u32) -> Vec<u8> {
    format!("key{:08}", i.wrapping_mul(2_654_435_761) % 1_000_000).into_bytes()
}

#[test]
fn rate_limiter_paces_every_flushed_and_compacted_byte() {
    let dir = siftdb_tests::temp_dir();
    // 8 MiB/s in 10 ms periods (80 KiB bursts): the ~2 MiB of tables below need ~25 refills.
    let limiter = Arc::new(RateLimiter::with_options(
        8 << 20,
        Duration::from_millis(10),
        4,
    ));
    let options = Options {
        write_buffer_size: 64 << 10,
        target_file_size_base: 64 << 10,
        max_bytes_for_level_base: 256 << 10,
        rate_limiter: Some(Arc::clone(&limiter)),
        ..Options::default()
    };
    let db = Db::open(dir.path(), options.clone()).unwrap();
    let started = Instant::now();
    for i in 0..20_000u32 {
        db.put(key(i), format!("value-{i:06}-{}", "x".repeat(40)))
            .unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compaction().unwrap();
    let elapsed = started.elapsed();
    let stats = db.stats();
    assert!(stats.compactions > 0, "{stats:?}");
    assert_eq!(
        limiter.total_bytes_through(IoPriority::High),
        stats.flush_bytes
    );
    assert_eq!(
        limiter.total_bytes_through(IoPriority::Low),
        stats.compaction_bytes_written
    );
    // A lower bound only: bytes beyond the first burst cannot pass before their refills (one
    // period of slack: the periods count from the limiter's making, before `started`).
    let paced = stats.flush_bytes + stats.compaction_bytes_written;
    let bursts = (paced / limiter.single_burst_bytes()) as u32;
    let floor = Duration::from_millis(10) * bursts.saturating_sub(2);
    assert!(
        elapsed >= floor,
        "{paced} bytes in {elapsed:?} (floor {floor:?})"
    );
    assert!(limiter.total_waits() > 0);
    for i in 0..20_000u32 {
        assert_eq!(
            db.get(key(i)).unwrap(),
            Some(format!("value-{i:06}-{}", "x".repeat(40)).into_bytes()),
            "key {i}"
        );
    }
    drop(db);
    // Reopened under the same limiter: everything is there.
    let db = Db::open(dir.path(), options).unwrap();
    assert!(db.get(key(19_999)).unwrap().is_some());
}
