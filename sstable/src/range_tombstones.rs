//! Range tombstones, fragmented: what a table (and a compaction) holds of `Db::delete_range`.
//!
//! A range tombstone deletes the user keys in `[start, end)` as of its sequence number. Stored as
//! written, overlapping tombstones would force a lookup to scan all of them; instead they are cut
//! at every start and end into non-overlapping *fragments* sorted by start, each listing the
//! sequence numbers of every tombstone covering it (RocksDB's fragmented range tombstones). A
//! lookup is then one binary search over the fragments and one over a fragment's sequences.
//!
//! ```text
//! tombstones:   [a ........ e)@5       [g .. k)@2
//!                    [c ........ h)@9
//! fragments:    [a  c){5} [c  e){9,5} [e  g){9} [g  h){9,2} [h  k){2}
//! ```
//!
//! Adjacent fragments with identical sequence lists are merged when fragmenting, so a fragment
//! ends exactly where coverage changes (a gap between fragments is uncovered).
//!
//! # Through flushes and compactions
//!
//! A flush writes a memtable's tombstones into the L0 table's range tombstone block. A
//! compaction fragments its inputs' tombstones together, collapses them (`collapsed`: per
//! fragment only the newest sequence of each snapshot stripe is kept, and at the bottom none
//! that every snapshot sees), clips them at each output's boundaries (`clipped`), and drops
//! every entry a tombstone deletes within the entry's own stripe (`GcRules::range_deleted` in
//! siftdb-compaction). A table's boundary keys cover its tombstones: when they reach past its
//! last point key, its largest key is an *end sentinel* (the end's user key at the largest
//! sequence, kind `RangeDelete`: `InternalKey::range_end_sentinel`), exclusive, so the next
//! table of the level may start at that very user key. Reads check tombstones independently of
//! the filter (a filter "no" still lets a table's tombstones delete the key); a table without
//! any pays one `Option` test.
//!
//! # Block encoding
//!
//! The table's range tombstone block (never compressed; the usual block trailer and CRC
//! follow it) holds the fragments in key order. Keys are prefix-compressed: a fragment's start
//! against the previous fragment's end (usually equal: fragments mostly touch), its end against
//! its own start. Sequences are stored newest first, the first in full, the rest as the
//! (positive) difference to the one before.
//!
//! ```text
//! block    := varint N | fragment × N
//! fragment := varint shared_s | varint unshared_s | start[shared_s..]   start: shared_s bytes
//!                                                                        of the previous end
//!           | varint shared_e | varint unshared_e | end[shared_e..]     end: shared_e bytes of
//!                                                                        this start
//!           | varint M | varint seq[0] | varint (seq[0] - seq[1]) | … | varint (seq[M-2] - seq[M-1])
//!
//! +-----+-------------------------------+--------------------------+-------------------------+
//! |  N  | sS uS start-suffix            | sE uE end-suffix         | M seq0 d1 … d(M-1)      | …
//! +-----+-------------------------------+--------------------------+-------------------------+
//! ```
//!
//! Decoding is strict: every fragment has `start < end` and `start ≥` the previous fragment's
//! end, `M ≥ 1`, `seq[0] ≤ MAX_SEQUENCE`, every difference `≥ 1` (strictly descending, no
//! underflow), a shared length no longer than the key it shares with, and nothing may follow
//! the last fragment. Anything else decodes to `None`.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use crate::coding::{get_bytes, get_len, get_varint, put_bytes, put_varint};
use crate::internal_key::MAX_SEQUENCE;

/// One range tombstone: user keys in `[start, end)` are deleted as of `sequence`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeTombstone {
    /// First user key deleted (inclusive).
    pub start: Vec<u8>,
    /// First user key after the range (exclusive).
    pub end: Vec<u8>,
    /// Sequence number of the deletion.
    pub sequence: u64,
}

impl RangeTombstone {
    /// The tombstone deleting `[start, end)` at `sequence`.
    pub fn new(start: impl Into<Vec<u8>>, end: impl Into<Vec<u8>>, sequence: u64) -> Self {
        RangeTombstone {
            start: start.into(),
            end: end.into(),
            sequence,
        }
    }

    /// Whether the range holds `user_key` (`start <= user_key < end`).
    pub fn covers(&self, user_key: &[u8]) -> bool {
        self.start.as_slice() <= user_key && user_key < self.end.as_slice()
    }
}

/// The first 16 bytes of `key` as a big-endian integer, zero-padded: if `head(a) < head(b)`
/// then `a < b` (bytewise); equal heads say nothing.
fn key_head(key: &[u8]) -> u128 {
    let mut bytes = [0u8; 16];
    let n = key.len().min(16);
    bytes[..n].copy_from_slice(&key[..n]);
    u128::from_be_bytes(bytes)
}

/// Where one fragment's parts sit in the shared buffers.
#[derive(Debug, Clone, Copy)]
struct Piece {
    /// The start's first 16 bytes as a big-endian integer (zero-padded): a lookup's binary
    /// search compares these and reads the key bytes only on a tie.
    start_head: u128,
    start_at: usize,
    start_len: usize,
    end_at: usize,
    end_len: usize,
    seq_at: usize,
    seq_len: usize,
}

/// Range tombstones fragmented into non-overlapping pieces sorted by start; each piece holds the
/// sequence numbers (strictly descending, no duplicates) of every tombstone covering it.
///
/// Stored flat: the boundary keys in one buffer (a fragment starting where the previous one
/// ends shares its key bytes), the sequences in another, and a small fixed-size record per
/// fragment.
#[derive(Clone, Default)]
pub struct FragmentedRangeTombstones {
    /// Boundary keys, back to back.
    keys: Vec<u8>,
    /// Every fragment's sequences, fragment after fragment, each run descending.
    sequences: Vec<u64>,
    /// The fragments in key order.
    pieces: Vec<Piece>,
}

impl PartialEq for FragmentedRangeTombstones {
    fn eq(&self, other: &Self) -> bool {
        self.pieces.len() == other.pieces.len() && self.fragments().eq(other.fragments())
    }
}

impl Eq for FragmentedRangeTombstones {}

impl std::fmt::Debug for FragmentedRangeTombstones {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.fragments().map(|(start, end, seqs)| {
                format!(
                    "[{:?}, {:?}) {seqs:?}",
                    String::from_utf8_lossy(start),
                    String::from_utf8_lossy(end)
                )
            }))
            .finish()
    }
}

impl FragmentedRangeTombstones {
    /// Fragments `tombstones` (any order, overlapping or not, may repeat; empty ones with
    /// `start >= end` are ignored; a sequence above [`MAX_SEQUENCE`] is taken as it). Adjacent
    /// fragments with identical sequence lists are merged.
    ///
    /// A sweep over the sorted boundaries with the active tombstones in an ordered multiset and
    /// their ends in a heap: O(n log n) plus the size of the result.
    pub fn new(tombstones: impl IntoIterator<Item = RangeTombstone>) -> Self {
        let mut list: Vec<RangeTombstone> =
            tombstones.into_iter().filter(|t| t.start < t.end).collect();
        let mut out = FragmentedRangeTombstones::default();
        if list.is_empty() {
            return out;
        }
        list.sort_unstable_by(|a, b| a.start.cmp(&b.start));
        let mut points: Vec<&[u8]> = list
            .iter()
            .flat_map(|t| [t.start.as_slice(), t.end.as_slice()])
            .collect();
        points.sort_unstable();
        points.dedup();
        // Sequence → how many active tombstones carry it.
        let mut active: BTreeMap<u64, usize> = BTreeMap::new();
        let mut ends: BinaryHeap<Reverse<(&[u8], u64)>> = BinaryHeap::new();
        let mut next = 0;
        let mut seqs = Vec::new();
        for (i, &point) in points.iter().enumerate() {
            while let Some(&Reverse((end, seq))) = ends.peek() {
                if end > point {
                    break;
                }
                ends.pop();
                if let Some(n) = active.get_mut(&seq) {
                    *n -= 1;
                    if *n == 0 {
                        active.remove(&seq);
                    }
                }
            }
            // Every start is a point and `list` is sorted by start: the tombstones starting
            // here are the next ones.
            while let Some(t) = list.get(next).filter(|t| t.start.as_slice() == point) {
                let seq = t.sequence.min(MAX_SEQUENCE);
                *active.entry(seq).or_insert(0) += 1;
                ends.push(Reverse((t.end.as_slice(), seq)));
                next += 1;
            }
            let Some(&upper) = points.get(i + 1) else {
                break;
            };
            if active.is_empty() {
                continue;
            }
            seqs.clear();
            seqs.extend(active.keys().rev().copied());
            out.push_merging(point, upper, &seqs);
        }
        out
    }

    /// Whether there are no tombstones.
    pub fn is_empty(&self) -> bool {
        self.pieces.is_empty()
    }

    /// Number of fragments.
    pub fn len(&self) -> usize {
        self.pieces.len()
    }

    /// Fragment-sequence pairs (the tombstones as stored).
    pub fn tombstone_count(&self) -> usize {
        self.sequences.len()
    }

    /// The largest sequence number `<= snapshot` of a tombstone covering `user_key`
    /// (`start <= user_key < end`), if any. Two binary searches: over the fragments, then over
    /// the covering fragment's sequences.
    pub fn max_covering(&self, user_key: &[u8], snapshot: u64) -> Option<u64> {
        let seqs = self.seqs_of(self.piece_at(user_key)?);
        let newer = seqs.partition_point(|&s| s > snapshot);
        seqs.get(newer).copied()
    }

    /// The fragment covering `user_key` if any: (start, end, sequences descending) — lets an
    /// iterator know where coverage ends.
    pub fn fragment_at(&self, user_key: &[u8]) -> Option<(&[u8], &[u8], &[u64])> {
        self.piece_at(user_key).map(|p| self.parts(p))
    }

    /// Fragments in key order: (start, end, sequences descending).
    pub fn fragments(&self) -> impl Iterator<Item = (&[u8], &[u8], &[u64])> + '_ {
        self.pieces.iter().map(move |p| self.parts(p))
    }

    /// One [`RangeTombstone`] per (fragment, sequence), in key order (a fragment's sequences
    /// newest first).
    pub fn tombstones(&self) -> impl Iterator<Item = RangeTombstone> + '_ {
        self.fragments().flat_map(|(start, end, seqs)| {
            seqs.iter()
                .map(move |&sequence| RangeTombstone::new(start, end, sequence))
        })
    }

    /// Smallest start and largest end, `None` if empty.
    pub fn bounds(&self) -> Option<(&[u8], &[u8])> {
        let first = self.pieces.first()?;
        let last = self.pieces.last()?;
        Some((self.start_of(first), self.end_of(last)))
    }

    /// The smallest and largest sequence number of any tombstone, `None` if empty.
    pub fn sequence_range(&self) -> Option<(u64, u64)> {
        let mut seqs = self.fragments().map(|(_, _, s)| s);
        let first = seqs.next()?;
        let init = (first.last().copied()?, first.first().copied()?);
        Some(seqs.fold(init, |(lo, hi), s| {
            (
                s.last().map_or(lo, |&v| v.min(lo)),
                s.first().map_or(hi, |&v| v.max(hi)),
            )
        }))
    }

    /// The same fragments, each covered by one tombstone at `sequence` in place of the
    /// sequences it lists: the tombstones of a table read at a global sequence number (all
    /// written at 0, so one per fragment and the count is kept).
    pub(crate) fn at_sequence(&self, sequence: u64) -> FragmentedRangeTombstones {
        let mut out = FragmentedRangeTombstones::default();
        let sequence = [sequence.min(MAX_SEQUENCE)];
        for (start, end, _) in self.fragments() {
            out.push(start, end, &sequence);
        }
        out
    }

    /// The pieces overlapping `[lower, upper)` clipped to it (`None` = unbounded on that side).
    /// Used to split a compaction's tombstones between output files.
    pub fn clipped(&self, lower: Option<&[u8]>, upper: Option<&[u8]>) -> FragmentedRangeTombstones {
        let mut out = FragmentedRangeTombstones::default();
        // Ends ascend with the starts (the fragments do not overlap).
        let first = lower.map_or(0, |l| self.pieces.partition_point(|p| self.end_of(p) <= l));
        for p in self.pieces.get(first..).unwrap_or_default() {
            let (start, end, seqs) = self.parts(p);
            if upper.is_some_and(|u| start >= u) {
                break;
            }
            let start = lower.filter(|&l| l > start).unwrap_or(start);
            let end = upper.filter(|&u| u < end).unwrap_or(end);
            if start < end {
                out.push(start, end, seqs);
            }
        }
        out
    }

    /// Garbage collection for compaction. `snapshots` ascending (sorted here if not); the stripe
    /// of sequence `s` is the number of snapshots `< s` (so stripe 0 is visible to every
    /// snapshot). Within one stripe only the newest sequence of a fragment is kept (every
    /// snapshot that sees an older one sees it too); with `drop_oldest_stripe` (bottommost
    /// level), sequences in stripe 0 are removed entirely. Fragments left with no sequence
    /// vanish. Also returns how many (fragment, sequence) pairs were dropped:
    /// `self.tombstone_count() == kept.tombstone_count() + dropped` (neighbours left with equal
    /// lists are not merged).
    pub fn collapsed(
        &self,
        snapshots: &[u64],
        drop_oldest_stripe: bool,
    ) -> (FragmentedRangeTombstones, u64) {
        let sorted;
        let snapshots = if snapshots.is_sorted() {
            snapshots
        } else {
            sorted = {
                let mut s = snapshots.to_vec();
                s.sort_unstable();
                s
            };
            &sorted[..]
        };
        let mut out = FragmentedRangeTombstones::default();
        let mut dropped = 0u64;
        let mut kept = Vec::new();
        for (start, end, seqs) in self.fragments() {
            kept.clear();
            let mut kept_stripe = None;
            for &seq in seqs {
                let stripe = snapshots.partition_point(|&snap| snap < seq);
                if kept_stripe == Some(stripe) || (drop_oldest_stripe && stripe == 0) {
                    dropped += 1;
                } else {
                    kept_stripe = Some(stripe);
                    kept.push(seq);
                }
            }
            if !kept.is_empty() {
                out.push(start, end, &kept);
            }
        }
        (out, dropped)
    }

    /// The block contents (layout in the module documentation).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.keys.len() + self.sequences.len() * 2 + 8);
        put_varint(&mut out, self.pieces.len() as u64);
        let mut prev_end: &[u8] = &[];
        for (start, end, seqs) in self.fragments() {
            put_shared(&mut out, prev_end, start);
            put_shared(&mut out, start, end);
            put_varint(&mut out, seqs.len() as u64);
            let mut prev = None;
            for &seq in seqs {
                put_varint(&mut out, prev.map_or(seq, |p: u64| p.saturating_sub(seq)));
                prev = Some(seq);
            }
            prev_end = end;
        }
        out
    }

    /// Strict decode: `None` unless `bytes` are exactly a valid encoding (fragments sorted,
    /// non-overlapping, `start < end`, sequences strictly descending and ≤ [`MAX_SEQUENCE`],
    /// nothing trailing). Never panics.
    pub fn decode(bytes: &[u8]) -> Option<FragmentedRangeTombstones> {
        /// A fragment takes at least this many bytes (five varints and an end byte).
        const MIN_FRAGMENT_BYTES: usize = 6;
        let mut pos = 0;
        let count = get_len(bytes, &mut pos)?;
        let mut out = FragmentedRangeTombstones::default();
        out.pieces
            .reserve(count.min(bytes.len().saturating_sub(pos) / MIN_FRAGMENT_BYTES));
        let (mut start, mut end, mut prev_end) = (Vec::new(), Vec::new(), Vec::new());
        let mut seqs = Vec::new();
        for _ in 0..count {
            get_shared(bytes, &mut pos, &prev_end, &mut start)?;
            get_shared(bytes, &mut pos, &start, &mut end)?;
            // `prev_end` is empty before the first fragment, and every key is ≥ the empty key.
            if start < prev_end || start >= end {
                return None;
            }
            let n = get_len(bytes, &mut pos).filter(|&n| n > 0)?;
            let mut seq = get_varint(bytes, &mut pos).filter(|&s| s <= MAX_SEQUENCE)?;
            seqs.clear();
            seqs.push(seq);
            for _ in 1..n {
                let delta = get_varint(bytes, &mut pos).filter(|&d| d > 0)?;
                seq = seq.checked_sub(delta)?;
                seqs.push(seq);
            }
            out.push(&start, &end, &seqs);
            std::mem::swap(&mut prev_end, &mut end);
        }
        (pos == bytes.len()).then_some(out)
    }

    // ---- internals ----

    fn start_of(&self, p: &Piece) -> &[u8] {
        self.keys
            .get(p.start_at..p.start_at + p.start_len)
            .unwrap_or_default()
    }

    fn end_of(&self, p: &Piece) -> &[u8] {
        self.keys
            .get(p.end_at..p.end_at + p.end_len)
            .unwrap_or_default()
    }

    fn seqs_of(&self, p: &Piece) -> &[u64] {
        self.sequences
            .get(p.seq_at..p.seq_at + p.seq_len)
            .unwrap_or_default()
    }

    fn parts(&self, p: &Piece) -> (&[u8], &[u8], &[u64]) {
        (self.start_of(p), self.end_of(p), self.seqs_of(p))
    }

    /// The fragment covering `user_key`: the last one starting at or before it, if it ends
    /// after it.
    fn piece_at(&self, user_key: &[u8]) -> Option<&Piece> {
        use std::cmp::Ordering::{Equal, Greater, Less};
        let head = key_head(user_key);
        let after = self
            .pieces
            .partition_point(|p| match p.start_head.cmp(&head) {
                Less => true,
                Equal => self.start_of(p) <= user_key,
                Greater => false,
            });
        let p = self.pieces.get(after.checked_sub(1)?)?;
        (user_key < self.end_of(p)).then_some(p)
    }

    /// Appends a fragment that starts at or after the last one's end. A start equal to the last
    /// end shares its bytes.
    fn push(&mut self, start: &[u8], end: &[u8], seqs: &[u64]) {
        let start_at = match self.pieces.last() {
            Some(prev) if self.end_of(prev) == start => prev.end_at,
            _ => {
                self.keys.extend_from_slice(start);
                self.keys.len() - start.len()
            }
        };
        let end_at = self.keys.len();
        self.keys.extend_from_slice(end);
        let seq_at = self.sequences.len();
        self.sequences.extend_from_slice(seqs);
        self.pieces.push(Piece {
            start_head: key_head(start),
            start_at,
            start_len: start.len(),
            end_at,
            end_len: end.len(),
            seq_at,
            seq_len: seqs.len(),
        });
    }

    /// [`Self::push`], extending the last fragment instead when it ends at `start` with the
    /// same sequences.
    fn push_merging(&mut self, start: &[u8], end: &[u8], seqs: &[u64]) {
        if let Some(&prev) = self.pieces.last()
            && self.end_of(&prev) == start
            && self.seqs_of(&prev) == seqs
        {
            // The last fragment's end is the last key written: replace it.
            self.keys.truncate(prev.end_at);
            self.keys.extend_from_slice(end);
            if let Some(last) = self.pieces.last_mut() {
                last.end_len = end.len();
            }
            return;
        }
        self.push(start, end, seqs);
    }
}

/// Appends `key` as the length it shares with `base`, then the rest, length-prefixed.
fn put_shared(out: &mut Vec<u8>, base: &[u8], key: &[u8]) {
    let shared = base.iter().zip(key).take_while(|(a, b)| a == b).count();
    put_varint(out, shared as u64);
    put_bytes(out, &key[shared..]);
}

/// Decodes a key [`put_shared`] wrote against `base` into `out`.
fn get_shared(bytes: &[u8], pos: &mut usize, base: &[u8], out: &mut Vec<u8>) -> Option<()> {
    let shared = get_len(bytes, pos)?;
    let rest = get_bytes(bytes, pos)?;
    out.clear();
    out.extend_from_slice(base.get(..shared)?);
    out.extend_from_slice(rest);
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn t(start: &str, end: &str, seq: u64) -> RangeTombstone {
        RangeTombstone::new(start.as_bytes(), end.as_bytes(), seq)
    }

    fn frags(f: &FragmentedRangeTombstones) -> Vec<(String, String, Vec<u64>)> {
        f.fragments()
            .map(|(s, e, q)| {
                (
                    String::from_utf8_lossy(s).into_owned(),
                    String::from_utf8_lossy(e).into_owned(),
                    q.to_vec(),
                )
            })
            .collect()
    }

    fn fr(s: &str, e: &str, q: &[u64]) -> (String, String, Vec<u64>) {
        (s.to_string(), e.to_string(), q.to_vec())
    }

    /// The invariants every value must hold.
    fn assert_valid(f: &FragmentedRangeTombstones) {
        let mut prev_end: Option<&[u8]> = None;
        let mut count = 0;
        for (s, e, q) in f.fragments() {
            assert!(s < e, "{f:?}");
            if let Some(p) = prev_end {
                assert!(p <= s, "{f:?}");
            }
            assert!(!q.is_empty(), "{f:?}");
            assert!(q.windows(2).all(|w| w[0] > w[1]), "{f:?}");
            assert!(q[0] <= MAX_SEQUENCE);
            count += q.len();
            prev_end = Some(e);
        }
        assert_eq!(count, f.tombstone_count());
    }

    #[test]
    fn overlapping_tombstones_fragment() {
        let f = FragmentedRangeTombstones::new([t("a", "e", 5), t("c", "h", 9), t("g", "k", 2)]);
        assert_eq!(
            frags(&f),
            vec![
                fr("a", "c", &[5]),
                fr("c", "e", &[9, 5]),
                fr("e", "g", &[9]),
                fr("g", "h", &[9, 2]),
                fr("h", "k", &[2]),
            ]
        );
        assert_eq!(f.len(), 5);
        assert_eq!(f.tombstone_count(), 7);
        assert_eq!(f.bounds(), Some((&b"a"[..], &b"k"[..])));
        assert_eq!(f.sequence_range(), Some((2, 9)));
        assert_valid(&f);
    }

    #[test]
    fn nested_identical_and_repeated_tombstones_fragment() {
        // Nested.
        let f = FragmentedRangeTombstones::new([t("a", "z", 3), t("m", "n", 9), t("m", "n", 1)]);
        assert_eq!(
            frags(&f),
            vec![
                fr("a", "m", &[3]),
                fr("m", "n", &[9, 3, 1]),
                fr("n", "z", &[3])
            ]
        );
        // Identical ranges, repeated tombstones: one fragment, each sequence once.
        let f = FragmentedRangeTombstones::new([
            t("b", "d", 4),
            t("b", "d", 2),
            t("b", "d", 4),
            t("b", "d", 4),
        ]);
        assert_eq!(frags(&f), vec![fr("b", "d", &[4, 2])]);
        assert_eq!(f.tombstone_count(), 2);
        // Same sequence on overlapping ranges: one sequence per fragment, merged back.
        let f = FragmentedRangeTombstones::new([t("a", "c", 7), t("b", "d", 7)]);
        assert_eq!(frags(&f), vec![fr("a", "d", &[7])]);
        // The same tombstones in any order.
        let g = FragmentedRangeTombstones::new([t("b", "d", 7), t("a", "c", 7)]);
        assert_eq!(f, g);
    }

    #[test]
    fn adjacent_gapped_and_empty_tombstones() {
        // Adjacent with equal sequences merge; with different ones they stay apart.
        let f = FragmentedRangeTombstones::new([t("a", "b", 1), t("b", "c", 1), t("c", "d", 2)]);
        assert_eq!(frags(&f), vec![fr("a", "c", &[1]), fr("c", "d", &[2])]);
        // A gap stays a gap, even with equal sequences on both sides.
        let f = FragmentedRangeTombstones::new([t("a", "b", 1), t("c", "d", 1)]);
        assert_eq!(frags(&f), vec![fr("a", "b", &[1]), fr("c", "d", &[1])]);
        assert_eq!(f.max_covering(b"b", 10), None);
        assert_eq!(f.max_covering(b"bz", 10), None);
        assert_eq!(f.max_covering(b"c", 10), Some(1));
        // Empty and inverted ranges are ignored.
        let f = FragmentedRangeTombstones::new([t("b", "b", 1), t("c", "a", 2)]);
        assert!(f.is_empty());
        assert_eq!(f.len(), 0);
        assert_eq!(f.bounds(), None);
        assert_eq!(f.sequence_range(), None);
        assert_eq!(f, FragmentedRangeTombstones::default());
        // The empty key is a key like any other.
        let f = FragmentedRangeTombstones::new([t("", "a", 3)]);
        assert_eq!(f.max_covering(b"", 3), Some(3));
        assert_eq!(f.max_covering(b"\0", 2), None);
        assert_eq!(f.max_covering(b"a", 3), None);
        // Sequences beyond the 56 bits are taken as the largest.
        let f = FragmentedRangeTombstones::new([t("a", "b", u64::MAX)]);
        assert_eq!(f.max_covering(b"a", u64::MAX), Some(MAX_SEQUENCE));
    }

    #[test]
    fn lookups_respect_snapshots_and_fragment_edges() {
        let f = FragmentedRangeTombstones::new([t("a", "e", 5), t("c", "h", 9)]);
        assert_eq!(f.max_covering(b"c", 100), Some(9));
        assert_eq!(f.max_covering(b"c", 9), Some(9));
        assert_eq!(f.max_covering(b"c", 8), Some(5));
        assert_eq!(f.max_covering(b"c", 4), None);
        assert_eq!(f.max_covering(b"e", 8), None);
        assert_eq!(f.max_covering(b"h", 100), None);
        assert_eq!(f.max_covering(b"0", 100), None);
        assert_eq!(
            f.fragment_at(b"d"),
            Some((&b"c"[..], &b"e"[..], &[9u64, 5][..]))
        );
        assert_eq!(
            f.fragment_at(b"g"),
            Some((&b"e"[..], &b"h"[..], &[9u64][..]))
        );
        assert_eq!(f.fragment_at(b"h"), None);
        let all: Vec<RangeTombstone> = f.tombstones().collect();
        assert_eq!(
            all,
            vec![
                t("a", "c", 5),
                t("c", "e", 9),
                t("c", "e", 5),
                t("e", "h", 9)
            ]
        );
    }

    #[test]
    fn clipped_cuts_at_both_sides() {
        let f = FragmentedRangeTombstones::new([t("a", "e", 5), t("c", "h", 9), t("k", "m", 1)]);
        let c = f.clipped(Some(b"b"), Some(b"d"));
        assert_eq!(frags(&c), vec![fr("b", "c", &[5]), fr("c", "d", &[9, 5])]);
        let c = f.clipped(Some(b"f"), None);
        assert_eq!(frags(&c), vec![fr("f", "h", &[9]), fr("k", "m", &[1])]);
        let c = f.clipped(None, Some(b"c"));
        assert_eq!(frags(&c), vec![fr("a", "c", &[5])]);
        assert_eq!(f.clipped(None, None), f);
        assert!(f.clipped(Some(b"h"), Some(b"k")).is_empty());
        assert!(f.clipped(Some(b"d"), Some(b"d")).is_empty());
        assert!(f.clipped(Some(b"e"), Some(b"a")).is_empty());
        assert!(f.clipped(Some(b"m"), None).is_empty());
        assert!(f.clipped(None, Some(b"a")).is_empty());
    }

    #[test]
    fn collapsed_keeps_the_newest_per_stripe() {
        let f = FragmentedRangeTombstones::new([
            t("a", "c", 10),
            t("a", "c", 8),
            t("a", "c", 5),
            t("a", "c", 3),
            t("c", "d", 2),
        ]);
        // Stripes with snapshots [4, 9]: 10 → 2, 8 → 1, 5 → 1, 3 → 0, 2 → 0.
        let (c, dropped) = f.collapsed(&[4, 9], false);
        assert_eq!(
            frags(&c),
            vec![fr("a", "c", &[10, 8, 3]), fr("c", "d", &[2])]
        );
        assert_eq!(dropped, 1);
        let (c, dropped) = f.collapsed(&[4, 9], true);
        assert_eq!(frags(&c), vec![fr("a", "c", &[10, 8])]);
        assert_eq!(dropped, 3);
        // A snapshot equal to a sequence sees it: 8 is in stripe 0 with snapshot 8.
        let (c, _) = f.collapsed(&[8], false);
        assert_eq!(frags(&c), vec![fr("a", "c", &[10, 8]), fr("c", "d", &[2])]);
        // No snapshots: the newest only, or nothing at the bottom.
        let (c, dropped) = f.collapsed(&[], false);
        assert_eq!(frags(&c), vec![fr("a", "c", &[10]), fr("c", "d", &[2])]);
        assert_eq!(dropped, 3);
        let (c, dropped) = f.collapsed(&[], true);
        assert!(c.is_empty());
        assert_eq!(dropped, 5);
        // Unsorted snapshots are sorted first.
        assert_eq!(f.collapsed(&[9, 4], false), f.collapsed(&[4, 9], false));
    }

    #[test]
    fn encoding_round_trips_and_is_compact() {
        let f = FragmentedRangeTombstones::new([
            t("key-000100", "key-000200", 77),
            t("key-000150", "key-000300", 1 << 40),
            t("key-000150", "key-000300", MAX_SEQUENCE),
            t("", "\0", 0),
        ]);
        let bytes = f.encode();
        assert_eq!(FragmentedRangeTombstones::decode(&bytes), Some(f.clone()));
        // Touching fragments share their boundary, and neighbouring keys their prefixes: 100
        // fragments of 10-byte keys (2000 key bytes) take a few bytes each.
        let key = |i: u64| format!("key-{i:06}").into_bytes();
        let chain = FragmentedRangeTombstones::new(
            (0..100).map(|i| RangeTombstone::new(key(i), key(i + 1), 100 + i % 2)),
        );
        assert_eq!(chain.len(), 100);
        let bytes = chain.encode();
        assert!(bytes.len() <= 100 * 8, "{} bytes", bytes.len());
        assert_eq!(FragmentedRangeTombstones::decode(&bytes), Some(chain));
        let empty = FragmentedRangeTombstones::default();
        assert_eq!(empty.encode(), vec![0]);
        assert_eq!(FragmentedRangeTombstones::decode(&[0]), Some(empty));
    }

    #[test]
    fn encoding_matches_the_documented_bytes() {
        // docs/FORMAT.md shows these bytes.
        let f = FragmentedRangeTombstones::new([t("a", "e", 5), t("c", "e", 9)]);
        assert_eq!(frags(&f), vec![fr("a", "c", &[5]), fr("c", "e", &[9, 5])]);
        assert_eq!(
            f.encode(),
            [2, 0, 1, b'a', 0, 1, b'c', 1, 5, 1, 0, 0, 1, b'e', 2, 9, 4]
        );
    }

    /// A fragment as the tests write it: start, end, sequences.
    type RawFragment<'a> = (&'a [u8], &'a [u8], &'a [u64]);

    /// Encodes fragments as given, valid or not.
    fn raw(frags: &[RawFragment<'_>]) -> Vec<u8> {
        let mut out = Vec::new();
        put_varint(&mut out, frags.len() as u64);
        for (s, e, q) in frags {
            put_varint(&mut out, 0);
            put_bytes(&mut out, s);
            put_varint(&mut out, 0);
            put_bytes(&mut out, e);
            put_varint(&mut out, q.len() as u64);
            let mut prev = None;
            for &seq in q.iter() {
                put_varint(&mut out, prev.map_or(seq, |p: u64| p.wrapping_sub(seq)));
                prev = Some(seq);
            }
        }
        out
    }

    #[test]
    fn decode_is_strict() {
        let ok = raw(&[(b"a", b"c", &[5, 3]), (b"c", b"d", &[1])]);
        let f = FragmentedRangeTombstones::decode(&ok).unwrap();
        assert_eq!(frags(&f), vec![fr("a", "c", &[5, 3]), fr("c", "d", &[1])]);
        let bad: [&[RawFragment<'_>]; 8] = [
            &[(b"c", b"d", &[1]), (b"a", b"b", &[1])], // unsorted
            &[(b"a", b"c", &[1]), (b"b", b"d", &[2])], // overlapping
            &[(b"b", b"b", &[1])],                     // empty range
            &[(b"c", b"b", &[1])],                     // inverted
            &[(b"a", b"b", &[])],                      // no sequence
            &[(b"a", b"b", &[3, 3])],                  // duplicate sequence
            &[(b"a", b"b", &[3, 4])],                  // ascending
            &[(b"a", b"b", &[MAX_SEQUENCE + 1])],      // beyond 56 bits
        ];
        for b in bad {
            assert_eq!(FragmentedRangeTombstones::decode(&raw(b)), None, "{b:?}");
        }
        // Trailing bytes.
        let mut trailing = ok.clone();
        trailing.push(0);
        assert_eq!(FragmentedRangeTombstones::decode(&trailing), None);
        // A shared length longer than the key it shares with.
        let mut long_share = Vec::new();
        put_varint(&mut long_share, 1);
        put_varint(&mut long_share, 1); // the first start shares with nothing
        put_bytes(&mut long_share, b"a");
        put_varint(&mut long_share, 0);
        put_bytes(&mut long_share, b"b");
        put_varint(&mut long_share, 1);
        put_varint(&mut long_share, 1);
        assert_eq!(FragmentedRangeTombstones::decode(&long_share), None);
        // A count no input can hold does not allocate for it.
        let mut huge = Vec::new();
        put_varint(&mut huge, u64::MAX >> 1);
        assert_eq!(FragmentedRangeTombstones::decode(&huge), None);
        assert_eq!(FragmentedRangeTombstones::decode(&[]), None);
    }

    #[test]
    fn decode_of_truncations_and_bit_flips_never_panics() {
        let f = FragmentedRangeTombstones::new([
            t("apple", "banana", 30),
            t("avocado", "cherry", 12),
            t("b", "bz", 99),
            t("x", "y", 1),
        ]);
        let bytes = f.encode();
        for len in 0..bytes.len() {
            assert_eq!(
                FragmentedRangeTombstones::decode(&bytes[..len]),
                None,
                "truncation to {len}"
            );
        }
        let mut decoded = 0;
        for at in 0..bytes.len() {
            for bit in 0..8 {
                let mut bad = bytes.clone();
                bad[at] ^= 1 << bit;
                if let Some(g) = FragmentedRangeTombstones::decode(&bad) {
                    assert_valid(&g);
                    assert_eq!(FragmentedRangeTombstones::decode(&g.encode()), Some(g));
                    decoded += 1;
                }
            }
        }
        // Most flips change a key or a sequence and still decode: the block CRC catches them.
        assert!(decoded > 0);
    }

    #[test]
    fn many_tombstones_fragment_quickly() {
        // A chain of 20 000 overlapping tombstones: quadratic fragmentation would take minutes.
        let n = 20_000u64;
        let key = |i: u64| format!("k{i:08}").into_bytes();
        let f = FragmentedRangeTombstones::new(
            (0..n).map(|i| RangeTombstone::new(key(i), key(i + 2), i + 1)),
        );
        assert_eq!(f.len(), n as usize + 1);
        assert_eq!(f.tombstone_count(), 2 * n as usize);
        assert_eq!(f.max_covering(&key(500), u64::MAX), Some(501));
        assert_eq!(f.max_covering(&key(500), 500), Some(500));
        assert_eq!(f.max_covering(&key(500), 499), None);
    }

    fn arb_tombstones() -> impl Strategy<Value = Vec<RangeTombstone>> {
        // Keys of one or two letters from a small alphabet, so ranges collide often.
        let key = proptest::collection::vec(b'a'..b'f', 0..3);
        proptest::collection::vec((key.clone(), key, 0u64..12), 0..12).prop_map(|v| {
            v.into_iter()
                .map(|(s, e, q)| RangeTombstone::new(s, e, q))
                .collect()
        })
    }

    /// Every key of up to three letters `a..=f` (and the empty key): covers every boundary and
    /// the keys between them.
    fn probe_keys() -> Vec<Vec<u8>> {
        let mut keys = vec![Vec::new()];
        for len in 1..=3 {
            let mut next = Vec::new();
            for k in keys.iter().filter(|k| k.len() == len - 1) {
                for c in b'a'..=b'f' {
                    let mut k = k.clone();
                    k.push(c);
                    next.push(k);
                }
            }
            keys.extend(next);
        }
        keys
    }

    fn brute_max(list: &[RangeTombstone], key: &[u8], snapshot: u64) -> Option<u64> {
        list.iter()
            .filter(|t| t.covers(key) && t.sequence <= snapshot)
            .map(|t| t.sequence)
            .max()
    }

    fn brute_set(list: &[RangeTombstone], key: &[u8]) -> Vec<u64> {
        let mut s: Vec<u64> = list
            .iter()
            .filter(|t| t.covers(key))
            .map(|t| t.sequence)
            .collect();
        s.sort_unstable_by(|a, b| b.cmp(a));
        s.dedup();
        s
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn max_covering_matches_brute_force(list in arb_tombstones()) {
            let f = FragmentedRangeTombstones::new(list.clone());
            assert_valid(&f);
            for key in probe_keys() {
                prop_assert_eq!(
                    f.fragment_at(&key).map(|(_, _, q)| q.to_vec()).unwrap_or_default(),
                    brute_set(&list, &key)
                );
                if let Some((s, e, _)) = f.fragment_at(&key) {
                    prop_assert!(s <= key.as_slice() && key.as_slice() < e);
                }
                for snapshot in [0, 3, 6, 11, u64::MAX] {
                    prop_assert_eq!(f.max_covering(&key, snapshot), brute_max(&list, &key, snapshot));
                }
            }
            // Re-fragmenting the stored tombstones gives the same fragments (merged fully).
            prop_assert_eq!(FragmentedRangeTombstones::new(f.tombstones()), f.clone());
            // Bounds: the smallest start and largest end of the non-empty inputs.
            let live: Vec<&RangeTombstone> = list.iter().filter(|t| t.start < t.end).collect();
            let bounds = live.iter().map(|t| t.start.as_slice()).min()
                .zip(live.iter().map(|t| t.end.as_slice()).max());
            prop_assert_eq!(f.bounds(), bounds);
        }

        #[test]
        fn encoding_round_trips(list in arb_tombstones()) {
            let f = FragmentedRangeTombstones::new(list);
            let bytes = f.encode();
            prop_assert_eq!(FragmentedRangeTombstones::decode(&bytes), Some(f));
        }

        #[test]
        fn decode_random_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            if let Some(f) = FragmentedRangeTombstones::decode(&bytes) {
                assert_valid(&f);
                prop_assert_eq!(FragmentedRangeTombstones::decode(&f.encode()), Some(f));
            }
        }

        #[test]
        fn clipped_matches_brute_force(
            list in arb_tombstones(),
            lower in proptest::option::of(proptest::collection::vec(b'a'..b'f', 0..3)),
            upper in proptest::option::of(proptest::collection::vec(b'a'..b'f', 0..3)),
        ) {
            let f = FragmentedRangeTombstones::new(list);
            let c = f.clipped(lower.as_deref(), upper.as_deref());
            assert_valid(&c);
            for key in probe_keys() {
                let inside = lower.as_ref().is_none_or(|l| l <= &key)
                    && upper.as_ref().is_none_or(|u| &key < u);
                let want = if inside { f.fragment_at(&key).map(|(_, _, q)| q) } else { None };
                prop_assert_eq!(c.fragment_at(&key).map(|(_, _, q)| q), want);
            }
        }

        #[test]
        fn collapsed_keeps_what_every_snapshot_sees(
            list in arb_tombstones(),
            mut snapshots in proptest::collection::vec(0u64..12, 0..4),
            drop_oldest_stripe in any::<bool>(),
        ) {
            snapshots.sort_unstable();
            let f = FragmentedRangeTombstones::new(list);
            let (c, dropped) = f.collapsed(&snapshots, drop_oldest_stripe);
            assert_valid(&c);
            prop_assert_eq!(f.tombstone_count(), c.tombstone_count() + dropped as usize);
            let stripe = |s: u64| snapshots.partition_point(|&x| x < s);
            for key in probe_keys() {
                // Every read (at a snapshot, or the newest state) sees the same newest covering
                // tombstone — except one visible to every snapshot at the bottom, which goes.
                for &read in snapshots.iter().chain([&u64::MAX]) {
                    let want = f
                        .max_covering(&key, read)
                        .filter(|&s| !(drop_oldest_stripe && stripe(s) == 0));
                    prop_assert_eq!(c.max_covering(&key, read), want);
                }
                // At most one sequence per stripe is left.
                if let Some((_, _, q)) = c.fragment_at(&key) {
                    prop_assert!(q.windows(2).all(|w| stripe(w[0]) != stripe(w[1])));
                }
            }
        }
    }
}
