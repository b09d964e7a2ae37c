//! What each level of a tree holds and the filters its tables were built with
//! ([`LevelInfo`]), and the over-fill check behind the FPR warning.

use crate::core::keyspace_tree::KeyspaceTree;
use crate::core::stats::LevelFilterStats;
use crate::core::version::Version;

/// Negative lookups a level needs before its measured FPR is trusted for the warning.
const MIN_FPR_SAMPLE: u64 = 2_000;

/// One level of the tree as [`Db::level_info`](crate::Db::level_info) reports it (the rows of
/// the `siftdb.levels` property): its tables, and the filters they were built with. The fields
/// are public plain values, read directly.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LevelInfo {
    /// Tables in the level.
    pub files: usize,
    /// Distinct keys in the level's tables (the counts their filters were sized from).
    pub keys: u64,
    /// Bytes of the level's table files.
    pub bytes: u64,
    /// The filter kinds of the level's tables (`blocked_bloom`, `ribbon`, `a+b` when mixed, `-`
    /// when the level is empty).
    pub filter_kind: String,
    /// Bytes of the level's filters.
    pub filter_bytes: u64,
    /// Filter bits per key actually built: `8 · filter_bytes / keys`.
    pub bits_per_key: f64,
    /// Filter bits per key the plan asked for (key-weighted mean over the level's tables); the
    /// built figure adds headers and size rounding.
    pub planned_bits_per_key: f64,
    /// The FPR the level's filters were built to give: the key-weighted mean over its tables
    /// (the FPR a lookup reaching a random table of the level meets).
    pub expected_fpr: f64,
    /// The level's filter counters since the database was opened (measured FPR and all).
    pub measured: LevelFilterStats,
    /// Tables of the level whose index and filter are partitioned (see
    /// `Options::partition_above`).
    pub partitioned_tables: usize,
    /// Tables of the level built without a whole-key filter (by choice or by the plan).
    pub unfiltered_tables: usize,
    /// Why those tables have none, when the options chose so (`disabled`,
    /// `optimize_filters_for_hits`, `a+b` when mixed; empty when no table records a reason).
    pub filter_omitted: String,
}

pub(crate) fn level_reports(tree: &KeyspaceTree, version: &Version) -> Vec<LevelInfo> {
    let levels = crate::core::stats::level_filter_stats(std::iter::once(&tree.levels));
    (0..version.num_levels())
        .map(|level| {
            let files = version.level(level);
            let keys: u64 = files.iter().map(|f| f.meta.distinct_keys).sum();
            let mut kinds: Vec<&str> = files
                .iter()
                .map(|f| f.table.properties().filter_kind.as_str())
                .collect();
            kinds.sort_unstable();
            kinds.dedup();
            let mut omitted: Vec<&str> = files
                .iter()
                .map(|f| f.table.properties().filter_omitted.as_str())
                .filter(|why| !why.is_empty())
                .collect();
            omitted.sort_unstable();
            omitted.dedup();
            let filter_bytes: u64 = files.iter().map(|f| f.table.filter_bytes()).sum();
            // Expected FPR of a lookup that reaches a table of this level: the key-weighted mean.
            let expected = if keys == 0 {
                0.0
            } else {
                files
                    .iter()
                    .map(|f| f.table.filter_expected_fpr() * f.meta.distinct_keys as f64)
                    .sum::<f64>()
                    / keys as f64
            };
            LevelInfo {
                partitioned_tables: files.iter().filter(|f| f.table.is_partitioned()).count(),
                unfiltered_tables: files
                    .iter()
                    .filter(|f| f.table.properties().filter_kind == "none")
                    .count(),
                filter_omitted: omitted.join("+"),
                files: files.len(),
                keys,
                bytes: files.iter().map(|f| f.meta.file_size).sum(),
                filter_kind: if kinds.is_empty() {
                    "-".to_string()
                } else {
                    kinds.join("+")
                },
                filter_bytes,
                planned_bits_per_key: if keys == 0 {
                    0.0
                } else {
                    files
                        .iter()
                        .map(|f| f.table.filter_bits_per_key() * f.meta.distinct_keys as f64)
                        .sum::<f64>()
                        / keys as f64
                },
                bits_per_key: if keys == 0 {
                    0.0
                } else {
                    filter_bytes as f64 * 8.0 / keys as f64
                },
                expected_fpr: expected,
                measured: levels.get(level).copied().unwrap_or_default(),
            }
        })
        .collect()
}

/// Levels whose measured FPR is more than twice the expected one over a meaningful sample:
/// the signature of over-full filters or a hash mismatch.
pub(crate) fn overfull_levels(reports: &[LevelInfo]) -> Vec<(usize, f64, f64)> {
    reports
        .iter()
        .enumerate()
        .filter(|(_, r)| {
            let negatives = r.measured.false_positives() + r.measured.useful;
            negatives >= MIN_FPR_SAMPLE
                && r.expected_fpr > 0.0
                && r.measured.measured_fpr() > 2.0 * r.expected_fpr
        })
        .map(|(l, r)| (l, r.measured.measured_fpr(), r.expected_fpr))
        .collect()
}
