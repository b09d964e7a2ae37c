//! Pessimistic transactions: locks held to the end, lock timeouts, deadlock detection, locks
//! released by commit, rollback, drop and a rollback to a savepoint, and `set_snapshot`.

use std::sync::Barrier;
use std::time::{Duration, Instant};

use siftdb::{Db, Error, Options, TransactionMode, TransactionOptions};

fn pessimistic(timeout: Duration) -> TransactionOptions {
    TransactionOptions {
        mode: TransactionMode::Pessimistic,
        lock_timeout: timeout,
        ..TransactionOptions::default()
    }
}

fn open() -> (tempfile::TempDir, Db) {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    (dir, db)
}

#[test]
fn a_held_lock_times_out_a_second_writer_after_its_timeout() {
    let (_dir, db) = open();
    let mut holder = db.transaction_opt(&pessimistic(Duration::from_secs(1)));
    holder.put("k", "holder").unwrap();
    let mut waiter = db.transaction_opt(&pessimistic(Duration::from_millis(200)));
    let started = Instant::now();
    assert!(matches!(waiter.put("k", "waiter"), Err(Error::LockTimeout)));
    assert!(
        started.elapsed() >= Duration::from_millis(200),
        "waited its timeout"
    );
    assert!(matches!(
        waiter.get_for_update("k"),
        Err(Error::LockTimeout)
    ));
    // The waiter is still usable on other keys, and after the holder commits, on this one.
    waiter.put("other", "w").unwrap();
    holder.commit().unwrap();
    assert_eq!(
        waiter.get_for_update("k").unwrap(),
        Some(b"holder".to_vec())
    );
    waiter.put("k", "waiter").unwrap();
    waiter.commit().unwrap();
    assert_eq!(db.get("k").unwrap(), Some(b"waiter".to_vec()));
    assert_eq!(db.get("other").unwrap(), Some(b"w".to_vec()));
}

#[test]
fn a_waiter_gets_the_lock_and_the_new_value_when_the_holder_commits() {
    let (_dir, db) = open();
    db.put("counter", 0u64.to_le_bytes()).unwrap();
    let opts = pessimistic(Duration::from_secs(30));
    let mut holder = db.transaction_opt(&opts);
    holder.get_for_update("counter").unwrap();
    std::thread::scope(|s| {
        let waiter = s.spawn(|| {
            let mut txn = db.transaction_opt(&opts);
            let v = txn.get_for_update("counter").unwrap().unwrap();
            let n = u64::from_le_bytes(v.try_into().unwrap());
            txn.put("counter", (n + 1).to_le_bytes()).unwrap();
            txn.commit().unwrap();
            n
        });
        std::thread::sleep(Duration::from_millis(50));
        holder.put("counter", 10u64.to_le_bytes()).unwrap();
        holder.commit().unwrap();
        assert_eq!(
            waiter.join().unwrap(),
            10,
            "read under the lock: the holder's value"
        );
    });
    assert_eq!(
        db.get("counter").unwrap(),
        Some(11u64.to_le_bytes().to_vec())
    );
}

#[test]
fn rollback_drop_and_commit_release_every_lock() {
    let (_dir, db) = open();
    let quick = pessimistic(Duration::ZERO);
    for end in ["rollback", "drop", "commit"] {
        let mut txn = db.transaction_opt(&quick);
        txn.put("a", end).unwrap();
        txn.get_for_update("b").unwrap();
        txn.delete("c").unwrap();
        match end {
            "rollback" => txn.rollback().unwrap(),
            "drop" => drop(txn),
            _ => txn.commit().unwrap(),
        }
        let mut next = db.transaction_opt(&quick);
        for k in ["a", "b", "c"] {
            next.put(k, "next")
                .unwrap_or_else(|e| panic!("after {end}: {k} still locked: {e}"));
        }
    }
}

#[test]
fn a_rollback_to_a_savepoint_releases_the_locks_taken_since() {
    let (_dir, db) = open();
    let quick = pessimistic(Duration::ZERO);
    let mut txn = db.transaction_opt(&quick);
    txn.put("before", "1").unwrap();
    txn.set_savepoint().unwrap();
    txn.put("after", "2").unwrap();
    txn.put("before", "3").unwrap(); // held since before the savepoint: stays locked
    txn.rollback_to_savepoint().unwrap();
    let mut other = db.transaction_opt(&quick);
    other.put("after", "other").unwrap();
    assert!(matches!(
        other.put("before", "other"),
        Err(Error::LockTimeout)
    ));
    assert_eq!(txn.get("before").unwrap(), Some(b"1".to_vec()));
    assert_eq!(txn.get("after").unwrap(), None);
    txn.commit().unwrap();
    other.commit().unwrap();
    assert_eq!(db.get("before").unwrap(), Some(b"1".to_vec()));
    assert_eq!(db.get("after").unwrap(), Some(b"other".to_vec()));
}

/// Two transactions lock one key each, then each asks for the other's: the second to ask is
/// refused at once with `Deadlock` (not after its long timeout), and the first then proceeds.
#[test]
fn a_deadlock_is_detected_and_refused_at_once() {
    let (_dir, db) = open();
    let opts = pessimistic(Duration::from_secs(60));
    let locked_both = Barrier::new(2);
    let started = Instant::now();
    let results: Vec<_> = std::thread::scope(|s| {
        let run = |mine: &'static str, theirs: &'static str| {
            let (db, opts, locked_both) = (&db, &opts, &locked_both);
            s.spawn(move || {
                let mut txn = db.transaction_opt(opts);
                txn.put(mine, "x").unwrap();
                locked_both.wait();
                match txn.put(theirs, "y") {
                    Ok(()) => txn.commit().map(|()| "committed"),
                    Err(e) => Err(e), // dropped: its locks go, the other proceeds
                }
            })
        };
        let (a, b) = (run("a", "b"), run("b", "a"));
        vec![a.join().unwrap(), b.join().unwrap()]
    });
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "no timeout was waited for"
    );
    let deadlocks = results
        .iter()
        .filter(|r| matches!(r, Err(Error::Deadlock)))
        .count();
    let commits = results
        .iter()
        .filter(|r| matches!(r, Ok("committed")))
        .count();
    assert_eq!((deadlocks, commits), (1, 1), "{results:?}");
}

/// A cycle of three: each transaction holds one key and waits for the next one's.
#[test]
fn a_deadlock_of_three_transactions_is_detected() {
    let (_dir, db) = open();
    let opts = pessimistic(Duration::from_secs(60));
    let locked_all = Barrier::new(3);
    let keys = ["k0", "k1", "k2"];
    let results: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..3)
            .map(|i| {
                let (db, opts, locked_all) = (&db, &opts, &locked_all);
                s.spawn(move || {
                    let mut txn = db.transaction_opt(opts);
                    txn.put(keys[i], "mine").unwrap();
                    locked_all.wait();
                    txn.put(keys[(i + 1) % 3], "next")?;
                    txn.commit()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let deadlocks = results
        .iter()
        .filter(|r| matches!(r, Err(Error::Deadlock)))
        .count();
    assert!(deadlocks >= 1, "{results:?}");
    assert!(
        results
            .iter()
            .all(|r| r.is_ok() || matches!(r, Err(Error::Deadlock))),
        "{results:?}"
    );
}

/// Without detection the same cycle ends by the lock timeout.
#[test]
fn without_deadlock_detection_a_cycle_ends_by_the_timeout() {
    let (_dir, db) = open();
    let opts = TransactionOptions {
        deadlock_detect: false,
        ..pessimistic(Duration::from_millis(300))
    };
    let locked_both = Barrier::new(2);
    let results: Vec<_> = std::thread::scope(|s| {
        let run = |mine: &'static str, theirs: &'static str| {
            let (db, opts, locked_both) = (&db, &opts, &locked_both);
            s.spawn(move || {
                let mut txn = db.transaction_opt(opts);
                txn.put(mine, "x").unwrap();
                locked_both.wait();
                txn.put(theirs, "y")
            })
        };
        let (a, b) = (run("a", "b"), run("b", "a"));
        vec![a.join().unwrap(), b.join().unwrap()]
    });
    assert!(
        results.iter().any(|r| matches!(r, Err(Error::LockTimeout))),
        "{results:?}"
    );
    assert!(
        !results.iter().any(|r| matches!(r, Err(Error::Deadlock))),
        "{results:?}"
    );
}

/// With `set_snapshot`, locking a key someone committed after the snapshot is a conflict.
#[test]
fn set_snapshot_makes_a_later_commit_of_a_locked_key_a_conflict() {
    let (_dir, db) = open();
    db.put("k", "old").unwrap();
    let opts = TransactionOptions {
        set_snapshot: true,
        ..pessimistic(Duration::ZERO)
    };
    let mut txn = db.transaction_opt(&opts);
    assert!(txn.snapshot_sequence().is_some());
    db.put("k", "new").unwrap();
    assert_eq!(
        txn.get("k").unwrap(),
        Some(b"old".to_vec()),
        "reads at the snapshot"
    );
    assert!(matches!(txn.get_for_update("k"), Err(Error::Conflict)));
    assert!(matches!(txn.put("untouched", "v"), Ok(())));
    txn.commit().unwrap();
    assert_eq!(db.get("untouched").unwrap(), Some(b"v".to_vec()));
    // Without it, the same sequence reads the newest value under the lock.
    let mut txn = db.transaction_opt(&pessimistic(Duration::ZERO));
    assert!(txn.snapshot_sequence().is_none());
    db.put("k", "newer").unwrap();
    assert_eq!(txn.get_for_update("k").unwrap(), Some(b"newer".to_vec()));
}

/// Locks are per keyspace: the same key in two keyspaces is two locks.
#[test]
fn locks_are_per_keyspace() {
    let (_dir, db) = open();
    let other = db.keyspace("other").unwrap();
    let quick = pessimistic(Duration::ZERO);
    let mut first = db.transaction_opt(&quick);
    first.put("k", "default").unwrap();
    let mut second = db.transaction_opt(&quick);
    second.put_in(&other, "k", "other").unwrap();
    assert!(matches!(second.put("k", "x"), Err(Error::LockTimeout)));
    first.commit().unwrap();
    second.commit().unwrap();
    assert_eq!(other.get("k").unwrap(), Some(b"other".to_vec()));
    assert_eq!(db.get("k").unwrap(), Some(b"default".to_vec()));
}
