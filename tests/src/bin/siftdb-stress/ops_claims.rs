//! Claims: a lock-free workload (no stripe lock) in its own keyspace, "claims", where threads
//! race to claim fresh keys, each claim a read of the key that finds it absent followed by a
//! write of it, by one of three claimers:
//!
//! - an optimistic transaction: `get_for_update` (absent), a pause of up to 10 ms (one in
//!   two: claimers then overlap more often), a put, the commit;
//! - a pessimistic transaction: the same under the key's lock;
//! - an ingestion: a pessimistic transaction locks the key and reads it (absent), a file holding
//!   only the key is ingested while the lock is held, the transaction is rolled back.
//!
//! At most one claim of a key may succeed: a second one read the key absent before the first
//! wrote it, so its write must fail (a transaction's commit with `Conflict` — an ingestion is
//! a write for the conflict check — or an optimistic commit on a key a pessimistic one holds),
//! or it would overwrite the first. Each key's first acknowledged claim is kept; a second is a
//! mismatch, and (without `--faults`) a read of a claimed key must show its claimer's value.
//!
//! Keys are claimed in ascending order (`claim` and a 12-digit number), so an ingested file
//! lies above every table of the keyspace: it goes to the last level without a flush, and the
//! memtable keeps the history since the claimers' snapshots — the case where the conflict check
//! must see an ingested key without finding it in the memtables.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::Mutex;
use std::time::Duration;

use rand::Rng;
use siftdb::{Error, IngestOptions, SstFileWriter, TransactionMode, TransactionOptions};

use crate::ctx::lock;
use crate::ops::Worker;
use crate::stats::Stats;

/// The keyspace of the claims.
pub const CLAIMS_KEYSPACE: &str = "claims";
/// Claimed keys remembered (for the reads that check them), the newest.
const REMEMBERED: usize = 4096;

/// Key `k`.
fn key(k: u64) -> Vec<u8> {
    format!("claim{k:012}").into_bytes()
}

/// What the claimers did.
pub struct State {
    /// The key being claimed now (every key below is claimed, or given up after a failure).
    next: AtomicU64,
    /// Per recent key, the value of its acknowledged claim.
    won: Mutex<BTreeMap<u64, Vec<u8>>>,
    /// Names claimers' values apart.
    tags: AtomicU64,
}

impl State {
    /// Claims start past every key of the keyspace (`init` reads it).
    pub fn new() -> State {
        State {
            next: AtomicU64::new(0),
            won: Mutex::new(BTreeMap::new()),
            tags: AtomicU64::new(1),
        }
    }
}

/// At the start of a run (or a reopen): claims go on after the last key of the keyspace.
pub fn init(ks: &siftdb::Keyspace, state: &State, stats: &Stats) {
    match ks.iter().next_back() {
        Some(Ok((k, _))) => {
            let n = std::str::from_utf8(&k[5..])
                .ok()
                .and_then(|d| d.parse::<u64>().ok());
            state.next.store(n.map_or(0, |n| n + 1), SeqCst);
        }
        Some(Err(e)) => stats.mismatch(
            "claims init",
            CLAIMS_KEYSPACE,
            "-",
            "a read",
            &e.to_string(),
        ),
        None => {}
    }
}

/// How a claim ended.
enum Claim {
    /// The key was written (acknowledged).
    Won(Vec<u8>),
    /// The key was there already, or the claim's write failed as it may (a conflict, a lock
    /// timeout, a deadlock, an injected fault), or an error was reported.
    Lost,
}

fn retryable(e: &Error) -> bool {
    matches!(e, Error::Conflict | Error::LockTimeout | Error::Deadlock)
}

/// A claim of the current key by one of the three claimers, or (one in four) a check of a
/// recently claimed key.
pub fn claim(w: &mut Worker) {
    let ctx = w.ctx;
    let state = &ctx.claims_state;
    if w.rng.gen_ratio(1, 4) {
        return check_one(w);
    }
    let k = state.next.load(SeqCst);
    let tag = state.tags.fetch_add(1, SeqCst);
    let how = w.rng.gen_range(0..3);
    let op = [
        "claim (optimistic)",
        "claim (pessimistic)",
        "claim (ingestion)",
    ][how];
    let value = format!("{op} {tag}").into_bytes();
    let outcome = match how {
        0 | 1 => by_transaction(w, k, how == 1, &value),
        _ => by_ingestion(w, k, &value),
    };
    if let Claim::Won(value) = outcome {
        let mut won = lock(&state.won);
        if let Some(first) = won.get(&k) {
            let name = String::from_utf8_lossy(&key(k)).into_owned();
            let want = format!(
                "one claim; the first was \"{}\"",
                String::from_utf8_lossy(first)
            );
            let got = format!("a second: \"{}\"", String::from_utf8_lossy(&value));
            ctx.stats.mismatch(op, CLAIMS_KEYSPACE, &name, &want, &got);
        } else {
            won.insert(k, value);
            while won.len() > REMEMBERED {
                won.pop_first();
            }
        }
    }
    // The key is taken (by this claim or another): move on.
    let _ = state.next.compare_exchange(k, k + 1, SeqCst, SeqCst);
}

fn txn_options(pessimistic: bool, timeout_ms: u64) -> TransactionOptions {
    TransactionOptions {
        mode: if pessimistic {
            TransactionMode::Pessimistic
        } else {
            TransactionMode::Optimistic
        },
        lock_timeout: Duration::from_millis(timeout_ms),
        deadlock_detect: true,
        set_snapshot: false,
    }
}

/// The key's read for update: whether it is absent; `None` when the claim ends (an error,
/// reported unless it is a conflict or an injected fault).
fn absent_for_update(w: &Worker, txn: &mut siftdb::Transaction, op: &str, k: u64) -> Option<bool> {
    match txn.get_for_update_in(&w.ctx.claims, key(k)) {
        Ok(v) => Some(v.is_none()),
        Err(e) if retryable(&e) => None,
        Err(e) => {
            let name = String::from_utf8_lossy(&key(k)).into_owned();
            w.failed(op, CLAIMS_KEYSPACE, &name, &e, false);
            None
        }
    }
}

fn by_transaction(w: &mut Worker, k: u64, pessimistic: bool, value: &[u8]) -> Claim {
    let ctx = w.ctx;
    let op = if pessimistic {
        "claim (pessimistic)"
    } else {
        "claim (optimistic)"
    };
    let mut txn = ctx.db.transaction_opt(&txn_options(pessimistic, 100));
    if absent_for_update(w, &mut txn, op, k) != Some(true) {
        return Claim::Lost;
    }
    if w.rng.gen_bool(0.5) {
        std::thread::sleep(Duration::from_micros(w.rng.gen_range(0..10_000)));
    }
    let wopts = w.write_options();
    let done = txn
        .put_in(&ctx.claims, key(k), value)
        .and_then(|()| txn.commit_opt(&wopts));
    match done {
        Ok(()) => Claim::Won(value.to_vec()),
        Err(e) if retryable(&e) => Claim::Lost,
        Err(e) => {
            let name = String::from_utf8_lossy(&key(k)).into_owned();
            w.failed(&format!("{op} commit"), CLAIMS_KEYSPACE, &name, &e, true);
            Claim::Lost
        }
    }
}

fn by_ingestion(w: &mut Worker, k: u64, value: &[u8]) -> Claim {
    let ctx = w.ctx;
    let op = "claim (ingestion)";
    let name = String::from_utf8_lossy(&key(k)).into_owned();
    let mut txn = ctx.db.transaction_opt(&txn_options(true, 300));
    if absent_for_update(w, &mut txn, op, k) != Some(true) {
        return Claim::Lost;
    }
    let path = ctx.scratch_path("claim.sst");
    let built = SstFileWriter::create(&path, &ctx.options).and_then(|mut writer| {
        writer.put(key(k), value)?;
        writer.finish().map(|_| ())
    });
    if let Err(e) = built {
        ctx.remove_tree(&path);
        w.failed("claim SstFileWriter", CLAIMS_KEYSPACE, &name, &e, false);
        return Claim::Lost;
    }
    let opts = IngestOptions {
        move_files: w.rng.gen_bool(0.5),
        ..IngestOptions::default()
    };
    let ingested = ctx.claims.ingest_external_file(&[&path], &opts);
    ctx.remove_tree(&path);
    let outcome = match ingested {
        Ok(()) => Claim::Won(value.to_vec()),
        Err(e) => {
            w.failed(op, CLAIMS_KEYSPACE, &name, &e, true);
            Claim::Lost
        }
    };
    if let Err(e) = txn.rollback() {
        w.failed("claim rollback", CLAIMS_KEYSPACE, &name, &e, false);
    }
    outcome
}

/// A read of a recently claimed key: its claimer's value (not checked under `--faults`, where a
/// claim whose write failed may still have been made first).
fn check_one(w: &mut Worker) {
    let ctx = w.ctx;
    if ctx.fault.is_some() {
        return;
    }
    let picked = {
        let won = lock(&ctx.claims_state.won);
        let n = won.len();
        if n == 0 {
            return;
        }
        let i = w.rng.gen_range(0..n);
        won.iter().nth(i).map(|(&k, v)| (k, v.clone()))
    };
    let Some((k, want)) = picked else {
        return;
    };
    let name = String::from_utf8_lossy(&key(k)).into_owned();
    ctx.stats.verifications.fetch_add(1, SeqCst);
    match ctx.claims.get(key(k)) {
        Ok(Some(v)) if v == want => {}
        Ok(got) => {
            let got = got.map_or("absent".to_string(), |v| {
                format!("\"{}\"", String::from_utf8_lossy(&v))
            });
            let want = format!("\"{}\"", String::from_utf8_lossy(&want));
            ctx.stats
                .mismatch("claimed key get", CLAIMS_KEYSPACE, &name, &want, &got);
        }
        Err(e) => w
            .checker()
            .error("claimed key get", CLAIMS_KEYSPACE, &name, &e),
    }
}

/// Every remembered claim read back (no claimer running; not under `--faults`, see
/// `check_one`).
pub fn check_all(stats: &Stats, ks: &siftdb::Keyspace, state: &State, op: &str, faults: bool) {
    if faults {
        return;
    }
    let won = lock(&state.won);
    for (&k, want) in won.iter() {
        stats.verifications.fetch_add(1, SeqCst);
        let name = String::from_utf8_lossy(&key(k)).into_owned();
        match ks.get(key(k)) {
            Ok(Some(v)) if v == *want => {}
            Ok(got) => {
                let got = got.map_or("absent".to_string(), |v| {
                    format!("\"{}\"", String::from_utf8_lossy(&v))
                });
                let want = format!("\"{}\"", String::from_utf8_lossy(want));
                return stats.mismatch(op, CLAIMS_KEYSPACE, &name, &want, &got);
            }
            Err(e) => return stats.mismatch(op, CLAIMS_KEYSPACE, &name, "a read", &e.to_string()),
        }
    }
}
