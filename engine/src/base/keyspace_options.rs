//! The options of one keyspace's tree ([`KeyspaceOptions`]), and their text form, which the
//! manifest records when the keyspace is created so that a reopened keyspace keeps its tuning.
//!
//! ```text
//! write_buffer_size=67108864
//! compression_per_level=none,none,lz4
//! partition_above=none
//! prefix_extractor=fixed:8
//! ```
//! One `key=value` per line; unknown keys (a newer build's) are ignored, and a missing key keeps
//! its default.

use std::sync::Arc;

use siftdb_filter::FilterAllocation;
use siftdb_sstable::{Compression, FixedPrefix, PrefixExtractor};

use crate::base::compaction_style::{
    CompactionStyle, FifoCompactionOptions, UniversalCompactionOptions,
};
use crate::base::error::{Error, Result};
use crate::base::options::Options;
use crate::CompactionPri;

/// The longest keyspace name accepted, in bytes.
pub const MAX_KEYSPACE_NAME_LEN: usize = 255;

/// The name of the keyspace that [`Db`](crate::Db)'s own methods act on, which every database
/// has and which cannot be dropped.
pub const DEFAULT_KEYSPACE: &str = "default";

/// Options of one keyspace's LSM tree: everything [`Options`] holds that shapes a tree (memtable,
/// levels, filters, blocks, compression). The database-wide settings (block cache, file system,
/// WAL, threads, filter hasher) stay in [`Options`], whose tree fields are the `"default"`
/// keyspace's. `KeyspaceOptions::default()` equals the tree fields of `Options::default()`.
///
/// ```
/// use siftdb::{Compression, KeyspaceOptions};
/// // A queue that is scanned more than probed: lean filters, small memtables, Zstd below L0.
/// let queue = KeyspaceOptions {
///     filter_bits_per_key: 4.0,
///     write_buffer_size: 4 << 20,
///     compression_per_level: vec![Compression::None, Compression::Zstd],
///     ..KeyspaceOptions::default()
/// };
/// # let _ = queue;
/// ```
#[derive(Clone)]
pub struct KeyspaceOptions {
    /// See [`Options::write_buffer_size`].
    pub write_buffer_size: usize,
    /// See [`Options::max_write_buffer_number`].
    pub max_write_buffer_number: usize,
    /// See [`Options::level0_file_num_compaction_trigger`].
    pub level0_file_num_compaction_trigger: usize,
    /// See [`Options::level0_stop_writes_trigger`].
    pub level0_stop_writes_trigger: usize,
    /// See [`Options::disable_auto_compactions`].
    pub disable_auto_compactions: bool,
    /// See [`Options::target_file_size_base`].
    pub target_file_size_base: u64,
    /// See [`Options::max_bytes_for_level_base`].
    pub max_bytes_for_level_base: u64,
    /// See [`Options::max_bytes_for_level_multiplier`].
    pub max_bytes_for_level_multiplier: f64,
    /// See [`Options::compaction_pri`].
    pub compaction_pri: CompactionPri,
    /// See [`Options::compaction_style`].
    pub compaction_style: CompactionStyle,
    /// See [`Options::compaction_options_universal`].
    pub compaction_options_universal: UniversalCompactionOptions,
    /// See [`Options::compaction_options_fifo`].
    pub compaction_options_fifo: FifoCompactionOptions,
    /// See [`Options::block_size`].
    pub block_size: usize,
    /// See [`Options::block_restart_interval`].
    pub block_restart_interval: usize,
    /// See [`Options::pin_l0_filter_and_index_blocks_in_cache`].
    pub pin_l0_filter_and_index_blocks_in_cache: bool,
    /// See [`Options::filter_bits_per_key`]. Monkey plans each keyspace's filters on its own tree.
    pub filter_bits_per_key: f64,
    /// See [`Options::optimize_filters_for_hits`].
    pub optimize_filters_for_hits: bool,
    /// See [`Options::memtable_prefix_bloom_size_ratio`].
    pub memtable_prefix_bloom_size_ratio: f64,
    /// See [`Options::memtable_whole_key_filtering`].
    pub memtable_whole_key_filtering: bool,
    /// See [`Options::bloom_before_level`].
    pub bloom_before_level: usize,
    /// See [`Options::filter_allocation`].
    pub filter_allocation: FilterAllocation,
    /// See [`Options::deep_filter_kind`].
    pub deep_filter_kind: siftdb_filter::FilterKind,
    /// See [`Options::range_filter_bits_per_key`].
    pub range_filter_bits_per_key: f64,
    /// See [`Options::prefix_extractor`]. Recorded by name: a `fixed:N` extractor is rebuilt at
    /// the next open; another kind must be given again through [`Options::keyspaces`].
    pub prefix_extractor: Option<Arc<dyn PrefixExtractor>>,
    /// See [`Options::compression`].
    pub compression: Compression,
    /// See [`Options::compression_per_level`].
    pub compression_per_level: Vec<Compression>,
    /// See [`Options::compress_index`].
    pub compress_index: bool,
    /// See [`Options::partition_above`].
    pub partition_above: Option<usize>,
    /// See [`Options::metadata_block_size`].
    pub metadata_block_size: usize,
    /// See [`Options::enable_blob_files`].
    pub enable_blob_files: bool,
    /// See [`Options::min_blob_size`].
    pub min_blob_size: usize,
    /// See [`Options::blob_file_size`].
    pub blob_file_size: u64,
    /// See [`Options::blob_compression_type`].
    pub blob_compression_type: Compression,
    /// See [`Options::enable_blob_garbage_collection`].
    pub enable_blob_garbage_collection: bool,
    /// See [`Options::blob_garbage_collection_age_cutoff`].
    pub blob_garbage_collection_age_cutoff: f64,
    /// See [`Options::blob_garbage_collection_min_garbage_ratio`].
    pub blob_garbage_collection_min_garbage_ratio: f64,
    /// See [`Options::blob_garbage_collection_force_threshold`].
    pub blob_garbage_collection_force_threshold: f64,
}

impl std::fmt::Debug for KeyspaceOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&options_text(self))
    }
}

impl Default for KeyspaceOptions {
    fn default() -> Self {
        KeyspaceOptions::from(&Options::default())
    }
}

impl From<&Options> for KeyspaceOptions {
    /// The tree fields of `options` (the `"default"` keyspace's).
    fn from(o: &Options) -> Self {
        KeyspaceOptions {
            write_buffer_size: o.write_buffer_size,
            max_write_buffer_number: o.max_write_buffer_number,
            level0_file_num_compaction_trigger: o.level0_file_num_compaction_trigger,
            level0_stop_writes_trigger: o.level0_stop_writes_trigger,
            disable_auto_compactions: o.disable_auto_compactions,
            target_file_size_base: o.target_file_size_base,
            max_bytes_for_level_base: o.max_bytes_for_level_base,
            max_bytes_for_level_multiplier: o.max_bytes_for_level_multiplier,
            compaction_pri: o.compaction_pri,
            compaction_style: o.compaction_style,
            compaction_options_universal: o.compaction_options_universal,
            compaction_options_fifo: o.compaction_options_fifo,
            block_size: o.block_size,
            block_restart_interval: o.block_restart_interval,
            pin_l0_filter_and_index_blocks_in_cache: o.pin_l0_filter_and_index_blocks_in_cache,
            filter_bits_per_key: o.filter_bits_per_key,
            optimize_filters_for_hits: o.optimize_filters_for_hits,
            memtable_prefix_bloom_size_ratio: o.memtable_prefix_bloom_size_ratio,
            memtable_whole_key_filtering: o.memtable_whole_key_filtering,
            bloom_before_level: o.bloom_before_level,
            filter_allocation: o.filter_allocation,
            deep_filter_kind: o.deep_filter_kind,
            range_filter_bits_per_key: o.range_filter_bits_per_key,
            prefix_extractor: o.prefix_extractor.clone(),
            compression: o.compression,
            compression_per_level: o.compression_per_level.clone(),
            compress_index: o.compress_index,
            partition_above: o.partition_above,
            metadata_block_size: o.metadata_block_size,
            enable_blob_files: o.enable_blob_files,
            min_blob_size: o.min_blob_size,
            blob_file_size: o.blob_file_size,
            blob_compression_type: o.blob_compression_type,
            enable_blob_garbage_collection: o.enable_blob_garbage_collection,
            blob_garbage_collection_age_cutoff: o.blob_garbage_collection_age_cutoff,
            blob_garbage_collection_min_garbage_ratio: o.blob_garbage_collection_min_garbage_ratio,
            blob_garbage_collection_force_threshold: o.blob_garbage_collection_force_threshold,
        }
    }
}

impl KeyspaceOptions {
    /// `db` with its tree fields replaced by these: the options a keyspace's tree runs with.
    pub(crate) fn apply_to(&self, db: &Options) -> Options {
        Options {
            write_buffer_size: self.write_buffer_size,
            max_write_buffer_number: self.max_write_buffer_number,
            level0_file_num_compaction_trigger: self.level0_file_num_compaction_trigger,
            level0_stop_writes_trigger: self.level0_stop_writes_trigger,
            disable_auto_compactions: self.disable_auto_compactions,
            target_file_size_base: self.target_file_size_base,
            max_bytes_for_level_base: self.max_bytes_for_level_base,
            max_bytes_for_level_multiplier: self.max_bytes_for_level_multiplier,
            compaction_pri: self.compaction_pri,
            compaction_style: self.compaction_style,
            compaction_options_universal: self.compaction_options_universal,
            compaction_options_fifo: self.compaction_options_fifo,
            block_size: self.block_size,
            block_restart_interval: self.block_restart_interval,
            pin_l0_filter_and_index_blocks_in_cache: self.pin_l0_filter_and_index_blocks_in_cache,
            filter_bits_per_key: self.filter_bits_per_key,
            optimize_filters_for_hits: self.optimize_filters_for_hits,
            memtable_prefix_bloom_size_ratio: self.memtable_prefix_bloom_size_ratio,
            memtable_whole_key_filtering: self.memtable_whole_key_filtering,
            bloom_before_level: self.bloom_before_level,
            filter_allocation: self.filter_allocation,
            deep_filter_kind: self.deep_filter_kind,
            range_filter_bits_per_key: self.range_filter_bits_per_key,
            prefix_extractor: self.prefix_extractor.clone(),
            compression: self.compression,
            compression_per_level: self.compression_per_level.clone(),
            compress_index: self.compress_index,
            partition_above: self.partition_above,
            metadata_block_size: self.metadata_block_size,
            enable_blob_files: self.enable_blob_files,
            min_blob_size: self.min_blob_size,
            blob_file_size: self.blob_file_size,
            blob_compression_type: self.blob_compression_type,
            enable_blob_garbage_collection: self.enable_blob_garbage_collection,
            blob_garbage_collection_age_cutoff: self.blob_garbage_collection_age_cutoff,
            blob_garbage_collection_min_garbage_ratio: self
                .blob_garbage_collection_min_garbage_ratio,
            blob_garbage_collection_force_threshold: self.blob_garbage_collection_force_threshold,
            keyspaces: Vec::new(),
            ..db.clone()
        }
    }
}

/// Checks a keyspace name: 1 to [`MAX_KEYSPACE_NAME_LEN`] bytes, no control characters.
pub(crate) fn validate_name(name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(Error::InvalidArgument(
            "a keyspace name must not be empty".to_string(),
        ));
    }
    if name.len() > MAX_KEYSPACE_NAME_LEN {
        return Err(Error::InvalidArgument(format!(
            "keyspace name of {} bytes exceeds the {MAX_KEYSPACE_NAME_LEN}-byte limit",
            name.len()
        )));
    }
    if name.chars().any(char::is_control) {
        return Err(Error::InvalidArgument(format!(
            "keyspace name {name:?} holds a control character"
        )));
    }
    Ok(())
}

/// The text form of `o` (see the module documentation).
pub(crate) fn options_text(o: &KeyspaceOptions) -> String {
    let codecs = |v: &[Compression]| v.iter().map(|c| c.name()).collect::<Vec<_>>().join(",");
    let u = &o.compaction_options_universal;
    let fifo = &o.compaction_options_fifo;
    let fields: [(&str, String); 32] = [
        ("write_buffer_size", o.write_buffer_size.to_string()),
        (
            "max_write_buffer_number",
            o.max_write_buffer_number.to_string(),
        ),
        (
            "level0_file_num_compaction_trigger",
            o.level0_file_num_compaction_trigger.to_string(),
        ),
        (
            "level0_stop_writes_trigger",
            o.level0_stop_writes_trigger.to_string(),
        ),
        ("target_file_size_base", o.target_file_size_base.to_string()),
        (
            "max_bytes_for_level_base",
            o.max_bytes_for_level_base.to_string(),
        ),
        (
            "max_bytes_for_level_multiplier",
            o.max_bytes_for_level_multiplier.to_string(),
        ),
        ("compaction_pri", o.compaction_pri.name().to_string()),
        ("compaction_style", o.compaction_style.name().to_string()),
        ("universal_size_ratio", u.size_ratio.to_string()),
        ("universal_min_merge_width", u.min_merge_width.to_string()),
        ("universal_max_merge_width", u.max_merge_width.to_string()),
        (
            "universal_max_size_amplification_percent",
            u.max_size_amplification_percent.to_string(),
        ),
        (
            "fifo_max_table_files_size",
            fifo.max_table_files_size.to_string(),
        ),
        (
            "fifo_ttl_secs",
            fifo.ttl
                .map_or_else(|| "none".to_string(), |t| t.as_secs().to_string()),
        ),
        ("block_size", o.block_size.to_string()),
        (
            "block_restart_interval",
            o.block_restart_interval.to_string(),
        ),
        (
            "pin_l0_filter_and_index_blocks_in_cache",
            o.pin_l0_filter_and_index_blocks_in_cache.to_string(),
        ),
        ("filter_bits_per_key", o.filter_bits_per_key.to_string()),
        (
            "optimize_filters_for_hits",
            o.optimize_filters_for_hits.to_string(),
        ),
        (
            "memtable_prefix_bloom_size_ratio",
            o.memtable_prefix_bloom_size_ratio.to_string(),
        ),
        (
            "memtable_whole_key_filtering",
            o.memtable_whole_key_filtering.to_string(),
        ),
        ("bloom_before_level", o.bloom_before_level.to_string()),
        ("filter_allocation", o.filter_allocation.name().to_string()),
        ("deep_filter_kind", o.deep_filter_kind.name().to_string()),
        (
            "range_filter_bits_per_key",
            o.range_filter_bits_per_key.to_string(),
        ),
        (
            "prefix_extractor",
            o.prefix_extractor
                .as_ref()
                .map_or_else(|| "none".to_string(), |p| p.name()),
        ),
        ("compression", o.compression.name().to_string()),
        ("compression_per_level", codecs(&o.compression_per_level)),
        ("compress_index", o.compress_index.to_string()),
        (
            "partition_above",
            o.partition_above
                .map_or_else(|| "none".to_string(), |n| n.to_string()),
        ),
        ("metadata_block_size", o.metadata_block_size.to_string()),
    ];
    fields
        .iter()
        .chain(&later_fields(o))
        .map(|(k, v)| format!("{k}={v}\n"))
        .collect()
}

/// The fields of [`options_text`] after its first 32: `disable_auto_compactions` and the blob
/// file fields.
fn later_fields(o: &KeyspaceOptions) -> [(&'static str, String); 9] {
    [
        (
            "disable_auto_compactions",
            o.disable_auto_compactions.to_string(),
        ),
        ("enable_blob_files", o.enable_blob_files.to_string()),
        ("min_blob_size", o.min_blob_size.to_string()),
        ("blob_file_size", o.blob_file_size.to_string()),
        (
            "blob_compression_type",
            o.blob_compression_type.name().to_string(),
        ),
        (
            "enable_blob_garbage_collection",
            o.enable_blob_garbage_collection.to_string(),
        ),
        (
            "blob_garbage_collection_age_cutoff",
            o.blob_garbage_collection_age_cutoff.to_string(),
        ),
        (
            "blob_garbage_collection_min_garbage_ratio",
            o.blob_garbage_collection_min_garbage_ratio.to_string(),
        ),
        (
            "blob_garbage_collection_force_threshold",
            o.blob_garbage_collection_force_threshold.to_string(),
        ),
    ]
}

/// Parses the text form; `Err` names the first line it cannot read.
pub(crate) fn parse_options_text(text: &str) -> std::result::Result<KeyspaceOptions, String> {
    let mut o = KeyspaceOptions::default();
    for line in text.lines().filter(|l| !l.is_empty()) {
        let (key, value) = line
            .split_once('=')
            .ok_or_else(|| format!("line {line:?} is not key=value"))?;
        set_field(&mut o, key, value).ok_or_else(|| format!("bad value in {line:?}"))?;
    }
    Ok(o)
}

/// Sets one field from its text; `None` if the value does not parse (unknown keys are ignored).
pub(crate) fn set_field(o: &mut KeyspaceOptions, key: &str, value: &str) -> Option<()> {
    fn num<T: std::str::FromStr>(v: &str) -> Option<T> {
        v.parse().ok()
    }
    match key {
        "write_buffer_size" => o.write_buffer_size = num(value)?,
        "max_write_buffer_number" => o.max_write_buffer_number = num(value)?,
        "level0_file_num_compaction_trigger" => o.level0_file_num_compaction_trigger = num(value)?,
        "level0_stop_writes_trigger" => o.level0_stop_writes_trigger = num(value)?,
        "disable_auto_compactions" => o.disable_auto_compactions = num(value)?,
        "target_file_size_base" => o.target_file_size_base = num(value)?,
        "max_bytes_for_level_base" => o.max_bytes_for_level_base = num(value)?,
        "max_bytes_for_level_multiplier" => o.max_bytes_for_level_multiplier = num(value)?,
        "compaction_pri" => {
            o.compaction_pri = match value {
                "min_overlapping_ratio" => CompactionPri::MinOverlappingRatio,
                "round_robin" => CompactionPri::RoundRobin,
                _ => return None,
            }
        }
        "block_size" => o.block_size = num(value)?,
        "block_restart_interval" => o.block_restart_interval = num(value)?,
        "pin_l0_filter_and_index_blocks_in_cache" => {
            o.pin_l0_filter_and_index_blocks_in_cache = num(value)?
        }
        "filter_bits_per_key" => o.filter_bits_per_key = num(value)?,
        "optimize_filters_for_hits" => o.optimize_filters_for_hits = num(value)?,
        "memtable_prefix_bloom_size_ratio" => o.memtable_prefix_bloom_size_ratio = num(value)?,
        "memtable_whole_key_filtering" => o.memtable_whole_key_filtering = num(value)?,
        "bloom_before_level" => o.bloom_before_level = num(value)?,
        "filter_allocation" => {
            o.filter_allocation = match value {
                "monkey" => FilterAllocation::Monkey,
                "uniform" => FilterAllocation::Uniform,
                "adaptive" => FilterAllocation::Adaptive,
                _ => return None,
            }
        }
        "deep_filter_kind" => o.deep_filter_kind = siftdb_filter::FilterKind::from_name(value)?,
        "range_filter_bits_per_key" => o.range_filter_bits_per_key = num(value)?,
        "prefix_extractor" => o.prefix_extractor = prefix_extractor_named(value),
        "compression" => o.compression = Compression::from_name(value)?,
        "compression_per_level" => {
            o.compression_per_level = value
                .split(',')
                .filter(|s| !s.is_empty())
                .map(Compression::from_name)
                .collect::<Option<Vec<_>>>()?
        }
        "compress_index" => o.compress_index = num(value)?,
        "partition_above" => {
            o.partition_above = match value {
                "none" => None,
                n => Some(num(n)?),
            }
        }
        "metadata_block_size" => o.metadata_block_size = num(value)?,
        "enable_blob_files" => o.enable_blob_files = num(value)?,
        "min_blob_size" => o.min_blob_size = num(value)?,
        "blob_file_size" => o.blob_file_size = num(value)?,
        "blob_compression_type" => o.blob_compression_type = Compression::from_name(value)?,
        "enable_blob_garbage_collection" => o.enable_blob_garbage_collection = num(value)?,
        "blob_garbage_collection_age_cutoff" => o.blob_garbage_collection_age_cutoff = num(value)?,
        "blob_garbage_collection_min_garbage_ratio" => {
            o.blob_garbage_collection_min_garbage_ratio = num(value)?
        }
        "blob_garbage_collection_force_threshold" => {
            o.blob_garbage_collection_force_threshold = num(value)?
        }
        _ => return set_style_field(o, key, value),
    }
    Some(())
}

/// [`set_field`] for the compaction style's fields.
fn set_style_field(o: &mut KeyspaceOptions, key: &str, value: &str) -> Option<()> {
    fn num<T: std::str::FromStr>(v: &str) -> Option<T> {
        v.parse().ok()
    }
    match key {
        "compaction_style" => o.compaction_style = CompactionStyle::from_name(value)?,
        "universal_size_ratio" => o.compaction_options_universal.size_ratio = num(value)?,
        "universal_min_merge_width" => o.compaction_options_universal.min_merge_width = num(value)?,
        "universal_max_merge_width" => o.compaction_options_universal.max_merge_width = num(value)?,
        "universal_max_size_amplification_percent" => {
            o.compaction_options_universal
                .max_size_amplification_percent = num(value)?
        }
        "fifo_max_table_files_size" => o.compaction_options_fifo.max_table_files_size = num(value)?,
        "fifo_ttl_secs" => {
            o.compaction_options_fifo.ttl = match value {
                "none" => None,
                secs => Some(std::time::Duration::from_secs(num(secs)?)),
            }
        }
        _ => {}
    }
    Some(())
}

/// The extractor a recorded name stands for, where this build can rebuild it (`fixed:N`). Any
/// other is left out (logged): its tables' prefix filters are then not consulted, which costs
/// speed, never a wrong answer.
fn prefix_extractor_named(name: &str) -> Option<Arc<dyn PrefixExtractor>> {
    if name == "none" {
        return None;
    }
    if let Some(len) = name.strip_prefix("fixed:").and_then(|n| n.parse().ok()) {
        return Some(FixedPrefix::shared(len));
    }
    tracing::warn!(
        "siftdb: keyspace prefix extractor {name:?} cannot be rebuilt from its name; give it in Options::keyspaces"
    );
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_text_round_trips() {
        let o = KeyspaceOptions {
            write_buffer_size: 12345,
            max_bytes_for_level_multiplier: 4.5,
            compaction_pri: CompactionPri::RoundRobin,
            filter_bits_per_key: 7.25,
            optimize_filters_for_hits: true,
            memtable_prefix_bloom_size_ratio: 0.125,
            memtable_whole_key_filtering: true,
            filter_allocation: FilterAllocation::Uniform,
            deep_filter_kind: siftdb_filter::FilterKind::BinaryFuse,
            prefix_extractor: Some(FixedPrefix::shared(6)),
            compression_per_level: vec![Compression::None, Compression::Zstd],
            partition_above: None,
            compaction_style: CompactionStyle::Universal,
            compaction_options_universal: UniversalCompactionOptions {
                size_ratio: 7,
                max_merge_width: 9,
                ..UniversalCompactionOptions::default()
            },
            compaction_options_fifo: FifoCompactionOptions {
                max_table_files_size: 777,
                ttl: Some(std::time::Duration::from_secs(60)),
            },
            ..KeyspaceOptions::default()
        };
        let text = options_text(&o);
        let back = parse_options_text(&text).unwrap();
        assert_eq!(options_text(&back), text);
        assert_eq!(back.prefix_extractor.unwrap().name(), "fixed:6");
        assert_eq!(back.deep_filter_kind, siftdb_filter::FilterKind::BinaryFuse);
        assert_eq!(back.compaction_pri, CompactionPri::RoundRobin);
        assert_eq!(back.compaction_style, CompactionStyle::Universal);
        assert_eq!(
            back.compaction_options_universal,
            o.compaction_options_universal
        );
        assert_eq!(back.compaction_options_fifo, o.compaction_options_fifo);
        // A text without the field (written before it existed) means ribbon.
        let old = parse_options_text("filter_bits_per_key=9\n").unwrap();
        assert_eq!(old.deep_filter_kind, siftdb_filter::FilterKind::Ribbon);
        assert_eq!(old.compaction_pri, CompactionPri::MinOverlappingRatio);
        assert_eq!(old.compaction_style, CompactionStyle::Level);
        assert!(parse_options_text("compaction_style=tiered\n").is_err());
        assert!(parse_options_text("compaction_pri=oldest_first\n").is_err());
        assert!(parse_options_text("deep_filter_kind=cuckoo\n").is_err());
        // Unknown keys are a newer build's: ignored. Bad values are refused.
        assert!(parse_options_text("future_knob=1\n").is_ok());
        assert!(parse_options_text("block_size=big\n").is_err());
        assert!(parse_options_text("no equals sign").is_err());
    }

    #[test]
    fn names_are_checked() {
        assert!(validate_name("orders").is_ok());
        assert!(validate_name("").is_err());
        assert!(validate_name(&"x".repeat(MAX_KEYSPACE_NAME_LEN)).is_ok());
        assert!(validate_name(&"x".repeat(MAX_KEYSPACE_NAME_LEN + 1)).is_err());
        assert!(validate_name("a\nb").is_err());
    }
}
