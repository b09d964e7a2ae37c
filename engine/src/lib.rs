//! siftdb: an embedded LSM-tree key-value store whose point lookups — above all lookups of keys
//! that are not there — never touch a data block they don't have to.
//!
//! ```
//! use siftdb::{Db, Options};
//! let dir = tempfile::tempdir()?;
//! let db = Db::open(dir.path(), Options::default().with_fixed_prefix(4))?;
//! db.put(b"user1", b"ann")?;
//! db.put(b"user2", b"bob")?;
//! db.put(b"item1", b"pen")?;
//! let users: Vec<_> = db.prefix_iter(b"user").collect::<Result<_, _>>()?;
//! assert_eq!(users.len(), 2);
//! assert_eq!(db.get(b"nobody")?, None);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! See `docs/ARCHITECTURE.md` for the write path, read path and recovery, `docs/TUNING.md` for
//! filters, and `docs/FORMAT.md` for the bytes on disk.
#![deny(missing_docs)]
#![warn(clippy::unwrap_used, clippy::expect_used)]

mod batch;
mod checkpoint;
mod compaction;
mod compaction_filter;
mod db;
mod error;
mod filter_plan;
mod flush;
pub mod fs;
mod heat;
mod iterator;
mod key_head;
mod keyspace;
mod keyspace_options;
mod manifest;
mod memtable;
mod memtable_bloom;
pub mod merge;
mod options;
mod options_file;
mod properties;
mod read;
mod recovery;
mod snapshot;
mod stats;
#[cfg(feature = "test-hooks")]
pub mod sync_point;
#[cfg(not(feature = "test-hooks"))]
mod sync_point;
mod tree;
mod ttl;
mod version;
mod version_edit;
mod version_set;
mod wal;

/// Engine internals for the criterion benchmarks of `siftdb-bench` (cargo feature `internals`).
/// Not a stable API.
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod internals {
    pub use crate::memtable::{MemGet, Memtable};
    pub use crate::wal::writer::LogWriter;
}
mod write;

pub use batch::{WriteBatch, MAX_KEY_SIZE, MAX_VALUE_SIZE};
pub use compaction_filter::{CompactionDecision, CompactionFilter};
pub use db::Db;
pub use error::{Corruption, Error, Result};
pub use iterator::{DbIterator, RawIterator};
pub use keyspace::Keyspace;
pub use keyspace_options::{KeyspaceOptions, DEFAULT_KEYSPACE, MAX_KEYSPACE_NAME_LEN};
pub use merge::MergeOperator;
pub use options::{
    Options, ReadOptions, WriteOptions, DEFAULT_FALSE_POSITIVE_MEMO_BYTES, MAX_FILTER_BITS_PER_KEY,
    MAX_LEVELS,
};
pub use options_file::FORMAT_VERSION;
pub use properties::LevelInfo;
pub use siftdb_cache::{Admission as CacheAdmission, BlockKind, CacheStats, KindStats, MemoStats};
pub use siftdb_compaction::picker::CompactionPri;
pub use siftdb_filter::{FilterAllocation, FilterKind, HashId, KeyHasher};
pub use siftdb_sstable::{Compression, FixedPrefix, PrefixExtractor, RandomAccessFile, ReadMode};
pub use snapshot::Snapshot;
pub use stats::{LevelFilterStats, Stats};
pub use ttl::{Clock, SystemClock};

/// The crate README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
