//! Merges sorted runs into one stream, in both directions.
//!
//! The children that are on an entry sit in a binary heap ordered for the current direction
//! (smallest key on top going forward, largest going backward), so a step costs O(log children)
//! comparisons. Changing direction repositions every other child around the current key, as
//! LevelDB's `MergingIterator` does: going backward from key `k`, each other child moves to its
//! last entry before `k`; going forward again, to its first entry after `k`.

use std::cmp::Ordering;

use crate::{compare_internal, SstError};

use crate::cursor::InternalIterator;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Reverse,
}

/// Merges child cursors in internal-key order. Children are ranked by position: on equal keys
/// (which a correct tree never has) the earlier child comes first in either direction.
pub struct MergingIterator {
    children: Vec<Box<dyn InternalIterator>>,
    /// Indexes of the valid children, a heap for `direction`; the top is the current entry.
    heap: Vec<usize>,
    direction: Direction,
    error: Option<SstError>,
}

impl std::fmt::Debug for MergingIterator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MergingIterator")
            .field("children", &self.children.len())
            .field("current", &self.heap.first())
            .field("direction", &self.direction)
            .finish()
    }
}

impl MergingIterator {
    /// Merges `children` (newest first).
    pub fn new(children: Vec<Box<dyn InternalIterator>>) -> MergingIterator {
        MergingIterator {
            heap: Vec::with_capacity(children.len()),
            children,
            direction: Direction::Forward,
            error: None,
        }
    }

    /// The error that stopped the merge, if any.
    pub fn take_error(&mut self) -> Option<SstError> {
        let error = self.error.take();
        if error.is_some() {
            self.heap.clear();
        }
        error
    }

    fn current(&self) -> Option<usize> {
        self.heap.first().copied()
    }

    /// Whether child `a` comes before child `b` in the current direction.
    fn before(&self, a: usize, b: usize) -> bool {
        let order = compare_internal(self.children[a].key(), self.children[b].key());
        match (self.direction, order) {
            (_, Ordering::Equal) => a < b,
            (Direction::Forward, o) => o == Ordering::Less,
            (Direction::Reverse, o) => o == Ordering::Greater,
        }
    }

    fn sift_down(&mut self, mut at: usize) {
        loop {
            let (left, right) = (2 * at + 1, 2 * at + 2);
            let mut first = at;
            if left < self.heap.len() && self.before(self.heap[left], self.heap[first]) {
                first = left;
            }
            if right < self.heap.len() && self.before(self.heap[right], self.heap[first]) {
                first = right;
            }
            if first == at {
                return;
            }
            self.heap.swap(at, first);
            at = first;
        }
    }

    /// Takes the error of a child that turned invalid (the merge stops at it).
    fn note_invalid(&mut self, child: usize) {
        if let Some(e) = self.children[child].take_error() {
            self.error.get_or_insert(e);
        }
    }

    /// Rebuilds the heap from every valid child, for `direction`.
    fn rebuild(&mut self, direction: Direction) {
        self.direction = direction;
        self.heap.clear();
        for i in 0..self.children.len() {
            if self.children[i].valid() {
                self.heap.push(i);
            } else {
                self.note_invalid(i);
            }
        }
        for at in (0..self.heap.len() / 2).rev() {
            self.sift_down(at);
        }
    }

    /// After the top child moved: restore the heap (dropping the child if it ran out).
    fn fix_top(&mut self) {
        let Some(&top) = self.heap.first() else {
            return;
        };
        if self.children[top].valid() {
            self.sift_down(0);
        } else {
            self.note_invalid(top);
            let last = self.heap.len() - 1;
            self.heap.swap(0, last);
            self.heap.pop();
            self.sift_down(0);
        }
    }

    /// Every child but `current` moves to its first entry after `key`.
    fn switch_to_forward(&mut self, current: usize) {
        let key = self.children[current].key().to_vec();
        for (i, child) in self.children.iter_mut().enumerate() {
            if i == current {
                continue;
            }
            child.seek(&key);
            if child.valid() && compare_internal(child.key(), &key) == Ordering::Equal {
                child.next();
            }
        }
        self.rebuild(Direction::Forward);
    }

    /// Every child but `current` moves to its last entry before `key`.
    fn switch_to_reverse(&mut self, current: usize) {
        let key = self.children[current].key().to_vec();
        for i in 0..self.children.len() {
            if i == current {
                continue;
            }
            // `seek_for_prev` (not LevelDB's `seek` + `prev`, or `seek_to_last` when nothing is
            // at or after `key`): a child may decline a seek it knows reads nothing the walk
            // needs, and the backward seek says which way the walk goes.
            let child = &mut self.children[i];
            child.seek_for_prev(&key);
            if child.valid() && compare_internal(child.key(), &key) == Ordering::Equal {
                child.prev();
            }
        }
        self.rebuild(Direction::Reverse);
    }
}

impl InternalIterator for MergingIterator {
    fn valid(&self) -> bool {
        self.error.is_none() && !self.heap.is_empty()
    }

    fn key(&self) -> &[u8] {
        self.current().map_or(&[], |i| self.children[i].key())
    }

    fn value(&self) -> &[u8] {
        self.current().map_or(&[], |i| self.children[i].value())
    }

    fn seek_to_first(&mut self) {
        self.error = None;
        for c in &mut self.children {
            c.seek_to_first();
        }
        self.rebuild(Direction::Forward);
    }

    fn seek_to_last(&mut self) {
        self.error = None;
        for c in &mut self.children {
            c.seek_to_last();
        }
        self.rebuild(Direction::Reverse);
    }

    fn seek(&mut self, target: &[u8]) {
        self.error = None;
        for c in &mut self.children {
            c.seek(target);
        }
        self.rebuild(Direction::Forward);
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.error = None;
        for c in &mut self.children {
            c.seek_for_prev(target);
        }
        self.rebuild(Direction::Reverse);
    }

    fn next(&mut self) {
        let Some(current) = self.current() else {
            return;
        };
        if self.direction == Direction::Reverse {
            self.switch_to_forward(current);
        }
        self.children[current].next();
        self.fix_top();
    }

    fn prev(&mut self) {
        let Some(current) = self.current() else {
            return;
        };
        if self.direction == Direction::Forward {
            self.switch_to_reverse(current);
        }
        self.children[current].prev();
        self.fix_top();
    }

    fn take_error(&mut self) -> Option<SstError> {
        MergingIterator::take_error(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::VecIter;
    use crate::{InternalKey, ValueKind};
    use proptest::prelude::*;

    fn ikey(k: &str, s: u64) -> Vec<u8> {
        InternalKey::new(k.as_bytes(), s, ValueKind::Put)
            .encoded()
            .to_vec()
    }

    fn run(keys: &[(&str, u64)]) -> Box<dyn InternalIterator> {
        let entries = keys
            .iter()
            .map(|(k, s)| (ikey(k, *s), format!("{k}{s}").into_bytes()))
            .collect();
        Box::new(VecIter::new(entries))
    }

    fn runs() -> MergingIterator {
        MergingIterator::new(vec![
            run(&[("b", 9), ("d", 9)]),
            run(&[("a", 1), ("b", 2), ("e", 1)]),
            run(&[]),
            run(&[("c", 5)]),
        ])
    }

    #[test]
    fn merging_iterator_yields_global_order_both_ways() {
        let mut m = runs();
        m.seek_to_first();
        let mut got = Vec::new();
        while m.valid() {
            got.push(String::from_utf8(m.value().to_vec()).unwrap());
            m.next();
        }
        assert_eq!(got, ["a1", "b9", "b2", "c5", "d9", "e1"]);
        m.seek_to_last();
        let mut back = Vec::new();
        while m.valid() {
            back.push(String::from_utf8(m.value().to_vec()).unwrap());
            m.prev();
        }
        got.reverse();
        assert_eq!(back, got);
        m.seek(InternalKey::for_lookup(b"b", 5).encoded());
        assert_eq!(m.value(), b"b2");
        m.seek_for_prev(InternalKey::for_lookup(b"b", 5).encoded());
        assert_eq!(m.value(), b"b9");
        // Direction changes in the middle.
        m.seek(&ikey("c", 5));
        m.prev();
        assert_eq!(m.value(), b"b2");
        m.next();
        assert_eq!(m.value(), b"c5");
        m.next();
        assert_eq!(m.value(), b"d9");
    }

    #[derive(Debug, Clone)]
    enum Op {
        Seek(u8),
        SeekForPrev(u8),
        First,
        Last,
        Next,
        Prev,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            1 => (0u8..40).prop_map(Op::Seek),
            1 => (0u8..40).prop_map(Op::SeekForPrev),
            1 => Just(Op::First),
            1 => Just(Op::Last),
            4 => Just(Op::Next),
            4 => Just(Op::Prev),
        ]
    }

    proptest! {
        /// Any walk over any runs sees what a walk over their sorted union sees.
        #[test]
        fn merge_walks_like_the_sorted_union(
            runs in proptest::collection::vec(proptest::collection::btree_set(0u8..40, 0..12), 0..6),
            ops in proptest::collection::vec(op(), 1..60),
        ) {
            // Run i holds key k at sequence i + 1 (distinct internal keys across runs).
            let children: Vec<Box<dyn InternalIterator>> = runs
                .iter()
                .enumerate()
                .map(|(i, keys)| {
                    let entries = keys
                        .iter()
                        .map(|k| (ikey(&format!("{k:02}"), i as u64 + 1), vec![*k, i as u8]))
                        .collect();
                    Box::new(VecIter::new(entries)) as Box<dyn InternalIterator>
                })
                .collect();
            let model: Vec<(Vec<u8>, Vec<u8>)> = runs
                .iter()
                .enumerate()
                .flat_map(|(i, keys)| {
                    keys.iter()
                        .map(move |k| (ikey(&format!("{k:02}"), i as u64 + 1), vec![*k, i as u8]))
                })
                .collect();
            let mut reference = VecIter::new(model);
            let mut merge = MergingIterator::new(children);
            for op in ops {
                match op {
                    Op::Seek(k) => {
                        let t = ikey(&format!("{k:02}"), 3);
                        merge.seek(&t);
                        reference.seek(&t);
                    }
                    Op::SeekForPrev(k) => {
                        let t = ikey(&format!("{k:02}"), 3);
                        merge.seek_for_prev(&t);
                        reference.seek_for_prev(&t);
                    }
                    Op::First => {
                        merge.seek_to_first();
                        reference.seek_to_first();
                    }
                    Op::Last => {
                        merge.seek_to_last();
                        reference.seek_to_last();
                    }
                    Op::Next if reference.valid() => {
                        merge.next();
                        reference.next();
                    }
                    Op::Prev if reference.valid() => {
                        merge.prev();
                        reference.prev();
                    }
                    Op::Next | Op::Prev => continue,
                }
                prop_assert_eq!(merge.valid(), reference.valid());
                if reference.valid() {
                    prop_assert_eq!(merge.key(), reference.key());
                    prop_assert_eq!(merge.value(), reference.value());
                }
            }
        }
    }
}
