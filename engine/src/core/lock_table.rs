//! Point locks of pessimistic transactions (RocksDB's `PointLockManager`): exclusive locks on
//! (keyspace, key), striped so that unrelated keys rarely share a mutex, with a lock timeout
//! and deadlock detection over a wait-for graph.
//!
//! Each stripe maps the keys locked in it to their holder; a transaction that finds a key held
//! records the edge "waits for the holder" and sleeps on the stripe's condition variable until a
//! holder of that stripe releases, its timeout passes, or — with detection on — the edge would
//! close a cycle, which it then refuses at once ([`Error::Deadlock`]) instead of waiting.
//!
//! A transaction waits for one key at a time, so the graph is a set of chains: a cycle shows as
//! a chain from the holder that comes back to the waiter. Transaction ids are never reused, so
//! an edge left pointing at a transaction that has since finished leads nowhere (a finished
//! transaction waits for nothing); the waiter sets its edge again when it wakes.
//!
//! The stripes and the wait-for graph are leaves of the engine's lock order: nothing else is
//! taken while one is held, except the graph inside a stripe (always in that order).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, MutexGuard};

use crate::base::error::{Error, Result};
use crate::core::spin::spin_until_changed;

/// A lockable key: (keyspace id, key).
pub(crate) type LockKey = (u32, Vec<u8>);

/// Stripes by default (RocksDB's `TransactionDBOptions::num_stripes`).
pub(crate) const DEFAULT_STRIPES: usize = 16;

/// Transactions followed along a chain before detection gives up and lets the waiter wait
/// (RocksDB's `deadlock_detect_depth`): a longer chain then ends by the lock timeout.
const MAX_DETECTION_DEPTH: usize = 50;

struct Stripe {
    /// Locked key → holding transaction.
    holders: Mutex<HashMap<LockKey, u64>>,
    /// Notified when a key of this stripe is released.
    released: Condvar,
    /// Counts the releases of this stripe's keys: a waiter spins on it briefly before it
    /// parks (`core/spin.rs`; a transaction holds its locks for microseconds).
    releases: AtomicU64,
}

/// The point locks of one database's pessimistic transactions.
pub(crate) struct LockTable {
    stripes: Box<[Stripe]>,
    /// Picks a key's stripe.
    hasher: std::collections::hash_map::RandomState,
    /// Waiting transaction → the transaction it waits for.
    waits_for: Mutex<HashMap<u64, u64>>,
}

impl std::fmt::Debug for LockTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockTable")
            .field("stripes", &self.stripes.len())
            .finish_non_exhaustive()
    }
}

impl Default for LockTable {
    fn default() -> Self {
        LockTable::new(DEFAULT_STRIPES)
    }
}

impl LockTable {
    /// A table of `stripes` stripes (at least one).
    pub(crate) fn new(stripes: usize) -> LockTable {
        LockTable {
            stripes: (0..stripes.max(1))
                .map(|_| Stripe {
                    holders: Mutex::new(HashMap::new()),
                    released: Condvar::new(),
                    releases: AtomicU64::new(0),
                })
                .collect(),
            hasher: std::collections::hash_map::RandomState::new(),
            waits_for: Mutex::new(HashMap::new()),
        }
    }

    fn stripe(&self, key: &LockKey) -> &Stripe {
        use std::hash::BuildHasher;
        let hash = self.hasher.hash_one(key);
        &self.stripes[(hash % self.stripes.len() as u64) as usize]
    }

    /// Locks `key` for transaction `txn`, waiting up to `timeout` while another holds it
    /// (`Duration::MAX`: without limit). Returns whether the lock is newly taken (`false`: `txn`
    /// held it already). [`Error::LockTimeout`] when the time ran out; with `detect_deadlock`,
    /// [`Error::Deadlock`] as soon as waiting would close a cycle.
    pub(crate) fn lock(
        &self,
        txn: u64,
        key: &LockKey,
        timeout: Duration,
        detect_deadlock: bool,
    ) -> Result<bool> {
        let stripe = self.stripe(key);
        let deadline = Instant::now().checked_add(timeout);
        let mut holders = stripe.holders.lock();
        // Spun already since the last look: then park.
        let mut spun = false;
        loop {
            let holder = match holders.get(key) {
                None => {
                    holders.insert(key.clone(), txn);
                    self.stop_waiting(txn);
                    return Ok(true);
                }
                Some(&holder) if holder == txn => return Ok(false),
                Some(&holder) => holder,
            };
            if timeout.is_zero() {
                return Err(Error::LockTimeout);
            }
            if self.wait_for(txn, holder, detect_deadlock) {
                return Err(Error::Deadlock);
            }
            if !spun {
                // Look again under the mutex after the spin, whatever it saw.
                spun = true;
                let seen = stripe.releases.load(Ordering::Acquire);
                MutexGuard::unlocked(&mut holders, || spin_until_changed(&stripe.releases, seen));
                continue;
            }
            spun = false;
            let timed_out = match deadline {
                Some(deadline) => stripe
                    .released
                    .wait_until(&mut holders, deadline)
                    .timed_out(),
                None => {
                    stripe.released.wait(&mut holders);
                    false
                }
            };
            if timed_out && holders.get(key).is_some_and(|&h| h != txn) {
                self.stop_waiting(txn);
                return Err(Error::LockTimeout);
            }
        }
    }

    /// Records that `txn` waits for `holder`; with `detect`, first whether that would close a
    /// cycle (then nothing is recorded, and the answer is `true`).
    fn wait_for(&self, txn: u64, holder: u64, detect: bool) -> bool {
        let mut waits = self.waits_for.lock();
        if detect {
            let mut next = Some(holder);
            for _ in 0..MAX_DETECTION_DEPTH {
                match next {
                    Some(t) if t == txn => {
                        waits.remove(&txn);
                        return true;
                    }
                    Some(t) => next = waits.get(&t).copied(),
                    None => break,
                }
            }
        }
        waits.insert(txn, holder);
        false
    }

    fn stop_waiting(&self, txn: u64) {
        self.waits_for.lock().remove(&txn);
    }

    /// Releases the locks `txn` holds on `keys` (keys it does not hold are left alone) and
    /// wakes their waiters.
    pub(crate) fn unlock<'k>(&self, txn: u64, keys: impl IntoIterator<Item = &'k LockKey>) {
        for key in keys {
            let stripe = self.stripe(key);
            let mut holders = stripe.holders.lock();
            if holders.get(key) == Some(&txn) {
                holders.remove(key);
                stripe.releases.fetch_add(1, Ordering::Release);
                stripe.released.notify_all();
            }
        }
    }

    /// Keys locked now (for tests and properties).
    #[cfg(test)]
    fn locked(&self) -> usize {
        self.stripes.iter().map(|s| s.holders.lock().len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(k: &str) -> LockKey {
        (0, k.as_bytes().to_vec())
    }

    #[test]
    fn a_held_key_times_out_and_a_released_one_is_taken() {
        let table = LockTable::new(4);
        assert!(table.lock(1, &key("a"), Duration::ZERO, true).unwrap());
        assert!(
            !table.lock(1, &key("a"), Duration::ZERO, true).unwrap(),
            "re-entrant"
        );
        assert!(matches!(
            table.lock(2, &key("a"), Duration::from_millis(20), true),
            Err(Error::LockTimeout)
        ));
        // Another key, even in the same stripe, is free.
        assert!(table.lock(2, &key("b"), Duration::ZERO, true).unwrap());
        table.unlock(1, [&key("a")]);
        assert!(table.lock(2, &key("a"), Duration::ZERO, true).unwrap());
        table.unlock(1, [&key("a")]); // not the holder: nothing happens
        assert_eq!(table.locked(), 2);
        table.unlock(2, [&key("a"), &key("b")]);
        assert_eq!(table.locked(), 0);
    }

    #[test]
    fn a_waiter_gets_the_key_when_its_holder_releases() {
        let table = LockTable::new(1);
        table.lock(1, &key("a"), Duration::ZERO, true).unwrap();
        std::thread::scope(|s| {
            let waiter = s.spawn(|| table.lock(2, &key("a"), Duration::from_secs(30), true));
            while table.waits_for.lock().get(&2) != Some(&1) {
                std::thread::yield_now();
            }
            table.unlock(1, [&key("a")]);
            assert!(waiter.join().unwrap().unwrap());
        });
        assert!(table.waits_for.lock().is_empty());
    }

    #[test]
    fn the_wait_that_would_close_a_cycle_is_refused() {
        let table = LockTable::new(DEFAULT_STRIPES);
        table.lock(1, &key("a"), Duration::ZERO, true).unwrap();
        table.lock(2, &key("b"), Duration::ZERO, true).unwrap();
        std::thread::scope(|s| {
            // 1 waits for 2 (key b) ...
            let first = s.spawn(|| table.lock(1, &key("b"), Duration::from_secs(30), true));
            while table.waits_for.lock().get(&1) != Some(&2) {
                std::thread::yield_now();
            }
            // ... so 2 waiting for 1 (key a) would close the cycle.
            assert!(matches!(
                table.lock(2, &key("a"), Duration::from_secs(30), true),
                Err(Error::Deadlock)
            ));
            table.unlock(2, [&key("b")]);
            assert!(first.join().unwrap().unwrap());
        });
    }

    #[test]
    fn without_detection_a_cycle_ends_by_the_timeout() {
        let table = LockTable::new(DEFAULT_STRIPES);
        table.lock(1, &key("a"), Duration::ZERO, false).unwrap();
        table.lock(2, &key("b"), Duration::ZERO, false).unwrap();
        std::thread::scope(|s| {
            let first = s.spawn(|| table.lock(1, &key("b"), Duration::from_millis(50), false));
            let second = table.lock(2, &key("a"), Duration::from_millis(50), false);
            assert!(matches!(second, Err(Error::LockTimeout)));
            assert!(matches!(first.join().unwrap(), Err(Error::LockTimeout)));
        });
    }
}
