//! `SstFileWriter`: a table file built outside any database, from keys in order, for
//! [`Db::ingest_external_file`](crate::Db::ingest_external_file) (RocksDB's `SstFileWriter`).
//!
//! Every entry is written at sequence number 0; the database that ingests the file gives the
//! whole file one sequence number then (its *global seqno*, recorded in the manifest). Each
//! user key appears at most once, so the file needs no per-key sequence of its own.

use std::path::{Path, PathBuf};

use siftdb_sstable::{
    FilterSpec, FragmentedRangeTombstones, InternalKey, RangeTombstone, TableBuilder, ValueKind,
};

use crate::base::batch::{MAX_KEY_SIZE, MAX_VALUE_SIZE};
use crate::base::error::{Error, Result};
use crate::base::fs::WritableFile;
use crate::base::options::Options;
use crate::core::filter_plan::TableFilter;

/// What [`SstFileWriter::finish`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalFileInfo {
    /// The file's path.
    pub file_path: PathBuf,
    /// The smallest user key of its entries and range deletions.
    pub smallest_key: Vec<u8>,
    /// The largest user key of its entries, or the largest range deletion's end (exclusive)
    /// when that is larger.
    pub largest_key: Vec<u8>,
    /// The sequence number of its entries: always 0 (the ingesting database assigns one).
    pub sequence_number: u64,
    /// The file's size in bytes.
    pub file_size: u64,
    /// Point entries (puts, deletes, merge operands).
    pub num_entries: u64,
    /// Range deletions.
    pub num_range_del_entries: u64,
}

/// Builds a table file from keys in strictly increasing order, for ingestion.
///
/// ```
/// use siftdb::{Db, IngestOptions, Options, SstFileWriter};
/// let dir = tempfile::tempdir()?;
/// let file = dir.path().join("load.sst");
/// let options = Options::default();
/// let mut writer = SstFileWriter::create(&file, &options)?;
/// writer.put(b"apple", b"red")?;
/// writer.put(b"banana", b"yellow")?;
/// let info = writer.finish()?;
/// assert_eq!(info.num_entries, 2);
///
/// let db = Db::open(dir.path().join("db"), options)?;
/// db.ingest_external_file(&[&file], &IngestOptions::default())?;
/// assert_eq!(db.get(b"banana")?.as_deref(), Some(&b"yellow"[..]));
/// # Ok::<(), siftdb::Error>(())
/// ```
pub struct SstFileWriter {
    path: PathBuf,
    builder: Option<TableBuilder<Box<dyn WritableFile>>>,
    /// The internal key being added (reused: no allocation per entry).
    key_buf: Vec<u8>,
    range_deletions: Vec<RangeTombstone>,
    entries: u64,
    fs: std::sync::Arc<dyn crate::base::fs::FileSystem>,
}

impl std::fmt::Debug for SstFileWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SstFileWriter")
            .field("path", &self.path)
            .field("entries", &self.entries)
            .field("finished", &self.builder.is_none())
            .finish()
    }
}

impl SstFileWriter {
    /// Creates the file at `path` (through `options.fs`), to be written with the table options
    /// of a keyspace opened with `options`: block size, compression and filter policy of the
    /// bottom level (where an ingested file usually lands), partitioned index and filters if
    /// configured. The filter is sized from the exact key count when the file is finished.
    pub fn create(path: impl AsRef<Path>, options: &Options) -> Result<SstFileWriter> {
        options.validate()?;
        let path = path.as_ref().to_path_buf();
        // Writeback started every `bytes_per_sync` bytes, as for a flush's table: the sync at
        // `finish` then waits for the last stretch only, not the whole file.
        let file = crate::base::writeback::every(options.fs.create(&path)?, options.bytes_per_sync);
        let bottom = crate::base::options::MAX_LEVELS - 1;
        let build = options.table_build_options(bottom, external_filter(options, bottom));
        Ok(SstFileWriter {
            path,
            builder: Some(TableBuilder::new(file, build)),
            key_buf: Vec::new(),
            range_deletions: Vec::new(),
            entries: 0,
            fs: std::sync::Arc::clone(&options.fs),
        })
    }

    /// Adds `key` with `value`. Keys must be strictly increasing (bytewise).
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.add(key.as_ref(), ValueKind::Put, value.as_ref())
    }

    /// Adds a deletion of `key` (it hides older versions of `key` in the database).
    pub fn delete(&mut self, key: impl AsRef<[u8]>) -> Result<()> {
        self.add(key.as_ref(), ValueKind::Delete, &[])
    }

    /// Adds a merge operand for `key` (the ingesting keyspace needs a merge operator).
    pub fn merge(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.add(key.as_ref(), ValueKind::Merge, value.as_ref())
    }

    /// Deletes `[start, end)` (older versions in the database; the file's own entries in the
    /// range are newer and stay). Range deletions may come in any order, before, between or
    /// after the point entries.
    pub fn delete_range(&mut self, start: impl AsRef<[u8]>, end: impl AsRef<[u8]>) -> Result<()> {
        let (start, end) = (start.as_ref(), end.as_ref());
        self.check_open()?;
        check_key(start)?;
        check_key(end)?;
        if start >= end {
            return Err(Error::InvalidArgument(
                "delete_range: start must be below end".to_string(),
            ));
        }
        self.range_deletions
            .push(RangeTombstone::new(start, end, 0));
        Ok(())
    }

    /// Bytes written so far (an estimate until [`SstFileWriter::finish`]).
    pub fn file_size(&self) -> u64 {
        self.builder.as_ref().map_or(0, |b| b.estimated_size())
    }

    /// Writes the filter, index and footer, syncs the file and its directory, and says what
    /// it holds. A file with
    /// no entry and no range deletion is refused (and left unfinished). Calls after a
    /// successful `finish` are refused.
    pub fn finish(&mut self) -> Result<ExternalFileInfo> {
        self.check_open()?;
        if self.entries == 0 && self.range_deletions.is_empty() {
            return Err(Error::InvalidArgument(
                "an external file needs at least one entry or range deletion".to_string(),
            ));
        }
        let mut builder = self
            .builder
            .take()
            .ok_or_else(|| Error::InvalidArgument("the file is finished".to_string()))?;
        let deletions = self.range_deletions.len() as u64;
        if deletions > 0 {
            let tombstones = FragmentedRangeTombstones::new(self.range_deletions.drain(..));
            builder.set_range_tombstones(tombstones);
        }
        let (meta, mut file) = builder.finish_into()?;
        file.sync()?;
        // The name too: a file that a power loss can take back is no file to hand over.
        if let Some(parent) = self.path.parent().filter(|p| !p.as_os_str().is_empty()) {
            self.fs.sync_dir(parent)?;
        }
        let user_key = |encoded: &[u8]| -> Result<Vec<u8>> {
            InternalKey::from_encoded(encoded.to_vec())
                .map(|k| k.user_key().to_vec())
                .ok_or_else(|| Error::corruption("external file written without keys"))
        };
        Ok(ExternalFileInfo {
            file_path: self.path.clone(),
            smallest_key: user_key(&meta.properties.smallest_key)?,
            largest_key: user_key(&meta.properties.largest_key)?,
            sequence_number: 0,
            file_size: meta.file_size,
            num_entries: self.entries,
            num_range_del_entries: deletions,
        })
    }

    fn add(&mut self, key: &[u8], kind: ValueKind, value: &[u8]) -> Result<()> {
        self.check_open()?;
        check_key(key)?;
        if value.len() > MAX_VALUE_SIZE {
            return Err(Error::InvalidArgument(format!(
                "value of {} bytes is over the limit of {MAX_VALUE_SIZE}",
                value.len()
            )));
        }
        let builder = self
            .builder
            .as_mut()
            .ok_or_else(|| Error::InvalidArgument("the file is finished".to_string()))?;
        self.key_buf.clear();
        self.key_buf.extend_from_slice(key);
        self.key_buf
            .extend_from_slice(&siftdb_sstable::pack_trailer(0, kind).to_le_bytes());
        // The builder refuses a key not above the last one (one comparison, not two).
        builder
            .add_distinct(&self.key_buf, value)
            .map_err(|e| match e {
                siftdb_sstable::SstError::OutOfOrder(keys) => Error::InvalidArgument(format!(
                    "keys must be added in strictly increasing order: {keys}"
                )),
                other => other.into(),
            })?;
        self.entries += 1;
        Ok(())
    }

    fn check_open(&self) -> Result<()> {
        match self.builder {
            Some(_) => Ok(()),
            None => Err(Error::InvalidArgument("the file is finished".to_string())),
        }
    }
}

fn check_key(key: &[u8]) -> Result<()> {
    if key.len() > MAX_KEY_SIZE {
        return Err(Error::InvalidArgument(format!(
            "key of {} bytes is over the limit of {MAX_KEY_SIZE}",
            key.len()
        )));
    }
    Ok(())
}

/// The filter of an external file: the policy's kind for `level` at the tree's average bits per
/// key (there is no tree to plan against), none when the options write no filters.
fn external_filter(options: &Options, level: usize) -> TableFilter {
    if options.filter_bits_per_key <= 0.0 {
        return TableFilter::omitted(crate::core::filter_plan::DISABLED);
    }
    TableFilter {
        spec: Some(FilterSpec {
            kind: options.filter_policy().kind_for_level(level),
            bits_per_key: options.filter_bits_per_key,
        }),
        omitted: "",
    }
}
