//! What each engine is given: the siftdb options a run's flags describe ([`siftdb_options`],
//! which every peer's settings are mapped from), the wording of the settings every engine
//! describes alike, and the settings table of a run: one row per setting, one column per
//! engine, saying what each engine was actually given — so that every difference between
//! engines is on the page next to the figures (`docs/BENCHMARKS.md` explains each row that
//! differs).

use std::fmt::Write as _;

use siftdb::{FilterAllocation, FixedPrefix, Options};

use super::args::{
    AdmissionArg, AllocationArg, CompactionPriArg, CompactionStyleArg, Config, FilterPolicyArg,
    StyleShape, TreeShape,
};
use super::text::human_bytes;

/// The settings, in the order the table lists them.
pub const ROWS: [&str; 14] = [
    "filters",
    "block cache",
    "prefix filter",
    "memtable",
    "tree shape",
    "compression",
    "blob files",
    "table reads",
    "point lookups",
    "sync (--sync)",
    "L0 slowdown",
    "statistics",
    "background work",
    "transactions",
];

/// The "transactions" row: what `--optimistic_transaction_db` / `--transaction_db` gave an
/// engine, each engine's words for its mode (`optimistic`, `pessimistic`), or "none".
pub fn transactions_text(
    config: &Config,
    optimistic: impl FnOnce() -> String,
    pessimistic: impl FnOnce(u128) -> String,
) -> String {
    match config.transactions {
        None => "none (no --optimistic_transaction_db / --transaction_db)".to_string(),
        Some(txn) if txn.pessimistic => pessimistic(txn.lock_timeout.as_millis()),
        Some(_) => optimistic(),
    }
}

/// The "blob files" row as every engine was given it (`gc` names the engine's collection).
pub fn blob_text(config: &Config, gc: &str) -> String {
    let b = &config.blob;
    if !b.enabled {
        return "off (values in the tables)".to_string();
    }
    format!(
        "values >= {} B in files of {}, {}; {gc}",
        b.min_blob_size,
        human_bytes(b.blob_file_size),
        b.compression.name()
    )
}

/// The "L0 slowdown" row of the engines given siftdb's L0 triggers (siftdb and RocksDB).
pub fn slowdown_text(o: &Options) -> String {
    format!(
        "slowed to {}/s from {} L0 files, stopped at {}",
        human_bytes(o.delayed_write_rate),
        o.level0_slowdown_writes_trigger,
        o.level0_stop_writes_trigger
    )
}

/// One engine's values, by row name.
pub type SettingRows = Vec<(&'static str, String)>;

/// The siftdb options `config` describes.
pub fn siftdb_options(config: &Config) -> Options {
    let defaults = Options::default();
    Options {
        filter_bits_per_key: config.filter.bits_per_key,
        optimize_filters_for_hits: config.optimize_filters_for_hits,
        memtable_prefix_bloom_size_ratio: config.memtable_bloom_size_ratio,
        memtable_whole_key_filtering: config.memtable_whole_key_filtering,
        bloom_before_level: config.filter.bloom_before_level,
        deep_filter_kind: if config.filter.policy == FilterPolicyArg::Fuse {
            siftdb::FilterKind::BinaryFuse
        } else {
            siftdb::FilterKind::Ribbon
        },
        filter_allocation: match config.filter.allocation {
            AllocationArg::Monkey => FilterAllocation::Monkey,
            AllocationArg::Uniform => FilterAllocation::Uniform,
            AllocationArg::Adaptive => FilterAllocation::Adaptive,
        },
        prefix_extractor: Some(FixedPrefix::shared(config.prefix_size)),
        block_cache_capacity: config.cache_size.unwrap_or(defaults.block_cache_capacity),
        block_cache_admission: match config.cache_admission {
            AdmissionArg::All => siftdb::CacheAdmission::All,
            AdmissionArg::SecondSighting => siftdb::CacheAdmission::SecondSighting,
            AdmissionArg::TinyLfu => siftdb::CacheAdmission::TinyLfu,
        },
        false_positive_memo_bytes: config
            .false_positive_memo_bytes
            .unwrap_or(defaults.false_positive_memo_bytes),
        range_filter_bits_per_key: config
            .range_filter_bits_per_key
            .unwrap_or(defaults.range_filter_bits_per_key),
        filter_index_bits_per_key: config
            .filter_index_bits_per_key
            .unwrap_or(defaults.filter_index_bits_per_key),
        write_buffer_size: config
            .write_buffer_size
            .unwrap_or(defaults.write_buffer_size),
        bytes_per_sync: config.bytes_per_sync.unwrap_or(defaults.bytes_per_sync),
        compression_parallel_threads: config
            .compression_parallel_threads
            .map_or(defaults.compression_parallel_threads, |n| n as usize),
        wal_bytes_per_sync: config
            .wal_bytes_per_sync
            .unwrap_or(defaults.wal_bytes_per_sync),
        max_write_buffer_number: config
            .max_write_buffer_number
            .map_or(defaults.max_write_buffer_number, |n| n as usize),
        db_write_buffer_size: config.db_write_buffer_size,
        allow_stall: config.allow_stall,
        max_open_files: config.open_files.unwrap_or(defaults.max_open_files),
        max_manifest_file_size: config
            .max_manifest_file_size
            .unwrap_or(defaults.max_manifest_file_size),
        target_file_size_base: config
            .tree
            .target_file_size_base
            .unwrap_or(defaults.target_file_size_base),
        max_bytes_for_level_base: config
            .tree
            .max_bytes_for_level_base
            .unwrap_or(defaults.max_bytes_for_level_base),
        max_bytes_for_level_multiplier: config
            .tree
            .max_bytes_for_level_multiplier
            .unwrap_or(defaults.max_bytes_for_level_multiplier),
        level0_file_num_compaction_trigger: config
            .tree
            .level0_file_num_compaction_trigger
            .unwrap_or(defaults.level0_file_num_compaction_trigger),
        error_if_exists: false,
        create_if_missing: !config.use_existing_db,
        read_mode: if config.mmap_read {
            siftdb::ReadMode::Mmap
        } else {
            siftdb::ReadMode::Pread
        },
        compression_per_level: config.compression.clone(),
        enable_blob_files: config.blob.enabled,
        min_blob_size: config.blob.min_blob_size,
        blob_file_size: config.blob.blob_file_size,
        blob_compression_type: config.blob.compression,
        enable_blob_garbage_collection: config.blob.gc,
        blob_garbage_collection_age_cutoff: config.blob.gc_age_cutoff,
        blob_garbage_collection_min_garbage_ratio: config.blob.gc_min_garbage_ratio,
        blob_garbage_collection_force_threshold: config.blob.gc_force_threshold,
        // mergerandom's counters (`db_bench`'s uint64add); RocksDB gets the same operator.
        merge_operator: Some(std::sync::Arc::new(siftdb::merge::U64Add)),
        partition_above: match config.partition_index_and_filters {
            Some(true) => Some(0),
            Some(false) => None,
            None => defaults.partition_above,
        },
        ..with_background_work(
            &config.tree,
            with_compaction_style(&config.tree.style, defaults),
        )
    }
}

/// `base` with the run's background work: threads, subcompactions, readahead, output cuts,
/// file priority, rate limiter.
fn with_background_work(tree: &TreeShape, base: Options) -> Options {
    let defaults = Options::default();
    Options {
        max_background_jobs: tree
            .max_background_jobs
            .unwrap_or(defaults.max_background_jobs),
        max_background_compactions: tree
            .max_background_compactions
            .unwrap_or(defaults.max_background_compactions),
        max_subcompactions: tree.subcompactions.unwrap_or(defaults.max_subcompactions),
        compaction_readahead_size: tree
            .compaction_readahead_size
            .unwrap_or(defaults.compaction_readahead_size),
        level_compaction_dynamic_file_size: tree
            .dynamic_file_size
            .unwrap_or(defaults.level_compaction_dynamic_file_size),
        compaction_pri: match tree.compaction_pri {
            CompactionPriArg::MinOverlappingRatio => siftdb::CompactionPri::MinOverlappingRatio,
            CompactionPriArg::RoundRobin => siftdb::CompactionPri::RoundRobin,
        },
        rate_limiter: match tree.rate_limiter_bytes_per_sec {
            0 => None,
            rate => Some(std::sync::Arc::new(siftdb::RateLimiter::new(rate))),
        },
        ..base
    }
}

/// `defaults` with the run's compaction style and its settings.
fn with_compaction_style(shape: &StyleShape, defaults: Options) -> Options {
    Options {
        compaction_style: match shape.style {
            CompactionStyleArg::Level => siftdb::CompactionStyle::Level,
            CompactionStyleArg::Universal => siftdb::CompactionStyle::Universal,
            CompactionStyleArg::Fifo => siftdb::CompactionStyle::Fifo,
        },
        compaction_options_universal: universal_options(shape),
        compaction_options_fifo: fifo_options(shape),
        ..defaults
    }
}

/// Universal compaction's settings: the engine's defaults with the run's overrides.
fn universal_options(shape: &StyleShape) -> siftdb::UniversalCompactionOptions {
    let d = siftdb::UniversalCompactionOptions::default();
    siftdb::UniversalCompactionOptions {
        size_ratio: shape.universal_size_ratio.unwrap_or(d.size_ratio),
        min_merge_width: shape.universal_min_merge_width.unwrap_or(d.min_merge_width),
        max_merge_width: shape.universal_max_merge_width.unwrap_or(d.max_merge_width),
        max_size_amplification_percent: shape
            .universal_max_size_amplification_percent
            .unwrap_or(d.max_size_amplification_percent),
    }
}

/// FIFO compaction's settings: the engine's defaults with the run's overrides.
fn fifo_options(shape: &StyleShape) -> siftdb::FifoCompactionOptions {
    let d = siftdb::FifoCompactionOptions::default();
    siftdb::FifoCompactionOptions {
        max_table_files_size: shape
            .fifo_max_table_files_size_mb
            .map_or(d.max_table_files_size, |mb| mb.saturating_mul(1 << 20)),
        ttl: (shape.fifo_ttl_secs > 0).then(|| std::time::Duration::from_secs(shape.fifo_ttl_secs)),
    }
}

/// `--compaction_style` and its settings as siftdb and RocksDB apply them.
pub fn compaction_style_text(sift: &Options) -> String {
    match sift.compaction_style {
        siftdb::CompactionStyle::Universal => {
            let u = &sift.compaction_options_universal;
            let width = match u.max_merge_width {
                usize::MAX => "no limit".to_string(),
                w => w.to_string(),
            };
            format!(
                "universal: size_ratio {}%, merge width {}..{width}, max size amplification {}%, \
                 starts at {} sorted runs",
                u.size_ratio,
                u.min_merge_width,
                u.max_size_amplification_percent,
                sift.level0_file_num_compaction_trigger
            )
        }
        siftdb::CompactionStyle::Fifo => {
            let f = &sift.compaction_options_fifo;
            format!(
                "fifo: tables dropped oldest first past {}{}",
                human_bytes(f.max_table_files_size),
                f.ttl
                    .map_or_else(String::new, |t| format!(" or {} s old", t.as_secs()))
            )
        }
        _ => "level".to_string(),
    }
}

/// `--rate_limiter_bytes_per_sec` as siftdb and RocksDB apply it.
pub fn rate_limiter_text(sift: &siftdb::Options) -> String {
    match &sift.rate_limiter {
        Some(limiter) => format!(
            "{}/s for flush and compaction writes, refill 100 ms, fairness 10",
            super::text::human_bytes(limiter.bytes_per_second())
        ),
        None => "none".to_string(),
    }
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
        other => other.name(),
    };
    format!(
        "L0 trigger {}, target file {}, L1 {}, multiplier {}, file order {order}",
        o.level0_file_num_compaction_trigger,
        human_bytes(o.target_file_size_base),
        human_bytes(o.max_bytes_for_level_base),
        o.max_bytes_for_level_multiplier
    )
}

/// How an engine's point lookups hand values over, for `--pin_slice` (`pinned`) or not
/// (`copied`).
pub fn pin_slice_text(config: &Config, pinned: &str, copied: &str) -> String {
    if config.pin_slice {
        format!("{pinned}, the value left uncopied (--pin_slice)")
    } else {
        format!("{copied} into the runner's buffer")
    }
}

/// The threads an engine compresses with beside its table builder, as the "compression" row
/// ends (empty at 1: no parallel compression).
pub fn compression_threads_text(threads: usize) -> String {
    if threads > 1 {
        format!("; data blocks compressed by {threads} threads beside the table builder")
    } else {
        String::new()
    }
}

/// The "writeback" row of an engine given siftdb's `bytes_per_sync` and `wal_bytes_per_sync`.
pub fn writeback_text(sift: &siftdb::Options) -> String {
    let every = |bytes: u64| {
        if bytes == 0 {
            "left to the OS".to_string()
        } else {
            format!("started every {}", human_bytes(bytes))
        }
    };
    format!(
        "tables and blob files: {}; WAL: {}",
        every(sift.bytes_per_sync),
        every(sift.wal_bytes_per_sync)
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
