//! I/O faults: fail the Nth file-system call, for every N of a reference workload. Each failure
//! must surface as an `Err` (never a panic), and reopening afterwards must recover every
//! acknowledged write.

use std::path::Path;

use siftdb::{Db, Options, WriteBatch};
use siftdb_tests::FaultFs;

fn options(fs: &FaultFs) -> Options {
    siftdb_tests::small_tree_options(fs)
}

/// The same tree with compactions split into up to three key ranges merged on threads of their
/// own, and table writes paced by a rate limiter: a failed call lands in any range. Its values
/// live in blob files: failed calls land in blob files' creation, writes, syncs, opens, reads
/// and deletions too. Writeback is started every 2 KiB of tables, blob files and WALs, so
/// failed calls land in those starts as well.
fn split_options(fs: &FaultFs) -> Options {
    Options {
        max_subcompactions: 3,
        rate_limiter: Some(std::sync::Arc::new(siftdb::RateLimiter::new(64 << 20))),
        enable_blob_files: true,
        min_blob_size: 16,
        bytes_per_sync: 2048,
        wal_bytes_per_sync: 2048,
        ..siftdb_tests::small_tree_options(fs)
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

/// The reference workload; returns how many keys were acknowledged before the first error,
/// and how many key ranges split compactions merged.
fn workload(fs: &FaultFs, dir: &Path, options: fn(&FaultFs) -> Options) -> (u32, u64) {
    let Ok(db) = Db::open(dir, options(fs)) else {
        return (0, 0);
    };
    let mut acked = 0;
    for i in 0..300u32 {
        let mut b = WriteBatch::new();
        b.put(key(i), [b'v'; 40]);
        if db.write(b).is_err() {
            return (acked, 0);
        }
        acked = i + 1;
        if i % 100 == 99 && db.flush().is_err() {
            return (acked, 0);
        }
    }
    let _ = db.compact_range(None, None);
    let _ = db.get(key(7));
    (acked, db.stats().subcompactions)
}

#[test]
fn every_failed_call_is_an_error_and_loses_nothing() {
    every_failed_call_with(options, false);
}

#[test]
fn every_failed_call_in_split_compactions_is_an_error_and_loses_nothing() {
    every_failed_call_with(split_options, true);
}

/// Fails each call of the reference workload in turn (under `options`) and checks the reopen.
fn every_failed_call_with(options: fn(&FaultFs) -> Options, splits: bool) {
    // Count the calls of a clean run.
    let clean = FaultFs::new();
    let (acked, ranges) = workload(&clean, Path::new("/db"), options);
    assert_eq!(acked, 300);
    assert_eq!(
        ranges > 0,
        splits,
        "{ranges} key ranges merged by split compactions"
    );
    assert_eq!(
        clean.writebacks() > 0,
        splits,
        "{} writebacks started",
        clean.writebacks()
    );
    let total = clean.calls();
    let step = siftdb_tests::env_count("SIFTDB_IO_FAULT_STEP", 1).max(1);
    let mut injected = 0;
    for n in (0..total).step_by(step as usize) {
        let fs = FaultFs::new();
        let dir = Path::new("/db");
        fs.fail_call_in(n);
        let (acked, _) = workload(&fs, dir, options);
        injected += 1;
        // No power loss here: the failed call simply failed. Reopen and check.
        fs.restart_without_loss();
        let db =
            Db::open(dir, options(&fs)).unwrap_or_else(|e| panic!("call {n}: reopen failed: {e}"));
        for i in 0..acked {
            assert_eq!(
                db.get(key(i)).unwrap(),
                Some(vec![b'v'; 40]),
                "call {n}: key {i} lost"
            );
        }
    }
    println!("I/O faults injected: {injected} (of {total} calls), panics: 0, lost writes: 0");
}
