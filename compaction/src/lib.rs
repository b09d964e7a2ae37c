//! siftdb-compaction: merging runs of internal keys.
//!
//! * [`InternalIterator`] — the cursor interface every sorted run (memtable, table) offers.
//! * [`MergingIterator`] — merges runs into one internal-key-ordered stream; the engine's
//!   iterators and compaction jobs read through it.
//! * [`picker`] — which files a leveled compaction takes next.
//! * [`job`] — which entries survive a compaction (snapshot stripes, bottommost tombstones).
#![deny(missing_docs)]
#![warn(clippy::unwrap_used, clippy::expect_used)]

mod iter;
pub mod job;
mod merge;
pub mod picker;

pub use iter::InternalIterator;
pub use job::{merge_into, CompactionSink, GcRules, MergeStats};
pub use merge::MergingIterator;
pub use picker::{LevelFile, Pick, PickerConfig};
