//! `SstFileReader`: the entries of a table file outside any database (RocksDB's
//! `SstFileReader`), for checking what an [`SstFileWriter`](crate::SstFileWriter) wrote, or
//! reading a file shipped between nodes before (or instead of) ingesting it.

use std::path::Path;
use std::sync::Arc;

use siftdb_cache::CacheOptions;
use siftdb_sstable::{
    ParsedKey, ReadMode, Table, TableCache, TableIter, TableIterOptions, TableReadOptions,
    ValueKind,
};

use crate::base::error::{Corruption, Error, Result};
use crate::base::options::Options;

/// What one point entry of a table file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SstEntryKind {
    /// A value (`SstFileWriter::put`).
    Put,
    /// A tombstone (`SstFileWriter::delete`).
    Delete,
    /// A merge operand (`SstFileWriter::merge`).
    Merge,
}

/// One point entry of a table file, in key order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SstEntry {
    /// The user key.
    pub key: Vec<u8>,
    /// Its sequence number in the file (0 in files `SstFileWriter` wrote).
    pub sequence: u64,
    /// What the entry is.
    pub kind: SstEntryKind,
    /// The value or merge operand (empty for a tombstone).
    pub value: Vec<u8>,
}

/// Reads a table file's entries, each block's checksum checked as it is read.
///
/// ```
/// use siftdb::{Options, SstEntryKind, SstFileReader, SstFileWriter};
/// let dir = tempfile::tempdir()?;
/// let file = dir.path().join("load.sst");
/// let mut writer = SstFileWriter::create(&file, &Options::default())?;
/// writer.put(b"apple", b"red")?;
/// writer.delete(b"banana")?;
/// writer.finish()?;
///
/// let reader = SstFileReader::open(&file, &Options::default())?;
/// let entries: Vec<_> = reader.iter().collect::<Result<_, _>>()?;
/// assert_eq!(entries[0].key, b"apple");
/// assert_eq!(entries[1].kind, SstEntryKind::Delete);
/// # Ok::<(), siftdb::Error>(())
/// ```
pub struct SstFileReader {
    table: Arc<Table>,
}

impl std::fmt::Debug for SstFileReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SstFileReader")
            .field("entries", &self.num_entries())
            .finish_non_exhaustive()
    }
}

/// Blocks a reader keeps: it reads each once, in order.
const READER_CACHE_BYTES: usize = 4 << 20;

impl SstFileReader {
    /// Opens the table file at `path` (through `options.fs`, read with `options`' filter
    /// hasher and prefix extractor). A file that is not a table is a `Corruption`.
    pub fn open(path: impl AsRef<Path>, options: &Options) -> Result<SstFileReader> {
        let path = path.as_ref();
        let file = options.fs.open_random(path, ReadMode::Pread)?;
        let read = TableReadOptions {
            key_hasher: options.filter_hasher,
            prefix_extractor: options.prefix_extractor.clone(),
            ..TableReadOptions::default()
        };
        let cache = Arc::new(TableCache::new(CacheOptions::new(READER_CACHE_BYTES)));
        let table = Table::open(file, 0, path.display().to_string(), cache, read)?;
        Ok(SstFileReader {
            table: Arc::new(table),
        })
    }

    /// Point entries in the file (range deletions not counted).
    pub fn num_entries(&self) -> u64 {
        self.table.properties().entries
    }

    /// The point entries in key order. A damaged block ends the iteration with a
    /// `Corruption`.
    pub fn iter(&self) -> SstFileIter {
        let mut it = self.table.iter_with(TableIterOptions {
            fill_cache: false,
            read_once: true,
            ..TableIterOptions::default()
        });
        it.seek_to_first();
        SstFileIter {
            it,
            name: self.table.name().to_string(),
            done: false,
        }
    }

    /// Reads every entry, checking every block's checksum (RocksDB's `VerifyChecksum`).
    pub fn verify_checksum(&self) -> Result<()> {
        self.iter().try_for_each(|e| e.map(|_| ()))
    }
}

/// The entries of an [`SstFileReader`], in key order.
pub struct SstFileIter {
    it: TableIter,
    name: String,
    done: bool,
}

impl std::fmt::Debug for SstFileIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SstFileIter")
            .field("file", &self.name)
            .finish_non_exhaustive()
    }
}

impl Iterator for SstFileIter {
    type Item = Result<SstEntry>;

    fn next(&mut self) -> Option<Result<SstEntry>> {
        if self.done {
            return None;
        }
        if !self.it.valid() {
            self.done = true;
            return self.it.take_error().map(|e| Err(Error::from(e)));
        }
        let entry = self.entry();
        self.it.next();
        if entry.is_err() {
            self.done = true;
        }
        Some(entry)
    }
}

impl SstFileIter {
    /// The entry the table iterator is at.
    fn entry(&self) -> Result<SstEntry> {
        let bad = |reason: &str| Error::Corruption(Corruption::in_file(&self.name, reason));
        let parsed = ParsedKey::parse(self.it.key()).ok_or_else(|| bad("undecodable key"))?;
        let kind = match parsed.kind {
            ValueKind::Put => SstEntryKind::Put,
            ValueKind::Delete => SstEntryKind::Delete,
            ValueKind::Merge => SstEntryKind::Merge,
            other => return Err(bad(&format!("an entry of kind {other:?}"))),
        };
        Ok(SstEntry {
            key: parsed.user_key.to_vec(),
            sequence: parsed.sequence,
            kind,
            value: self.it.value().to_vec(),
        })
    }
}
