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
//! type: 1 FULL, 2 FIRST, 3 MIDDLE, 4 LAST, 5 SYNC MARK (database format 7).
//! A block tail shorter than a header is zero-filled.
//! ```
//!
//! A **sync mark** is written (and handed to the OS, not synced) right after each successful
//! sync: a fragment of its own whose payload is its own offset in the file, little-endian,
//! truncated to the room left in its block (8 bytes when there is room). It says "every byte
//! before me was durable when I was written", so a mark that survives a power loss proves the
//! bytes before it were synced, whatever happened to the pages around it.
//!
//! Recovery (see [`reader`]) stops at the first damage and looks at what follows: nothing valid
//! (a torn tail), valid fragments but no sync mark (unsynced pages lost out of order by a power
//! loss), or a sync mark (synced bytes damaged: corruption).

pub mod reader;
#[cfg(test)]
mod reference_reader;
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
    /// A sync mark (not a record: see the module docs).
    SyncMark = 5,
}

impl RecordType {
    fn from_u8(b: u8) -> Option<RecordType> {
        match b {
            1 => Some(RecordType::Full),
            2 => Some(RecordType::First),
            3 => Some(RecordType::Middle),
            4 => Some(RecordType::Last),
            5 => Some(RecordType::SyncMark),
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

/// The payload of a sync mark written at `offset` with `block_left` bytes left in its block
/// (at least a header's worth): the offset's little-endian bytes, as many as fit, up to 8.
fn sync_mark_payload(offset: u64, block_left: usize) -> Vec<u8> {
    let room = block_left.saturating_sub(HEADER_SIZE).min(8);
    offset.to_le_bytes()[..room].to_vec()
}
