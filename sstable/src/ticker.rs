//! A statistics counter that readers on many threads bump without sharing a cache line.
//!
//! One `AtomicU64` bumped by every lookup is one cache line bouncing between every reading core
//! (RocksDB's `StatisticsImpl` keeps its tickers per core for this reason). A [`Ticker`] keeps
//! one padded slot per *stripe*; each thread adds to the stripe it was given when it first
//! counted (round robin), and a read adds the stripes up. Counts are exact; a read concurrent
//! with adds sees each add or not, as a relaxed atomic does.
//!
//! Its methods take the names and arguments of `AtomicU64`'s (`fetch_add`, `load`), so a field
//! can change type without its call sites changing.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;

/// One stripe: a counter alone on its cache line (128 bytes: adjacent-line prefetchers pair
/// lines, so 64 would still let two stripes interfere).
#[derive(Debug, Default)]
#[repr(align(128))]
struct Stripe(AtomicU64);

/// See the module documentation.
#[derive(Debug)]
pub struct Ticker {
    stripes: Box<[Stripe]>,
}

/// Stripes per ticker: twice the cores (so threads rarely share one), a power of two, 4 to 32.
fn stripe_count() -> usize {
    static COUNT: OnceLock<usize> = OnceLock::new();
    *COUNT.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(4, |n| n.get());
        (2 * cores).next_power_of_two().clamp(4, 32)
    })
}

/// The calling thread's stripe number (any ticker's stripe is this modulo its length).
fn thread_stripe() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static STRIPE: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    STRIPE.with(|s| {
        let mut n = s.get();
        if n == usize::MAX {
            n = NEXT.fetch_add(1, Ordering::Relaxed);
            s.set(n);
        }
        n
    })
}

impl Default for Ticker {
    fn default() -> Ticker {
        Ticker {
            stripes: (0..stripe_count()).map(|_| Stripe::default()).collect(),
        }
    }
}

impl Ticker {
    /// Adds `n` (to the calling thread's stripe). Unlike `AtomicU64::fetch_add` it returns
    /// nothing: no thread sees the total while it adds.
    #[inline]
    pub fn fetch_add(&self, n: u64, order: Ordering) {
        // The length is a power of two.
        let i = thread_stripe() & (self.stripes.len() - 1);
        self.stripes[i].0.fetch_add(n, order);
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
        assert!(t.stripes.len().is_power_of_two() && t.stripes.len() >= 4);
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
}
