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

mod api;
mod base;
mod core;
mod jobs;
mod paths;

/// Incremental backups: [`BackupEngine`](backup::BackupEngine).
pub mod backup {
    pub use crate::api::backup::{BackupEngine, BackupEngineOptions, BackupInfo};
}
pub use crate::base::fs;
/// Looking inside a database and its files: [`table_info`](inspect::table_info), [`check_db`](inspect::check_db), ...
pub mod inspect {
    pub use crate::api::inspect::*;
}
pub use crate::base::merge;
#[cfg(feature = "test-hooks")]
pub use crate::base::sync_point;

/// Engine internals for the criterion benchmarks of `siftdb-bench` (cargo feature `internals`).
/// Not a stable API.
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod internals {
    pub use crate::base::wal::writer::LogWriter;
    pub use crate::core::memtable::{MemGet, Memtable};
}

pub use crate::api::batch_index::{BatchAndDbIterator, WriteBatchWithIndex};
pub use crate::api::db::Db;
pub use crate::api::keyspace::Keyspace;
pub use crate::api::pinned_value::PinnedValue;
pub use crate::api::readable::Readable;
pub use crate::api::snapshot::Snapshot;
pub use crate::api::sst_file_reader::{SstEntry, SstEntryKind, SstFileIter, SstFileReader};
pub use crate::api::sst_file_writer::{ExternalFileInfo, SstFileWriter};
pub use crate::api::transaction::{Transaction, TransactionMode, TransactionOptions};
pub use crate::base::batch::{WriteBatch, MAX_KEY_SIZE, MAX_VALUE_SIZE};
pub use crate::base::block_cache::BlockCache;
pub use crate::base::compaction_filter::{CompactionDecision, CompactionFilter};
pub use crate::base::compaction_style::{
    CompactionStyle, FifoCompactionOptions, UniversalCompactionOptions,
};
pub use crate::base::error::{
    BackgroundError, BackgroundJob, CompactionFilterError, Corruption, Error, Result,
};
pub use crate::base::event_listener::{
    BackgroundErrorInfo, CompactionJobInfo, CompactionReason, EventListener, FlushJobInfo,
    FlushReason, MemTableInfo, TableFileCreationInfo, TableFileCreationReason,
    TableFileDeletionInfo, TableFileInfo, WriteStallCause, WriteStallCondition, WriteStallInfo,
};
pub use crate::base::ingest_options::IngestOptions;
pub use crate::base::keyspace_options::{KeyspaceOptions, DEFAULT_KEYSPACE, MAX_KEYSPACE_NAME_LEN};
pub use crate::base::merge::MergeOperator;
pub use crate::base::options::{
    default_background_jobs, Options, ReadOptions, WriteOptions, DEFAULT_FALSE_POSITIVE_MEMO_BYTES,
    MAX_FILTER_BITS_PER_KEY, MAX_LEVELS,
};
pub use crate::base::options_file::FORMAT_VERSION;
pub use crate::base::rate_limiter::{IoPriority, RateLimiter};
pub use crate::base::ttl::{Clock, SystemClock};
pub use crate::core::level_info::LevelInfo;
pub use crate::core::stats::{LevelFilterStats, Stats};
pub use crate::paths::iterator::{DbIterator, RawIterator};
pub use siftdb_cache::{Admission as CacheAdmission, BlockKind, CacheStats, KindStats, MemoStats};
pub use siftdb_compaction::picker::CompactionPri;
pub use siftdb_filter::{FilterAllocation, FilterKind, HashId, KeyHasher};
pub use siftdb_sstable::{Compression, FixedPrefix, PrefixExtractor, RandomAccessFile, ReadMode};

/// The crate README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
