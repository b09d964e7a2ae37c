//! Sampled latency histograms of gets, writes and seeks (cargo feature `metrics`):
//! `siftdb_get_seconds`, `siftdb_put_seconds` and `siftdb_seek_seconds` (`docs/METRICS.md`).
//!
//! One call in [`SAMPLE_EVERY`] per thread is timed; the others only bump a thread-local count.
//! Without the feature [`timed`] is the call itself and nothing here is compiled.

use std::sync::Arc;

/// What a sampled call did: the histogram it goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    /// A point lookup (`get`, `get_opt`, `get_into`, `get_pinned`).
    Get,
    /// A write through `Db::write_opt` (put, delete, merge, a batch).
    Put,
    /// An iterator seek (`seek`, `seek_for_prev`, and the bounded `seek_to_first` /
    /// `seek_to_last`): timed inside `RawIterator`, so only with the feature.
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    Seek,
}

/// One call in this many (per thread) is timed.
#[cfg(feature = "metrics")]
pub(crate) const SAMPLE_EVERY: u32 = 16;

#[cfg(feature = "metrics")]
impl Op {
    /// The histogram's name.
    fn histogram(self) -> &'static str {
        match self {
            Op::Get => "siftdb_get_seconds",
            Op::Put => "siftdb_put_seconds",
            Op::Seek => "siftdb_seek_seconds",
        }
    }
}

#[cfg(feature = "metrics")]
thread_local! {
    /// Calls this thread made since it was last sampled.
    static CALLS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// When this call is one to time, its start; `None` for the others (the first call of a
/// thread is timed, then every [`SAMPLE_EVERY`]th).
#[cfg(feature = "metrics")]
#[inline]
pub(crate) fn sample() -> Option<std::time::Instant> {
    CALLS.with(|calls| {
        let n = calls.get();
        calls.set(if n + 1 == SAMPLE_EVERY { 0 } else { n + 1 });
        (n == 0).then(std::time::Instant::now)
    })
}

/// Records the time since `start` in `op`'s histogram, labelled with the keyspace when known.
#[cfg(feature = "metrics")]
#[cold]
pub(crate) fn record(op: Op, keyspace: Option<&Arc<str>>, start: std::time::Instant) {
    let seconds = start.elapsed().as_secs_f64();
    match keyspace {
        Some(name) => {
            metrics::histogram!(op.histogram(), "keyspace" => Arc::clone(name)).record(seconds)
        }
        None => metrics::histogram!(op.histogram()).record(seconds),
    }
}

/// Runs `run`, timing it when this call is sampled.
#[cfg(feature = "metrics")]
#[inline]
pub(crate) fn timed<T>(op: Op, keyspace: Option<&Arc<str>>, run: impl FnOnce() -> T) -> T {
    match sample() {
        None => run(),
        Some(start) => {
            let out = run();
            record(op, keyspace, start);
            out
        }
    }
}

/// Without the feature: the call itself.
#[cfg(not(feature = "metrics"))]
#[inline(always)]
pub(crate) fn timed<T>(_op: Op, _keyspace: Option<&Arc<str>>, run: impl FnOnce() -> T) -> T {
    run()
}
