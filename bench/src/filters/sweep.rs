//! The bits/key sweep: one row per (contender, bits/key).

use std::hint::black_box;
use std::time::Instant;

use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde_json::json;

use super::contenders::Contender;
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

/// Runs every (contender, bits/key) pair and returns the rows in order, calling `on_row` as each
/// finishes (so long runs print progressively).
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

    let plan = sweep_plan(config);
    let mut rows = Vec::new();
    for (contender, bpk) in plan {
        let Some(row) = measure_row(
            contender,
            bpk,
            config.keys,
            &positives,
            &positive_queries,
            &negatives,
        ) else {
            continue;
        };
        on_row(&row);
        rows.push(row);
    }
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

/// One row: `contender` built at `bpk` bits/key over `positives` (`keys` of them), then timed on
/// the inserted and never-inserted queries; `None` if it could not be built.
fn measure_row(
    contender: Contender,
    bpk: f64,
    keys: usize,
    positives: &[u64],
    positive_queries: &[u64],
    negatives: &[u64],
) -> Option<SweepRow> {
    let start = Instant::now();
    let built = match contender.build(positives, bpk) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("{} at {bpk} bits/key: build failed: {e}", contender.name());
            return None;
        }
    };
    let build_ns = start.elapsed().as_nanos() as f64;

    let start = Instant::now();
    let mut found = 0usize;
    for &h in positive_queries {
        found += usize::from(built.contains(black_box(h)));
    }
    let pos_ns = start.elapsed().as_nanos() as f64;
    if found != positive_queries.len() {
        // A false negative is a broken filter; say so loudly rather than report its speed.
        eprintln!(
            "{}: FALSE NEGATIVES: {} of {} inserted keys not found",
            contender.name(),
            positive_queries.len() - found,
            positive_queries.len()
        );
    }

    let start = Instant::now();
    let mut false_positives = 0usize;
    for &h in negatives {
        false_positives += usize::from(built.contains(black_box(h)));
    }
    let neg_ns = start.elapsed().as_nanos() as f64;

    let mut answers = Vec::new();
    let start = Instant::now();
    let batch_ns = built
        .contains_batch(black_box(negatives), &mut answers)
        .map(|()| start.elapsed().as_nanos() as f64);
    if batch_ns.is_some() && answers.iter().filter(|&&a| a).count() != false_positives {
        eprintln!(
            "{}: the batched query disagrees with the single query",
            contender.name()
        );
    }

    let fpr = false_positives as f64 / negatives.len() as f64;
    let bits_per_key = built.serialized_bytes() as f64 * 8.0 / keys as f64;
    Some(SweepRow {
        filter: contender.name(),
        target_bits_per_key: bpk,
        bits_per_key,
        fpr,
        floor_ratio: if fpr > 0.0 {
            bits_per_key / (1.0 / fpr).log2()
        } else {
            f64::NAN
        },
        build_ns_per_key: build_ns / keys as f64,
        query_pos_ns: pos_ns / positive_queries.len().max(1) as f64,
        query_neg_ns: neg_ns / negatives.len().max(1) as f64,
        query_neg_batch_ns: batch_ns.map(|ns| ns / negatives.len().max(1) as f64),
    })
}
