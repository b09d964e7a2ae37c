//! How many filter bits per key a table about to be written gets: the policy's plan (Monkey or
//! Uniform) over the tree's levels, with each level counted as the tree is meant to be shaped.
//!
//! Why not the current key counts: they swing. A level above the bottom can hold many times its
//! target right after a large L0 compaction and then drain into the next level without ever being
//! rewritten, so tables planned from the swollen count keep a loose filter long after the level
//! is small again (and the tree spends less than its budget on the levels that need it most).
//! Levels above the bottom are therefore counted at their target size (`max_bytes_for_level_base
//! · multiplier^(n-1)`, in keys at the tree's bytes per key), as Monkey's analysis assumes; L0 as
//! one run of the table being flushed; the bottom level at its real count, since it holds most
//! keys and only it grows. The policy then pools a bottom level smaller than the level above it
//! (one that just appeared) with that level, see `FilterPolicy::plan`.
//!
//! The budget is kept over the whole tree. As the tree grows the plan moves under tables that
//! keep the filters they were built with (Monkey gives upper levels more bits as the bottom
//! grows), so the tables that stay hold more or less than the budget; the plan for the new table
//! is made with the budget corrected by that difference, spread over the tree, so rewrites pull
//! the tree back to its budget (gain 16, bounded to ±10% of it: a wider bound let tables of
//! one level differ so much that the level's mean FPR rose, FPR being convex in bits/key).
//!
//! The kind comes from the policy (bloom before `bloom_before_level`, the deep kind after); under
//! `FilterAllocation::Adaptive` a compaction then scales each output's bits/key by the lookup heat
//! of the key range it covers (`core/heat.rs`, `jobs/compaction/heat_map.rs`).
//!
//! Filters left out by choice (`filter_for`): `filter_bits_per_key = 0` gives every table none;
//! `optimize_filters_for_hits` gives none to tables written to the bottom level (the deepest that
//! holds tables; never L0). Such a table records why in its `filter_omitted` property. The plan
//! then leaves the bottom level out of Monkey's budget (its keys count as 0), and the budget
//! correction leaves unfiltered tables out of what the tree holds, so the upper levels get the
//! budget's bits per key of their own keys, no more. A table with a filter is rewritten rather
//! than moved into an unfiltered bottom level (`filters_fit_output_level` in the compaction job).

use siftdb_filter::LevelFilter;
use siftdb_sstable::FilterSpec;

use crate::base::options::Options;
use crate::core::memtable::Memtable;
use crate::core::version::Version;

pub(crate) use crate::base::options::TableFilter;

/// `filter_omitted` of a table written under `filter_bits_per_key = 0`.
pub(crate) const DISABLED: &str = "disabled";
/// `filter_omitted` of a bottom-level table written under `optimize_filters_for_hits`.
pub(crate) const BOTTOM_FOR_HITS: &str = "optimize_filters_for_hits";

impl TableFilter {
    pub(crate) fn omitted(why: &'static str) -> TableFilter {
        TableFilter {
            spec: None,
            omitted: why,
        }
    }
}

/// A new table's filter, and the level it was planned for (recorded as the table's
/// `FileMeta::filter_level`; [`BOTTOM`] for "whatever level is the bottom").
#[derive(Debug, Clone, Copy)]
pub(crate) struct FilterPlan {
    pub filter: TableFilter,
    pub level: usize,
    /// The level the table is written as (its codec's level): 0, or for a sequential flush the
    /// bottom level it is headed for.
    pub build_level: usize,
}

/// The `filter_level` of a table planned for the bottom of the tree wherever it is (the flush of
/// a sequential load): the deepest level there is, so that it may move down to any level.
pub(crate) const BOTTOM: usize = crate::base::options::MAX_LEVELS - 1;

/// The filter of the L0 table a flush of `mem` writes.
///
/// Usually planned as an L0 run of its size. But a memtable whose keys overlap no table of the
/// tree (a sequential load: time series, log indexes, bulk loads in key order) becomes a table
/// that every compaction below will move down unchanged (a trivial move) until it rests in the
/// bottom level, where it spends its life: its filter is planned as a table of the current
/// bottom level, kind and bits, and recorded as planned for the bottom ([`BOTTOM`]), so that it
/// keeps moving when a deeper level is born. Planned for L0 instead, every such table would
/// carry the many bits/key Monkey gives a small L0 run into the bottom level, and the tree would
/// hold twice its filter budget.
pub(crate) fn for_flush(options: &Options, version: &Version, mem: &Memtable) -> FilterPlan {
    let keys = mem.len() as u64;
    let mut level_keys = version.level_keys();
    // An empty tree has no bottom yet: its first table is planned as what it is, an L0 run.
    let bottom = level_keys.iter().rposition(|&k| k > 0);
    // (A range tombstone reaches over tables by design: never sequential.)
    let sequential = bottom.is_some()
        && mem.range_tombstones().is_none()
        && mem
            .user_key_range()
            .is_some_and(|(smallest, largest)| !version.overlaps(&smallest, &largest));
    let (level, recorded) = if let (true, Some(bottom)) = (sequential, bottom) {
        let bottom = bottom.max(1);
        level_keys[bottom] += keys;
        (bottom, BOTTOM)
    } else {
        level_keys[0] = keys; // plan for one L0 run of this size
        (0, 0)
    };
    FilterPlan {
        // The kind of where the table is headed (for a sequential flush, the deep levels').
        filter: filter_for(
            options,
            version,
            level,
            recorded.max(level),
            &level_keys,
            &[],
        ),
        level: recorded,
        build_level: level,
    }
}

/// The plan for a table written to `output_level`, where `level_keys` are the real key counts
/// per level once the job is done (for a flush, `level_keys[0]` is the new table's own count) and
/// `replaced` the numbers of the tables the job removes; and the key counts per level it was
/// made for.
fn level_filter_for(
    options: &Options,
    version: &Version,
    output_level: usize,
    level_keys: &[u64],
    replaced: &[u64],
) -> (LevelFilter, Vec<u64>) {
    let mut planned = planned_level_keys(options, version, level_keys);
    // Under optimize_filters_for_hits the bottom level holds no filter: the budget is the
    // upper levels' alone, and its tables are not held against it.
    let unfiltered_level = bottom_without_filters(options, level_keys);
    if let Some(bottom) = unfiltered_level {
        planned[bottom] = 0;
    }
    let mut policy = options.filter_policy();
    policy.bits_per_key = corrected_budget(
        options.filter_bits_per_key,
        version,
        replaced,
        unfiltered_level,
        planned.iter().sum(),
    );
    let plan = policy
        .plan_with_filter_keys(&planned, &keys_per_filter(version))
        .get(output_level)
        .map_or(
            LevelFilter {
                kind: policy.kind_for_level(output_level),
                bits_per_key: options.filter_bits_per_key,
                fpr: 0.0,
            },
            |p| *p,
        );
    (plan, planned)
}

/// What adaptive allocation sizes a compaction's outputs from: Monkey's plan for their level
/// (its FPR and curve) and the density Monkey assumes there (one lookup in `level_keys` keys
/// probes a given key's place; see `heat.rs`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct AdaptiveBasis {
    pub fpr: f64,
    pub kind: siftdb_filter::FilterKind,
    pub level_keys: u64,
    /// The keys the plan counts on the level above the output level.
    pub upper_level_keys: u64,
}

/// The basis of adaptive allocation for tables written to `output_level` (arguments as
/// [`filter_for`]).
pub(crate) fn adaptive_basis(
    options: &Options,
    version: &Version,
    output_level: usize,
    level_keys: &[u64],
    replaced: &[u64],
) -> AdaptiveBasis {
    let (plan, planned) = level_filter_for(options, version, output_level, level_keys, replaced);
    AdaptiveBasis {
        fpr: plan.fpr,
        kind: options.filter_policy().kind_for_level(output_level),
        level_keys: planned.get(output_level).copied().unwrap_or(1).max(1),
        upper_level_keys: output_level
            .checked_sub(1)
            .and_then(|l| planned.get(l))
            .copied()
            .unwrap_or(1)
            .max(1),
    }
}

/// The level below L0 that holds no filters under `optimize_filters_for_hits`: the bottom of
/// the tree `level_keys` describe (`None` when the option is off or the tree is L0 only; a
/// flush to L0 always gets a filter).
fn bottom_without_filters(options: &Options, level_keys: &[u64]) -> Option<usize> {
    if !options.optimize_filters_for_hits {
        return None;
    }
    level_keys.iter().rposition(|&k| k > 0).filter(|&b| b > 0)
}

/// The filter of a table written to `output_level` (see [`level_filter_for`]), of the kind the
/// policy gives `kind_level`. None, and why, when the options leave it out
/// (`filter_bits_per_key = 0`; the bottom level under `optimize_filters_for_hits`). None without
/// a reason when the plan chose no filter for the level: a step curve (binary fuse) whose
/// cheapest filter costs more than the budget leaves the level, where the plan's FPR is 1.
/// Building the cheapest one anyway would spend bits the plan gave to other levels, and the
/// tree would hold more than its budget.
pub(crate) fn filter_for(
    options: &Options,
    version: &Version,
    output_level: usize,
    kind_level: usize,
    level_keys: &[u64],
    replaced: &[u64],
) -> TableFilter {
    if options.filter_bits_per_key <= 0.0 {
        return TableFilter::omitted(DISABLED);
    }
    if bottom_without_filters(options, level_keys) == Some(output_level) {
        return TableFilter::omitted(BOTTOM_FOR_HITS);
    }
    let (planned, _) = level_filter_for(options, version, output_level, level_keys, replaced);
    TableFilter {
        spec: (planned.fpr < 1.0).then(|| FilterSpec {
            kind: options.filter_policy().kind_for_level(kind_level),
            bits_per_key: planned.bits_per_key.max(1.0),
        }),
        omitted: "",
    }
}

/// How strongly a plan corrects the tree's shortfall against its budget (see `corrected_budget`).
const CORRECTION_GAIN: f64 = 16.0;

/// The average bits/key to plan with so that the tree as a whole returns to `budget`: the tables
/// that stay hold `held` bits (as built) over `held_keys`; their shortfall is spread over the
/// `planned_keys` of the plan. Tables the options keep without a filter (those of
/// `unfiltered_level`, and any recorded as `filter_omitted`) are outside the budget, not short
/// of it.
fn corrected_budget(
    budget: f64,
    version: &Version,
    replaced: &[u64],
    unfiltered_level: Option<usize>,
    planned_keys: u64,
) -> f64 {
    let (held_keys, held_bits) = (0..version.num_levels())
        .filter(|&l| Some(l) != unfiltered_level)
        .flat_map(|l| version.level(l))
        .filter(|f| !replaced.contains(&f.meta.number))
        .filter(|f| f.table.properties().filter_omitted.is_empty())
        .fold((0u64, 0.0f64), |(k, b), f| {
            (
                k + f.meta.distinct_keys,
                b + f.table.filter_bits_per_key() * f.meta.distinct_keys as f64,
            )
        });
    if planned_keys == 0 || !budget.is_finite() {
        return budget;
    }
    let shortfall = budget * held_keys as f64 - held_bits;
    // Each job rewrites a small part of the tree (a few percent), so the shortfall is weighted
    // up: a plain share per planned key left a growing tree 1-3% short, gain 4 still ~2%, gain
    // 16 within 0-1.7%. Stable while gain × (job keys / tree keys) < 2; the clamp keeps one
    // plan from straying far.
    (budget + CORRECTION_GAIN * shortfall / planned_keys as f64).clamp(budget * 0.9, budget * 1.1)
}

/// Keys of one filter per level, as the level's tables were cut (a table's distinct keys over its
/// filter partitions, or over one whole filter): what a new table of the level will look like,
/// and what a filter whose cost depends on its key count (binary fuse) is priced at. A level
/// without tables takes the figure of the levels below L0 that have them (or of L0 if none).
fn keys_per_filter(version: &Version) -> Vec<u64> {
    let per_level: Vec<(u64, u64)> = (0..version.num_levels())
        .map(|l| {
            version.level(l).iter().fold((0, 0), |(keys, filters), f| {
                let partitions = f.table.properties().filter_partitions.max(1);
                (keys + f.meta.distinct_keys, filters + partitions)
            })
        })
        .collect();
    let sum = |levels: &[(u64, u64)]| {
        levels
            .iter()
            .fold((0, 0), |(k, n), &(keys, filters)| (k + keys, n + filters))
    };
    let deep = sum(per_level.get(1..).unwrap_or(&[]));
    let fallback = if deep.1 > 0 { deep } else { sum(&per_level) };
    per_level
        .iter()
        .map(|&(keys, filters)| {
            let (keys, filters) = if filters > 0 {
                (keys, filters)
            } else {
                fallback
            };
            keys.checked_div(filters).unwrap_or(0)
        })
        .collect()
}

/// The counts the plan is made for (see the module docs).
fn planned_level_keys(options: &Options, version: &Version, level_keys: &[u64]) -> Vec<u64> {
    let Some(bottom) = level_keys.iter().rposition(|&k| k > 0) else {
        return level_keys.to_vec();
    };
    let (bytes, keys) = (0..version.num_levels())
        .flat_map(|l| version.level(l))
        .fold((0u64, 0u64), |(b, k), f| {
            (b + f.meta.file_size, k + f.meta.distinct_keys)
        });
    if keys == 0 || bytes == 0 {
        return level_keys.to_vec();
    }
    let bytes_per_key = bytes as f64 / keys as f64;
    let multiplier = options.max_bytes_for_level_multiplier.max(1.0);
    level_keys
        .iter()
        .enumerate()
        .map(|(level, &actual)| {
            if level == 0 || level >= bottom {
                actual
            } else {
                let target =
                    options.max_bytes_for_level_base as f64 * multiplier.powi(level as i32 - 1);
                (target / bytes_per_key).round().max(1.0) as u64
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upper_levels_count_at_their_targets_and_the_bottom_as_is() {
        let options = Options {
            max_bytes_for_level_base: 1000,
            max_bytes_for_level_multiplier: 10.0,
            ..Options::default()
        };
        // An empty version: no bytes/key known yet, the real counts are used.
        let version = Version::empty();
        assert_eq!(
            planned_level_keys(&options, &version, &[5, 0, 7, 0]),
            vec![5, 0, 7, 0]
        );
    }
}
