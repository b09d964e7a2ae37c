//! `Db::property`: human-readable reports of a tree and of the database.

use std::fmt::Write as _;

use crate::core::keyspace_tree::KeyspaceTree;
use crate::core::level_info::{level_reports, LevelInfo};
use crate::paths::engine::Engine;

/// Property `name` of `tree` (or of the whole database, for `siftdb.stats`,
/// `siftdb.keyspaces`, `siftdb.total-size-all-mem-tables` and `siftdb.memtables-memory-bytes`).
pub(crate) fn property(db: &Engine, tree: &KeyspaceTree, name: &str) -> Option<String> {
    let view = tree.read_view();
    match name {
        "siftdb.levels" => {
            let mut table = levels_table(&level_reports(tree, &view.version));
            index_row(&mut table, tree, &view.version);
            Some(table)
        }
        "siftdb.stats" => Some(format!("{:#?}", db.stats())),
        "siftdb.sstables" => Some(sstables_table(tree, &view.version)),
        "siftdb.keyspaces" => Some(keyspaces_table(db)),
        "siftdb.memtables-memory-bytes" => {
            Some(db.shared().state().lock().memtables_memory().to_string())
        }
        "siftdb.total-size-all-mem-tables" => {
            let (active, frozen) = db.shared().state().lock().memtable_bytes();
            Some((active + frozen).to_string())
        }
        "siftdb.estimate-num-keys" => {
            let mem: usize = std::iter::once(&view.mem)
                .chain(&view.imm)
                .map(|m| m.len())
                .sum();
            let tables: u64 = view.version.all().map(|(_, f)| f.meta.entries).sum();
            Some((mem as u64 + tables).to_string())
        }
        "siftdb.num-immutable-mem-table" => Some(view.imm.len().to_string()),
        "siftdb.estimate-pending-compaction-bytes" => {
            Some(pending_compaction_bytes(tree, &view.version).to_string())
        }
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

/// Bytes compaction owes the tree in its style (RocksDB's property of the same name).
fn pending_compaction_bytes(tree: &KeyspaceTree, version: &crate::core::version::Version) -> u64 {
    use crate::base::compaction_style::{universal_config, CompactionStyle};
    let levels = crate::core::version_set::level_files(version);
    let o = &tree.options();
    match o.compaction_style {
        CompactionStyle::Universal => siftdb_compaction::universal::pending_compaction_bytes(
            &levels,
            &universal_config(
                &o.compaction_options_universal,
                o.level0_file_num_compaction_trigger,
            ),
        ),
        CompactionStyle::Fifo => 0,
        _ => siftdb_compaction::picker::pending_compaction_bytes(&levels, &o.picker_config()),
    }
}

/// The filter index's row under the levels (`core::filter_index`): the tables it covers, the
/// keys added to it, its bytes, bits per key at those keys, its expected and measured FPR and
/// the keys it ruled out; "planned" is its room in keys.
fn index_row(out: &mut String, tree: &KeyspaceTree, version: &crate::core::version::Version) {
    use std::sync::atomic::Ordering::Relaxed;
    let Some(index) = tree.filter_index.current() else {
        return;
    };
    let tickers = &tree.filter_index.tickers;
    let negatives = tickers.negative.load(Relaxed);
    let false_positives = tickers.false_positive.load(Relaxed);
    let measured = if negatives + false_positives == 0 {
        0.0
    } else {
        false_positives as f64 / (negatives + false_positives) as f64
    };
    let covered = version
        .all()
        .filter(|(_, f)| f.index_gen() == index.r#gen)
        .count();
    let files = version.all().count();
    let _ = writeln!(
        out,
        "{:<5} {:>6} {:>11} {:>12} {:<14} {:>9.2} {:>12.6} {:>12.6} {:>10} {:>8} {:>10} {:>10}  {:<10}",
        "index",
        format!("{covered}/{files}"),
        index.added(),
        index.size_bytes(),
        "blocked-bloom",
        index.size_bytes() as f64 * 8.0 / index.added().max(1) as f64,
        index.expected_fpr(),
        measured,
        negatives,
        index.room(),
        "-",
        files - covered,
        "-"
    );
}

/// One row per table, level by level in key order (RocksDB's `rocksdb.sstables`): its number,
/// keys, bytes, key range (lossy UTF-8), filter kind and bits/key, and — under adaptive filter
/// allocation — the filter probes and false positives counted since it was opened and its heat
/// (probes per key against Monkey's assumption for its level; see `heat.rs`).
fn sstables_table(tree: &KeyspaceTree, version: &crate::core::version::Version) -> String {
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
            f.table.filter_bits_per_key(),
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
fn keyspaces_table(db: &Engine) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<24} {:>4} {:>6} {:>12} {:>11} {:>12}",
        "keyspace", "id", "files", "bytes", "keys", "mem bytes"
    );
    for (tree, version) in db.shared().versions().all_current() {
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
