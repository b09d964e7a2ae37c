//! A statistics counter that readers on many threads bump without sharing a cache line.
//!
//! One `AtomicU64` bumped by every lookup is one cache line bouncing between every reading core
//! (RocksDB's `StatisticsImpl` keeps its tickers per core for this reason). A [`Ticker`] keeps
//! one padded slot per *stripe*. A thread leases a stripe number of its own when it first
//! counts and gives it back when it exits; while it holds the lease no other thread adds to
//! that stripe, so its add is a plain load and store on a line only it writes — not even a
//! locked instruction, which would also stall the lookup's outstanding memory requests. Threads
//! beyond the stripes (or counting while their thread-local state is torn down) share one
//! overflow stripe and add to it atomically. A read adds the stripes up. Counts are exact; a
//! read concurrent with adds sees each add or not, as a relaxed atomic does.
//!
//! Its methods take the names and arguments of `AtomicU64`'s (`fetch_add`, `load`), so a field
//! can change type without its call sites changing.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use parking_lot::Mutex;

/// One stripe: a counter alone on its cache line (128 bytes: adjacent-line prefetchers pair
/// lines, so 64 would still let two stripes interfere).
#[derive(Debug, Default)]
#[repr(align(128))]
struct Stripe(AtomicU64);

/// See the module documentation.
#[derive(Debug)]
pub struct Ticker {
    /// [`stripe_count`] leased stripes, then the shared overflow stripe.
    stripes: Box<[Stripe]>,
}

/// Leased stripes per ticker: twice the cores (so a pool of reader threads rarely overflows),
/// 4 to 32 — as many as the round-robin stripes before leases, so a keyspace's tickers take no
/// more memory than they did (each stripe is 128 bytes, a tree has a hundred tickers).
fn stripe_count() -> usize {
    static COUNT: OnceLock<usize> = OnceLock::new();
    *COUNT.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(4, |n| n.get());
        (2 * cores).clamp(4, 32)
    })
}

/// The stripe numbers no live thread holds, and the next never leased.
struct LeasePool {
    free: Vec<usize>,
    next: usize,
}

static POOL: Mutex<LeasePool> = Mutex::new(LeasePool {
    free: Vec::new(),
    next: 0,
});

/// A thread's lease on one stripe number of every ticker, given back when the thread exits.
///
/// The pool's lock orders the leases: every add of the thread giving a number back happens
/// before any add of the thread leasing it next, so the load-and-store adds lose nothing.
struct Lease(Option<usize>);

impl Lease {
    fn acquire() -> Lease {
        let mut pool = POOL.lock();
        let number = pool.free.pop().or_else(|| {
            (pool.next < stripe_count()).then(|| {
                pool.next += 1;
                pool.next - 1
            })
        });
        Lease(number)
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(n) = self.0.take() {
            POOL.lock().free.push(n);
        }
    }
}

thread_local! {
    static LEASE: Lease = Lease::acquire();
}

/// The calling thread's own stripe number, `None` when it has none (it shares the overflow).
#[inline]
fn leased_stripe() -> Option<usize> {
    LEASE.try_with(|lease| lease.0).ok().flatten()
}

impl Default for Ticker {
    fn default() -> Ticker {
        Ticker {
            stripes: (0..=stripe_count()).map(|_| Stripe::default()).collect(),
        }
    }
}

impl Ticker {
    /// Adds `n`: to the calling thread's own stripe without a locked instruction, or
    /// atomically to the overflow stripe. Unlike `AtomicU64::fetch_add` it returns nothing: no
    /// thread sees the total while it adds. `order` applies to the overflow stripe; an own
    /// stripe is written with `Relaxed`, as statistics need.
    #[inline]
    pub fn fetch_add(&self, n: u64, order: Ordering) {
        match leased_stripe().and_then(|i| self.stripes.get(i)) {
            // Only this thread writes this stripe while it holds the lease (module docs).
            Some(own) => own.0.store(
                own.0.load(Ordering::Relaxed).wrapping_add(n),
                Ordering::Relaxed,
            ),
            None => {
                if let Some(overflow) = self.stripes.last() {
                    overflow.0.fetch_add(n, order);
                }
            }
        }
    }

    /// The total of every stripe.
    pub fn load(&self, order: Ordering) -> u64 {
        self.stripes
            .iter()
            .fold(0u64, |sum, s| sum.wrapping_add(s.0.load(order)))
    }

    /// Sets the total to `n` (tests and resets; not atomic with concurrent adds).
    pub fn store(&self, n: u64, order: Ordering) {
        for (i, s) in self.stripes.iter().enumerate() {
            s.0.store(if i == 0 { n } else { 0 }, order);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering::Relaxed;

    #[test]
    fn adds_from_many_threads_sum_exactly() {
        let t = Ticker::default();
        assert!(t.stripes.len() > stripe_count());
        std::thread::scope(|s| {
            for k in 1..=8u64 {
                let t = &t;
                s.spawn(move || {
                    for _ in 0..10_000 {
                        t.fetch_add(k, Relaxed);
                    }
                });
            }
        });
        assert_eq!(t.load(Relaxed), 10_000 * (1..=8).sum::<u64>());
        t.store(5, Relaxed);
        assert_eq!(t.load(Relaxed), 5);
    }

    #[test]
    fn leases_outnumbered_by_threads_and_reused_lose_nothing() {
        let t = Ticker::default();
        // More threads at once than stripes (some overflow), in waves (leases reused).
        let threads = 3 * stripe_count() as u64;
        for _wave in 0..3 {
            std::thread::scope(|s| {
                for k in 1..=threads {
                    let t = &t;
                    s.spawn(move || {
                        for _ in 0..1_000 {
                            t.fetch_add(k, Relaxed);
                        }
                    });
                }
            });
        }
        assert_eq!(t.load(Relaxed), 3 * 1_000 * (1..=threads).sum::<u64>());
    }
}
