//! Write batches: operations applied atomically by `DB::write`, readable back by iteration.
//!
//! A batch records its operations in its own byte string (`data`), as RocksDB's does, and is
//! turned into a `siftdb::WriteBatch` when written.

use crate::column_family::{AsColumnFamilyRef, CfInner};
use crate::Error;

/// A write batch (RocksDB's `WriteBatch`).
pub type WriteBatch = WriteBatchWithTransaction<false>;

/// Receives a batch's operations on the default column family, in order.
pub trait WriteBatchIterator {
    /// A put.
    fn put(&mut self, key: &[u8], value: &[u8]);
    /// A delete.
    fn delete(&mut self, key: &[u8]);
}

/// Receives a batch's operations with their column family ids (0: the default), in order.
pub trait WriteBatchIteratorCf {
    /// A put.
    fn put_cf(&mut self, cf_id: u32, key: &[u8], value: &[u8]);
    /// A delete.
    fn delete_cf(&mut self, cf_id: u32, key: &[u8]);
    /// A merge.
    fn merge_cf(&mut self, cf_id: u32, key: &[u8], value: &[u8]);
}

const HEADER: usize = 12;
pub(crate) const PUT: u8 = 1;
pub(crate) const DELETE: u8 = 2;
pub(crate) const MERGE: u8 = 3;
pub(crate) const DELETE_RANGE: u8 = 4;
const SINGLE_DELETE: u8 = 5;
const LOG_DATA: u8 = 6;
/// Set on the tag of an operation naming a column family (its index in the batch follows).
const IN_CF: u8 = 0x80;
/// Set with `IN_CF` when what follows is a column family id as the WAL has it (a batch read
/// back by `get_updates_since`), not an index into the batch's handles.
const RAW_ID: u8 = 0x40;

/// A write batch; `TRANSACTION` tells batches of transactions apart, as in rust-rocksdb.
#[derive(Clone)]
pub struct WriteBatchWithTransaction<const TRANSACTION: bool> {
    rep: Vec<u8>,
    /// The column families operations name, by their index in the record.
    cfs: Vec<CfInner>,
    count: usize,
}

/// A key a `TransactionDB` locks before a write: its column family's keyspace (`None`: the
/// default) and its bytes.
pub(crate) type LockKey<'a> = (Option<&'a siftdb::Keyspace>, &'a [u8]);

/// One decoded operation.
pub(crate) struct Op<'a> {
    pub(crate) kind: u8,
    pub(crate) cf: Option<u32>,
    pub(crate) raw_id: bool,
    pub(crate) key: &'a [u8],
    pub(crate) value: &'a [u8],
}

impl<const T: bool> Default for WriteBatchWithTransaction<T> {
    fn default() -> Self {
        Self::with_capacity_bytes(0)
    }
}

impl<const T: bool> std::fmt::Debug for WriteBatchWithTransaction<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteBatch")
            .field("len", &self.count)
            .finish()
    }
}

fn read_bytes<'a>(rep: &'a [u8], pos: &mut usize) -> Option<&'a [u8]> {
    let len_bytes = rep.get(*pos..*pos + 4)?;
    let len = u32::from_le_bytes(len_bytes.try_into().ok()?) as usize;
    let bytes = rep.get(*pos + 4..*pos + 4 + len)?;
    *pos += 4 + len;
    Some(bytes)
}

impl<const T: bool> WriteBatchWithTransaction<T> {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty batch with room for `capacity_bytes` of data.
    pub fn with_capacity_bytes(capacity_bytes: usize) -> Self {
        let mut rep = Vec::with_capacity(capacity_bytes.max(HEADER));
        rep.resize(HEADER, 0);
        WriteBatchWithTransaction {
            rep,
            cfs: Vec::new(),
            count: 0,
        }
    }

    /// A batch from the bytes [`data`](Self::data) returned (operations on the default column
    /// family; column family operations keep their ids but cannot be written).
    pub fn from_data(data: &[u8]) -> Self {
        let mut batch = Self::default();
        if data.len() >= HEADER {
            batch.rep = data.to_vec();
            batch.count = batch.ops().filter(|op| op.kind != LOG_DATA).count();
        }
        batch
    }

    /// Operations in the batch (log data not counted).
    pub fn len(&self) -> usize {
        self.count
    }

    /// Bytes of the batch's data.
    pub fn size_in_bytes(&self) -> usize {
        self.rep.len()
    }

    /// The batch's data.
    pub fn data(&self) -> &[u8] {
        &self.rep
    }

    /// Whether the batch holds no operation.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Removes every operation.
    pub fn clear(&mut self) {
        self.rep.truncate(HEADER);
        self.rep[..HEADER].fill(0);
        self.cfs.clear();
        self.count = 0;
    }

    pub(crate) fn ops(&self) -> impl Iterator<Item = Op<'_>> {
        let rep = &self.rep;
        let mut pos = HEADER;
        std::iter::from_fn(move || {
            let tag = *rep.get(pos)?;
            pos += 1;
            let cf = if tag & IN_CF != 0 {
                let id = u32::from_le_bytes(rep.get(pos..pos + 4)?.try_into().ok()?);
                pos += 4;
                Some(id)
            } else {
                None
            };
            let key = read_bytes(rep, &mut pos)?;
            let value = read_bytes(rep, &mut pos)?;
            Some(Op {
                kind: tag & !(IN_CF | RAW_ID),
                cf,
                raw_id: tag & RAW_ID != 0,
                key,
                value,
            })
        })
    }

    /// The column family of an operation's index.
    pub(crate) fn cf(&self, index: u32) -> Option<&CfInner> {
        self.cfs.get(index as usize)
    }

    /// Calls `callbacks` with each put and delete on the default column family.
    pub fn iterate<I: WriteBatchIterator>(&self, callbacks: &mut I) {
        for op in self.ops().filter(|op| op.cf.is_none()) {
            match op.kind {
                PUT => callbacks.put(op.key, op.value),
                DELETE | SINGLE_DELETE => callbacks.delete(op.key),
                _ => {}
            }
        }
    }

    /// Calls `callbacks` with each put, delete and merge and its column family id.
    pub fn iterate_cf<I: WriteBatchIteratorCf>(&self, callbacks: &mut I) {
        for op in self.ops() {
            let id = match (op.cf, op.raw_id) {
                (Some(id), true) => id,
                (cf, _) => cf.and_then(|i| self.cf(i)).map_or(0, |cf| cf.id),
            };
            match op.kind {
                PUT => callbacks.put_cf(id, op.key, op.value),
                DELETE | SINGLE_DELETE => callbacks.delete_cf(id, op.key),
                MERGE => callbacks.merge_cf(id, op.key, op.value),
                _ => {}
            }
        }
    }

    fn cf_index(&mut self, cf: &CfInner) -> u32 {
        let found = self
            .cfs
            .iter()
            .position(|c| c.id == cf.id && c.ks.name() == cf.ks.name());
        let index = found.unwrap_or_else(|| {
            self.cfs.push(cf.clone());
            self.cfs.len() - 1
        });
        index as u32
    }

    fn append(&mut self, kind: u8, cf: Option<&CfInner>, key: &[u8], value: &[u8]) {
        match cf {
            Some(cf) => {
                let index = self.cf_index(cf);
                self.rep.push(kind | IN_CF);
                self.rep.extend_from_slice(&index.to_le_bytes());
            }
            None => self.rep.push(kind),
        }
        for bytes in [key, value] {
            self.rep
                .extend_from_slice(&(bytes.len() as u32).to_le_bytes());
            self.rep.extend_from_slice(bytes);
        }
        if kind != LOG_DATA {
            self.count += 1;
            self.rep[8..HEADER].copy_from_slice(&(self.count as u32).to_le_bytes());
        }
    }

    /// Appends an operation read from the WAL (`cf_id`: the keyspace id recorded there).
    pub(crate) fn push_logged(&mut self, kind: u8, cf_id: u32, key: &[u8], value: &[u8]) {
        if cf_id == 0 {
            self.append(kind, None, key, value);
            return;
        }
        self.rep.push(kind | IN_CF | RAW_ID);
        self.rep.extend_from_slice(&cf_id.to_le_bytes());
        for bytes in [key, value] {
            self.rep
                .extend_from_slice(&(bytes.len() as u32).to_le_bytes());
            self.rep.extend_from_slice(bytes);
        }
        self.count += 1;
        self.rep[8..HEADER].copy_from_slice(&(self.count as u32).to_le_bytes());
    }

    /// Records the first sequence number in the batch's header.
    pub(crate) fn set_sequence(&mut self, sequence: u64) {
        self.rep[..8].copy_from_slice(&sequence.to_le_bytes());
    }

    /// Puts `value` under `key`.
    pub fn put<K: AsRef<[u8]>, V: AsRef<[u8]>>(&mut self, key: K, value: V) {
        self.append(PUT, None, key.as_ref(), value.as_ref());
    }

    /// Puts `value` under `key` in a column family.
    pub fn put_cf<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &mut self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        value: V,
    ) {
        self.append(PUT, Some(cf.cf_inner()), key.as_ref(), value.as_ref());
    }

    /// Merges `value` into `key`.
    pub fn merge<K: AsRef<[u8]>, V: AsRef<[u8]>>(&mut self, key: K, value: V) {
        self.append(MERGE, None, key.as_ref(), value.as_ref());
    }

    /// Merges `value` into `key` in a column family.
    pub fn merge_cf<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &mut self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        value: V,
    ) {
        self.append(MERGE, Some(cf.cf_inner()), key.as_ref(), value.as_ref());
    }

    /// Deletes `key`.
    pub fn delete<K: AsRef<[u8]>>(&mut self, key: K) {
        self.append(DELETE, None, key.as_ref(), &[]);
    }

    /// Deletes `key` in a column family.
    pub fn delete_cf<K: AsRef<[u8]>>(&mut self, cf: &impl AsColumnFamilyRef, key: K) {
        self.append(DELETE, Some(cf.cf_inner()), key.as_ref(), &[]);
    }

    /// Deletes `key` (siftdb has no single delete: a delete, which is never weaker).
    pub fn single_delete<K: AsRef<[u8]>>(&mut self, key: K) {
        self.append(SINGLE_DELETE, None, key.as_ref(), &[]);
    }

    /// Deletes `key` in a column family (a delete, as [`single_delete`](Self::single_delete)).
    pub fn single_delete_cf<K: AsRef<[u8]>>(&mut self, cf: &impl AsColumnFamilyRef, key: K) {
        self.append(SINGLE_DELETE, Some(cf.cf_inner()), key.as_ref(), &[]);
    }

    /// Deletes the keys in `[from, to)`.
    pub fn delete_range<K: AsRef<[u8]>>(&mut self, from: K, to: K) {
        self.append(DELETE_RANGE, None, from.as_ref(), to.as_ref());
    }

    /// Deletes the keys in `[from, to)` in a column family.
    pub fn delete_range_cf<K: AsRef<[u8]>>(&mut self, cf: &impl AsColumnFamilyRef, from: K, to: K) {
        self.append(
            DELETE_RANGE,
            Some(cf.cf_inner()),
            from.as_ref(),
            to.as_ref(),
        );
    }

    /// Data kept in the batch's bytes and not written to the database (siftdb's WAL does not
    /// keep it).
    pub fn put_log_data<V: AsRef<[u8]>>(&mut self, log_data: V) {
        self.append(LOG_DATA, None, log_data.as_ref(), &[]);
    }

    /// The keys the batch writes (puts, deletes, merges), each with its column family's
    /// keyspace (`None`: the default): what a `TransactionDB` locks before writing it.
    pub(crate) fn keys_to_lock(&self) -> Result<Vec<LockKey<'_>>, Error> {
        let mut keys = Vec::new();
        for op in self.ops() {
            if !matches!(op.kind, PUT | DELETE | SINGLE_DELETE | MERGE) {
                continue;
            }
            let ks = match op.cf {
                Some(i) => Some(
                    &self
                        .cf(i)
                        .filter(|_| !op.raw_id)
                        .ok_or_else(|| {
                            Error::invalid(
                                "a batch from data names a column family it does not hold",
                            )
                        })?
                        .ks,
                ),
                None => None,
            };
            keys.push((ks, op.key));
        }
        Ok(keys)
    }

    /// The siftdb batch that writes these operations. A put into a column family with a TTL
    /// is refused: siftdb's batches carry no expiry (use `put` / `put_cf`).
    pub(crate) fn to_siftdb(&self, default_ttl: bool) -> Result<siftdb::WriteBatch, Error> {
        let mut out = siftdb::WriteBatch::new();
        for op in self.ops() {
            let cf = match op.cf {
                Some(i) => Some(self.cf(i).filter(|_| !op.raw_id).ok_or_else(|| {
                    Error::invalid("a batch from data names a column family it does not hold")
                })?),
                None => None,
            };
            let ttl = cf.map_or(default_ttl, |cf| cf.ttl.is_some());
            if ttl && op.kind == PUT {
                return Err(Error::not_supported(
                    "a batched put into a column family with a TTL",
                ));
            }
            add(&mut out, cf.map(|cf| &cf.ks), &op);
        }
        Ok(out)
    }
}

/// Adds one operation to a siftdb batch.
fn add(out: &mut siftdb::WriteBatch, ks: Option<&siftdb::Keyspace>, op: &Op<'_>) {
    match (op.kind, ks) {
        (PUT, None) => out.put(op.key, op.value),
        (PUT, Some(ks)) => out.put_in(ks, op.key, op.value),
        (DELETE | SINGLE_DELETE, None) => out.delete(op.key),
        (DELETE | SINGLE_DELETE, Some(ks)) => out.delete_in(ks, op.key),
        (MERGE, None) => out.merge(op.key, op.value),
        (MERGE, Some(ks)) => out.merge_in(ks, op.key, op.value),
        (DELETE_RANGE, None) => out.delete_range(op.key, op.value),
        (DELETE_RANGE, Some(ks)) => out.delete_range_in(ks, op.key, op.value),
        // Written to siftdb's WAL with the batch, where `get_updates_since` finds it.
        (LOG_DATA, _) => out.put_log_data(op.key),
        _ => out,
    };
}
