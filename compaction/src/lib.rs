//! siftdb-compaction: merging runs of internal keys.
//!
//! * [`InternalIterator`] — the cursor interface every sorted run (memtable, table) offers.
//! * [`MergingIterator`] — merges runs into one internal-key-ordered stream; the engine's
//!   iterators and (later) compaction jobs read through it.
#![deny(missing_docs)]
#![warn(clippy::unwrap_used, clippy::expect_used)]

mod iter;
mod merge;

pub use iter::InternalIterator;
pub use merge::MergingIterator;
