//! Reads and writes of `DBWithThreadMode`, each a thin call into siftdb.

use crate::column_family::{AsColumnFamilyRef, CfInner};
use crate::db::{DbCore, ThreadMode};
use crate::db_iterator::{
    DBIteratorWithThreadMode, DBRawIteratorWithThreadMode, IteratorMode, Origin,
};
use crate::{
    DBPinnableSlice, DBWithThreadMode, Direction, Error, ReadOptions, WriteBatch, WriteOptions,
};

impl DbCore {
    /// Reads `key` of `cf` (None: the default column family).
    pub(crate) fn get(
        &self,
        cf: Option<&CfInner>,
        key: &[u8],
        opts: &ReadOptions,
    ) -> Result<Option<Vec<u8>>, Error> {
        let got = match (&opts.snapshot, cf) {
            (Some(s), Some(cf)) => s.snapshot.get_in(&cf.ks, key),
            (Some(s), None) => s.snapshot.get(key),
            (None, Some(cf)) => cf.ks.get_opt(key, &opts.inner),
            (None, None) => self.db.get_opt(key, &opts.inner),
        };
        Ok(got?)
    }

    /// Reads `key` of `cf` without a copy.
    pub(crate) fn get_pinned(
        &self,
        cf: Option<&CfInner>,
        key: &[u8],
        opts: &ReadOptions,
    ) -> Result<Option<DBPinnableSlice<'_>>, Error> {
        let got = match (&opts.snapshot, cf) {
            (Some(s), Some(cf)) => s.snapshot.get_pinned_in(&cf.ks, key),
            (Some(s), None) => s.snapshot.get_pinned(key),
            (None, Some(cf)) => cf.ks.get_pinned_opt(key, &opts.inner),
            (None, None) => self.db.get_pinned_opt(key, &opts.inner),
        };
        Ok(got?.map(DBPinnableSlice::new))
    }

    /// Reads several keys of the default column family.
    pub(crate) fn multi_get<K: AsRef<[u8]>, I: IntoIterator<Item = K>>(
        &self,
        keys: I,
        opts: &ReadOptions,
    ) -> Vec<Result<Option<Vec<u8>>, Error>> {
        let owned: Vec<K> = keys.into_iter().collect();
        let keys: Vec<&[u8]> = owned.iter().map(AsRef::as_ref).collect();
        if opts.snapshot.is_some() {
            return keys.iter().map(|k| self.get(None, k, opts)).collect();
        }
        self.db
            .multi_get(&keys)
            .into_iter()
            .map(|r| r.map_err(Error::from))
            .collect()
    }

    /// Writes `value` under `key` in `cf`, with the column family's TTL if it has one.
    pub(crate) fn put(
        &self,
        cf: Option<&CfInner>,
        key: &[u8],
        value: &[u8],
        opts: &WriteOptions,
    ) -> Result<(), Error> {
        let started = self.stats.as_ref().map(|_| std::time::Instant::now());
        let ttl = cf.map_or(self.ttl, |cf| cf.ttl);
        let done = match (cf, ttl) {
            (None, None) => self.db.put_opt(key, value, &opts.inner),
            (Some(cf), None) => cf.ks.put_opt(key, value, &opts.inner),
            (None, Some(ttl)) => self.db.put_with_ttl(key, value, ttl),
            (Some(cf), Some(ttl)) => cf.ks.put_with_ttl(key, value, ttl),
        };
        done?;
        self.count_write(started, 1, key.len() + value.len());
        Ok(())
    }

    /// Counts a write in the statistics, if they are on.
    fn count_write(&self, started: Option<std::time::Instant>, keys: usize, bytes: usize) {
        if let (Some(stats), Some(started)) = (&self.stats, started) {
            let nanos = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
            stats.wrote(keys as u64, bytes as u64, nanos.max(1));
        }
    }

    /// Writes a batch.
    pub(crate) fn write<const T: bool>(
        &self,
        batch: &crate::WriteBatchWithTransaction<T>,
        opts: &WriteOptions,
    ) -> Result<(), Error> {
        let started = self.stats.as_ref().map(|_| std::time::Instant::now());
        let sift = batch.to_siftdb(self.ttl.is_some())?;
        self.db.write_opt(sift, &opts.inner)?;
        self.count_write(started, batch.len(), batch.size_in_bytes());
        Ok(())
    }

    /// A raw cursor over `cf`.
    pub(crate) fn raw_iter<'a, D: crate::DBAccess>(
        &self,
        cf: Option<&CfInner>,
        opts: ReadOptions,
    ) -> DBRawIteratorWithThreadMode<'a, D> {
        match cf {
            Some(cf) => DBRawIteratorWithThreadMode::new(
                Origin::Ks(cf.ks.clone()),
                opts,
                cf.prefix.as_ref(),
            ),
            None => DBRawIteratorWithThreadMode::new(
                Origin::Db(self.db.clone()),
                opts,
                self.prefix.as_ref(),
            ),
        }
    }
}

fn prefix_opts() -> ReadOptions {
    let mut opts = ReadOptions::default();
    opts.set_prefix_same_as_start(true);
    opts
}

fn total_order(mut opts: ReadOptions) -> ReadOptions {
    opts.set_total_order_seek(true);
    opts
}

impl<T: ThreadMode> DBWithThreadMode<T> {
    /// Reads `key`.
    pub fn get<K: AsRef<[u8]>>(&self, key: K) -> Result<Option<Vec<u8>>, Error> {
        let got = self.core.db.get(key)?;
        if let Some(stats) = &self.core.stats {
            stats.read(got.as_ref().map(Vec::len));
        }
        Ok(got)
    }

    /// Reads `key` with `readopts`.
    pub fn get_opt<K: AsRef<[u8]>>(
        &self,
        key: K,
        readopts: &ReadOptions,
    ) -> Result<Option<Vec<u8>>, Error> {
        self.core.get(None, key.as_ref(), readopts)
    }

    /// Reads `key` of a column family.
    pub fn get_cf<K: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
    ) -> Result<Option<Vec<u8>>, Error> {
        Ok(cf.cf_inner().ks.get(key)?)
    }

    /// Reads `key` of a column family with `readopts`.
    pub fn get_cf_opt<K: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        readopts: &ReadOptions,
    ) -> Result<Option<Vec<u8>>, Error> {
        self.core.get(Some(cf.cf_inner()), key.as_ref(), readopts)
    }

    /// Reads `key` without a copy (siftdb's `get_pinned`).
    pub fn get_pinned<K: AsRef<[u8]>>(&self, key: K) -> Result<Option<DBPinnableSlice<'_>>, Error> {
        Ok(self.core.db.get_pinned(key)?.map(DBPinnableSlice::new))
    }

    /// Reads `key` without a copy, with `readopts`.
    pub fn get_pinned_opt<K: AsRef<[u8]>>(
        &self,
        key: K,
        readopts: &ReadOptions,
    ) -> Result<Option<DBPinnableSlice<'_>>, Error> {
        self.core.get_pinned(None, key.as_ref(), readopts)
    }

    /// Reads `key` of a column family without a copy.
    pub fn get_pinned_cf<K: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
    ) -> Result<Option<DBPinnableSlice<'_>>, Error> {
        Ok(cf.cf_inner().ks.get_pinned(key)?.map(DBPinnableSlice::new))
    }

    /// Reads `key` of a column family without a copy, with `readopts`.
    pub fn get_pinned_cf_opt<K: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        readopts: &ReadOptions,
    ) -> Result<Option<DBPinnableSlice<'_>>, Error> {
        self.core
            .get_pinned(Some(cf.cf_inner()), key.as_ref(), readopts)
    }

    /// Reads several keys (siftdb's batched `multi_get`).
    pub fn multi_get<K: AsRef<[u8]>, I: IntoIterator<Item = K>>(
        &self,
        keys: I,
    ) -> Vec<Result<Option<Vec<u8>>, Error>> {
        self.core.multi_get(keys, &ReadOptions::default())
    }

    /// Reads several keys with `readopts`.
    pub fn multi_get_opt<K: AsRef<[u8]>, I: IntoIterator<Item = K>>(
        &self,
        keys: I,
        readopts: &ReadOptions,
    ) -> Vec<Result<Option<Vec<u8>>, Error>> {
        self.core.multi_get(keys, readopts)
    }

    /// Reads several keys, each of its column family.
    pub fn multi_get_cf<'a, 'b: 'a, K, I, W>(
        &'a self,
        keys: I,
    ) -> Vec<Result<Option<Vec<u8>>, Error>>
    where
        K: AsRef<[u8]>,
        I: IntoIterator<Item = (&'b W, K)>,
        W: 'b + AsColumnFamilyRef,
    {
        self.multi_get_cf_opt(keys, &ReadOptions::default())
    }

    /// Reads several keys, each of its column family, with `readopts`.
    pub fn multi_get_cf_opt<'a, 'b: 'a, K, I, W>(
        &'a self,
        keys: I,
        readopts: &ReadOptions,
    ) -> Vec<Result<Option<Vec<u8>>, Error>>
    where
        K: AsRef<[u8]>,
        I: IntoIterator<Item = (&'b W, K)>,
        W: 'b + AsColumnFamilyRef,
    {
        keys.into_iter()
            .map(|(cf, k)| self.core.get(Some(cf.cf_inner()), k.as_ref(), readopts))
            .collect()
    }

    /// Reads several keys of one column family without copies (`sorted_input` has no effect).
    pub fn batched_multi_get_cf<'a, K, I>(
        &self,
        cf: &impl AsColumnFamilyRef,
        keys: I,
        sorted_input: bool,
    ) -> Vec<Result<Option<DBPinnableSlice<'_>>, Error>>
    where
        K: AsRef<[u8]> + 'a + ?Sized,
        I: IntoIterator<Item = &'a K>,
    {
        self.batched_multi_get_cf_opt(cf, keys, sorted_input, &ReadOptions::default())
    }

    /// As [`batched_multi_get_cf`](Self::batched_multi_get_cf), with `readopts`.
    pub fn batched_multi_get_cf_opt<'a, K, I>(
        &self,
        cf: &impl AsColumnFamilyRef,
        keys: I,
        sorted_input: bool,
        readopts: &ReadOptions,
    ) -> Vec<Result<Option<DBPinnableSlice<'_>>, Error>>
    where
        K: AsRef<[u8]> + 'a + ?Sized,
        I: IntoIterator<Item = &'a K>,
    {
        let _ = sorted_input;
        keys.into_iter()
            .map(|k| {
                self.core
                    .get_pinned(Some(cf.cf_inner()), k.as_ref(), readopts)
            })
            .collect()
    }

    /// Whether `key` may exist: `false` only if it certainly does not (siftdb answers exactly,
    /// through its filters first).
    pub fn key_may_exist<K: AsRef<[u8]>>(&self, key: K) -> bool {
        self.key_may_exist_opt(key, &ReadOptions::default())
    }

    /// As [`key_may_exist`](Self::key_may_exist), with `readopts`.
    pub fn key_may_exist_opt<K: AsRef<[u8]>>(&self, key: K, readopts: &ReadOptions) -> bool {
        !matches!(self.core.get(None, key.as_ref(), readopts), Ok(None))
    }

    /// As [`key_may_exist`](Self::key_may_exist), in a column family.
    pub fn key_may_exist_cf<K: AsRef<[u8]>>(&self, cf: &impl AsColumnFamilyRef, key: K) -> bool {
        self.key_may_exist_cf_opt(cf, key, &ReadOptions::default())
    }

    /// As [`key_may_exist_cf`](Self::key_may_exist_cf), with `readopts`.
    pub fn key_may_exist_cf_opt<K: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        readopts: &ReadOptions,
    ) -> bool {
        !matches!(
            self.core.get(Some(cf.cf_inner()), key.as_ref(), readopts),
            Ok(None)
        )
    }

    /// Whether `key` may exist, and its value when it was found.
    pub fn key_may_exist_cf_opt_value<K: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        readopts: &ReadOptions,
    ) -> (bool, Option<crate::CSlice>) {
        match self.core.get(Some(cf.cf_inner()), key.as_ref(), readopts) {
            Ok(Some(v)) => (true, Some(crate::CSlice(v))),
            Ok(None) => (false, None),
            Err(_) => (true, None),
        }
    }

    /// Writes `value` under `key`.
    pub fn put<K: AsRef<[u8]>, V: AsRef<[u8]>>(&self, key: K, value: V) -> Result<(), Error> {
        self.core
            .put(None, key.as_ref(), value.as_ref(), &WriteOptions::default())
    }

    /// Writes `value` under `key` with `writeopts`.
    pub fn put_opt<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        key: K,
        value: V,
        writeopts: &WriteOptions,
    ) -> Result<(), Error> {
        self.core.put(None, key.as_ref(), value.as_ref(), writeopts)
    }

    /// Writes `value` under `key` in a column family.
    pub fn put_cf<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        value: V,
    ) -> Result<(), Error> {
        self.core.put(
            Some(cf.cf_inner()),
            key.as_ref(),
            value.as_ref(),
            &WriteOptions::default(),
        )
    }

    /// Writes `value` under `key` in a column family with `writeopts`.
    pub fn put_cf_opt<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        value: V,
        writeopts: &WriteOptions,
    ) -> Result<(), Error> {
        self.core
            .put(Some(cf.cf_inner()), key.as_ref(), value.as_ref(), writeopts)
    }

    /// A write with a user-defined timestamp: siftdb has none; refused.
    pub fn put_with_ts<K: AsRef<[u8]>, S: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        key: K,
        ts: S,
        value: V,
    ) -> Result<(), Error> {
        let _ = (key.as_ref(), ts.as_ref(), value.as_ref());
        Err(Error::not_supported("user-defined timestamps"))
    }

    /// A write with a user-defined timestamp in a column family: refused.
    pub fn put_cf_with_ts<K: AsRef<[u8]>, S: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        ts: S,
        value: V,
    ) -> Result<(), Error> {
        let _ = (cf.cf_inner(), key.as_ref(), ts.as_ref(), value.as_ref());
        Err(Error::not_supported("user-defined timestamps"))
    }

    /// A deletion with a user-defined timestamp: siftdb has none; refused.
    pub fn delete_with_ts<K: AsRef<[u8]>, S: AsRef<[u8]>>(
        &self,
        key: K,
        ts: S,
    ) -> Result<(), Error> {
        let _ = (key.as_ref(), ts.as_ref());
        Err(Error::not_supported("user-defined timestamps"))
    }

    /// A deletion with a user-defined timestamp in a column family: refused.
    pub fn delete_cf_with_ts<K: AsRef<[u8]>, S: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        ts: S,
    ) -> Result<(), Error> {
        let _ = (cf.cf_inner(), key.as_ref(), ts.as_ref());
        Err(Error::not_supported("user-defined timestamps"))
    }

    /// Merges `value` into `key` (siftdb's `merge`).
    pub fn merge<K: AsRef<[u8]>, V: AsRef<[u8]>>(&self, key: K, value: V) -> Result<(), Error> {
        Ok(self.core.db.merge(key, value)?)
    }

    /// Merges with `writeopts`.
    pub fn merge_opt<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        key: K,
        value: V,
        writeopts: &WriteOptions,
    ) -> Result<(), Error> {
        Ok(self.core.db.merge_opt(key, value, &writeopts.inner)?)
    }

    /// Merges in a column family.
    pub fn merge_cf<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        value: V,
    ) -> Result<(), Error> {
        Ok(cf.cf_inner().ks.merge(key, value)?)
    }

    /// Merges in a column family with `writeopts`.
    pub fn merge_cf_opt<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        value: V,
        writeopts: &WriteOptions,
    ) -> Result<(), Error> {
        Ok(cf.cf_inner().ks.merge_opt(key, value, &writeopts.inner)?)
    }

    /// Deletes `key`.
    pub fn delete<K: AsRef<[u8]>>(&self, key: K) -> Result<(), Error> {
        Ok(self.core.db.delete(key)?)
    }

    /// Deletes `key` with `writeopts`.
    pub fn delete_opt<K: AsRef<[u8]>>(
        &self,
        key: K,
        writeopts: &WriteOptions,
    ) -> Result<(), Error> {
        Ok(self.core.db.delete_opt(key, &writeopts.inner)?)
    }

    /// Deletes `key` in a column family.
    pub fn delete_cf<K: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
    ) -> Result<(), Error> {
        Ok(cf.cf_inner().ks.delete(key)?)
    }

    /// Deletes `key` in a column family with `writeopts`.
    pub fn delete_cf_opt<K: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        writeopts: &WriteOptions,
    ) -> Result<(), Error> {
        Ok(cf.cf_inner().ks.delete_opt(key, &writeopts.inner)?)
    }

    /// Deletes `key` (siftdb has no single delete: a delete).
    pub fn single_delete<K: AsRef<[u8]>>(&self, key: K) -> Result<(), Error> {
        self.delete(key)
    }

    /// Deletes `key` in a column family (a delete).
    pub fn single_delete_cf<K: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
    ) -> Result<(), Error> {
        self.delete_cf(cf, key)
    }

    /// Deletes the keys in `[from, to)` of a column family (siftdb's `delete_range`).
    pub fn delete_range_cf<K: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        from: K,
        to: K,
    ) -> Result<(), Error> {
        Ok(cf.cf_inner().ks.delete_range(from, to)?)
    }

    /// As [`delete_range_cf`](Self::delete_range_cf), with `writeopts`.
    pub fn delete_range_cf_opt<K: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        from: K,
        to: K,
        writeopts: &WriteOptions,
    ) -> Result<(), Error> {
        Ok(cf
            .cf_inner()
            .ks
            .delete_range_opt(from, to, &writeopts.inner)?)
    }

    /// Deletes the keys in `[from, to)` of the default column family.
    pub fn delete_range<K: AsRef<[u8]>>(&self, from: K, to: K) -> Result<(), Error> {
        Ok(self.core.db.delete_range(from, to)?)
    }

    /// As [`delete_range`](Self::delete_range), with `writeopts`.
    pub fn delete_range_opt<K: AsRef<[u8]>>(
        &self,
        from: K,
        to: K,
        writeopts: &WriteOptions,
    ) -> Result<(), Error> {
        Ok(self.core.db.delete_range_opt(from, to, &writeopts.inner)?)
    }

    /// Writes a batch atomically.
    pub fn write(&self, batch: WriteBatch) -> Result<(), Error> {
        self.core.write(&batch, &WriteOptions::default())
    }

    /// Writes a batch atomically with `writeopts`.
    pub fn write_opt(&self, batch: WriteBatch, writeopts: &WriteOptions) -> Result<(), Error> {
        self.core.write(&batch, writeopts)
    }

    /// Writes a batch; siftdb always writes the WAL, so this is [`write`](Self::write).
    pub fn write_without_wal(&self, batch: WriteBatch) -> Result<(), Error> {
        self.write(batch)
    }

    /// An iterator from `mode`.
    pub fn iterator<'a: 'b, 'b>(
        &'a self,
        mode: IteratorMode<'_>,
    ) -> DBIteratorWithThreadMode<'b, Self> {
        self.iterator_opt(mode, ReadOptions::default())
    }

    /// An iterator from `mode` with `readopts`.
    pub fn iterator_opt<'a: 'b, 'b>(
        &'a self,
        mode: IteratorMode<'_>,
        readopts: ReadOptions,
    ) -> DBIteratorWithThreadMode<'b, Self> {
        DBIteratorWithThreadMode::new(self.core.raw_iter(None, readopts), mode)
    }

    /// An iterator over a column family from `mode`.
    pub fn iterator_cf<'a: 'b, 'b>(
        &'a self,
        cf: &impl AsColumnFamilyRef,
        mode: IteratorMode<'_>,
    ) -> DBIteratorWithThreadMode<'b, Self> {
        self.iterator_cf_opt(cf, ReadOptions::default(), mode)
    }

    /// An iterator over a column family from `mode` with `readopts`.
    pub fn iterator_cf_opt<'a: 'b, 'b>(
        &'a self,
        cf: &impl AsColumnFamilyRef,
        readopts: ReadOptions,
        mode: IteratorMode<'_>,
    ) -> DBIteratorWithThreadMode<'b, Self> {
        DBIteratorWithThreadMode::new(self.core.raw_iter(Some(cf.cf_inner()), readopts), mode)
    }

    /// An iterator that ignores the prefix extractor.
    pub fn full_iterator<'a: 'b, 'b>(
        &'a self,
        mode: IteratorMode<'_>,
    ) -> DBIteratorWithThreadMode<'b, Self> {
        self.iterator_opt(mode, total_order(ReadOptions::default()))
    }

    /// An iterator over a column family that ignores the prefix extractor.
    pub fn full_iterator_cf<'a: 'b, 'b>(
        &'a self,
        cf: &impl AsColumnFamilyRef,
        mode: IteratorMode<'_>,
    ) -> DBIteratorWithThreadMode<'b, Self> {
        self.iterator_cf_opt(cf, total_order(ReadOptions::default()), mode)
    }

    /// The entries from `prefix` on whose prefix (by the prefix extractor) is `prefix`'s.
    pub fn prefix_iterator<'a: 'b, 'b, P: AsRef<[u8]>>(
        &'a self,
        prefix: P,
    ) -> DBIteratorWithThreadMode<'b, Self> {
        let mode = IteratorMode::From(prefix.as_ref(), Direction::Forward);
        self.iterator_opt(mode, prefix_opts())
    }

    /// As [`prefix_iterator`](Self::prefix_iterator), in a column family.
    pub fn prefix_iterator_cf<'a, P: AsRef<[u8]>>(
        &'a self,
        cf: &impl AsColumnFamilyRef,
        prefix: P,
    ) -> DBIteratorWithThreadMode<'a, Self> {
        let mode = IteratorMode::From(prefix.as_ref(), Direction::Forward);
        self.iterator_cf_opt(cf, prefix_opts(), mode)
    }

    /// A raw cursor (siftdb's `RawIterator`).
    pub fn raw_iterator<'a: 'b, 'b>(&'a self) -> DBRawIteratorWithThreadMode<'b, Self> {
        self.core.raw_iter(None, ReadOptions::default())
    }

    /// A raw cursor over a column family.
    pub fn raw_iterator_cf<'a: 'b, 'b>(
        &'a self,
        cf: &impl AsColumnFamilyRef,
    ) -> DBRawIteratorWithThreadMode<'b, Self> {
        self.core
            .raw_iter(Some(cf.cf_inner()), ReadOptions::default())
    }

    /// A raw cursor with `readopts`.
    pub fn raw_iterator_opt<'a: 'b, 'b>(
        &'a self,
        readopts: ReadOptions,
    ) -> DBRawIteratorWithThreadMode<'b, Self> {
        self.core.raw_iter(None, readopts)
    }

    /// A raw cursor over a column family with `readopts`.
    pub fn raw_iterator_cf_opt<'a: 'b, 'b>(
        &'a self,
        cf: &impl AsColumnFamilyRef,
        readopts: ReadOptions,
    ) -> DBRawIteratorWithThreadMode<'b, Self> {
        self.core.raw_iter(Some(cf.cf_inner()), readopts)
    }
}
