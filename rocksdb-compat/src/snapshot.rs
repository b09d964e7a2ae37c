//! Snapshots: siftdb's `Snapshot`, borrowed from the database as in rust-rocksdb.

use std::sync::Arc;

use crate::column_family::AsColumnFamilyRef;
use crate::db_iterator::{DBIteratorWithThreadMode, DBRawIteratorWithThreadMode, IteratorMode};
use crate::{DBAccess, DBPinnableSlice, Error, ReadOptions};

/// The siftdb snapshot, shared by the handle and the read options naming it.
pub(crate) struct SnapshotInner {
    pub(crate) snapshot: siftdb::Snapshot,
}

/// A consistent view of the database at one sequence number.
pub struct SnapshotWithThreadMode<'a, D: DBAccess> {
    db: &'a D,
    pub(crate) inner: Arc<SnapshotInner>,
}

/// A snapshot of [`DB`](crate::DB).
pub type Snapshot<'a> = SnapshotWithThreadMode<'a, crate::DB>;

impl<'a, D: DBAccess> SnapshotWithThreadMode<'a, D> {
    /// A snapshot of `db`.
    pub fn new(db: &'a D) -> Self {
        let snapshot = db.take_snapshot();
        SnapshotWithThreadMode {
            db,
            inner: Arc::new(SnapshotInner { snapshot }),
        }
    }

    fn opts(&self, mut readopts: ReadOptions) -> ReadOptions {
        readopts.snapshot = Some(self.inner.clone());
        readopts
    }

    /// The sequence number the snapshot reads at.
    pub fn sequence_number(&self) -> u64 {
        self.inner.snapshot.sequence()
    }

    /// Reads `key`.
    pub fn get<K: AsRef<[u8]>>(&self, key: K) -> Result<Option<Vec<u8>>, Error> {
        Ok(self.inner.snapshot.get(key)?)
    }

    /// Reads `key` with `readopts`.
    pub fn get_opt<K: AsRef<[u8]>>(
        &self,
        key: K,
        readopts: ReadOptions,
    ) -> Result<Option<Vec<u8>>, Error> {
        self.db.get_opt(key, &self.opts(readopts))
    }

    /// Reads `key` of a column family.
    pub fn get_cf<K: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
    ) -> Result<Option<Vec<u8>>, Error> {
        Ok(self
            .inner
            .snapshot
            .get_in(&cf.cf_inner().ks, key.as_ref())?)
    }

    /// Reads `key` of a column family with `readopts`.
    pub fn get_cf_opt<K: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        readopts: ReadOptions,
    ) -> Result<Option<Vec<u8>>, Error> {
        self.db.get_cf_opt(cf, key, &self.opts(readopts))
    }

    /// Reads `key` without a copy.
    pub fn get_pinned<K: AsRef<[u8]>>(&self, key: K) -> Result<Option<DBPinnableSlice<'_>>, Error> {
        Ok(self
            .inner
            .snapshot
            .get_pinned(key)?
            .map(DBPinnableSlice::new))
    }

    /// Reads `key` of a column family without a copy.
    pub fn get_pinned_cf<K: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
    ) -> Result<Option<DBPinnableSlice<'_>>, Error> {
        let got = self.inner.snapshot.get_pinned_in(&cf.cf_inner().ks, key)?;
        Ok(got.map(DBPinnableSlice::new))
    }

    /// Reads several keys.
    pub fn multi_get<K: AsRef<[u8]>, I: IntoIterator<Item = K>>(
        &self,
        keys: I,
    ) -> Vec<Result<Option<Vec<u8>>, Error>> {
        self.db
            .multi_get_opt(keys, &self.opts(ReadOptions::default()))
    }

    /// Reads several keys with `readopts`.
    pub fn multi_get_opt<K: AsRef<[u8]>, I: IntoIterator<Item = K>>(
        &self,
        keys: I,
        readopts: ReadOptions,
    ) -> Vec<Result<Option<Vec<u8>>, Error>> {
        self.db.multi_get_opt(keys, &self.opts(readopts))
    }

    /// Reads several keys, each of its column family.
    pub fn multi_get_cf<'b, K, I, W>(&self, keys_cf: I) -> Vec<Result<Option<Vec<u8>>, Error>>
    where
        K: AsRef<[u8]>,
        I: IntoIterator<Item = (&'b W, K)>,
        W: AsColumnFamilyRef + 'b,
    {
        self.db
            .multi_get_cf_opt(keys_cf, &self.opts(ReadOptions::default()))
    }

    /// An iterator at the snapshot.
    pub fn iterator(&self, mode: IteratorMode<'_>) -> DBIteratorWithThreadMode<'a, D> {
        self.iterator_opt(mode, ReadOptions::default())
    }

    /// An iterator at the snapshot with `readopts`.
    pub fn iterator_opt(
        &self,
        mode: IteratorMode<'_>,
        readopts: ReadOptions,
    ) -> DBIteratorWithThreadMode<'a, D> {
        DBIteratorWithThreadMode::new(self.raw_iterator_opt(readopts), mode)
    }

    /// An iterator over a column family at the snapshot.
    pub fn iterator_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        mode: IteratorMode<'_>,
    ) -> DBIteratorWithThreadMode<'a, D> {
        self.iterator_cf_opt(cf, ReadOptions::default(), mode)
    }

    /// An iterator over a column family at the snapshot with `readopts`.
    pub fn iterator_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        readopts: ReadOptions,
        mode: IteratorMode<'_>,
    ) -> DBIteratorWithThreadMode<'a, D> {
        DBIteratorWithThreadMode::new(self.raw_iterator_cf_opt(cf, readopts), mode)
    }

    /// A raw cursor at the snapshot.
    pub fn raw_iterator(&self) -> DBRawIteratorWithThreadMode<'a, D> {
        self.raw_iterator_opt(ReadOptions::default())
    }

    /// A raw cursor at the snapshot with `readopts`.
    pub fn raw_iterator_opt(&self, readopts: ReadOptions) -> DBRawIteratorWithThreadMode<'a, D> {
        self.db.core().raw_iter(None, self.opts(readopts))
    }

    /// A raw cursor over a column family at the snapshot.
    pub fn raw_iterator_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
    ) -> DBRawIteratorWithThreadMode<'a, D> {
        self.raw_iterator_cf_opt(cf, ReadOptions::default())
    }

    /// A raw cursor over a column family at the snapshot with `readopts` (read whole at
    /// creation: siftdb has no raw cursor at a snapshot of a column family).
    pub fn raw_iterator_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        readopts: ReadOptions,
    ) -> DBRawIteratorWithThreadMode<'a, D> {
        self.db
            .core()
            .raw_iter(Some(cf.cf_inner()), self.opts(readopts))
    }
}

impl<T: crate::ThreadMode> crate::DBWithThreadMode<T> {
    /// A snapshot.
    pub fn snapshot(&self) -> SnapshotWithThreadMode<'_, Self> {
        SnapshotWithThreadMode::new(self)
    }
}
