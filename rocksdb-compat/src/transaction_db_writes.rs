//! Writes outside any transaction on a `TransactionDB`: as in RocksDB, they take the locks of
//! their keys first (waiting up to `default_lock_timeout`), so a plain `put` never overwrites a
//! key a transaction holds; `TimedOut` if the lock does not come.

use crate::column_family::AsColumnFamilyRef;
use crate::db::ThreadMode;
use crate::{Error, TransactionDB, WriteBatchWithTransaction, WriteOptions};

use crate::write_batch::LockKey;

impl<T: ThreadMode> TransactionDB<T> {
    /// Runs `write` holding the locks of `keys`, taken through a pessimistic transaction that
    /// is rolled back after (it writes nothing itself). Range deletions lock nothing, as in
    /// RocksDB.
    fn locked<R>(
        &self,
        keys: &[LockKey<'_>],
        write: impl FnOnce() -> Result<R, Error>,
    ) -> Result<R, Error> {
        let opts = siftdb::TransactionOptions {
            mode: siftdb::TransactionMode::Pessimistic,
            lock_timeout: self.default_lock_timeout,
            ..siftdb::TransactionOptions::default()
        };
        let mut txn = self.core().db.transaction_opt(&opts);
        for (ks, key) in keys {
            match ks {
                Some(ks) => txn.get_for_update_in(ks, key)?,
                None => txn.get_for_update(key)?,
            };
        }
        let written = write();
        txn.rollback()?;
        written
    }

    fn core(&self) -> &crate::db::DbCore {
        <Self as crate::DBAccess>::core(self)
    }

    /// Writes `value` under `key`, after taking its lock.
    pub fn put<K: AsRef<[u8]>, V: AsRef<[u8]>>(&self, key: K, value: V) -> Result<(), Error> {
        self.put_opt(key, value, &WriteOptions::default())
    }

    /// [`put`](Self::put) with `writeopts`.
    pub fn put_opt<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        key: K,
        value: V,
        writeopts: &WriteOptions,
    ) -> Result<(), Error> {
        let key = key.as_ref();
        self.locked(&[(None, key)], || {
            self.core().put(None, key, value.as_ref(), writeopts)
        })
    }

    /// Writes `value` under `key` in a column family, after taking its lock.
    pub fn put_cf<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        value: V,
    ) -> Result<(), Error> {
        self.put_cf_opt(cf, key, value, &WriteOptions::default())
    }

    /// [`put_cf`](Self::put_cf) with `writeopts`.
    pub fn put_cf_opt<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        value: V,
        writeopts: &WriteOptions,
    ) -> Result<(), Error> {
        let (cf, key) = (cf.cf_inner(), key.as_ref());
        self.locked(&[(Some(&cf.ks), key)], || {
            self.core().put(Some(cf), key, value.as_ref(), writeopts)
        })
    }

    /// Deletes `key`, after taking its lock.
    pub fn delete<K: AsRef<[u8]>>(&self, key: K) -> Result<(), Error> {
        self.delete_opt(key, &WriteOptions::default())
    }

    /// [`delete`](Self::delete) with `writeopts`.
    pub fn delete_opt<K: AsRef<[u8]>>(
        &self,
        key: K,
        writeopts: &WriteOptions,
    ) -> Result<(), Error> {
        let mut batch = WriteBatchWithTransaction::<true>::default();
        batch.delete(key);
        self.write_opt(batch, writeopts)
    }

    /// Deletes `key` in a column family, after taking its lock.
    pub fn delete_cf<K: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
    ) -> Result<(), Error> {
        self.delete_cf_opt(cf, key, &WriteOptions::default())
    }

    /// [`delete_cf`](Self::delete_cf) with `writeopts`.
    pub fn delete_cf_opt<K: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        writeopts: &WriteOptions,
    ) -> Result<(), Error> {
        let mut batch = WriteBatchWithTransaction::<true>::default();
        batch.delete_cf(cf, key);
        self.write_opt(batch, writeopts)
    }

    /// Merges `value` into `key`, after taking its lock.
    pub fn merge<K: AsRef<[u8]>, V: AsRef<[u8]>>(&self, key: K, value: V) -> Result<(), Error> {
        self.merge_opt(key, value, &WriteOptions::default())
    }

    /// [`merge`](Self::merge) with `writeopts`.
    pub fn merge_opt<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        key: K,
        value: V,
        writeopts: &WriteOptions,
    ) -> Result<(), Error> {
        let mut batch = WriteBatchWithTransaction::<true>::default();
        batch.merge(key, value);
        self.write_opt(batch, writeopts)
    }

    /// Merges `value` into `key` in a column family, after taking its lock.
    pub fn merge_cf<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        value: V,
    ) -> Result<(), Error> {
        self.merge_cf_opt(cf, key, value, &WriteOptions::default())
    }

    /// [`merge_cf`](Self::merge_cf) with `writeopts`.
    pub fn merge_cf_opt<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        value: V,
        writeopts: &WriteOptions,
    ) -> Result<(), Error> {
        let mut batch = WriteBatchWithTransaction::<true>::default();
        batch.merge_cf(cf, key, value);
        self.write_opt(batch, writeopts)
    }

    /// Writes a batch atomically, after taking the locks of every key it writes.
    pub fn write(&self, batch: WriteBatchWithTransaction<true>) -> Result<(), Error> {
        self.write_opt(batch, &WriteOptions::default())
    }

    /// [`write`](Self::write) with `writeopts`.
    pub fn write_opt(
        &self,
        batch: WriteBatchWithTransaction<true>,
        writeopts: &WriteOptions,
    ) -> Result<(), Error> {
        let keys = batch.keys_to_lock()?;
        self.locked(&keys, || self.core().write(&batch, writeopts))
    }
}
