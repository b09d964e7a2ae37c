//! Adaptive filter allocation at compaction time: how often lookups probed the key ranges a
//! job's outputs cover, and the bits/key each output gets from it.
//!
//! Each input's *heat* is its measured density (`heat.rs`) over the density Monkey assumes on
//! its level (1: read as Monkey expects; the ratio, not the density, because an L0 table is
//! probed by every lookup of its range while a sorted level's table only by those of its own
//! part). The heats form a step function over the key space: the inputs of the output level
//! first (the lookups they saw are the ones the outputs will see), then, for keys in none of
//! them, the inputs of the level above. Each output samples it at every [`SAMPLE_EVERY`]-th key
//! it takes; its mean heat `h` sets its FPR to `λ · FPR_level / h` — the split that minimises
//! false positives per lookup at a given memory (a Lagrangian over the tables: `FPR_t ∝ keys_t /
//! probes_t`). `λ` is chosen once per job so that the output level — its tables the job keeps
//! and the job's inputs, each at its heat — would take exactly the bits Monkey's plan gives it:
//! the level spends Monkey's memory, moved from its cold key ranges to its hot ones, and as
//! compactions rewrite it every table reaches its share (with `λ = 1` skewed reads would leave
//! the tree under its budget, by Jensen's inequality; a `λ` per job would only move bits between
//! the few tables of one job).

use std::sync::Arc;

use siftdb_filter::FprCurve;

use crate::core::filter_plan::AdaptiveBasis;
use crate::core::version::TableFile;

/// One in this many of an output's keys is looked up in the step function (the first always).
const SAMPLE_EVERY: u64 = 8;

/// The most bits/key an output gets (an FPR near 10⁻⁷: past that, bits buy nothing measurable).
const MAX_BITS_PER_KEY: f64 = 24.0;

/// An input table's key range, keys and heat.
struct Segment {
    smallest: Vec<u8>,
    largest: Vec<u8>,
    keys: u64,
    heat: f64,
}

impl Segment {
    fn contains(&self, key: &[u8]) -> bool {
        self.smallest.as_slice() <= key && key <= self.largest.as_slice()
    }
}

/// See the module documentation.
pub(crate) struct HeatMap {
    /// Inputs of the output level: disjoint, in key order.
    lower: Vec<Segment>,
    /// Inputs of the level above (L0 inputs may overlap).
    upper: Vec<Segment>,
    basis: AdaptiveBasis,
    /// The job's multiplier of every output's FPR (see the module documentation).
    lambda: f64,
    /// The output level's tables the job keeps, as (keys, heat): with the inputs, what `λ` is
    /// chosen over.
    kept: Vec<(u64, f64)>,
    /// The output being written: keys taken, and the sum of the sampled heats.
    keys: u64,
    sampled: f64,
    samples: u64,
}

impl HeatMap {
    /// The map of a job writing to `output_level` (whose tables are `level_tables`) from
    /// `inputs` (level, table), at the tree's clock value `now`.
    pub(crate) fn new(
        inputs: &[(usize, Arc<TableFile>)],
        output_level: usize,
        level_tables: &[Arc<TableFile>],
        basis: AdaptiveBasis,
        now: u64,
    ) -> HeatMap {
        // Monkey's density on a level: a lookup probes one table of a sorted level, so one key's
        // place in `level_keys`; an L0 table is a run of its own, probed by every lookup in its
        // range.
        let prior = |level: usize, f: &TableFile| -> f64 {
            let keys = match level {
                0 => f.meta.distinct_keys,
                l if l == output_level => basis.level_keys,
                _ => basis.upper_level_keys,
            };
            1.0 / keys.max(1) as f64
        };
        let segments = |on_output_level: bool| -> Vec<Segment> {
            let mut segments: Vec<Segment> = inputs
                .iter()
                .filter(|(level, _)| (*level == output_level) == on_output_level)
                .map(|(level, f)| {
                    let prior = prior(*level, f);
                    Segment {
                        smallest: f.smallest_user_key().to_vec(),
                        largest: f.largest_user_key().to_vec(),
                        keys: f.meta.distinct_keys,
                        heat: f.heat.density(now, f.meta.distinct_keys, prior) / prior,
                    }
                })
                .collect();
            segments.sort_by(|a, b| a.smallest.cmp(&b.smallest));
            segments
        };
        let kept = level_tables
            .iter()
            .filter(|f| !inputs.iter().any(|(_, i)| i.meta.number == f.meta.number))
            .map(|f| {
                let prior = prior(output_level, f);
                let keys = f.meta.distinct_keys;
                (keys, f.heat.density(now, keys, prior) / prior)
            })
            .collect();
        let mut map = HeatMap {
            lower: segments(true),
            upper: segments(false),
            basis,
            lambda: 1.0,
            kept,
            keys: 0,
            sampled: 0.0,
            samples: 0,
        };
        map.lambda = map.memory_neutral_lambda();
        map
    }

    /// (keys, heat) of the output level's tables as the job leaves them: its inputs and the
    /// tables it keeps.
    fn level_tables(&self) -> Vec<(u64, f64)> {
        self.lower
            .iter()
            .chain(&self.upper)
            .map(|s| (s.keys, s.heat))
            .chain(self.kept.iter().copied())
            .collect()
    }

    /// The `λ` at which the output level's tables (kept and inputs) at their heats take
    /// Monkey's bits (bisection on its logarithm: the bits fall as `λ` grows). The curve is
    /// sampled once, at the tables' mean key count (a table's count barely moves its curve), so
    /// a job pays a few hundred curve evaluations, not one bisection per table per step. With
    /// no heat measured anywhere it is 1 at once.
    fn memory_neutral_lambda(&self) -> f64 {
        let tables = self.level_tables();
        if tables.iter().all(|&(_, heat)| (heat - 1.0).abs() < 1e-9) {
            return 1.0;
        }
        let keys: u64 = tables.iter().map(|&(k, _)| k).sum();
        let typical = (keys / tables.len().max(1) as u64).max(1) as usize;
        let curve = SampledCurve::new(FprCurve::from(self.basis.kind), typical);
        let fpr_at = |heat: f64, lambda: f64| {
            if heat > 0.0 {
                lambda * self.basis.fpr / heat
            } else {
                1.0
            }
        };
        let monkey: f64 = tables
            .iter()
            .map(|&(k, _)| k as f64 * curve.bits_for(fpr_at(1.0, 1.0)))
            .sum();
        let bits = |lambda: f64| -> f64 {
            tables
                .iter()
                .map(|&(k, heat)| k as f64 * curve.bits_for(fpr_at(heat, lambda)))
                .sum()
        };
        let (mut lo, mut hi) = (-20.0f64, 20.0f64);
        for _ in 0..40 {
            let mid = (lo + hi) / 2.0;
            if bits(mid.exp()) > monkey {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        hi.exp()
    }

    /// The heat around `key`: the output level's input holding it, else the upper level's
    /// (the hottest of overlapping L0 inputs), else 1 (Monkey's assumption).
    fn heat_at(&self, key: &[u8]) -> f64 {
        let at = self.lower.partition_point(|s| s.largest.as_slice() < key);
        if let Some(s) = self.lower.get(at).filter(|s| s.contains(key)) {
            return s.heat;
        }
        self.upper
            .iter()
            .filter(|s| s.contains(key))
            .map(|s| s.heat)
            .reduce(f64::max)
            .unwrap_or(1.0)
    }

    /// Takes the next new user key of the output being written.
    pub(crate) fn observe(&mut self, user_key: &[u8]) {
        if self.keys.is_multiple_of(SAMPLE_EVERY) {
            self.sampled += self.heat_at(user_key);
            self.samples += 1;
        }
        self.keys += 1;
    }

    /// The heat and bits/key of the output just finished (over the keys observed since the last
    /// call), and a fresh start for the next output.
    pub(crate) fn finish_output(&mut self) -> (f64, f64) {
        let heat = if self.samples == 0 {
            1.0
        } else {
            self.sampled / self.samples as f64
        };
        let keys = self.keys as usize;
        (self.keys, self.sampled, self.samples) = (0, 0.0, 0);
        (heat, self.bits_at(keys, heat, self.lambda))
    }

    /// Bits/key for a table of `keys` keys at `heat` under multiplier `lambda` (see the module
    /// documentation); never below the curve's floor (binary fuse) or 1.
    fn bits_at(&self, keys: usize, heat: f64, lambda: f64) -> f64 {
        let curve = FprCurve::from(self.basis.kind);
        let fpr = if heat > 0.0 {
            lambda * self.basis.fpr / heat
        } else {
            1.0
        };
        curve
            .bits_for_fpr(keys, fpr, MAX_BITS_PER_KEY)
            .max(curve.min_bits_per_key(keys))
            .max(1.0)
    }
}

/// A filter curve sampled every 1/32 bit/key up to [`MAX_BITS_PER_KEY`], for one key count.
struct SampledCurve {
    /// FPR at `i / 32` bits/key (non-increasing).
    fpr: Vec<f64>,
    /// The fewest bits/key a table gets (see [`HeatMap::bits_at`]).
    floor: f64,
}

impl SampledCurve {
    const STEPS_PER_BIT: f64 = 32.0;

    fn new(curve: FprCurve, keys: usize) -> SampledCurve {
        let steps = (MAX_BITS_PER_KEY * Self::STEPS_PER_BIT) as usize;
        SampledCurve {
            fpr: (0..=steps)
                .map(|i| curve.fpr(keys, i as f64 / Self::STEPS_PER_BIT))
                .collect(),
            floor: curve.min_bits_per_key(keys).max(1.0),
        }
    }

    /// The fewest sampled bits/key reaching `fpr` (the most if none does), floored.
    fn bits_for(&self, fpr: f64) -> f64 {
        let step = self
            .fpr
            .partition_point(|&f| f > fpr)
            .min(self.fpr.len() - 1);
        (step as f64 / Self::STEPS_PER_BIT).max(self.floor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use siftdb_filter::FilterKind;

    fn map(basis_fpr: f64) -> HeatMap {
        HeatMap {
            lower: vec![
                Segment {
                    smallest: b"a".to_vec(),
                    largest: b"f".to_vec(),
                    keys: 100,
                    heat: 10.0,
                },
                Segment {
                    smallest: b"g".to_vec(),
                    largest: b"m".to_vec(),
                    keys: 100,
                    heat: 0.1,
                },
            ],
            upper: vec![Segment {
                smallest: b"a".to_vec(),
                largest: b"z".to_vec(),
                keys: 100,
                heat: 2.0,
            }],
            lambda: 1.0,
            kept: vec![(100, 0.5), (100, 1.5)],
            basis: AdaptiveBasis {
                fpr: basis_fpr,
                kind: FilterKind::Ribbon,
                level_keys: 1_000,
                upper_level_keys: 100,
            },
            keys: 0,
            sampled: 0.0,
            samples: 0,
        }
    }

    #[test]
    fn heat_comes_from_the_output_level_then_the_level_above() {
        let m = map(0.03);
        assert_eq!(m.heat_at(b"c"), 10.0);
        assert_eq!(m.heat_at(b"h"), 0.1);
        assert_eq!(m.heat_at(b"p"), 2.0);
        let mut empty = map(0.03);
        empty.upper.clear();
        assert_eq!(empty.heat_at(b"p"), 1.0);
    }

    #[test]
    fn hot_outputs_get_more_bits_cold_ones_fewer_and_the_prior_gets_monkeys() {
        let mut m = map(0.03);
        let bits = |m: &mut HeatMap, key: &[u8]| {
            for _ in 0..100 {
                m.observe(key);
            }
            m.finish_output().1
        };
        let hot = bits(&mut m, b"c");
        let cold = bits(&mut m, b"h");
        let curve = FprCurve::Ribbon;
        let monkey = curve.bits_for_fpr(100, 0.03, MAX_BITS_PER_KEY);
        // 10× the prior's density: a tenth of the FPR; a tenth of it: 10× (capped at 1).
        assert!(
            curve.fpr(100, hot) <= 0.003 && hot > monkey + 2.0,
            "{hot} vs {monkey}"
        );
        assert!(cold < monkey - 2.0, "{cold} vs {monkey}");
        let mut at_prior = map(0.03);
        at_prior.lower.clear();
        at_prior.upper.clear();
        assert!((bits(&mut at_prior, b"x") - monkey).abs() < 0.02);
    }

    #[test]
    fn the_job_spends_monkeys_memory_moved_to_its_hot_ranges() {
        let mut m = map(0.03);
        m.lambda = m.memory_neutral_lambda();
        let tables = m.level_tables();
        let spent: f64 = tables
            .iter()
            .map(|&(keys, heat)| keys as f64 * m.bits_at(keys as usize, heat, m.lambda))
            .sum();
        let monkey: f64 = tables
            .iter()
            .map(|&(keys, _)| keys as f64 * m.bits_at(keys as usize, 1.0, 1.0))
            .sum();
        assert!((spent / monkey - 1.0).abs() < 0.01, "{spent} vs {monkey}");
        // Uniform heat: Monkey's plan exactly.
        for s in m.lower.iter_mut().chain(m.upper.iter_mut()) {
            s.heat = 1.0;
        }
        for kept in &mut m.kept {
            kept.1 = 1.0;
        }
        let lambda = m.memory_neutral_lambda();
        for s in &m.lower {
            let planned = m.bits_at(s.keys as usize, 1.0, 1.0);
            assert!((m.bits_at(s.keys as usize, 1.0, lambda) - planned).abs() < 0.03);
        }
    }
}
