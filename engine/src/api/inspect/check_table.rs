//! Checking one table file: every block against its checksum, the entries against the
//! properties, and its filters against its keys (a filter that rules out a key the table holds
//! would make reads lose it).

use std::path::Path;
use std::sync::Arc;

use siftdb_cache::CacheOptions;
use siftdb_filter::{Filter, KeyHasher};
use siftdb_sstable::format::BlockHandle;
use siftdb_sstable::{
    compare_internal, FilterOutcome, FixedPrefix, FragmentedRangeTombstones, GetTrace,
    PrefixExtractor, RangeFilterBlock, ReadMode, Table, TableCache, TableReadOptions, MAX_SEQUENCE,
};

use super::check::{CheckedFileKind, FileCheck};
use super::raw_table::RawTable;
use super::table::{filter_header, walk_block};
use crate::base::error::{Error, Result};
use crate::base::fs::FileSystem;

/// How a table of a database is read: with the database's filter hasher (`None`: the one its
/// filter blocks name, when that is XXH3) and its filter's cap from the manifest.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct TableContext {
    pub hasher: Option<KeyHasher>,
    pub filter_bits_cap: Option<f64>,
}

/// Cache of the table a filter check reads through.
const CHECK_CACHE_BYTES: usize = 8 << 20;

/// Checks the table file at `path` (see [`check_table`](super::check_table)).
pub(super) fn check_table_file(fs: &dyn FileSystem, path: &Path, ctx: TableContext) -> FileCheck {
    let mut check = FileCheck::new(path, CheckedFileKind::Table);
    let table = match RawTable::open(fs, path) {
        Ok(table) => table,
        Err(e) => return check.failed(e),
    };
    check.blocks = 1;
    if let Err(e) = verify_blocks(&table, &mut check, ctx) {
        return check.failed(e);
    }
    if let Err(e) = verify_filters(fs, path, &table, &mut check, ctx) {
        return check.failed(e);
    }
    check
}

/// Reads every block of the table: index (and partitions), data blocks (keys in order, the
/// count the properties give), filters, the prefix filter, range tombstones, range filter.
fn verify_blocks(table: &RawTable, check: &mut FileCheck, ctx: TableContext) -> Result<()> {
    check.blocks += 1 + table.index_partitions()?.len() as u64;
    let mut previous: Option<Vec<u8>> = None;
    for data in table.data_handles()? {
        check.blocks += 1;
        walk_block(table, data.handle, |key, _| {
            if let Some(prev) = &previous
                && compare_internal(prev, key) != std::cmp::Ordering::Less
            {
                return Err(table.corruption(data.handle.offset, "keys out of order"));
            }
            previous = Some(key.to_vec());
            check.entries += 1;
            Ok(true)
        })?;
    }
    if check.entries != table.properties.entries {
        return Err(table.corruption(
            table.footer.properties.offset,
            format!(
                "the data blocks hold {} entries, the properties say {}",
                check.entries, table.properties.entries
            ),
        ));
    }
    let (top, parts) = table.filter_blocks()?;
    check.blocks += u64::from(top.is_some());
    let prefix = Some(table.footer.prefix_filter).filter(|h| !h.is_absent());
    for handle in parts.iter().chain(prefix.iter()) {
        check.blocks += 1;
        verify_filter_block(table, *handle, ctx.hasher)?;
    }
    verify_range_blocks(table, check)
}

/// A filter block: its checksum, and (when its hasher is known) every field of it.
fn verify_filter_block(
    table: &RawTable,
    handle: BlockHandle,
    hasher: Option<KeyHasher>,
) -> Result<()> {
    let block = table.read_block(handle)?;
    let header = filter_header(&block)
        .ok_or_else(|| table.corruption(handle.offset, "not a filter block"))?;
    let hasher = match (hasher, header.hash_id) {
        (Some(h), _) => h,
        (None, 1) => KeyHasher::xxh3(header.seed_tag),
        // Keyed SipHash: its secret is not on disk; the block's own CRC was checked above.
        (None, _) => return Ok(()),
    };
    Filter::decode(&block, &hasher)
        .map(|_| ())
        .map_err(|e| table.corruption(handle.offset, format!("filter block refused: {e}")))
}

/// The range tombstone block and the range filter block, where the table has them.
fn verify_range_blocks(table: &RawTable, check: &mut FileCheck) -> Result<()> {
    if let Some(handle) = table.properties.range_del_handle {
        check.blocks += 1;
        let block = table.read_block(handle)?;
        FragmentedRangeTombstones::decode(&block)
            .ok_or_else(|| table.corruption(handle.offset, "undecodable range tombstone block"))?;
    }
    if let Some(handle) = table.properties.range_filter_handle {
        check.blocks += 1;
        let block = table.read_block(handle)?;
        RangeFilterBlock::decode(&block).map_err(|r| table.corruption(handle.offset, r))?;
    }
    Ok(())
}

/// The hasher the table's filters are read with, if it can be known.
fn hasher_of(table: &RawTable, ctx: TableContext) -> Result<Option<KeyHasher>> {
    if ctx.hasher.is_some() {
        return Ok(ctx.hasher);
    }
    let (_, parts) = table.filter_blocks()?;
    let prefix = Some(table.footer.prefix_filter).filter(|h| !h.is_absent());
    let Some(first) = parts.first().or(prefix.as_ref()) else {
        return Ok(None);
    };
    let header = filter_header(&table.read_block(*first)?);
    Ok(header
        .filter(|h| h.hash_id == 1)
        .map(|h| KeyHasher::xxh3(h.seed_tag)))
}

/// The extractor a table's prefix filter was built with, when it is built in (`fixed:N`).
fn extractor_of(name: &str) -> Option<Arc<dyn PrefixExtractor>> {
    let len = name.strip_prefix("fixed:")?.parse().ok()?;
    Some(FixedPrefix::shared(len))
}

/// Every distinct user key of the table, looked up through the engine's table reader: its
/// whole-key filter must not rule it out (and the lookup must find it), and its prefix filter
/// must not rule out its prefix.
fn verify_filters(
    fs: &dyn FileSystem,
    path: &Path,
    raw: &RawTable,
    check: &mut FileCheck,
    ctx: TableContext,
) -> Result<()> {
    let has_filters = !raw.footer.filter.is_absent() || !raw.footer.prefix_filter.is_absent();
    if !has_filters {
        return Ok(());
    }
    let Some(hasher) = hasher_of(raw, ctx)? else {
        check.notes.push(
            "filters keyed with a SipHash secret: filter-vs-key consistency not checked".into(),
        );
        return Ok(());
    };
    let extractor = extractor_of(&raw.properties.prefix_extractor);
    if extractor.is_none() && !raw.footer.prefix_filter.is_absent() {
        check.notes.push(format!(
            "prefix extractor {:?} is not built in: prefix filter not checked",
            raw.properties.prefix_extractor
        ));
    }
    let read = TableReadOptions {
        key_hasher: hasher,
        prefix_extractor: extractor.clone(),
        filter_bits_cap: ctx.filter_bits_cap,
        ..TableReadOptions::default()
    };
    let cache = Arc::new(TableCache::new(CacheOptions::new(CHECK_CACHE_BYTES)));
    let file = fs.open_random(path, ReadMode::Pread)?;
    let table = Table::open(file, 0, raw.name.clone(), cache, read)?;
    let mut probe = KeyProbe {
        table: &table,
        raw,
        extractor: extractor.as_deref(),
        last_key: None,
        last_prefix: None,
        checked: 0,
    };
    for data in raw.data_handles()? {
        walk_block(raw, data.handle, |key, _| probe.key(key).map(|()| true))?;
    }
    check.filter_keys_checked = probe.checked;
    Ok(())
}

/// Looks up each new user key of a walk in the table (see [`verify_filters`]).
struct KeyProbe<'a> {
    table: &'a Table,
    raw: &'a RawTable,
    extractor: Option<&'a dyn PrefixExtractor>,
    last_key: Option<Vec<u8>>,
    last_prefix: Option<Vec<u8>>,
    checked: u64,
}

impl KeyProbe<'_> {
    fn key(&mut self, internal: &[u8]) -> Result<()> {
        let user_key = siftdb_sstable::user_key_of(internal);
        if self.last_key.as_deref() == Some(user_key) {
            return Ok(());
        }
        self.last_key = Some(user_key.to_vec());
        self.checked += 1;
        let shown = String::from_utf8_lossy(user_key);
        let mut trace = GetTrace::default();
        self.table.get_traced(user_key, MAX_SEQUENCE, &mut trace)?;
        let offset = self.raw.footer.filter.offset;
        if trace.filter == FilterOutcome::No {
            return Err(self.raw.corruption(
                offset,
                format!("the whole-key filter rules out key {shown:?}, which the table holds"),
            ));
        }
        if !trace.key_found {
            return Err(self.raw.corruption(
                offset,
                format!("a point lookup of key {shown:?} does not find it in the table"),
            ));
        }
        self.prefix(user_key)
    }

    fn prefix(&mut self, user_key: &[u8]) -> Result<()> {
        let Some(prefix) = self.extractor.and_then(|e| e.prefix(user_key)) else {
            return Ok(());
        };
        if self.last_prefix.as_deref() == Some(prefix) {
            return Ok(());
        }
        self.last_prefix = Some(prefix.to_vec());
        if !self.table.prefix_may_match(user_key)? {
            return Err(self.raw.corruption(
                self.raw.footer.prefix_filter.offset,
                format!(
                    "the prefix filter rules out prefix {:?}, which the table holds",
                    String::from_utf8_lossy(prefix)
                ),
            ));
        }
        Ok(())
    }
}

/// An error as one line of a report.
pub(super) fn describe(e: &Error) -> String {
    e.to_string()
}
