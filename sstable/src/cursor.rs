//! The cursor interface of a sorted run of internal keys.

use crate::{SstError, TableIter};

/// A cursor over entries in internal-key order (see `crate::compare_internal`), in both
/// directions.
///
/// A cursor that meets an error (a damaged block) becomes invalid and keeps the error until
/// [`InternalIterator::take_error`]: whoever moved it checks for an error when it turns invalid,
/// so nobody has to poll cursors that are fine.
pub trait InternalIterator: Send {
    /// Whether the cursor is on an entry.
    fn valid(&self) -> bool;
    /// Current encoded internal key (only meaningful when valid).
    fn key(&self) -> &[u8];
    /// Current value (only meaningful when valid).
    fn value(&self) -> &[u8];
    /// Moves to the first entry.
    fn seek_to_first(&mut self);
    /// Moves to the last entry.
    fn seek_to_last(&mut self);
    /// Moves to the first entry ≥ `target` (an encoded internal key).
    fn seek(&mut self, target: &[u8]);
    /// Moves to the last entry ≤ `target` (an encoded internal key).
    fn seek_for_prev(&mut self, target: &[u8]);
    /// Moves to the next entry.
    fn next(&mut self);
    /// Moves to the previous entry.
    fn prev(&mut self);
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
    fn seek_to_last(&mut self) {
        TableIter::seek_to_last(self)
    }
    fn seek(&mut self, target: &[u8]) {
        TableIter::seek(self, target)
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        TableIter::seek_for_prev(self, target)
    }
    fn next(&mut self) {
        TableIter::next(self)
    }
    fn prev(&mut self) {
        TableIter::prev(self)
    }
    fn take_error(&mut self) -> Option<SstError> {
        TableIter::take_error(self)
    }
}
