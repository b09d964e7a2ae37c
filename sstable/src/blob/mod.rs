//! Blob files: values kept apart from the tables (key-value separation, RocksDB's BlobDB,
//! fjall's value log), so that compaction moves keys and small references instead of large
//! values. This module is the file format alone; `docs/FORMAT.md` ("Blob files") draws it.
//!
//! * [`BlobFileWriter`] appends records (the key, for garbage collection to look up, and the
//!   value, compressed if that pays) and hands back a [`BlobReference`] per value, which the
//!   table stores in the value's place.
//! * [`BlobFileReader`] reads one value by its reference with a single positioned read,
//!   checking its checksum (damage is a typed error naming the file and offset, never a wrong
//!   value), and walks the records in order for garbage collection.

mod index;
mod reader;
mod reference;
mod writer;

pub use index::BlobIndex;
pub use reader::{BlobFileReader, BlobRecord};
pub use reference::BlobReference;
pub use writer::{BlobFileMeta, BlobFileWriter};

/// The first 8 bytes of every blob file ("SIFTBLB1", little-endian).
pub const BLOB_MAGIC: u64 = 0x3142_4c42_5446_4953;
/// The blob file format this build writes and reads.
pub const BLOB_FORMAT_VERSION: u32 = 1;
/// Bytes of the header: magic, version, keyspace id, compression, reserved, checksum.
pub const BLOB_HEADER_LEN: usize = 24;
/// Bytes of a record's header: key length, stored value length, compression, value checksum,
/// header checksum.
pub const BLOB_RECORD_HEADER_LEN: usize = 21;
/// Bytes of the footer: record count, value bytes, magic, checksum.
pub const BLOB_FOOTER_LEN: usize = 28;
