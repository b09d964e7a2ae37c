//! Writes a table: data blocks, filter blocks, properties, index, footer.

use std::io::Write;
use std::sync::Arc;

use siftdb_filter::{FilterBuilder, FilterKind, KeyHasher};

use crate::block::BlockBuilder;
use crate::compression::Compression;
use crate::error::{Result, SstError};
use crate::format::{block_trailer, BlockHandle, Footer, TABLE_FORMAT_VERSION};
use crate::internal_key::{compare_internal, ParsedKey, ValueKind};
use crate::prefix::PrefixExtractor;
use crate::properties::TableProperties;

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
    /// Hash of keys and prefixes for the filters (recorded in each filter block).
    pub key_hasher: KeyHasher,
    /// With an extractor, a second filter over the distinct prefixes (same kind and bits/key as
    /// the whole-key filter, blocked bloom at 10 bits/key if there is none).
    pub prefix_extractor: Option<Arc<dyn PrefixExtractor>>,
    /// Codec of the data blocks (kept only where it saves at least an eighth of a block).
    pub compression: Compression,
    /// Compress index blocks too (with the data blocks' codec). Filter blocks never are.
    pub compress_index: bool,
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
            key_hasher: KeyHasher::default(),
            prefix_extractor: None,
            compression: Compression::None,
            compress_index: true,
        }
    }
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
    index_block: BlockBuilder,
    filter: Option<FilterBuilder>,
    prefix_filter: Option<FilterBuilder>,
    last_key: Vec<u8>,
    last_prefix: Option<Vec<u8>>,
    props: TableProperties,
}

impl<W: Write> TableBuilder<W> {
    /// A builder writing to `writer` from offset 0.
    pub fn new(writer: W, options: TableBuildOptions) -> Self {
        let filter = options
            .filter
            .map(|f| FilterBuilder::new(f.kind, f.bits_per_key, options.key_hasher));
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
            prefix_extractor: options
                .prefix_extractor
                .as_ref()
                .map_or_else(String::new, |p| p.name()),
            compression: options.compression.name().to_string(),
            min_sequence: u64::MAX,
            ..TableProperties::default()
        };
        TableBuilder {
            writer,
            data_block: BlockBuilder::new(options.block_restart_interval),
            index_block: BlockBuilder::new(1),
            options,
            offset: 0,
            saved: 0,
            filter,
            prefix_filter,
            last_key: Vec::new(),
            last_prefix: None,
            props,
        }
    }

    /// Entries added so far.
    pub fn entries(&self) -> u64 {
        self.props.entries
    }

    /// Bytes the table would have if finished now (approximately: filters not counted).
    pub fn estimated_size(&self) -> u64 {
        self.offset + self.data_block.estimated_size() as u64
    }

    /// Adds an entry (an encoded internal key and its value; a tombstone's value is ignored
    /// by readers and may be empty).
    pub fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        let parsed = ParsedKey::parse(key).ok_or_else(|| {
            SstError::InvalidArgument("key is not an encoded internal key".to_string())
        })?;
        let first = self.props.entries == 0;
        if !first && compare_internal(&self.last_key, key) != std::cmp::Ordering::Less {
            return Err(SstError::OutOfOrder(format!(
                "{:?} after {:?}",
                String::from_utf8_lossy(parsed.user_key),
                String::from_utf8_lossy(crate::internal_key::user_key_of(&self.last_key))
            )));
        }
        let new_user_key =
            first || crate::internal_key::user_key_of(&self.last_key) != parsed.user_key;
        if new_user_key {
            self.props.distinct_keys += 1;
            if let Some(f) = &mut self.filter {
                f.add_key(parsed.user_key);
            }
            if let (Some(extractor), Some(pf)) =
                (&self.options.prefix_extractor, &mut self.prefix_filter)
            {
                if let Some(prefix) = extractor.prefix(parsed.user_key) {
                    if self.last_prefix.as_deref() != Some(prefix) {
                        pf.add_key(prefix);
                        self.props.distinct_prefixes += 1;
                        self.last_prefix = Some(prefix.to_vec());
                    }
                }
            }
        }
        if first {
            self.props.smallest_key = key.to_vec();
        }
        self.props.entries += 1;
        if parsed.kind == ValueKind::Delete {
            self.props.deletions += 1;
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
        let handle = self.write_compressed(&contents, self.options.compression)?;
        // The index entry's key is the block's last key: every key in the block is ≤ it and
        // every key in later blocks is > it, so a seek lands on the right block.
        self.index_block.add(&separator, &handle.encode());
        self.props.data_blocks += 1;
        Ok(())
    }

    fn write_filter(
        &mut self,
        builder: Option<FilterBuilder>,
    ) -> Result<(BlockHandle, Option<f64>)> {
        let Some(builder) = builder else {
            return Ok((BlockHandle::default(), None));
        };
        let filter = builder
            .build()
            .map_err(|e| SstError::InvalidArgument(e.to_string()))?;
        let handle = self.write_block(&filter.encode())?;
        Ok((handle, Some(filter.expected_fpr())))
    }

    /// Writes the remaining blocks and the footer, flushes the writer, and returns the table's
    /// size and properties. The caller syncs the file.
    pub fn finish(self) -> Result<TableMeta> {
        self.finish_into().map(|(meta, _)| meta)
    }

    /// [`TableBuilder::finish`], also handing back the writer (to sync and close it).
    pub fn finish_into(mut self) -> Result<(TableMeta, W)> {
        self.flush_data_block()?;
        if self.props.entries == 0 {
            self.props.min_sequence = 0;
        }
        self.props.largest_key = self.last_key.clone();
        let filter = self.filter.take();
        let (filter_handle, fpr) = self.write_filter(filter)?;
        self.props.filter_expected_fpr = fpr.unwrap_or(1.0);
        self.props.filter_bytes = filter_handle.size;
        let prefix_filter = self.prefix_filter.take();
        let (prefix_handle, _) = self.write_filter(prefix_filter)?;
        let properties = self.write_block(&self.props.encode())?;
        let index_contents = self.index_block.finish();
        let index_codec = if self.options.compress_index {
            self.options.compression
        } else {
            Compression::None
        };
        let index = self.write_compressed(&index_contents, index_codec)?;
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
