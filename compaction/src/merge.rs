//! Merges sorted runs into one stream.

use std::cmp::Ordering;

use siftdb_sstable::{compare_internal, SstError};

use crate::iter::InternalIterator;

/// Merges child cursors in internal-key order. Children are ranked by position: on equal keys
/// (which a correct tree never has) the earlier child wins. With few children (memtables plus a
/// handful of runs) a linear scan for the minimum beats a heap.
pub struct MergingIterator {
    children: Vec<Box<dyn InternalIterator>>,
    current: Option<usize>,
    error: Option<SstError>,
}

impl std::fmt::Debug for MergingIterator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MergingIterator")
            .field("children", &self.children.len())
            .field("current", &self.current)
            .finish()
    }
}

impl MergingIterator {
    /// Merges `children` (newest first).
    pub fn new(children: Vec<Box<dyn InternalIterator>>) -> MergingIterator {
        MergingIterator {
            children,
            current: None,
            error: None,
        }
    }

    fn collect_errors(&mut self) {
        for c in &mut self.children {
            if let Some(e) = c.take_error() {
                self.error.get_or_insert(e);
            }
        }
    }

    fn find_smallest(&mut self) {
        self.collect_errors();
        if self.error.is_some() {
            self.current = None;
            return;
        }
        let mut best: Option<usize> = None;
        for (i, c) in self.children.iter().enumerate() {
            if !c.valid() {
                continue;
            }
            best = match best {
                Some(b)
                    if compare_internal(self.children[b].key(), c.key()) != Ordering::Greater =>
                {
                    Some(b)
                }
                _ => Some(i),
            };
        }
        self.current = best;
    }

    /// The error that stopped the merge, if any.
    pub fn take_error(&mut self) -> Option<SstError> {
        self.current = None;
        self.error.take()
    }
}

impl InternalIterator for MergingIterator {
    fn valid(&self) -> bool {
        self.error.is_none() && self.current.is_some()
    }

    fn key(&self) -> &[u8] {
        self.current.map_or(&[], |i| self.children[i].key())
    }

    fn value(&self) -> &[u8] {
        self.current.map_or(&[], |i| self.children[i].value())
    }

    fn seek_to_first(&mut self) {
        for c in &mut self.children {
            c.seek_to_first();
        }
        self.find_smallest();
    }

    fn seek(&mut self, target: &[u8]) {
        for c in &mut self.children {
            c.seek(target);
        }
        self.find_smallest();
    }

    fn next(&mut self) {
        if let Some(i) = self.current {
            self.children[i].next();
            self.find_smallest();
        }
    }

    fn take_error(&mut self) -> Option<SstError> {
        MergingIterator::take_error(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use siftdb_sstable::{InternalKey, ValueKind};

    /// A run over a sorted vector, for tests.
    struct VecIter {
        entries: Vec<(Vec<u8>, Vec<u8>)>,
        pos: usize,
    }

    impl InternalIterator for VecIter {
        fn valid(&self) -> bool {
            self.pos < self.entries.len()
        }
        fn key(&self) -> &[u8] {
            &self.entries[self.pos].0
        }
        fn value(&self) -> &[u8] {
            &self.entries[self.pos].1
        }
        fn seek_to_first(&mut self) {
            self.pos = 0;
        }
        fn seek(&mut self, target: &[u8]) {
            self.pos = self
                .entries
                .partition_point(|(k, _)| compare_internal(k, target) == Ordering::Less);
        }
        fn next(&mut self) {
            self.pos += 1;
        }
        fn take_error(&mut self) -> Option<SstError> {
            None
        }
    }

    fn run(keys: &[(&str, u64)]) -> Box<dyn InternalIterator> {
        let mut entries: Vec<(Vec<u8>, Vec<u8>)> = keys
            .iter()
            .map(|(k, s)| {
                (
                    InternalKey::new(k.as_bytes(), *s, ValueKind::Put)
                        .encoded()
                        .to_vec(),
                    format!("{k}{s}").into_bytes(),
                )
            })
            .collect();
        entries.sort_by(|a, b| compare_internal(&a.0, &b.0));
        Box::new(VecIter { entries, pos: 0 })
    }

    #[test]
    fn merging_iterator_yields_global_order() {
        let mut m = MergingIterator::new(vec![
            run(&[("b", 9), ("d", 9)]),
            run(&[("a", 1), ("b", 2), ("e", 1)]),
            run(&[]),
            run(&[("c", 5)]),
        ]);
        m.seek_to_first();
        let mut got = Vec::new();
        while m.valid() {
            got.push(String::from_utf8(m.value().to_vec()).unwrap());
            m.next();
        }
        assert_eq!(got, ["a1", "b9", "b2", "c5", "d9", "e1"]);
        m.seek(InternalKey::for_lookup(b"b", 5).encoded());
        assert_eq!(m.value(), b"b2");
    }
}
