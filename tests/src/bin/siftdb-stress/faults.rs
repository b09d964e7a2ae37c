//! `--faults`: a thread that injects I/O faults into the in-memory file system (a failed call,
//! a failed sync that drops the file's unsynced pages, a full disk for a moment), and the
//! recovery of writers that meet them (`Db::resume`).

use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use siftdb_tests::FaultFs;

use crate::ctx::{lock, Ctx};
use crate::stats::Stats;
use crate::values::mix;

/// Injects a fault every 20 to 200 ms until the run stops.
pub fn inject(fs: &FaultFs, stats: &Stats, done: &std::sync::atomic::AtomicBool) {
    let mut rng = StdRng::seed_from_u64(mix(stats.seed ^ 0xfa17));
    while !done.load(Relaxed) {
        std::thread::sleep(Duration::from_millis(rng.gen_range(20..200)));
        match rng.gen_range(0..3) {
            0 => fs.fail_call_in(rng.gen_range(0..2000)),
            1 => fs.fail_sync_in(rng.gen_range(0..10)),
            _ => {
                fs.set_space_limit(Some(fs.used_bytes() + rng.gen_range(0..(1 << 20))));
                std::thread::sleep(Duration::from_millis(rng.gen_range(50..300)));
                fs.set_space_limit(None);
            }
        }
        stats.faults.fetch_add(1, Relaxed);
    }
}

/// Stops injecting: no failure pending, no space limit.
pub fn disarm(fs: &FaultFs) {
    fs.fail_call_in(u64::MAX);
    fs.fail_sync_in(u64::MAX);
    fs.set_space_limit(None);
}

/// After a failed write: resumes the database (one thread at a time), retrying while the
/// fault lasts (a full disk) for up to 30 s; a database that never resumes is a failure.
pub fn recover(ctx: &Ctx) {
    let _one = lock(&ctx.resume_lock);
    let mut last = None;
    for _ in 0..3000 {
        match ctx.db.resume() {
            Ok(()) => {
                ctx.stats.resumes.fetch_add(1, Relaxed);
                return;
            }
            Err(e) => last = Some(e),
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let what = format!(
        "error: {}",
        last.map_or_else(String::new, |e| e.to_string())
    );
    ctx.stats.mismatch(
        "resume",
        "-",
        "-",
        "writes resumed once the fault is gone",
        &what,
    );
}
