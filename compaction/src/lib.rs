//! siftdb-compaction: merging runs of internal keys.
//!
//! * [`InternalIterator`] — the cursor interface every sorted run (memtable, table) offers.
//! * [`MergingIterator`] — merges runs into one internal-key-ordered stream in both directions
//!   (a heap); the engine's iterators and compaction jobs read through it.
//! * [`VecIter`] — an in-memory run, the reference cursor of tests.
//! * [`picker`] — which files a leveled compaction takes next; [`universal`] and [`fifo`] the
//!   same for the size-tiered and FIFO styles.
//! * [`job`] — which entries survive a compaction (snapshot stripes, bottommost tombstones).
#![deny(missing_docs)]
#![warn(clippy::unwrap_used, clippy::expect_used)]

mod bounded;
pub mod fifo;
mod iter;
pub mod job;
mod merge;
pub mod picker;
pub mod universal;
mod vec_iter;

pub use bounded::BoundedIterator;
pub use iter::InternalIterator;
pub use job::{
    merge_into, CompactionSink, EntryFilter, FilterDecision, GcRules, MergeStats, OperandMerger,
};
pub use merge::MergingIterator;
pub use picker::{LevelFile, Pick, PickerConfig};
pub use vec_iter::VecIter;
