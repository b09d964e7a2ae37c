//! [`BlobReference`]: what a table stores in place of a value kept in a blob file.

use crate::coding::{get_varint, put_varint};
use crate::compression::Compression;

/// Where a value kept in a blob file is, and how to check and decode it: the bytes stored at
/// `offset` (`size` of them, as written: compressed with `compression`) have CRC32 `checksum`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlobReference {
    /// The blob file's number.
    pub file_number: u64,
    /// Offset of the stored value bytes in the file.
    pub offset: u64,
    /// Stored (possibly compressed) length in bytes.
    pub size: u64,
    /// CRC32 of the stored bytes.
    pub checksum: u32,
    /// How the stored bytes are compressed.
    pub compression: Compression,
}

impl BlobReference {
    /// The encoding: varint file number, offset and size, the checksum (4 bytes,
    /// little-endian), the compression byte.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(24);
        put_varint(&mut out, self.file_number);
        put_varint(&mut out, self.offset);
        put_varint(&mut out, self.size);
        out.extend_from_slice(&self.checksum.to_le_bytes());
        out.push(self.compression.byte());
        out
    }

    /// Decodes [`BlobReference::encode`]'s bytes (all of them); `None` for anything else.
    pub fn decode(bytes: &[u8]) -> Option<BlobReference> {
        let mut pos = 0;
        let file_number = get_varint(bytes, &mut pos)?;
        let offset = get_varint(bytes, &mut pos)?;
        let size = get_varint(bytes, &mut pos)?;
        let rest = bytes.get(pos..)?;
        if rest.len() != 5 {
            return None;
        }
        let checksum = u32::from_le_bytes(rest[..4].try_into().ok()?);
        let compression = Compression::from_byte(rest[4])?;
        offset.checked_add(size)?;
        Some(BlobReference {
            file_number,
            offset,
            size,
            checksum,
            compression,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reference_round_trips() {
        let r = BlobReference {
            file_number: 123_456,
            offset: 1 << 40,
            size: 4096,
            checksum: 0xdead_beef,
            compression: Compression::Lz4,
        };
        assert_eq!(BlobReference::decode(&r.encode()), Some(r));
    }

    #[test]
    fn damaged_references_do_not_decode() {
        let r = BlobReference {
            file_number: 7,
            offset: 300,
            size: 20,
            checksum: 1,
            compression: Compression::None,
        };
        let bytes = r.encode();
        for cut in 0..bytes.len() {
            assert_eq!(BlobReference::decode(&bytes[..cut]), None, "cut at {cut}");
        }
        let mut long = bytes.clone();
        long.push(0);
        assert_eq!(BlobReference::decode(&long), None);
        let mut unknown = bytes;
        *unknown.last_mut().unwrap() = 9;
        assert_eq!(BlobReference::decode(&unknown), None);
    }
}
