//! Blob files as the jobs write and open them: a flush separates large values into blob files
//! (key-value separation), and a live blob file is opened for reads.

use std::collections::BTreeMap;
use std::sync::Arc;

use siftdb_sstable::blob::{BlobFileReader, BlobFileWriter, BlobIndex};
use siftdb_sstable::{InternalKey, ParsedKey, ValueKind};

use crate::base::error::{Error, Result};
use crate::base::fs::{names, WritableFile};
use crate::base::options::Options;
use crate::base::version_edit::{BlobMeta, BlobRefs};
use crate::core::blob_file::BlobFile;
use crate::core::shared::Shared;

/// Where a job puts the values it separates: blob files of about `blob_file_size`, numbered as
/// pending outputs (so that no cleanup deletes them before the manifest names them), synced by
/// [`BlobSink::finish`].
pub(crate) struct BlobSink<'a> {
    db: &'a Shared,
    min_blob_size: usize,
    blob_file_size: u64,
    compression: siftdb_sstable::Compression,
    keyspace: u32,
    current: Option<OpenBlob>,
    finished: Vec<(BlobMeta, Box<dyn WritableFile>)>,
    numbers: Vec<u64>,
}

struct OpenBlob {
    number: u64,
    writer: BlobFileWriter<Box<dyn WritableFile>>,
    stored_bytes: u64,
}

impl<'a> BlobSink<'a> {
    /// A sink for keyspace `keyspace` with `options`, or `None` if it keeps values inline.
    pub(crate) fn for_options(db: &'a Shared, options: &Options, keyspace: u32) -> Option<Self> {
        options
            .enable_blob_files
            .then(|| BlobSink::new(db, options, keyspace))
    }

    /// A sink for keyspace `keyspace` writing blob files as `options` say.
    pub(crate) fn new(db: &'a Shared, options: &Options, keyspace: u32) -> Self {
        BlobSink {
            db,
            min_blob_size: options.min_blob_size,
            blob_file_size: options.blob_file_size,
            compression: options.blob_compression_type,
            keyspace,
            current: None,
            finished: Vec::new(),
            numbers: Vec::new(),
        }
    }

    /// The file numbers the sink has taken (to give back if the job fails).
    pub(crate) fn numbers(&self) -> &[u64] {
        &self.numbers
    }

    /// The entry to store for `key` (an internal key) and `value`: a value of at least
    /// `min_blob_size` bytes (an expiring one without its expiry time) goes to a blob file and
    /// its blob index takes its place; anything else is kept as it is (`None`).
    pub(crate) fn separate(
        &mut self,
        key: &[u8],
        value: &[u8],
    ) -> Result<Option<(InternalKey, Vec<u8>)>> {
        let parsed = ParsedKey::parse(key)
            .ok_or_else(|| Error::corruption("undecodable internal key in a flush"))?;
        let (expiry, inline) = match parsed.kind {
            ValueKind::Put => (None, value),
            ValueKind::ExpiringPut => {
                let (expiry, inline) = crate::base::ttl::decode(value).ok_or_else(|| {
                    Error::corruption("an expiring value is shorter than its expiry time")
                })?;
                (Some(expiry), inline)
            }
            _ => return Ok(None),
        };
        if inline.len() < self.min_blob_size {
            return Ok(None);
        }
        let reference = self.add(parsed.user_key, inline)?;
        let index = BlobIndex { reference, expiry };
        let key = InternalKey::new(parsed.user_key, parsed.sequence, ValueKind::BlobIndex);
        Ok(Some((key, index.encode())))
    }

    /// Writes `value` of `user_key` (read from an older blob file by garbage collection) to
    /// this sink's current file.
    pub(crate) fn relocate(
        &mut self,
        user_key: &[u8],
        value: &[u8],
    ) -> Result<siftdb_sstable::blob::BlobReference> {
        self.db
            .counters()
            .blob_bytes_relocated
            .fetch_add(value.len() as u64, std::sync::atomic::Ordering::Relaxed);
        self.add(user_key, value)
    }

    fn add(
        &mut self,
        user_key: &[u8],
        value: &[u8],
    ) -> Result<siftdb_sstable::blob::BlobReference> {
        if self
            .current
            .as_ref()
            .is_some_and(|c| c.writer.file_size() >= self.blob_file_size)
        {
            self.finish_current()?;
        }
        if self.current.is_none() {
            self.current = Some(self.start()?);
        }
        let Some(open) = self.current.as_mut() else {
            return Err(Error::corruption("blob file not started"));
        };
        let reference = open.writer.add(user_key, value)?;
        open.stored_bytes += reference.size;
        Ok(reference)
    }

    fn start(&mut self) -> Result<OpenBlob> {
        let number = self.db.versions().new_output();
        self.numbers.push(number);
        let path = names::blob(self.db.dir(), number);
        let file = self
            .db
            .create_output(&path, crate::base::rate_limiter::IoPriority::High)?;
        let name = path.display().to_string();
        let writer = BlobFileWriter::new(file, name, number, self.keyspace, self.compression)?;
        Ok(OpenBlob {
            number,
            writer,
            stored_bytes: 0,
        })
    }

    fn finish_current(&mut self) -> Result<()> {
        let Some(open) = self.current.take() else {
            return Ok(());
        };
        let (meta, file) = open.writer.finish()?;
        let blob = BlobMeta {
            number: open.number,
            records: meta.records,
            stored_bytes: open.stored_bytes,
            file_size: meta.file_size,
        };
        self.finished.push((blob, file));
        Ok(())
    }

    /// Finishes the last file and syncs every file written (their directory entries are left
    /// to the caller's directory sync, before the manifest names them).
    pub(crate) fn finish(mut self) -> Result<Vec<BlobMeta>> {
        self.finish_current()?;
        let mut metas = Vec::with_capacity(self.finished.len());
        for (meta, mut file) in self.finished {
            file.sync()?;
            self.db
                .counters()
                .blob_bytes_written
                .fetch_add(meta.file_size, std::sync::atomic::Ordering::Relaxed);
            metas.push(meta);
        }
        Ok(metas)
    }
}

/// Counts a table's references into blob files as its entries are added.
#[derive(Debug, Default)]
pub(crate) struct BlobRefCounter {
    refs: BTreeMap<u64, (u64, u64)>,
}

impl BlobRefCounter {
    /// Counts the entry `key` / `value` if it is a blob index.
    pub(crate) fn observe(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        let Some(parsed) = ParsedKey::parse(key) else {
            return Ok(());
        };
        if parsed.kind != ValueKind::BlobIndex {
            return Ok(());
        }
        let index = crate::core::blob_file::decode_index(parsed.user_key, value)?;
        let entry = self.refs.entry(index.reference.file_number).or_default();
        entry.0 += 1;
        entry.1 += index.reference.size;
        Ok(())
    }

    /// The counts so far, ascending by blob file, and a fresh start.
    pub(crate) fn take(&mut self) -> Vec<BlobRefs> {
        std::mem::take(&mut self.refs)
            .into_iter()
            .map(|(file, (count, bytes))| BlobRefs { file, count, bytes })
            .collect()
    }
}

/// Opens live blob file `meta` of the database (its header and footer checked); a missing file
/// is corruption, like a missing table.
pub(crate) fn open_blob_file(db: &Shared, meta: &BlobMeta) -> Result<Arc<BlobFile>> {
    let path = names::blob(db.dir(), meta.number);
    let file = db.files().open_table_file(path.clone()).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Error::corruption(format!("live blob file {} is missing", path.display()))
        } else {
            Error::Io(e)
        }
    })?;
    let reader = BlobFileReader::open(file, meta.number, path.display().to_string())?;
    let live = db.live_tables().register_blob(meta.number);
    Ok(Arc::new(BlobFile::new(
        *meta,
        db.cache_id(meta.number),
        reader,
        Some(live),
    )))
}
