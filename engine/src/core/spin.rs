//! A brief wait for a counter to move, before a thread parks on a condition variable.

use std::sync::atomic::{AtomicU64, Ordering};

/// Waits briefly for `counter` to move on from `seen`, spinning, then yielding the CPU
/// (RocksDB's adaptive yield in its write thread): a write group commits in microseconds, and a
/// writer that parks on a condition variable pays a futex sleep and wake-up for each. Returns
/// whether it moved on; gives up after a few tens of microseconds.
pub(crate) fn spin_until_changed(counter: &AtomicU64, seen: u64) -> bool {
    const SPINS: u32 = 16;
    const YIELDS: u32 = 32;
    for round in 0..SPINS + YIELDS {
        if counter.load(Ordering::Acquire) != seen {
            return true;
        }
        if round < SPINS {
            for _ in 0..64 {
                std::hint::spin_loop();
            }
        } else {
            std::thread::yield_now();
        }
    }
    counter.load(Ordering::Acquire) != seen
}
