//! Key-value pairs in key order written into table files of about [`FILE_BYTES`] each
//! (`SstFileWriter`): how a leader carries its state in a snapshot, and how a follower stages
//! the entries of an old (version 1) snapshot file for ingestion.

use std::path::{Path, PathBuf};

use crate::Error;

/// A table file is finished once it holds this much.
pub(crate) const FILE_BYTES: u64 = 64 << 20;

/// Writes pairs into `<dir>/<n>.sst` files.
pub(crate) struct TableSink<'a> {
    dir: &'a Path,
    options: &'a siftdb::Options,
    files: Vec<PathBuf>,
    writer: Option<siftdb::SstFileWriter>,
}

impl<'a> TableSink<'a> {
    /// Files go into `dir` (which exists), named after the files already listed in `files`.
    pub(crate) fn new(dir: &'a Path, options: &'a siftdb::Options) -> Self {
        TableSink {
            dir,
            options,
            files: Vec::new(),
            writer: None,
        }
    }

    /// The path the next file gets.
    pub(crate) fn next_path(&mut self) -> PathBuf {
        let path = self.dir.join(format!("{}.sst", self.files.len()));
        self.files.push(path.clone());
        path
    }

    /// Appends a pair (keys strictly increasing across calls).
    pub(crate) fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), Error> {
        let writer = match self.writer.as_mut() {
            Some(w) => w,
            None => {
                let path = self.next_path();
                self.writer
                    .insert(siftdb::SstFileWriter::create(&path, self.options)?)
            }
        };
        writer.put(key, value)?;
        if writer.file_size() >= FILE_BYTES {
            self.finish_file()?;
        }
        Ok(())
    }

    /// Finishes the file being written, if any (the next pair starts a new one).
    pub(crate) fn finish_file(&mut self) -> Result<(), Error> {
        if let Some(mut w) = self.writer.take() {
            w.finish()?;
        }
        Ok(())
    }

    /// Finishes the last file; returns every file's path, in key order.
    pub(crate) fn finish(mut self) -> Result<Vec<PathBuf>, Error> {
        self.finish_file()?;
        Ok(self.files)
    }
}
