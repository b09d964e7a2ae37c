//! The bank: a lock-free workload (no stripe lock) of `ACCOUNTS` accounts in their own
//! keyspace, "bank", each an 8-byte LE balance. Money only moves, so every consistent view of
//! the accounts sums to `TOTAL`:
//!
//! - a transfer reads two accounts with `get_for_update` in an optimistic or a pessimistic
//!   transaction (both kinds at once on the same keys), writes both, commits, and retries on
//!   `Conflict`, `LockTimeout` and `Deadlock`;
//! - an ingestion moves money by a table file: a pessimistic transaction locks both accounts
//!   (`get_for_update` reads their newest balances under the locks), a file rewrites the two
//!   with the same sum, it is ingested while the locks are held, and the transaction is rolled
//!   back. No transaction can write either account meanwhile (a pessimistic one waits for the
//!   locks, an optimistic commit fails on a locked key), and a transaction that read one of
//!   them before the ingestion must fail its commit (an ingestion is a write);
//! - an audit sums every account through a snapshot or an iterator (one point in time): it
//!   must be `TOTAL`, every account present.
//!
//! Nothing else writes the keyspace. A write whose outcome is unknown (under `--faults`) is
//! still all or nothing (a batch, a file), so the sum holds whatever it did.

use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use rand::Rng;
use siftdb::{
    Error, IngestOptions, Keyspace, SstFileWriter, Transaction, TransactionMode,
    TransactionOptions, WriteBatch, WriteOptions,
};

use crate::ops::Worker;
use crate::stats::Stats;

/// The bank's keyspace.
pub const BANK_KEYSPACE: &str = "bank";
/// Accounts.
pub const ACCOUNTS: u32 = 16;
/// Each account's balance at the start.
pub const INITIAL: u64 = 1000;
/// The sum of every balance, always.
pub const TOTAL: u64 = ACCOUNTS as u64 * INITIAL;

/// The key of account `i`.
pub fn account(i: u32) -> Vec<u8> {
    format!("acct{i:04}").into_bytes()
}

fn balance(v: &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(v.try_into().ok()?))
}

/// At the start of a run (or a reopen): writes the initial balances when no account exists
/// (one batch), else checks every account and the sum.
pub fn init(db: &siftdb::Db, bank: &Keyspace, stats: &Stats) {
    let read: siftdb::Result<Vec<Option<Vec<u8>>>> =
        (0..ACCOUNTS).map(|i| bank.get(account(i))).collect();
    match read {
        Ok(got) if got.iter().all(Option::is_none) => {
            let mut batch = WriteBatch::new();
            for i in 0..ACCOUNTS {
                batch.put_in(bank, account(i), INITIAL.to_le_bytes());
            }
            if let Err(e) = db.write_opt(batch, &WriteOptions { sync: true }) {
                stats.mismatch("bank init", BANK_KEYSPACE, "-", "success", &e.to_string());
            }
        }
        Ok(got) => {
            let entries: Vec<(Vec<u8>, Vec<u8>)> = got
                .into_iter()
                .enumerate()
                .filter_map(|(i, v)| v.map(|v| (account(i as u32), v)))
                .collect();
            check_sum(stats, "bank check at open", &entries);
        }
        Err(e) => stats.mismatch("bank init", BANK_KEYSPACE, "-", "a read", &e.to_string()),
    }
}

/// Checks that `entries` (key, balance) are every account once, in order, summing to `TOTAL`.
pub fn check_sum(stats: &Stats, op: &str, entries: &[(Vec<u8>, Vec<u8>)]) {
    stats.verifications.fetch_add(1, Relaxed);
    let keys_ok = entries.len() == ACCOUNTS as usize
        && entries
            .iter()
            .enumerate()
            .all(|(i, (k, _))| *k == account(i as u32));
    let balances: Option<Vec<u64>> = entries.iter().map(|(_, v)| balance(v)).collect();
    let sum = balances
        .as_ref()
        .map(|b| b.iter().fold(0u64, |s, &x| s.wrapping_add(x)));
    if !keys_ok || sum != Some(TOTAL) {
        let shown: Vec<String> = entries
            .iter()
            .map(|(k, v)| match balance(v) {
                Some(b) => format!("{}={b}", String::from_utf8_lossy(k)),
                None => format!("{}=<{} bytes>", String::from_utf8_lossy(k), v.len()),
            })
            .collect();
        stats.mismatch(
            op,
            BANK_KEYSPACE,
            "(all accounts)",
            &format!("{ACCOUNTS} accounts summing to {TOTAL}"),
            &format!(
                "{} accounts, sum {sum:?}: {}",
                entries.len(),
                shown.join(" ")
            ),
        );
    }
}

/// The whole bank read with `get` (no writer running): every account, summing to `TOTAL`.
pub fn check_all(stats: &Stats, bank: &Keyspace, op: &str, faults: bool) {
    let mut entries = Vec::new();
    for i in 0..ACCOUNTS {
        match bank.get(account(i)) {
            Ok(Some(v)) => entries.push((account(i), v)),
            Ok(None) => {}
            Err(e) if faults && crate::ops::is_fault(&e) => {
                stats.read_errors.fetch_add(1, Relaxed);
                return;
            }
            Err(e) => return stats.mismatch(op, BANK_KEYSPACE, "-", "a read", &e.to_string()),
        }
    }
    check_sum(stats, op, &entries);
}

/// Accounts and their balances, as a read returned them.
type Entries = siftdb::Result<Vec<(Vec<u8>, Vec<u8>)>>;

/// How an attempt ended.
enum Outcome {
    /// Committed, rolled back as planned, or a failure already reported.
    Done,
    /// A conflict, lock timeout or deadlock: try again.
    Retry,
}

fn retryable(e: &Error) -> bool {
    matches!(e, Error::Conflict | Error::LockTimeout | Error::Deadlock)
}

fn txn_options(w: &mut Worker, pessimistic: bool) -> TransactionOptions {
    TransactionOptions {
        mode: if pessimistic {
            TransactionMode::Pessimistic
        } else {
            TransactionMode::Optimistic
        },
        lock_timeout: Duration::from_millis(100),
        deadlock_detect: true,
        set_snapshot: pessimistic && w.rng.gen_ratio(1, 3),
    }
}

/// Reads account `i` for update: its balance, or how the attempt ends.
fn read_for_update(w: &Worker, txn: &mut Transaction, op: &str, i: u32) -> Result<u64, Outcome> {
    let ctx = w.ctx;
    let name = String::from_utf8_lossy(&account(i)).into_owned();
    match txn.get_for_update_in(&ctx.bank, account(i)) {
        Ok(Some(v)) => match balance(&v) {
            Some(b) => Ok(b),
            None => {
                let what = format!("{} bytes", v.len());
                ctx.stats
                    .mismatch(op, BANK_KEYSPACE, &name, "an 8-byte balance", &what);
                Err(Outcome::Done)
            }
        },
        Ok(None) => {
            ctx.stats
                .mismatch(op, BANK_KEYSPACE, &name, "a balance", "absent");
            Err(Outcome::Done)
        }
        Err(e) if retryable(&e) => Err(Outcome::Retry),
        Err(e) => {
            w.failed(op, BANK_KEYSPACE, &name, &e, false);
            Err(Outcome::Done)
        }
    }
}

/// Two distinct accounts.
fn two_accounts(w: &mut Worker) -> (u32, u32) {
    let from = w.rng.gen_range(0..ACCOUNTS);
    let to = (from + w.rng.gen_range(1..ACCOUNTS)) % ACCOUNTS;
    (from, to)
}

fn retry_loop(w: &mut Worker, mut attempt: impl FnMut(&mut Worker) -> Outcome) {
    for _ in 0..20 {
        match attempt(w) {
            Outcome::Done => return,
            Outcome::Retry => {
                w.ctx.stats.retries.fetch_add(1, Relaxed);
            }
        }
    }
}

/// A transfer of 0 to 100 between two accounts, optimistic or pessimistic (one in eight
/// reading a third account for update too, not written: an optimistic commit then also
/// validates a key it only read).
pub fn transfer(w: &mut Worker) {
    let (from, to) = two_accounts(w);
    let pessimistic = w.rng.gen_bool(0.5);
    let third = w
        .rng
        .gen_ratio(1, 8)
        .then(|| w.rng.gen_range(0..ACCOUNTS))
        .filter(|&t| t != from && t != to);
    retry_loop(w, |w| transfer_attempt(w, from, to, third, pessimistic));
}

fn transfer_attempt(
    w: &mut Worker,
    from: u32,
    to: u32,
    third: Option<u32>,
    pessimistic: bool,
) -> Outcome {
    let ctx = w.ctx;
    let op = if pessimistic {
        "bank transfer (pessimistic)"
    } else {
        "bank transfer (optimistic)"
    };
    let opts = txn_options(w, pessimistic);
    let mut txn = ctx.db.transaction_opt(&opts);
    // Either order: pessimistic transfers in opposite orders may deadlock.
    let first_from = w.rng.gen_bool(0.5);
    let order = if first_from { [from, to] } else { [to, from] };
    let mut read = [0u64; 2];
    for (slot, &i) in order.iter().enumerate() {
        match read_for_update(w, &mut txn, op, i) {
            Ok(b) => read[slot] = b,
            Err(outcome) => return outcome,
        }
    }
    if let Some(t) = third
        && let Err(outcome) = read_for_update(w, &mut txn, op, t)
    {
        return outcome;
    }
    let (a, b) = if first_from {
        (read[0], read[1])
    } else {
        (read[1], read[0])
    };
    let amount = w.rng.gen_range(0..=a.min(100));
    let staged = txn
        .put_in(&ctx.bank, account(from), (a - amount).to_le_bytes())
        .and_then(|()| txn.put_in(&ctx.bank, account(to), (b + amount).to_le_bytes()));
    if let Err(e) = staged {
        if retryable(&e) {
            return Outcome::Retry;
        }
        w.failed(op, BANK_KEYSPACE, "-", &e, false);
        return Outcome::Done;
    }
    let wopts = w.write_options();
    match txn.commit_opt(&wopts) {
        Ok(()) => Outcome::Done,
        Err(e) if retryable(&e) => Outcome::Retry,
        Err(e) => {
            w.failed(&format!("{op} commit"), BANK_KEYSPACE, "-", &e, true);
            Outcome::Done
        }
    }
}

/// Moves money between two accounts by ingesting a file that rewrites both balances with the
/// same sum, while a pessimistic transaction holds both accounts' locks (rolled back after).
pub fn ingest_move(w: &mut Worker) {
    let (x, y) = two_accounts(w);
    retry_loop(w, |w| ingest_attempt(w, x.min(y), x.max(y)));
}

fn ingest_attempt(w: &mut Worker, lo: u32, hi: u32) -> Outcome {
    let ctx = w.ctx;
    let op = "bank ingestion";
    let mut opts = txn_options(w, true);
    opts.lock_timeout = Duration::from_millis(300);
    let mut txn = ctx.db.transaction_opt(&opts);
    let a = match read_for_update(w, &mut txn, op, lo) {
        Ok(b) => b,
        Err(outcome) => return outcome,
    };
    let b = match read_for_update(w, &mut txn, op, hi) {
        Ok(b) => b,
        Err(outcome) => return outcome,
    };
    let sum = a + b;
    let new_a = w.rng.gen_range(0..=sum);
    let path = ctx.scratch_path("bank.sst");
    let built = SstFileWriter::create(&path, &ctx.options).and_then(|mut writer| {
        writer.put(account(lo), new_a.to_le_bytes())?;
        writer.put(account(hi), (sum - new_a).to_le_bytes())?;
        writer.finish().map(|_| ())
    });
    if let Err(e) = built {
        ctx.remove_tree(&path);
        w.failed("bank SstFileWriter", BANK_KEYSPACE, "-", &e, false);
        return Outcome::Done;
    }
    let ingest = IngestOptions {
        move_files: w.rng.gen_bool(0.5),
        ..IngestOptions::default()
    };
    let ingested = ctx.bank.ingest_external_file(&[&path], &ingest);
    ctx.remove_tree(&path);
    if let Err(e) = ingested {
        w.failed(op, BANK_KEYSPACE, "-", &e, true);
    }
    if let Err(e) = txn.rollback() {
        w.failed("bank ingestion rollback", BANK_KEYSPACE, "-", &e, false);
    }
    Outcome::Done
}

/// Sums every account at one point in time: gets through a snapshot, an iterator, or an
/// iterator of a snapshot.
pub fn audit(w: &mut Worker) {
    let ctx = w.ctx;
    let (op, entries): (&str, Entries) = match w.rng.gen_range(0..3) {
        0 => {
            let snap = ctx.db.snapshot();
            let got: Entries = (0..ACCOUNTS)
                .filter_map(|i| match snap.get_in(&ctx.bank, &account(i)) {
                    Ok(v) => v.map(|v| Ok((account(i), v))),
                    Err(e) => Some(Err(e)),
                })
                .collect();
            ("bank audit (snapshot gets)", got)
        }
        1 => ("bank audit (iterator)", ctx.bank.iter().collect()),
        _ => {
            let snap = ctx.db.snapshot();
            let got = snap.iter_in(&ctx.bank).collect();
            ("bank audit (snapshot iterator)", got)
        }
    };
    match entries {
        Ok(entries) => check_sum(ctx.stats, op, &entries),
        Err(e) => w.checker().error(op, BANK_KEYSPACE, "-", &e),
    }
}
