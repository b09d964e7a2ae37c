//! `filter-bench --monkey`: Monkey versus uniform allocation on a tree of levels.
//!
//! Both allocations get the same total budget and plan with the real space-vs-FPR curve of the
//! kind each level is built with. Each level's filter is then actually built at both allocations
//! and its FPR measured, so the report shows what the bits buy, not only what the model says.

use serde_json::json;
use siftdb_filter::{
    monkey, uniform, Filter, FilterBudget, FilterKind, FilterPolicy, FprCurve, KeyHasher,
    LevelAllocation, LevelSpec,
};

use super::key_hashes;

/// Which filter kind the levels use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MonkeyKind {
    /// Blocked bloom on every level.
    Bloom,
    /// Ribbon on every level.
    Ribbon,
    /// The default policy: bloom before `bloom_before_level`, ribbon after.
    Policy {
        /// First ribbon level.
        bloom_before_level: usize,
    },
}

impl MonkeyKind {
    fn kind_for_level(self, level: usize) -> FilterKind {
        match self {
            MonkeyKind::Bloom => FilterKind::BlockedBloom,
            MonkeyKind::Ribbon => FilterKind::Ribbon,
            MonkeyKind::Policy { bloom_before_level } => FilterPolicy {
                bloom_before_level,
                ..FilterPolicy::default()
            }
            .kind_for_level(level),
        }
    }
}

/// One level of the report.
#[derive(Debug, Clone)]
pub struct MonkeyLevelRow {
    /// Level number.
    pub level: usize,
    /// Keys in the level.
    pub keys: u64,
    /// Filter kind.
    pub kind: FilterKind,
    /// Monkey's allocation for the level.
    pub monkey: LevelAllocation,
    /// The uniform allocation for the level.
    pub uniform: LevelAllocation,
    /// FPR measured on a filter built at Monkey's bits/key.
    pub monkey_measured_fpr: f64,
    /// FPR measured on a filter built at the uniform bits/key.
    pub uniform_measured_fpr: f64,
    /// Real bits of the filter built at Monkey's bits/key.
    pub monkey_real_bits: f64,
    /// Real bits of the filter built at the uniform bits/key.
    pub uniform_real_bits: f64,
}

impl MonkeyLevelRow {
    /// The per-level JSON object.
    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "level": self.level,
            "keys": self.keys,
            "kind": self.kind.name(),
            "fpr": self.monkey.fpr,
            "bits_per_key": self.monkey.bits_per_key,
            "measured_fpr": self.monkey_measured_fpr,
            "uniform_fpr": self.uniform.fpr,
            "uniform_bits_per_key": self.uniform.bits_per_key,
            "uniform_measured_fpr": self.uniform_measured_fpr,
        })
    }
}

/// The summary of the report.
#[derive(Debug, Clone)]
pub struct MonkeySummary {
    /// Σ expected FPR under Monkey.
    pub monkey_sum_fpr: f64,
    /// Σ expected FPR under uniform.
    pub uniform_sum_fpr: f64,
    /// Total planned bits under Monkey.
    pub monkey_bits: f64,
    /// Total planned bits under uniform.
    pub uniform_bits: f64,
    /// Σ measured FPR of the filters built at Monkey's allocation.
    pub monkey_measured_sum_fpr: f64,
    /// Σ measured FPR of the filters built at the uniform allocation.
    pub uniform_measured_sum_fpr: f64,
    /// Real bits of all filters built at Monkey's allocation.
    pub monkey_real_bits: f64,
    /// Real bits of all filters built at the uniform allocation.
    pub uniform_real_bits: f64,
}

impl MonkeySummary {
    /// The summary JSON object.
    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "monkey_sum_fpr": self.monkey_sum_fpr,
            "uniform_sum_fpr": self.uniform_sum_fpr,
            "monkey_bits": self.monkey_bits.round(),
            "uniform_bits": self.uniform_bits.round(),
            "ratio": self.uniform_sum_fpr / self.monkey_sum_fpr,
            "monkey_measured_sum_fpr": self.monkey_measured_sum_fpr,
            "uniform_measured_sum_fpr": self.uniform_measured_sum_fpr,
            "monkey_real_bits": self.monkey_real_bits,
            "uniform_real_bits": self.uniform_real_bits,
        })
    }
}

fn build_and_measure(kind: FilterKind, hashes: &[u64], bpk: f64, negatives: &[u64]) -> (f64, f64) {
    if bpk <= 0.0 || hashes.is_empty() {
        return (1.0, 0.0);
    }
    match Filter::from_hashes(kind, bpk, KeyHasher::default(), hashes) {
        Ok(f) => {
            let fp = negatives.iter().filter(|&&h| f.may_contain_hash(h)).count();
            (
                fp as f64 / negatives.len().max(1) as f64,
                f.payload_bytes() as f64 * 8.0,
            )
        }
        Err(_) => (1.0, 0.0),
    }
}

/// Plans both allocations for `level_keys` at `bits_per_key` average, builds every level's filter
/// under each, and measures its FPR over `negative_queries` never-inserted keys. Levels larger
/// than `max_built_keys` are reported from the model only (measured fields are NaN, real bits 0).
pub fn monkey_report(
    level_keys: &[u64],
    bits_per_key: f64,
    kind: MonkeyKind,
    negative_queries: usize,
    max_built_keys: u64,
) -> (Vec<MonkeyLevelRow>, MonkeySummary) {
    let specs: Vec<LevelSpec> = level_keys
        .iter()
        .enumerate()
        .map(|(level, &keys)| LevelSpec::new(keys, FprCurve::from(kind.kind_for_level(level))))
        .collect();
    let budget = FilterBudget::BitsPerKey(bits_per_key);
    let m = monkey(&specs, budget);
    let u = uniform(&specs, budget);
    let negatives = key_hashes(1 << 50, negative_queries);
    let mut rows = Vec::new();
    let mut start = 0u64;
    for (level, &keys) in level_keys.iter().enumerate() {
        let kind = kind.kind_for_level(level);
        let ((monkey_measured_fpr, monkey_real_bits), (uniform_measured_fpr, uniform_real_bits)) =
            if keys <= max_built_keys {
                let hashes = key_hashes(start, keys as usize);
                (
                    build_and_measure(kind, &hashes, m[level].bits_per_key, &negatives),
                    build_and_measure(kind, &hashes, u[level].bits_per_key, &negatives),
                )
            } else {
                ((f64::NAN, 0.0), (f64::NAN, 0.0))
            };
        start += keys;
        rows.push(MonkeyLevelRow {
            level,
            keys,
            kind,
            monkey: m[level],
            uniform: u[level],
            monkey_measured_fpr,
            uniform_measured_fpr,
            monkey_real_bits,
            uniform_real_bits,
        });
    }
    let summary = MonkeySummary {
        monkey_sum_fpr: siftdb_filter::sum_fpr(&m),
        uniform_sum_fpr: siftdb_filter::sum_fpr(&u),
        monkey_bits: siftdb_filter::monkey::total_bits(&m),
        uniform_bits: siftdb_filter::monkey::total_bits(&u),
        monkey_measured_sum_fpr: rows.iter().map(|r| r.monkey_measured_fpr).sum(),
        uniform_measured_sum_fpr: rows.iter().map(|r| r.uniform_measured_fpr).sum(),
        monkey_real_bits: rows.iter().map(|r| r.monkey_real_bits).sum(),
        uniform_real_bits: rows.iter().map(|r| r.uniform_real_bits).sum(),
    };
    (rows, summary)
}
