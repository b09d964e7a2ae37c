//! An in-memory sorted run: the reference cursor for tests of anything built on
//! [`InternalIterator`] (merges, garbage collection).

use std::cmp::Ordering;

use crate::{compare_internal, SstError};

use crate::cursor::InternalIterator;

/// A cursor over a vector of `(encoded internal key, value)` entries, sorted by
/// [`VecIter::new`].
#[derive(Debug, Clone)]
pub struct VecIter {
    entries: Vec<(Vec<u8>, Vec<u8>)>,
    /// Position; `entries.len()` = past the end, `usize::MAX` = before the start.
    pos: usize,
}

impl VecIter {
    /// A run over `entries` (sorted here), positioned before the first.
    pub fn new(mut entries: Vec<(Vec<u8>, Vec<u8>)>) -> VecIter {
        entries.sort_by(|a, b| compare_internal(&a.0, &b.0));
        VecIter {
            entries,
            pos: usize::MAX,
        }
    }
}

impl InternalIterator for VecIter {
    fn valid(&self) -> bool {
        self.pos < self.entries.len()
    }
    fn key(&self) -> &[u8] {
        self.entries.get(self.pos).map_or(&[], |e| e.0.as_slice())
    }
    fn value(&self) -> &[u8] {
        self.entries.get(self.pos).map_or(&[], |e| e.1.as_slice())
    }
    fn seek_to_first(&mut self) {
        self.pos = 0;
    }
    fn seek_to_last(&mut self) {
        self.pos = self.entries.len().checked_sub(1).unwrap_or(usize::MAX);
    }
    fn seek(&mut self, target: &[u8]) {
        self.pos = self
            .entries
            .partition_point(|(k, _)| compare_internal(k, target) == Ordering::Less);
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        let after = self
            .entries
            .partition_point(|(k, _)| compare_internal(k, target) != Ordering::Greater);
        self.pos = after.checked_sub(1).unwrap_or(usize::MAX);
    }
    fn next(&mut self) {
        if self.valid() {
            self.pos += 1;
        }
    }
    fn prev(&mut self) {
        if self.valid() {
            self.pos = self.pos.checked_sub(1).unwrap_or(usize::MAX);
        }
    }
    fn take_error(&mut self) -> Option<SstError> {
        None
    }
}
