//! The text form of one option's value: how a keyspace option is written in the manifest's
//! options text and read back, and how `set_options` reads a new value.
//!
//! ```text
//! write_buffer_size=67108864          a number or a bool: Rust's own text
//! compression_per_level=none,none,lz4
//! partition_above=none                an Option: `none` or the value
//! universal_size_ratio=1              a settings group: one line per setting, prefixed
//! ```
//! Every type a keyspace option may have implements [`OptionText`]; the option table
//! (`base::option_table`) calls it once per option, so a new option needs no code here unless
//! it brings a new type.

use std::sync::Arc;
use std::time::Duration;

use siftdb_compaction::picker::CompactionPri;
use siftdb_filter::{FilterAllocation, FilterKind};
use siftdb_sstable::{Compression, FixedPrefix, PrefixExtractor};

use crate::base::compaction_style::{
    CompactionStyle, FifoCompactionOptions, UniversalCompactionOptions,
};

/// A value with a `key=value` text form.
pub(crate) trait OptionText {
    /// Appends the lines of the option named `name` holding this value.
    fn write_text(&self, name: &'static str, out: &mut Vec<(&'static str, String)>);

    /// Reads `value` if `key` is a line of the option named `name`: `None` if the key is not
    /// this option's, `Some(false)` if the value does not parse (the option is left as it was).
    fn read_text(&mut self, name: &str, key: &str, value: &str) -> Option<bool>;
}

/// A value written on one line under the option's own name.
pub(crate) trait OneLine: Sized {
    /// The value's text.
    fn to_text(&self) -> String;
    /// The value `text` stands for, if it is one.
    fn from_text(text: &str) -> Option<Self>;
}

impl<T: OneLine> OptionText for T {
    fn write_text(&self, name: &'static str, out: &mut Vec<(&'static str, String)>) {
        out.push((name, self.to_text()));
    }

    fn read_text(&mut self, name: &str, key: &str, value: &str) -> Option<bool> {
        if key != name {
            return None;
        }
        let parsed = T::from_text(value);
        let ok = parsed.is_some();
        if let Some(v) = parsed {
            *self = v;
        }
        Some(ok)
    }
}

/// [`OneLine`] by `Display` and `FromStr`, for numbers and bools.
macro_rules! one_line_by_display {
    ($($t:ty),*) => {$(
        impl OneLine for $t {
            fn to_text(&self) -> String {
                self.to_string()
            }
            fn from_text(text: &str) -> Option<Self> {
                text.parse().ok()
            }
        }
    )*};
}
one_line_by_display!(usize, u64, u32, i32, f64, bool);

/// [`OneLine`] by the type's own `name()` and `from_name()` (next to its variants, in its crate).
macro_rules! one_line_by_name {
    ($($t:ty),* $(,)?) => {$(
        impl OneLine for $t {
            fn to_text(&self) -> String {
                self.name().to_string()
            }
            fn from_text(text: &str) -> Option<Self> {
                <$t>::from_name(text)
            }
        }
    )*};
}
one_line_by_name!(
    CompactionPri,
    FilterAllocation,
    CompactionStyle,
    FilterKind,
    Compression
);

/// A codec per level: names joined by commas (empty: none).
impl OneLine for Vec<Compression> {
    fn to_text(&self) -> String {
        let names: Vec<&str> = self.iter().map(|c| c.name()).collect();
        names.join(",")
    }
    fn from_text(text: &str) -> Option<Self> {
        text.split(',')
            .filter(|s| !s.is_empty())
            .map(Compression::from_name)
            .collect()
    }
}

/// `none` or the value.
impl<T: OneLine> OneLine for Option<T> {
    fn to_text(&self) -> String {
        self.as_ref().map_or_else(|| "none".to_string(), T::to_text)
    }
    fn from_text(text: &str) -> Option<Self> {
        match text {
            "none" => Some(None),
            v => T::from_text(v).map(Some),
        }
    }
}

/// Recorded by name; a `fixed:N` extractor is rebuilt from it. Any other is left out (logged):
/// its tables' prefix filters are then not consulted, which costs speed, never a wrong answer
/// (such an extractor must be given again through `Options::keyspaces`).
impl OneLine for Option<Arc<dyn PrefixExtractor>> {
    fn to_text(&self) -> String {
        self.as_ref()
            .map_or_else(|| "none".to_string(), |p| p.name())
    }
    fn from_text(text: &str) -> Option<Self> {
        if text == "none" {
            return Some(None);
        }
        if let Some(len) = text.strip_prefix("fixed:").and_then(|n| n.parse().ok()) {
            return Some(Some(FixedPrefix::shared(len)));
        }
        tracing::warn!(
            "siftdb: keyspace prefix extractor {text:?} cannot be rebuilt from its name; give it in Options::keyspaces"
        );
        Some(None)
    }
}

/// A line of a settings group: its key, and the setter that reads its value (whether it did).
type GroupLine<G> = (&'static str, fn(&mut G, &str) -> bool);

/// Reads `key=value` into the first of `fields` that names `key`.
fn read_group<G>(group: &mut G, fields: &[GroupLine<G>], key: &str, value: &str) -> Option<bool> {
    let (_, set) = fields.iter().find(|(k, _)| *k == key)?;
    Some(set(group, value))
}

/// Sets `*slot` from `value` if it parses; whether it did.
fn parse_into<T: OneLine>(slot: &mut T, value: &str) -> bool {
    T::from_text(value).map(|v| *slot = v).is_some()
}

/// Written as `universal_*` lines, one per setting (their names before the table existed).
impl OptionText for UniversalCompactionOptions {
    fn write_text(&self, _name: &'static str, out: &mut Vec<(&'static str, String)>) {
        out.extend([
            ("universal_size_ratio", self.size_ratio.to_text()),
            ("universal_min_merge_width", self.min_merge_width.to_text()),
            ("universal_max_merge_width", self.max_merge_width.to_text()),
            (
                "universal_max_size_amplification_percent",
                self.max_size_amplification_percent.to_text(),
            ),
        ]);
    }

    fn read_text(&mut self, _name: &str, key: &str, value: &str) -> Option<bool> {
        let fields: [GroupLine<Self>; 4] = [
            ("universal_size_ratio", |u, v| {
                parse_into(&mut u.size_ratio, v)
            }),
            ("universal_min_merge_width", |u, v| {
                parse_into(&mut u.min_merge_width, v)
            }),
            ("universal_max_merge_width", |u, v| {
                parse_into(&mut u.max_merge_width, v)
            }),
            ("universal_max_size_amplification_percent", |u, v| {
                parse_into(&mut u.max_size_amplification_percent, v)
            }),
        ];
        read_group(self, &fields, key, value)
    }
}

/// Written as `fifo_*` lines; the TTL in whole seconds or `none`.
impl OptionText for FifoCompactionOptions {
    fn write_text(&self, _name: &'static str, out: &mut Vec<(&'static str, String)>) {
        let ttl = self.ttl.map(|t| t.as_secs());
        out.extend([
            (
                "fifo_max_table_files_size",
                self.max_table_files_size.to_text(),
            ),
            ("fifo_ttl_secs", ttl.to_text()),
        ]);
    }

    fn read_text(&mut self, _name: &str, key: &str, value: &str) -> Option<bool> {
        let fields: [GroupLine<Self>; 2] = [
            ("fifo_max_table_files_size", |f, v| {
                parse_into(&mut f.max_table_files_size, v)
            }),
            ("fifo_ttl_secs", |f, v| match Option::<u64>::from_text(v) {
                Some(secs) => {
                    f.ttl = secs.map(Duration::from_secs);
                    true
                }
                None => false,
            }),
        ];
        read_group(self, &fields, key, value)
    }
}
