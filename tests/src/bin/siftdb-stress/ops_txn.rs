//! Transactions: a read-modify-write of 1 to 4 keys across the keyspaces, optimistic or
//! pessimistic, with savepoints, reads of the transaction's own writes, and (optimistic, one
//! in eight) a plain write of one of its keys before the commit, which must make the commit
//! fail with a conflict.

use std::time::Duration;

use rand::Rng;
use siftdb::{Error, Transaction, TransactionMode, TransactionOptions};

use crate::expected::Allowed;
use crate::ops::{Change, Worker};
use crate::values::{key_name, COUNTERS, KEYSPACES};

/// How an attempt ended.
enum Outcome {
    Done,
    Retry,
}

/// A transaction over 1 to 4 locked keys, retried on conflicts, lock timeouts and deadlocks.
pub fn transaction(w: &mut Worker, pessimistic: bool) {
    let ctx = w.ctx;
    let n = w.rng.gen_range(1..=4);
    let keys = w.pick_keys(n);
    let _held = ctx.locks.lock(&keys);
    let mut interfere = !pessimistic && w.rng.gen_ratio(1, 8);
    for _ in 0..10 {
        match attempt(w, &keys, pessimistic, interfere) {
            Outcome::Done => return,
            Outcome::Retry => {
                interfere = false;
                ctx.stats
                    .retries
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }
}

fn is_retryable(e: &Error) -> bool {
    matches!(e, Error::Conflict | Error::LockTimeout | Error::Deadlock)
}

fn attempt(w: &mut Worker, keys: &[(usize, u32)], pessimistic: bool, interfere: bool) -> Outcome {
    let ctx = w.ctx;
    let op = if pessimistic {
        "pessimistic transaction"
    } else {
        "optimistic transaction"
    };
    let opts = TransactionOptions {
        mode: if pessimistic {
            TransactionMode::Pessimistic
        } else {
            TransactionMode::Optimistic
        },
        lock_timeout: Duration::from_millis(200),
        deadlock_detect: true,
        set_snapshot: pessimistic && w.rng.gen_ratio(1, 3),
    };
    let mut txn = ctx.db.transaction_opt(&opts);
    for &(ks, key) in keys {
        match txn.get_for_update_in(&ctx.ks[ks], key_name(key)) {
            Ok(v) => w.checker().value(
                &format!("{op} get_for_update"),
                ks,
                key,
                &ctx.exp.allowed(ks, key),
                v.as_deref(),
            ),
            Err(e) if is_retryable(&e) => return Outcome::Retry,
            Err(e) => return fail(w, op, ks, key, &e),
        }
    }
    let changes = match stage_writes(w, &mut txn, keys) {
        Ok(changes) => changes,
        Err(e) if is_retryable(&e) => return Outcome::Retry,
        Err(e) => return fail(w, op, keys[0].0, keys[0].1, &e),
    };
    for &(ks, key, state) in &changes {
        let got = txn.get_in(&ctx.ks[ks], key_name(key));
        match got {
            Ok(v) => w.checker().value(
                &format!("{op} read of its own write"),
                ks,
                key,
                &Allowed::exactly(state),
                v.as_deref(),
            ),
            Err(e) => return fail(w, op, ks, key, &e),
        }
    }
    if interfere {
        let (ks, key) = keys[0];
        let state = w.new_value(ks);
        let (name, value) = (key_name(key), w.bytes_of(ks, key, state));
        if !w.write("put beside a transaction", &[(ks, key, state)], || {
            ctx.ks[ks].put(&name, &value)
        }) {
            return Outcome::Done;
        }
    }
    commit(w, op, txn, &changes, interfere)
}

/// Stages a write of each key (put, delete, or a merge into a counter), and sometimes a write
/// rolled back to a savepoint; returns the states the commit writes.
fn stage_writes(
    w: &mut Worker,
    txn: &mut Transaction,
    keys: &[(usize, u32)],
) -> siftdb::Result<Vec<Change>> {
    let ctx = w.ctx;
    let mut changes = Vec::new();
    for &(ks, key) in keys {
        let (handle, name) = (&ctx.ks[ks], key_name(key));
        let roll = w.rng.gen_range(0..10);
        let base = (ks == COUNTERS)
            .then(|| ctx.exp.counter_base(key))
            .flatten();
        if roll < 2 {
            txn.delete_in(handle, &name)?;
            changes.push((ks, key, w.new_deletion()));
        } else if let (true, Some(base)) = (roll < 6, base) {
            let delta = w.rng.gen_range(1..=16u64);
            txn.merge_in(handle, &name, delta.to_le_bytes())?;
            changes.push((ks, key, base + delta));
        } else {
            let state = w.new_value(ks);
            txn.put_in(handle, &name, w.bytes_of(ks, key, state))?;
            changes.push((ks, key, state));
        }
    }
    if w.rng.gen_ratio(1, 4) {
        txn.set_savepoint()?;
        let (ks, key) = keys[0];
        let junk = w.new_value(ks);
        txn.put_in(&ctx.ks[ks], key_name(key), w.bytes_of(ks, key, junk))?;
        txn.rollback_to_savepoint()?;
    }
    Ok(changes)
}

fn commit(
    w: &mut Worker,
    op: &str,
    txn: Transaction,
    changes: &[Change],
    interfered: bool,
) -> Outcome {
    let ctx = w.ctx;
    let opts = w.write_options();
    w.begin(changes);
    match txn.commit_opt(&opts) {
        Ok(()) => {
            w.complete(op, changes, Ok(()));
            if interfered {
                let (ks, key, _) = changes[0];
                let name = String::from_utf8_lossy(&key_name(key)).into_owned();
                ctx.stats.mismatch(
                    op,
                    KEYSPACES[ks],
                    &name,
                    "Error::Conflict (the key was written after the snapshot)",
                    "the commit succeeded",
                );
            }
            Outcome::Done
        }
        Err(Error::Conflict) => {
            for &(ks, key, _) in changes {
                ctx.exp.abandon(ks, key);
            }
            if interfered {
                ctx.stats
                    .forced_conflicts
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            Outcome::Retry
        }
        Err(e) => {
            w.complete(op, changes, Err(e));
            Outcome::Done
        }
    }
}

fn fail(w: &Worker, op: &str, ks: usize, key: u32, e: &Error) -> Outcome {
    let name = String::from_utf8_lossy(&key_name(key)).into_owned();
    w.failed(op, KEYSPACES[ks], &name, e, false);
    Outcome::Done
}
