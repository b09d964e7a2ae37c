//! siftdb-compaction: what a compaction takes and what survives it. The runs it merges are
//! siftdb-sstable's cursors (`InternalIterator`, `MergingIterator`), which the engine's read
//! path reads through too.
//!
//! * [`BoundedIterator`] — a run limited to one key range (a subcompaction's part).
//! * [`picker`] — which files a leveled compaction takes next; [`universal`] and [`fifo`] the
//!   same for the size-tiered and FIFO styles.
//! * [`job`] — which entries survive a compaction (snapshot stripes, bottommost tombstones).
#![deny(missing_docs)]
#![warn(clippy::unwrap_used, clippy::expect_used)]

mod bounded;
pub mod fifo;
pub mod job;
pub mod picker;
pub mod universal;

pub use bounded::BoundedIterator;
pub use job::{
    merge_into, CompactionSink, EntryFilter, FilterDecision, GcRules, MergeStats, OperandMerger,
};
pub use picker::{LevelFile, Pick, PickerConfig};
