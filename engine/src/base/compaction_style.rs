//! Compaction styles (RocksDB's `compaction_style`, `compaction_options_universal`,
//! `compaction_options_fifo`): how a tree's tables are merged as it grows. The pickers are in
//! `siftdb_compaction::{picker, universal, fifo}`; this module holds the user's settings.

use std::time::Duration;

use siftdb_compaction::fifo::FifoConfig;
use siftdb_compaction::universal::UniversalConfig;

use crate::base::error::{Error, Result};

/// How a tree compacts (RocksDB's `compaction_style`). Set per keyspace; a database may switch
/// style between opens (the tables it holds stay valid under every style).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum CompactionStyle {
    /// Leveled compaction (the default): L0 merges into L1, each level into the next once it
    /// outgrows its target. The least space and the fewest tables per lookup; each byte is
    /// rewritten about `max_bytes_for_level_multiplier` times per level.
    #[default]
    Level,
    /// Universal (size-tiered) compaction: sorted runs of similar size merge together
    /// ([`UniversalCompactionOptions`]). Far fewer bytes rewritten for write-heavy data, at the
    /// price of more space (bounded by `max_size_amplification_percent`) and more runs to probe.
    Universal,
    /// FIFO compaction: nothing is merged; the oldest tables are dropped past a size limit or
    /// an age ([`FifoCompactionOptions`]). For time-ordered data that expires: logs, metrics,
    /// queues. Writes never stall on the L0 table count in this style.
    Fifo,
}

impl CompactionStyle {
    /// The name the options text records (`level`, `universal`, `fifo`).
    pub fn name(&self) -> &'static str {
        match self {
            CompactionStyle::Level => "level",
            CompactionStyle::Universal => "universal",
            CompactionStyle::Fifo => "fifo",
        }
    }

    /// The style named `name` (see [`CompactionStyle::name`]).
    pub fn from_name(name: &str) -> Option<CompactionStyle> {
        match name {
            "level" => Some(CompactionStyle::Level),
            "universal" => Some(CompactionStyle::Universal),
            "fifo" => Some(CompactionStyle::Fifo),
            _ => None,
        }
    }
}

/// Settings of [`CompactionStyle::Universal`] (RocksDB's `CompactionOptionsUniversal`, same
/// names and defaults). A compaction starts once the tree holds
/// `level0_file_num_compaction_trigger` sorted runs (each L0 table is one, each non-empty level
/// below another).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UniversalCompactionOptions {
    /// Percent by which the next older run may be larger than the runs taken so far for it to
    /// join them (default 1).
    pub size_ratio: u32,
    /// Fewest runs a size-ratio compaction merges (default 2).
    pub min_merge_width: usize,
    /// Most runs a size-ratio compaction merges (default: no limit).
    pub max_merge_width: usize,
    /// Bytes of all runs but the oldest, in percent of the oldest's, past which every run is
    /// merged into one (default 200: the tree takes at most about three times its live data).
    pub max_size_amplification_percent: u64,
}

impl Default for UniversalCompactionOptions {
    fn default() -> Self {
        UniversalCompactionOptions {
            size_ratio: 1,
            min_merge_width: 2,
            max_merge_width: usize::MAX,
            max_size_amplification_percent: 200,
        }
    }
}

/// Settings of [`CompactionStyle::Fifo`] (RocksDB's `CompactionOptionsFIFO` with its `ttl`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FifoCompactionOptions {
    /// Bytes of all the tree's tables past which the oldest are dropped (default 1 GiB, as
    /// RocksDB's).
    pub max_table_files_size: u64,
    /// Age past which a table is dropped, counted from when it was written (`None`, the
    /// default: by size only). Tables written before siftdb recorded their age are dropped by
    /// size only. Checked by the background compaction threads a few times a second.
    pub ttl: Option<Duration>,
}

impl Default for FifoCompactionOptions {
    fn default() -> Self {
        FifoCompactionOptions {
            max_table_files_size: 1 << 30,
            ttl: None,
        }
    }
}

/// Checks the style's settings; `Err` names the first bad field.
pub(crate) fn validate(
    universal: &UniversalCompactionOptions,
    fifo: &FifoCompactionOptions,
) -> Result<()> {
    let invalid =
        |field: &str, why: &str| Err(Error::InvalidArgument(format!("Options::{field} {why}")));
    if universal.min_merge_width < 2 {
        return invalid(
            "compaction_options_universal.min_merge_width",
            "must be at least 2 (a merge of one run rewrites it for nothing)",
        );
    }
    if universal.max_merge_width < universal.min_merge_width {
        return invalid(
            "compaction_options_universal.max_merge_width",
            "must be at least min_merge_width",
        );
    }
    if universal.max_size_amplification_percent == 0 {
        return invalid(
            "compaction_options_universal.max_size_amplification_percent",
            "must be at least 1",
        );
    }
    if fifo.max_table_files_size == 0 {
        return invalid(
            "compaction_options_fifo.max_table_files_size",
            "must be at least 1 byte",
        );
    }
    if fifo.ttl.is_some_and(|t| t.as_secs() == 0) {
        return invalid(
            "compaction_options_fifo.ttl",
            "must be at least one second (or None)",
        );
    }
    Ok(())
}

/// The universal picker's settings.
pub(crate) fn universal_config(
    options: &UniversalCompactionOptions,
    trigger: usize,
) -> UniversalConfig {
    UniversalConfig {
        trigger,
        size_ratio: options.size_ratio,
        min_merge_width: options.min_merge_width,
        max_merge_width: options.max_merge_width,
        max_size_amplification_percent: options.max_size_amplification_percent,
    }
}

/// The FIFO picker's settings.
pub(crate) fn fifo_config(options: &FifoCompactionOptions) -> FifoConfig {
    FifoConfig {
        max_table_files_size: options.max_table_files_size,
        ttl_secs: options.ttl.map(|t| t.as_secs()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compaction_style_names_round_trip() {
        for style in [
            CompactionStyle::Level,
            CompactionStyle::Universal,
            CompactionStyle::Fifo,
        ] {
            assert_eq!(CompactionStyle::from_name(style.name()), Some(style));
        }
        assert_eq!(CompactionStyle::from_name("tiered"), None);
    }

    #[test]
    fn compaction_style_settings_are_checked() {
        let universal = UniversalCompactionOptions::default();
        let fifo = FifoCompactionOptions::default();
        assert!(validate(&universal, &fifo).is_ok());
        let narrow = UniversalCompactionOptions {
            min_merge_width: 1,
            ..universal
        };
        assert!(validate(&narrow, &fifo).is_err());
        let inverted = UniversalCompactionOptions {
            min_merge_width: 4,
            max_merge_width: 3,
            ..universal
        };
        assert!(validate(&inverted, &fifo).is_err());
        let instant = FifoCompactionOptions {
            ttl: Some(Duration::from_millis(10)),
            ..fifo
        };
        assert!(validate(&universal, &instant).is_err());
    }
}
