//! A table file read block by block, as it is stored: the footer, then each block its handle
//! names, checked against its trailer's CRC and decompressed. What `table_info`,
//! `table_entries` and the checks walk (the engine's `Table` hides the handles they report).

use std::path::Path;
use std::sync::Arc;

use siftdb_sstable::format::{check_block, BlockCheckError, BlockHandle, Footer, FOOTER_LEN};
use siftdb_sstable::{block::Block, Compression, ReadMode, TableProperties};

use crate::base::error::{Corruption, Error, Result};
use crate::base::fs::FileSystem;

/// An open table file, its footer and properties verified.
pub(super) struct RawTable {
    pub name: String,
    pub file: Box<dyn siftdb_sstable::RandomAccessFile>,
    pub footer: Footer,
    pub properties: TableProperties,
}

/// One data block as the index names it: its separator (the block's last internal key) and
/// handle, and the index partition that lists it (`None`: the index is one block).
pub(super) struct DataHandle {
    pub separator: Vec<u8>,
    pub handle: BlockHandle,
    pub partition: Option<usize>,
}

impl RawTable {
    /// Opens `path` and reads its footer and properties: a file too short for a footer, or
    /// whose footer or properties do not verify, is a `Corruption` naming it.
    pub fn open(fs: &dyn FileSystem, path: &Path) -> Result<RawTable> {
        let name = path.display().to_string();
        let file = fs.open_random(path, ReadMode::Pread)?;
        let size = file.size();
        let bad = |reason: String| Error::Corruption(Corruption::in_file(&name, reason));
        if size < FOOTER_LEN as u64 {
            return Err(bad(format!(
                "not a siftdb table: {size} bytes, shorter than a footer"
            )));
        }
        let bytes = file.read_at(size - FOOTER_LEN as u64, FOOTER_LEN)?;
        let footer = Footer::decode(&bytes).map_err(|e| {
            bad(match e {
                siftdb_sstable::format::FooterError::BadMagic(_) => {
                    "not a siftdb table (no table magic at its end)".to_string()
                }
                other => format!("damaged table footer: {other:?}"),
            })
        })?;
        let mut table = RawTable {
            name,
            file,
            footer,
            properties: TableProperties::default(),
        };
        let raw = table.read_block(footer.properties)?;
        table.properties = TableProperties::decode(raw)
            .map_err(|reason| table.corruption(footer.properties.offset, reason))?;
        Ok(table)
    }

    /// Damage at `offset` of this file.
    pub fn corruption(&self, offset: u64, reason: impl Into<String>) -> Error {
        Error::Corruption(Corruption::at(&self.name, offset, reason))
    }

    /// The file's size in bytes.
    pub fn file_size(&self) -> u64 {
        self.file.size()
    }

    /// The block at `handle`, checked against its CRC and decompressed.
    pub fn read_block(&self, handle: BlockHandle) -> Result<Vec<u8>> {
        Ok(self.read_block_typed(handle)?.0)
    }

    /// [`RawTable::read_block`], with the codec the block was stored with.
    pub fn read_block_typed(&self, handle: BlockHandle) -> Result<(Vec<u8>, Compression)> {
        if !handle.fits(self.file_size()) {
            return Err(self.corruption(handle.offset, format!("block {handle:?} out of range")));
        }
        let len = usize::try_from(handle.size)
            .ok()
            .and_then(|s| s.checked_add(siftdb_sstable::format::BLOCK_TRAILER_LEN))
            .ok_or_else(|| self.corruption(handle.offset, "block size overflows"))?;
        let mut raw = self.file.read_at(handle.offset, len)?;
        let (stored, codec) = match check_block(&raw) {
            Ok(checked) => checked,
            Err(BlockCheckError::Checksum { got, expected }) => {
                return Err(self.corruption(
                    handle.offset,
                    format!(
                        "block checksum mismatch (stored {expected:#010x}, computed {got:#010x})"
                    ),
                ))
            }
            Err(other) => {
                return Err(self.corruption(handle.offset, format!("bad block trailer: {other:?}")))
            }
        };
        raw.truncate(stored);
        let codec = Compression::from_byte(codec)
            .filter(|c| *c == Compression::None || self.footer.version >= 2)
            .ok_or_else(|| {
                self.corruption(handle.offset, format!("unknown compression type {codec}"))
            })?;
        if codec == Compression::None {
            return Ok((raw, codec));
        }
        let contents = codec
            .decompress(&raw)
            .map_err(|reason| self.corruption(handle.offset, reason))?;
        Ok((contents, codec))
    }

    /// The block at `handle` parsed as a data, index or top-level block.
    pub fn parsed_block(&self, handle: BlockHandle) -> Result<Arc<Block>> {
        let contents = self.read_block(handle)?;
        Block::new(contents)
            .map(Arc::new)
            .map_err(|reason| self.corruption(handle.offset, reason))
    }

    /// The (key, handle) entries of an index-like block: an index, an index partition, or
    /// the top level of a partitioned index or filter.
    pub fn handle_entries(&self, handle: BlockHandle) -> Result<Vec<(Vec<u8>, BlockHandle)>> {
        let block = self.parsed_block(handle)?;
        let mut it = block.iter();
        it.seek_to_first();
        let mut out = Vec::new();
        while it.valid() {
            let target = BlockHandle::decode(it.value())
                .ok_or_else(|| self.corruption(handle.offset, "undecodable block handle"))?;
            out.push((it.key().to_vec(), target));
            it.next();
        }
        match it.error() {
            Some(reason) => Err(self.corruption(handle.offset, reason)),
            None => Ok(out),
        }
    }

    /// The handles of the index partitions (empty: the index is one block).
    pub fn index_partitions(&self) -> Result<Vec<(Vec<u8>, BlockHandle)>> {
        if self.properties.index_partitions == 0 {
            return Ok(Vec::new());
        }
        self.handle_entries(self.footer.index)
    }

    /// Every data block, in key order, as the index names it.
    pub fn data_handles(&self) -> Result<Vec<DataHandle>> {
        let partitions = self.index_partitions()?;
        if partitions.is_empty() {
            let entries = self.handle_entries(self.footer.index)?;
            return Ok(entries
                .into_iter()
                .map(|(separator, handle)| DataHandle {
                    separator,
                    handle,
                    partition: None,
                })
                .collect());
        }
        let mut out = Vec::new();
        for (i, (_, partition)) in partitions.iter().enumerate() {
            for (separator, handle) in self.handle_entries(*partition)? {
                out.push(DataHandle {
                    separator,
                    handle,
                    partition: Some(i),
                });
            }
        }
        Ok(out)
    }

    /// The whole-key filter's blocks: its partitions (with the top level's handle first), or
    /// the one filter block; empty without a filter.
    pub fn filter_blocks(&self) -> Result<(Option<BlockHandle>, Vec<BlockHandle>)> {
        if self.footer.filter.is_absent() {
            return Ok((None, Vec::new()));
        }
        if self.properties.filter_partitions == 0 {
            return Ok((None, vec![self.footer.filter]));
        }
        let parts = self.handle_entries(self.footer.filter)?;
        Ok((
            Some(self.footer.filter),
            parts.into_iter().map(|(_, h)| h).collect(),
        ))
    }
}
