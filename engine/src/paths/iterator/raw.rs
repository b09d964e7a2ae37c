//! The user-key cursor over the merge of a view: one entry per user key, the newest version
//! visible at the read's sequence, tombstones hidden — in both directions (LevelDB's `DBIter`).
//!
//! Going forward the cursor sits on the newest visible version of the current key, and `key` and
//! `value` are read in place (from the memtable entry or the data block). Going backward the
//! versions of a key arrive oldest first, so the cursor walks past all of them to learn which is
//! the newest visible one: it then sits *before* the current key's entries and keeps copies of the
//! key and value (as RocksDB's `DBIter` does in reverse).
//!
//! Two things make the newest visible entry of a key more than "the answer": a range tombstone
//! newer than it (of any memtable or table: the [`Visibility`] holds them all) deletes it, and a
//! merge operand stacks on the versions below it — the cursor gathers the operands down to their
//! base and combines them with the merge operator, leaving the result in its own buffers.

use std::ops::Bound;
use std::sync::Arc;

use siftdb_sstable::blob::BlobIndex;
use siftdb_sstable::{FragmentedRangeTombstones, InternalKey, ParsedKey, ValueKind, MAX_SEQUENCE};
use siftdb_sstable::{InternalIterator, MergingIterator};

use crate::base::error::{Error, Result};
use crate::base::merge::MergeOperator;
use crate::core::blob_file::BlobReads;
use crate::core::key_bounds::KeyBounds;
use crate::core::shared::Shared;

/// What decides which entries a read sees, fixed when the cursor is made: its sequence number,
/// the time expiring values are judged by, the range tombstones of everything it reads, and the
/// merge operator.
#[derive(Clone, Default)]
pub(crate) struct Visibility {
    pub sequence: u64,
    /// Milliseconds since the Unix epoch.
    pub now: u64,
    /// The range tombstones of the memtables and tables read (each list fragmented).
    pub tombstones: Vec<Arc<FragmentedRangeTombstones>>,
    pub merge_operator: Option<Arc<dyn MergeOperator>>,
    /// Where the values of blob indexes are read (`None`: a cursor over no tables).
    pub blobs: Option<BlobReads>,
}

impl Visibility {
    /// The sequence number of the newest range tombstone visible to the read that covers `key`
    /// (0: none; every entry has a sequence number ≥ 1, so none is below it).
    fn covering(&self, key: &[u8]) -> u64 {
        self.tombstones
            .iter()
            .filter_map(|t| t.max_covering(key, self.sequence))
            .max()
            .unwrap_or(0)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Reverse,
}

/// A cursor over the database's keys in both directions, shaped like RocksDB's
/// `DBRawIterator`: position it with a `seek*`, then step with [`RawIterator::next`] /
/// [`RawIterator::prev`]; [`RawIterator::key`] and [`RawIterator::value`] borrow from the
/// cursor (no allocation per entry going forward). It sees the database as of its creation and
/// owns what it reads (no borrow of the `Db`; it can move to another thread).
///
/// With bounds ([`ReadOptions::iterate_lower_bound`](crate::ReadOptions::iterate_lower_bound),
/// [`ReadOptions::iterate_upper_bound`](crate::ReadOptions::iterate_upper_bound), given to
/// [`Db::raw_iter_opt`](crate::Db::raw_iter_opt)) it never leaves them: a seek outside them
/// lands on the nearest end, and stepping past one makes the cursor not valid. Bounds also let
/// each seek pass over tables whose range filter rules out what it would read.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let db = siftdb::Db::open(dir.path(), siftdb::Options::default())?;
/// for k in ["a", "b", "c"] {
///     db.put(k, k.to_uppercase())?;
/// }
/// let mut it = db.raw_iter();
/// it.seek_for_prev(b"bb"); // the last key <= "bb"
/// assert_eq!((it.key(), it.value()), (&b"b"[..], &b"B"[..]));
/// it.prev();
/// assert_eq!(it.key(), b"a");
/// it.prev();
/// assert!(!it.valid());
/// it.status()?; // the walk ended at the start, not at an error
/// # Ok::<(), siftdb::Error>(())
/// ```
pub struct RawIterator {
    /// Keeps the database's shared state alive for as long as the cursor reads from it (`None`
    /// for a cursor inside a call that holds it).
    _db: Option<Arc<Shared>>,
    merge: MergingIterator,
    /// Sequence number, clock and range tombstones: one cursor sees one state.
    seen: Visibility,
    direction: Direction,
    valid: bool,
    /// Going forward, scratch space for skipping the current key's older versions (and the
    /// current key when `resolved`); going backward, the current key.
    saved_key: Vec<u8>,
    /// Going backward (or forward when `resolved`), the current value.
    saved_value: Vec<u8>,
    /// Going forward: the current value is a merge result, in `saved_key`/`saved_value`, and
    /// the merge sits past the operands it used.
    resolved: bool,
    /// Going forward, where the current value starts in the merge's (past an expiry time).
    value_offset: usize,
    error: Option<Error>,
    /// Why the cursor could not be made ([`RawIterator::failed`]): reported after every seek.
    broken: Option<Error>,
    /// The user keys the cursor keeps to.
    bounds: KeyBounds,
    /// The current value is a blob index (in the merge's value going forward, in
    /// `saved_value` going backward): [`RawIterator::value`] reads the value it points to on
    /// first use, so a scan of keys alone never reads a blob.
    current_is_blob: bool,
    /// The current blob value, once read (or why it could not be).
    blob_value: std::sync::OnceLock<std::result::Result<Arc<Vec<u8>>, Error>>,
    /// The keyspace its sampled seek latencies are labelled with (cargo feature `metrics`).
    #[cfg(feature = "metrics")]
    keyspace: Option<Arc<str>>,
}

impl std::fmt::Debug for RawIterator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawIterator")
            .field("sequence", &self.seen.sequence)
            .field("valid", &self.valid)
            .finish()
    }
}

impl RawIterator {
    /// A cursor over `merge` that sees what `seen` says, within `bounds`.
    pub(crate) fn new(
        db: Option<Arc<Shared>>,
        merge: MergingIterator,
        seen: Visibility,
        bounds: KeyBounds,
    ) -> RawIterator {
        RawIterator {
            bounds,
            _db: db,
            value_offset: 0,
            merge,
            seen,
            direction: Direction::Forward,
            valid: false,
            saved_key: Vec::new(),
            saved_value: Vec::new(),
            resolved: false,
            error: None,
            broken: None,
            current_is_blob: false,
            blob_value: std::sync::OnceLock::new(),
            #[cfg(feature = "metrics")]
            keyspace: None,
        }
    }

    /// The cursor, its seek latencies labelled with keyspace `name` (cargo feature `metrics`).
    #[cfg(feature = "metrics")]
    pub(crate) fn in_keyspace(mut self, name: &Arc<str>) -> RawIterator {
        self.keyspace = Some(Arc::clone(name));
        self
    }

    /// The cursor (without the feature `metrics` there is no label to give it).
    #[cfg(not(feature = "metrics"))]
    #[inline(always)]
    pub(crate) fn in_keyspace(self, _name: &Arc<str>) -> RawIterator {
        self
    }

    /// A cursor that only reports `error`.
    pub(crate) fn failed(db: Arc<Shared>, sequence: u64, error: Error) -> RawIterator {
        let seen = Visibility {
            sequence,
            ..Visibility::default()
        };
        let merge = MergingIterator::new(Vec::new());
        let mut it = RawIterator::new(Some(db), merge, seen, KeyBounds::all());
        it.error = Some(error.duplicate());
        it.broken = Some(error);
        it
    }

    /// Whether the cursor is on a key.
    pub fn valid(&self) -> bool {
        self.valid
    }

    /// The current key (empty when not valid).
    pub fn key(&self) -> &[u8] {
        if !self.valid {
            return &[];
        }
        match self.direction {
            Direction::Forward if !self.resolved => siftdb_sstable::user_key_of(self.merge.key()),
            _ => &self.saved_key,
        }
    }

    /// The current value (empty when not valid). A value kept in a blob file is read here, on
    /// first use; if that read fails, the value is empty and [`RawIterator::status`] says why.
    pub fn value(&self) -> &[u8] {
        if !self.valid {
            return &[];
        }
        if self.current_is_blob {
            return match self.blob_value() {
                Ok(value) => value.as_slice(),
                Err(_) => &[],
            };
        }
        self.stored_value()
    }

    /// The current value, or the error reading it from its blob file.
    pub(crate) fn try_value(&self) -> Result<&[u8]> {
        if self.valid && self.current_is_blob {
            return match self.blob_value() {
                Ok(value) => Ok(value.as_slice()),
                Err(e) => Err(e.duplicate()),
            };
        }
        Ok(self.value())
    }

    /// The current blob value, read once.
    fn blob_value(&self) -> &std::result::Result<Arc<Vec<u8>>, Error> {
        self.blob_value.get_or_init(|| {
            let key = self.key();
            match &self.seen.blobs {
                Some(blobs) => blobs.fetch(key, self.stored_value()),
                None => Err(Error::corruption(
                    "a blob index in a cursor without blob files",
                )),
            }
        })
    }

    /// The current value as stored (a blob index for a blob value).
    fn stored_value(&self) -> &[u8] {
        match self.direction {
            Direction::Forward if !self.resolved => {
                self.merge.value().get(self.value_offset..).unwrap_or(&[])
            }
            _ => &self.saved_value,
        }
    }

    /// `Err` if the cursor stopped at damaged data (it is then not valid), or if the current
    /// value could not be read from its blob file; else `Ok`.
    pub fn status(&self) -> Result<()> {
        if let Some(e) = &self.error {
            return Err(e.duplicate());
        }
        match self.blob_value.get() {
            Some(Err(e)) if self.valid => Err(e.duplicate()),
            _ => Ok(()),
        }
    }

    /// The error that stopped the cursor, taken out (used by [`DbIterator`](crate::DbIterator)).
    pub(crate) fn take_error(&mut self) -> Option<Error> {
        self.error.take()
    }

    /// Moves to the first key (within the bounds).
    pub fn seek_to_first(&mut self) {
        match self.bounds.lower_key().map(<[u8]>::to_vec) {
            Some(lower) => self.seek(&lower),
            None => {
                self.restart(Direction::Forward);
                self.merge.seek_to_first();
                self.find_next_entry(false);
            }
        }
    }

    /// Moves to the last key (within the bounds).
    pub fn seek_to_last(&mut self) {
        match self.bounds.upper_key().map(<[u8]>::to_vec) {
            Some(upper) => self.seek_for_prev(&upper),
            None => {
                self.restart(Direction::Reverse);
                self.merge.seek_to_last();
                self.find_prev_entry();
            }
        }
    }

    /// Moves to the first key ≥ `key` (the first key within the bounds if `key` is below them).
    pub fn seek(&mut self, key: &[u8]) {
        self.timed_seek(|it| it.seek_forward(key));
    }

    /// Runs a seek, its latency sampled (cargo feature `metrics`).
    fn timed_seek(&mut self, seek: impl FnOnce(&mut Self)) {
        #[cfg(feature = "metrics")]
        let sampled = crate::paths::latency::sample();
        seek(self);
        #[cfg(feature = "metrics")]
        if let Some(start) = sampled {
            crate::paths::latency::record(
                crate::paths::latency::Op::Seek,
                self.keyspace.as_ref(),
                start,
            );
        }
    }

    fn seek_forward(&mut self, key: &[u8]) {
        self.restart(Direction::Forward);
        let key = match self.bounds.lower_key() {
            Some(lower) if !self.bounds.above_lower(key) => lower,
            _ => key,
        };
        self.merge
            .seek(InternalKey::for_lookup(key, self.seen.sequence).encoded());
        self.find_next_entry(false);
    }

    /// Moves to the last key ≤ `key` (the last key within the bounds if `key` is above them).
    pub fn seek_for_prev(&mut self, key: &[u8]) {
        self.timed_seek(|it| it.seek_backward(key));
    }

    fn seek_backward(&mut self, key: &[u8]) {
        self.restart(Direction::Reverse);
        let target = match &self.bounds.upper {
            // The smallest internal key of an excluded bound: every version of it sorts after
            // it, so the merge lands below the bound.
            Bound::Excluded(upper) if key >= upper.as_slice() => {
                InternalKey::for_lookup(upper, MAX_SEQUENCE)
            }
            // An included bound is the last key within the bounds: seek from its largest
            // internal key, as for a `key` equal to it.
            Bound::Included(upper) if key > upper.as_slice() => {
                InternalKey::new(upper, 0, ValueKind::Delete)
            }
            // The largest internal key of `key` (sequence 0, the smallest kind): every version
            // of `key` sorts at or before it.
            _ => InternalKey::new(key, 0, ValueKind::Delete),
        };
        self.merge.seek_for_prev(target.encoded());
        self.find_prev_entry();
    }

    /// Moves to the next key (no effect when not valid).
    pub fn next(&mut self) {
        if !self.valid {
            return;
        }
        if self.direction == Direction::Reverse {
            // The merge sits before the current key's entries: step onto them, then past them
            // (`saved_key` holds the current key).
            self.direction = Direction::Forward;
            if self.merge.valid() {
                self.merge.next();
            } else {
                self.merge.seek_to_first();
            }
        } else if !self.resolved {
            self.saved_key.clear();
            self.saved_key
                .extend_from_slice(siftdb_sstable::user_key_of(self.merge.key()));
            self.merge.next();
        }
        // (When `resolved`, `saved_key` is the current key and the merge is already past the
        // entries the merge result used: the skip below passes the rest of the key.)
        self.find_next_entry(true);
    }

    /// Moves to the previous key (no effect when not valid).
    pub fn prev(&mut self) {
        if !self.valid {
            return;
        }
        if self.direction == Direction::Forward {
            // Walk back past every entry of the current key: the merge then sits on the last
            // entry of an earlier key, where a backward search starts.
            if !self.resolved {
                self.saved_key.clear();
                self.saved_key
                    .extend_from_slice(siftdb_sstable::user_key_of(self.merge.key()));
            } else if !self.merge.valid() {
                // A merge result's operands reached the end of the data.
                self.merge.seek_to_last();
            }
            loop {
                if !self.merge.valid() {
                    self.end();
                    return;
                }
                if siftdb_sstable::user_key_of(self.merge.key()) < self.saved_key.as_slice() {
                    break;
                }
                self.merge.prev();
            }
            self.direction = Direction::Reverse;
            self.resolved = false;
        }
        self.find_prev_entry();
    }

    /// For the merge's current entry of `kind`: where its value starts if it is a live value
    /// (past the expiry time of an expiring one), `None` for a tombstone or an expired value;
    /// `Err` for an expiring value too short to hold its expiry.
    fn expiring_offset(&self, kind: ValueKind) -> std::result::Result<Option<usize>, ()> {
        match kind {
            ValueKind::Delete => Ok(None),
            ValueKind::Put | ValueKind::Merge => Ok(Some(0)),
            ValueKind::ExpiringPut => {
                let (expiry, _) = crate::base::ttl::decode(self.merge.value()).ok_or(())?;
                Ok((self.seen.now < expiry).then_some(crate::base::ttl::EXPIRY_LEN))
            }
            // The whole stored value is the blob index; its expiry is in it.
            ValueKind::BlobIndex => {
                let index = BlobIndex::decode(self.merge.value()).ok_or(())?;
                let expired = index.expiry.is_some_and(|e| self.seen.now >= e);
                Ok((!expired).then_some(0))
            }
            // Range tombstones are never point entries.
            ValueKind::RangeDelete => Err(()),
        }
    }

    fn restart(&mut self, direction: Direction) {
        self.direction = direction;
        self.resolved = false;
        self.clear_blob();
        // A cursor that could not be made reports why after every positioning, not only the
        // first (its merge is empty: without this a seek would show "no keys" instead).
        self.error = self.broken.as_ref().map(Error::duplicate);
        self.saved_key.clear();
        self.saved_value.clear();
    }

    /// Forgets the current blob value (the cursor moves).
    fn clear_blob(&mut self) {
        self.current_is_blob = false;
        self.blob_value = std::sync::OnceLock::new();
    }

    /// Not on a key: at an end, or stopped by the merge's error.
    fn end(&mut self) {
        self.valid = false;
        self.saved_key.clear();
        self.saved_value.clear();
        if let Some(e) = self.merge.take_error() {
            self.error = Some(Error::from(e));
        }
    }

    fn corrupt(&mut self) {
        self.valid = false;
        self.error = Some(Error::corruption("undecodable internal key in iteration"));
    }

    /// From the merge's position forward: the first entry that is the newest visible version of
    /// its key and not deleted (by a tombstone, a newer range tombstone, or expiry); a merge
    /// operand is resolved there. With `skipping`, versions of `saved_key` are passed over.
    fn find_next_entry(&mut self, mut skipping: bool) {
        self.resolved = false;
        self.clear_blob();
        while self.merge.valid() {
            let Some(parsed) = ParsedKey::parse(self.merge.key()) else {
                return self.corrupt();
            };
            if !self.bounds.below_upper(parsed.user_key) {
                break;
            }
            let hidden = (skipping && parsed.user_key <= self.saved_key.as_slice())
                || !self.bounds.above_lower(parsed.user_key);
            if parsed.sequence <= self.seen.sequence && !hidden {
                // The newest visible version of its key.
                let covered = parsed.sequence < self.seen.covering(parsed.user_key);
                if !covered && parsed.kind == ValueKind::Merge {
                    return self.resolve_forward();
                }
                match self.expiring_offset(parsed.kind) {
                    Ok(Some(offset)) if !covered => {
                        self.value_offset = offset;
                        self.current_is_blob = parsed.kind == ValueKind::BlobIndex;
                        self.valid = true;
                        return;
                    }
                    // Deleted: everything older of this key is gone.
                    Ok(_) => {
                        self.saved_key.clear();
                        self.saved_key.extend_from_slice(parsed.user_key);
                        skipping = true;
                    }
                    Err(()) => return self.corrupt(),
                }
            }
            self.merge.next();
        }
        self.end();
    }

    /// The merge is on a merge operand, the newest visible version of its key: gathers the
    /// operands below it down to their base (a value; or nothing, at a tombstone, a range
    /// tombstone's cover, an expired value or the key's end) and combines them. The result goes
    /// to `saved_key`/`saved_value`; the merge is left on the first entry not used.
    fn resolve_forward(&mut self) {
        let key = siftdb_sstable::user_key_of(self.merge.key()).to_vec();
        let cover = self.seen.covering(&key);
        let mut operands = vec![self.merge.value().to_vec()];
        let mut base: Option<Vec<u8>> = None;
        self.merge.next();
        while self.merge.valid() {
            let Some(parsed) = ParsedKey::parse(self.merge.key()) else {
                return self.corrupt();
            };
            if parsed.user_key != key.as_slice() || parsed.sequence < cover {
                break;
            }
            let value = self.merge.value();
            match parsed.kind {
                ValueKind::Merge => operands.push(value.to_vec()),
                ValueKind::Delete => break,
                kind => {
                    let Ok(offset) = self.expiring_offset(kind) else {
                        return self.corrupt();
                    };
                    let stored = offset.map(|o| value.get(o..).unwrap_or(&[]));
                    base = match (kind, stored) {
                        (ValueKind::BlobIndex, Some(index)) => match self.fetch_blob(&key, index) {
                            Ok(value) => Some(value),
                            Err(e) => return self.fail(e),
                        },
                        (_, stored) => stored.map(<[u8]>::to_vec),
                    };
                    break;
                }
            }
            self.merge.next();
        }
        if !self.merge.valid()
            && let Some(e) = self.merge.take_error()
        {
            self.valid = false;
            self.error = Some(Error::from(e));
            return;
        }
        let oldest_first: Vec<&[u8]> = operands.iter().rev().map(Vec::as_slice).collect();
        let merged = crate::base::merge::full_merge_for_read(
            self.seen.merge_operator.as_ref(),
            &key,
            base.as_deref(),
            &oldest_first,
        );
        match merged {
            Ok(value) => {
                self.saved_key = key;
                self.saved_value = value;
                self.resolved = true;
                self.valid = true;
            }
            Err(e) => {
                self.valid = false;
                self.error = Some(e);
            }
        }
    }

    /// The value the blob index `stored` of `key` points to, copied (a merge's base).
    fn fetch_blob(&self, key: &[u8], stored: &[u8]) -> Result<Vec<u8>> {
        match &self.seen.blobs {
            Some(blobs) => blobs.fetch(key, stored).map(|v| v.as_ref().clone()),
            None => Err(Error::corruption(
                "a blob index in a cursor without blob files",
            )),
        }
    }

    /// Stops the cursor at `error`.
    fn fail(&mut self, error: Error) {
        self.valid = false;
        self.error = Some(error);
    }

    /// From the merge's position backward: the previous key whose newest visible version is a
    /// value (or merge operands), its key and value copied; the merge is left before that key's
    /// entries. A key's versions arrive oldest first, so its state is built up: a value replaces
    /// the state, a tombstone (or a newer range tombstone's cover, or expiry) clears it, an
    /// operand stacks on it.
    fn find_prev_entry(&mut self) {
        self.resolved = false;
        self.clear_blob();
        let mut have_key = false;
        let mut cover = 0;
        // The key's state so far: a base value (in `saved_value`; a blob index if
        // `base_is_blob`) and operands above it.
        let mut has_base = false;
        let mut base_is_blob = false;
        let mut operands: Vec<Vec<u8>> = Vec::new();
        while self.merge.valid() {
            let Some(parsed) = ParsedKey::parse(self.merge.key()) else {
                return self.corrupt();
            };
            if !self.bounds.above_lower(parsed.user_key) {
                // Below the bounds: as if the data began here.
                break;
            }
            if parsed.sequence <= self.seen.sequence && self.bounds.below_upper(parsed.user_key) {
                let same_key = have_key && parsed.user_key == self.saved_key.as_slice();
                if !same_key {
                    if has_base || !operands.is_empty() {
                        // Past every version of the key found: it is the answer.
                        break;
                    }
                    have_key = true;
                    self.saved_key.clear();
                    self.saved_key.extend_from_slice(parsed.user_key);
                    cover = self.seen.covering(parsed.user_key);
                }
                let offset = match self.expiring_offset(parsed.kind) {
                    _ if parsed.sequence < cover => None,
                    Ok(offset) => offset,
                    Err(()) => return self.corrupt(),
                };
                let value = self.merge.value();
                match (parsed.kind, offset) {
                    (ValueKind::Merge, Some(_)) if parsed.sequence >= cover => {
                        operands.push(value.to_vec());
                    }
                    (kind, Some(offset)) => {
                        self.saved_value.clear();
                        self.saved_value
                            .extend_from_slice(value.get(offset..).unwrap_or(&[]));
                        has_base = true;
                        base_is_blob = kind == ValueKind::BlobIndex;
                        operands.clear();
                    }
                    (_, None) => {
                        has_base = false;
                        operands.clear();
                    }
                }
            }
            self.merge.prev();
        }
        if !has_base && operands.is_empty() {
            self.end();
            self.direction = Direction::Forward;
            return;
        }
        self.valid = true;
        if !self.merge.valid()
            && let Some(e) = self.merge.take_error()
        {
            self.valid = false;
            self.error = Some(Error::from(e));
            return;
        }
        if has_base && base_is_blob && !operands.is_empty() {
            // The operands' base is in a blob file: read it to merge.
            match self.fetch_blob(&self.saved_key, &self.saved_value) {
                Ok(value) => self.saved_value = value,
                Err(e) => return self.fail(e),
            }
        } else if has_base && base_is_blob {
            self.current_is_blob = true;
        }
        if !operands.is_empty() {
            let ops: Vec<&[u8]> = operands.iter().map(Vec::as_slice).collect();
            let base = has_base.then_some(self.saved_value.as_slice());
            match crate::base::merge::full_merge_for_read(
                self.seen.merge_operator.as_ref(),
                &self.saved_key,
                base,
                &ops,
            ) {
                Ok(value) => self.saved_value = value,
                Err(e) => {
                    self.valid = false;
                    self.error = Some(e);
                }
            }
        }
    }
}
