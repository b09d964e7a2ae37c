//! [`PinnedValue`]: a value read without copying it out of the block cache.
//!
//! `get_pinned` takes the path of `get` (`paths/read.rs`) with one difference at the table:
//! `Table::get_prepared_pinned` hands back the data block (an `Arc` shared with the block cache)
//! and where the value lies in it (siftdb-sstable's `PinnedValue`) instead of copying the value
//! out. Only a plain put found in a table stays pinned: a value from a memtable, a merge operand,
//! a blob index, an expiring value or a version a range tombstone hides is copied into the
//! lookup's buffer for the resolution that follows (`unpin_unless_put`). This type wraps either
//! form, so no sstable type shows in the API.

use std::ops::Deref;

/// A value read by [`Readable::get_pinned`](crate::Readable::get_pinned) (of a `Db`, a
/// `Keyspace`, a `Snapshot` or a `Transaction`): RocksDB's `PinnableSlice`.
///
/// A value stored as a plain put in a table is not copied: the handle shares the data block
/// that holds it (with the block cache, which may evict the block meanwhile — the handle keeps
/// its memory alive until it is dropped). A value from a memtable, a merge, a blob file or with
/// a TTL is copied, as [`Readable::get`](crate::Readable::get) copies it. Either way it reads as the
/// value's bytes (`Deref<Target = [u8]>`).
///
/// Holding many handles holds their blocks: copy a value out ([`PinnedValue::to_vec`]) to keep
/// it long.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let db = siftdb::Db::open(dir.path(), siftdb::Options::default())?;
/// db.put(b"user:1", b"alice")?;
/// db.flush()?; // now in a table: read without a copy
/// let value = db.get_pinned(b"user:1")?.expect("stored");
/// assert_eq!(&*value, b"alice");
/// assert!(value.is_pinned());
/// assert!(db.get_pinned(b"user:2")?.is_none());
/// # Ok::<(), siftdb::Error>(())
/// ```
#[derive(Clone)]
pub struct PinnedValue(Repr);

#[derive(Clone)]
enum Repr {
    Block(siftdb_sstable::PinnedValue),
    Copied(Vec<u8>),
}

impl PinnedValue {
    /// A value held in its data block.
    pub(crate) fn in_block(value: siftdb_sstable::PinnedValue) -> PinnedValue {
        PinnedValue(Repr::Block(value))
    }

    /// A value that was copied.
    pub(crate) fn copied(value: Vec<u8>) -> PinnedValue {
        PinnedValue(Repr::Copied(value))
    }

    /// Whether the value is held in its data block (no copy was made).
    pub fn is_pinned(&self) -> bool {
        matches!(self.0, Repr::Block(_))
    }

    /// The value's bytes.
    pub fn as_slice(&self) -> &[u8] {
        match &self.0 {
            Repr::Block(value) => value.as_slice(),
            Repr::Copied(value) => value,
        }
    }

    /// The value copied out (the block, if one was held, is released with the handle).
    pub fn to_vec(&self) -> Vec<u8> {
        self.as_slice().to_vec()
    }
}

impl Deref for PinnedValue {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl AsRef<[u8]> for PinnedValue {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl PartialEq for PinnedValue {
    fn eq(&self, other: &PinnedValue) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for PinnedValue {}

impl PartialEq<[u8]> for PinnedValue {
    fn eq(&self, other: &[u8]) -> bool {
        self.as_slice() == other
    }
}

impl PartialEq<&[u8]> for PinnedValue {
    fn eq(&self, other: &&[u8]) -> bool {
        self.as_slice() == *other
    }
}

impl PartialEq<Vec<u8>> for PinnedValue {
    fn eq(&self, other: &Vec<u8>) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl std::fmt::Debug for PinnedValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PinnedValue")
            .field("value", &crate::base::error::printable_key(self.as_slice()))
            .field("pinned", &self.is_pinned())
            .finish()
    }
}

/// The answer of a pinned lookup: `found`, with the value in `pinned` when it stayed in its
/// block, else in `copied`.
pub(crate) fn answer(
    found: bool,
    pinned: Option<siftdb_sstable::PinnedValue>,
    copied: Vec<u8>,
) -> Option<PinnedValue> {
    if !found {
        return None;
    }
    Some(match pinned {
        Some(value) => PinnedValue::in_block(value),
        None => PinnedValue::copied(copied),
    })
}
