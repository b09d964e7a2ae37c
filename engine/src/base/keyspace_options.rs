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

use crate::base::error::{Error, Result};
pub use crate::base::options::KeyspaceOptions;
use crate::base::options::{keyspace_option_lines, read_keyspace_option, Options};

/// The longest keyspace name accepted, in bytes.
pub const MAX_KEYSPACE_NAME_LEN: usize = 255;

/// The name of the keyspace that [`Db`](crate::Db)'s own methods act on, which every database
/// has and which cannot be dropped.
pub const DEFAULT_KEYSPACE: &str = "default";

impl std::fmt::Debug for KeyspaceOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&options_text(self))
    }
}

impl Default for KeyspaceOptions {
    /// The keyspace fields of `Options::default()`.
    fn default() -> Self {
        KeyspaceOptions::from(&Options::default())
    }
}

impl KeyspaceOptions {
    /// `db` with its keyspace fields replaced by these: the options a keyspace's tree runs with.
    pub(crate) fn apply_to(&self, db: &Options) -> Options {
        Options {
            keyspaces: Vec::new(),
            ..self.overlay(db)
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
    keyspace_option_lines(o)
        .iter()
        .map(|(k, v)| format!("{k}={v}\n"))
        .collect()
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

/// Sets one field from its text; `None` if the value does not parse (unknown keys are ignored:
/// a newer build's).
pub(crate) fn set_field(o: &mut KeyspaceOptions, key: &str, value: &str) -> Option<()> {
    match read_keyspace_option(o, key, value) {
        Some(false) => None,
        Some(true) | None => Some(()),
    }
}

/// Whether `key` is a line of the options text (an option's name, or a line of a settings
/// group such as `universal_size_ratio`).
pub(crate) fn is_text_key(key: &str) -> bool {
    keyspace_option_lines(&KeyspaceOptions::default())
        .iter()
        .any(|(k, _)| *k == key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::compaction_style::{
        CompactionStyle, FifoCompactionOptions, UniversalCompactionOptions,
    };
    use crate::CompactionPri;
    use siftdb_filter::FilterAllocation;
    use siftdb_sstable::{Compression, FixedPrefix};

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
