//! `SstFileWriter` (rust-rocksdb's): a table file written outside a database, for
//! `DB::ingest_external_file`; siftdb's [`siftdb::SstFileWriter`] underneath.

use std::path::Path;

use crate::{Error, Options};

/// Writes a table file of sorted keys (RocksDB's `SstFileWriter`): [`create`](Self::create)
/// with the options of the database that will ingest it, [`open`](Self::open) a path, add keys
/// in increasing order, [`finish`](Self::finish).
pub struct SstFileWriter<'a> {
    options: &'a Options,
    writer: Option<siftdb::SstFileWriter>,
    file_size: u64,
}

impl<'a> SstFileWriter<'a> {
    /// A writer of tables for a database opened with `opts`.
    pub fn create(opts: &'a Options) -> Self {
        SstFileWriter {
            options: opts,
            writer: None,
            file_size: 0,
        }
    }

    /// Creates the file at `path`. Options siftdb cannot honour (a timestamp comparator, ...)
    /// are refused here, as the open of a database with them is.
    pub fn open<P: AsRef<Path>>(&mut self, path: P) -> Result<(), Error> {
        if let Some(refused) = &self.options.refused {
            return Err(refused.clone());
        }
        self.writer = Some(siftdb::SstFileWriter::create(
            path,
            self.options.as_siftdb(),
        )?);
        self.file_size = 0;
        Ok(())
    }

    fn writer(&mut self) -> Result<&mut siftdb::SstFileWriter, Error> {
        self.writer
            .as_mut()
            .ok_or_else(|| Error::invalid("SstFileWriter: open a file first"))
    }

    /// Adds `key` = `value` (keys in increasing order).
    pub fn put<K: AsRef<[u8]>, V: AsRef<[u8]>>(&mut self, key: K, value: V) -> Result<(), Error> {
        Ok(self.writer()?.put(key, value)?)
    }

    /// Adds a merge operand of `key`.
    pub fn merge<K: AsRef<[u8]>, V: AsRef<[u8]>>(&mut self, key: K, value: V) -> Result<(), Error> {
        Ok(self.writer()?.merge(key, value)?)
    }

    /// Adds a deletion of `key`.
    pub fn delete<K: AsRef<[u8]>>(&mut self, key: K) -> Result<(), Error> {
        Ok(self.writer()?.delete(key)?)
    }

    /// Adds a deletion of `[begin, end)`; a reversed range is `Invalid argument`.
    pub fn delete_range<K: AsRef<[u8]>>(&mut self, begin: K, end: K) -> Result<(), Error> {
        Ok(self.writer()?.delete_range(begin, end)?)
    }

    /// A put with a user-defined timestamp: siftdb has none (`NotSupported`).
    pub fn put_with_ts<K: AsRef<[u8]>, V: AsRef<[u8]>, S: AsRef<[u8]>>(
        &mut self,
        key: K,
        ts: S,
        value: V,
    ) -> Result<(), Error> {
        let _ = (key, ts, value);
        Err(Error::not_supported("user-defined timestamps"))
    }

    /// A deletion with a user-defined timestamp: siftdb has none (`NotSupported`).
    pub fn delete_with_ts<K: AsRef<[u8]>, S: AsRef<[u8]>>(
        &mut self,
        key: K,
        ts: S,
    ) -> Result<(), Error> {
        let _ = (key, ts);
        Err(Error::not_supported("user-defined timestamps"))
    }

    /// Writes the index, filter and footer and syncs the file.
    pub fn finish(&mut self) -> Result<(), Error> {
        let info = self.writer()?.finish()?;
        self.file_size = info.file_size;
        Ok(())
    }

    /// The file's size: its final size once finished, an estimate before.
    pub fn file_size(&self) -> u64 {
        match &self.writer {
            Some(w) if self.file_size == 0 => w.file_size(),
            _ => self.file_size,
        }
    }
}
