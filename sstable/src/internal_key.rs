//! Internal keys: user key + 56-bit sequence number + value kind.
//!
//! ```text
//! +-------------------+-----------------------------------------+
//! | user key (n B)    | trailer: u64 LE = seq << 8 | kind       |
//! +-------------------+-----------------------------------------+
//! ```
//!
//! Ordered by user key ascending (bytewise), then by sequence number *descending*, then kind
//! descending, so the newest version of a key comes first and a seek to `(key, snapshot_seq)`
//! lands on the newest version visible to that snapshot.

use std::cmp::Ordering;

/// Largest sequence number (56 bits).
pub const MAX_SEQUENCE: u64 = (1 << 56) - 1;
/// Bytes of the trailer appended to the user key.
pub const TRAILER_LEN: usize = 8;

/// What an entry says about its user key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum ValueKind {
    /// A tombstone: the key was deleted at this sequence number.
    Delete = 0,
    /// A value.
    Put = 1,
    /// A value that expires: its first 8 bytes are the expiry time (milliseconds since the Unix
    /// epoch, little-endian), the rest is the value (`Db::put_with_ttl`). Database format 4.
    ExpiringPut = 2,
    /// A merge operand (`Db::merge`): combined with the older versions of its key by the
    /// database's merge operator when read or compacted. Database format 5.
    Merge = 3,
    /// A range tombstone (`Db::delete_range`): the user key is the range's start, the value its
    /// (exclusive) end. Range tombstones live in the memtable's and the table's own lists, never
    /// among point entries; the kind also marks the *range end sentinel*, a table boundary that
    /// is exclusive (see [`InternalKey::range_end_sentinel`]). Database format 5.
    RangeDelete = 4,
    /// A value kept in a blob file: the stored value is a blob index
    /// ([`BlobIndex`](crate::blob::BlobIndex): the reference, and the expiry time of an
    /// expiring value). Written only by flushes and compactions of a keyspace with
    /// `enable_blob_files`, never by a user's write. Database format 9.
    BlobIndex = 5,
}

impl ValueKind {
    /// Maps a stored byte back to a kind.
    pub fn from_u8(byte: u8) -> Option<ValueKind> {
        match byte {
            0 => Some(ValueKind::Delete),
            1 => Some(ValueKind::Put),
            2 => Some(ValueKind::ExpiringPut),
            3 => Some(ValueKind::Merge),
            4 => Some(ValueKind::RangeDelete),
            5 => Some(ValueKind::BlobIndex),
            _ => None,
        }
    }

    /// The kind with the largest discriminant: seeking with it finds every entry of a sequence.
    pub const MAX: ValueKind = ValueKind::BlobIndex;

    /// Whether the entry holds a value (as opposed to a tombstone): inline, or in a blob file.
    pub fn is_value(self) -> bool {
        matches!(
            self,
            ValueKind::Put | ValueKind::ExpiringPut | ValueKind::BlobIndex
        )
    }
}

/// An owned internal key.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct InternalKey {
    bytes: Vec<u8>,
}

impl std::fmt::Debug for InternalKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match ParsedKey::parse(&self.bytes) {
            Some(p) => write!(
                f,
                "{:?}@{}:{:?}",
                String::from_utf8_lossy(p.user_key),
                p.sequence,
                p.kind
            ),
            None => write!(f, "<invalid {:?}>", self.bytes),
        }
    }
}

impl InternalKey {
    /// Builds the key for `user_key` at `sequence` (must be ≤ [`MAX_SEQUENCE`]) with `kind`.
    pub fn new(user_key: &[u8], sequence: u64, kind: ValueKind) -> InternalKey {
        let mut bytes = Vec::with_capacity(user_key.len() + TRAILER_LEN);
        bytes.extend_from_slice(user_key);
        bytes.extend_from_slice(&pack_trailer(sequence, kind).to_le_bytes());
        InternalKey { bytes }
    }

    /// The key a point lookup at `snapshot` seeks to: sorts before every version of `user_key`
    /// visible at `snapshot` and after every newer one.
    pub fn for_lookup(user_key: &[u8], snapshot: u64) -> InternalKey {
        InternalKey::new(user_key, snapshot.min(MAX_SEQUENCE), ValueKind::MAX)
    }

    /// The exclusive upper boundary of a table whose range tombstones extend past its last
    /// point key, up to (not including) `user_key`: it sorts before every real version of
    /// `user_key` (the largest sequence number), and its kind marks it as exclusive (RocksDB's
    /// range tombstone end sentinel).
    pub fn range_end_sentinel(user_key: &[u8]) -> InternalKey {
        InternalKey::new(user_key, MAX_SEQUENCE, ValueKind::RangeDelete)
    }

    /// Whether this key is a [`InternalKey::range_end_sentinel`]: as a table's largest key, the
    /// table's range ends just before its user key.
    pub fn is_range_end_sentinel(&self) -> bool {
        let p = self.parsed();
        p.sequence == MAX_SEQUENCE && p.kind == ValueKind::RangeDelete
    }

    /// Wraps encoded bytes, checking they parse.
    pub fn from_encoded(bytes: Vec<u8>) -> Option<InternalKey> {
        ParsedKey::parse(&bytes)?;
        Some(InternalKey { bytes })
    }

    /// The encoded bytes.
    pub fn encoded(&self) -> &[u8] {
        &self.bytes
    }

    /// The user key part.
    pub fn user_key(&self) -> &[u8] {
        &self.bytes[..self.bytes.len() - TRAILER_LEN]
    }

    /// The parsed view (always valid for an `InternalKey`).
    pub fn parsed(&self) -> ParsedKey<'_> {
        let (user_key, trailer) = self.bytes.split_at(self.bytes.len() - TRAILER_LEN);
        let t = u64::from_le_bytes(trailer.try_into().unwrap_or([0; 8]));
        ParsedKey {
            user_key,
            sequence: t >> 8,
            kind: ValueKind::from_u8(t as u8).unwrap_or(ValueKind::Put),
        }
    }
}

impl PartialOrd for InternalKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for InternalKey {
    fn cmp(&self, other: &Self) -> Ordering {
        compare_internal(&self.bytes, &other.bytes)
    }
}

/// A borrowed, decoded internal key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParsedKey<'a> {
    /// The user key.
    pub user_key: &'a [u8],
    /// Sequence number.
    pub sequence: u64,
    /// Entry kind.
    pub kind: ValueKind,
}

impl<'a> ParsedKey<'a> {
    /// Decodes an encoded internal key; `None` if it is too short or has an unknown kind.
    pub fn parse(bytes: &'a [u8]) -> Option<ParsedKey<'a>> {
        let split = bytes.len().checked_sub(TRAILER_LEN)?;
        let (user_key, trailer) = bytes.split_at(split);
        let t = u64::from_le_bytes(trailer.try_into().ok()?);
        Some(ParsedKey {
            user_key,
            sequence: t >> 8,
            kind: ValueKind::from_u8(t as u8)?,
        })
    }
}

/// Packs sequence and kind into the trailer value.
pub fn pack_trailer(sequence: u64, kind: ValueKind) -> u64 {
    (sequence.min(MAX_SEQUENCE) << 8) | kind as u64
}

/// Orders two encoded internal keys (user key ascending, then trailer descending). Keys too short
/// to hold a trailer sort by their raw bytes first, so the order stays total on corrupt input.
pub fn compare_internal(a: &[u8], b: &[u8]) -> Ordering {
    if a.len() < TRAILER_LEN || b.len() < TRAILER_LEN {
        return a.cmp(b);
    }
    let (ua, ta) = a.split_at(a.len() - TRAILER_LEN);
    let (ub, tb) = b.split_at(b.len() - TRAILER_LEN);
    ua.cmp(ub).then_with(|| {
        let ta = u64::from_le_bytes(ta.try_into().unwrap_or([0; 8]));
        let tb = u64::from_le_bytes(tb.try_into().unwrap_or([0; 8]));
        tb.cmp(&ta)
    })
}

/// The user key of an encoded internal key (the whole slice if it is too short to have a trailer).
pub fn user_key_of(encoded: &[u8]) -> &[u8] {
    &encoded[..encoded.len().saturating_sub(TRAILER_LEN)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_key_orders_newest_first() {
        let a1 = InternalKey::new(b"a", 1, ValueKind::Put);
        let a5 = InternalKey::new(b"a", 5, ValueKind::Put);
        let a5d = InternalKey::new(b"a", 5, ValueKind::Delete);
        let b0 = InternalKey::new(b"b", 0, ValueKind::Put);
        let mut keys = vec![b0.clone(), a1.clone(), a5d.clone(), a5.clone()];
        keys.sort();
        assert_eq!(keys, vec![a5, a5d, a1, b0]);
    }

    #[test]
    fn internal_key_lookup_key_lands_on_visible_version() {
        let lookup = InternalKey::for_lookup(b"k", 3);
        assert!(lookup > InternalKey::new(b"k", 4, ValueKind::Put));
        assert!(lookup <= InternalKey::new(b"k", 3, ValueKind::Put));
        assert!(lookup < InternalKey::new(b"k", 3, ValueKind::Delete));
        assert!(lookup < InternalKey::new(b"k", 2, ValueKind::Put));
        // Empty user keys are keys like any other.
        assert!(
            InternalKey::new(b"", 9, ValueKind::Put) < InternalKey::new(b"\0", 9, ValueKind::Put)
        );
    }

    #[test]
    fn internal_key_parse_round_trips() {
        let k = InternalKey::new(b"user", MAX_SEQUENCE, ValueKind::Delete);
        let p = ParsedKey::parse(k.encoded()).unwrap();
        assert_eq!(p.user_key, b"user");
        assert_eq!(p.sequence, MAX_SEQUENCE);
        assert_eq!(p.kind, ValueKind::Delete);
        assert!(ParsedKey::parse(b"short").is_none());
        let mut bad = k.encoded().to_vec();
        let at = bad.len() - 8;
        bad[at] = 7;
        assert!(ParsedKey::parse(&bad).is_none());
    }
}
