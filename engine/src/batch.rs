//! Write batches and their encoding (the payload of a WAL record).
//!
//! ```text
//! batch  := sequence u64 LE | count u32 LE | op*
//! op     := 1 | varint key_len | key | varint value_len | value     (put)
//!         | 0 | varint key_len | key                                (delete)
//! ```
//! The batch's ops get consecutive sequence numbers starting at `sequence`.

use siftdb_sstable::coding::{get_bytes, put_bytes, read_u32, read_u64};
use siftdb_sstable::ValueKind;

use crate::error::{Error, Result};

/// Largest key siftdb accepts (1 MiB).
pub const MAX_KEY_SIZE: usize = 1 << 20;
/// Largest value siftdb accepts (256 MiB).
pub const MAX_VALUE_SIZE: usize = 256 << 20;
const HEADER: usize = 12;

/// A group of puts and deletes applied atomically by [`Db::write`](crate::Db::write).
///
/// ```
/// let mut batch = siftdb::WriteBatch::new();
/// batch.put(b"k1", b"v1").delete(b"k0");
/// assert_eq!(batch.len(), 2);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteBatch {
    rep: Vec<u8>,
    count: u32,
    invalid: Option<String>,
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
        }
    }

    /// Adds a put. An over-limit key or value makes the whole batch fail at write time.
    pub fn put<K: AsRef<[u8]>, V: AsRef<[u8]>>(&mut self, key: K, value: V) -> &mut Self {
        let (key, value) = (key.as_ref(), value.as_ref());
        self.check(key, Some(value));
        self.rep.push(ValueKind::Put as u8);
        put_bytes(&mut self.rep, key);
        put_bytes(&mut self.rep, value);
        self.count += 1;
        self
    }

    /// Adds a delete.
    pub fn delete<K: AsRef<[u8]>>(&mut self, key: K) -> &mut Self {
        let key = key.as_ref();
        self.check(key, None);
        self.rep.push(ValueKind::Delete as u8);
        put_bytes(&mut self.rep, key);
        self.count += 1;
        self
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

/// One decoded operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BatchOp<'a> {
    pub kind: ValueKind,
    pub key: &'a [u8],
    pub value: &'a [u8],
}

/// A decoded batch: first sequence and operations.
pub(crate) fn decode(rep: &[u8]) -> Option<(u64, Vec<BatchOp<'_>>)> {
    let sequence = read_u64(rep, 0)?;
    let count = read_u32(rep, 8)? as usize;
    let mut pos = HEADER;
    let mut ops = Vec::with_capacity(count.min(rep.len()));
    for _ in 0..count {
        let kind = ValueKind::from_u8(*rep.get(pos)?)?;
        pos += 1;
        let key = get_bytes(rep, &mut pos)?;
        let value = match kind {
            ValueKind::Put => get_bytes(rep, &mut pos)?,
            ValueKind::Delete => &[],
        };
        ops.push(BatchOp { kind, key, value });
    }
    if pos != rep.len() {
        return None;
    }
    Some((sequence, ops))
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn batch_rejects_oversized_keys() {
        let mut b = WriteBatch::new();
        b.put(vec![0; MAX_KEY_SIZE + 1], b"v");
        assert!(b.validate().is_err());
        let mut ok = WriteBatch::new();
        ok.put(vec![0; MAX_KEY_SIZE], b"v");
        assert!(ok.validate().is_ok());
    }
}
