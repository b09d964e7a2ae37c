//! [`BlobFileWriter`]: appends values to a new blob file.

use std::io::Write;

use super::{
    BlobReference, BLOB_FORMAT_VERSION, BLOB_HEADER_LEN, BLOB_MAGIC, BLOB_RECORD_HEADER_LEN,
};
use crate::compression::Compression;
use crate::error::{Result, SstError};

/// What a finished blob file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlobFileMeta {
    /// Records (values) written.
    pub records: u64,
    /// The values' bytes before compression.
    pub value_bytes: u64,
    /// The file's size, header and footer included.
    pub file_size: u64,
}

/// Writes a blob file: the header at creation, a record per [`BlobFileWriter::add`], the
/// footer at [`BlobFileWriter::finish`]. Syncing is the caller's, on the sink `finish`
/// hands back.
pub struct BlobFileWriter<W: Write> {
    out: W,
    name: String,
    number: u64,
    compression: Compression,
    offset: u64,
    records: u64,
    value_bytes: u64,
}

impl<W: Write> BlobFileWriter<W> {
    /// Starts blob file `number` (named `name` in errors) for keyspace `keyspace` on `out`,
    /// compressing values with `compression` where that saves bytes.
    pub fn new(
        mut out: W,
        name: impl Into<String>,
        number: u64,
        keyspace: u32,
        compression: Compression,
    ) -> Result<Self> {
        let name = name.into();
        let mut header = Vec::with_capacity(BLOB_HEADER_LEN);
        header.extend_from_slice(&BLOB_MAGIC.to_le_bytes());
        header.extend_from_slice(&BLOB_FORMAT_VERSION.to_le_bytes());
        header.extend_from_slice(&keyspace.to_le_bytes());
        header.push(compression.byte());
        header.extend_from_slice(&[0; 3]);
        let crc = crc32fast::hash(&header);
        header.extend_from_slice(&crc.to_le_bytes());
        out.write_all(&header)
            .map_err(|source| io_error(&name, source))?;
        Ok(BlobFileWriter {
            out,
            name,
            number,
            compression,
            offset: BLOB_HEADER_LEN as u64,
            records: 0,
            value_bytes: 0,
        })
    }

    /// Appends `value` (with its `key`, for garbage collection) and returns where it is.
    pub fn add(&mut self, key: &[u8], value: &[u8]) -> Result<BlobReference> {
        let key_len = u32::try_from(key.len())
            .map_err(|_| SstError::InvalidArgument("blob key over 4 GiB".to_string()))?;
        let (stored, compression) = match self.compression.compress(value) {
            Some(compressed) => (std::borrow::Cow::Owned(compressed), self.compression),
            None => (std::borrow::Cow::Borrowed(value), Compression::None),
        };
        let checksum = crc32fast::hash(&stored);
        let mut header = Vec::with_capacity(BLOB_RECORD_HEADER_LEN);
        header.extend_from_slice(&key_len.to_le_bytes());
        header.extend_from_slice(&(stored.len() as u64).to_le_bytes());
        header.push(compression.byte());
        header.extend_from_slice(&checksum.to_le_bytes());
        let header_crc = record_header_crc(&header, key);
        header.extend_from_slice(&header_crc.to_le_bytes());
        for part in [&header[..], key, &stored] {
            self.out
                .write_all(part)
                .map_err(|source| io_error(&self.name, source))?;
        }
        let reference = BlobReference {
            file_number: self.number,
            offset: self.offset + (BLOB_RECORD_HEADER_LEN + key.len()) as u64,
            size: stored.len() as u64,
            checksum,
            compression,
        };
        self.offset = reference.offset + reference.size;
        self.records += 1;
        self.value_bytes += value.len() as u64;
        Ok(reference)
    }

    /// Bytes written so far (what the file holds without its footer).
    pub fn file_size(&self) -> u64 {
        self.offset
    }

    /// Writes the footer and hands back the sink (flushed) with what the file holds.
    pub fn finish(mut self) -> Result<(BlobFileMeta, W)> {
        let mut footer = Vec::with_capacity(super::BLOB_FOOTER_LEN);
        footer.extend_from_slice(&self.records.to_le_bytes());
        footer.extend_from_slice(&self.value_bytes.to_le_bytes());
        footer.extend_from_slice(&BLOB_MAGIC.to_le_bytes());
        let crc = crc32fast::hash(&footer);
        footer.extend_from_slice(&crc.to_le_bytes());
        self.out
            .write_all(&footer)
            .and_then(|()| self.out.flush())
            .map_err(|source| io_error(&self.name, source))?;
        let meta = BlobFileMeta {
            records: self.records,
            value_bytes: self.value_bytes,
            file_size: self.offset + footer.len() as u64,
        };
        Ok((meta, self.out))
    }
}

/// The checksum of a record header's first 17 bytes and the key after it.
pub(super) fn record_header_crc(header: &[u8], key: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&header[..BLOB_RECORD_HEADER_LEN - 4]);
    h.update(key);
    h.finalize()
}

pub(super) fn io_error(name: &str, source: std::io::Error) -> SstError {
    SstError::Io {
        file: name.to_string(),
        source,
    }
}
