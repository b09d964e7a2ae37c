//! Which filter each level gets, and how many bits per key.

use crate::kind::{FilterKind, FprCurve};
use crate::monkey::{monkey, uniform, FilterBudget, LevelAllocation, LevelSpec};

/// How filter memory is split across levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum FilterAllocation {
    /// Monkey: FPR proportional to level size at the same total memory (the default).
    #[default]
    Monkey,
    /// The same bits/key everywhere (for comparison).
    Uniform,
    /// Monkey's plan per level, then per table by the reads it measured: a table that lookups
    /// probe more often than its level's average (per key) gets a lower FPR, one they probe
    /// less a higher one — the split that minimises false positives per lookup (ElasticBF,
    /// Mnemosyne). The engine counts each table's filter probes and re-plans when a compaction
    /// writes new tables, from the probe rates of the key ranges they cover; with no reads
    /// measured it is Monkey.
    Adaptive,
}

impl FilterAllocation {
    /// The name the options text records (`monkey`, `uniform`, `adaptive`).
    pub fn name(&self) -> &'static str {
        match self {
            FilterAllocation::Monkey => "monkey",
            FilterAllocation::Uniform => "uniform",
            FilterAllocation::Adaptive => "adaptive",
        }
    }

    /// The allocation named `name` (see [`FilterAllocation::name`]).
    pub fn from_name(name: &str) -> Option<FilterAllocation> {
        match name {
            "monkey" => Some(FilterAllocation::Monkey),
            "uniform" => Some(FilterAllocation::Uniform),
            "adaptive" => Some(FilterAllocation::Adaptive),
            _ => None,
        }
    }
}

/// The filter policy of a tree: blocked bloom on levels `< bloom_before_level` (L0 is built on
/// every flush, so build speed matters), `deep_kind` from there on — ribbon by default (built
/// rarely, holds most keys, so space matters), or binary fuse (faster to query and build, in
/// steps of about 9 and 18 bits/key); memory split by `allocation` with `bits_per_key` as the
/// average.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FilterPolicy {
    /// Average filter bits per key over all keys of the tree.
    pub bits_per_key: f64,
    /// Levels below this one use blocked bloom; this one and deeper use ribbon.
    /// `0` = ribbon everywhere, `usize::MAX` = bloom everywhere.
    pub bloom_before_level: usize,
    /// How the memory is split across levels.
    pub allocation: FilterAllocation,
    /// The kind of the levels from `bloom_before_level` on.
    pub deep_kind: FilterKind,
}

impl Default for FilterPolicy {
    fn default() -> Self {
        FilterPolicy {
            bits_per_key: 10.0,
            bloom_before_level: 2,
            allocation: FilterAllocation::Monkey,
            deep_kind: FilterKind::Ribbon,
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
            self.deep_kind
        }
    }

    /// Plans every level's filter from the key count of each level (index = level number).
    ///
    /// Levels with zero keys are planned as if they held one key, so a table about to be written
    /// to an empty level still gets a sensible bits/key.
    ///
    /// Under Monkey the counts of the non-empty levels are first made non-decreasing with depth
    /// ([`pooled_level_keys`]): a leveled tree grows at the bottom, so a deeper level that is
    /// momentarily smaller than the one above it (it just appeared) is about to become the
    /// largest, and the tables written to it now keep their filters after it has grown. Planning
    /// it looser-or-equal to the level above avoids handing the future bottom level the tight
    /// filters of a small level.
    pub fn plan(&self, level_keys: &[u64]) -> Vec<LevelFilter> {
        self.plan_with_filter_keys(level_keys, &[])
    }

    /// [`FilterPolicy::plan`] for levels built as many filters: `keys_per_filter[level]` is the
    /// key count of one filter of the level (a table, or a partition of one; 0 or missing: the
    /// level is one filter). Curves whose cost depends on the key count are priced at it
    /// ([`LevelSpec::keys_per_filter`]), so the bits/key planned for a binary fuse level are what
    /// its filters will really use.
    pub fn plan_with_filter_keys(
        &self,
        level_keys: &[u64],
        keys_per_filter: &[u64],
    ) -> Vec<LevelFilter> {
        let keys = match self.allocation {
            FilterAllocation::Monkey | FilterAllocation::Adaptive => pooled_level_keys(level_keys),
            FilterAllocation::Uniform => level_keys.to_vec(),
        };
        let specs: Vec<LevelSpec> = keys
            .iter()
            .enumerate()
            .map(|(level, &keys)| LevelSpec {
                keys: keys.max(1),
                curve: FprCurve::from(self.kind_for_level(level)),
                keys_per_filter: keys_per_filter.get(level).copied().unwrap_or(0),
            })
            .collect();
        let budget = FilterBudget::BitsPerKey(self.bits_per_key);
        let alloc: Vec<LevelAllocation> = match self.allocation {
            FilterAllocation::Monkey | FilterAllocation::Adaptive => monkey(&specs, budget),
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

/// `level_keys` with the counts of the non-empty levels made non-decreasing with depth by
/// pooling adjacent violators (each pool gets its mean count, so the total is kept exactly and
/// the budget still buys the same memory). Empty levels stay 0.
pub fn pooled_level_keys(level_keys: &[u64]) -> Vec<u64> {
    // Pools of (sum, members) over the non-empty levels, shallowest first.
    let mut pools: Vec<(u128, Vec<usize>)> = Vec::new();
    for (level, &keys) in level_keys.iter().enumerate().filter(|&(_, &k)| k > 0) {
        pools.push((u128::from(keys), vec![level]));
        // Merge while the pool above has a larger mean than the last one.
        while pools.len() >= 2 {
            let (s2, m2) = &pools[pools.len() - 1];
            let (s1, m1) = &pools[pools.len() - 2];
            // s1/|m1| > s2/|m2|, in integers.
            if s1 * m2.len() as u128 <= s2 * m1.len() as u128 {
                break;
            }
            let Some((s2, m2)) = pools.pop() else { break };
            if let Some(last) = pools.last_mut() {
                last.0 += s2;
                last.1.extend(m2);
            }
        }
    }
    let mut out = vec![0u64; level_keys.len()];
    for (sum, members) in pools {
        let n = members.len() as u128;
        for (i, level) in members.iter().enumerate() {
            // Spread the remainder over the first members so the total is exact.
            let share = sum / n + u128::from((i as u128) < sum % n);
            out[*level] = u64::try_from(share).unwrap_or(u64::MAX);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pooling_makes_counts_non_decreasing_and_keeps_the_total() {
        // Already monotone: unchanged.
        assert_eq!(pooled_level_keys(&[5, 10, 100]), vec![5, 10, 100]);
        // A new bottom level smaller than the one above: the two share the mean.
        assert_eq!(
            pooled_level_keys(&[1_000, 3_000, 14_000, 59_000, 44_000]),
            vec![1_000, 3_000, 14_000, 51_500, 51_500]
        );
        // A cascade: the pool grows upward until monotone; empty levels stay empty.
        let pooled = pooled_level_keys(&[0, 50, 40, 0, 10, 0, 0]);
        assert_eq!(pooled, vec![0, 34, 33, 0, 33, 0, 0]);
        assert_eq!(pooled.iter().sum::<u64>(), 100);
    }

    #[test]
    fn monkey_never_plans_a_deeper_level_tighter() {
        let p = FilterPolicy::default();
        let plan = p.plan(&[2_000, 3_000, 14_000, 59_000, 44_000, 0, 0]);
        for w in plan[1..5].windows(2) {
            assert!(w[0].fpr <= w[1].fpr * (1.0 + 1e-9), "{plan:?}");
        }
    }

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
    fn fuse_levels_are_priced_at_their_filters_key_count() {
        use crate::fuse::{fuse_bits_per_key, fuse_expected_fpr, fuse_fingerprint_bits_for};
        let p = FilterPolicy {
            deep_kind: FilterKind::BinaryFuse,
            bloom_before_level: 1,
            ..FilterPolicy::default()
        };
        let levels = [4_000, 40_000, 400_000, 4_000_000];
        let plan = p.plan_with_filter_keys(&levels, &[0, 3_000, 3_000, 3_000]);
        let mut filtered = 0;
        for lf in &plan[1..] {
            if lf.fpr < 1.0 {
                filtered += 1;
                // What a 3,000-key filter built at the planned bits/key really costs and gives.
                let bits = fuse_fingerprint_bits_for(3_000, lf.bits_per_key);
                assert!(
                    lf.bits_per_key >= fuse_bits_per_key(3_000, bits) - 1e-9,
                    "{lf:?}"
                );
                assert_eq!(lf.fpr, fuse_expected_fpr(bits), "{lf:?}");
            }
        }
        assert!(filtered > 0, "{plan:?}");
        // Priced at the whole level's count, the bottom level is handed fewer bits than one of
        // its 3,000-key filters costs: the tree would spend more than its budget.
        let naive = p.plan(&levels);
        assert!(
            naive[3].bits_per_key < fuse_bits_per_key(3_000, 8),
            "{naive:?}"
        );
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
