//! Running a workload's steps on worker threads and timing them: per-step latencies into an
//! HDR histogram, wall time, and the per-thread time `db_bench` divides by for `micros/op`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use super::error::{Error, Result};
use super::keys::Rng;
use super::progress::Progress;

/// Latencies above this (one minute, in nanoseconds) are recorded as this.
const MAX_LATENCY_NANOS: u64 = 60_000_000_000;

/// Per-thread scratch of a workload step.
#[derive(Debug)]
pub struct ThreadCtx {
    /// Index of the worker thread.
    pub thread: usize,
    /// The thread's random generator.
    pub rng: Rng,
    /// A key buffer.
    pub key: Vec<u8>,
    /// A read buffer (values; the keys of a batched lookup).
    pub buf: Vec<u8>,
    /// The key indexes of a batched lookup.
    pub indexes: Vec<u64>,
}

/// The operation types of a mixed workload (YCSB's), each with its own latency histogram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpKind {
    /// A point lookup.
    Read,
    /// A put over an existing key.
    Update,
    /// A put of a new key.
    Insert,
    /// A short range scan.
    Scan,
    /// A lookup and a put of the same key, timed as one operation.
    ReadModifyWrite,
}

impl OpKind {
    /// Every kind, in report order.
    pub const ALL: [OpKind; 5] = [
        OpKind::Read,
        OpKind::Update,
        OpKind::Insert,
        OpKind::Scan,
        OpKind::ReadModifyWrite,
    ];

    /// The name YCSB reports it under, lower case.
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Read => "read",
            OpKind::Update => "update",
            OpKind::Insert => "insert",
            OpKind::Scan => "scan",
            OpKind::ReadModifyWrite => "read-modify-write",
        }
    }

    fn slot(self) -> usize {
        self as usize
    }
}

/// What one step did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Operations (entries written, lookups, seeks).
    pub ops: u64,
    /// Lookups or seeks that found their key.
    pub found: u64,
    /// Lookups that should have found their key according to the key model.
    pub expected: u64,
    /// Entries read by scans and seeks, or keys actually removed by deletes.
    pub entries: u64,
    /// Entries scans should have read according to the key model.
    pub expected_entries: u64,
    /// Batched lookups (multiread workloads: one per step, `--batch_size` keys each).
    pub batches: u64,
    /// The engine's `multi_get` calls those made: one per keyspace a batch's keys fall in.
    pub calls: u64,
    /// Transactions the engine aborted (randomtransaction: a conflict, a lock timeout, a
    /// deadlock); committed ones count in `ops`.
    pub aborts: u64,
    /// The step's operation type, when the workload mixes several (its latency then also goes
    /// to that type's histogram, [`Measured::by_kind`]).
    pub kind: Option<OpKind>,
}

impl Outcome {
    fn add(&mut self, other: Outcome) {
        self.ops += other.ops;
        self.found += other.found;
        self.expected += other.expected;
        self.entries += other.entries;
        self.expected_entries += other.expected_entries;
        self.batches += other.batches;
        self.calls += other.calls;
        self.aborts += other.aborts;
    }
}

/// The measurements of one workload.
#[derive(Debug, Clone)]
pub struct Measured {
    /// Summed outcomes.
    pub totals: Outcome,
    /// Wall time from the first thread's start to the last one's end.
    pub wall: Duration,
    /// Busy time summed over the threads.
    pub thread_time: Duration,
    /// Worker threads.
    pub threads: usize,
    /// Step latencies in nanoseconds.
    pub latency: Histogram<u64>,
    /// Step latencies per operation type, for the types that occurred (in [`OpKind::ALL`]'s
    /// order).
    pub by_kind: Vec<(OpKind, Histogram<u64>)>,
    /// Operations completed in each second since the workload started (over all threads):
    /// throughput over time, where stalls show as dips.
    pub per_second: Vec<u64>,
}

impl Measured {
    /// `db_bench`'s micros/op: the threads' summed time per operation.
    pub fn micros_per_op(&self) -> f64 {
        if self.totals.ops == 0 {
            0.0
        } else {
            self.thread_time.as_secs_f64() * 1e6 / self.totals.ops as f64
        }
    }

    /// Microseconds per batched lookup (the threads' summed time per batch); 0 without batches.
    pub fn micros_per_batch(&self) -> f64 {
        if self.totals.batches == 0 {
            0.0
        } else {
            self.thread_time.as_secs_f64() * 1e6 / self.totals.batches as f64
        }
    }

    /// Operations per second of wall time.
    pub fn ops_per_sec(&self) -> f64 {
        let secs = self.wall.as_secs_f64();
        if secs <= 0.0 {
            0.0
        } else {
            self.totals.ops as f64 / secs
        }
    }

    /// Latency quantile `q` (0..=1) in microseconds; 0 without samples.
    pub fn quantile_micros(&self, q: f64) -> f64 {
        if self.latency.is_empty() {
            0.0
        } else {
            self.latency.value_at_quantile(q) as f64 / 1000.0
        }
    }

    /// Largest latency in microseconds.
    pub fn max_micros(&self) -> f64 {
        self.latency.max() as f64 / 1000.0
    }
}

/// A latency histogram of nanoseconds from 1 ns to one minute at 3 significant digits.
pub fn new_histogram() -> Result<Histogram<u64>> {
    Histogram::new_with_bounds(1, MAX_LATENCY_NANOS, 3)
        .map_err(|e| Error::new(format!("cannot create a latency histogram: {e}")))
}

struct ThreadResult {
    totals: Outcome,
    busy: Duration,
    started: Instant,
    ended: Instant,
    latency: Histogram<u64>,
    by_kind: Vec<Option<Histogram<u64>>>,
    per_second: Vec<u64>,
}

/// What one thread records per step.
struct ThreadRecorder {
    latency: Histogram<u64>,
    by_kind: Vec<Option<Histogram<u64>>>,
    per_second: Vec<u64>,
    origin: Instant,
}

impl ThreadRecorder {
    fn new(origin: Instant) -> Result<ThreadRecorder> {
        Ok(ThreadRecorder {
            latency: new_histogram()?,
            by_kind: OpKind::ALL.iter().map(|_| None).collect(),
            per_second: Vec::new(),
            origin,
        })
    }

    fn record(&mut self, outcome: &Outcome, start: Instant, end: Instant) -> Result<()> {
        let nanos = (end - start).as_nanos() as u64;
        self.latency.saturating_record(nanos);
        if let Some(kind) = outcome.kind {
            let slot = &mut self.by_kind[kind.slot()];
            if slot.is_none() {
                *slot = Some(new_histogram()?);
            }
            if let Some(h) = slot {
                h.saturating_record(nanos);
            }
        }
        let second = (end - self.origin).as_secs() as usize;
        if self.per_second.len() <= second {
            self.per_second.resize(second + 1, 0);
        }
        self.per_second[second] += outcome.ops;
        Ok(())
    }
}

/// Runs steps `0..steps` split into contiguous ranges over `threads` threads; `step` does one
/// step for step index `i`. `stream` separates the random streams of workloads. The first
/// failing step stops every thread and is returned.
pub fn drive<F>(
    threads: usize,
    steps: u64,
    seed: u64,
    stream: u64,
    key_size: usize,
    progress: &Progress,
    step: F,
) -> Result<Measured>
where
    F: Fn(&mut ThreadCtx, u64) -> Result<Outcome> + Sync,
{
    let threads = threads.max(1);
    let failed = AtomicBool::new(false);
    let origin = Instant::now();
    let results: Vec<Result<ThreadResult>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let range = thread_steps(t, threads, steps);
                let (step, failed) = (&step, &failed);
                scope.spawn(move || {
                    // Made on the worker thread: its buffers are allocated where they are used.
                    let ctx = ThreadCtx {
                        thread: t,
                        rng: Rng::new(seed, stream.wrapping_mul(1 << 20) + t as u64),
                        key: vec![0; key_size],
                        buf: Vec::new(),
                        indexes: Vec::new(),
                    };
                    run_thread(ctx, range, origin, failed, progress, step)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Error::new("a worker thread panicked")))
            })
            .collect()
    });
    merge_threads(results, threads)
}

/// The steps of thread `t` of `threads`: contiguous, the first `steps % threads` threads one
/// more than the others.
fn thread_steps(t: usize, threads: usize, steps: u64) -> std::ops::Range<u64> {
    let per = steps / threads as u64;
    let extra = steps % threads as u64;
    let start = t as u64 * per + (t as u64).min(extra);
    let end = start + per + u64::from((t as u64) < extra);
    start..end
}

/// One worker thread: the steps of `range` in order, each timed, until they are done or some
/// thread's step failed (`failed`, which a failing step sets).
fn run_thread<F>(
    mut ctx: ThreadCtx,
    range: std::ops::Range<u64>,
    origin: Instant,
    failed: &AtomicBool,
    progress: &Progress,
    step: &F,
) -> Result<ThreadResult>
where
    F: Fn(&mut ThreadCtx, u64) -> Result<Outcome> + Sync,
{
    let mut recorder = ThreadRecorder::new(origin)?;
    let mut totals = Outcome::default();
    let mut unreported = 0;
    let started = Instant::now();
    let mut last = started;
    for i in range {
        if failed.load(Ordering::Relaxed) {
            break;
        }
        let outcome = match step(&mut ctx, i) {
            Ok(outcome) => outcome,
            Err(e) => {
                failed.store(true, Ordering::Relaxed);
                return Err(e);
            }
        };
        totals.add(outcome);
        unreported += outcome.ops;
        let now = Instant::now();
        recorder.record(&outcome, last, now)?;
        last = now;
        if unreported >= 4096 {
            progress.inc(unreported);
            unreported = 0;
        }
    }
    progress.inc(unreported);
    Ok(ThreadResult {
        totals,
        busy: last - started,
        started,
        ended: last,
        latency: recorder.latency,
        by_kind: recorder.by_kind,
        per_second: recorder.per_second,
    })
}

/// The measurement of a workload from its threads' results (the first error, if any thread
/// failed): totals and histograms summed, wall time from the first start to the last end.
fn merge_threads(results: Vec<Result<ThreadResult>>, threads: usize) -> Result<Measured> {
    let mut totals = Outcome::default();
    let mut thread_time = Duration::ZERO;
    let mut latency = new_histogram()?;
    let mut by_kind: Vec<Option<Histogram<u64>>> = OpKind::ALL.iter().map(|_| None).collect();
    let mut per_second: Vec<u64> = Vec::new();
    let mut first: Option<Instant> = None;
    let mut last: Option<Instant> = None;
    for result in results {
        let r = result?;
        totals.add(r.totals);
        thread_time += r.busy;
        latency
            .add(&r.latency)
            .map_err(|e| Error::new(format!("cannot merge latency histograms: {e}")))?;
        merge_kinds(&mut by_kind, r.by_kind)?;
        if per_second.len() < r.per_second.len() {
            per_second.resize(r.per_second.len(), 0);
        }
        for (sum, n) in per_second.iter_mut().zip(&r.per_second) {
            *sum += n;
        }
        first = Some(first.map_or(r.started, |f| f.min(r.started)));
        last = Some(last.map_or(r.ended, |l| l.max(r.ended)));
    }
    let wall = match (first, last) {
        (Some(f), Some(l)) => l - f,
        _ => Duration::ZERO,
    };
    Ok(Measured {
        totals,
        wall,
        thread_time,
        threads,
        latency,
        by_kind: OpKind::ALL
            .into_iter()
            .zip(by_kind)
            .filter_map(|(kind, h)| h.map(|h| (kind, h)))
            .collect(),
        per_second,
    })
}

/// Adds one thread's per-kind histograms into `sums`.
fn merge_kinds(
    sums: &mut [Option<Histogram<u64>>],
    thread: Vec<Option<Histogram<u64>>>,
) -> Result<()> {
    for (sum, h) in sums.iter_mut().zip(thread) {
        let Some(h) = h else { continue };
        match sum {
            Some(s) => s
                .add(&h)
                .map_err(|e| Error::new(format!("cannot merge latency histograms: {e}")))?,
            None => *sum = Some(h),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_split_over_threads_exactly_once() {
        let seen: Vec<AtomicBool> = (0..1001).map(|_| AtomicBool::new(false)).collect();
        let m = drive(3, 1001, 1, 1, 8, &Progress::hidden(), |_, i| {
            assert!(!seen[i as usize].swap(true, Ordering::Relaxed));
            Ok(Outcome {
                ops: 1,
                found: i % 2,
                ..Outcome::default()
            })
        })
        .unwrap();
        assert_eq!(m.totals.ops, 1001);
        assert_eq!(m.totals.found, 500);
        assert_eq!(m.latency.len(), 1001);
        assert!(seen.iter().all(|s| s.load(Ordering::Relaxed)));
        assert_eq!(m.per_second.iter().sum::<u64>(), 1001);
        assert!(m.by_kind.is_empty());
    }

    #[test]
    fn latencies_are_kept_per_operation_kind() {
        let m = drive(2, 300, 1, 1, 8, &Progress::hidden(), |_, i| {
            let kind = [OpKind::Read, OpKind::Update, OpKind::Scan][(i % 3) as usize];
            Ok(Outcome {
                ops: 1,
                kind: Some(kind),
                ..Outcome::default()
            })
        })
        .unwrap();
        let kinds: Vec<(OpKind, u64)> = m.by_kind.iter().map(|(k, h)| (*k, h.len())).collect();
        assert_eq!(
            kinds,
            [
                (OpKind::Read, 100),
                (OpKind::Update, 100),
                (OpKind::Scan, 100)
            ]
        );
        assert_eq!(m.latency.len(), 300);
    }

    #[test]
    fn a_failing_step_is_returned() {
        let r = drive(2, 100, 1, 1, 8, &Progress::hidden(), |_, i| {
            if i == 70 {
                Err(Error::new("boom"))
            } else {
                Ok(Outcome::default())
            }
        });
        assert_eq!(r.unwrap_err().to_string(), "boom");
    }
}
