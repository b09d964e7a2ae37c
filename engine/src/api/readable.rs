//! [`Readable`]: the read operations of every handle — [`Db`], [`Keyspace`], [`Snapshot`] and
//! [`Transaction`] — written once. Each handle says only where its reads go (a [`ReadTarget`]:
//! a keyspace's tree, at the newest sequence or a snapshot's; a transaction also lays its own
//! writes over what it reads); the trait's provided methods are the API.
//!
//! The handles keep inherent methods of the same names (hidden from the documentation) that
//! forward to the trait, so that code written before the trait, or without importing it,
//! keeps compiling: `db.get(k)` works with or without `use siftdb::Readable`.

use std::ops::Bound;
use std::sync::Arc;

use crate::api::pinned_value::PinnedValue;
use crate::base::error::Result;
use crate::base::options::ReadOptions;
use crate::core::keyspace_tree::KeyspaceTree;
use crate::paths::engine::Engine;
use crate::paths::iterator::DbIterator;
use crate::paths::latency::{timed, Op};

#[cfg(doc)]
use crate::{Db, Keyspace, Snapshot, Transaction};

/// Keeps [`Readable`] implemented by siftdb's handles only, so that methods can be added to it
/// in a minor release.
mod sealed {
    pub trait Sealed {}
}
pub(crate) use sealed::Sealed;

/// The keys a scan covers: a range, or the keys that start with a prefix.
#[derive(Debug, Clone)]
pub struct Scan {
    pub(crate) bounds: (Bound<Vec<u8>>, Bound<Vec<u8>>),
    pub(crate) prefix: Option<Vec<u8>>,
}

impl Scan {
    /// The keys of `range`.
    pub(crate) fn range<K: AsRef<[u8]>, R: std::ops::RangeBounds<K>>(range: &R) -> Scan {
        Scan {
            bounds: crate::api::batch_index::owned_bounds(range),
            prefix: None,
        }
    }

    /// The scan narrowed to `opts`' `iterate_lower_bound` and `iterate_upper_bound`.
    pub(crate) fn within(self, opts: &ReadOptions) -> Scan {
        let bounds = crate::core::key_bounds::KeyBounds {
            lower: self.bounds.0,
            upper: self.bounds.1,
        }
        .narrowed(
            opts.iterate_lower_bound.as_deref(),
            opts.iterate_upper_bound.as_deref(),
        );
        Scan {
            bounds: (bounds.lower, bounds.upper),
            prefix: self.prefix,
        }
    }

    /// The keys that start with `prefix`: from the prefix to the first key past all of them
    /// (none past them when the prefix is all `0xff`).
    pub(crate) fn prefix(prefix: &[u8]) -> Scan {
        let mut end = prefix.to_vec();
        while end.last() == Some(&0xff) {
            end.pop();
        }
        let upper = match end.last_mut() {
            Some(last) => {
                *last += 1;
                Bound::Excluded(end)
            }
            None => Bound::Unbounded,
        };
        Scan {
            bounds: (Bound::Included(prefix.to_vec()), upper),
            prefix: Some(prefix.to_vec()),
        }
    }
}

/// The read operations of a handle on the database: point lookups (with or without a copy,
/// several at once) and iterators over all keys, a range or a prefix, in both directions.
/// Implemented by [`Db`] (the `"default"` keyspace, newest data), [`Keyspace`] (its keyspace,
/// newest data), [`Snapshot`] (the `"default"` keyspace as of the snapshot) and
/// [`Transaction`] (its writes over the database at its snapshot).
///
/// Code generic over `Readable` reads any of them:
///
/// ```
/// use siftdb::Readable;
///
/// fn count_users(source: &impl Readable) -> siftdb::Result<usize> {
///     let mut n = 0;
///     for entry in source.prefix_iter("user:") {
///         entry?;
///         n += 1;
///     }
///     Ok(n)
/// }
///
/// # let dir = tempfile::tempdir()?;
/// let db = siftdb::Db::open(dir.path(), siftdb::Options::default())?;
/// db.put("user:1", "ann")?;
/// let snapshot = db.snapshot();
/// db.put("user:2", "bob")?;
/// let mut txn = db.transaction();
/// txn.put("user:3", "cy")?;
/// assert_eq!(count_users(&db)?, 2);
/// assert_eq!(count_users(&snapshot)?, 1);
/// assert_eq!(count_users(&txn)?, 3);
/// assert_eq!(txn.get("user:3")?, Some(b"cy".to_vec()));
/// # Ok::<(), siftdb::Error>(())
/// ```
pub trait Readable: Sealed {
    /// The iterator [`Readable::iter`], [`Readable::range`] and [`Readable::prefix_iter`]
    /// return: [`DbIterator`] (it owns what it reads), or for a transaction an iterator that
    /// borrows its writes.
    type Iter<'a>: DoubleEndedIterator<Item = Result<(Vec<u8>, Vec<u8>)>>
    where
        Self: 'a;

    /// Reads `key` into `value` (cleared by the caller), or with `pinned` leaves a value found
    /// in a table's data block there; whether it was found.
    #[doc(hidden)]
    fn read_value(
        &self,
        key: &[u8],
        opts: &ReadOptions,
        value: &mut Vec<u8>,
        pinned: Option<&mut Option<siftdb_sstable::PinnedValue>>,
    ) -> Result<bool>;

    /// An iterator over `scan`.
    #[doc(hidden)]
    fn read_scan(&self, scan: Scan, opts: &ReadOptions) -> Self::Iter<'_>;

    /// Looks up every key of `keys`; answers in the same order.
    #[doc(hidden)]
    fn read_many(&self, keys: &[&[u8]]) -> Vec<Result<Option<Vec<u8>>>> {
        let opts = ReadOptions::default();
        (keys.iter())
            .map(|key| {
                let mut value = Vec::new();
                let found = self.read_value(key, &opts, &mut value, None)?;
                Ok(found.then_some(value))
            })
            .collect()
    }

    /// The value of `key`, or `None`.
    fn get<K: AsRef<[u8]>>(&self, key: K) -> Result<Option<Vec<u8>>> {
        self.get_opt(key, &ReadOptions::default())
    }

    /// [`Readable::get`] reading as `opts` say (`fill_cache: false` leaves the block cache as
    /// it was: blocks it holds are used, others are read and dropped).
    fn get_opt<K: AsRef<[u8]>>(&self, key: K, opts: &ReadOptions) -> Result<Option<Vec<u8>>> {
        let mut value = Vec::new();
        let found = self.read_value(key.as_ref(), opts, &mut value, None)?;
        Ok(found.then_some(value))
    }

    /// Reads `key` into `buf` (cleared first); returns whether it was found. The value is
    /// copied once, straight from the memtable or the data block into `buf`, so a caller that
    /// reuses one buffer allocates nothing per lookup (a transaction's own write is handed over
    /// as the buffer instead).
    fn get_into<K: AsRef<[u8]>>(&self, key: K, buf: &mut Vec<u8>) -> Result<bool> {
        buf.clear();
        self.read_value(key.as_ref(), &ReadOptions::default(), buf, None)
    }

    /// The value of `key` without a copy where it can be (see [`PinnedValue`]): a plain put
    /// in a table is handed back inside its cached data block.
    fn get_pinned<K: AsRef<[u8]>>(&self, key: K) -> Result<Option<PinnedValue>> {
        self.get_pinned_opt(key, &ReadOptions::default())
    }

    /// [`Readable::get_pinned`] reading as `opts` say.
    fn get_pinned_opt<K: AsRef<[u8]>>(
        &self,
        key: K,
        opts: &ReadOptions,
    ) -> Result<Option<PinnedValue>> {
        let (mut copied, mut pinned) = (Vec::new(), None);
        let found = self.read_value(key.as_ref(), opts, &mut copied, Some(&mut pinned))?;
        Ok(crate::api::pinned_value::answer(found, pinned, copied))
    }

    /// Whether `key` has a value.
    fn contains_key<K: AsRef<[u8]>>(&self, key: K) -> Result<bool> {
        self.get_into(key, &mut Vec::new())
    }

    /// Looks up every key of `keys` at one point in time, answers in the same order: as many
    /// `get`s, but on `Db` and `Keyspace` each key hashed once and the filters of all keys
    /// probed level by level with their memory requested ahead (RocksDB's `MultiGet`). An
    /// error (a damaged block) is the answer of the keys it concerns only.
    ///
    /// ```
    /// # use siftdb::Readable;
    /// # let dir = tempfile::tempdir()?;
    /// # let db = siftdb::Db::open(dir.path(), siftdb::Options::default())?;
    /// db.put("a", "1")?;
    /// db.put("c", "3")?;
    /// let got = db.multi_get(&["c", "b", "a"]);
    /// let got: Vec<Option<Vec<u8>>> = got.into_iter().collect::<Result<_, _>>()?;
    /// assert_eq!(got, [Some(b"3".to_vec()), None, Some(b"1".to_vec())]);
    /// # Ok::<(), siftdb::Error>(())
    /// ```
    fn multi_get<K: AsRef<[u8]>>(&self, keys: &[K]) -> Vec<Result<Option<Vec<u8>>>> {
        let keys: Vec<&[u8]> = keys.iter().map(AsRef::as_ref).collect();
        self.read_many(&keys)
    }

    /// An iterator over all keys in order (`.rev()` for descending order), seeing the data as
    /// of its creation. A [`DbIterator`] owns what it reads (no borrow of the handle) and can
    /// move to another thread; [`DbIterator::seek`] starts it at a key.
    fn iter(&self) -> Self::Iter<'_> {
        self.iter_opt(&ReadOptions::default())
    }

    /// [`Readable::iter`] reading as `opts` say (`fill_cache: false` for a scan that must not
    /// push the working set out of the block cache; `iterate_lower_bound` /
    /// `iterate_upper_bound` narrow it).
    fn iter_opt(&self, opts: &ReadOptions) -> Self::Iter<'_> {
        self.read_scan(Scan::range::<&[u8], _>(&(..)), opts)
    }

    /// An iterator over the keys in `range`, any [`RangeBounds`](std::ops::RangeBounds) of
    /// byte strings: `db.range("a".."m")`, `db.range(b"k".to_vec()..)`,
    /// `db.range::<&[u8], _>((Bound::Excluded(start), Bound::Included(end)))`. Both bounds hold
    /// in both directions and after a seek.
    ///
    /// ```
    /// # use siftdb::Readable;
    /// # let dir = tempfile::tempdir()?;
    /// # let db = siftdb::Db::open(dir.path(), siftdb::Options::default())?;
    /// for k in ["apple", "banana", "cherry", "date"] {
    ///     db.put(k, "fruit")?;
    /// }
    /// let keys: Vec<Vec<u8>> = db
    ///     .range("b"..="cherry")
    ///     .rev()
    ///     .map(|kv| kv.map(|(k, _)| k))
    ///     .collect::<Result<_, _>>()?;
    /// assert_eq!(keys, [b"cherry".to_vec(), b"banana".to_vec()]);
    /// # Ok::<(), siftdb::Error>(())
    /// ```
    fn range<K: AsRef<[u8]>, R: std::ops::RangeBounds<K>>(&self, range: R) -> Self::Iter<'_> {
        self.read_scan(Scan::range(&range), &ReadOptions::default())
    }

    /// An iterator over the keys that start with `prefix`, in order (`.rev()`: descending); it
    /// never yields another key. Tables whose prefix filter says the prefix is absent are
    /// skipped without being read.
    fn prefix_iter<P: AsRef<[u8]>>(&self, prefix: P) -> Self::Iter<'_> {
        self.read_scan(Scan::prefix(prefix.as_ref()), &ReadOptions::default())
    }
}

/// Where a handle's reads go: a keyspace's tree, at a snapshot's sequence or (without one) the
/// newest.
pub(crate) struct ReadTarget<'a> {
    pub engine: &'a Arc<Engine>,
    pub tree: &'a Arc<KeyspaceTree>,
    pub sequence: Option<u64>,
}

impl ReadTarget<'_> {
    /// [`Readable::read_value`] of the target.
    pub(crate) fn value(
        &self,
        key: &[u8],
        opts: &ReadOptions,
        value: &mut Vec<u8>,
        pinned: Option<&mut Option<siftdb_sstable::PinnedValue>>,
    ) -> Result<bool> {
        timed(Op::Get, Some(&self.tree.name), || {
            (self.engine).get_point(self.tree, key, self.sequence, opts, value, pinned)
        })
    }

    /// [`Readable::read_scan`] of the target.
    pub(crate) fn scan(&self, scan: Scan, opts: &ReadOptions) -> DbIterator {
        crate::paths::read::iterator(
            self.engine,
            self.tree,
            self.sequence,
            &scan.bounds,
            scan.prefix,
            opts,
        )
    }

    /// [`Readable::read_many`] of the target: the batched lookup at the newest data, one
    /// lookup after another at a snapshot.
    pub(crate) fn many(&self, keys: &[&[u8]]) -> Vec<Result<Option<Vec<u8>>>> {
        match self.sequence {
            None => self.engine.multi_get(self.tree, keys),
            Some(_) => (keys.iter())
                .map(|key| {
                    let mut value = Vec::new();
                    let found = self.value(key, &ReadOptions::default(), &mut value, None)?;
                    Ok(found.then_some(value))
                })
                .collect(),
        }
    }
}

/// Implements [`Readable`] for a handle whose reads go to `$target` (a [`ReadTarget`]).
macro_rules! readable_through_target {
    ($handle:ty, |$this:ident| $target:expr) => {
        impl $crate::api::readable::Sealed for $handle {}

        impl $crate::api::readable::Readable for $handle {
            type Iter<'a>
                = $crate::paths::iterator::DbIterator
            where
                Self: 'a;

            fn read_value(
                &self,
                key: &[u8],
                opts: &$crate::base::options::ReadOptions,
                value: &mut Vec<u8>,
                pinned: Option<&mut Option<siftdb_sstable::PinnedValue>>,
            ) -> $crate::base::error::Result<bool> {
                let $this = self;
                $target.value(key, opts, value, pinned)
            }

            fn read_scan(
                &self,
                scan: $crate::api::readable::Scan,
                opts: &$crate::base::options::ReadOptions,
            ) -> Self::Iter<'_> {
                let $this = self;
                $target.scan(scan, opts)
            }

            fn read_many(
                &self,
                keys: &[&[u8]],
            ) -> Vec<$crate::base::error::Result<Option<Vec<u8>>>> {
                let $this = self;
                $target.many(keys)
            }
        }
    };
}
pub(crate) use readable_through_target;

/// Inherent methods of `$handle` that forward to [`Readable`]'s, hidden from the
/// documentation (which shows the trait): calls written without `use siftdb::Readable` keep
/// compiling.
macro_rules! forward_reads_to_readable {
    ($handle:ty, $iter:ty) => {
        #[doc(hidden)]
        impl $handle {
            /// See [`Readable::get`](crate::Readable::get).
            pub fn get<K: AsRef<[u8]>>(&self, key: K) -> $crate::Result<Option<Vec<u8>>> {
                $crate::Readable::get(self, key)
            }
            /// See [`Readable::get_opt`](crate::Readable::get_opt).
            pub fn get_opt<K: AsRef<[u8]>>(
                &self,
                key: K,
                opts: &$crate::ReadOptions,
            ) -> $crate::Result<Option<Vec<u8>>> {
                $crate::Readable::get_opt(self, key, opts)
            }
            /// See [`Readable::get_into`](crate::Readable::get_into).
            pub fn get_into<K: AsRef<[u8]>>(
                &self,
                key: K,
                buf: &mut Vec<u8>,
            ) -> $crate::Result<bool> {
                $crate::Readable::get_into(self, key, buf)
            }
            /// See [`Readable::get_pinned`](crate::Readable::get_pinned).
            pub fn get_pinned<K: AsRef<[u8]>>(
                &self,
                key: K,
            ) -> $crate::Result<Option<$crate::PinnedValue>> {
                $crate::Readable::get_pinned(self, key)
            }
            /// See [`Readable::get_pinned_opt`](crate::Readable::get_pinned_opt).
            pub fn get_pinned_opt<K: AsRef<[u8]>>(
                &self,
                key: K,
                opts: &$crate::ReadOptions,
            ) -> $crate::Result<Option<$crate::PinnedValue>> {
                $crate::Readable::get_pinned_opt(self, key, opts)
            }
            /// See [`Readable::contains_key`](crate::Readable::contains_key).
            pub fn contains_key<K: AsRef<[u8]>>(&self, key: K) -> $crate::Result<bool> {
                $crate::Readable::contains_key(self, key)
            }
            /// See [`Readable::multi_get`](crate::Readable::multi_get).
            pub fn multi_get<K: AsRef<[u8]>>(
                &self,
                keys: &[K],
            ) -> Vec<$crate::Result<Option<Vec<u8>>>> {
                $crate::Readable::multi_get(self, keys)
            }
            /// See [`Readable::iter`](crate::Readable::iter).
            pub fn iter(&self) -> $iter {
                $crate::Readable::iter(self)
            }
            /// See [`Readable::iter_opt`](crate::Readable::iter_opt).
            pub fn iter_opt(&self, opts: &$crate::ReadOptions) -> $iter {
                $crate::Readable::iter_opt(self, opts)
            }
            /// See [`Readable::range`](crate::Readable::range).
            pub fn range<K: AsRef<[u8]>, R: std::ops::RangeBounds<K>>(&self, range: R) -> $iter {
                $crate::Readable::range(self, range)
            }
            /// See [`Readable::prefix_iter`](crate::Readable::prefix_iter).
            pub fn prefix_iter<P: AsRef<[u8]>>(&self, prefix: P) -> $iter {
                $crate::Readable::prefix_iter(self, prefix)
            }
        }
    };
}
pub(crate) use forward_reads_to_readable;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_scans_end_past_the_last_key_of_the_prefix() {
        let scan = Scan::prefix(b"ab\xff");
        assert_eq!(scan.bounds.0, Bound::Included(b"ab\xff".to_vec()));
        assert_eq!(scan.bounds.1, Bound::Excluded(b"ac".to_vec()));
        assert_eq!(Scan::prefix(b"\xff\xff").bounds.1, Bound::Unbounded);
        assert_eq!(Scan::prefix(b"").bounds.1, Bound::Unbounded);
    }

    #[test]
    fn read_options_narrow_a_scan_never_widen_it() {
        let opts = ReadOptions {
            iterate_lower_bound: Some(b"c".to_vec()),
            iterate_upper_bound: Some(b"m".to_vec()),
            ..ReadOptions::default()
        };
        let all = Scan::range::<&[u8], _>(&(..)).within(&opts);
        assert_eq!(all.bounds.0, Bound::Included(b"c".to_vec()));
        assert_eq!(all.bounds.1, Bound::Excluded(b"m".to_vec()));
        let inner = Scan::range(&(&b"d"[..]..=&b"f"[..])).within(&opts);
        assert_eq!(inner.bounds.0, Bound::Included(b"d".to_vec()));
        assert_eq!(inner.bounds.1, Bound::Included(b"f".to_vec()));
        let prefix = Scan::prefix(b"x").within(&opts);
        assert_eq!(prefix.bounds.1, Bound::Excluded(b"m".to_vec()));
        assert_eq!(prefix.prefix, Some(b"x".to_vec()));
    }
}
