//! siftdb-sstable: the sorted string table — siftdb's immutable on-disk run.
//!
//! * [`InternalKey`] — user key + sequence number + kind; the order every layer shares.
//! * [`TableBuilder`] — writes data blocks, the filter blocks (sized from the exact distinct key
//!   count at `finish`), properties, index and footer.
//! * [`Table`] — reads a table; [`Table::get`] checks the filter first, so a "no" reads no index
//!   and no data block; blocks come through the shared [`TableCache`].
//! * [`blob`] — blob files: large values kept apart from the tables, and the blob index a table
//!   stores in their place.
//! * [`InternalIterator`] — the cursor every sorted run offers (a table, a memtable);
//!   [`MergingIterator`] merges runs into one stream in both directions, for the engine's
//!   iterators and for compactions alike; [`VecIter`] is an in-memory run (tests' reference).
//! * [`FragmentedRangeTombstones`] — a table's range tombstones (`Db::delete_range`), cut into
//!   non-overlapping fragments for O(log n) coverage checks; held by the open [`Table`].
//!
//! The byte layout is written down in `docs/FORMAT.md`. Every block carries a CRC32 verified on
//! every read from disk; damage is a typed error ([`SstError::Corruption`] and friends), never a
//! wrong answer or a panic.
#![deny(missing_docs)]
#![warn(clippy::unwrap_used, clippy::expect_used)]

pub mod blob;
pub mod block;
mod builder;
pub mod coding;
mod compress_pool;
mod compression;
mod cursor;
mod error;
mod file;
pub mod format;
mod internal_key;
mod merging_iterator;
mod partition_filters;
mod prefix;
mod properties;
mod range_filter_block;
mod range_tombstones;
mod stats;
mod table;
mod ticker;
mod vec_iter;
mod zstd_codec;

pub use builder::{
    FilterSpec, TableBuildOptions, TableBuilder, TableMeta, DEFAULT_PARTITION_ABOVE,
};
pub use compression::Compression;
pub use cursor::InternalIterator;
pub use error::{Result, SstError};
pub use file::{open_random_access, MmapFile, PreadFile, RandomAccessFile, ReadMode};
pub use internal_key::{
    compare_internal, pack_trailer, user_key_of, InternalKey, ParsedKey, ValueKind, MAX_SEQUENCE,
};
pub use merging_iterator::MergingIterator;
pub use prefix::{FixedPrefix, PrefixExtractor};
pub use properties::TableProperties;
pub use range_filter_block::{
    RangeFilterBlock, IMAGE_KEY_IMAGE_V1, RANGE_FILTER_MAGIC, RANGE_FILTER_VERSION,
};
pub use range_tombstones::{FragmentedRangeTombstones, RangeTombstone};
pub use stats::{BlockAccess, FilterOutcome, GetTrace, MemoOutcome, ReadStatistics, Ticker};
pub use table::{
    CachedBlock, Lookup, PinnedValue, PreparedGet, Table, TableCache, TableGet, TableIter,
    TableIterOptions, TableReadOptions, RESERVATION_TABLE_ID,
};
pub use vec_iter::VecIter;
