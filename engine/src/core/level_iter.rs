//! A level iterator: one cursor over a sorted level's tables that opens one table at a time
//! (LevelDB's `Version::AddIterators` + `TwoLevelIterator`, Pebble's `levelIter`).
//!
//! A seek finds the one table that can hold the target by binary search over the tables' key
//! ranges and reads that table's index and data block only; moving off the end (or the start) of
//! a table opens the next (or previous) one. A merge over a deep tree therefore has one child
//! per level, not one per table.

use std::cmp::Ordering;
use std::ops::Range;
use std::sync::Arc;

use siftdb_sstable::InternalIterator;
use siftdb_sstable::{compare_internal, SstError, TableIter, TableIterOptions};

use crate::core::range_skip::RangeProbe;
use crate::core::version::{TableFile, Version};

/// See the module documentation.
pub(crate) struct LevelIterator {
    /// The version whose level is read (shared, so creating the cursor copies nothing per table).
    version: Arc<Version>,
    level: usize,
    /// The tables of the level the cursor may read (those that meet the scan's bounds).
    range: Range<usize>,
    /// Tables in `range` to pass over (their prefix filter ruled the scan's prefix out).
    excluded: Vec<usize>,
    options: TableIterOptions,
    /// Passes over the tables whose range filter rules out what a seek would read.
    probe: Arc<RangeProbe>,
    /// The open table: its index in the level and its cursor.
    current: Option<(usize, TableIter)>,
    error: Option<SstError>,
}

impl LevelIterator {
    /// A cursor over tables `range` of `level` (≥ 1: sorted, disjoint) of `version`, but
    /// `excluded`, reading blocks as `options` say; a seek passes over a table `probe` rules out.
    pub(crate) fn new(
        version: Arc<Version>,
        level: usize,
        range: Range<usize>,
        excluded: Vec<usize>,
        options: TableIterOptions,
        probe: Arc<RangeProbe>,
    ) -> LevelIterator {
        LevelIterator {
            version,
            level,
            range,
            excluded,
            options,
            probe,
            current: None,
            error: None,
        }
    }

    fn files(&self) -> &[Arc<TableFile>] {
        self.version
            .level(self.level)
            .get(self.range.clone())
            .unwrap_or(&[])
    }

    fn usable(&self, index: usize) -> bool {
        self.range.contains(&index) && !self.excluded.contains(&index)
    }

    /// The first usable table at `index` or after it (`forward`), or at or before it.
    fn usable_from(&self, mut index: usize, forward: bool) -> Option<usize> {
        while self.range.contains(&index) {
            if self.usable(index) {
                return Some(index);
            }
            index = if forward {
                index + 1
            } else {
                index.checked_sub(1)?
            };
        }
        None
    }

    /// The cursor of the first usable table at `index` or after it (`forward`), or at or before
    /// it, opened if it is not the current one; `None` past either end.
    fn open(&mut self, index: usize, forward: bool) -> Option<&mut TableIter> {
        let Some(index) = self.usable_from(index, forward) else {
            self.current = None;
            return None;
        };
        if self.current.as_ref().is_none_or(|(i, _)| *i != index) {
            let file = self.version.level(self.level).get(index)?;
            self.current = Some((index, file.table.iter_with(self.options.clone())));
        }
        self.current.as_mut().map(|(_, it)| it)
    }

    fn table(&self) -> Option<&TableIter> {
        self.current.as_ref().map(|(_, it)| it)
    }

    /// After the open table ran out going forward: the next tables from their first entry, until
    /// one has an entry (or an error stops the level).
    fn skip_forward(&mut self) {
        while let Some((index, it)) = self.current.as_mut() {
            if it.valid() {
                return;
            }
            if let Some(e) = it.take_error() {
                self.fail(e);
                return;
            }
            let next = *index + 1;
            match self.open(next, true) {
                Some(it) => it.seek_to_first(),
                None => return,
            }
        }
    }

    /// The same going backward: the previous tables from their last entry.
    fn skip_backward(&mut self) {
        while let Some((index, it)) = self.current.as_mut() {
            if it.valid() {
                return;
            }
            if let Some(e) = it.take_error() {
                self.fail(e);
                return;
            }
            let Some(previous) = index.checked_sub(1) else {
                self.current = None;
                return;
            };
            match self.open(previous, false) {
                Some(it) => it.seek_to_last(),
                None => return,
            }
        }
    }

    /// The first usable table from `index` on (`forward`; else back) that the probe does not
    /// rule out for a walk from user key `target`; `None` (no table open) if there is none or a
    /// range filter cannot be read (the level then fails).
    fn probed(&mut self, mut index: usize, target: &[u8], forward: bool) -> Option<usize> {
        loop {
            let Some(found) = self.usable_from(index, forward) else {
                self.current = None;
                return None;
            };
            let table = &self.version.level(self.level).get(found)?.table;
            let skip = if forward {
                self.probe.skips_forward(table, target)
            } else {
                self.probe.skips_backward(table, target)
            };
            match skip {
                Ok(false) => return Some(found),
                Ok(true) if forward => index = found + 1,
                Ok(true) => {
                    let Some(before) = found.checked_sub(1) else {
                        self.current = None;
                        return None;
                    };
                    index = before;
                }
                Err(e) => {
                    self.fail(e);
                    return None;
                }
            }
        }
    }

    fn fail(&mut self, e: SstError) {
        self.error = Some(e);
        self.current = None;
    }

    fn start(&mut self) {
        self.error = None;
    }
}

impl InternalIterator for LevelIterator {
    fn valid(&self) -> bool {
        self.error.is_none() && self.table().is_some_and(TableIter::valid)
    }

    fn key(&self) -> &[u8] {
        self.table().map_or(&[], TableIter::key)
    }

    fn value(&self) -> &[u8] {
        self.table().map_or(&[], TableIter::value)
    }

    fn seek_to_first(&mut self) {
        self.start();
        if let Some(it) = self.open(self.range.start, true) {
            it.seek_to_first();
        }
        self.skip_forward();
    }

    fn seek_to_last(&mut self) {
        self.start();
        let last = self.range.end.checked_sub(1);
        match last.and_then(|i| self.open(i, false)) {
            Some(it) => it.seek_to_last(),
            None => self.current = None,
        }
        self.skip_backward();
    }

    fn seek(&mut self, target: &[u8]) {
        self.start();
        // The first table whose largest key is ≥ the target: the only one that can hold it.
        let index = self.range.start
            + self.files().partition_point(|f| {
                compare_internal(f.meta.largest.encoded(), target) == Ordering::Less
            });
        let Some(found) = self.probed(index, siftdb_sstable::user_key_of(target), true) else {
            return;
        };
        match self.open(found, true) {
            Some(it) if found == index => it.seek(target),
            // A later table (the one found was passed over) starts after the target.
            Some(it) => it.seek_to_first(),
            None => {}
        }
        self.skip_forward();
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.start();
        // The last table whose smallest key is ≤ the target.
        let after = self.files().partition_point(|f| {
            compare_internal(f.meta.smallest.encoded(), target) != Ordering::Greater
        });
        let Some(index) = (self.range.start + after).checked_sub(1) else {
            self.current = None;
            return;
        };
        if index < self.range.start {
            self.current = None;
            return;
        }
        let Some(found) = self.probed(index, siftdb_sstable::user_key_of(target), false) else {
            return;
        };
        match self.open(found, false) {
            Some(it) if found == index => it.seek_for_prev(target),
            // An earlier table (the one found was passed over) ends before the target.
            Some(it) => it.seek_to_last(),
            None => {}
        }
        self.skip_backward();
    }

    fn next(&mut self) {
        if let Some((_, it)) = self.current.as_mut() {
            it.next();
            self.skip_forward();
        }
    }

    fn prev(&mut self) {
        if let Some((_, it)) = self.current.as_mut() {
            it.prev();
            self.skip_backward();
        }
    }

    fn take_error(&mut self) -> Option<SstError> {
        self.error.take()
    }
}
