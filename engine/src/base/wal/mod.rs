//! The log format shared by the write-ahead log and the manifest (LevelDB's `log_format`).
//!
//! A log is a sequence of 32 KiB blocks. A record is split into fragments that never straddle a
//! block boundary; each fragment has a 7-byte header:
//!
//! ```text
//! +-----------------+--------------+---------+-----------------+
//! | CRC32 (u32 LE)  | length u16 LE| type u8 | payload (length) |
//! +-----------------+--------------+---------+-----------------+
//! CRC32 covers the type byte and the payload.
//! type: 1 FULL, 2 FIRST, 3 MIDDLE, 4 LAST.  A block tail shorter than a header is zero-filled.
//! ```
//!
//! Recovery (see [`reader`]): a damaged or incomplete record with no valid record after it is a
//! torn tail from a crash and is dropped (point-in-time recovery); damage followed by valid
//! records means acknowledged data was lost and is reported as corruption.

pub mod reader;
pub mod writer;

/// Size of a log block.
pub const BLOCK_SIZE: usize = 32 * 1024;
/// Size of a fragment header.
pub const HEADER_SIZE: usize = 7;

/// Fragment types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum RecordType {
    /// A whole record.
    Full = 1,
    /// First fragment of a record.
    First = 2,
    /// Middle fragment.
    Middle = 3,
    /// Last fragment.
    Last = 4,
}

impl RecordType {
    fn from_u8(b: u8) -> Option<RecordType> {
        match b {
            1 => Some(RecordType::Full),
            2 => Some(RecordType::First),
            3 => Some(RecordType::Middle),
            4 => Some(RecordType::Last),
            _ => None,
        }
    }
}

fn fragment_crc(kind: u8, payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&[kind]);
    h.update(payload);
    h.finalize()
}
