//! The settings table of a run: one row per setting, one column per engine, saying what each
//! engine was actually given — so that every difference between engines is on the page next to
//! the figures (`docs/BENCHMARKS.md` explains each row that differs).

use std::fmt::Write as _;

use super::args::{AllocationArg, Config};
use super::engine::{compression_text, siftdb_options};
use super::report::{filter_layout, human_bytes};

/// The settings, in the order the table lists them.
pub const ROWS: [&str; 11] = [
    "filters",
    "block cache",
    "prefix filter",
    "memtable",
    "tree shape",
    "compression",
    "table reads",
    "sync (--sync)",
    "L0 slowdown",
    "statistics",
    "background work",
];

/// One engine's values, by row name.
pub type SettingRows = Vec<(&'static str, String)>;

/// What siftdb is given for `config`.
pub fn siftdb_rows(config: &Config) -> SettingRows {
    let o = siftdb_options(config);
    let allocation = match config.filter.allocation {
        AllocationArg::Monkey => "Monkey",
        AllocationArg::Uniform => "uniform",
        AllocationArg::Adaptive => "adaptive",
    };
    vec![
        (
            "filters",
            format!(
                "{} bits/key average ({allocation}); {}{}",
                config.filter.bits_per_key,
                filter_layout(config),
                hits_text(config)
            ),
        ),
        (
            "block cache",
            format!(
                "{} LRU, {}; filter+index blocks in it, L0's pinned",
                human_bytes(o.block_cache_capacity as u64),
                match o.block_cache_admission {
                    siftdb::CacheAdmission::All => "every block admitted",
                    siftdb::CacheAdmission::SecondSighting => {
                        "data blocks admitted on their second sighting"
                    }
                    siftdb::CacheAdmission::TinyLfu => "data blocks admitted by TinyLFU",
                }
            ),
        ),
        ("prefix filter", format!("fixed:{}", config.prefix_size)),
        (
            "memtable",
            format!(
                "{} x{}{}",
                human_bytes(o.write_buffer_size as u64),
                o.max_write_buffer_number,
                memtable_bloom_text(config)
            ),
        ),
        ("tree shape", tree_shape(config)),
        ("compression", compression_text(&config.compression)),
        (
            "table reads",
            if config.mmap_read { "mmap" } else { "pread" }.to_string(),
        ),
        ("sync (--sync)", sync_text(config, "fdatasync of the WAL")),
        (
            "L0 slowdown",
            format!("none: stop at {} L0 files", o.level0_stop_writes_trigger),
        ),
        ("statistics", "counters only (no timers)".to_string()),
        (
            "background work",
            format!(
                "1 flush + {} compaction threads",
                o.max_background_compactions
            ),
        ),
    ]
}

/// `--optimize_filters_for_hits` as siftdb and RocksDB apply it (empty when off).
pub fn hits_text(config: &Config) -> &'static str {
    if config.optimize_filters_for_hits {
        "; no filter on the bottom level (optimize_filters_for_hits)"
    } else {
        ""
    }
}

/// The memtable bloom as siftdb and RocksDB are given it (empty when off).
pub fn memtable_bloom_text(config: &Config) -> String {
    if config.memtable_bloom_size_ratio <= 0.0 {
        return String::new();
    }
    format!(
        "; memtable bloom {} of it over {}",
        config.memtable_bloom_size_ratio,
        if config.memtable_whole_key_filtering {
            "prefixes and whole keys"
        } else {
            "prefixes"
        }
    )
}

/// The tree's shape as every engine is given it.
pub fn tree_shape(config: &Config) -> String {
    let o = siftdb_options(config);
    let order = match o.compaction_pri {
        siftdb::CompactionPri::MinOverlappingRatio => "min overlapping ratio",
        siftdb::CompactionPri::RoundRobin => "round robin",
    };
    format!(
        "L0 trigger {}, target file {}, L1 {}, multiplier {}, file order {order}",
        o.level0_file_num_compaction_trigger,
        human_bytes(o.target_file_size_base),
        human_bytes(o.max_bytes_for_level_base),
        o.max_bytes_for_level_multiplier
    )
}

/// `--sync` as an engine applies it: `how` per write, or none.
pub fn sync_text(config: &Config, how: &str) -> String {
    if config.sync {
        format!("{how} per write")
    } else {
        "off: written to the OS per write".to_string()
    }
}

/// The table for `columns` (engine name, its rows); a row an engine does not give reads `-`.
pub fn table(columns: &[(String, SettingRows)]) -> String {
    let value = |rows: &SettingRows, row: &str| -> String {
        rows.iter()
            .find(|(name, _)| *name == row)
            .map_or_else(|| "-".to_string(), |(_, v)| v.clone())
    };
    let widths: Vec<usize> = columns
        .iter()
        .map(|(name, rows)| {
            ROWS.iter()
                .map(|row| value(rows, row).chars().count())
                .chain(std::iter::once(name.len()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::from("settings (what each engine was given)\n");
    let mut line = |label: &str, cells: Vec<String>| {
        let _ = write!(out, "  {label:<16}");
        for (cell, width) in cells.iter().zip(&widths) {
            let _ = write!(out, " | {cell:<width$}");
        }
        out.push('\n');
    };
    line("setting", columns.iter().map(|(n, _)| n.clone()).collect());
    for row in ROWS {
        line(row, columns.iter().map(|(_, r)| value(r, row)).collect());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_has_a_cell_per_engine() {
        let rows = vec![("filters", "bloom".to_string())];
        let text = table(&[("a".to_string(), rows.clone()), ("bb".to_string(), vec![])]);
        assert_eq!(text.lines().count(), 2 + ROWS.len());
        let filters = text.lines().find(|l| l.contains("filters")).unwrap();
        assert!(
            filters.contains("bloom") && filters.trim_end().ends_with('-'),
            "{filters}"
        );
    }
}
