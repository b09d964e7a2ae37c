//! A cursor limited to the user keys of `[lower, upper)`: one part of a compaction split into
//! key ranges (subcompactions), each merged on its own thread. Bounds are user keys, so every
//! version of a user key falls in one part.

use siftdb_sstable::{user_key_of, InternalKey, SstError, MAX_SEQUENCE};

use siftdb_sstable::InternalIterator;

/// `inner`, seen only where its user keys lie in `[lower, upper)` (`None`: unbounded).
pub struct BoundedIterator {
    inner: Box<dyn InternalIterator>,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
}

impl BoundedIterator {
    /// `inner` limited to `[lower, upper)`.
    pub fn new(
        inner: Box<dyn InternalIterator>,
        lower: Option<Vec<u8>>,
        upper: Option<Vec<u8>>,
    ) -> BoundedIterator {
        BoundedIterator {
            inner,
            lower,
            upper,
        }
    }

    /// The key sorting before every version of `user_key`.
    fn first_version_of(user_key: &[u8]) -> InternalKey {
        InternalKey::for_lookup(user_key, MAX_SEQUENCE)
    }

    fn in_bounds(&self, user_key: &[u8]) -> bool {
        self.lower.as_deref().is_none_or(|l| user_key >= l)
            && self.upper.as_deref().is_none_or(|u| user_key < u)
    }
}

impl InternalIterator for BoundedIterator {
    fn valid(&self) -> bool {
        self.inner.valid() && self.in_bounds(user_key_of(self.inner.key()))
    }

    fn key(&self) -> &[u8] {
        self.inner.key()
    }

    fn value(&self) -> &[u8] {
        self.inner.value()
    }

    fn seek_to_first(&mut self) {
        match &self.lower {
            Some(lower) => self.inner.seek(Self::first_version_of(lower).encoded()),
            None => self.inner.seek_to_first(),
        }
    }

    fn seek_to_last(&mut self) {
        match &self.upper {
            Some(upper) => {
                // The last entry before the first version of `upper`.
                self.inner.seek(Self::first_version_of(upper).encoded());
                if self.inner.valid() {
                    self.inner.prev();
                } else {
                    self.inner.seek_to_last();
                }
            }
            None => self.inner.seek_to_last(),
        }
    }

    fn seek(&mut self, target: &[u8]) {
        match &self.lower {
            Some(lower) if user_key_of(target) < lower.as_slice() => self.seek_to_first(),
            _ => self.inner.seek(target),
        }
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        match &self.upper {
            Some(upper) if user_key_of(target) >= upper.as_slice() => self.seek_to_last(),
            _ => self.inner.seek_for_prev(target),
        }
    }

    fn next(&mut self) {
        self.inner.next();
    }

    fn prev(&mut self) {
        self.inner.prev();
    }

    fn take_error(&mut self) -> Option<SstError> {
        self.inner.take_error()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use siftdb_sstable::ValueKind;
    use siftdb_sstable::VecIter;

    fn entries() -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        for key in [&b"a"[..], b"b", b"c", b"d"] {
            for seq in [9u64, 5] {
                let k = InternalKey::new(key, seq, ValueKind::Put);
                out.push((k.encoded().to_vec(), format!("{seq}").into_bytes()));
            }
        }
        out
    }

    fn user_keys(it: &mut dyn InternalIterator, forward: bool) -> Vec<Vec<u8>> {
        let mut seen = Vec::new();
        while it.valid() {
            seen.push(user_key_of(it.key()).to_vec());
            if forward {
                it.next();
            } else {
                it.prev();
            }
        }
        seen
    }

    #[test]
    fn a_part_sees_every_version_of_its_keys_and_nothing_else() {
        let mut part = BoundedIterator::new(
            Box::new(VecIter::new(entries())),
            Some(b"b".to_vec()),
            Some(b"d".to_vec()),
        );
        part.seek_to_first();
        let forward = user_keys(&mut part, true);
        assert_eq!(forward, [b"b", b"b", b"c", b"c"].map(|k| k.to_vec()));
        part.seek_to_last();
        let backward = user_keys(&mut part, false);
        assert_eq!(backward, [b"c", b"c", b"b", b"b"].map(|k| k.to_vec()));
    }

    #[test]
    fn unbounded_sides_reach_the_ends() {
        let mut all = BoundedIterator::new(Box::new(VecIter::new(entries())), None, None);
        all.seek_to_first();
        assert_eq!(user_keys(&mut all, true).len(), 8);
        let mut tail =
            BoundedIterator::new(Box::new(VecIter::new(entries())), Some(b"c".to_vec()), None);
        tail.seek_to_last();
        assert_eq!(user_keys(&mut tail, false).len(), 4);
        tail.seek(InternalKey::new(b"a", 9, ValueKind::Put).encoded());
        assert_eq!(user_key_of(tail.key()), b"c");
    }
}
