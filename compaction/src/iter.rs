//! The cursor interface of a sorted run of internal keys.

use siftdb_sstable::{SstError, TableIter};

/// A cursor over entries in internal-key order (see `siftdb_sstable::compare_internal`).
pub trait InternalIterator: Send {
    /// Whether the cursor is on an entry.
    fn valid(&self) -> bool;
    /// Current encoded internal key (only meaningful when valid).
    fn key(&self) -> &[u8];
    /// Current value (only meaningful when valid).
    fn value(&self) -> &[u8];
    /// Moves to the first entry.
    fn seek_to_first(&mut self);
    /// Moves to the first entry ≥ `target` (an encoded internal key).
    fn seek(&mut self, target: &[u8]);
    /// Moves to the next entry.
    fn next(&mut self);
    /// Takes the error that invalidated the cursor, if any.
    fn take_error(&mut self) -> Option<SstError>;
}

impl InternalIterator for TableIter {
    fn valid(&self) -> bool {
        TableIter::valid(self)
    }
    fn key(&self) -> &[u8] {
        TableIter::key(self)
    }
    fn value(&self) -> &[u8] {
        TableIter::value(self)
    }
    fn seek_to_first(&mut self) {
        TableIter::seek_to_first(self)
    }
    fn seek(&mut self, target: &[u8]) {
        TableIter::seek(self, target)
    }
    fn next(&mut self) {
        TableIter::next(self)
    }
    fn take_error(&mut self) -> Option<SstError> {
        TableIter::take_error(self)
    }
}
