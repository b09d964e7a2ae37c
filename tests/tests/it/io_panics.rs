//! A file system that panics: make the Nth file-system call panic, for every N of a reference
//! workload (the I/O-fault sweep's). A panic on the caller's thread reaches that caller; one in
//! a background job becomes the background error. After each: every call and the drop of the
//! `Db` return within a bound, and a reopen recovers every acknowledged write.

use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use siftdb::{Db, Options, WriteBatch};
use siftdb_tests::{quiet_injected_panics, within, FaultFs};

fn options(fs: &FaultFs) -> Options {
    siftdb_tests::small_tree_options(fs)
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

/// The reference workload; `acked` counts the keys acknowledged so far (the workload stops at
/// the first error, or unwinds at a panic).
fn workload(fs: &FaultFs, dir: &Path, acked: &AtomicU32) {
    let Ok(db) = Db::open(dir, options(fs)) else {
        return;
    };
    for i in 0..300u32 {
        let mut b = WriteBatch::new();
        b.put(key(i), [b'v'; 40]);
        if db.write(b).is_err() {
            return;
        }
        acked.store(i + 1, Ordering::SeqCst);
        if i % 100 == 99 && db.flush().is_err() {
            return;
        }
    }
    let _ = db.compact_range(None, None);
    let _ = db.wait_for_compaction();
    let _ = db.get(key(7));
}

#[test]
fn every_panicking_call_hangs_nothing_and_loses_nothing() {
    quiet_injected_panics();
    let clean = FaultFs::new();
    let acked = AtomicU32::new(0);
    workload(&clean, Path::new("/db"), &acked);
    assert_eq!(acked.load(Ordering::SeqCst), 300);
    let total = clean.calls();
    let step = siftdb_tests::env_count("SIFTDB_IO_PANIC_STEP", 1).max(1);
    let (mut injected, mut reached_caller) = (0, 0);
    for n in (0..total).step_by(step as usize) {
        let fs = FaultFs::new();
        fs.panic_call_in(n);
        let acked = Arc::new(AtomicU32::new(0));
        let (run_fs, run_acked) = (fs.clone(), Arc::clone(&acked));
        let outcome = within(
            Duration::from_secs(30),
            &format!("call {n}: the workload"),
            move || workload(&run_fs, Path::new("/db"), &run_acked),
        );
        injected += 1;
        reached_caller += usize::from(outcome.is_err());
        // No power loss: the panicking call simply did not complete.
        fs.restart_without_loss();
        let db = Db::open(Path::new("/db"), options(&fs))
            .unwrap_or_else(|e| panic!("call {n}: reopen failed: {e}"));
        for i in 0..acked.load(Ordering::SeqCst) {
            assert_eq!(
                db.get(key(i)).unwrap(),
                Some(vec![b'v'; 40]),
                "call {n}: key {i} lost"
            );
        }
    }
    println!(
        "file-system panics injected: {injected} (of {total} calls; {reached_caller} on the \
         caller's thread, the rest in background jobs), hangs: 0, lost writes: 0"
    );
}
