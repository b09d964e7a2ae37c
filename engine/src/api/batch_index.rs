//! [`WriteBatchWithIndex`]: a write batch that can be read from (RocksDB's
//! `WriteBatchWithIndex`), its reads seeing its own writes over the database's.
//!
//! Beside the batch's records (written by [`Db::write`] as any batch) it keeps an index: for
//! each key it writes, what the key is once the batch applies — a value, deleted, or merge
//! operands still to apply on what the database holds. A read asks the index first and the
//! database only for keys the batch leaves open; an iterator merges the index's keys into the
//! database's, in either direction.

use std::collections::btree_map::{self, BTreeMap};
use std::ops::Bound;
use std::sync::Arc;

use siftdb_sstable::ValueKind;

use crate::api::db::Db;
use crate::api::keyspace::Keyspace;
use crate::base::batch::{BatchMark, WriteBatch};
use crate::base::error::{Error, Result};
use crate::base::merge::{full_merge_for_read, MergeOperator};
use crate::core::keyspace_tree::KeyspaceTree;
use crate::paths::iterator::DbIterator;

/// What a key is once the batch applies.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pending {
    /// The batch's last put (expiring at `expires`, milliseconds since the Unix epoch, for a
    /// put with a TTL).
    Value {
        value: Vec<u8>,
        expires: Option<u64>,
    },
    /// Deleted by the batch.
    Deleted,
    /// Merge operands, oldest first, on top of `base`: what an earlier put or delete of the
    /// batch left (`Some`), or the database's value (`None`).
    Merged {
        base: Option<Known>,
        operands: Vec<Vec<u8>>,
    },
}

/// What an earlier put or delete of the batch left under merge operands.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Known {
    /// `None`: deleted.
    value: Option<Vec<u8>>,
    expires: Option<u64>,
}

impl Known {
    /// The value, unless deleted or expired by `now`.
    fn live(&self, now: u64) -> Option<Vec<u8>> {
        self.value
            .clone()
            .filter(|_| self.expires.is_none_or(|e| now < e))
    }
}

/// A write batch that answers reads ([`WriteBatchWithIndex::get_from_batch_and_db`],
/// [`WriteBatchWithIndex::iterator_with_base`]) with its own writes over the database's, and is
/// written like any batch (`db.write(batch)`): all of it atomically. A transaction's writes are
/// one of these.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let db = siftdb::Db::open(dir.path(), siftdb::Options::default())?;
/// db.put(b"a", b"1")?;
/// db.put(b"b", b"2")?;
/// let mut batch = siftdb::WriteBatchWithIndex::new();
/// batch.put(b"c", b"3").delete(b"a");
/// assert_eq!(batch.get_from_batch_and_db(&db, b"c")?, Some(b"3".to_vec()));
/// assert_eq!(batch.get_from_batch_and_db(&db, b"a")?, None); // deleted by the batch
/// assert_eq!(batch.get_from_batch_and_db(&db, b"b")?, Some(b"2".to_vec())); // the database's
/// let keys: Vec<Vec<u8>> = batch
///     .iterator_with_base::<&[u8], _>(&db, ..)
///     .map(|kv| kv.map(|(k, _)| k))
///     .collect::<Result<_, _>>()?;
/// assert_eq!(keys, [b"b".to_vec(), b"c".to_vec()]);
/// db.write(batch)?;
/// assert_eq!(db.get(b"a")?, None);
/// # Ok::<(), siftdb::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct WriteBatchWithIndex {
    batch: WriteBatch,
    /// (keyspace id, key) → what the key is once the batch applies.
    index: BTreeMap<(u32, Vec<u8>), Pending>,
    /// Where the batch ended at each savepoint, oldest first.
    savepoints: Vec<BatchMark>,
}

impl WriteBatchWithIndex {
    /// An empty batch.
    pub fn new() -> WriteBatchWithIndex {
        WriteBatchWithIndex::default()
    }

    /// Adds a put (the "default" keyspace).
    pub fn put<K: AsRef<[u8]>, V: AsRef<[u8]>>(&mut self, key: K, value: V) -> &mut Self {
        let (key, value) = (key.as_ref(), value.as_ref());
        self.batch.put(key, value);
        self.note(0, key, ValueKind::Put, value, None)
    }

    /// Adds a delete (the "default" keyspace).
    pub fn delete<K: AsRef<[u8]>>(&mut self, key: K) -> &mut Self {
        let key = key.as_ref();
        self.batch.delete(key);
        self.note(0, key, ValueKind::Delete, &[], None)
    }

    /// Adds a merge operand (the "default" keyspace; the database needs a merge operator).
    pub fn merge<K: AsRef<[u8]>, V: AsRef<[u8]>>(&mut self, key: K, operand: V) -> &mut Self {
        let (key, operand) = (key.as_ref(), operand.as_ref());
        self.batch.merge(key, operand);
        self.note(0, key, ValueKind::Merge, operand, None)
    }

    /// Adds a put to keyspace `ks`.
    pub fn put_in<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &mut self,
        ks: &Keyspace,
        key: K,
        value: V,
    ) -> &mut Self {
        let (key, value) = (key.as_ref(), value.as_ref());
        self.batch.put_in(ks, key, value);
        self.note(ks.tag().id, key, ValueKind::Put, value, None)
    }

    /// Adds a delete from keyspace `ks`.
    pub fn delete_in<K: AsRef<[u8]>>(&mut self, ks: &Keyspace, key: K) -> &mut Self {
        let key = key.as_ref();
        self.batch.delete_in(ks, key);
        self.note(ks.tag().id, key, ValueKind::Delete, &[], None)
    }

    /// Adds a merge operand for `key` in keyspace `ks`.
    pub fn merge_in<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &mut self,
        ks: &Keyspace,
        key: K,
        operand: V,
    ) -> &mut Self {
        let (key, operand) = (key.as_ref(), operand.as_ref());
        self.batch.merge_in(ks, key, operand);
        self.note(ks.tag().id, key, ValueKind::Merge, operand, None)
    }

    /// Adds a put of `value` to keyspace `ks` (`None`: "default") that expires at `expiry`
    /// (milliseconds since the Unix epoch; `Db::put_with_ttl`'s form).
    pub(crate) fn put_expiring(
        &mut self,
        ks: Option<&Keyspace>,
        key: &[u8],
        value: &[u8],
        expiry: u64,
    ) -> &mut Self {
        let tag = ks.map(Keyspace::tag);
        self.batch.put_expiring(tag.as_ref(), key, value, expiry);
        let id = tag.map_or(0, |t| t.id);
        self.note(id, key, ValueKind::ExpiringPut, value, Some(expiry))
    }

    /// Marks the batch as it is now: [`WriteBatchWithIndex::rollback_to_savepoint`] returns it
    /// here (RocksDB's `SetSavePoint`). Savepoints nest.
    pub fn set_savepoint(&mut self) {
        self.savepoints.push(self.batch.mark());
    }

    /// Takes out every op added since the last savepoint, and that savepoint; an
    /// [`Error::InvalidArgument`] when there is none (nothing changes).
    pub fn rollback_to_savepoint(&mut self) -> Result<()> {
        let mark = self.savepoints.pop().ok_or_else(|| {
            Error::InvalidArgument("rollback_to_savepoint without a savepoint".to_string())
        })?;
        self.batch.truncate(&mark);
        self.reindex()
    }

    /// Forgets the last savepoint, keeping its ops (RocksDB's `PopSavePoint`); an
    /// [`Error::InvalidArgument`] when there is none.
    pub fn pop_savepoint(&mut self) -> Result<()> {
        self.savepoints
            .pop()
            .map(|_| ())
            .ok_or_else(|| Error::InvalidArgument("pop_savepoint without a savepoint".to_string()))
    }

    /// Rebuilds the index from the batch's ops (after a rollback to a savepoint).
    fn reindex(&mut self) -> Result<()> {
        self.index.clear();
        let mut batch = std::mem::take(&mut self.batch);
        let ops = crate::base::batch::decode(batch.encode(0))
            .ok_or_else(|| crate::base::error::Error::corruption("batch failed to decode"))?
            .1;
        for op in ops {
            let (value, expires) = match op.kind {
                ValueKind::ExpiringPut => match crate::base::ttl::decode(op.value) {
                    Some((expiry, value)) => (value, Some(expiry)),
                    None => (op.value, None),
                },
                _ => (op.value, None),
            };
            self.note(op.keyspace, op.key, op.kind, value, expires);
        }
        self.batch = batch;
        Ok(())
    }

    /// The (keyspace id, key) pairs the batch writes, in order.
    pub(crate) fn written_keys(&self) -> impl Iterator<Item = &(u32, Vec<u8>)> {
        self.index.keys()
    }

    /// Records in the index what the op just added does to `key` of keyspace `id`.
    fn note(
        &mut self,
        id: u32,
        key: &[u8],
        kind: ValueKind,
        value: &[u8],
        expires: Option<u64>,
    ) -> &mut Self {
        // A key the batch has not written yet is, to a merge, operands over the database's
        // value: no operand so far.
        let slot = self
            .index
            .entry((id, key.to_vec()))
            .or_insert(Pending::Merged {
                base: None,
                operands: Vec::new(),
            });
        // Updated in place: a run of merges of one key appends, it does not copy the operands.
        let prior = std::mem::replace(slot, Pending::Deleted);
        *slot = match (kind, prior) {
            (ValueKind::Delete, _) => Pending::Deleted,
            (ValueKind::Merge, prior) => {
                let (base, mut operands) = match prior {
                    Pending::Value { value, expires } => (
                        Some(Known {
                            value: Some(value),
                            expires,
                        }),
                        Vec::new(),
                    ),
                    Pending::Deleted => (
                        Some(Known {
                            value: None,
                            expires: None,
                        }),
                        Vec::new(),
                    ),
                    Pending::Merged { base, operands } => (base, operands),
                };
                operands.push(value.to_vec());
                Pending::Merged { base, operands }
            }
            _ => Pending::Value {
                value: value.to_vec(),
                expires,
            },
        };
        self
    }

    /// Operations in the batch.
    pub fn len(&self) -> usize {
        self.batch.len()
    }

    /// Whether the batch holds no operation.
    pub fn is_empty(&self) -> bool {
        self.batch.is_empty()
    }

    /// The batch's records, as [`Db::write`] applies them.
    pub fn write_batch(&self) -> &WriteBatch {
        &self.batch
    }

    /// The value of `key` (the "default" keyspace) once the batch applies over `db` as it is
    /// now: the batch's own put or delete, its merge operands applied to the database's value,
    /// or the database's value for a key the batch does not write.
    pub fn get_from_batch_and_db<K: AsRef<[u8]>>(
        &self,
        db: &Db,
        key: K,
    ) -> Result<Option<Vec<u8>>> {
        let tree = db.engine().default_keyspace();
        self.get_over(tree, key.as_ref(), || db.get(key.as_ref()))
    }

    /// [`WriteBatchWithIndex::get_from_batch_and_db`] in keyspace `ks`.
    pub fn get_from_batch_and_db_in<K: AsRef<[u8]>>(
        &self,
        ks: &Keyspace,
        key: K,
    ) -> Result<Option<Vec<u8>>> {
        self.get_over(ks.tree(), key.as_ref(), || ks.get(key.as_ref()))
    }

    /// The value of `key` of `tree` once the batch applies over `base`, the value the
    /// database reads give it (the newest, or a snapshot's).
    pub(crate) fn get_over(
        &self,
        tree: &KeyspaceTree,
        key: &[u8],
        base: impl FnOnce() -> Result<Option<Vec<u8>>>,
    ) -> Result<Option<Vec<u8>>> {
        let now = now_millis(tree);
        match self.index.get(&(tree.id, key.to_vec())) {
            None => base(),
            Some(Pending::Value { value, expires }) => {
                Ok(Some(value.clone()).filter(|_| expires.is_none_or(|e| now < e)))
            }
            Some(Pending::Deleted) => Ok(None),
            Some(Pending::Merged {
                base: known,
                operands,
            }) => {
                let existing = match known {
                    Some(known) => known.live(now),
                    None => base()?,
                };
                merge_over(
                    tree.options().merge_operator.as_ref(),
                    key,
                    existing.as_deref(),
                    operands,
                )
                .map(Some)
            }
        }
    }

    /// The entries of `range` (the "default" keyspace) once the batch applies over `db` as it
    /// is now, in key order (`.rev()`: descending): the database's iterator with the batch's
    /// keys merged in.
    pub fn iterator_with_base<K: AsRef<[u8]>, R: std::ops::RangeBounds<K>>(
        &self,
        db: &Db,
        range: R,
    ) -> BatchAndDbIterator<'_> {
        let tree = Arc::clone(db.engine().default_keyspace());
        let bounds = owned_bounds(&range);
        self.iterator_over(tree, db.range(range), bounds)
    }

    /// [`WriteBatchWithIndex::iterator_with_base`] in keyspace `ks`.
    pub fn iterator_with_base_in<K: AsRef<[u8]>, R: std::ops::RangeBounds<K>>(
        &self,
        ks: &Keyspace,
        range: R,
    ) -> BatchAndDbIterator<'_> {
        let bounds = owned_bounds(&range);
        self.iterator_over(Arc::clone(ks.tree()), ks.range(range), bounds)
    }

    /// The entries of the range `(lower, upper)` of `tree` once the batch applies over `base`,
    /// the database's iterator over the same range (the newest state, or a snapshot's).
    pub(crate) fn iterator_over(
        &self,
        tree: Arc<KeyspaceTree>,
        base: DbIterator,
        (lower, upper): (Bound<Vec<u8>>, Bound<Vec<u8>>),
    ) -> BatchAndDbIterator<'_> {
        let id = tree.id;
        let lower = match lower {
            Bound::Included(k) => Bound::Included((id, k)),
            Bound::Excluded(k) => Bound::Excluded((id, k)),
            Bound::Unbounded => Bound::Included((id, Vec::new())),
        };
        let upper = match (upper, id.checked_add(1)) {
            (Bound::Included(k), _) => Bound::Included((id, k)),
            (Bound::Excluded(k), _) => Bound::Excluded((id, k)),
            (Bound::Unbounded, Some(next)) => Bound::Excluded((next, Vec::new())),
            (Bound::Unbounded, None) => Bound::Unbounded,
        };
        let batch = if lower_above_upper(&lower, &upper) {
            None
        } else {
            Some(self.index.range((lower, upper)))
        };
        BatchAndDbIterator {
            now: now_millis(&tree),
            tree,
            base,
            batch,
            front: Peeked::default(),
            back: Peeked::default(),
        }
    }
}

impl From<WriteBatchWithIndex> for WriteBatch {
    fn from(batch: WriteBatchWithIndex) -> WriteBatch {
        batch.batch
    }
}

/// `operands` applied to `existing` by the keyspace's merge operator (a `Corruption` naming the
/// key when it fails or is missing, as a read of the database reports it).
fn merge_over(
    operator: Option<&Arc<dyn MergeOperator>>,
    key: &[u8],
    existing: Option<&[u8]>,
    operands: &[Vec<u8>],
) -> Result<Vec<u8>> {
    let operands: Vec<&[u8]> = operands.iter().map(Vec::as_slice).collect();
    full_merge_for_read(operator, key, existing, &operands)
}

/// The clock of `tree`'s database now, in milliseconds (what an expiring put is judged by).
fn now_millis(tree: &KeyspaceTree) -> u64 {
    crate::base::ttl::millis(tree.options().clock.now())
}

pub(crate) fn owned_bounds<K: AsRef<[u8]>, R: std::ops::RangeBounds<K>>(
    range: &R,
) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    let own = |b: Bound<&K>| match b {
        Bound::Included(k) => Bound::Included(k.as_ref().to_vec()),
        Bound::Excluded(k) => Bound::Excluded(k.as_ref().to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    };
    (own(range.start_bound()), own(range.end_bound()))
}

/// Whether no key lies between the bounds (`BTreeMap::range` panics on bounds that cross).
fn lower_above_upper<T: Ord>(lower: &Bound<T>, upper: &Bound<T>) -> bool {
    match (lower, upper) {
        (Bound::Included(l), Bound::Included(u)) => l > u,
        (Bound::Included(l) | Bound::Excluded(l), Bound::Excluded(u))
        | (Bound::Excluded(l), Bound::Included(u)) => l >= u,
        _ => false,
    }
}

type Entry = (Vec<u8>, Vec<u8>);
type IndexRange<'a> = btree_map::Range<'a, (u32, Vec<u8>), Pending>;

/// What one end of a [`BatchAndDbIterator`] has taken from its two sources and not yet used.
#[derive(Default)]
struct Peeked<'a> {
    base: Option<Result<Entry>>,
    batch: Option<(&'a [u8], &'a Pending)>,
}

/// The entries of a range once a [`WriteBatchWithIndex`] applies over the database
/// ([`WriteBatchWithIndex::iterator_with_base`]); both directions.
pub struct BatchAndDbIterator<'a> {
    tree: Arc<KeyspaceTree>,
    /// The clock when the iterator was made, for the batch's expiring puts.
    now: u64,
    base: DbIterator,
    /// The index's entries of the range (`None`: an empty range).
    batch: Option<IndexRange<'a>>,
    front: Peeked<'a>,
    back: Peeked<'a>,
}

impl std::fmt::Debug for BatchAndDbIterator<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchAndDbIterator")
            .field("keyspace", &self.tree.name)
            .finish_non_exhaustive()
    }
}

/// Which end an iterator step takes from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    Front,
    Back,
}

impl<'a> BatchAndDbIterator<'a> {
    /// Leaves the end's next database entry in its `Peeked`; once the database's iterator is
    /// used up from both ends, what the other end peeked and has not used. Whether there is one.
    fn peek_base(&mut self, end: End) -> bool {
        if self.ends(end).0.base.is_none() {
            let next = match end {
                End::Front => self.base.next(),
                End::Back => self.base.next_back(),
            };
            let (mine, other) = self.ends(end);
            mine.base = next.or_else(|| other.base.take());
        }
        self.ends(end).0.base.is_some()
    }

    /// [`BatchAndDbIterator::peek_base`] for the batch's entries.
    fn peek_batch(&mut self, end: End) -> bool {
        if self.ends(end).0.batch.is_none() {
            let next = match (&mut self.batch, end) {
                (Some(range), End::Front) => range.next(),
                (Some(range), End::Back) => range.next_back(),
                (None, _) => None,
            };
            let next = next.map(|((_, k), p)| (k.as_slice(), p));
            let (mine, other) = self.ends(end);
            mine.batch = next.or_else(|| other.batch.take());
        }
        self.ends(end).0.batch.is_some()
    }

    fn ends(&mut self, end: End) -> (&mut Peeked<'a>, &mut Peeked<'a>) {
        match end {
            End::Front => (&mut self.front, &mut self.back),
            End::Back => (&mut self.back, &mut self.front),
        }
    }

    /// The next entry from `end`: the nearer of the two sources' keys, the batch's answer when
    /// both hold the key; keys the batch deletes are skipped.
    fn step(&mut self, end: End) -> Option<Result<Entry>> {
        loop {
            let has_base = self.peek_base(end);
            let has_batch = self.peek_batch(end);
            let (mine, _) = self.ends(end);
            if let Some(Err(_)) = &mine.base {
                return mine.base.take();
            }
            // `Less`: the database's entry is nearer this end ("nearer" from the back is the
            // larger key); `Greater`: the batch's.
            let order = match (&mine.base, &mine.batch) {
                (Some(Ok((k, _))), Some((b, _))) if end == End::Front => k.as_slice().cmp(b),
                (Some(Ok((k, _))), Some((b, _))) => (*b).cmp(k.as_slice()),
                _ if has_base => std::cmp::Ordering::Less,
                _ if has_batch => std::cmp::Ordering::Greater,
                _ => return None,
            };
            let (base, batch) = match order {
                std::cmp::Ordering::Less => return mine.base.take(),
                std::cmp::Ordering::Greater => (None, mine.batch.take()),
                std::cmp::Ordering::Equal => (mine.base.take(), mine.batch.take()),
            };
            let (key, pending) = batch?;
            let existing = base.and_then(|b| b.ok()).map(|(_, v)| v);
            if let Some(answer) = self.resolve(key, pending, existing) {
                return Some(answer);
            }
        }
    }

    /// What the batch's `pending` makes of `key`, whose database value is `existing`: an entry,
    /// or `None` when the batch deletes it.
    fn resolve(
        &self,
        key: &[u8],
        pending: &Pending,
        existing: Option<Vec<u8>>,
    ) -> Option<Result<Entry>> {
        match pending {
            Pending::Value { value, expires } => expires
                .is_none_or(|e| self.now < e)
                .then(|| Ok((key.to_vec(), value.clone()))),
            Pending::Deleted => None,
            Pending::Merged { base, operands } => {
                let existing = match base {
                    Some(known) => known.live(self.now),
                    None => existing,
                };
                let options = self.tree.options();
                let operator = options.merge_operator.as_ref();
                Some(
                    merge_over(operator, key, existing.as_deref(), operands)
                        .map(|v| (key.to_vec(), v)),
                )
            }
        }
    }
}

impl Iterator for BatchAndDbIterator<'_> {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        self.step(End::Front)
    }
}

impl DoubleEndedIterator for BatchAndDbIterator<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.step(End::Back)
    }
}
