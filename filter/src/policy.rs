//! Which filter each level gets, and how many bits per key.

use crate::kind::{FilterKind, FprCurve};
use crate::monkey::{monkey, uniform, FilterBudget, LevelAllocation, LevelSpec};

/// How filter memory is split across levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FilterAllocation {
    /// Monkey: FPR proportional to level size at the same total memory (the default).
    #[default]
    Monkey,
    /// The same bits/key everywhere (for comparison).
    Uniform,
}

/// The filter policy of a tree: blocked bloom on levels `< bloom_before_level` (L0 is built on
/// every flush, so build speed matters), ribbon from there on (built rarely, holds most keys,
/// so space matters); memory split by `allocation` with `bits_per_key` as the average.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FilterPolicy {
    /// Average filter bits per key over all keys of the tree.
    pub bits_per_key: f64,
    /// Levels below this one use blocked bloom; this one and deeper use ribbon.
    /// `0` = ribbon everywhere, `usize::MAX` = bloom everywhere.
    pub bloom_before_level: usize,
    /// How the memory is split across levels.
    pub allocation: FilterAllocation,
}

impl Default for FilterPolicy {
    fn default() -> Self {
        FilterPolicy {
            bits_per_key: 10.0,
            bloom_before_level: 2,
            allocation: FilterAllocation::Monkey,
        }
    }
}

/// A level's filter settings under a policy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LevelFilter {
    /// Filter kind for tables written to the level.
    pub kind: FilterKind,
    /// Bits/key for tables written to the level.
    pub bits_per_key: f64,
    /// The FPR those bits are expected to give.
    pub fpr: f64,
}

impl FilterPolicy {
    /// The filter kind for tables of `level`.
    pub fn kind_for_level(&self, level: usize) -> FilterKind {
        if level < self.bloom_before_level {
            FilterKind::BlockedBloom
        } else {
            FilterKind::Ribbon
        }
    }

    /// Plans every level's filter from the key count of each level (index = level number).
    ///
    /// Levels with zero keys are planned as if they held one key, so a table about to be written
    /// to an empty level still gets a sensible bits/key.
    pub fn plan(&self, level_keys: &[u64]) -> Vec<LevelFilter> {
        let specs: Vec<LevelSpec> = level_keys
            .iter()
            .enumerate()
            .map(|(level, &keys)| LevelSpec {
                keys: keys.max(1),
                curve: FprCurve::from(self.kind_for_level(level)),
            })
            .collect();
        let budget = FilterBudget::BitsPerKey(self.bits_per_key);
        let alloc: Vec<LevelAllocation> = match self.allocation {
            FilterAllocation::Monkey => monkey(&specs, budget),
            FilterAllocation::Uniform => uniform(&specs, budget),
        };
        alloc
            .iter()
            .enumerate()
            .map(|(level, a)| LevelFilter {
                kind: self.kind_for_level(level),
                bits_per_key: a.bits_per_key,
                fpr: a.fpr,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_picks_bloom_then_ribbon() {
        let p = FilterPolicy::default();
        assert_eq!(p.kind_for_level(0), FilterKind::BlockedBloom);
        assert_eq!(p.kind_for_level(1), FilterKind::BlockedBloom);
        assert_eq!(p.kind_for_level(2), FilterKind::Ribbon);
        let all_ribbon = FilterPolicy {
            bloom_before_level: 0,
            ..p
        };
        assert_eq!(all_ribbon.kind_for_level(0), FilterKind::Ribbon);
    }

    #[test]
    fn plan_covers_every_level() {
        let p = FilterPolicy::default();
        let plan = p.plan(&[4_000, 40_000, 400_000, 4_000_000]);
        assert_eq!(plan.len(), 4);
        assert!(plan[0].fpr < plan[3].fpr);
        let uniform = FilterPolicy {
            allocation: FilterAllocation::Uniform,
            ..p
        }
        .plan(&[4_000, 40_000]);
        assert!((uniform[0].bits_per_key - uniform[1].bits_per_key).abs() < 1e-9);
    }
}
