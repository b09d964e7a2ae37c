//! fillsustained: the highest write rate an engine sustains, in the spirit of Pebble's
//! `bench write`. A burst tells how fast one writer goes unpaced; then trials paced at rates
//! bisected between 0 and that find the highest one that holds for `--sustained_seconds`:
//! the writer keeps within 5 % of its rate, writes never stall, and L0 and the bytes compaction
//! owes stay under their limits. Every trial starts from a settled tree (memtables flushed,
//! compaction caught up, untimed), so each measures the same thing: how long compaction keeps
//! pace with that rate from rest.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use super::super::engine::WritePressure;
use super::super::error::{Error, Result};
use super::super::keys::{Rng, Variant};
use super::super::measure::{Measured, Outcome};
use super::Workbench;

/// The share of its target a paced trial must reach.
const KEEP_UP: f64 = 0.95;
/// How often a trial samples the engine's write pressure.
const SAMPLE_EVERY: Duration = Duration::from_millis(100);
/// Puts between two checks of the pacing clock.
const PACE_BATCH: u64 = 32;

/// One trial of fillsustained.
#[derive(Debug, Clone, PartialEq)]
pub struct Trial {
    /// The paced rate in puts per second (`None`: the unpaced burst).
    pub target: Option<f64>,
    /// Puts per second reached.
    pub achieved: f64,
    /// The most L0 tables sampled (`None`: the engine does not say).
    pub max_l0_files: Option<u64>,
    /// The most bytes compaction owed, sampled (`None`: the engine does not say).
    pub max_pending_bytes: Option<u64>,
    /// Microseconds writes stalled (`None`: the engine does not count them).
    pub stall_micros: Option<u64>,
    /// Why the trial failed (`None`: it passed).
    pub failed: Option<String>,
}

/// What fillsustained found.
#[derive(Debug, Clone, PartialEq)]
pub struct SustainedReport {
    /// Every trial, in order.
    pub trials: Vec<Trial>,
    /// The highest rate of a passed trial (0: none passed).
    pub sustained: f64,
    /// The L0 limit the trials were held to.
    pub max_l0_files: u64,
    /// The pending-bytes limit the trials were held to.
    pub max_pending_bytes: u64,
}

/// The highest write pressure seen while a trial runs.
#[derive(Default)]
struct Peak {
    l0_files: Option<u64>,
    pending: Option<u64>,
}

impl Peak {
    fn add(&mut self, p: WritePressure) {
        let max = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        self.l0_files = max(self.l0_files, p.l0_files);
        self.pending = max(self.pending, p.pending_compaction_bytes);
    }
}

impl Workbench<'_> {
    /// fillsustained: the burst, then the bisection. The measurement returned is that of the
    /// fastest passed trial (the burst's if none passed), its latencies those of its puts.
    pub(super) fn fill_sustained(&self, stream: u64) -> Result<(Measured, SustainedReport)> {
        let s = self.config.sustained;
        if !(s.seconds > 0.0 && s.seconds.is_finite()) {
            return Err(Error::new("--sustained_seconds must be a positive number"));
        }
        let mut rng = Rng::new(self.config.seed, stream);
        let mut report = SustainedReport {
            trials: Vec::new(),
            sustained: 0.0,
            max_l0_files: s
                .max_l0_files
                .unwrap_or(self.sift_options().level0_stop_writes_trigger as u64),
            max_pending_bytes: s.max_pending_bytes,
        };
        let (burst, mut best) = self.trial(None, &mut rng, &report)?;
        let (mut lo, mut hi) = (0.0, burst.achieved);
        if burst.failed.is_none() {
            // The writer, not the engine, is the limit.
            report.sustained = burst.achieved;
            lo = hi;
        }
        self.print_trial(&burst);
        report.trials.push(burst);
        for _ in 0..s.trials {
            if hi - lo < hi * 0.01 {
                break;
            }
            let target = 0.5 * (lo + hi);
            self.engine.flush()?;
            let (trial, measured) = self.trial(Some(target), &mut rng, &report)?;
            self.print_trial(&trial);
            if trial.failed.is_none() {
                lo = target;
                report.sustained = target;
                best = measured;
            } else {
                hi = target;
            }
            report.trials.push(trial);
        }
        Ok((best, report))
    }

    /// The siftdb options the run's flags describe (the limits every engine is held to).
    fn sift_options(&self) -> siftdb::Options {
        super::super::settings::siftdb_options(self.config)
    }

    /// One trial: random puts for `--sustained_seconds`, paced at `target` puts per second if
    /// given, the write pressure sampled beside them.
    fn trial(
        &self,
        target: Option<f64>,
        rng: &mut Rng,
        report: &SustainedReport,
    ) -> Result<(Trial, Measured)> {
        let seconds = Duration::from_secs_f64(self.config.sustained.seconds);
        let stalls_before = self.engine.stats().map(|s| s.stall_micros);
        let peak = Mutex::new(Peak::default());
        let done = AtomicBool::new(false);
        let measured = std::thread::scope(|scope| {
            scope.spawn(|| {
                while !done.load(Ordering::Acquire) {
                    let pressure = self.engine.write_pressure();
                    if let Ok(mut p) = peak.lock() {
                        p.add(pressure);
                    }
                    std::thread::sleep(SAMPLE_EVERY);
                }
            });
            let measured = self.paced_puts(target, seconds, rng);
            done.store(true, Ordering::Release);
            measured
        })?;
        let stall_micros = match (stalls_before, self.engine.stats()) {
            (Some(before), Some(after)) => Some(after.stall_micros.saturating_sub(before)),
            _ => None,
        };
        let peak = peak.into_inner().unwrap_or_default();
        let achieved = measured.totals.ops as f64 / measured.wall.as_secs_f64().max(1e-9);
        let mut trial = Trial {
            target,
            achieved,
            max_l0_files: peak.l0_files,
            max_pending_bytes: peak.pending,
            stall_micros,
            failed: None,
        };
        trial.failed = why_failed(&trial, report);
        Ok((trial, measured))
    }

    /// Puts of random keys for `seconds`, at most `target` per second; each put's latency is
    /// recorded, the pacing sleeps are not.
    fn paced_puts(
        &self,
        target: Option<f64>,
        seconds: Duration,
        rng: &mut Rng,
    ) -> Result<Measured> {
        let mut latency = Histogram::<u64>::new(3).map_err(|e| Error::new(e.to_string()))?;
        let mut key = vec![0u8; self.keys.key_size()];
        let mut per_second: Vec<u64> = Vec::new();
        let mut busy = Duration::ZERO;
        let start = Instant::now();
        let mut ops = 0u64;
        while start.elapsed() < seconds {
            if let Some(rate) = target {
                let due = start + Duration::from_secs_f64(ops as f64 / rate);
                let now = Instant::now();
                if due > now {
                    std::thread::sleep(due - now);
                }
            }
            for _ in 0..PACE_BATCH {
                let index = rng.below(self.config.num.max(1));
                self.keys.encode(index, Variant::Written, &mut key);
                let value = self.values.value(rng);
                let began = Instant::now();
                self.engine.put(self.keys.keyspace(index), &key, value)?;
                let took = began.elapsed();
                busy += took;
                let _ = latency.record(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX).max(1));
                self.model.set_live(index);
                ops += 1;
                let second = start.elapsed().as_secs() as usize;
                if per_second.len() <= second {
                    per_second.resize(second + 1, 0);
                }
                per_second[second] += 1;
            }
        }
        Ok(Measured {
            totals: Outcome {
                ops,
                ..Outcome::default()
            },
            wall: start.elapsed(),
            thread_time: busy,
            threads: 1,
            latency,
            by_kind: Vec::new(),
            per_second,
        })
    }

    fn print_trial(&self, trial: &Trial) {
        if !self.config.json {
            println!("fillsustained: {}", trial_text(trial));
        }
    }
}

/// Why `trial` did not sustain its rate under `report`'s limits (`None`: it did).
fn why_failed(trial: &Trial, report: &SustainedReport) -> Option<String> {
    if let Some(target) = trial.target
        && trial.achieved < KEEP_UP * target
    {
        return Some(format!("the writer fell behind: {:.0}/s", trial.achieved));
    }
    if let Some(stall) = trial.stall_micros.filter(|&s| s > 0) {
        return Some(format!("writes stalled {:.1} ms", stall as f64 / 1000.0));
    }
    if let Some(l0) = trial.max_l0_files.filter(|&l| l >= report.max_l0_files) {
        return Some(format!(
            "L0 reached {l0} tables (limit {})",
            report.max_l0_files
        ));
    }
    if let Some(p) = trial
        .max_pending_bytes
        .filter(|&p| p > report.max_pending_bytes)
    {
        return Some(format!(
            "compaction owed {} (limit {})",
            super::super::text::human_bytes(p),
            super::super::text::human_bytes(report.max_pending_bytes)
        ));
    }
    None
}

/// One line of a trial: rate, pressure, verdict.
pub fn trial_text(t: &Trial) -> String {
    let known = |v: Option<u64>, show: &dyn Fn(u64) -> String| v.map_or("n/a".to_string(), show);
    format!(
        "{} -> {:.0} puts/s; L0 max {}, compaction owed max {}, stalls {}: {}",
        t.target
            .map_or("unpaced".to_string(), |r| format!("paced at {r:.0}/s")),
        t.achieved,
        known(t.max_l0_files, &|l| l.to_string()),
        known(t.max_pending_bytes, &super::super::text::human_bytes),
        known(t.stall_micros, &|s| format!("{:.1} ms", s as f64 / 1000.0)),
        t.failed.as_deref().unwrap_or("sustained")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::args::{Benchmark, Config};
    use crate::runner::engine::Engine;

    #[test]
    fn fillsustained_bisects_below_a_burst_and_reports_every_trial() {
        use clap::Parser;
        // An L0 limit of one table: the unpaced burst (256 KiB memtables) must fail it, so the
        // paced trials run; whatever they find lies below the burst's rate.
        let args = crate::runner::Args::try_parse_from([
            "siftdb-bench",
            "--num=20000",
            "--write_buffer_size=262144",
            "--sustained_seconds=0.3",
            "--sustained_trials=3",
            "--sustained_max_l0_files=1",
            "--json",
        ])
        .unwrap();
        let config = Config::from_args(&args).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("db");
        let engine = crate::runner::SiftEngine::open(&db, &config).unwrap();
        let bench = Workbench::new(&config, &engine, &db).unwrap();
        let result = bench.run(Benchmark::FillSustained, 0).unwrap();
        let report = result.sustained.unwrap();
        assert_eq!(report.max_l0_files, 1);
        let burst = &report.trials[0];
        assert_eq!(burst.target, None);
        assert!(burst.achieved > 0.0 && burst.max_l0_files.is_some());
        for t in &report.trials[1..] {
            assert!(t.target.unwrap() < burst.achieved);
        }
        if burst.failed.is_some() {
            assert_eq!(report.trials.len(), 4);
            assert!(report.sustained < burst.achieved);
        }
        let m = result.measured.unwrap();
        assert!(m.totals.ops > 0 && m.latency.len() == m.totals.ops);
        engine.close().unwrap();
    }

    fn trial(target: Option<f64>, achieved: f64, l0: u64, pending: u64, stall: u64) -> Trial {
        Trial {
            target,
            achieved,
            max_l0_files: Some(l0),
            max_pending_bytes: Some(pending),
            stall_micros: Some(stall),
            failed: None,
        }
    }

    #[test]
    fn trials_fail_on_each_limit() {
        let report = SustainedReport {
            trials: Vec::new(),
            sustained: 0.0,
            max_l0_files: 20,
            max_pending_bytes: 1000,
        };
        assert_eq!(
            why_failed(&trial(Some(100.0), 99.0, 5, 10, 0), &report),
            None
        );
        assert!(why_failed(&trial(Some(100.0), 90.0, 5, 10, 0), &report).is_some());
        assert!(why_failed(&trial(None, 90.0, 5, 10, 1), &report).is_some());
        assert!(why_failed(&trial(None, 90.0, 20, 10, 0), &report).is_some());
        assert!(why_failed(&trial(None, 90.0, 19, 1001, 0), &report).is_some());
        let unknown = Trial {
            max_l0_files: None,
            max_pending_bytes: None,
            stall_micros: None,
            ..trial(Some(100.0), 100.0, 0, 0, 0)
        };
        assert_eq!(why_failed(&unknown, &report), None);
        assert!(trial_text(&unknown).contains("n/a"));
    }
}
