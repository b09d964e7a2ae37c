//! Write batches and their encoding (the payload of a WAL record).
//!
//! ```text
//! batch  := sequence u64 LE | count u32 LE | op*
//! op     := tag | [varint keyspace_id] | varint key_len | key | [varint value_len | value]
//! tag    := kind | 0x80 if a keyspace id follows (without it: keyspace 0, "default")
//! kind   := 1 put (a value follows) | 0 delete | 2 expiring put (a value follows: expiry u64
//!           LE, then the value) | 3 merge operand (the operand follows) | 4 range delete (the
//!           key is the range's start; its exclusive end follows as the value)
//! log    := 0x7f | varint len | blob      (log data: in the WAL only, no op, no sequence)
//! ```
//! The batch's ops get consecutive sequence numbers starting at `sequence`. The ops of the
//! default keyspace are encoded as before keyspaces existed, so older WALs read unchanged.

use siftdb_sstable::coding::{get_bytes, get_varint, put_bytes, put_varint, read_u32, read_u64};
use siftdb_sstable::ValueKind;

use crate::base::error::{Error, Result};

/// Largest key siftdb accepts (1 MiB).
pub const MAX_KEY_SIZE: usize = 1 << 20;
/// Largest value siftdb accepts (256 MiB).
pub const MAX_VALUE_SIZE: usize = 256 << 20;
const HEADER: usize = 12;
/// Set in an op's tag when a keyspace id follows it.
const KEYSPACE_FLAG: u8 = 0x80;
/// The tag of log data ([`WriteBatch::put_log_data`]): no kind of op has it.
const LOG_DATA: u8 = 0x7f;

/// A group of puts, deletes, range deletes and merge operands applied atomically by
/// [`Db::write`](crate::Db::write), in one keyspace or several (`put_in`, `delete_in`,
/// `delete_range_in`, `merge_in`): after a crash either all of it is there or none. Operations
/// apply in the order they were added.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let db = siftdb::Db::open(dir.path(), siftdb::Options::default())?;
/// let orders = db.keyspace("orders")?;
/// let mut batch = siftdb::WriteBatch::new();
/// batch.put(b"k1", b"v1").delete(b"k0"); // the "default" keyspace
/// batch.put_in(&orders, b"o:1", b"pending");
/// assert_eq!(batch.len(), 3);
/// db.write(batch)?;
/// assert_eq!(orders.get(b"o:1")?, Some(b"pending".to_vec()));
/// # Ok::<(), siftdb::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteBatch {
    rep: Vec<u8>,
    count: u32,
    invalid: Option<String>,
    /// Whether the batch writes the "default" keyspace.
    writes_default: bool,
    /// The other keyspaces it writes (each once): a handle each, for its id and, should it be
    /// dropped before the write, its name. Kept apart so that a batch of the default keyspace
    /// alone allocates nothing for them.
    named: Vec<KeyspaceTag>,
    /// The database instance the keyspaces named belong to.
    instance: Option<u64>,
    /// Whether the batch holds merge operands (refused without a merge operator).
    has_merges: bool,
}

impl Default for WriteBatch {
    fn default() -> Self {
        WriteBatch::new()
    }
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> WriteBatch {
        WriteBatch {
            rep: vec![0; HEADER],
            count: 0,
            invalid: None,
            writes_default: false,
            named: Vec::new(),
            instance: None,
            has_merges: false,
        }
    }

    /// Adds a put to the "default" keyspace. An over-limit key or value makes the whole batch
    /// fail at write time.
    pub fn put<K: AsRef<[u8]>, V: AsRef<[u8]>>(&mut self, key: K, value: V) -> &mut Self {
        self.add(0, ValueKind::Put, key.as_ref(), Some(value.as_ref()))
    }

    /// Adds a delete from the "default" keyspace.
    pub fn delete<K: AsRef<[u8]>>(&mut self, key: K) -> &mut Self {
        self.add(0, ValueKind::Delete, key.as_ref(), None)
    }

    /// Adds a merge operand for `key` in the "default" keyspace: combined with the key's older
    /// value by the database's merge operator (`Options::merge_operator`; a batch with merges
    /// is refused with [`Error::InvalidArgument`] without one).
    pub fn merge<K: AsRef<[u8]>, V: AsRef<[u8]>>(&mut self, key: K, operand: V) -> &mut Self {
        let (key, operand) = (key.as_ref(), operand.as_ref());
        self.has_merges = true;
        self.add(0, ValueKind::Merge, key, Some(operand))
    }

    /// Adds the removal of every key in `[start, end)` of the "default" keyspace: one entry,
    /// however many keys the range holds. An empty range (`start == end`) adds nothing;
    /// `start > end` makes the whole batch fail at write time with
    /// [`Error::InvalidArgument`].
    pub fn delete_range<S: AsRef<[u8]>, E: AsRef<[u8]>>(&mut self, start: S, end: E) -> &mut Self {
        let (start, end) = (start.as_ref(), end.as_ref());
        self.add_range(0, start, end)
    }

    fn add_range(&mut self, keyspace: u32, start: &[u8], end: &[u8]) -> &mut Self {
        if start > end && self.invalid.is_none() {
            self.invalid = Some(format!(
                "delete_range start {} is after its end {}",
                crate::base::error::printable_key(start),
                crate::base::error::printable_key(end)
            ));
        }
        // Both bounds are keys: the key limit applies to each, even of an empty range.
        self.check(start, None);
        self.check(end, None);
        if start >= end {
            return self;
        }
        self.append(keyspace, ValueKind::RangeDelete, start, Some(end))
    }

    /// Adds log data: a blob written to the WAL with the batch and applied to no keyspace
    /// (RocksDB's `PutLogData`), for readers of the WAL. It takes no sequence number and is
    /// not counted by [`len`](WriteBatch::len); a batch of log data alone is still written.
    /// A blob over the value limit makes the whole batch fail at write time.
    ///
    /// ```
    /// let mut batch = siftdb::WriteBatch::new();
    /// batch.put(b"k", b"v").put_log_data(b"replicated from node 3");
    /// assert_eq!(batch.len(), 1);
    /// ```
    pub fn put_log_data<B: AsRef<[u8]>>(&mut self, blob: B) -> &mut Self {
        let blob = blob.as_ref();
        if blob.len() > MAX_VALUE_SIZE && self.invalid.is_none() {
            self.invalid = Some(format!(
                "log data of {} bytes is over the limit of {MAX_VALUE_SIZE}",
                blob.len()
            ));
            return self;
        }
        self.rep.push(LOG_DATA);
        put_bytes(&mut self.rep, blob);
        self
    }

    /// Whether writing the batch writes nothing: no operation and no log data.
    pub(crate) fn writes_nothing(&self) -> bool {
        self.rep.len() == HEADER
    }

    /// Whether the batch holds merge operands.
    pub(crate) fn has_merges(&self) -> bool {
        self.has_merges
    }

    /// Adds a put of `value` expiring at `expiry` (milliseconds since the Unix epoch) to
    /// keyspace `ks` (`None`: "default").
    pub(crate) fn put_expiring(
        &mut self,
        ks: Option<&KeyspaceTag>,
        key: &[u8],
        value: &[u8],
        expiry: u64,
    ) -> &mut Self {
        // The size limit is the user's value's; the expiry in front of it is siftdb's.
        self.check(key, Some(value));
        let id = match ks {
            Some(ks) => {
                self.name_keyspace(ks);
                ks.id
            }
            None => 0,
        };
        let stored = crate::base::ttl::encode(expiry, value);
        self.append(id, ValueKind::ExpiringPut, key, Some(&stored))
    }

    /// Adds an op of `kind` to keyspace `ks` (the `*_in` methods of `api/keyspace.rs`).
    pub(crate) fn add_in(
        &mut self,
        ks: &KeyspaceTag,
        kind: ValueKind,
        key: &[u8],
        value: Option<&[u8]>,
    ) -> &mut Self {
        self.name_keyspace(ks);
        if kind == ValueKind::Merge {
            self.has_merges = true;
        }
        self.add(ks.id, kind, key, value)
    }

    /// Adds the removal of `[start, end)` from keyspace `ks`.
    pub(crate) fn add_range_in(&mut self, ks: &KeyspaceTag, start: &[u8], end: &[u8]) -> &mut Self {
        self.name_keyspace(ks);
        self.add_range(ks.id, start, end)
    }

    /// Records that the batch writes keyspace `ks` (the `*_in` methods, `api/keyspace.rs`).
    fn name_keyspace(&mut self, ks: &KeyspaceTag) {
        match self.instance {
            Some(instance) if instance != ks.instance => {
                self.invalid.get_or_insert_with(|| {
                    "a batch may only name keyspaces of one database".to_string()
                });
            }
            _ => self.instance = Some(ks.instance),
        }
        if ks.id != 0 && !self.named.iter().any(|t| t.id == ks.id) {
            self.named.push(ks.clone());
        }
    }

    fn add(
        &mut self,
        keyspace: u32,
        kind: ValueKind,
        key: &[u8],
        value: Option<&[u8]>,
    ) -> &mut Self {
        self.check(key, value);
        self.append(keyspace, kind, key, value)
    }

    /// Appends one op, unchecked.
    fn append(
        &mut self,
        keyspace: u32,
        kind: ValueKind,
        key: &[u8],
        value: Option<&[u8]>,
    ) -> &mut Self {
        if keyspace == 0 {
            self.writes_default = true;
            self.rep.push(kind as u8);
        } else {
            self.rep.push(kind as u8 | KEYSPACE_FLAG);
            put_varint(&mut self.rep, u64::from(keyspace));
        }
        put_bytes(&mut self.rep, key);
        if let Some(value) = value {
            put_bytes(&mut self.rep, value);
        }
        self.count += 1;
        self
    }

    /// The ids of the keyspaces the batch writes.
    pub(crate) fn keyspace_ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.writes_default
            .then_some(0)
            .into_iter()
            .chain(self.named.iter().map(|t| t.id))
    }

    /// The first keyspace the batch writes for which `is_live` says no, by name.
    pub(crate) fn first_missing_keyspace(&self, is_live: impl Fn(u32) -> bool) -> Option<&str> {
        self.named.iter().find(|t| !is_live(t.id)).map(|t| &*t.name)
    }

    /// The database instance whose keyspaces the batch names, if it names any.
    pub(crate) fn instance(&self) -> Option<u64> {
        self.instance
    }

    fn check(&mut self, key: &[u8], value: Option<&[u8]>) {
        if self.invalid.is_some() {
            return;
        }
        if key.len() > MAX_KEY_SIZE {
            self.invalid = Some(format!(
                "key of {} bytes exceeds the {MAX_KEY_SIZE}-byte limit",
                key.len()
            ));
        } else if value.is_some_and(|v| v.len() > MAX_VALUE_SIZE) {
            self.invalid = Some(format!(
                "value of {} bytes exceeds the {MAX_VALUE_SIZE}-byte limit",
                value.map_or(0, <[u8]>::len)
            ));
        }
    }

    /// Number of operations.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// Whether the batch has no operations.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Encoded size in bytes.
    pub fn size_bytes(&self) -> usize {
        self.rep.len()
    }

    /// Where the batch ends now, for [`WriteBatch::truncate`] (a savepoint).
    pub(crate) fn mark(&self) -> BatchMark {
        BatchMark {
            rep_len: self.rep.len(),
            count: self.count,
            valid: self.invalid.is_none(),
            writes_default: self.writes_default,
            named: self.named.len(),
            instance: self.instance,
            has_merges: self.has_merges,
        }
    }

    /// Takes out every op added after `mark` (one of this batch's, not followed by an earlier
    /// truncation): the batch is as it was then.
    pub(crate) fn truncate(&mut self, mark: &BatchMark) {
        self.rep.truncate(mark.rep_len.max(HEADER));
        self.count = mark.count;
        if mark.valid {
            self.invalid = None;
        }
        self.writes_default = mark.writes_default;
        self.named.truncate(mark.named);
        self.instance = mark.instance;
        self.has_merges = mark.has_merges;
    }

    /// Fails if an operation broke a limit.
    pub(crate) fn validate(&self) -> Result<()> {
        match &self.invalid {
            Some(m) => Err(Error::InvalidArgument(m.clone())),
            None => Ok(()),
        }
    }

    /// Stamps the first sequence number and returns the encoded batch.
    pub(crate) fn encode(&mut self, sequence: u64) -> &[u8] {
        self.rep[..8].copy_from_slice(&sequence.to_le_bytes());
        self.rep[8..12].copy_from_slice(&self.count.to_le_bytes());
        &self.rep
    }
}

/// Where a batch ended at one point ([`WriteBatch::mark`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BatchMark {
    rep_len: usize,
    count: u32,
    valid: bool,
    writes_default: bool,
    named: usize,
    instance: Option<u64>,
    has_merges: bool,
}

/// A keyspace a batch names: its id, the database instance it belongs to and its name (for the
/// error should it be dropped before the write). Compared by id (a batch's equality is its
/// contents).
#[derive(Clone)]
pub(crate) struct KeyspaceTag {
    pub id: u32,
    pub instance: u64,
    pub name: std::sync::Arc<str>,
}

impl PartialEq for KeyspaceTag {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl Eq for KeyspaceTag {}

impl std::fmt::Debug for KeyspaceTag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name)
    }
}

/// One decoded operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BatchOp<'a> {
    pub keyspace: u32,
    pub kind: ValueKind,
    pub key: &'a [u8],
    pub value: &'a [u8],
}

/// The tag of a sequence marker: a WAL record that holds no operation but consumes sequence
/// numbers (an ingestion's global seqno), so the logs' records still form one unbroken run of
/// sequence numbers, which recovery checks.
const SEQUENCE_MARKER: u8 = 0xff;

/// The WAL record saying `count` sequence numbers from `sequence` on were taken by something
/// that wrote no batch (an ingested file's global seqno).
pub(crate) fn encode_sequence_marker(sequence: u64, count: u64) -> Vec<u8> {
    let mut rep = Vec::with_capacity(HEADER + 11);
    rep.extend_from_slice(&sequence.to_le_bytes());
    rep.extend_from_slice(&0u32.to_le_bytes());
    rep.push(SEQUENCE_MARKER);
    put_varint(&mut rep, count);
    rep
}

/// A sequence marker's first sequence and count (`None`: not a marker).
pub(crate) fn decode_sequence_marker(rep: &[u8]) -> Option<(u64, u64)> {
    let sequence = read_u64(rep, 0)?;
    if read_u32(rep, 8)? != 0 || *rep.get(HEADER)? != SEQUENCE_MARKER {
        return None;
    }
    let mut pos = HEADER + 1;
    let count = get_varint(rep, &mut pos)?;
    (pos == rep.len() && count > 0).then_some((sequence, count))
}

/// A decoded batch: first sequence and operations.
pub(crate) fn decode(rep: &[u8]) -> Option<(u64, Vec<BatchOp<'_>>)> {
    let sequence = read_u64(rep, 0)?;
    let count = read_u32(rep, 8)? as usize;
    let mut pos = HEADER;
    let mut ops = Vec::with_capacity(count.min(rep.len()));
    while pos < rep.len() {
        let tag = rep[pos];
        pos += 1;
        if tag == LOG_DATA {
            // For readers of the WAL only: no operation.
            get_bytes(rep, &mut pos)?;
            continue;
        }
        let kind = ValueKind::from_u8(tag & !KEYSPACE_FLAG)?;
        let keyspace = if tag & KEYSPACE_FLAG != 0 {
            u32::try_from(get_varint(rep, &mut pos)?).ok()?
        } else {
            0
        };
        let key = get_bytes(rep, &mut pos)?;
        let value = match kind {
            ValueKind::Put => get_bytes(rep, &mut pos)?,
            // An expiring value starts with its expiry time.
            ValueKind::ExpiringPut => {
                get_bytes(rep, &mut pos).filter(|v| v.len() >= crate::base::ttl::EXPIRY_LEN)?
            }
            ValueKind::Merge => get_bytes(rep, &mut pos)?,
            // A range's end, after its start.
            ValueKind::RangeDelete => get_bytes(rep, &mut pos).filter(|end| *end > key)?,
            ValueKind::Delete => &[],
            // Only flushes and compactions write blob indexes: never a user's write.
            ValueKind::BlobIndex => return None,
        };
        ops.push(BatchOp {
            keyspace,
            kind,
            key,
            value,
        });
    }
    (ops.len() == count).then_some((sequence, ops))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_marker_round_trips_and_is_no_batch() {
        let rep = encode_sequence_marker(77, 1);
        assert_eq!(decode_sequence_marker(&rep), Some((77, 1)));
        assert_eq!(decode(&rep), None, "a marker is not a batch");
        let mut batch = WriteBatch::new();
        assert_eq!(decode_sequence_marker(batch.encode(5)), None);
        for len in 0..rep.len() {
            assert_eq!(decode_sequence_marker(&rep[..len]), None);
        }
        assert_eq!(decode_sequence_marker(&encode_sequence_marker(3, 0)), None);
    }

    #[test]
    fn log_data_is_skipped_by_decode_and_counts_nothing() {
        let mut batch = WriteBatch::new();
        batch
            .put_log_data(b"before")
            .put(b"k", b"v")
            .put_log_data(b"after");
        batch.delete(b"d");
        assert_eq!(batch.len(), 2);
        let (seq, ops) = decode(batch.encode(9)).unwrap();
        assert_eq!(seq, 9);
        assert_eq!(ops.len(), 2);
        assert_eq!((ops[0].key, ops[0].value), (&b"k"[..], &b"v"[..]));
        assert_eq!(ops[1].kind, ValueKind::Delete);
        let mut alone = WriteBatch::new();
        alone.put_log_data(b"only");
        assert!(!alone.writes_nothing() && alone.is_empty());
        assert_eq!(
            decode(alone.encode(3)).map(|(s, o)| (s, o.len())),
            Some((3, 0))
        );
        // A count that disagrees with the ops found is damage, log data or not.
        let mut rep = batch.encode(9).to_vec();
        rep[8] = 3;
        assert_eq!(decode(&rep), None);
        // Cut inside the log data: damage.
        let rep = batch.encode(9);
        assert_eq!(decode(&rep[..rep.len() - 2]), None);
    }

    #[test]
    fn batch_round_trips() {
        let mut b = WriteBatch::new();
        b.put(b"a", b"1").delete(b"b").put(b"", b"");
        let rep = b.encode(42).to_vec();
        let (seq, ops) = decode(&rep).unwrap();
        assert_eq!(seq, 42);
        assert_eq!(ops.len(), 3);
        assert_eq!(
            ops[1],
            BatchOp {
                keyspace: 0,
                kind: ValueKind::Delete,
                key: b"b",
                value: b""
            }
        );
        for len in 0..rep.len() {
            assert!(decode(&rep[..len]).is_none());
        }
    }

    #[test]
    fn an_expiring_value_shorter_than_its_expiry_does_not_decode() {
        let mut b = WriteBatch::new();
        b.put_expiring(None, b"k", b"v", 7);
        let rep = b.encode(1).to_vec();
        assert!(decode(&rep).is_some());
        // The same op with a 7-byte value: no room for the expiry.
        let mut short = rep[..HEADER].to_vec();
        short.push(ValueKind::ExpiringPut as u8);
        put_bytes(&mut short, b"k");
        put_bytes(&mut short, &[0; 7]);
        short[8..12].copy_from_slice(&1u32.to_le_bytes());
        assert!(decode(&short).is_none());
    }

    #[test]
    fn merges_and_range_deletes_round_trip() {
        let mut b = WriteBatch::new();
        b.merge(b"m", b"op")
            .delete_range(b"a", b"c")
            .delete_range(b"x", b"x");
        assert_eq!(b.len(), 2, "an empty range adds nothing");
        assert!(b.has_merges() && b.validate().is_ok());
        let rep = b.encode(7).to_vec();
        let (_, ops) = decode(&rep).unwrap();
        assert_eq!((ops[0].kind, ops[0].value), (ValueKind::Merge, &b"op"[..]));
        assert_eq!(
            (ops[1].kind, ops[1].key, ops[1].value),
            (ValueKind::RangeDelete, &b"a"[..], &b"c"[..])
        );
        let mut backwards = WriteBatch::new();
        backwards.delete_range(b"c", b"a");
        assert!(matches!(
            backwards.validate(),
            Err(Error::InvalidArgument(_))
        ));
        // A stored range whose end is not after its start does not decode.
        let mut bad = rep[..HEADER].to_vec();
        bad.push(ValueKind::RangeDelete as u8);
        put_bytes(&mut bad, b"c");
        put_bytes(&mut bad, b"a");
        bad[8..12].copy_from_slice(&1u32.to_le_bytes());
        assert!(decode(&bad).is_none());
    }

    #[test]
    fn batch_rejects_oversized_keys() {
        let mut b = WriteBatch::new();
        b.put(vec![0; MAX_KEY_SIZE + 1], b"v");
        assert!(b.validate().is_err());
        let mut ok = WriteBatch::new();
        ok.put(vec![0; MAX_KEY_SIZE], b"v");
        assert!(ok.validate().is_ok());
    }
}
