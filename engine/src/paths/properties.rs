//! `Db::property`: human-readable reports, and the over-fill check behind the FPR warning.

use std::fmt::Write as _;

use crate::api::db::DbInner;
use crate::core::stats::LevelFilterStats;
use crate::core::tree::Tree;
use crate::core::version::Version;

/// Negative lookups a level needs before its measured FPR is trusted for the warning.
const MIN_FPR_SAMPLE: u64 = 2_000;

/// One level of the tree as [`Db::level_info`](crate::Db::level_info) reports it (the rows of
/// the `siftdb.levels` property): its tables, and the filters they were built with.
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

pub(crate) fn level_reports(tree: &Tree, version: &Version) -> Vec<LevelInfo> {
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
            let filter_bytes: u64 = files
                .iter()
                .map(|f| f.table.properties().filter_bytes)
                .sum();
            // Expected FPR of a lookup that reaches a table of this level: the key-weighted mean.
            let expected = if keys == 0 {
                0.0
            } else {
                files
                    .iter()
                    .map(|f| f.table.properties().filter_expected_fpr * f.meta.distinct_keys as f64)
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
                        .map(|f| {
                            f.table.properties().filter_bits_per_key * f.meta.distinct_keys as f64
                        })
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

/// Property `name` of `tree` (or of the whole database, for `siftdb.stats` and
/// `siftdb.keyspaces`).
pub(crate) fn property(db: &DbInner, tree: &Tree, name: &str) -> Option<String> {
    let view = tree.read_view();
    match name {
        "siftdb.levels" => Some(levels_table(&level_reports(tree, &view.version))),
        "siftdb.stats" => Some(format!("{:#?}", db.stats())),
        "siftdb.sstables" => Some(sstables_table(tree, &view.version)),
        "siftdb.keyspaces" => Some(keyspaces_table(db)),
        "siftdb.estimate-num-keys" => {
            let mem: usize = std::iter::once(&view.mem)
                .chain(&view.imm)
                .map(|m| m.len())
                .sum();
            let tables: u64 = view.version.all().map(|(_, f)| f.meta.entries).sum();
            Some((mem as u64 + tables).to_string())
        }
        "siftdb.num-immutable-mem-table" => Some(view.imm.len().to_string()),
        "siftdb.cur-size-all-mem-tables" => Some(
            std::iter::once(&view.mem)
                .chain(&view.imm)
                .map(|m| m.approximate_size())
                .sum::<usize>()
                .to_string(),
        ),
        _ => {
            let level: usize = name
                .strip_prefix("siftdb.num-files-at-level")?
                .parse()
                .ok()?;
            (level < view.version.num_levels()).then(|| view.version.level(level).len().to_string())
        }
    }
}

/// One row per table, level by level in key order (RocksDB's `rocksdb.sstables`): its number,
/// keys, bytes, key range (lossy UTF-8), filter kind and bits/key, and — under adaptive filter
/// allocation — the filter probes and false positives counted since it was opened and its heat
/// (probes per key against Monkey's assumption for its level; see `heat.rs`).
fn sstables_table(tree: &Tree, version: &crate::core::version::Version) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<5} {:>8} {:>10} {:>12} {:<14} {:>9} {:>10} {:>8} {:>8}  key range",
        "level", "table", "keys", "bytes", "filter", "bits/key", "probes", "false+", "heat"
    );
    let now = tree.lookups.now();
    let level_keys = version.level_keys();
    for (level, f) in version.all() {
        let props = f.table.properties();
        let keys = f.meta.distinct_keys;
        let prior_keys = if level == 0 { keys } else { level_keys[level] };
        let prior = 1.0 / prior_keys.max(1) as f64;
        let _ = writeln!(
            out,
            "L{:<4} {:>8} {:>10} {:>12} {:<14} {:>9.2} {:>10} {:>8} {:>8.3}  {}..{}",
            level,
            f.meta.number,
            keys,
            f.meta.file_size,
            if props.filter_kind.is_empty() {
                "-"
            } else {
                &props.filter_kind
            },
            props.filter_bits_per_key,
            f.heat.probes(),
            f.heat.false_positives(),
            f.heat.density(now, keys, prior) / prior,
            String::from_utf8_lossy(f.smallest_user_key()),
            String::from_utf8_lossy(f.largest_user_key()),
        );
    }
    out
}

/// One row per keyspace: its id, tables, bytes on disk, keys and memtable bytes.
fn keyspaces_table(db: &DbInner) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<24} {:>4} {:>6} {:>12} {:>11} {:>12}",
        "keyspace", "id", "files", "bytes", "keys", "mem bytes"
    );
    for (tree, version) in db.versions.all_current() {
        let view = tree.read_view();
        let mem: usize = std::iter::once(&view.mem)
            .chain(&view.imm)
            .map(|m| m.approximate_size())
            .sum();
        let keys: u64 = version.all().map(|(_, f)| f.meta.entries).sum::<u64>()
            + std::iter::once(&view.mem)
                .chain(&view.imm)
                .map(|m| m.len() as u64)
                .sum::<u64>();
        let _ = writeln!(
            out,
            "{:<24} {:>4} {:>6} {:>12} {:>11} {:>12}",
            tree.name,
            tree.id,
            version.all().count(),
            version.all().map(|(_, f)| f.meta.file_size).sum::<u64>(),
            keys,
            mem
        );
    }
    out
}

fn levels_table(reports: &[LevelInfo]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<5} {:>6} {:>11} {:>12} {:<14} {:>9} {:>12} {:>12} {:>10} {:>8} {:>10} {:>10}  {:<10}",
        "level",
        "files",
        "keys",
        "bytes",
        "filter",
        "bits/key",
        "expected fpr",
        "measured fpr",
        "negatives",
        "planned",
        "memo hits",
        "unfiltered",
        "omitted by"
    );
    for (level, r) in reports.iter().enumerate() {
        if r.files == 0 && r.measured.checked == 0 {
            continue;
        }
        let negatives = r.measured.false_positives() + r.measured.useful;
        let _ = writeln!(
            out,
            "L{:<4} {:>6} {:>11} {:>12} {:<14} {:>9.2} {:>12.6} {:>12.6} {:>10} {:>8.2} {:>10} {:>10}  {:<10}",
            level,
            r.files,
            r.keys,
            r.bytes,
            r.filter_kind,
            r.bits_per_key,
            r.expected_fpr,
            r.measured.measured_fpr(),
            negatives,
            r.planned_bits_per_key,
            r.measured.memo_hits,
            r.unfiltered_tables,
            if r.filter_omitted.is_empty() {
                "-"
            } else {
                &r.filter_omitted
            }
        );
    }
    out
}
