//! Skipping a table at a seek when its range filter says the part of the scan's range the seek
//! can reach holds none of its keys: going forward from `target`, the keys in
//! `[max(target, start), end)`; going backward, those in `[start, min(target, end)]`.
//!
//! A forward walk needs an upper bound to ask (without one, every table at or after the target
//! may hold keys the walk reaches) and a backward walk a lower one. A skipped child is simply
//! not valid: the merge reads none of its blocks. Entries of the skipped table outside the range
//! never reach the caller, because the cursor above the merge (`RawIterator`)
//! stops at the bounds.

use std::sync::Arc;

use siftdb_sstable::InternalIterator;
use siftdb_sstable::{SstError, Table, TableIter};

use crate::core::key_bounds::KeyBounds;
use crate::core::version::TableFile;

/// The scan's range as the range filters are asked about it: half-open `[start, end)` user keys
/// (`None`: unbounded on that side).
#[derive(Debug, Default)]
pub(crate) struct RangeProbe {
    start: Option<Vec<u8>>,
    end: Option<Vec<u8>>,
}

impl RangeProbe {
    /// The probe of a scan within `bounds`.
    pub(crate) fn of(bounds: &KeyBounds) -> RangeProbe {
        let (start, end) = bounds.half_open();
        RangeProbe { start, end }
    }

    /// Whether `table` certainly holds no key a forward walk from user key `target` reads within
    /// the range.
    pub(crate) fn skips_forward(&self, table: &Table, target: &[u8]) -> Result<bool, SstError> {
        let Some(end) = self.end.as_deref() else {
            return Ok(false);
        };
        let from = match self.start.as_deref() {
            Some(start) if start > target => start,
            _ => target,
        };
        if from >= end {
            return Ok(true);
        }
        Ok(!table.range_may_overlap(Some(from), Some(end))?)
    }

    /// Whether `table` certainly holds no key a backward walk from user key `target` (inclusive)
    /// reads within the range.
    pub(crate) fn skips_backward(&self, table: &Table, target: &[u8]) -> Result<bool, SstError> {
        let Some(start) = self.start.as_deref() else {
            return Ok(false);
        };
        // `target` included: the half-open end is its successor, or the range's end if lower.
        let mut to = target.to_vec();
        to.push(0);
        if let Some(end) = self.end.as_deref()
            && end < to.as_slice()
        {
            to = end.to_vec();
        }
        if start >= to.as_slice() {
            return Ok(true);
        }
        Ok(!table.range_may_overlap(Some(start), Some(&to))?)
    }
}

/// A cursor over one (L0) table that a seek leaves unpositioned when [`RangeProbe`] says the
/// table holds nothing the walk from the target would read.
pub(crate) struct RangeSkippingTable {
    /// The table, held as the version holds it: while the cursor lives its file is not deleted
    /// (`core::live_tables`), even once a compaction has replaced it and every version naming
    /// it is gone — the table cache may have closed the file, and reads open it again by name.
    table: Arc<TableFile>,
    iter: TableIter,
    probe: Arc<RangeProbe>,
    /// The last seek skipped the table: not valid, no block read.
    skipped: bool,
    /// The range filter could not be read.
    error: Option<SstError>,
}

impl RangeSkippingTable {
    pub(crate) fn new(table: Arc<TableFile>, iter: TableIter, probe: Arc<RangeProbe>) -> Self {
        RangeSkippingTable {
            table,
            iter,
            probe,
            skipped: false,
            error: None,
        }
    }

    /// Records the probe's answer for the seek about to be made; `true`: do not seek.
    fn skip(&mut self, answer: Result<bool, SstError>) -> bool {
        self.error = None;
        self.skipped = match answer {
            Ok(skip) => skip,
            Err(e) => {
                self.error = Some(e);
                true
            }
        };
        self.skipped
    }
}

impl InternalIterator for RangeSkippingTable {
    fn valid(&self) -> bool {
        !self.skipped && self.iter.valid()
    }
    fn key(&self) -> &[u8] {
        self.iter.key()
    }
    fn value(&self) -> &[u8] {
        self.iter.value()
    }
    fn seek_to_first(&mut self) {
        self.skip(Ok(false));
        self.iter.seek_to_first();
    }
    fn seek_to_last(&mut self) {
        self.skip(Ok(false));
        self.iter.seek_to_last();
    }
    fn seek(&mut self, target: &[u8]) {
        let user = siftdb_sstable::user_key_of(target);
        if !self.skip(self.probe.skips_forward(&self.table.table, user)) {
            self.iter.seek(target);
        }
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        let user = siftdb_sstable::user_key_of(target);
        if !self.skip(self.probe.skips_backward(&self.table.table, user)) {
            self.iter.seek_for_prev(target);
        }
    }
    fn next(&mut self) {
        if !self.skipped {
            self.iter.next();
        }
    }
    fn prev(&mut self) {
        if !self.skipped {
            self.iter.prev();
        }
    }
    fn take_error(&mut self) -> Option<SstError> {
        self.error.take().or_else(|| self.iter.take_error())
    }
}
