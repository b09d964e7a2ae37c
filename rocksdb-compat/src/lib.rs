//! siftdb behind rust-rocksdb's API: the same module paths, type names, method names,
//! argument types and error shape, so that an application written for rust-rocksdb 0.25
//! switches to siftdb by one line of its `Cargo.toml`:
//!
//! ```toml
//! rocksdb = { package = "siftdb-rocksdb", version = "0.1" }
//! ```
//!
//! ```
//! use siftdb_rocksdb::{IteratorMode, Options, WriteBatch, DB};
//! let dir = tempfile::tempdir()?;
//! let mut opts = Options::default();
//! opts.create_if_missing(true);
//! let db = DB::open(&opts, dir.path())?;
//! let mut batch = WriteBatch::default();
//! batch.put(b"k1", b"v1");
//! batch.put(b"k2", b"v2");
//! db.write(batch)?;
//! assert_eq!(db.get(b"k1")?, Some(b"v1".to_vec()));
//! assert_eq!(db.iterator(IteratorMode::End).count(), 2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Column families are siftdb keyspaces. Option setters with a siftdb counterpart set it;
//! tuning setters without one are accepted with no effect; setters siftdb cannot honour (a
//! custom comparator, cuckoo tables, ...) make the open fail with an error of kind
//! `NotSupported`. The crate's README lists each.
#![deny(missing_docs)]
#![warn(clippy::unwrap_used, clippy::expect_used)]

pub mod backup;
pub mod checkpoint;
mod column_family;
pub mod compaction_filter;
mod comparator;
mod db;
mod db_admin;
mod db_iterator;
mod db_ops;
mod db_options;
mod db_pinnable_slice;
mod destroy;
mod env;
mod error;
mod iter_range;
pub mod merge_operator;
pub mod perf;
pub mod properties;
mod slice_transform;
mod snapshot;
mod sst_file_writer;
pub mod statistics;
mod transaction_db_writes;
mod transactions;
mod wal;
mod write_batch;

pub use crate::column_family::{
    AsColumnFamilyRef, BoundColumnFamily, ColumnFamily, ColumnFamilyDescriptor, ColumnFamilyRef,
    ColumnFamilyTtl, DEFAULT_COLUMN_FAMILY_NAME,
};
pub use crate::compaction_filter::Decision as CompactionDecision;
pub use crate::comparator::{CompareFn, CompareTsFn, CompareWithoutTsFn};
pub use crate::db::{
    ColumnFamilyMetaData, DBAccess, DBWithThreadMode, LiveFile, MultiThreaded, Range,
    SingleThreaded, ThreadMode, DB,
};
pub use crate::db_iterator::{
    DBIterator, DBIteratorWithThreadMode, DBRawIterator, DBRawIteratorWithThreadMode,
    DBWALIterator, Direction, IteratorMode,
};
pub use crate::db_options::{
    BlockBasedIndexType, BlockBasedOptions, BottommostLevelCompaction, Cache, ChecksumType,
    CompactOptions, CompactionPri, CuckooTableOptions, DBCompactionStyle, DBCompressionType,
    DBPath, DBRecoveryMode, DataBlockIndexType, FifoCompactOptions, FlushOptions,
    IngestExternalFileOptions, KeyEncodingType, LogLevel, MemtableFactory, Options,
    PlainTableFactoryOptions, ReadOptions, ReadTier, UniversalCompactOptions,
    UniversalCompactionStopStyle, WaitForCompactOptions, WriteBufferManager, WriteOptions,
};
pub use crate::db_pinnable_slice::{CSlice, DBPinnableSlice};
pub use crate::env::Env;
pub use crate::error::{Error, ErrorKind};
pub use crate::iter_range::{IterateBounds, PrefixRange};
pub use crate::merge_operator::MergeOperands;
pub use crate::perf::{PerfContext, PerfMetric, PerfStatsLevel};
pub use crate::properties::CStrLike;
pub use crate::slice_transform::SliceTransform;
pub use crate::snapshot::{Snapshot, SnapshotWithThreadMode};
pub use crate::sst_file_writer::SstFileWriter;
pub use crate::transactions::{
    OptimisticTransactionDB, OptimisticTransactionOptions, Transaction, TransactionDB,
    TransactionDBOptions, TransactionIterator, TransactionOptions,
};
pub use crate::write_batch::{
    WriteBatch, WriteBatchIterator, WriteBatchIteratorCf, WriteBatchWithTransaction,
};
