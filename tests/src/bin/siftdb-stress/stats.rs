//! Counters of the run (atomics), the mismatch report, and the progress line.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::cli::OpKind;

/// How many mismatches are printed in full.
const PRINTED: u64 = 20;
/// How many acknowledged (or failed) writes the history keeps, for the reports.
const HISTORY: usize = 1 << 16;

/// One write in the history: operation, keyspace, key, state written, whether it was
/// acknowledged.
type Written = (String, usize, u32, u64, bool);

/// The run's counters.
pub struct Stats {
    /// The run's seed (printed with every mismatch).
    pub seed: u64,
    /// Operations done.
    pub ops: AtomicU64,
    /// Keys compared with the expected state.
    pub verifications: AtomicU64,
    /// Reads that disagreed with the expected state, and unexpected errors.
    pub mismatches: AtomicU64,
    /// Writes that failed (expected under `--faults` only).
    pub write_errors: AtomicU64,
    /// Reads and other operations that failed (expected under `--faults` only).
    pub read_errors: AtomicU64,
    /// `Db::resume` calls that cleared an error.
    pub resumes: AtomicU64,
    /// Faults injected.
    pub faults: AtomicU64,
    /// Optimistic commits refused because of a write the stress made on purpose.
    pub forced_conflicts: AtomicU64,
    /// Transactions retried (conflict, lock timeout, deadlock).
    pub retries: AtomicU64,
    /// Set to stop the threads (the end, or a mismatch).
    pub stop: AtomicBool,
    per_op: Vec<AtomicU64>,
    history: Mutex<VecDeque<Written>>,
}

impl Stats {
    /// Zeroed counters.
    pub fn new(seed: u64) -> Stats {
        let zero = || AtomicU64::new(0);
        Stats {
            seed,
            ops: zero(),
            verifications: zero(),
            mismatches: zero(),
            write_errors: zero(),
            read_errors: zero(),
            resumes: zero(),
            faults: zero(),
            forced_conflicts: zero(),
            retries: zero(),
            stop: AtomicBool::new(false),
            per_op: OpKind::ALL.iter().map(|_| zero()).collect(),
            history: Mutex::new(VecDeque::new()),
        }
    }

    /// Counts one operation of `kind`.
    pub fn count_op(&self, kind: OpKind) {
        self.ops.fetch_add(1, Relaxed);
        if let Some(i) = OpKind::ALL.iter().position(|&k| k == kind) {
            self.per_op[i].fetch_add(1, Relaxed);
        }
    }

    /// Whether the threads should stop.
    pub fn stopped(&self) -> bool {
        self.stop.load(Relaxed)
    }

    /// Records a write of `state` to `key` of keyspace `ks` by `op` (`acked`: it succeeded).
    pub fn record(&self, op: &str, ks: usize, key: u32, state: u64, acked: bool) {
        let mut h = self
            .history
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if h.len() == HISTORY {
            h.pop_front();
        }
        h.push_back((op.to_string(), ks, key, state, acked));
    }

    /// The last writes of `key` (by its name) in keyspace `ks` (by its name) this process saw.
    fn history_of(&self, ks: &str, key: &str) -> String {
        let h = self
            .history
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let lines: Vec<String> = h
            .iter()
            .filter(|(_, k, i, _, _)| {
                crate::values::KEYSPACES[*k] == ks && crate::values::key_name(*i) == key.as_bytes()
            })
            .map(|(op, _, _, state, acked)| {
                let outcome = if *acked { "acknowledged" } else { "failed" };
                format!("    {op}: state {state:#x} ({outcome})")
            })
            .collect();
        let skip = lines.len().saturating_sub(10);
        lines[skip..].join("\n")
    }

    /// Reports a mismatch (printed in full for the first few, with the key's last writes) and
    /// stops the run.
    pub fn mismatch(&self, op: &str, ks: &str, key: &str, expected: &str, actual: &str) {
        let n = self.mismatches.fetch_add(1, Relaxed);
        self.stop.store(true, Relaxed);
        if n < PRINTED {
            let mut history = self.history_of(ks, key);
            if !history.is_empty() {
                history = format!("\n  last writes of the key in this process:\n{history}");
            }
            eprintln!(
                "MISMATCH (seed {}): operation {op}, keyspace {ks}, key {key}\n  expected: {expected}\n  actual:   {actual}{history}",
                self.seed
            );
        }
    }

    /// Operations done per kind, for the summary.
    pub fn per_op_summary(&self) -> String {
        OpKind::ALL
            .iter()
            .zip(&self.per_op)
            .map(|(k, n)| format!("{} {}", k.name(), n.load(Relaxed)))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The progress line.
    pub fn progress(&self, started: Instant) -> String {
        let secs = started.elapsed().as_secs_f64();
        let ops = self.ops.load(Relaxed);
        format!(
            "stress: {secs:.0} s, {ops} ops ({:.0}/s), {} verifications, {} mismatches, \
             {} write errors, {} read errors, {} resumes, {} faults",
            ops as f64 / secs.max(0.001),
            self.verifications.load(Relaxed),
            self.mismatches.load(Relaxed),
            self.write_errors.load(Relaxed),
            self.read_errors.load(Relaxed),
            self.resumes.load(Relaxed),
            self.faults.load(Relaxed),
        )
    }
}

/// Prints the progress line to stderr every 10 s until `done` is set.
pub fn progress_loop(stats: &Stats, done: &AtomicBool, started: Instant) {
    let mut next = Duration::from_secs((started.elapsed().as_secs() / 10 + 1) * 10);
    while !done.load(Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
        if started.elapsed() >= next {
            eprintln!("{}", stats.progress(started));
            next += Duration::from_secs(10);
        }
    }
}
