//! Writes a table: data blocks, filter blocks, range tombstones, properties, index, footer.
//!
//! Entries arrive in internal-key order (one out of order is refused with `SstError::OutOfOrder`,
//! and the builder stays usable). Each goes into the current data block; a block is cut at
//! `block_size` and its last key becomes its index entry. Each new user key adds its hash to the
//! filter builder (and its prefix to the prefix filter's). A cut data block is compressed with
//! the level's codec and kept compressed only if that saves an eighth of it.
//!
//! Filters are sized at `finish`, from the exact number of distinct keys. `finish` also decides
//! whether to partition (index or filter above `partition_above`, 64 KiB by default): if so it
//! groups the data blocks into runs of about 4 KiB of index entries and writes, per run, a filter
//! partition built from exactly the keys of those blocks and an index partition, then the two
//! top levels; otherwise one filter and one index. The prefix filter, range tombstones and
//! properties are written too, and the footer last (the byte layout is in `docs/FORMAT.md`).
//! Tables written for L0 (whose filter is pinned) keep a whole filter beside a partitioned index
//! (`partition_filters = false`).
//!
//! With worker threads (`compression_threads` above 1; `compress_pool.rs`,
//! `partition_filters.rs`) cut blocks go to compression workers in batches and come back in
//! order, and the run rule (`RunCutter`) is applied as blocks are cut, so each closed run's
//! filter partition is built by a worker while later keys arrive. `finish` uses a worker's
//! partition only where it would have built the same one; the bytes equal one thread's
//! (`sstable/tests/it/table_parallel_compression.rs`).

use std::io::Write;
use std::sync::Arc;

use siftdb_filter::{FilterBuilder, FilterKind, KeyHasher};

use crate::block::BlockBuilder;
use crate::compression::Compression;
use crate::error::{Result, SstError};
use crate::format::{block_trailer, BlockHandle, Footer, TABLE_FORMAT_VERSION};
use crate::internal_key::{compare_internal, InternalKey, ParsedKey, ValueKind};
use crate::partition_filters::{EarlyFilters, RunCutter};
use crate::prefix::PrefixExtractor;
use crate::properties::TableProperties;
use crate::range_filter_block::RangeKeyCollector;
use crate::range_tombstones::FragmentedRangeTombstones;

/// The whole-key filter a table gets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FilterSpec {
    /// Filter kind.
    pub kind: FilterKind,
    /// Bits per distinct key.
    pub bits_per_key: f64,
}

/// How a table is written.
#[derive(Debug, Clone)]
pub struct TableBuildOptions {
    /// Target size of a data block's contents (a block is cut once it reaches this).
    pub block_size: usize,
    /// Entries between restart points in data blocks.
    pub block_restart_interval: usize,
    /// Whole-key filter, `None` for no filter.
    pub filter: Option<FilterSpec>,
    /// Why `filter` is `None`, when the writer chose so (recorded as the table's
    /// `filter_omitted` property); empty otherwise.
    pub filter_omitted: &'static str,
    /// Hash of keys and prefixes for the filters (recorded in each filter block).
    pub key_hasher: KeyHasher,
    /// With an extractor, a second filter over the distinct prefixes (same kind and bits/key as
    /// the whole-key filter, blocked bloom at 10 bits/key if there is none).
    pub prefix_extractor: Option<Arc<dyn PrefixExtractor>>,
    /// Codec of the data blocks (kept only where it saves at least an eighth of a block).
    pub compression: Compression,
    /// Compress index blocks too (with the data blocks' codec). Filter blocks never are.
    pub compress_index: bool,
    /// Partition the index and the filter of a table whose index or whole-key filter would be
    /// larger than this (bytes); `None`: never.
    pub partition_above: Option<usize>,
    /// Target size of an index partition (RocksDB's `metadata_block_size`); each filter
    /// partition covers the same data blocks as one index partition.
    pub metadata_block_size: usize,
    /// Partition the filter along with the index (RocksDB's `partition_filters`); `false`
    /// keeps one whole filter next to a partitioned index — what a table that stays pinned
    /// (L0) wants, since a pinned whole filter is probed without choosing a partition.
    pub partition_filters: bool,
    /// Bits per key of the table's range filter (0: none). See `range_filter_block`.
    pub range_filter_bits_per_key: f64,
    /// When the table is written, in Unix seconds, recorded as its `creation_time` property
    /// (0: not recorded). FIFO compaction's TTL counts a table's age from it.
    pub creation_time: u64,
    /// Threads compressing data blocks beside the one building the table (RocksDB's
    /// `CompressionOptions::parallel_threads`): 1 (or 0) compresses each block where it is
    /// cut; more hand blocks to that many workers, and the table's bytes are the same. Blocks
    /// still with a worker count uncompressed in [`TableBuilder::estimated_size`], so a writer
    /// that cuts tables by size cuts them a little earlier. Only with a codec.
    pub compression_threads: usize,
}

impl Default for TableBuildOptions {
    fn default() -> Self {
        TableBuildOptions {
            block_size: 4096,
            block_restart_interval: 16,
            filter: Some(FilterSpec {
                kind: FilterKind::BlockedBloom,
                bits_per_key: 10.0,
            }),
            filter_omitted: "",
            key_hasher: KeyHasher::default(),
            prefix_extractor: None,
            compression: Compression::None,
            compress_index: true,
            partition_above: Some(DEFAULT_PARTITION_ABOVE),
            metadata_block_size: 4096,
            partition_filters: true,
            range_filter_bits_per_key: 0.0,
            creation_time: 0,
            compression_threads: 1,
        }
    }
}

/// The default of [`TableBuildOptions::partition_above`]: 64 KiB.
pub const DEFAULT_PARTITION_ABOVE: usize = 64 << 10;

/// Where a data block's keys sit among the table's filter hashes.
#[derive(Debug, Clone, Copy)]
struct BlockKeys {
    /// Index of the first hash of a key that starts in this block.
    first_hash: usize,
    /// The hash of a key whose versions began in the previous block and go on in this one (it
    /// belongs to both blocks' filter partitions).
    carried: Option<u64>,
}

/// What a finished table is.
#[derive(Debug, Clone, PartialEq)]
pub struct TableMeta {
    /// Bytes written.
    pub file_size: u64,
    /// Bytes the table would have had with no block compressed (`file_size` when none was).
    pub uncompressed_size: u64,
    /// The properties written into the table.
    pub properties: TableProperties,
}

/// Range tombstones waiting for [`TableBuilder::finish`]: their block, and what they add to the
/// table's boundaries and sequence range.
#[derive(Debug)]
struct PendingTombstones {
    encoded: Vec<u8>,
    count: u64,
    /// `(first fragment's start, its newest sequence, RangeDelete)`.
    smallest: InternalKey,
    /// The end sentinel of the last fragment's end.
    largest: InternalKey,
    min_sequence: u64,
    max_sequence: u64,
}

impl PendingTombstones {
    fn of(tombstones: &FragmentedRangeTombstones) -> Option<PendingTombstones> {
        let (first_start, first_seqs) = tombstones.fragments().next().map(|(s, _, q)| (s, q))?;
        let (_, last_end) = tombstones.bounds()?;
        let (min_sequence, max_sequence) = tombstones.sequence_range()?;
        Some(PendingTombstones {
            encoded: tombstones.encode(),
            count: tombstones.tombstone_count() as u64,
            smallest: InternalKey::new(
                first_start,
                first_seqs.first().copied()?,
                ValueKind::RangeDelete,
            ),
            largest: InternalKey::range_end_sentinel(last_end),
            min_sequence,
            max_sequence,
        })
    }
}

/// Builds a table into `W`. Keys are encoded internal keys and must arrive in strictly
/// increasing internal-key order; a key out of order is refused with [`SstError::OutOfOrder`]
/// and leaves the builder as it was.
///
/// ```
/// use siftdb_sstable::{InternalKey, TableBuilder, TableBuildOptions, ValueKind};
/// let mut out = Vec::new();
/// let mut b = TableBuilder::new(&mut out, TableBuildOptions::default());
/// b.add(InternalKey::new(b"apple", 7, ValueKind::Put).encoded(), b"red")?;
/// b.add(InternalKey::new(b"pear", 3, ValueKind::Put).encoded(), b"green")?;
/// assert!(b.add(InternalKey::new(b"fig", 9, ValueKind::Put).encoded(), b"").is_err());
/// let meta = b.finish()?;
/// assert_eq!(meta.properties.entries, 2);
/// # Ok::<(), siftdb_sstable::SstError>(())
/// ```
pub struct TableBuilder<W: Write> {
    writer: W,
    options: TableBuildOptions,
    offset: u64,
    /// What compression saved so far (uncompressed minus stored bytes).
    saved: u64,
    data_block: BlockBuilder,
    /// Per data block: its last key (the index separator) and handle.
    index_entries: Vec<(Vec<u8>, BlockHandle)>,
    /// Hashes of the distinct user keys, in key order (the whole-key filter's input).
    hashes: Vec<u64>,
    /// Per data block (the one being written last): where its keys are in `hashes`.
    block_keys: Vec<BlockKeys>,
    prefix_filter: Option<FilterBuilder>,
    last_key: Vec<u8>,
    last_prefix: Option<Vec<u8>>,
    props: TableProperties,
    range_tombstones: Option<PendingTombstones>,
    /// The range filter's input (`None`: the table gets no range filter).
    range_keys: Option<RangeKeyCollector>,
    /// Workers compressing data blocks (`compression_threads` above 1), and the index
    /// separators of the blocks they hold, oldest first.
    compressors: Option<crate::compress_pool::CompressPool>,
    in_flight_separators: std::collections::VecDeque<Vec<u8>>,
    /// A worker building filter partitions as their blocks are cut (with worker threads and
    /// partitioned filters).
    early_filters: Option<EarlyFilters>,
}

impl<W: Write> TableBuilder<W> {
    /// A builder writing to `writer` from offset 0.
    pub fn new(writer: W, options: TableBuildOptions) -> Self {
        let prefix_filter = options.prefix_extractor.as_ref().map(|_| {
            let spec = options.filter.unwrap_or(FilterSpec {
                kind: FilterKind::BlockedBloom,
                bits_per_key: 10.0,
            });
            FilterBuilder::new(spec.kind, spec.bits_per_key, options.key_hasher)
        });
        let props = TableProperties {
            filter_kind: options
                .filter
                .map_or_else(|| "none".to_string(), |f| f.kind.name().to_string()),
            filter_bits_per_key: options.filter.map_or(0.0, |f| f.bits_per_key),
            filter_omitted: match options.filter {
                None => options.filter_omitted.to_string(),
                Some(_) => String::new(),
            },
            prefix_extractor: options
                .prefix_extractor
                .as_ref()
                .map_or_else(String::new, |p| p.name()),
            compression: options.compression.name().to_string(),
            min_sequence: u64::MAX,
            creation_time: options.creation_time,
            ..TableProperties::default()
        };
        let range_keys = (options.range_filter_bits_per_key > 0.0).then(RangeKeyCollector::default);
        let compressors = (options.compression_threads > 1
            && options.compression != Compression::None)
            .then(|| crate::compress_pool::CompressPool::new(options.compression_threads));
        let early_filters = options
            .filter
            .filter(|_| {
                options.compression_threads > 1
                    && options.partition_filters
                    && options.partition_above.is_some()
            })
            .and_then(|spec| {
                EarlyFilters::start(spec, options.key_hasher, options.metadata_block_size)
            });
        TableBuilder {
            writer,
            data_block: BlockBuilder::new(options.block_restart_interval),
            index_entries: Vec::new(),
            hashes: Vec::new(),
            block_keys: Vec::new(),
            options,
            offset: 0,
            saved: 0,
            prefix_filter,
            last_key: Vec::new(),
            last_prefix: None,
            props,
            range_tombstones: None,
            range_keys,
            compressors,
            in_flight_separators: std::collections::VecDeque::new(),
            early_filters,
        }
    }

    /// Changes the whole-key filter's bits/key (its kind stays), any time before
    /// [`TableBuilder::finish`]: the filter is built there from the exact keys, so a writer that
    /// learns how the table will be read while it writes (adaptive allocation) can size it at
    /// the end. No effect on a table built without a filter (its keys were not collected).
    pub fn set_filter_bits_per_key(&mut self, bits_per_key: f64) {
        if let Some(filter) = &mut self.options.filter {
            filter.bits_per_key = bits_per_key;
            self.props.filter_bits_per_key = bits_per_key;
        }
    }

    /// The whole-key filter the table will be built with.
    pub fn filter(&self) -> Option<FilterSpec> {
        self.options.filter
    }

    /// Gives the table these range tombstones (replacing any set before; empty: none). Callable
    /// any time before [`TableBuilder::finish`], which writes them as their own block (never
    /// compressed) and widens the table's boundary keys and sequence range to cover them:
    /// smallest key ≤ `(first fragment's start, its newest sequence, RangeDelete)`, largest key ≥
    /// [`InternalKey::range_end_sentinel`] of the last fragment's end. A table may hold range
    /// tombstones and no point entry at all.
    pub fn set_range_tombstones(&mut self, tombstones: FragmentedRangeTombstones) {
        self.range_tombstones = PendingTombstones::of(&tombstones);
    }

    /// Entries added so far.
    pub fn entries(&self) -> u64 {
        self.props.entries
    }

    /// Bytes the table would have if finished now (approximately: filters not counted; range
    /// tombstones are).
    pub fn estimated_size(&self) -> u64 {
        let tombstones = self
            .range_tombstones
            .as_ref()
            .map_or(0, |t| t.encoded.len() as u64);
        let in_flight = self.compressors.as_ref().map_or(0, |c| c.raw_in_flight());
        self.offset + in_flight + self.data_block.estimated_size() as u64 + tombstones
    }

    /// Adds an entry (an encoded internal key and its value; a tombstone's value is ignored
    /// by readers and may be empty). Range tombstones are not entries: a key of kind
    /// [`ValueKind::RangeDelete`] is refused (see [`TableBuilder::set_range_tombstones`]).
    pub fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.add_entry(key, value, false)
    }

    /// [`TableBuilder::add`] for a table with one entry per user key (an external file):
    /// also refuses, with [`SstError::OutOfOrder`], a key whose user key is the last one's.
    /// One comparison checks both, where a caller checking first would compare twice.
    pub fn add_distinct(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.add_entry(key, value, true)
    }

    fn add_entry(&mut self, key: &[u8], value: &[u8], distinct: bool) -> Result<()> {
        let parsed = ParsedKey::parse(key).ok_or_else(|| {
            SstError::InvalidArgument("key is not an encoded internal key".to_string())
        })?;
        if parsed.kind == ValueKind::RangeDelete {
            return Err(SstError::InvalidArgument(
                "range tombstones go to set_range_tombstones, not among point entries".to_string(),
            ));
        }
        let first = self.props.entries == 0;
        let new_user_key = first || self.follows_last_key(key, parsed.user_key, distinct)?;
        if self.data_block.is_empty() {
            // A new data block: where its keys start, and a key it carries on from the last one.
            let carried = (!new_user_key && self.options.filter.is_some())
                .then(|| self.options.key_hasher.hash(parsed.user_key));
            self.block_keys.push(BlockKeys {
                first_hash: self.hashes.len(),
                carried,
            });
        }
        if new_user_key {
            self.props.distinct_keys += 1;
            if let Some(range_keys) = &mut self.range_keys {
                range_keys.add(parsed.user_key);
            }
            if self.options.filter.is_some() {
                self.hashes
                    .push(self.options.key_hasher.hash(parsed.user_key));
            }
            if let (Some(extractor), Some(pf)) =
                (&self.options.prefix_extractor, &mut self.prefix_filter)
                && let Some(prefix) = extractor.prefix(parsed.user_key)
                && self.last_prefix.as_deref() != Some(prefix)
            {
                pf.add_key(prefix);
                self.props.distinct_prefixes += 1;
                self.last_prefix = Some(prefix.to_vec());
            }
        }
        if first {
            self.props.smallest_key = key.to_vec();
        }
        self.props.entries += 1;
        match parsed.kind {
            ValueKind::Delete => self.props.deletions += 1,
            ValueKind::Merge => self.props.merge_operands += 1,
            _ => {}
        }
        self.props.raw_key_bytes += key.len() as u64;
        self.props.raw_value_bytes += value.len() as u64;
        self.props.min_sequence = self.props.min_sequence.min(parsed.sequence);
        self.props.max_sequence = self.props.max_sequence.max(parsed.sequence);
        self.data_block.add(key, value);
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
        if self.data_block.estimated_size() >= self.options.block_size {
            self.flush_data_block()?;
        }
        Ok(())
    }

    /// Whether `key` (with user key `user_key`) comes after the last key added and is of a
    /// new user key (`Ok(true)`) or a newer version's (`Ok(false)`, an error when `distinct`);
    /// an error if it does not come after it. One comparison of the user keys decides it all
    /// (this runs for every entry).
    fn follows_last_key(&self, key: &[u8], user_key: &[u8], distinct: bool) -> Result<bool> {
        use std::cmp::Ordering;
        let last_user_key = crate::internal_key::user_key_of(&self.last_key);
        let users = last_user_key.cmp(user_key);
        let order = match users {
            Ordering::Equal if distinct => Ordering::Equal,
            Ordering::Equal => compare_internal(&self.last_key, key),
            other => other,
        };
        if order != Ordering::Less {
            return Err(SstError::OutOfOrder(format!(
                "{:?} after {:?}",
                String::from_utf8_lossy(user_key),
                String::from_utf8_lossy(last_user_key)
            )));
        }
        Ok(users == Ordering::Less)
    }

    /// Writes a block as it is (filters, properties).
    fn write_block(&mut self, contents: &[u8]) -> Result<BlockHandle> {
        self.write_stored(contents, Compression::None)
    }

    /// Writes a block compressed with `codec` where that saves enough, else as it is.
    fn write_compressed(&mut self, contents: &[u8], codec: Compression) -> Result<BlockHandle> {
        match codec.compress(contents) {
            Some(stored) => {
                self.saved += (contents.len() - stored.len()) as u64;
                self.write_stored(&stored, codec)
            }
            None => self.write_stored(contents, Compression::None),
        }
    }

    fn write_stored(&mut self, stored: &[u8], codec: Compression) -> Result<BlockHandle> {
        let handle = BlockHandle {
            offset: self.offset,
            size: stored.len() as u64,
        };
        let trailer = block_trailer(stored, codec.byte());
        self.write_raw(stored)?;
        self.write_raw(&trailer)?;
        Ok(handle)
    }

    fn write_raw(&mut self, bytes: &[u8]) -> Result<()> {
        self.writer
            .write_all(bytes)
            .map_err(|source| SstError::Io {
                file: "table being built".to_string(),
                source,
            })?;
        self.offset += bytes.len() as u64;
        Ok(())
    }

    fn flush_data_block(&mut self) -> Result<()> {
        if self.data_block.is_empty() {
            return Ok(());
        }
        let separator = self.data_block.last_key().to_vec();
        let contents = self.data_block.finish();
        if let Some(early) = &mut self.early_filters {
            let (block_keys, hashes) = (&self.block_keys, &self.hashes);
            early.block_cut(separator.len(), |run| run_hashes(block_keys, hashes, run));
        }
        if let Some(pool) = &mut self.compressors {
            pool.submit(contents, self.options.compression)?;
            self.in_flight_separators.push_back(separator);
            let capacity = pool.capacity();
            return self.write_compressed_blocks(capacity);
        }
        let handle = self.write_compressed(&contents, self.options.compression)?;
        // The index entry's key is the block's last key: every key in the block is ≤ it and
        // every key in later blocks is > it, so a seek lands on the right block.
        self.index_entries.push((separator, handle));
        self.props.data_blocks += 1;
        Ok(())
    }

    /// Writes the blocks the compression workers hold, oldest first, until at most `keep`
    /// remain with them (waiting for each).
    fn write_compressed_blocks(&mut self, keep: u64) -> Result<()> {
        loop {
            let Some(pool) = self.compressors.as_mut() else {
                return Ok(());
            };
            if pool.in_flight() <= keep {
                return Ok(());
            }
            let Some(block) = pool.take()? else {
                return Ok(());
            };
            let separator = self.in_flight_separators.pop_front().ok_or_else(|| {
                SstError::InvalidArgument("a compressed block without its separator".to_string())
            })?;
            if block.codec != Compression::None {
                self.saved += (block.raw_len - block.stored.len()) as u64;
            }
            let handle = self.write_stored(&block.stored, block.codec)?;
            self.index_entries.push((separator, handle));
            self.props.data_blocks += 1;
        }
    }

    /// Builds a filter over `hashes` with the table's spec, writes it, and returns its handle,
    /// expected FPR and key count.
    fn write_filter_of(&mut self, hashes: &[u64]) -> Result<(BlockHandle, f64)> {
        let Some(spec) = self.options.filter else {
            return Ok((BlockHandle::default(), 1.0));
        };
        let (encoded, fpr) = crate::partition_filters::build(spec, self.options.key_hasher, hashes)
            .map_err(SstError::InvalidArgument)?;
        let handle = self.write_block(&encoded)?;
        Ok((handle, fpr))
    }

    fn write_prefix_filter(&mut self) -> Result<BlockHandle> {
        let Some(builder) = self.prefix_filter.take() else {
            return Ok(BlockHandle::default());
        };
        let filter = builder
            .build()
            .map_err(|e| SstError::InvalidArgument(e.to_string()))?;
        self.write_block(&filter.encode())
    }

    fn index_codec(&self) -> Compression {
        if self.options.compress_index {
            self.options.compression
        } else {
            Compression::None
        }
    }

    /// Writes an index block over `entries`.
    fn write_index(
        &mut self,
        entries: &[(Vec<u8>, BlockHandle)],
        codec: Compression,
    ) -> Result<BlockHandle> {
        let mut block = BlockBuilder::new(1);
        for (separator, handle) in entries {
            block.add(separator, &handle.encode());
        }
        self.write_compressed(&block.finish(), codec)
    }

    /// Whether the index or the whole-key filter is big enough to partition.
    fn should_partition(&self) -> bool {
        let Some(above) = self.options.partition_above else {
            return false;
        };
        let index_bytes: usize = self
            .index_entries
            .iter()
            .map(|(k, _)| crate::partition_filters::index_entry_bytes(k.len()))
            .sum();
        let filter_bytes = self
            .options
            .filter
            .map_or(0.0, |f| self.hashes.len() as f64 * f.bits_per_key / 8.0);
        let filter_big = self.options.partition_filters && filter_bytes > above as f64;
        self.index_entries.len() > 1 && (index_bytes > above || filter_big)
    }

    /// Groups the data blocks into runs whose index entries fill about one metadata block.
    fn partitions(&self) -> Vec<std::ops::Range<usize>> {
        let mut cutter = RunCutter::new(self.options.metadata_block_size);
        let mut runs: Vec<_> = self
            .index_entries
            .iter()
            .filter_map(|(separator, _)| cutter.push(separator.len()))
            .collect();
        runs.extend(cutter.rest());
        runs
    }

    /// Writes the filter and the index whole; returns (index, filter) handles.
    fn write_whole_index_and_filter(&mut self) -> Result<(BlockHandle, BlockHandle)> {
        let hashes = std::mem::take(&mut self.hashes);
        let (filter, fpr) = self.write_filter_of(&hashes)?;
        self.props.filter_expected_fpr = fpr;
        self.props.filter_bytes = filter.size;
        let entries = std::mem::take(&mut self.index_entries);
        let index = self.write_index(&entries, self.index_codec())?;
        Ok((index, filter))
    }

    /// Writes one filter partition and one index partition per run of data blocks, then their
    /// top levels (separator → partition handle, never compressed: the table holds them); returns
    /// the top levels' (index, filter) handles.
    fn write_partitioned_index_and_filter(&mut self) -> Result<(BlockHandle, BlockHandle)> {
        let runs = self.partitions();
        let mut top_index = Vec::with_capacity(runs.len());
        let mut top_filter = Vec::with_capacity(runs.len());
        let (mut fpr_keys, mut keys) = (0.0, 0u64);
        let partition_filters = self.options.filter.is_some() && self.options.partition_filters;
        let early = match self.early_filters.take() {
            Some(early) => early.finish(self.options.filter)?,
            None => Vec::new(),
        };
        for (i, run) in runs.iter().enumerate() {
            let separator = self.index_entries[run.end - 1].0.clone();
            if partition_filters {
                let (handle, fpr, count) = match early.get(i).filter(|p| p.run == *run) {
                    Some(built) => (
                        self.write_block(&built.encoded)?,
                        built.expected_fpr,
                        built.keys,
                    ),
                    None => {
                        let hashes = run_hashes(&self.block_keys, &self.hashes, run);
                        let (handle, fpr) = self.write_filter_of(&hashes)?;
                        (handle, fpr, hashes.len())
                    }
                };
                self.props.filter_bytes += handle.size;
                fpr_keys += fpr * count as f64;
                keys += count as u64;
                top_filter.push((separator.clone(), handle));
            }
            let entries = self.index_entries[run.clone()].to_vec();
            let handle = self.write_index(&entries, self.index_codec())?;
            top_index.push((separator, handle));
        }
        self.props.index_partitions = runs.len() as u64;
        let filter = if !partition_filters {
            // One whole filter beside the partitioned index.
            let hashes = std::mem::take(&mut self.hashes);
            let (filter, fpr) = self.write_filter_of(&hashes)?;
            self.props.filter_expected_fpr = fpr;
            self.props.filter_bytes = filter.size;
            filter
        } else if self.options.filter.is_some() {
            self.props.filter_partitions = runs.len() as u64;
            self.props.filter_expected_fpr = if keys == 0 {
                0.0
            } else {
                fpr_keys / keys as f64
            };
            self.write_index(&top_filter, Compression::None)?
        } else {
            BlockHandle::default()
        };
        let index = self.write_index(&top_index, Compression::None)?;
        Ok((index, filter))
    }

    /// Writes the remaining blocks and the footer, flushes the writer, and returns the table's
    /// size and properties. The caller syncs the file.
    pub fn finish(self) -> Result<TableMeta> {
        self.finish_into().map(|(meta, _)| meta)
    }

    /// [`TableBuilder::finish`], also handing back the writer (to sync and close it).
    pub fn finish_into(mut self) -> Result<(TableMeta, W)> {
        self.flush_data_block()?;
        self.write_compressed_blocks(0)?;
        self.props.largest_key = self.last_key.clone();
        let tombstones = self.range_tombstones.take();
        if let Some(t) = &tombstones {
            let points = self.props.entries > 0;
            let smallest = t.smallest.encoded();
            if !points || compare_internal(smallest, &self.props.smallest_key).is_lt() {
                self.props.smallest_key = smallest.to_vec();
            }
            let largest = t.largest.encoded();
            if !points || compare_internal(largest, &self.props.largest_key).is_gt() {
                self.props.largest_key = largest.to_vec();
            }
            self.props.min_sequence = self.props.min_sequence.min(t.min_sequence);
            self.props.max_sequence = self.props.max_sequence.max(t.max_sequence);
        }
        if self.props.entries == 0 && tombstones.is_none() {
            self.props.min_sequence = 0;
        }
        self.props.filter_expected_fpr = 1.0;
        let (index, filter_handle) = if self.should_partition() {
            self.write_partitioned_index_and_filter()?
        } else {
            self.write_whole_index_and_filter()?
        };
        let prefix_handle = self.write_prefix_filter()?;
        if let Some(t) = tombstones {
            self.props.range_del_handle = Some(self.write_block(&t.encoded)?);
            self.props.range_deletions = t.count;
        }
        let bits = self.options.range_filter_bits_per_key;
        if let Some(block) = self.range_keys.take().and_then(|keys| keys.finish(bits)) {
            self.props.range_filter_handle = Some(self.write_block(&block)?);
        }
        let properties = self.write_block(&self.props.encode())?;
        let footer = Footer {
            index,
            properties,
            filter: filter_handle,
            prefix_filter: prefix_handle,
            version: TABLE_FORMAT_VERSION,
        };
        self.write_raw(&footer.encode())?;
        self.writer.flush().map_err(|source| SstError::Io {
            file: "table being built".to_string(),
            source,
        })?;
        Ok((
            TableMeta {
                file_size: self.offset,
                uncompressed_size: self.offset + self.saved,
                properties: self.props,
            },
            self.writer,
        ))
    }
}

/// The filter hashes of data blocks `blocks`: the keys that start in them, and a key carried
/// into the first from the block before.
fn run_hashes(
    block_keys: &[BlockKeys],
    hashes: &[u64],
    blocks: &std::ops::Range<usize>,
) -> Vec<u64> {
    let start = block_keys[blocks.start].first_hash;
    let end = block_keys
        .get(blocks.end)
        .map_or(hashes.len(), |b| b.first_hash);
    let mut run: Vec<u64> = block_keys[blocks.start].carried.into_iter().collect();
    run.extend_from_slice(&hashes[start..end]);
    run
}
