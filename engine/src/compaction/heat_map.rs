//! Adaptive filter allocation at compaction time: how often lookups probed the key ranges a
//! job's outputs cover, and the bits/key each output gets from it.
//!
//! The inputs' measured densities (`heat.rs`) form a step function over the key space: the
//! inputs of the output level first (the lookups they saw are the ones the outputs will see),
//! then, for keys in none of them, the inputs of the level above. Each output samples it at
//! every [`SAMPLE_EVERY`]-th key it takes; its mean density `ρ` against Monkey's `ρ₀` sets its
//! FPR to `FPR_level · ρ₀ / ρ` — the split that minimises false positives per lookup at a given
//! memory (a Lagrangian over the tables: `FPR_t ∝ keys_t / probes_t`), with Monkey's level FPR
//! as the multiplier. By Jensen's inequality the outputs then hold at most Monkey's memory for
//! the same keys (less where the reads are skewed); the plan's budget correction hands what is
//! saved back to the tables written next.

use std::sync::Arc;

use siftdb_filter::FprCurve;

use crate::filter_plan::AdaptiveBasis;
use crate::version::TableFile;

/// One in this many of an output's keys is looked up in the step function (the first always).
const SAMPLE_EVERY: u64 = 8;

/// The most bits/key an output gets (an FPR near 10⁻⁷: past that, bits buy nothing measurable).
const MAX_BITS_PER_KEY: f64 = 24.0;

/// An input table's key range and measured density.
struct Segment {
    smallest: Vec<u8>,
    largest: Vec<u8>,
    density: f64,
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
    /// Monkey's density at the output level.
    prior: f64,
    /// The output being written: keys taken, and the sum of the sampled densities.
    keys: u64,
    sampled: f64,
    samples: u64,
}

impl HeatMap {
    /// The map of a job writing to `output_level` from `inputs` (level, table), at the tree's
    /// clock value `now`; `upper_keys` is the key count Monkey plans the level above with.
    pub(crate) fn new(
        inputs: &[(usize, Arc<TableFile>)],
        output_level: usize,
        basis: AdaptiveBasis,
        upper_keys: u64,
        now: u64,
    ) -> HeatMap {
        let prior = 1.0 / basis.level_keys as f64;
        let upper_prior = 1.0 / upper_keys.max(1) as f64;
        let segments = |on_output_level: bool| -> Vec<Segment> {
            let mut segments: Vec<Segment> = inputs
                .iter()
                .filter(|(level, _)| (*level == output_level) == on_output_level)
                .map(|(_, f)| Segment {
                    smallest: f.smallest_user_key().to_vec(),
                    largest: f.largest_user_key().to_vec(),
                    density: f.heat.density(
                        now,
                        f.meta.distinct_keys,
                        if on_output_level { prior } else { upper_prior },
                    ),
                })
                .collect();
            segments.sort_by(|a, b| a.smallest.cmp(&b.smallest));
            segments
        };
        HeatMap {
            lower: segments(true),
            upper: segments(false),
            basis,
            prior,
            keys: 0,
            sampled: 0.0,
            samples: 0,
        }
    }

    /// The density around `key`: the output level's input holding it, else the upper level's
    /// (the highest of overlapping L0 inputs: every lookup there probes them all), else
    /// Monkey's.
    fn density_at(&self, key: &[u8]) -> f64 {
        let at = self
            .lower
            .partition_point(|s| s.largest.as_slice() < key);
        if let Some(s) = self.lower.get(at).filter(|s| s.contains(key)) {
            return s.density;
        }
        self.upper
            .iter()
            .filter(|s| s.contains(key))
            .map(|s| s.density)
            .reduce(f64::max)
            .unwrap_or(self.prior)
    }

    /// Takes the next new user key of the output being written.
    pub(crate) fn observe(&mut self, user_key: &[u8]) {
        if self.keys % SAMPLE_EVERY == 0 {
            self.sampled += self.density_at(user_key);
            self.samples += 1;
        }
        self.keys += 1;
    }

    /// The bits/key of the output just finished (over the keys observed since the last call),
    /// and a fresh start for the next output.
    pub(crate) fn finish_output(&mut self) -> f64 {
        let density = if self.samples == 0 {
            self.prior
        } else {
            self.sampled / self.samples as f64
        };
        let keys = self.keys as usize;
        (self.keys, self.sampled, self.samples) = (0, 0.0, 0);
        self.bits_per_key(keys, density)
    }

    /// Bits/key for a table of `keys` keys whose lookups probe at `density` (see the module
    /// documentation); never below the curve's floor (binary fuse) or 1.
    fn bits_per_key(&self, keys: usize, density: f64) -> f64 {
        let curve = FprCurve::from(self.basis.kind);
        let fpr = if density > 0.0 {
            self.basis.fpr * self.prior / density
        } else {
            1.0
        };
        curve
            .bits_for_fpr(keys, fpr, MAX_BITS_PER_KEY)
            .max(curve.min_bits_per_key(keys))
            .max(1.0)
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
                    density: 0.01,
                },
                Segment {
                    smallest: b"g".to_vec(),
                    largest: b"m".to_vec(),
                    density: 0.0001,
                },
            ],
            upper: vec![Segment {
                smallest: b"a".to_vec(),
                largest: b"z".to_vec(),
                density: 0.002,
            }],
            basis: AdaptiveBasis {
                fpr: basis_fpr,
                kind: FilterKind::Ribbon,
                level_keys: 1_000,
                upper_level_keys: 100,
            },
            prior: 0.001,
            keys: 0,
            sampled: 0.0,
            samples: 0,
        }
    }

    #[test]
    fn densities_come_from_the_output_level_then_the_level_above() {
        let m = map(0.03);
        assert_eq!(m.density_at(b"c"), 0.01);
        assert_eq!(m.density_at(b"h"), 0.0001);
        assert_eq!(m.density_at(b"p"), 0.002);
        let mut empty = map(0.03);
        empty.upper.clear();
        assert_eq!(empty.density_at(b"p"), 0.001);
    }

    #[test]
    fn hot_outputs_get_more_bits_cold_ones_fewer_and_the_prior_gets_monkeys() {
        let mut m = map(0.03);
        let bits = |m: &mut HeatMap, key: &[u8]| {
            for _ in 0..100 {
                m.observe(key);
            }
            m.finish_output()
        };
        let hot = bits(&mut m, b"c");
        let cold = bits(&mut m, b"h");
        let curve = FprCurve::Ribbon;
        let monkey = curve.bits_for_fpr(100, 0.03, MAX_BITS_PER_KEY);
        // 10× the prior's density: a tenth of the FPR; a tenth of it: 10× (capped at 1).
        assert!(curve.fpr(100, hot) <= 0.003 && hot > monkey + 2.0, "{hot} vs {monkey}");
        assert!(cold < monkey - 2.0, "{cold} vs {monkey}");
        let mut at_prior = map(0.03);
        at_prior.lower.clear();
        at_prior.upper.clear();
        assert!((bits(&mut at_prior, b"x") - monkey).abs() < 0.02);
    }
}
