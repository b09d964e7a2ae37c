//! Monkey allocation of filter memory across LSM levels.
//!
//! A lookup of a missing key probes one run per level (every run in L0), and each run's filter
//! wastes a data-block read with probability equal to its FPR. The expected wasted reads per
//! missing-key lookup is therefore `R = Σ_i p_i`, while the memory is `M = Σ_i n_i · b_i(p_i)`,
//! where `b(p)` is the bits/key a filter kind needs for FPR `p`. Minimising `R` subject to `M`
//! (Dayan et al., *Monkey*, SIGMOD 2017) gives the condition
//!
//! ```text
//!     −dp_i/db_i = μ · n_i        for every level that gets bits at all
//! ```
//!
//! i.e. every level gets bits until the FPR saved per bit, per key, is the same everywhere. For the
//! textbook bloom curve `p = e^{−b·ln²2}` this yields the closed form `p_i = λ·n_i`: FPR
//! proportional to the level's size, so small upper levels get exponentially lower FPRs and the
//! largest level runs loose. [`monkey()`](fn@monkey) solves the same condition numerically for the real
//! curves of the blocked bloom and ribbon filters siftdb builds: a Lagrangian search over the
//! price `μ` of a bit, where each level picks the point of its curve (sampled every 1/32 bit/key)
//! minimising `p_i + μ · n_i · b_i`, with `μ` bisected until the budget is met; small greedy
//! steps then spend the last bits, so the budget is used exactly.

use crate::kind::FprCurve;

/// Resolution of the curves the allocation searches, in bits per key.
const GRID_BITS_PER_KEY: f64 = 1.0 / 32.0;
/// No level gets more than this many bits per key.
pub const MAX_LEVEL_BITS_PER_KEY: f64 = 40.0;

/// One level (or run) to allocate filter memory to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LevelSpec {
    /// Keys in the level.
    pub keys: u64,
    /// The space-vs-FPR curve of the filter kind the level will be built with.
    pub curve: FprCurve,
    /// Keys of one filter of the level (a table, or one partition of a table's filter); 0 when
    /// the level is built as one filter. Each filter is sized for its own keys, and a curve
    /// whose cost depends on the key count (the binary fuse step: a few-thousand-key fuse filter
    /// costs ~10.6 bits/key at 8-bit fingerprints against ~9.0 at a million) is priced here.
    pub keys_per_filter: u64,
}

impl LevelSpec {
    /// A level of `keys` keys built as one filter of kind `curve`.
    pub fn new(keys: u64, curve: FprCurve) -> LevelSpec {
        LevelSpec {
            keys,
            curve,
            keys_per_filter: 0,
        }
    }

    /// The fewest bits/key the level is planned with ([`FprCurve::min_bits_per_key`]).
    fn min_bits_per_key(&self) -> f64 {
        if self.keys == 0 {
            0.0
        } else {
            self.curve.min_bits_per_key(self.priced_keys())
        }
    }

    /// The key count the curve is evaluated at: one filter's.
    fn priced_keys(&self) -> usize {
        let keys = match self.keys_per_filter {
            0 => self.keys,
            per_filter => per_filter.min(self.keys),
        };
        usize::try_from(keys).unwrap_or(usize::MAX)
    }
}

/// What a level gets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LevelAllocation {
    /// Keys in the level.
    pub keys: u64,
    /// Bits per key for the level's filters.
    pub bits_per_key: f64,
    /// The FPR those bits buy on the level's curve.
    pub fpr: f64,
}

/// The memory to spread over the levels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FilterBudget {
    /// Total filter bits.
    TotalBits(f64),
    /// Average bits per key over all keys of all levels.
    BitsPerKey(f64),
}

impl FilterBudget {
    /// The budget in bits for `levels`.
    pub fn total_bits(self, levels: &[LevelSpec]) -> f64 {
        match self {
            FilterBudget::TotalBits(bits) => bits.max(0.0),
            FilterBudget::BitsPerKey(bpk) => {
                bpk.max(0.0) * levels.iter().map(|l| l.keys as f64).sum::<f64>()
            }
        }
    }
}

/// Sum of FPRs (expected wasted data-block reads per missing-key lookup, one run per level).
pub fn sum_fpr(allocation: &[LevelAllocation]) -> f64 {
    allocation.iter().map(|a| a.fpr).sum()
}

/// Total bits an allocation spends.
pub fn total_bits(allocation: &[LevelAllocation]) -> f64 {
    allocation
        .iter()
        .map(|a| a.keys as f64 * a.bits_per_key)
        .sum()
}

fn evaluate(level: &LevelSpec, bits_per_key: f64) -> LevelAllocation {
    LevelAllocation {
        keys: level.keys,
        bits_per_key,
        fpr: if level.keys == 0 {
            0.0
        } else {
            level.curve.fpr(level.priced_keys(), bits_per_key)
        },
    }
}

/// The same bits/key for every level: the flat allocation engines use by default.
pub fn uniform(levels: &[LevelSpec], budget: FilterBudget) -> Vec<LevelAllocation> {
    let keys: f64 = levels.iter().map(|l| l.keys as f64).sum();
    let bpk = if keys > 0.0 {
        (budget.total_bits(levels) / keys).min(MAX_LEVEL_BITS_PER_KEY)
    } else {
        0.0
    };
    levels
        .iter()
        .map(|l| {
            let bits = if l.keys == 0 {
                0.0
            } else {
                bpk.max(l.min_bits_per_key())
            };
            evaluate(l, bits)
        })
        .collect()
}

/// The allocation minimising the sum of FPRs for the budget (see the module docs).
///
/// ```
/// use siftdb_filter::{monkey, uniform, sum_fpr, FilterBudget, FprCurve, LevelSpec};
/// let levels: Vec<LevelSpec> = [1_000u64, 10_000, 100_000]
///     .iter()
///     .map(|&keys| LevelSpec::new(keys, FprCurve::BlockedBloom))
///     .collect();
/// let m = monkey(&levels, FilterBudget::BitsPerKey(10.0));
/// let u = uniform(&levels, FilterBudget::BitsPerKey(10.0));
/// assert!(m[0].fpr < m[1].fpr && m[1].fpr < m[2].fpr); // upper levels get lower FPRs
/// assert!(sum_fpr(&m) < sum_fpr(&u));
/// ```
pub fn monkey(levels: &[LevelSpec], budget: FilterBudget) -> Vec<LevelAllocation> {
    let budget_bits = budget.total_bits(levels);
    let curves: Vec<Vec<f64>> = levels.iter().map(grid_curve).collect();
    // Only points of a curve's lower convex hull can minimise `fpr + price · bits`, and along
    // the hull that sum falls, then rises: each level's best point is found by bisection (the
    // search below asks every level for it about 60 times; a scan of the 1281 grid points each
    // time was most of a flush's planning).
    let hulls: Vec<Vec<usize>> = curves.iter().map(|c| lower_hull(c)).collect();
    // Price μ of one bit: each level independently picks the grid point minimising
    // `fpr + μ · n · bits_per_key`. That lands on the lower convex hull of its curve, so curves
    // that are not convex everywhere (a blocked bloom below one bit per key) are handled.
    let choose = |mu: f64| -> Vec<usize> {
        levels
            .iter()
            .zip(curves.iter().zip(&hulls))
            .map(|(level, (curve, hull))| {
                let price = mu * level.keys as f64 * GRID_BITS_PER_KEY;
                hull_minimiser(curve, hull, price)
            })
            .collect()
    };
    let cost = |choice: &[usize]| -> f64 {
        levels
            .iter()
            .zip(choice)
            .map(|(l, &j)| l.keys as f64 * j as f64 * GRID_BITS_PER_KEY)
            .sum()
    };
    // Bisection on ln μ for the cheapest price whose choice fits the budget. Bits spent fall as
    // μ rises; at μ = 1e3 no level buys anything (one grid step saves less than 1 of FPR).
    let (mut lo, mut hi) = ((1e-40f64).ln(), (1e3f64).ln());
    let mut best = choose(hi.exp());
    if cost(&choose(lo.exp())) <= budget_bits {
        best = choose(lo.exp());
    } else {
        for _ in 0..100 {
            let mid = 0.5 * (lo + hi);
            if mid <= lo || mid >= hi {
                break; // as close as f64 gets
            }
            let choice = choose(mid.exp());
            if cost(&choice) <= budget_bits {
                hi = mid;
                best = choice;
            } else {
                lo = mid;
            }
        }
    }
    let mut alloc: Vec<LevelAllocation> = levels
        .iter()
        .zip(&best)
        .map(|(l, &j)| evaluate(l, j as f64 * GRID_BITS_PER_KEY))
        .collect();
    spend_remainder(levels, &mut alloc, budget_bits - cost(&best));
    alloc
}

/// Each level's FPR at every grid point `j · GRID_BITS_PER_KEY` up to the cap.
fn grid_curve(level: &LevelSpec) -> Vec<f64> {
    if level.keys == 0 {
        return vec![0.0];
    }
    match level.curve {
        // The blocked bloom curve costs a Poisson sum per point; it depends on the key count
        // only through block rounding, negligible for planning, so it is computed once.
        FprCurve::BlockedBloom => blocked_bloom_grid().to_vec(),
        curve => {
            // Below the level's floor a point is not for sale (infinite FPR): the search then
            // always buys at least the floor, and its cost counts against the budget.
            let floor = level.min_bits_per_key();
            let keys = level.priced_keys();
            // The ribbon curve's per-key-count work, done once for the whole grid.
            let ribbon =
                (curve == FprCurve::Ribbon).then(|| crate::ribbon::RibbonFprCurve::new(keys));
            (0..grid_points())
                .map(|j| {
                    let bits = j as f64 * GRID_BITS_PER_KEY;
                    if bits < floor {
                        f64::INFINITY
                    } else if let Some(ribbon) = &ribbon {
                        ribbon.fpr(bits)
                    } else {
                        curve.fpr(keys, bits)
                    }
                })
                .collect()
        }
    }
}

/// The indices of the lower convex hull of `curve` (points `(j, curve[j])`, infinite ones left
/// out), in order, collinear points kept: for every price `p ≥ 0`, the first `j` minimising
/// `curve[j] + p · j` is among them. All indices if the curve has fewer than three finite
/// points.
fn lower_hull(curve: &[f64]) -> Vec<usize> {
    let mut hull: Vec<usize> = Vec::new();
    for j in (0..curve.len()).filter(|&j| curve[j].is_finite()) {
        while let [.., a, b] = hull[..] {
            // Drop `b` when it lies strictly above the segment from `a` to `j`.
            let (ja, jb, jj) = (a as f64, b as f64, j as f64);
            let cross = (jb - ja) * (curve[j] - curve[a]) - (curve[b] - curve[a]) * (jj - ja);
            if cross < 0.0 {
                hull.pop();
            } else {
                break;
            }
        }
        hull.push(j);
    }
    if hull.is_empty() {
        hull.push(0);
    }
    hull
}

/// The first grid point minimising `curve[j] + price · j`, by bisection over the points of
/// `hull` (`lower_hull(curve)`), along which the sum decreases until the minimum and does not
/// decrease after it.
fn hull_minimiser(curve: &[f64], hull: &[usize], price: f64) -> usize {
    let sum = |j: usize| curve[j] + price * j as f64;
    let falls = |i: usize| sum(hull[i + 1]).total_cmp(&sum(hull[i])).is_lt();
    let steps = hull.len().saturating_sub(1);
    // The first step along the hull that does not lower the sum.
    let mut lo = 0;
    let mut hi = steps;
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if falls(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    hull.get(lo).copied().unwrap_or(0)
}

fn grid_points() -> usize {
    (MAX_LEVEL_BITS_PER_KEY / GRID_BITS_PER_KEY).round() as usize + 1
}

fn blocked_bloom_grid() -> &'static [f64] {
    static GRID: std::sync::OnceLock<Vec<f64>> = std::sync::OnceLock::new();
    GRID.get_or_init(|| {
        (0..grid_points())
            .map(|j| FprCurve::BlockedBloom.fpr(1 << 30, j as f64 * GRID_BITS_PER_KEY))
            .collect()
    })
}

/// Spends what the grid solution left over in small steps, each to a level where a bit removes
/// (within 10 %) the most FPR, the last step fractional, so the budget is used exactly.
///
/// Among near-equal candidates the level with the fewest bits/key goes first: the blocked bloom
/// curve has small concave kinks where the best probe count changes, and without this a plain
/// greedy would pour the whole remainder into one of several equally sized levels.
fn spend_remainder(levels: &[LevelSpec], alloc: &mut [LevelAllocation], mut remaining: f64) {
    let step = GRID_BITS_PER_KEY / 4.0;
    while remaining > 0.0 {
        let gains: Vec<(usize, f64)> = levels
            .iter()
            .zip(alloc.iter())
            .enumerate()
            .filter(|(_, (l, a))| l.keys > 0 && a.bits_per_key + step <= MAX_LEVEL_BITS_PER_KEY)
            .map(|(i, (l, a))| {
                let next = evaluate(l, a.bits_per_key + step);
                (i, (a.fpr - next.fpr) / (l.keys as f64 * step))
            })
            .collect();
        let top = gains.iter().map(|g| g.1).fold(f64::NEG_INFINITY, f64::max);
        let best = gains
            .iter()
            .filter(|g| g.1 >= top * 0.9)
            .min_by(|a, b| alloc[a.0].bits_per_key.total_cmp(&alloc[b.0].bits_per_key));
        let Some(&(i, _)) = best else { return };
        let full = levels[i].keys as f64 * step;
        let bits = full.min(remaining);
        let bpk = alloc[i].bits_per_key + bits / levels[i].keys as f64;
        alloc[i] = evaluate(&levels[i], bpk);
        remaining -= bits;
        if bits < full {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(counts: &[u64], curve: FprCurve) -> Vec<LevelSpec> {
        counts
            .iter()
            .map(|&keys| LevelSpec::new(keys, curve))
            .collect()
    }

    const FANOUT10: [u64; 5] = [10_000, 100_000, 1_000_000, 10_000_000, 100_000_000];

    #[test]
    fn hull_holds_the_first_minimiser_at_every_price() {
        for curve in [
            FprCurve::BlockedBloom,
            FprCurve::Ribbon,
            FprCurve::BinaryFuse,
        ] {
            let level = LevelSpec::new(1_000_000, curve);
            let points = grid_curve(&level);
            let hull = lower_hull(&points);
            let first_min = |candidates: &mut dyn Iterator<Item = usize>, price: f64| {
                candidates.min_by(|&a, &b| {
                    (points[a] + price * a as f64).total_cmp(&(points[b] + price * b as f64))
                })
            };
            for e in -400..40 {
                let price = 10f64.powf(f64::from(e) / 10.0);
                let all = first_min(&mut (0..points.len()), price);
                let on_hull = first_min(&mut hull.iter().copied(), price);
                assert_eq!(all, on_hull, "{curve:?} at price {price}");
                assert_eq!(all, Some(hull_minimiser(&points, &hull, price)));
            }
        }
    }

    #[test]
    fn monkey_spends_the_budget() {
        for curve in [
            FprCurve::StandardBloom,
            FprCurve::BlockedBloom,
            FprCurve::Ribbon,
        ] {
            let levels = tree(&FANOUT10, curve);
            let budget = FilterBudget::BitsPerKey(10.0);
            let want = budget.total_bits(&levels);
            let got = total_bits(&monkey(&levels, budget));
            assert!(
                (got - want).abs() / want < 0.01,
                "{curve:?}: {got} vs {want}"
            );
            assert!(got <= want * 1.000_001, "{curve:?} overspends");
        }
    }

    #[test]
    fn monkey_gives_upper_levels_lower_fpr() {
        for curve in [
            FprCurve::StandardBloom,
            FprCurve::BlockedBloom,
            FprCurve::Ribbon,
        ] {
            let a = monkey(&tree(&FANOUT10, curve), FilterBudget::BitsPerKey(10.0));
            for pair in a.windows(2) {
                assert!(pair[0].fpr < pair[1].fpr, "{curve:?}: {a:?}");
                assert!(
                    pair[0].bits_per_key > pair[1].bits_per_key,
                    "{curve:?}: {a:?}"
                );
            }
        }
    }

    #[test]
    fn monkey_beats_uniform_on_fanout_10() {
        for curve in [
            FprCurve::StandardBloom,
            FprCurve::BlockedBloom,
            FprCurve::Ribbon,
        ] {
            let levels = tree(&FANOUT10, curve);
            let budget = FilterBudget::BitsPerKey(10.0);
            let m = sum_fpr(&monkey(&levels, budget));
            let u = sum_fpr(&uniform(&levels, budget));
            assert!(m * 2.5 < u, "{curve:?}: monkey {m} uniform {u}");
        }
    }

    #[test]
    fn monkey_equals_uniform_for_equal_levels() {
        let levels = tree(&[50_000; 4], FprCurve::BlockedBloom);
        let m = monkey(&levels, FilterBudget::BitsPerKey(9.0));
        for a in &m {
            assert!(
                (a.bits_per_key - 9.0).abs() <= GRID_BITS_PER_KEY + 1e-9,
                "{m:?}"
            );
        }
    }

    #[test]
    fn monkey_matches_closed_form_for_standard_bloom() {
        // Worked by hand. Standard bloom: b(p) = ln(1/p) / ln²2. Lagrange: p_i = λ·n_i.
        // Budget: Σ n_i · ln(1/(λ n_i)) / ln²2 = M  ⇒  ln λ = −(M·ln²2 + Σ n_i ln n_i) / N.
        // Levels n = (1000, 9000), M = 10 bits/key · 10 000 keys = 100 000 bits:
        //   Σ n_i ln n_i = 1000·6.907755 + 9000·9.104980 = 88 852.58
        //   M·ln²2 = 100 000 · 0.480453 = 48 045.30
        //   ln λ = −136 897.88 / 10 000 = −13.689788 ⇒ λ = 1.1332e-6
        //   p_1 = 1.1332e-3, p_2 = 1.0199e-2
        //   b_1 = ln(1/p_1)/ln²2 = 6.782706/0.480453 = 14.117, b_2 = 4.585469/0.480453 = 9.544
        let levels = tree(&[1000, 9000], FprCurve::StandardBloom);
        let a = monkey(&levels, FilterBudget::BitsPerKey(10.0));
        assert!((a[0].bits_per_key - 14.117).abs() < 0.03, "{a:?}");
        assert!((a[1].bits_per_key - 9.544).abs() < 0.03, "{a:?}");
        assert!((a[0].fpr - 1.1332e-3).abs() / 1.1332e-3 < 0.02, "{a:?}");
        assert!((a[1].fpr - 1.0199e-2).abs() / 1.0199e-2 < 0.02, "{a:?}");
    }

    #[test]
    fn empty_levels_get_nothing() {
        let levels = tree(&[0, 1000, 0], FprCurve::BlockedBloom);
        let a = monkey(&levels, FilterBudget::BitsPerKey(10.0));
        assert_eq!(a[0].bits_per_key, 0.0);
        assert_eq!(a[2].bits_per_key, 0.0);
        assert!((a[1].bits_per_key - 10.0).abs() < 1e-6);
        assert!(monkey(&[], FilterBudget::BitsPerKey(10.0)).is_empty());
    }
}
