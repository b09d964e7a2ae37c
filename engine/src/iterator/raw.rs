//! The user-key cursor over the merge of a view: one entry per user key, the newest version
//! visible at the read's sequence, tombstones hidden — in both directions (LevelDB's `DBIter`).
//!
//! Going forward the cursor sits on the newest visible version of the current key, and `key` and
//! `value` are read in place (from the memtable entry or the data block). Going backward the
//! versions of a key arrive oldest first, so the cursor walks past all of them to learn which is
//! the newest visible one: it then sits *before* the current key's entries and keeps copies of the
//! key and value (as RocksDB's `DBIter` does in reverse).

use std::sync::Arc;

use siftdb_compaction::{InternalIterator, MergingIterator};
use siftdb_sstable::{InternalKey, ParsedKey, ValueKind};

use crate::db::DbInner;
use crate::error::{Error, Result};

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
    /// Keeps the database's shared state alive for as long as the cursor reads from it.
    _db: Arc<DbInner>,
    merge: MergingIterator,
    sequence: u64,
    direction: Direction,
    valid: bool,
    /// Going forward, scratch space for skipping the current key's older versions; going
    /// backward, the current key.
    saved_key: Vec<u8>,
    /// Going backward, the current value.
    saved_value: Vec<u8>,
    /// Going forward, where the current value starts in the merge's (past an expiry time).
    value_offset: usize,
    /// The time expiring values are judged by (milliseconds), fixed when the cursor is made:
    /// one cursor sees one state.
    now: u64,
    error: Option<Error>,
}

impl std::fmt::Debug for RawIterator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawIterator")
            .field("sequence", &self.sequence)
            .field("valid", &self.valid)
            .finish()
    }
}

impl RawIterator {
    /// A cursor over `merge` as of `sequence`, judging expiring values at `now` (milliseconds).
    pub(crate) fn new(
        db: Arc<DbInner>,
        merge: MergingIterator,
        sequence: u64,
        now: u64,
    ) -> RawIterator {
        RawIterator {
            _db: db,
            value_offset: 0,
            now,
            merge,
            sequence,
            direction: Direction::Forward,
            valid: false,
            saved_key: Vec::new(),
            saved_value: Vec::new(),
            error: None,
        }
    }

    /// A cursor that only reports `error`.
    pub(crate) fn failed(db: Arc<DbInner>, sequence: u64, error: Error) -> RawIterator {
        let mut it = RawIterator::new(db, MergingIterator::new(Vec::new()), sequence, 0);
        it.error = Some(error);
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
            Direction::Forward => siftdb_sstable::user_key_of(self.merge.key()),
            Direction::Reverse => &self.saved_key,
        }
    }

    /// The current value (empty when not valid).
    pub fn value(&self) -> &[u8] {
        if !self.valid {
            return &[];
        }
        match self.direction {
            Direction::Forward => self.merge.value().get(self.value_offset..).unwrap_or(&[]),
            Direction::Reverse => &self.saved_value,
        }
    }

    /// `Err` if the cursor stopped at damaged data (it is then not valid), else `Ok`.
    pub fn status(&self) -> Result<()> {
        match &self.error {
            Some(e) => Err(e.duplicate()),
            None => Ok(()),
        }
    }

    /// The error that stopped the cursor, taken out (used by [`DbIterator`](crate::DbIterator)).
    pub(crate) fn take_error(&mut self) -> Option<Error> {
        self.error.take()
    }

    /// Moves to the first key.
    pub fn seek_to_first(&mut self) {
        self.restart(Direction::Forward);
        self.merge.seek_to_first();
        self.find_next_entry(false);
    }

    /// Moves to the last key.
    pub fn seek_to_last(&mut self) {
        self.restart(Direction::Reverse);
        self.merge.seek_to_last();
        self.find_prev_entry();
    }

    /// Moves to the first key ≥ `key`.
    pub fn seek(&mut self, key: &[u8]) {
        self.restart(Direction::Forward);
        self.merge
            .seek(InternalKey::for_lookup(key, self.sequence).encoded());
        self.find_next_entry(false);
    }

    /// Moves to the last key ≤ `key`.
    pub fn seek_for_prev(&mut self, key: &[u8]) {
        self.restart(Direction::Reverse);
        // The largest internal key of `key` (sequence 0, the smallest kind): every version of
        // `key` sorts at or before it.
        self.merge
            .seek_for_prev(InternalKey::new(key, 0, ValueKind::Delete).encoded());
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
        } else {
            self.saved_key.clear();
            self.saved_key
                .extend_from_slice(siftdb_sstable::user_key_of(self.merge.key()));
            self.merge.next();
        }
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
            self.saved_key.clear();
            self.saved_key
                .extend_from_slice(siftdb_sstable::user_key_of(self.merge.key()));
            loop {
                self.merge.prev();
                if !self.merge.valid() {
                    self.end();
                    return;
                }
                if siftdb_sstable::user_key_of(self.merge.key()) < self.saved_key.as_slice() {
                    break;
                }
            }
            self.direction = Direction::Reverse;
        }
        self.find_prev_entry();
    }

    /// For the merge's current entry of `kind`: where its value starts if it is a live value
    /// (past the expiry time of an expiring one), `None` for a tombstone or an expired value;
    /// `Err` for an expiring value too short to hold its expiry.
    fn expiring_offset(&self, kind: ValueKind) -> std::result::Result<Option<usize>, ()> {
        match kind {
            ValueKind::Delete => Ok(None),
            ValueKind::Put => Ok(Some(0)),
            ValueKind::ExpiringPut => {
                let (expiry, _) = crate::ttl::decode(self.merge.value()).ok_or(())?;
                Ok((self.now < expiry).then_some(crate::ttl::EXPIRY_LEN))
            }
        }
    }

    fn restart(&mut self, direction: Direction) {
        self.direction = direction;
        self.error = None;
        self.saved_key.clear();
        self.saved_value.clear();
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
    /// its key and not a tombstone. With `skipping`, versions of `saved_key` are passed over.
    fn find_next_entry(&mut self, mut skipping: bool) {
        while self.merge.valid() {
            let Some(parsed) = ParsedKey::parse(self.merge.key()) else {
                return self.corrupt();
            };
            if parsed.sequence <= self.sequence {
                let hidden = skipping && parsed.user_key <= self.saved_key.as_slice();
                let live = match self.expiring_offset(parsed.kind) {
                    _ if hidden => None,
                    Ok(offset) => Some(offset),
                    Err(()) => return self.corrupt(),
                };
                match live {
                    // The newest visible version is a value: the answer.
                    Some(Some(offset)) => {
                        self.value_offset = offset;
                        self.valid = true;
                        return;
                    }
                    // A tombstone, or an expired value: everything older of this key is gone.
                    Some(None) => {
                        self.saved_key.clear();
                        self.saved_key.extend_from_slice(parsed.user_key);
                        skipping = true;
                    }
                    None => {}
                }
            }
            self.merge.next();
        }
        self.end();
    }

    /// From the merge's position backward: the previous key whose newest visible version is a
    /// value, its key and value copied; the merge is left before that key's entries.
    fn find_prev_entry(&mut self) {
        let mut found = false;
        while self.merge.valid() {
            let Some(parsed) = ParsedKey::parse(self.merge.key()) else {
                return self.corrupt();
            };
            if parsed.sequence <= self.sequence {
                if found && parsed.user_key < self.saved_key.as_slice() {
                    // Past every version of the key found: it is the answer.
                    break;
                }
                self.saved_key.clear();
                self.saved_key.extend_from_slice(parsed.user_key);
                self.saved_value.clear();
                let Ok(offset) = self.expiring_offset(parsed.kind) else {
                    return self.corrupt();
                };
                found = offset.is_some();
                if let Some(offset) = offset {
                    let value = self.merge.value();
                    self.saved_value
                        .extend_from_slice(value.get(offset..).unwrap_or(&[]));
                }
            }
            self.merge.prev();
        }
        if found {
            self.valid = true;
            if !self.merge.valid() {
                if let Some(e) = self.merge.take_error() {
                    self.valid = false;
                    self.error = Some(Error::from(e));
                }
            }
        } else {
            self.end();
            self.direction = Direction::Forward;
        }
    }
}
