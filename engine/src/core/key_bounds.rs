//! The user-key range an iterator is limited to, from any `RangeBounds` or a prefix.

use std::ops::{Bound, RangeBounds};

/// An owned range of user keys.
#[derive(Debug, Clone)]
pub(crate) struct KeyBounds {
    pub lower: Bound<Vec<u8>>,
    pub upper: Bound<Vec<u8>>,
}

fn owned<K: AsRef<[u8]>>(bound: Bound<&K>) -> Bound<Vec<u8>> {
    match bound {
        Bound::Included(k) => Bound::Included(k.as_ref().to_vec()),
        Bound::Excluded(k) => Bound::Excluded(k.as_ref().to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

impl KeyBounds {
    /// Every key.
    pub(crate) fn all() -> KeyBounds {
        KeyBounds {
            lower: Bound::Unbounded,
            upper: Bound::Unbounded,
        }
    }

    /// The keys `range` holds.
    pub(crate) fn of<K: AsRef<[u8]>, R: RangeBounds<K>>(range: &R) -> KeyBounds {
        KeyBounds {
            lower: owned(range.start_bound()),
            upper: owned(range.end_bound()),
        }
    }

    /// The keys that start with `prefix`: `[prefix, successor)`, where the successor is the
    /// prefix with its last byte below 0xff incremented and what follows it dropped (no upper
    /// bound if every byte is 0xff).
    pub(crate) fn prefix(prefix: &[u8]) -> KeyBounds {
        let mut successor = prefix.to_vec();
        let upper = loop {
            match successor.pop() {
                None => break Bound::Unbounded,
                Some(0xff) => continue,
                Some(byte) => {
                    successor.push(byte + 1);
                    break Bound::Excluded(successor);
                }
            }
        };
        KeyBounds {
            lower: Bound::Included(prefix.to_vec()),
            upper,
        }
    }

    /// The bounds narrowed to keys `≥ lower` and `< upper` as well (`None`: no further bound
    /// on that side): RocksDB's `iterate_lower_bound` and `iterate_upper_bound`.
    pub(crate) fn narrowed(mut self, lower: Option<&[u8]>, upper: Option<&[u8]>) -> KeyBounds {
        // `≥ lower` is the tighter bound exactly when `lower` itself is within the current one.
        if let Some(l) = lower
            && self.above_lower(l)
        {
            self.lower = Bound::Included(l.to_vec());
        }
        if let Some(u) = upper {
            let tighter = match &self.upper {
                Bound::Included(c) | Bound::Excluded(c) => u <= c.as_slice(),
                Bound::Unbounded => true,
            };
            if tighter {
                self.upper = Bound::Excluded(u.to_vec());
            }
        }
        self
    }

    /// The key of the lower bound, included or not.
    pub(crate) fn lower_key(&self) -> Option<&[u8]> {
        match &self.lower {
            Bound::Included(k) | Bound::Excluded(k) => Some(k),
            Bound::Unbounded => None,
        }
    }

    /// The key of the upper bound, included or not.
    pub(crate) fn upper_key(&self) -> Option<&[u8]> {
        match &self.upper {
            Bound::Included(k) | Bound::Excluded(k) => Some(k),
            Bound::Unbounded => None,
        }
    }

    /// The bounds as a half-open range `[start, end)` of user keys (`None`: unbounded): an
    /// excluded lower bound or an included upper one becomes its successor key (`k` + `0x00`,
    /// the smallest key above `k`).
    pub(crate) fn half_open(&self) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
        let successor = |k: &Vec<u8>| {
            let mut s = k.clone();
            s.push(0);
            s
        };
        let start = match &self.lower {
            Bound::Included(l) => Some(l.clone()),
            Bound::Excluded(l) => Some(successor(l)),
            Bound::Unbounded => None,
        };
        let end = match &self.upper {
            Bound::Included(u) => Some(successor(u)),
            Bound::Excluded(u) => Some(u.clone()),
            Bound::Unbounded => None,
        };
        (start, end)
    }

    /// Whether `key` is at or above the lower bound.
    pub(crate) fn above_lower(&self, key: &[u8]) -> bool {
        match &self.lower {
            Bound::Included(l) => key >= l.as_slice(),
            Bound::Excluded(l) => key > l.as_slice(),
            Bound::Unbounded => true,
        }
    }

    /// Whether `key` is at or below the upper bound.
    pub(crate) fn below_upper(&self, key: &[u8]) -> bool {
        match &self.upper {
            Bound::Included(u) => key <= u.as_slice(),
            Bound::Excluded(u) => key < u.as_slice(),
            Bound::Unbounded => true,
        }
    }

    /// Whether a table holding user keys `[smallest, largest]` may hold a key in the range.
    pub(crate) fn overlaps(&self, smallest: &[u8], largest: &[u8]) -> bool {
        self.above_lower(largest) && self.below_upper(smallest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_bounds_cover_exactly_the_prefix() {
        let b = KeyBounds::prefix(b"ab\xff");
        assert_eq!(b.upper, Bound::Excluded(b"ac".to_vec()));
        assert!(b.above_lower(b"ab\xff") && b.below_upper(b"ab\xff\xff\xff"));
        assert!(!b.below_upper(b"ac") && !b.above_lower(b"ab"));
        assert_eq!(KeyBounds::prefix(b"\xff\xff").upper, Bound::Unbounded);
        assert_eq!(KeyBounds::prefix(b"").upper, Bound::Unbounded);
    }

    #[test]
    fn range_bounds_of_every_kind() {
        let b = KeyBounds::of(&(&b"b"[..]..=&b"d"[..]));
        assert!(b.above_lower(b"b") && b.below_upper(b"d"));
        assert!(b.overlaps(b"a", b"b") && !b.overlaps(b"d\0", b"z"));
        let b = KeyBounds::of::<&[u8], _>(&(Bound::Excluded(&b"b"[..]), Bound::Unbounded));
        assert!(!b.above_lower(b"b") && b.above_lower(b"b\0") && b.below_upper(b"\xff"));
        assert!(!b.overlaps(b"a", b"b"));
        let empty = KeyBounds::of(&(&b"b"[..]..&b"b"[..]));
        assert!(!(empty.above_lower(b"b") && empty.below_upper(b"b")));
        assert!(KeyBounds::all().overlaps(b"", b"\xff"));
    }

    #[test]
    fn narrowing_keeps_the_tighter_bound_on_each_side() {
        let b = KeyBounds::of(&(&b"b"[..]..=&b"m"[..])).narrowed(Some(b"c"), Some(b"z"));
        assert_eq!(b.lower, Bound::Included(b"c".to_vec()));
        assert_eq!(b.upper, Bound::Included(b"m".to_vec()));
        let b = KeyBounds::of(&(&b"b"[..]..=&b"m"[..])).narrowed(Some(b"a"), Some(b"m"));
        assert_eq!(b.lower, Bound::Included(b"b".to_vec()));
        assert_eq!(b.upper, Bound::Excluded(b"m".to_vec()));
        let excluded = KeyBounds::of::<&[u8], _>(&(Bound::Excluded(&b"b"[..]), Bound::Unbounded));
        let b = excluded.narrowed(Some(b"b"), None);
        assert_eq!(b.lower, Bound::Excluded(b"b".to_vec()));
        assert_eq!(b.upper, Bound::Unbounded);
        let b = KeyBounds::all().narrowed(None, Some(b"k"));
        assert_eq!((b.lower_key(), b.upper_key()), (None, Some(&b"k"[..])));
    }
}
