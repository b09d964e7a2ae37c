//! A limit on the bytes per second that flushes and compactions write (RocksDB's
//! `NewGenericRateLimiter`): background writes take tokens before they write, tokens come back
//! once per refill period, and flushes go first except when compactions get their turn.
//!
//! **Semantics.** Every refill period (`refill_period`, 100 ms by default) the limiter makes
//! `bytes_per_sec × refill_period` bytes available (unused bytes do not accumulate beyond one
//! period, so a burst after a quiet minute is one period's worth). A request waits in the queue
//! of its priority, first come first served within a queue. At each refill the queues are
//! served high priority (flushes: a stalled memtable blocks writers) first, except that one
//! refill in `fairness` (10 by default) serves the low-priority queue (compactions) first, so
//! compactions are never starved while flushes run. A request larger than one period's bytes is
//! served in period-sized parts.
//!
//! The limiter paces writes; it never fails them. Dropping the last `Arc` of the limiter while
//! writers wait is impossible (each waiter holds one).

use std::collections::VecDeque;
use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::base::fs::WritableFile;

/// Whose write a request paces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum IoPriority {
    /// Compaction output (may wait; one refill in `fairness` serves it first).
    Low,
    /// Flush output (writers may be stalled behind it).
    High,
}

/// Paces background writes to a number of bytes per second (see the module documentation).
///
/// Share one limiter between databases with `Arc` to cap their combined background writes.
///
/// ```
/// use std::sync::Arc;
/// let limiter = Arc::new(siftdb::RateLimiter::new(64 << 20)); // 64 MiB/s
/// let options = siftdb::Options {
///     rate_limiter: Some(Arc::clone(&limiter)),
///     ..siftdb::Options::default()
/// };
/// # let _ = options;
/// assert_eq!(limiter.bytes_per_second(), 64 << 20);
/// ```
#[derive(Debug)]
pub struct RateLimiter {
    bytes_per_sec: u64,
    refill_period: Duration,
    fairness: u32,
    /// Bytes one refill makes available (at least 1).
    refill_bytes: u64,
    state: Mutex<State>,
    granted: Condvar,
    through: [AtomicU64; 2],
    requests: [AtomicU64; 2],
    waits: AtomicU64,
}

/// What the limiter's lock guards.
#[derive(Debug)]
struct State {
    available: u64,
    next_refill: Instant,
    /// Waiting requests by priority (index: `IoPriority as usize`), each a ticket and its bytes.
    queues: [VecDeque<(u64, u64)>; 2],
    /// Tickets granted and not yet collected by their waiter.
    granted: Vec<u64>,
    next_ticket: u64,
    /// Refills so far (the fairness turn is every `fairness`-th).
    refills: u64,
}

impl RateLimiter {
    /// A limiter at `bytes_per_sec` (at least 1), refilled every 100 ms, giving compactions the
    /// first turn one refill in 10 (RocksDB's defaults).
    pub fn new(bytes_per_sec: u64) -> RateLimiter {
        RateLimiter::with_options(bytes_per_sec, Duration::from_millis(100), 10)
    }

    /// A limiter at `bytes_per_sec` (at least 1), refilled every `refill_period` (at least
    /// 1 ms), serving low-priority requests first one refill in `fairness` (at least 1; 1
    /// serves them first at every refill).
    pub fn with_options(bytes_per_sec: u64, refill_period: Duration, fairness: u32) -> RateLimiter {
        let bytes_per_sec = bytes_per_sec.max(1);
        let refill_period = refill_period.max(Duration::from_millis(1));
        let refill_bytes = ((u128::from(bytes_per_sec) * refill_period.as_nanos()) / 1_000_000_000)
            .clamp(1, u128::from(u64::MAX)) as u64;
        RateLimiter {
            bytes_per_sec,
            refill_period,
            fairness: fairness.max(1),
            refill_bytes,
            state: Mutex::new(State {
                available: refill_bytes,
                next_refill: Instant::now() + refill_period,
                queues: [VecDeque::new(), VecDeque::new()],
                granted: Vec::new(),
                next_ticket: 0,
                refills: 0,
            }),
            granted: Condvar::new(),
            through: [AtomicU64::new(0), AtomicU64::new(0)],
            requests: [AtomicU64::new(0), AtomicU64::new(0)],
            waits: AtomicU64::new(0),
        }
    }

    /// The rate it paces to.
    pub fn bytes_per_second(&self) -> u64 {
        self.bytes_per_sec
    }

    /// Bytes one refill period makes available: the largest part a request is served in.
    pub fn single_burst_bytes(&self) -> u64 {
        self.refill_bytes
    }

    /// Bytes granted so far at `priority` (RocksDB's `GetTotalBytesThrough`).
    pub fn total_bytes_through(&self, priority: IoPriority) -> u64 {
        self.through[priority as usize].load(Ordering::Relaxed)
    }

    /// Requests (parts of at most one burst) granted so far at `priority`.
    pub fn total_requests(&self, priority: IoPriority) -> u64 {
        self.requests[priority as usize].load(Ordering::Relaxed)
    }

    /// Requests that had to wait for a refill.
    pub fn total_waits(&self) -> u64 {
        self.waits.load(Ordering::Relaxed)
    }

    /// Waits until `bytes` may be written at `priority` (in parts of at most one burst).
    pub fn request(&self, bytes: u64, priority: IoPriority) {
        let mut left = bytes;
        while left > 0 {
            let part = left.min(self.refill_bytes);
            self.request_part(part, priority);
            left -= part;
        }
    }

    /// One part of at most [`RateLimiter::single_burst_bytes`].
    fn request_part(&self, bytes: u64, priority: IoPriority) {
        let mut state = self.state.lock();
        self.refill_if_due(&mut state);
        let queue = priority as usize;
        if state.queues[queue].is_empty() && state.available >= bytes {
            state.available -= bytes;
            drop(state);
            self.count(bytes, priority);
            return;
        }
        let ticket = state.next_ticket;
        state.next_ticket += 1;
        state.queues[queue].push_back((ticket, bytes));
        self.waits.fetch_add(1, Ordering::Relaxed);
        loop {
            if let Some(at) = state.granted.iter().position(|&t| t == ticket) {
                state.granted.swap_remove(at);
                break;
            }
            let deadline = state.next_refill;
            if Instant::now() >= deadline {
                // Whoever wakes first at the period's end refills and grants for everyone.
                self.refill_if_due(&mut state);
                continue;
            }
            let _timed_out = self.granted.wait_until(&mut state, deadline);
        }
        drop(state);
        self.count(bytes, priority);
    }

    fn count(&self, bytes: u64, priority: IoPriority) {
        self.through[priority as usize].fetch_add(bytes, Ordering::Relaxed);
        self.requests[priority as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// If a refill period ended, makes its bytes available (unused ones do not pile up beyond
    /// one period) and grants waiting requests in priority order.
    fn refill_if_due(&self, state: &mut State) {
        let now = Instant::now();
        if now < state.next_refill {
            return;
        }
        // Periods missed while nobody asked are not paid out again.
        while state.next_refill <= now {
            state.next_refill += self.refill_period;
        }
        state.refills += 1;
        state.available = self.refill_bytes;
        let low_first = state.refills.is_multiple_of(u64::from(self.fairness));
        let order = if low_first {
            [IoPriority::Low, IoPriority::High]
        } else {
            [IoPriority::High, IoPriority::Low]
        };
        let mut any = false;
        for priority in order {
            let queue = priority as usize;
            while let Some(&(ticket, bytes)) = state.queues[queue].front() {
                if bytes > state.available {
                    break;
                }
                state.available -= bytes;
                state.queues[queue].pop_front();
                state.granted.push(ticket);
                any = true;
            }
        }
        if any {
            self.granted.notify_all();
        }
    }
}

/// `file`, its writes paced by `limiter` at `priority` (unchanged without a limiter).
pub(crate) fn paced(
    file: Box<dyn WritableFile>,
    limiter: Option<&Arc<RateLimiter>>,
    priority: IoPriority,
) -> Box<dyn WritableFile> {
    match limiter {
        Some(limiter) => Box::new(PacedFile {
            inner: file,
            limiter: Arc::clone(limiter),
            priority,
        }),
        None => file,
    }
}

/// A file whose writes first take their bytes from a [`RateLimiter`].
#[derive(Debug)]
struct PacedFile {
    inner: Box<dyn WritableFile>,
    limiter: Arc<RateLimiter>,
    priority: IoPriority,
}

impl Write for PacedFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.limiter.request(buf.len() as u64, self.priority);
        self.inner.write_all(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl WritableFile for PacedFile {
    fn sync(&mut self) -> io::Result<()> {
        self.inner.sync()
    }

    fn start_writeback(&mut self) -> io::Result<()> {
        self.inner.start_writeback()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_within_one_burst_passes_at_once() {
        let limiter = RateLimiter::new(10 << 20);
        assert_eq!(limiter.single_burst_bytes(), 1 << 20);
        limiter.request(4096, IoPriority::High);
        assert_eq!(limiter.total_bytes_through(IoPriority::High), 4096);
        assert_eq!(limiter.total_waits(), 0);
    }

    #[test]
    fn bytes_beyond_the_first_burst_wait_a_period_each() {
        // 100 KiB per 10 ms period: 5 bursts of 100 KiB cannot finish before 4 refills, the
        // last 40 ms after the limiter was made (a little less after `started`).
        let limiter = RateLimiter::with_options(10 << 20, Duration::from_millis(10), 10);
        let burst = limiter.single_burst_bytes();
        let started = Instant::now();
        limiter.request(5 * burst, IoPriority::Low);
        assert!(
            started.elapsed() >= Duration::from_millis(35),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(limiter.total_bytes_through(IoPriority::Low), 5 * burst);
        assert_eq!(limiter.total_requests(IoPriority::Low), 5);
        assert!(limiter.total_waits() >= 4);
    }

    #[test]
    fn compactions_get_their_turn_while_flushes_keep_asking() {
        let limiter = Arc::new(RateLimiter::with_options(
            1 << 20,
            Duration::from_millis(5),
            2,
        ));
        let burst = limiter.single_burst_bytes();
        let flusher = {
            let limiter = Arc::clone(&limiter);
            std::thread::spawn(move || limiter.request(200 * burst, IoPriority::High))
        };
        let compactor = {
            let limiter = Arc::clone(&limiter);
            std::thread::spawn(move || limiter.request(5 * burst, IoPriority::Low))
        };
        compactor.join().unwrap();
        // The compaction finished (in about 10 refills) while the flush still had most of its
        // 200 bursts to go.
        assert!(limiter.total_bytes_through(IoPriority::High) < 100 * burst);
        flusher.join().unwrap();
        assert_eq!(limiter.total_bytes_through(IoPriority::High), 200 * burst);
        assert_eq!(limiter.total_bytes_through(IoPriority::Low), 5 * burst);
    }
}
