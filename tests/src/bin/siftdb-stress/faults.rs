//! `--faults`: a thread that injects I/O faults into the in-memory file system (a failed call,
//! a failed sync that drops the file's unsynced pages, a full disk for a moment), and the
//! recovery of writers that meet them (`Db::resume`).

use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use siftdb::{Keyspace, WriteOptions};
use siftdb_tests::FaultFs;

use crate::ctx::{lock, Ctx};
use crate::ops::Worker;
use crate::stats::Stats;
use crate::values::{key_name, mix, SCRATCH_KEYSPACE};

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

/// The end of a round under `--faults` (no worker running, nothing injected): every keyspace
/// flushed and compactions waited for, so every memtable is empty; then a fault armed a few
/// calls ahead and puts until one fails (a failed WAL write with nothing in memory), the
/// database resumed, and a synced put. The caller then closes the database and opens it
/// again, which must succeed (siftdb before issue 60's fix 2 refused its log as corrupt).
/// Whether a put failed so.
pub fn fail_with_empty_memtables(ctx: &Ctx, rng: &mut StdRng) -> bool {
    let Some(fs) = &ctx.fault else {
        return false;
    };
    let mut w = Worker {
        ctx,
        rng: StdRng::seed_from_u64(rng.r#gen()),
    };
    for _ in 0..8 {
        if !flush_everything(&w) {
            return false;
        }
        fs.fail_call_in(w.rng.gen_range(0..3));
        let mut failed = false;
        for _ in 0..4 {
            if !put(&mut w, false, "put after a flush of every keyspace") {
                failed = true;
                break;
            }
        }
        disarm(fs);
        if failed {
            // `Worker::complete` resumed the database; now a synced put.
            put(&mut w, true, "synced put after resume");
            return true;
        }
    }
    false
}

/// Flushes every keyspace (the scratch one too, when it exists) and waits for compactions;
/// false when that failed (reported).
fn flush_everything(w: &Worker) -> bool {
    let ctx = w.ctx;
    let mut handles: Vec<&Keyspace> = ctx.ks.iter().collect();
    handles.extend([&ctx.bank, &ctx.excise, &ctx.claims]);
    let scratch = crate::setup::has_scratch(&ctx.db)
        .then(|| ctx.db.keyspace(SCRATCH_KEYSPACE).ok())
        .flatten();
    handles.extend(scratch.as_ref());
    for handle in handles {
        if let Err(e) = handle.flush() {
            w.failed("flush of every keyspace", "-", "-", &e, true);
            return false;
        }
    }
    if let Err(e) = ctx.db.wait_for_compaction() {
        w.failed("wait_for_compaction", "-", "-", &e, true);
        return false;
    }
    true
}

/// A put of a new value to a key of a value keyspace; false when it failed.
fn put(w: &mut Worker, sync: bool, op: &str) -> bool {
    let ctx = w.ctx;
    let ks = w.pick_value_ks();
    let key = w.pick_key();
    let _held = ctx.locks.lock(&[(ks, key)]);
    let state = w.new_value(ks);
    let (name, value) = (key_name(key), w.bytes_of(ks, key, state));
    let opts = WriteOptions { sync };
    w.write(op, &[(ks, key, state)], || {
        ctx.ks[ks].put_opt(&name, &value, &opts)
    })
}
