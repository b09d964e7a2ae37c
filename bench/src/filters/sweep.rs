//! The bits/key sweep: one row per (contender, bits/key).

use std::hint::black_box;
use std::time::Instant;

use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde_json::json;

use super::contenders::{Built, Contender};
use super::key_hashes;

/// What to run.
#[derive(Debug, Clone)]
pub struct SweepConfig {
    /// Keys inserted into every filter.
    pub keys: usize,
    /// Never-inserted keys queried per row (the FPR sample; at least 2,000,000).
    pub negative_queries: usize,
    /// Inserted keys queried per row (positive query timing).
    pub positive_queries: usize,
    /// Bits/key values of the sweep.
    pub bits_per_key: Vec<f64>,
    /// Seed of the query shuffles.
    pub seed: u64,
}

/// One measured row (the JSON object of `--json`).
#[derive(Debug, Clone)]
pub struct SweepRow {
    /// Contender name.
    pub filter: &'static str,
    /// Bits/key asked for.
    pub target_bits_per_key: f64,
    /// Serialized size × 8 / n.
    pub bits_per_key: f64,
    /// Measured false-positive rate over the negative queries.
    pub fpr: f64,
    /// `bits_per_key / log2(1 / fpr)`: 1.0 is the information-theoretic floor.
    pub floor_ratio: f64,
    /// Build time per key.
    pub build_ns_per_key: f64,
    /// Time per query of an inserted key.
    pub query_pos_ns: f64,
    /// Time per query of a never-inserted key.
    pub query_neg_ns: f64,
    /// Time per never-inserted key through the batched query (`may_contain_batch`, which
    /// prefetches ahead); `None` for filters without one.
    pub query_neg_batch_ns: Option<f64>,
}

impl SweepRow {
    /// The row as the JSON object filter-bench prints.
    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "filter": self.filter,
            "target_bits_per_key": round(self.target_bits_per_key, 3),
            "bits_per_key": round(self.bits_per_key, 4),
            "fpr": self.fpr,
            "floor_ratio": round(self.floor_ratio, 4),
            "build_ns_per_key": round(self.build_ns_per_key, 2),
            "query_pos_ns": round(self.query_pos_ns, 2),
            "query_neg_ns": round(self.query_neg_ns, 2),
            "query_neg_batch_ns": self.query_neg_batch_ns.map(|ns| round(ns, 2)),
            "kernel": siftdb_filter::kernel::active().name(),
            "build": build_flags(),
        })
    }
}

/// How this binary was compiled for the CPU: `native` when built with the local CPU's features
/// (e.g. `-C target-cpu=native` enabled BMI2), else `portable` (the target's baseline, as a
/// dependent crate builds siftdb).
pub fn build_flags() -> &'static str {
    if cfg!(all(target_arch = "x86_64", target_feature = "bmi2")) {
        "native"
    } else {
        "portable"
    }
}

fn round(x: f64, digits: i32) -> f64 {
    let scale = 10f64.powi(digits);
    (x * scale).round() / scale
}

/// The ribbon bits/key whose expected FPR is `target` for `keys` keys (bisection on the curve).
pub fn ribbon_bits_for_fpr(keys: usize, target: f64) -> f64 {
    let (mut lo, mut hi) = (0.5f64, 40.0f64);
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if siftdb_filter::ribbon_expected_fpr(keys, mid) > target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (hi * 1000.0).ceil() / 1000.0
}

/// Runs every (contender, bits/key) pair and returns the rows in order, calling `on_row` for
/// each once all are measured.
///
/// Every filter is built first; then the one-at-a-time query loops run in [`QUERY_PASSES`]
/// rounds, each round timing every filter once, and a row reports its median pass. Round-robin
/// passes put every contender under the same load: on a shared machine the load moves by tens
/// of percent within a minute, which timing the contenders one after another would turn into
/// differences between them.
pub fn run_sweep(config: &SweepConfig, mut on_row: impl FnMut(&SweepRow)) -> Vec<SweepRow> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(config.seed);
    let positives = key_hashes(0, config.keys);
    let mut positive_queries: Vec<u64> = positives
        .iter()
        .copied()
        .cycle()
        .take(config.positive_queries)
        .collect();
    positive_queries.shuffle(&mut rng);
    let negatives = key_hashes(1 << 40, config.negative_queries);

    let mut built: Vec<BuiltRow> = sweep_plan(config)
        .into_iter()
        .filter_map(|(contender, bpk)| BuiltRow::build(contender, bpk, &positives))
        .collect();
    for _ in 0..QUERY_PASSES {
        for row in &mut built {
            row.time_pass(&positive_queries, &negatives);
        }
    }
    let rows: Vec<SweepRow> = built
        .iter()
        .map(|row| row.finish(config.keys, &positive_queries, &negatives))
        .collect();
    rows.iter().for_each(&mut on_row);
    rows
}

/// Every (contender, bits/key) pair of the sweep, in the order of its rows.
fn sweep_plan(config: &SweepConfig) -> Vec<(Contender, f64)> {
    let mut plan: Vec<(Contender, f64)> = Vec::new();
    for &bpk in &config.bits_per_key {
        plan.push((Contender::BlockedBloom, bpk));
    }
    for &bpk in &config.bits_per_key {
        plan.push((Contender::Ribbon, bpk));
    }
    // The ribbon settings that give ~1 % and ~0.1 % FPR.
    for target in [0.01, 0.001] {
        plan.push((Contender::Ribbon, ribbon_bits_for_fpr(config.keys, target)));
    }
    for &bpk in &config.bits_per_key {
        plan.push((Contender::FastBloom, bpk));
    }
    // siftdb's own binary fuse (8- and 16-bit fingerprints) beside xorf's.
    plan.push((Contender::SiftFuse, 8.0));
    plan.push((Contender::SiftFuse, 16.0));
    plan.push((Contender::BinaryFuse8, 8.0));
    plan.push((Contender::BinaryFuse16, 16.0));
    plan
}

/// Timed passes of each one-at-a-time query loop; a row reports the median pass.
pub const QUERY_PASSES: usize = 5;

/// One row's filter, built, and its timed passes so far.
struct BuiltRow {
    contender: Contender,
    bpk: f64,
    built: Built,
    build_ns: f64,
    pos_passes: Vec<f64>,
    neg_passes: Vec<f64>,
    found: usize,
    false_positives: usize,
}

impl BuiltRow {
    /// `contender` built at `bpk` bits/key over `positives`; `None` (said on stderr) if it
    /// could not be.
    fn build(contender: Contender, bpk: f64, positives: &[u64]) -> Option<BuiltRow> {
        let start = Instant::now();
        let built = match contender.build(positives, bpk) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("{} at {bpk} bits/key: build failed: {e}", contender.name());
                return None;
            }
        };
        Some(BuiltRow {
            contender,
            bpk,
            built,
            build_ns: start.elapsed().as_nanos() as f64,
            pos_passes: Vec::new(),
            neg_passes: Vec::new(),
            found: 0,
            false_positives: 0,
        })
    }

    /// One timed pass over the inserted and one over the never-inserted queries.
    fn time_pass(&mut self, positive_queries: &[u64], negatives: &[u64]) {
        let built = &self.built;
        let start = Instant::now();
        let mut found = 0usize;
        for &h in positive_queries {
            found += usize::from(built.contains(black_box(h)));
        }
        self.pos_passes.push(start.elapsed().as_nanos() as f64);
        let start = Instant::now();
        let mut false_positives = 0usize;
        for &h in negatives {
            false_positives += usize::from(built.contains(black_box(h)));
        }
        self.neg_passes.push(start.elapsed().as_nanos() as f64);
        // Every pass asks the same filter the same queries: the counts are the same each time.
        self.found = found;
        self.false_positives = false_positives;
    }

    /// The row: median passes, the batched query (timed once), FPR and size.
    fn finish(&self, keys: usize, positive_queries: &[u64], negatives: &[u64]) -> SweepRow {
        let name = self.contender.name();
        if self.found != positive_queries.len() {
            // A false negative is a broken filter; say so loudly rather than report its speed.
            eprintln!(
                "{name}: FALSE NEGATIVES: {} of {} inserted keys not found",
                positive_queries.len() - self.found,
                positive_queries.len()
            );
        }
        let mut answers = Vec::new();
        let start = Instant::now();
        let batch_ns = self
            .built
            .contains_batch(black_box(negatives), &mut answers)
            .map(|()| start.elapsed().as_nanos() as f64);
        if batch_ns.is_some() && answers.iter().filter(|&&a| a).count() != self.false_positives {
            eprintln!("{name}: the batched query disagrees with the single query");
        }
        let fpr = self.false_positives as f64 / negatives.len() as f64;
        let bits_per_key = self.built.serialized_bytes() as f64 * 8.0 / keys as f64;
        let per = |ns: f64, n: usize| ns / n.max(1) as f64;
        SweepRow {
            filter: name,
            target_bits_per_key: self.bpk,
            bits_per_key,
            fpr,
            floor_ratio: if fpr > 0.0 {
                bits_per_key / (1.0 / fpr).log2()
            } else {
                f64::NAN
            },
            build_ns_per_key: self.build_ns / keys as f64,
            query_pos_ns: per(median(&self.pos_passes), positive_queries.len()),
            query_neg_ns: per(median(&self.neg_passes), negatives.len()),
            query_neg_batch_ns: batch_ns.map(|ns| per(ns, negatives.len())),
        }
    }
}

/// The median of `times` (not empty).
fn median(times: &[f64]) -> f64 {
    let mut sorted = times.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied().unwrap_or(f64::NAN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sweep_measures_every_planned_row_with_median_passes() {
        let config = SweepConfig {
            keys: 5_000,
            negative_queries: 50_000,
            positive_queries: 5_000,
            bits_per_key: vec![10.0],
            seed: 7,
        };
        let mut printed = 0;
        let rows = run_sweep(&config, |_| printed += 1);
        assert_eq!(rows.len(), sweep_plan(&config).len());
        assert_eq!(printed, rows.len());
        for row in &rows {
            assert!(row.query_pos_ns > 0.0 && row.query_neg_ns > 0.0, "{row:?}");
            // 10 bits/key (or a fuse filter's 8+): well under 5 % false positives.
            assert!(row.fpr < 0.05, "{row:?}");
        }
    }

    #[test]
    fn the_median_of_passes_ignores_one_slow_outlier() {
        assert_eq!(median(&[5.0, 1.0, 100.0, 2.0, 3.0]), 3.0);
    }
}
