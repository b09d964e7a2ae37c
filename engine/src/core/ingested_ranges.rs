//! The key ranges written into a tree's tables without passing its memtables (ingested files,
//! an excise's range deletion), with the sequence after which each was written: what a
//! transaction's conflict check reads besides the memtables (`paths/conflict.rs`).
//!
//! A transaction's check reads only the memtables when they hold every write since its
//! snapshot; an ingestion breaks that rule (its tables may even keep sequence 0, older than
//! the snapshot), so every ingestion is recorded here and a key in a range recorded after the
//! snapshot counts as written after it. The check is conservative: a key in the range of a
//! file that does not hold it conflicts too (documented in `docs/TRANSACTIONS.md`).

use std::collections::VecDeque;

use parking_lot::Mutex;

/// Ranges kept; an older one is forgotten, and every snapshot before it then conflicts.
const KEPT: usize = 256;

/// One recorded write: user keys `start ..= last` (or `start .. end` with `end_excluded`).
#[derive(Debug)]
struct Written {
    /// Conflicts with snapshots below this sequence.
    after: u64,
    start: Vec<u8>,
    end: Vec<u8>,
    end_excluded: bool,
}

#[derive(Debug, Default)]
struct Inner {
    ranges: VecDeque<Written>,
    /// The newest `after` of the ranges forgotten (0: none).
    forgotten: u64,
}

/// See the module documentation.
#[derive(Debug, Default)]
pub(crate) struct IngestedRanges {
    inner: Mutex<Inner>,
}

impl IngestedRanges {
    /// Records keys `start ..= end` (`start .. end` with `end_excluded`) as written by a write
    /// that every snapshot below `after` predates.
    pub(crate) fn record(&self, after: u64, start: &[u8], end: &[u8], end_excluded: bool) {
        let mut inner = self.inner.lock();
        if inner.ranges.len() >= KEPT
            && let Some(old) = inner.ranges.pop_front()
        {
            inner.forgotten = inner.forgotten.max(old.after);
        }
        inner.ranges.push_back(Written {
            after,
            start: start.to_vec(),
            end: end.to_vec(),
            end_excluded,
        });
    }

    /// Forgets the writes no snapshot at or above `upto` can predate (`after <= upto`): the
    /// caller passes the oldest live snapshot's sequence, or the visible one when none lives.
    pub(crate) fn forget_up_to(&self, upto: u64) {
        let mut inner = self.inner.lock();
        inner.ranges.retain(|w| w.after > upto);
        if inner.forgotten <= upto {
            inner.forgotten = 0;
        }
    }

    /// Whether a recorded write may have written `key` after sequence `snapshot`.
    pub(crate) fn written_after(&self, key: &[u8], snapshot: u64) -> bool {
        let inner = self.inner.lock();
        inner.forgotten > snapshot
            || inner.ranges.iter().any(|w| {
                w.after > snapshot
                    && w.start.as_slice() <= key
                    && if w.end_excluded {
                        key < w.end.as_slice()
                    } else {
                        key <= w.end.as_slice()
                    }
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_in_a_range_recorded_after_the_snapshot_is_written() {
        let r = IngestedRanges::default();
        r.record(10, b"b", b"d", false);
        r.record(12, b"x", b"z", true);
        assert!(r.written_after(b"d", 9));
        assert!(!r.written_after(b"d", 10), "recorded before the snapshot");
        assert!(!r.written_after(b"e", 0), "outside every range");
        assert!(r.written_after(b"y", 11));
        assert!(!r.written_after(b"z", 11), "an excluded end");
    }

    #[test]
    fn ranges_no_snapshot_predates_are_dropped() {
        let r = IngestedRanges::default();
        r.record(10, b"a", b"c", false);
        r.record(20, b"x", b"z", false);
        r.forget_up_to(15);
        assert!(!r.written_after(b"b", 9), "the range after 10 is gone");
        assert!(r.written_after(b"y", 19));
    }

    #[test]
    fn forgotten_ranges_conflict_with_every_older_snapshot() {
        let r = IngestedRanges::default();
        for i in 0..=KEPT as u64 {
            r.record(i + 1, b"a", b"a", false);
        }
        assert!(r.written_after(b"q", 0), "the first range is forgotten");
        assert!(!r.written_after(b"q", 1));
    }
}
