//! [`BlobFileReader`]: reads values of a blob file by reference, and walks its records.

use super::writer::{io_error, record_header_crc};
use super::{
    BlobReference, BLOB_FOOTER_LEN, BLOB_FORMAT_VERSION, BLOB_HEADER_LEN, BLOB_MAGIC,
    BLOB_RECORD_HEADER_LEN,
};
use crate::compression::Compression;
use crate::error::{Result, SstError};
use crate::file::RandomAccessFile;

/// One record of a blob file, as [`BlobFileReader::records`] walks them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobRecord {
    /// The key the value was written under.
    pub key: Vec<u8>,
    /// Where the value is.
    pub reference: BlobReference,
}

/// An open blob file: its header and footer checked at open.
pub struct BlobFileReader {
    file: Box<dyn RandomAccessFile>,
    name: String,
    number: u64,
    keyspace: u32,
    records: u64,
    value_bytes: u64,
}

impl std::fmt::Debug for BlobFileReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlobFileReader")
            .field("name", &self.name)
            .field("number", &self.number)
            .field("records", &self.records)
            .finish()
    }
}

impl BlobFileReader {
    /// Opens blob file `number` (named `name` in errors), checking its header and footer.
    pub fn open(
        file: Box<dyn RandomAccessFile>,
        number: u64,
        name: impl Into<String>,
    ) -> Result<BlobFileReader> {
        let name = name.into();
        let size = file.size();
        let corrupt = |offset: u64, reason: &str| SstError::Corruption {
            file: name.clone(),
            offset,
            reason: reason.to_string(),
        };
        if size < (BLOB_HEADER_LEN + BLOB_FOOTER_LEN) as u64 {
            return Err(corrupt(0, "blob file shorter than its header and footer"));
        }
        let header = read_exact(file.as_ref(), &name, 0, BLOB_HEADER_LEN)?;
        check_crc(&header, &name, 0)?;
        if u64_at(&header, 0) != BLOB_MAGIC {
            return Err(corrupt(0, "not a blob file (bad magic)"));
        }
        let version = u32_at(&header, 8);
        if version != BLOB_FORMAT_VERSION {
            return Err(SstError::UnsupportedVersion {
                file: name.clone(),
                version,
            });
        }
        let footer_at = size - BLOB_FOOTER_LEN as u64;
        let footer = read_exact(file.as_ref(), &name, footer_at, BLOB_FOOTER_LEN)?;
        check_crc(&footer, &name, footer_at)?;
        if u64_at(&footer, 16) != BLOB_MAGIC {
            return Err(corrupt(footer_at, "blob file footer without its magic"));
        }
        Ok(BlobFileReader {
            keyspace: u32_at(&header, 12),
            records: u64_at(&footer, 0),
            value_bytes: u64_at(&footer, 8),
            file,
            name,
            number,
        })
    }

    /// The keyspace id the file was written for.
    pub fn keyspace(&self) -> u32 {
        self.keyspace
    }

    /// Records the footer counts.
    pub fn record_count(&self) -> u64 {
        self.records
    }

    /// The values' bytes before compression, as the footer counts them.
    pub fn value_bytes(&self) -> u64 {
        self.value_bytes
    }

    /// The value `reference` names, read with one positioned read and checked against its
    /// checksum. A reference to another file is refused; one outside the records, a checksum
    /// mismatch or undecodable bytes are corruption naming this file and the offset.
    pub fn get(&self, reference: &BlobReference) -> Result<Vec<u8>> {
        if reference.file_number != self.number {
            return Err(SstError::InvalidArgument(format!(
                "blob reference to file {} read from {}",
                reference.file_number, self.name
            )));
        }
        let records_end = self.file.size() - BLOB_FOOTER_LEN as u64;
        let end = reference.offset.checked_add(reference.size);
        let inside = reference.offset >= (BLOB_HEADER_LEN + BLOB_RECORD_HEADER_LEN) as u64
            && end.is_some_and(|e| e <= records_end);
        let len = usize::try_from(reference.size).ok().filter(|_| inside);
        let Some(len) = len else {
            return Err(self.corruption(reference.offset, "blob reference outside the records"));
        };
        let stored = read_exact(self.file.as_ref(), &self.name, reference.offset, len)?;
        let got = crc32fast::hash(&stored);
        if got != reference.checksum {
            return Err(SstError::ChecksumMismatch {
                file: self.name.clone(),
                offset: reference.offset,
                got,
                expected: reference.checksum,
            });
        }
        reference
            .compression
            .decompress(&stored)
            .map_err(|reason| self.corruption(reference.offset, reason))
    }

    /// The records in file order, each checked (its header checksum covers the key); the walk
    /// ends with an error at the first damage, or if the count differs from the footer's.
    pub fn records(&self) -> impl Iterator<Item = Result<BlobRecord>> + '_ {
        let records_end = self.file.size() - BLOB_FOOTER_LEN as u64;
        let mut pos = BLOB_HEADER_LEN as u64;
        let mut seen = 0u64;
        let mut done = false;
        std::iter::from_fn(move || {
            if done {
                return None;
            }
            if pos >= records_end {
                done = true;
                return (seen != self.records).then(|| {
                    Err(self.corruption(records_end, "record count differs from the footer's"))
                });
            }
            match self.record_at(pos, records_end) {
                Ok(record) => {
                    pos = record.reference.offset + record.reference.size;
                    seen += 1;
                    Some(Ok(record))
                }
                Err(e) => {
                    done = true;
                    Some(Err(e))
                }
            }
        })
    }

    /// The record whose header starts at `pos`, checked; it must end by `records_end`.
    fn record_at(&self, pos: u64, records_end: u64) -> Result<BlobRecord> {
        let header_end = pos + BLOB_RECORD_HEADER_LEN as u64;
        if header_end > records_end {
            return Err(self.corruption(pos, "blob record header cut off"));
        }
        let header = read_exact(self.file.as_ref(), &self.name, pos, BLOB_RECORD_HEADER_LEN)?;
        let key_len = u32_at(&header, 0) as u64;
        let size = u64_at(&header, 4);
        let value_at = header_end.checked_add(key_len);
        let fits = value_at
            .and_then(|v| v.checked_add(size))
            .is_some_and(|end| end <= records_end);
        if !fits {
            return Err(self.corruption(pos, "blob record runs past the records"));
        }
        let key = read_exact(self.file.as_ref(), &self.name, header_end, key_len as usize)?;
        let expected = u32_at(&header, 17);
        if record_header_crc(&header, &key) != expected {
            return Err(self.corruption(pos, "blob record header checksum mismatch"));
        }
        let compression = Compression::from_byte(header[12])
            .ok_or_else(|| self.corruption(pos, "blob record with an unknown compression"))?;
        Ok(BlobRecord {
            key,
            reference: BlobReference {
                file_number: self.number,
                offset: header_end + key_len,
                size,
                checksum: u32_at(&header, 13),
                compression,
            },
        })
    }

    fn corruption(&self, offset: u64, reason: impl Into<String>) -> SstError {
        SstError::Corruption {
            file: self.name.clone(),
            offset,
            reason: reason.into(),
        }
    }
}

/// `len` bytes at `offset`: fewer (a file system that does not keep `read_at`'s promise) is
/// corruption, not a panic later.
fn read_exact(file: &dyn RandomAccessFile, name: &str, offset: u64, len: usize) -> Result<Vec<u8>> {
    let bytes = file
        .read_at(offset, len)
        .map_err(|source| io_error(name, source))?;
    if bytes.len() != len {
        return Err(SstError::Corruption {
            file: name.to_string(),
            offset,
            reason: format!("read {} bytes of {len}", bytes.len()),
        });
    }
    Ok(bytes)
}

/// Checks that the last 4 bytes of `bytes` are the CRC32 of the rest.
fn check_crc(bytes: &[u8], name: &str, offset: u64) -> Result<()> {
    let split = bytes.len() - 4;
    let got = crc32fast::hash(&bytes[..split]);
    let expected = u32_at(bytes, split);
    if got != expected {
        return Err(SstError::ChecksumMismatch {
            file: name.to_string(),
            offset,
            got,
            expected,
        });
    }
    Ok(())
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(b)
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(b)
}
