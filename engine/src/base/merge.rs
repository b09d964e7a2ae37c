//! Merge operators (RocksDB's `MergeOperator`): read-modify-write without the read. A
//! [`Db::merge`](crate::Db::merge) stores an *operand*; reads combine the operands of a key with
//! its older value, and compaction folds them together once the value is in reach.
//!
//! Two operators ship ready to use: [`U64Add`] (a little-endian `u64` counter) and [`Append`]
//! (values joined with a separator).
//!
//! How operands are resolved:
//! * a read whose newest visible version of a key is an operand gathers the operands down to
//!   their base — a value, or nothing at a tombstone, a range deletion, an expired value or the
//!   key's first version — and calls [`MergeOperator::full_merge`]; only keys that hold
//!   operands pay for it (a seek bounded to the key). A failed merge is an
//!   `Error::Corruption` naming the key;
//! * compaction folds a run of operands into one value when no live snapshot lies between them
//!   and their base, or when nothing older is left and the output is the bottom level;
//!   otherwise into one operand with [`MergeOperator::partial_merge`], or it leaves them.
//!   An expiring base is left for reads to judge, and an operator that fails or panics in a
//!   compaction leaves the entries as they were: compaction never loses data to it;
//! * the `OPTIONS` file records the operator's name: a database holding operands refuses to
//!   open with another operator or none.

use std::sync::Arc;

use siftdb_compaction::OperandMerger;

use crate::base::error::{Error, Result};

/// Combines merge operands with the value they apply to. Set it in `Options::merge_operator`;
/// its [`name`](MergeOperator::name) is recorded in the database's `OPTIONS`, and reopening a
/// database that holds merge operands under another name (or none) is refused.
///
/// Both methods must be deterministic and must not panic: they run on reads (the merged value
/// is computed by each `get` and iterator that meets operands) and on compaction threads.
///
/// ```
/// use siftdb::MergeOperator;
/// /// Keeps the largest operand seen (as bytes).
/// struct Max;
/// impl MergeOperator for Max {
///     fn name(&self) -> &str { "max" }
///     fn full_merge(&self, _key: &[u8], existing: Option<&[u8]>, operands: &[&[u8]]) -> Option<Vec<u8>> {
///         operands.iter().copied().chain(existing).max().map(<[u8]>::to_vec)
///     }
///     fn partial_merge(&self, _key: &[u8], operands: &[&[u8]]) -> Option<Vec<u8>> {
///         operands.iter().max().map(|o| o.to_vec())
///     }
/// }
/// # let dir = tempfile::tempdir()?;
/// let options = siftdb::Options { merge_operator: Some(std::sync::Arc::new(Max)), ..Default::default() };
/// let db = siftdb::Db::open(dir.path(), options)?;
/// db.merge(b"k", b"b")?;
/// db.merge(b"k", b"c")?;
/// db.merge(b"k", b"a")?;
/// assert_eq!(db.get(b"k")?, Some(b"c".to_vec()));
/// # Ok::<(), siftdb::Error>(())
/// ```
pub trait MergeOperator: Send + Sync {
    /// A stable name, recorded in `OPTIONS`.
    fn name(&self) -> &str;
    /// The value after applying `operands` (oldest first) to `existing`; None = merge failed (Corruption).
    fn full_merge(
        &self,
        key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Option<Vec<u8>>;
    /// Optional: combine operands without the base value (compaction uses it when no base is in reach).
    fn partial_merge(&self, _key: &[u8], _operands: &[&[u8]]) -> Option<Vec<u8>> {
        None
    }
}

/// A counter: values and operands are `u64`s in 8 little-endian bytes; merging adds them
/// (wrapping on overflow). A missing value counts as 0; a value or operand of another length
/// fails the merge (reads report [`Error::Corruption`](crate::Error)).
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// let options = siftdb::Options {
///     merge_operator: Some(std::sync::Arc::new(siftdb::merge::U64Add)),
///     ..Default::default()
/// };
/// let db = siftdb::Db::open(dir.path(), options)?;
/// db.merge(b"visits", &3u64.to_le_bytes())?;
/// db.merge(b"visits", &4u64.to_le_bytes())?;
/// assert_eq!(db.get(b"visits")?, Some(7u64.to_le_bytes().to_vec()));
/// # Ok::<(), siftdb::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct U64Add;

fn le_u64(bytes: &[u8]) -> Option<u64> {
    bytes.try_into().ok().map(u64::from_le_bytes)
}

impl MergeOperator for U64Add {
    fn name(&self) -> &str {
        "siftdb.u64add"
    }

    fn full_merge(
        &self,
        _key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Option<Vec<u8>> {
        let base = existing.map_or(Some(0), le_u64)?;
        let sum = operands
            .iter()
            .try_fold(base, |acc, op| le_u64(op).map(|v| acc.wrapping_add(v)))?;
        Some(sum.to_le_bytes().to_vec())
    }

    fn partial_merge(&self, key: &[u8], operands: &[&[u8]]) -> Option<Vec<u8>> {
        self.full_merge(key, None, operands)
    }
}

/// Appends: the value is the older value and each operand joined by `separator`
/// (an operand on no value is the value alone).
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// let options = siftdb::Options {
///     merge_operator: Some(std::sync::Arc::new(siftdb::merge::Append::new(b","))),
///     ..Default::default()
/// };
/// let db = siftdb::Db::open(dir.path(), options)?;
/// db.put(b"tags", b"red")?;
/// db.merge(b"tags", b"green")?;
/// db.merge(b"tags", b"blue")?;
/// assert_eq!(db.get(b"tags")?, Some(b"red,green,blue".to_vec()));
/// # Ok::<(), siftdb::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct Append {
    separator: Vec<u8>,
    name: String,
}

impl Append {
    /// An operator joining with `separator` (its name records the separator, so a database
    /// reopened with another separator is refused while operands exist).
    pub fn new(separator: &[u8]) -> Append {
        let hex: String = separator.iter().map(|b| format!("{b:02x}")).collect();
        Append {
            separator: separator.to_vec(),
            name: format!("siftdb.append:{hex}"),
        }
    }

    fn join<'a>(&self, parts: impl Iterator<Item = &'a [u8]>) -> Vec<u8> {
        let mut out = Vec::new();
        for (i, part) in parts.enumerate() {
            if i > 0 {
                out.extend_from_slice(&self.separator);
            }
            out.extend_from_slice(part);
        }
        out
    }
}

impl MergeOperator for Append {
    fn name(&self) -> &str {
        &self.name
    }

    fn full_merge(
        &self,
        _key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Option<Vec<u8>> {
        Some(self.join(existing.into_iter().chain(operands.iter().copied())))
    }

    fn partial_merge(&self, _key: &[u8], operands: &[&[u8]]) -> Option<Vec<u8>> {
        Some(self.join(operands.iter().copied()))
    }
}

/// The user's operator as compaction's [`OperandMerger`]: a panic counts as a failed merge
/// (compaction then keeps the operands as they are).
pub(crate) struct CompactionMerger(pub Arc<dyn MergeOperator>);

impl OperandMerger for CompactionMerger {
    fn full_merge(
        &self,
        user_key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Option<Vec<u8>> {
        let op = &self.0;
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            op.full_merge(user_key, existing, operands)
        }))
        .ok()
        .flatten()
    }

    fn partial_merge(&self, user_key: &[u8], operands: &[&[u8]]) -> Option<Vec<u8>> {
        let op = &self.0;
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            op.partial_merge(user_key, operands)
        }))
        .ok()
        .flatten()
    }
}

/// A read's full merge: the value, or [`Error::Corruption`] naming the key when the operator
/// fails (or is missing).
pub(crate) fn full_merge_for_read(
    operator: Option<&Arc<dyn MergeOperator>>,
    key: &[u8],
    existing: Option<&[u8]>,
    operands: &[&[u8]],
) -> Result<Vec<u8>> {
    let Some(op) = operator else {
        return Err(Error::corruption(format!(
            "key {} holds merge operands but no merge operator is configured",
            crate::base::error::printable_key(key)
        )));
    };
    let merged = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        op.full_merge(key, existing, operands)
    }));
    merged.ok().flatten().ok_or_else(|| {
        Error::corruption(format!(
            "merge operator {} failed to merge key {}",
            op.name(),
            crate::base::error::printable_key(key)
        ))
    })
}

/// How a point lookup reads an operand base kept in a blob file: given the stored blob index,
/// the value (`None` if it has expired).
pub(crate) type BlobBase<'a> = dyn Fn(&[u8]) -> Result<Option<Vec<u8>>> + 'a;

/// A point lookup's merge operands of one key, newest first, gathered source by source (a
/// memtable or a table: each holds versions newer than every later one's) until their base.
pub(crate) struct OperandStack {
    /// Milliseconds: when expiring values are judged.
    now: u64,
    operands: Vec<Vec<u8>>,
    base: Option<Vec<u8>>,
}

impl OperandStack {
    pub(crate) fn new(now: u64) -> OperandStack {
        OperandStack {
            now,
            operands: Vec::new(),
            base: None,
        }
    }

    /// Takes the versions of `key` visible at `seq` from `cursor` (over one memtable or table
    /// whose newest range tombstone over the key is `covered`), newest first. `Ok(true)` once
    /// the base is found (or the key was deleted): nothing older matters. A base kept in a blob
    /// file is read with `blob` (given its stored blob index: the value, or `None` if expired).
    pub(crate) fn take_versions(
        &mut self,
        cursor: &mut dyn siftdb_sstable::InternalIterator,
        key: &[u8],
        seq: u64,
        covered: Option<u64>,
        blob: &BlobBase<'_>,
    ) -> Result<bool> {
        use siftdb_sstable::{InternalKey, ParsedKey, ValueKind};
        let cover = covered.unwrap_or(0);
        cursor.seek(InternalKey::for_lookup(key, seq).encoded());
        while cursor.valid() {
            let parsed = ParsedKey::parse(cursor.key())
                .ok_or_else(|| Error::corruption("undecodable internal key"))?;
            if parsed.user_key != key || parsed.sequence < cover {
                break;
            }
            let value = cursor.value();
            match parsed.kind {
                ValueKind::Merge => self.operands.push(value.to_vec()),
                ValueKind::Put => {
                    self.base = Some(value.to_vec());
                    return Ok(true);
                }
                ValueKind::ExpiringPut => {
                    let (expiry, live) = crate::base::ttl::decode(value).ok_or_else(|| {
                        Error::corruption("an expiring value is shorter than its expiry time")
                    })?;
                    self.base = (self.now < expiry).then(|| live.to_vec());
                    return Ok(true);
                }
                ValueKind::BlobIndex => {
                    self.base = blob(value)?;
                    return Ok(true);
                }
                ValueKind::Delete | ValueKind::RangeDelete => return Ok(true),
            }
            cursor.next();
        }
        if let Some(e) = cursor.take_error() {
            return Err(Error::from(e));
        }
        // A range tombstone of this source deletes everything older.
        Ok(covered.is_some())
    }

    /// The merged value of `key` into `value`; `Ok(false)` if there is no operand (never the
    /// case when called after a lookup found one).
    pub(crate) fn merge(
        self,
        operator: Option<&Arc<dyn MergeOperator>>,
        key: &[u8],
        value: &mut Vec<u8>,
    ) -> Result<bool> {
        if self.operands.is_empty() {
            return Ok(false);
        }
        let oldest_first: Vec<&[u8]> = self.operands.iter().rev().map(Vec::as_slice).collect();
        *value = full_merge_for_read(operator, key, self.base.as_deref(), &oldest_first)?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn u64add_adds_and_refuses_bad_widths() {
        let one = 1u64.to_le_bytes();
        let two = 2u64.to_le_bytes();
        let got = U64Add.full_merge(b"k", Some(&one), &[&two, &two]);
        assert_eq!(got, Some(5u64.to_le_bytes().to_vec()));
        assert_eq!(U64Add.full_merge(b"k", None, &[&two]), Some(two.to_vec()));
        assert_eq!(U64Add.full_merge(b"k", Some(b"x"), &[&two]), None);
        assert_eq!(U64Add.partial_merge(b"k", &[&two, b"abc"]), None);
        let max = u64::MAX.to_le_bytes();
        assert_eq!(
            U64Add.full_merge(b"k", Some(&max), &[&two]),
            Some(1u64.to_le_bytes().to_vec())
        );
    }

    #[test]
    fn append_joins_with_its_separator() {
        let a = Append::new(b"|");
        assert_eq!(a.full_merge(b"k", None, &[b"x"]), Some(b"x".to_vec()));
        assert_eq!(
            a.full_merge(b"k", Some(b"v"), &[b"x", b"y"]),
            Some(b"v|x|y".to_vec())
        );
        assert_eq!(a.partial_merge(b"k", &[b"x", b"y"]), Some(b"x|y".to_vec()));
        assert_ne!(a.name(), Append::new(b",").name());
    }

    #[test]
    fn a_missing_or_failing_operator_is_corruption_naming_the_key() {
        let e = full_merge_for_read(None, b"key7", None, &[b"x"]).unwrap_err();
        assert!(e.is_corruption() && e.to_string().contains("key7"), "{e}");
        let op: Arc<dyn MergeOperator> = Arc::new(U64Add);
        let e = full_merge_for_read(Some(&op), b"key8", None, &[b"short"]).unwrap_err();
        assert!(e.is_corruption() && e.to_string().contains("key8"), "{e}");
    }
}
