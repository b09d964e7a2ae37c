//! The bank test: threads move money between accounts in transactions, retrying on conflicts
//! (optimistic) or on deadlocks and lock timeouts (pessimistic), while a checker reads every
//! account through snapshots. At every snapshot the sum is what the bank started with and no
//! account is negative; with `get_for_update` on both accounts of a transfer there is no write
//! skew (a transfer never spends money its source no longer has).
//!
//! Accounts live in two keyspaces, so a transfer between them commits one batch over both.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use siftdb::{Db, Error, Keyspace, Options, Transaction, TransactionMode, TransactionOptions};

const ACCOUNTS: u64 = 16;
const START: i64 = 1_000;
const THREADS: u64 = 4;

fn transfers_per_thread() -> u64 {
    siftdb_tests::env_count("SIFTDB_BANK_TRANSFERS", 2_500) as u64
}

fn account(i: u64) -> Vec<u8> {
    format!("acct{i:04}").into_bytes()
}

/// Accounts with an odd number are in the "savings" keyspace, the rest in "default".
struct Bank {
    db: Db,
    savings: Keyspace,
}

/// A balance is stored as an `i64`: a lost update could take one below zero.
fn balance(v: Option<Vec<u8>>) -> i64 {
    let bytes: [u8; 8] = v
        .expect("every account exists")
        .try_into()
        .expect("8-byte balance");
    i64::from_le_bytes(bytes)
}

impl Bank {
    fn open(dir: &std::path::Path) -> Bank {
        let opts = Options {
            // Small memtables: commits' validation meets flushed tables too.
            write_buffer_size: 16 << 10,
            ..Options::default()
        };
        let db = Db::open(dir, opts).unwrap();
        let savings = db.keyspace("savings").unwrap();
        let bank = Bank { db, savings };
        let mut setup = bank.db.transaction();
        for i in 0..ACCOUNTS {
            bank.put(&mut setup, i, START).unwrap();
        }
        setup.commit().unwrap();
        bank
    }

    fn get_for_update(&self, txn: &mut Transaction, i: u64) -> siftdb::Result<i64> {
        let v = if i % 2 == 1 {
            txn.get_for_update_in(&self.savings, account(i))?
        } else {
            txn.get_for_update(account(i))?
        };
        Ok(balance(v))
    }

    fn put(&self, txn: &mut Transaction, i: u64, amount: i64) -> siftdb::Result<()> {
        if i % 2 == 1 {
            txn.put_in(&self.savings, account(i), amount.to_le_bytes())
        } else {
            txn.put(account(i), amount.to_le_bytes())
        }
    }

    /// One transfer attempt: `Ok(false)` when the source has too little.
    fn transfer(
        &self,
        opts: &TransactionOptions,
        from: u64,
        to: u64,
        amount: i64,
    ) -> siftdb::Result<bool> {
        let mut txn = self.db.transaction_opt(opts);
        let source = self.get_for_update(&mut txn, from)?;
        let target = self.get_for_update(&mut txn, to)?;
        if source < amount {
            txn.rollback()?;
            return Ok(false);
        }
        self.put(&mut txn, from, source - amount)?;
        self.put(&mut txn, to, target + amount)?;
        txn.commit()?;
        Ok(true)
    }

    /// Every balance as of one snapshot.
    fn audit(&self) -> Vec<i64> {
        let snapshot = self.db.snapshot();
        (0..ACCOUNTS)
            .map(|i| {
                let v = if i % 2 == 1 {
                    snapshot.get_in(&self.savings, &account(i))
                } else {
                    snapshot.get(account(i))
                };
                balance(v.unwrap())
            })
            .collect()
    }
}

/// A small deterministic generator per thread (no shared state between threads).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn run_bank(mode: TransactionMode) {
    let dir = siftdb_tests::temp_dir();
    let bank = Arc::new(Bank::open(dir.path()));
    let opts = TransactionOptions {
        mode,
        lock_timeout: Duration::from_secs(5),
        ..TransactionOptions::default()
    };
    let done = AtomicBool::new(false);
    let (retries, audits, declined) = (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
    std::thread::scope(|s| {
        let checker = s.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                let balances = bank.audit();
                assert_eq!(
                    balances.iter().sum::<i64>(),
                    ACCOUNTS as i64 * START,
                    "the sum at a snapshot: {balances:?}"
                );
                assert!(
                    balances.iter().all(|&b| b >= 0),
                    "an account went negative: {balances:?}"
                );
                audits.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(1));
            }
        });
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let (bank, opts, retries, declined) = (&bank, &opts, &retries, &declined);
                s.spawn(move || {
                    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (t + 1));
                    for _ in 0..transfers_per_thread() {
                        let from = rng.below(ACCOUNTS);
                        let to = (from + 1 + rng.below(ACCOUNTS - 1)) % ACCOUNTS;
                        let amount = 1 + rng.below(300) as i64;
                        loop {
                            match bank.transfer(opts, from, to, amount) {
                                Ok(true) => break,
                                Ok(false) => {
                                    declined.fetch_add(1, Ordering::Relaxed);
                                    break;
                                }
                                Err(Error::Conflict | Error::Deadlock | Error::LockTimeout) => {
                                    retries.fetch_add(1, Ordering::Relaxed);
                                }
                                Err(e) => panic!("transfer {from} -> {to}: {e}"),
                            }
                        }
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        done.store(true, Ordering::Relaxed);
        checker.join().unwrap();
    });
    let balances = bank.audit();
    assert_eq!(balances.iter().sum::<i64>(), ACCOUNTS as i64 * START);
    assert!(balances.iter().all(|&b| b >= 0), "{balances:?}");
    eprintln!(
        "{mode:?}: {} transfers, {} declined, {} retries, {} audits; balances {balances:?}",
        THREADS * transfers_per_thread(),
        declined.load(Ordering::Relaxed),
        retries.load(Ordering::Relaxed),
        audits.load(Ordering::Relaxed)
    );
    assert!(audits.load(Ordering::Relaxed) > 0);
    // Reopened, the committed state is the same.
    let committed = balances;
    drop(Arc::into_inner(bank).expect("the threads are done"));
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let savings = db.keyspace("savings").unwrap();
    assert_eq!(Bank { db, savings }.audit(), committed, "after a reopen");
}

#[test]
fn optimistic_transfers_keep_the_sum_and_no_account_goes_negative() {
    run_bank(TransactionMode::Optimistic);
}

#[test]
fn pessimistic_transfers_keep_the_sum_and_no_account_goes_negative() {
    run_bank(TransactionMode::Pessimistic);
}

/// One doctor's transaction: `me` goes off call if both are on call, reading both for update.
fn take_off_call(mut txn: Transaction, me: &str, other: &str) -> siftdb::Result<()> {
    let mine = txn.get_for_update(me)?;
    let theirs = txn.get_for_update(other)?;
    if mine.as_deref() == Some(b"on") && theirs.as_deref() == Some(b"on") {
        txn.put(me, "off")?;
    }
    txn.commit()
}

/// Write skew: two on-call doctors, at least one must stay on call. Each transaction reads
/// both and takes one off call if the other is on. With `get_for_update` on both, two such
/// transactions never both commit: one of them sees the other's change (pessimistic: it waits
/// for the lock) or fails to commit (optimistic: a conflict).
#[test]
fn get_for_update_on_both_keys_prevents_write_skew() {
    for mode in [TransactionMode::Optimistic, TransactionMode::Pessimistic] {
        let dir = siftdb_tests::temp_dir();
        let db = Db::open(dir.path(), Options::default()).unwrap();
        let opts = TransactionOptions {
            mode,
            lock_timeout: Duration::from_secs(5),
            ..TransactionOptions::default()
        };
        for round in 0..300 {
            db.put("alice", "on").unwrap();
            db.put("bob", "on").unwrap();
            let barrier = std::sync::Barrier::new(2);
            std::thread::scope(|s| {
                for (me, other) in [("alice", "bob"), ("bob", "alice")] {
                    let (db, opts, barrier) = (&db, &opts, &barrier);
                    s.spawn(move || {
                        // Both begin before either reads (the snapshots overlap), then each
                        // runs its transaction until it commits (after a conflict or a refused
                        // deadlock: again, from a fresh begin).
                        let mut txn = db.transaction_opt(opts);
                        barrier.wait();
                        loop {
                            match take_off_call(txn, me, other) {
                                Ok(()) => return,
                                Err(Error::Conflict | Error::Deadlock | Error::LockTimeout) => {
                                    txn = db.transaction_opt(opts);
                                }
                                Err(e) => panic!("{e}"),
                            }
                        }
                    });
                }
            });
            let on = ["alice", "bob"]
                .iter()
                .filter(|k| db.get(k).unwrap().as_deref() == Some(b"on"))
                .count();
            assert_eq!(
                on, 1,
                "{mode:?} round {round}: exactly one doctor stays on call"
            );
        }
    }
}
