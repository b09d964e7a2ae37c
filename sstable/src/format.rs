//! Block handles, the block trailer and the table footer. See `docs/FORMAT.md`.

use crate::coding::{read_u32, read_u64};

/// Last eight bytes of every table.
pub const TABLE_MAGIC: u64 = 0x5349_4654_5342_4c31; // "SIFTSBL1"
/// The table format version this build writes: 2 adds compressed blocks and partitioned index
/// and filters; 3 adds the range tombstone block (so a build that cannot read range tombstones
/// refuses the table rather than resurrect the keys they delete). Version 1 tables (every block
/// uncompressed, one index and one filter block) and version 2 tables are still read.
pub const TABLE_FORMAT_VERSION: u32 = 3;
/// The first table format version that may have a range tombstone block.
pub const RANGE_TOMBSTONES_SINCE_VERSION: u32 = 3;
/// The oldest table format version this build reads.
pub const OLDEST_TABLE_FORMAT_VERSION: u32 = 1;
/// Bytes after every block: compression type (u8) and CRC32 (u32 LE).
pub const BLOCK_TRAILER_LEN: usize = 5;
/// Size of the fixed footer.
pub const FOOTER_LEN: usize = 80;
/// Compression type byte of an uncompressed block.
pub const NO_COMPRESSION: u8 = 0;

/// Where a block lives in the file: offset and size of its contents (trailer excluded).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct BlockHandle {
    /// Offset of the block contents.
    pub offset: u64,
    /// Size of the block contents.
    pub size: u64,
}

impl BlockHandle {
    /// Encoded size in the footer and in index entries.
    pub const ENCODED_LEN: usize = 16;

    /// Encodes as two u64 LE.
    pub fn encode(&self) -> [u8; 16] {
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&self.offset.to_le_bytes());
        out[8..].copy_from_slice(&self.size.to_le_bytes());
        out
    }

    /// Decodes two u64 LE.
    pub fn decode(bytes: &[u8]) -> Option<BlockHandle> {
        if bytes.len() != Self::ENCODED_LEN {
            return None;
        }
        Some(BlockHandle {
            offset: read_u64(bytes, 0)?,
            size: read_u64(bytes, 8)?,
        })
    }

    /// Whether the handle points at nothing (an absent optional block).
    pub fn is_absent(&self) -> bool {
        self.offset == 0 && self.size == 0
    }

    /// Whether block plus trailer lies inside a file of `file_size` bytes before the footer.
    pub fn fits(&self, file_size: u64) -> bool {
        let limit = file_size.saturating_sub(FOOTER_LEN as u64);
        self.offset
            .checked_add(self.size)
            .and_then(|end| end.checked_add(BLOCK_TRAILER_LEN as u64))
            .is_some_and(|end| end <= limit)
    }
}

/// The block trailer for stored bytes `contents` (compressed with the codec `compression` names):
/// compression type and CRC32 over contents + type.
pub fn block_trailer(contents: &[u8], compression: u8) -> [u8; BLOCK_TRAILER_LEN] {
    let mut h = crc32fast::Hasher::new();
    h.update(contents);
    h.update(&[compression]);
    let crc = h.finalize();
    let mut out = [0u8; BLOCK_TRAILER_LEN];
    out[0] = compression;
    out[1..].copy_from_slice(&crc.to_le_bytes());
    out
}

/// Verifies a block read with its trailer. Returns the stored contents' length and the
/// compression byte on success (a caller checks the codec is one its table version may use).
pub fn check_block(raw: &[u8]) -> Result<(usize, u8), BlockCheckError> {
    let len = raw
        .len()
        .checked_sub(BLOCK_TRAILER_LEN)
        .ok_or(BlockCheckError::Short)?;
    let (contents, trailer) = raw.split_at(len);
    let expected = read_u32(trailer, 1).ok_or(BlockCheckError::Short)?;
    let mut h = crc32fast::Hasher::new();
    h.update(contents);
    h.update(&trailer[..1]);
    let got = h.finalize();
    if got != expected {
        return Err(BlockCheckError::Checksum { got, expected });
    }
    Ok((len, trailer[0]))
}

/// Why a block failed verification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockCheckError {
    /// Fewer bytes than a trailer.
    Short,
    /// CRC mismatch.
    Checksum {
        /// Computed.
        got: u32,
        /// Stored.
        expected: u32,
    },
}

/// The fixed-size footer at the end of every table.
///
/// ```text
///  0 index handle | 16 properties handle | 32 filter handle | 48 prefix filter handle
/// 64 format version u32 | 68 CRC32 of bytes 0..68 | 72 magic u64
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footer {
    /// The index block.
    pub index: BlockHandle,
    /// The properties block.
    pub properties: BlockHandle,
    /// The whole-key filter block (absent: offset = size = 0).
    pub filter: BlockHandle,
    /// The prefix filter block (absent: offset = size = 0).
    pub prefix_filter: BlockHandle,
    /// Format version.
    pub version: u32,
}

/// Why a footer was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FooterError {
    /// Not a table (bad magic).
    BadMagic(u64),
    /// Footer checksum mismatch.
    Checksum {
        /// Computed.
        got: u32,
        /// Stored.
        expected: u32,
    },
    /// A version this build cannot read.
    Version(u32),
    /// Wrong length.
    Short,
}

impl Footer {
    /// Encodes the footer.
    pub fn encode(&self) -> [u8; FOOTER_LEN] {
        let mut out = [0u8; FOOTER_LEN];
        out[0..16].copy_from_slice(&self.index.encode());
        out[16..32].copy_from_slice(&self.properties.encode());
        out[32..48].copy_from_slice(&self.filter.encode());
        out[48..64].copy_from_slice(&self.prefix_filter.encode());
        out[64..68].copy_from_slice(&self.version.to_le_bytes());
        let crc = crc32fast::hash(&out[0..68]);
        out[68..72].copy_from_slice(&crc.to_le_bytes());
        out[72..80].copy_from_slice(&TABLE_MAGIC.to_le_bytes());
        out
    }

    /// Decodes and verifies a footer.
    pub fn decode(bytes: &[u8]) -> Result<Footer, FooterError> {
        if bytes.len() != FOOTER_LEN {
            return Err(FooterError::Short);
        }
        let magic = read_u64(bytes, 72).ok_or(FooterError::Short)?;
        if magic != TABLE_MAGIC {
            return Err(FooterError::BadMagic(magic));
        }
        let expected = read_u32(bytes, 68).ok_or(FooterError::Short)?;
        let got = crc32fast::hash(&bytes[0..68]);
        if got != expected {
            return Err(FooterError::Checksum { got, expected });
        }
        let version = read_u32(bytes, 64).ok_or(FooterError::Short)?;
        if !(OLDEST_TABLE_FORMAT_VERSION..=TABLE_FORMAT_VERSION).contains(&version) {
            return Err(FooterError::Version(version));
        }
        let handle = |at: usize| BlockHandle::decode(&bytes[at..at + 16]).ok_or(FooterError::Short);
        Ok(Footer {
            index: handle(0)?,
            properties: handle(16)?,
            filter: handle(32)?,
            prefix_filter: handle(48)?,
            version,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn footer_round_trips_and_detects_damage() {
        let f = Footer {
            index: BlockHandle {
                offset: 100,
                size: 50,
            },
            properties: BlockHandle {
                offset: 10,
                size: 20,
            },
            filter: BlockHandle::default(),
            prefix_filter: BlockHandle { offset: 1, size: 2 },
            version: TABLE_FORMAT_VERSION,
        };
        let bytes = f.encode();
        assert_eq!(Footer::decode(&bytes), Ok(f));
        for at in 0..FOOTER_LEN {
            let mut bad = bytes;
            bad[at] ^= 0x10;
            assert!(Footer::decode(&bad).is_err(), "byte {at}");
        }
    }

    #[test]
    fn block_trailer_detects_damage() {
        let mut raw = b"hello block".to_vec();
        raw.extend_from_slice(&block_trailer(b"hello block", NO_COMPRESSION));
        assert_eq!(check_block(&raw), Ok((11, NO_COMPRESSION)));
        for at in 0..raw.len() {
            let mut bad = raw.clone();
            bad[at] ^= 1;
            assert!(check_block(&bad).is_err(), "byte {at}");
        }
    }

    #[test]
    fn handle_fits_checks_overflow() {
        let h = BlockHandle {
            offset: u64::MAX - 2,
            size: 10,
        };
        assert!(!h.fits(1000));
        let h = BlockHandle {
            offset: 0,
            size: 10,
        };
        assert!(h.fits(10 + 5 + FOOTER_LEN as u64));
        assert!(!h.fits(10 + 4 + FOOTER_LEN as u64));
    }
}
