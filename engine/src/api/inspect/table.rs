//! What one table file holds: [`table_info`] (properties, filters, index) and
//! [`table_entries`] (its point entries).

use std::path::{Path, PathBuf};

use siftdb_filter::FilterKind;
use siftdb_sstable::format::BlockHandle;
use siftdb_sstable::ParsedKey;

use super::raw_table::RawTable;
use crate::base::error::Result;
use crate::base::fs::RealFs;

/// What an entry (or a boundary key) of a table is: the kind byte of its internal key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum EntryKind {
    /// A tombstone.
    Delete,
    /// A value.
    Put,
    /// A value with an expiry time (its first 8 bytes, milliseconds since the Unix epoch).
    ExpiringPut,
    /// A merge operand.
    Merge,
    /// A range deletion's start, or (at sequence 2^56 − 1) a range's exclusive end bound.
    RangeDelete,
    /// A value kept in a blob file: the entry's value is its blob index.
    BlobIndex,
}

impl EntryKind {
    /// A short lower-case name (`put`, `delete`, `expiring_put`, `merge`, `range_delete`,
    /// `blob_index`).
    pub fn name(self) -> &'static str {
        match self {
            EntryKind::Delete => "delete",
            EntryKind::Put => "put",
            EntryKind::ExpiringPut => "expiring_put",
            EntryKind::Merge => "merge",
            EntryKind::RangeDelete => "range_delete",
            EntryKind::BlobIndex => "blob_index",
        }
    }

    fn of(kind: siftdb_sstable::ValueKind) -> EntryKind {
        use siftdb_sstable::ValueKind as V;
        match kind {
            V::Delete => EntryKind::Delete,
            V::Put => EntryKind::Put,
            V::ExpiringPut => EntryKind::ExpiringPut,
            V::Merge => EntryKind::Merge,
            V::RangeDelete => EntryKind::RangeDelete,
            V::BlobIndex => EntryKind::BlobIndex,
        }
    }
}

/// An internal key, decoded: user key, sequence number, kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyInfo {
    /// The user key.
    pub user_key: Vec<u8>,
    /// The sequence number.
    pub sequence: u64,
    /// The kind.
    pub kind: EntryKind,
}

impl KeyInfo {
    /// Decodes an encoded internal key; `None` if it is too short or of an unknown kind.
    pub(crate) fn parse(encoded: &[u8]) -> Option<KeyInfo> {
        let parsed = ParsedKey::parse(encoded)?;
        Some(KeyInfo {
            user_key: parsed.user_key.to_vec(),
            sequence: parsed.sequence,
            kind: EntryKind::of(parsed.kind),
        })
    }
}

/// A filter block (or the partitions of one filter), as its headers describe it.
#[derive(Debug, Clone, PartialEq)]
pub struct FilterInfo {
    /// The structure.
    pub kind: FilterKind,
    /// The hash function: `Xxh3` or `SipHash13`.
    pub hash: String,
    /// The XXH3 seed, or the SipHash secret's check value.
    pub seed_tag: u64,
    /// Keys the filter holds (summed over its partitions).
    pub keys: u64,
    /// Bytes of the filter blocks.
    pub bytes: u64,
    /// Bits per key the builder was asked for.
    pub planned_bits_per_key: f64,
    /// Bits per key built: `8 · bytes / keys` (headers included).
    pub bits_per_key: f64,
    /// The FPR the filter should give: the table's recorded figure for its whole-key filter,
    /// the kind's curve at the planned bits per key for the prefix filter.
    pub expected_fpr: f64,
    /// Filter partitions (0: one block).
    pub partitions: usize,
}

/// One data block as the index names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexEntry {
    /// The separator: the block's last internal key (`None` if it does not decode).
    pub separator: Option<KeyInfo>,
    /// Offset of the block in the file.
    pub offset: u64,
    /// Stored size of the block (trailer excluded).
    pub size: u64,
    /// The index partition that lists it (`None`: the index is one block).
    pub partition: Option<usize>,
}

/// What a table file says about itself (RocksDB's `sst_dump --show_properties`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TableInfo {
    /// The file.
    pub path: PathBuf,
    /// Its size in bytes.
    pub file_size: u64,
    /// The table format version (1 to 3).
    pub format_version: u32,
    /// Point entries (all versions).
    pub entries: u64,
    /// Point tombstones among them.
    pub deletions: u64,
    /// Merge operands among them.
    pub merge_operands: u64,
    /// Range tombstones (fragment, sequence pairs).
    pub range_deletions: u64,
    /// Distinct user keys.
    pub distinct_keys: u64,
    /// Distinct prefixes (the prefix filter's keys).
    pub distinct_prefixes: u64,
    /// Data blocks.
    pub data_blocks: u64,
    /// Bytes of the internal keys as added.
    pub raw_key_bytes: u64,
    /// Bytes of the values as added.
    pub raw_value_bytes: u64,
    /// The data blocks' codec (`none`, `lz4`, `zstd`).
    pub compression: String,
    /// Smallest internal key (`None` if it does not decode).
    pub smallest_key: Option<KeyInfo>,
    /// Largest internal key (`None` if it does not decode).
    pub largest_key: Option<KeyInfo>,
    /// Smallest sequence number.
    pub min_sequence: u64,
    /// Largest sequence number.
    pub max_sequence: u64,
    /// When the table was written, Unix seconds (0: unknown).
    pub creation_time: u64,
    /// The prefix extractor's name (empty: none).
    pub prefix_extractor: String,
    /// Index partitions (0: one index block).
    pub index_partitions: u64,
    /// The whole-key filter (`None`: none).
    pub filter: Option<FilterInfo>,
    /// Why the table has no whole-key filter, when its writer's options chose so.
    pub filter_omitted: String,
    /// The prefix filter (`None`: none).
    pub prefix_filter: Option<FilterInfo>,
    /// Whether the table has a range filter block.
    pub has_range_filter: bool,
    /// The data blocks, in key order.
    pub index: Vec<IndexEntry>,
}

/// One point entry of a table, in the file's order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableEntry {
    /// Its internal key.
    pub key: KeyInfo,
    /// Its stored value (a tombstone's is empty; an expiring value's starts with its expiry; a
    /// blob index's is the reference).
    pub value: Vec<u8>,
}

/// Reads the table file at `path`: footer, properties, index (every partition) and filter
/// headers, each block checked against its checksum. Data blocks are not read (see
/// [`table_entries`] and [`check_table`](super::check_table)). A file that is not a table is
/// a `Corruption` naming it.
pub fn table_info(path: impl AsRef<Path>) -> Result<TableInfo> {
    let path = path.as_ref();
    let table = RawTable::open(&RealFs, path)?;
    let p = &table.properties;
    let index = table
        .data_handles()?
        .into_iter()
        .map(|d| IndexEntry {
            separator: KeyInfo::parse(&d.separator),
            offset: d.handle.offset,
            size: d.handle.size,
            partition: d.partition,
        })
        .collect();
    let (_, filter_parts) = table.filter_blocks()?;
    let mut filter = filter_info(&table, &filter_parts)?;
    if let Some(f) = &mut filter {
        f.expected_fpr = p.filter_expected_fpr;
        f.planned_bits_per_key = p.filter_bits_per_key;
    }
    let prefix = if table.footer.prefix_filter.is_absent() {
        None
    } else {
        filter_info(&table, &[table.footer.prefix_filter])?
    };
    Ok(TableInfo {
        path: path.to_path_buf(),
        file_size: table.file_size(),
        format_version: table.footer.version,
        entries: p.entries,
        deletions: p.deletions,
        merge_operands: p.merge_operands,
        range_deletions: p.range_deletions,
        distinct_keys: p.distinct_keys,
        distinct_prefixes: p.distinct_prefixes,
        data_blocks: p.data_blocks,
        raw_key_bytes: p.raw_key_bytes,
        raw_value_bytes: p.raw_value_bytes,
        compression: p.compression.clone(),
        smallest_key: KeyInfo::parse(&p.smallest_key),
        largest_key: KeyInfo::parse(&p.largest_key),
        min_sequence: p.min_sequence,
        max_sequence: p.max_sequence,
        creation_time: p.creation_time,
        prefix_extractor: p.prefix_extractor.clone(),
        index_partitions: p.index_partitions,
        filter,
        filter_omitted: p.filter_omitted.clone(),
        prefix_filter: prefix,
        has_range_filter: p.range_filter_handle.is_some(),
        index,
    })
}

/// The fields of a filter block's header (`docs/FORMAT.md`, "Filter block").
pub(super) struct FilterHeader {
    pub kind: FilterKind,
    pub hash_id: u8,
    pub seed_tag: u64,
    pub keys: u64,
    pub target_bits_per_key: f32,
}

/// Decodes a filter block's header; `None` if it is not one.
pub(super) fn filter_header(block: &[u8]) -> Option<FilterHeader> {
    if block.len() < siftdb_filter::HEADER_LEN || block.get(..4)? != siftdb_filter::FILTER_MAGIC {
        return None;
    }
    let u64_at = |at: usize| Some(u64::from_le_bytes(block.get(at..at + 8)?.try_into().ok()?));
    Some(FilterHeader {
        kind: FilterKind::from_u8(*block.get(5)?)?,
        hash_id: *block.get(6)?,
        seed_tag: u64_at(8)?,
        keys: u64_at(16)?,
        target_bits_per_key: f32::from_le_bytes(block.get(24..28)?.try_into().ok()?),
    })
}

/// The filter made of the blocks at `parts` (one block, or a filter's partitions).
fn filter_info(table: &RawTable, parts: &[BlockHandle]) -> Result<Option<FilterInfo>> {
    let mut info: Option<FilterInfo> = None;
    for handle in parts {
        let block = table.read_block(*handle)?;
        let header = filter_header(&block)
            .ok_or_else(|| table.corruption(handle.offset, "not a filter block"))?;
        let f = info.get_or_insert_with(|| FilterInfo {
            kind: header.kind,
            hash: match header.hash_id {
                1 => "Xxh3".to_string(),
                2 => "SipHash13".to_string(),
                other => format!("unknown ({other})"),
            },
            seed_tag: header.seed_tag,
            keys: 0,
            bytes: 0,
            planned_bits_per_key: f64::from(header.target_bits_per_key),
            bits_per_key: 0.0,
            expected_fpr: 0.0,
            partitions: if parts.len() > 1 { parts.len() } else { 0 },
        });
        f.keys += header.keys;
        f.bytes += block.len() as u64;
    }
    if let Some(f) = &mut info {
        if f.keys > 0 {
            f.bits_per_key = f.bytes as f64 * 8.0 / f.keys as f64;
        }
        let keys = usize::try_from(f.keys).unwrap_or(usize::MAX);
        f.expected_fpr = f.kind.expected_fpr(keys, f.planned_bits_per_key);
    }
    Ok(info)
}

/// The first `limit` point entries of the table file at `path`, in the file's order (`None`:
/// all of them), every block read checked against its checksum.
pub fn table_entries(path: impl AsRef<Path>, limit: Option<usize>) -> Result<Vec<TableEntry>> {
    let table = RawTable::open(&RealFs, path.as_ref())?;
    let limit = limit.unwrap_or(usize::MAX);
    let mut out = Vec::new();
    for data in table.data_handles()? {
        if out.len() >= limit {
            break;
        }
        walk_block(&table, data.handle, |key, value| {
            if out.len() >= limit {
                return Ok(false);
            }
            let key = KeyInfo::parse(key)
                .ok_or_else(|| table.corruption(data.handle.offset, "undecodable key"))?;
            out.push(TableEntry {
                key,
                value: value.to_vec(),
            });
            Ok(true)
        })?;
    }
    Ok(out)
}

/// Calls `f` with each (key, value) of the data block at `handle` until it returns false.
pub(super) fn walk_block(
    table: &RawTable,
    handle: BlockHandle,
    mut f: impl FnMut(&[u8], &[u8]) -> Result<bool>,
) -> Result<()> {
    let block = table.parsed_block(handle)?;
    let mut it = block.iter();
    it.seek_to_first();
    while it.valid() {
        if !f(it.key(), it.value())? {
            return Ok(());
        }
        it.next();
    }
    match it.error() {
        Some(reason) => Err(table.corruption(handle.offset, reason)),
        None => Ok(()),
    }
}
