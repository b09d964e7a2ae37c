//! The properties block: what a table says about itself.
//!
//! Encoded as a block (see [`crate::block`]) of `name → value` entries sorted by name; numbers
//! are u64 LE, floats f64 LE bits, strings raw bytes, block handles their 16-byte encoding.
//! Unknown names are ignored (a newer writer may add some); a missing required one is corruption,
//! a missing optional one reads as absent (what a table of an older format is).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::block::{Block, BlockBuilder};
use crate::format::BlockHandle;

/// Properties of one table.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TableProperties {
    /// Point entries (all versions, point tombstones included; range tombstones are not entries).
    pub entries: u64,
    /// Point tombstones.
    pub deletions: u64,
    /// Distinct user keys (the whole-key filter's key count).
    pub distinct_keys: u64,
    /// Data blocks.
    pub data_blocks: u64,
    /// Bytes of all internal keys as added.
    pub raw_key_bytes: u64,
    /// Bytes of all values as added.
    pub raw_value_bytes: u64,
    /// Whole-key filter kind name (`"blocked_bloom"`, `"ribbon"`, or `"none"`).
    pub filter_kind: String,
    /// Bits/key the filter was built with (target).
    pub filter_bits_per_key: f64,
    /// FPR the filter should give.
    pub filter_expected_fpr: f64,
    /// Size of the filter block.
    pub filter_bytes: u64,
    /// Prefix extractor name, empty if none.
    pub prefix_extractor: String,
    /// Distinct prefixes in the prefix filter.
    pub distinct_prefixes: u64,
    /// Smallest internal key (encoded): of the point entries and the range tombstones (a range
    /// tombstone counts as `(start, sequence, RangeDelete)`).
    pub smallest_key: Vec<u8>,
    /// Largest internal key (encoded): of the point entries and the range tombstones (a range
    /// tombstone counts as [`InternalKey::range_end_sentinel`](crate::InternalKey) of its end,
    /// an exclusive bound).
    pub largest_key: Vec<u8>,
    /// Smallest sequence number in the table (point entries and range tombstones).
    pub min_sequence: u64,
    /// Largest sequence number in the table (point entries and range tombstones).
    pub max_sequence: u64,
    /// Codec of the data blocks (`none`, `lz4`, `zstd`; `none` for tables of format 1, which
    /// lack the field).
    pub compression: String,
    /// Index partitions (0: one index block). Format 2 only.
    pub index_partitions: u64,
    /// Filter partitions (0: one filter block). Format 2 only.
    pub filter_partitions: u64,
    /// Range tombstones: the (fragment, sequence) pairs of the range tombstone block
    /// ([`FragmentedRangeTombstones::tombstone_count`](crate::FragmentedRangeTombstones)); 0
    /// without one. Format 3; written only when non-zero.
    pub range_deletions: u64,
    /// The range tombstone block, `None` when the table has none. Format 3; written only when
    /// present.
    pub range_del_handle: Option<BlockHandle>,
    /// The range filter block (`range_filter_block`), `None` when the table has none. Written
    /// only when present; readers that predate it ignore it.
    pub range_filter_handle: Option<BlockHandle>,
    /// Merge operands among the entries (`ValueKind::Merge`). Format 3; written only when
    /// non-zero (the engine refuses to open a database holding operands under another merge
    /// operator).
    pub merge_operands: u64,
    /// Why the table has no whole-key filter when that was a choice of the writer's options
    /// (`"disabled"`: `filter_bits_per_key = 0`; `"optimize_filters_for_hits"`: a bottom-level
    /// table), empty otherwise (a table with a filter, or one written before the field existed).
    /// Written only when non-empty.
    pub filter_omitted: String,
    /// When the table was written, in Unix seconds (RocksDB's `creation_time`); 0 when unknown
    /// (a table written before the field existed, or by a writer that did not record it).
    /// Written only when non-zero; readers that predate it ignore it.
    pub creation_time: u64,
}

/// Fields tables of older formats (or without range tombstones) lack: read as 0 when missing.
const OPTIONAL_U64_FIELDS: [&str; 5] = [
    "creation_time",
    "filter_partitions",
    "index_partitions",
    "merge_operands",
    "range_deletions",
];

const U64_FIELDS: [&str; 10] = [
    "data_blocks",
    "deletions",
    "distinct_keys",
    "distinct_prefixes",
    "entries",
    "filter_bytes",
    "max_sequence",
    "min_sequence",
    "raw_key_bytes",
    "raw_value_bytes",
];

impl TableProperties {
    fn u64_field(&mut self, name: &str) -> Option<&mut u64> {
        Some(match name {
            "data_blocks" => &mut self.data_blocks,
            "deletions" => &mut self.deletions,
            "distinct_keys" => &mut self.distinct_keys,
            "distinct_prefixes" => &mut self.distinct_prefixes,
            "entries" => &mut self.entries,
            "filter_bytes" => &mut self.filter_bytes,
            "max_sequence" => &mut self.max_sequence,
            "min_sequence" => &mut self.min_sequence,
            "raw_key_bytes" => &mut self.raw_key_bytes,
            "raw_value_bytes" => &mut self.raw_value_bytes,
            _ => return None,
        })
    }

    /// Encodes the properties as block contents.
    pub fn encode(&self) -> Vec<u8> {
        let mut fields: BTreeMap<&str, Vec<u8>> = BTreeMap::new();
        let mut copy = self.clone();
        for name in U64_FIELDS {
            let v = copy.u64_field(name).map_or(0, |v| *v);
            fields.insert(name, v.to_le_bytes().to_vec());
        }
        fields.insert("filter_kind", self.filter_kind.as_bytes().to_vec());
        fields.insert(
            "filter_bits_per_key",
            self.filter_bits_per_key.to_le_bytes().to_vec(),
        );
        fields.insert(
            "filter_expected_fpr",
            self.filter_expected_fpr.to_le_bytes().to_vec(),
        );
        fields.insert(
            "prefix_extractor",
            self.prefix_extractor.as_bytes().to_vec(),
        );
        fields.insert("smallest_key", self.smallest_key.clone());
        fields.insert("compression", self.compression.as_bytes().to_vec());
        fields.insert(
            "index_partitions",
            self.index_partitions.to_le_bytes().to_vec(),
        );
        fields.insert(
            "filter_partitions",
            self.filter_partitions.to_le_bytes().to_vec(),
        );
        fields.insert("largest_key", self.largest_key.clone());
        if self.merge_operands != 0 {
            fields.insert("merge_operands", self.merge_operands.to_le_bytes().to_vec());
        }
        if self.creation_time != 0 {
            fields.insert("creation_time", self.creation_time.to_le_bytes().to_vec());
        }
        if self.range_deletions != 0 {
            fields.insert(
                "range_deletions",
                self.range_deletions.to_le_bytes().to_vec(),
            );
        }
        if let Some(handle) = self.range_del_handle {
            fields.insert("range_del_handle", handle.encode().to_vec());
        }
        if !self.filter_omitted.is_empty() {
            fields.insert("filter_omitted", self.filter_omitted.as_bytes().to_vec());
        }
        if let Some(handle) = self.range_filter_handle {
            fields.insert("range_filter_handle", handle.encode().to_vec());
        }
        let mut b = BlockBuilder::new(1);
        for (name, value) in &fields {
            b.add(name.as_bytes(), value);
        }
        b.finish()
    }

    /// Decodes block contents; `Err(reason)` when a required field is missing or malformed.
    pub fn decode(contents: Vec<u8>) -> Result<TableProperties, String> {
        let block = Arc::new(Block::new(contents).map_err(str::to_string)?);
        let mut it = block.iter();
        it.seek_to_first();
        let mut seen: BTreeMap<String, Vec<u8>> = BTreeMap::new();
        while it.valid() {
            let name = String::from_utf8_lossy(it.key()).into_owned();
            seen.insert(name, it.value().to_vec());
            it.next();
        }
        if let Some(e) = it.error() {
            return Err(e.to_string());
        }
        let mut p = TableProperties::default();
        let fixed8 = |name: &str| -> Result<[u8; 8], String> {
            let v = seen
                .get(name)
                .ok_or_else(|| format!("property {name} missing"))?;
            v.as_slice()
                .try_into()
                .map_err(|_| format!("property {name} has {} bytes, expected 8", v.len()))
        };
        let text = |name: &str| -> Result<String, String> {
            let v = seen
                .get(name)
                .ok_or_else(|| format!("property {name} missing"))?;
            String::from_utf8(v.clone()).map_err(|_| format!("property {name} is not UTF-8"))
        };
        for name in U64_FIELDS {
            let v = u64::from_le_bytes(fixed8(name)?);
            if let Some(slot) = p.u64_field(name) {
                *slot = v;
            }
        }
        for name in OPTIONAL_U64_FIELDS {
            if seen.contains_key(name) {
                let v = u64::from_le_bytes(fixed8(name)?);
                match name {
                    "index_partitions" => p.index_partitions = v,
                    "filter_partitions" => p.filter_partitions = v,
                    "merge_operands" => p.merge_operands = v,
                    "creation_time" => p.creation_time = v,
                    _ => p.range_deletions = v,
                }
            }
        }
        p.filter_kind = text("filter_kind")?;
        p.filter_bits_per_key = f64::from_le_bytes(fixed8("filter_bits_per_key")?);
        p.filter_expected_fpr = f64::from_le_bytes(fixed8("filter_expected_fpr")?);
        p.prefix_extractor = text("prefix_extractor")?;
        // Optional: only tables whose filter was left out by choice have it.
        if seen.contains_key("filter_omitted") {
            p.filter_omitted = text("filter_omitted")?;
        }
        // Optional: format 1 tables have no compressed blocks and no such field.
        p.compression = match seen.contains_key("compression") {
            true => text("compression")?,
            false => "none".to_string(),
        };
        p.smallest_key = seen
            .get("smallest_key")
            .cloned()
            .ok_or("property smallest_key missing")?;
        p.largest_key = seen
            .get("largest_key")
            .cloned()
            .ok_or("property largest_key missing")?;
        // Optional: tables of format 1 and 2, and tables without range tombstones, lack it.
        p.range_del_handle = match seen.get("range_del_handle") {
            Some(v) => Some(BlockHandle::decode(v).ok_or_else(|| {
                format!(
                    "property range_del_handle has {} bytes, expected {}",
                    v.len(),
                    BlockHandle::ENCODED_LEN
                )
            })?),
            None => None,
        };
        p.range_filter_handle = match seen.get("range_filter_handle") {
            Some(v) => Some(BlockHandle::decode(v).ok_or_else(|| {
                format!(
                    "property range_filter_handle has {} bytes, expected {}",
                    v.len(),
                    BlockHandle::ENCODED_LEN
                )
            })?),
            None => None,
        };
        if p.range_del_handle.is_some() != (p.range_deletions > 0) {
            return Err(format!(
                "properties range_del_handle ({}) and range_deletions ({}) disagree",
                if p.range_del_handle.is_some() {
                    "present"
                } else {
                    "absent"
                },
                p.range_deletions
            ));
        }
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_round_trip() {
        let p = TableProperties {
            entries: 10,
            deletions: 2,
            distinct_keys: 7,
            data_blocks: 1,
            raw_key_bytes: 100,
            raw_value_bytes: 200,
            filter_kind: "ribbon".into(),
            filter_bits_per_key: 6.7,
            filter_expected_fpr: 0.01,
            filter_bytes: 99,
            prefix_extractor: "fixed:4".into(),
            distinct_prefixes: 3,
            smallest_key: b"a".to_vec(),
            largest_key: b"z".to_vec(),
            min_sequence: 1,
            max_sequence: 10,
            compression: "lz4".into(),
            index_partitions: 3,
            filter_partitions: 3,
            range_deletions: 4,
            range_del_handle: Some(BlockHandle {
                offset: 1234,
                size: 56,
            }),
            range_filter_handle: Some(BlockHandle {
                offset: 77,
                size: 12,
            }),
            merge_operands: 7,
            filter_omitted: "optimize_filters_for_hits".into(),
            creation_time: 1_790_000_000,
        };
        assert_eq!(TableProperties::decode(p.encode()).unwrap(), p);
        // A table of unknown age writes no field and reads back 0.
        let ageless = TableProperties {
            creation_time: 0,
            ..p.clone()
        };
        assert!(!String::from_utf8_lossy(&ageless.encode()).contains("creation_time"));
        assert_eq!(TableProperties::decode(ageless.encode()).unwrap(), ageless);
        // Without a reason the field is not written, and reads back empty.
        let with_filter = TableProperties {
            filter_omitted: String::new(),
            ..p.clone()
        };
        assert!(with_filter.encode().len() < p.encode().len());
        assert_eq!(
            TableProperties::decode(with_filter.encode()).unwrap(),
            with_filter
        );
        assert!(TableProperties::decode(vec![0, 0, 0, 0]).is_err());
    }

    /// The properties block with `edit` applied to its fields.
    fn encoded_with(
        p: &TableProperties,
        edit: impl FnOnce(&mut BTreeMap<String, Vec<u8>>),
    ) -> Vec<u8> {
        let block = Arc::new(Block::new(p.encode()).unwrap());
        let mut it = block.iter();
        it.seek_to_first();
        let mut fields = BTreeMap::new();
        while it.valid() {
            fields.insert(
                String::from_utf8(it.key().to_vec()).unwrap(),
                it.value().to_vec(),
            );
            it.next();
        }
        edit(&mut fields);
        let mut b = BlockBuilder::new(1);
        for (name, value) in &fields {
            b.add(name.as_bytes(), value);
        }
        b.finish()
    }

    #[test]
    fn range_tombstone_properties_are_optional_and_consistent() {
        // Without range tombstones neither property is written, and both read as absent.
        let p = TableProperties {
            filter_kind: "none".into(),
            ..TableProperties::default()
        };
        let bytes = p.encode();
        assert!(!bytes.windows(9).any(|w| w == b"range_del"));
        let back = TableProperties::decode(bytes).unwrap();
        assert_eq!((back.range_deletions, back.range_del_handle), (0, None));
        let with = TableProperties {
            range_deletions: 2,
            range_del_handle: Some(BlockHandle { offset: 9, size: 7 }),
            ..p.clone()
        };
        assert_eq!(TableProperties::decode(with.encode()).unwrap(), with);
        // One without the other, or a handle of the wrong size, is refused.
        let no_count = encoded_with(&with, |f| {
            f.remove("range_deletions");
        });
        assert!(TableProperties::decode(no_count).is_err());
        let no_handle = encoded_with(&with, |f| {
            f.remove("range_del_handle");
        });
        assert!(TableProperties::decode(no_handle).is_err());
        let zero_count = encoded_with(&with, |f| {
            f.insert("range_deletions".into(), 0u64.to_le_bytes().to_vec());
        });
        assert!(TableProperties::decode(zero_count).is_err());
        let short_handle = encoded_with(&with, |f| {
            f.insert("range_del_handle".into(), vec![1; 15]);
        });
        assert!(TableProperties::decode(short_handle).is_err());
        // An unknown name is still ignored.
        let unknown = encoded_with(&with, |f| {
            f.insert("zz_future".into(), vec![1, 2, 3]);
        });
        assert_eq!(TableProperties::decode(unknown).unwrap(), with);
    }
}
