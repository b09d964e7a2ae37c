//! Transactions: siftdb's optimistic and pessimistic transactions behind rust-rocksdb's
//! `TransactionDB` (pessimistic: point locks) and `OptimisticTransactionDB` (validated at
//! commit).

use std::ops::{Deref, DerefMut};
use std::path::Path;
use std::time::Duration;

use parking_lot::Mutex;

use crate::column_family::AsColumnFamilyRef;
use crate::db::{DBAccess, DbCore, ThreadMode};
use crate::db_iterator::{Direction, IteratorMode};
use crate::snapshot::SnapshotWithThreadMode;
use crate::{
    ColumnFamilyDescriptor, DBWithThreadMode, Error, Options, SingleThreaded,
    WriteBatchWithTransaction, WriteOptions,
};

/// Options of a [`TransactionDB`].
#[derive(Debug, Clone, Default)]
pub struct TransactionDBOptions {
    lock_timeout: Option<Duration>,
    default_lock_timeout: Option<Duration>,
}

impl TransactionDBOptions {
    /// Default options.
    pub fn new() -> TransactionDBOptions {
        TransactionDBOptions::default()
    }

    /// How long a transaction waits for a key's lock, in milliseconds (siftdb's
    /// `lock_timeout`; negative: the default).
    pub fn set_txn_lock_timeout(&mut self, millis: i64) {
        self.lock_timeout = u64::try_from(millis).ok().map(Duration::from_millis);
    }

    /// How long a write outside any transaction (`put`, `delete`, `merge`, `write` on the
    /// `TransactionDB`) waits for the locks of its keys, in milliseconds (RocksDB's default:
    /// 1000; negative: that default).
    pub fn set_default_lock_timeout(&mut self, millis: i64) {
        self.default_lock_timeout = u64::try_from(millis).ok().map(Duration::from_millis);
    }

    crate::db_options::no_effect! {
        /// Lock stripes.
        set_num_stripes(num: usize);
        /// Locks per column family.
        set_max_num_locks(num: i64);
    }
}

/// Options of one transaction.
#[derive(Debug, Clone, Default)]
pub struct TransactionOptions {
    set_snapshot: bool,
    deadlock_detect: Option<bool>,
    lock_timeout: Option<Duration>,
}

impl TransactionOptions {
    /// Default options.
    pub fn new() -> TransactionOptions {
        TransactionOptions::default()
    }

    /// Read at a snapshot taken when the transaction starts (siftdb's `set_snapshot`).
    pub fn set_snapshot(&mut self, snapshot: bool) {
        self.set_snapshot = snapshot;
    }

    /// Detect deadlocks (siftdb's `deadlock_detect`).
    pub fn set_deadlock_detect(&mut self, deadlock_detect: bool) {
        self.deadlock_detect = Some(deadlock_detect);
    }

    /// Lock wait in milliseconds (siftdb's `lock_timeout`).
    pub fn set_lock_timeout(&mut self, millis: i64) {
        self.lock_timeout = u64::try_from(millis).ok().map(Duration::from_millis);
    }

    /// Whether `prepare` may be skipped: siftdb has no two-phase commit (`prepare` is
    /// refused), so every commit skips it; no effect.
    pub fn set_skip_prepare(&mut self, skip_prepare: bool) {
        let _ = skip_prepare;
    }
}

/// siftdb has no two-phase commit: a transaction is written at `commit`, whole, and nothing
/// of it survives a restart before that.
fn no_two_phase_commit() -> Error {
    Error::not_supported("two-phase commit (named, prepared transactions)")
}

/// Options of an optimistic transaction.
#[derive(Debug, Clone, Default)]
pub struct OptimisticTransactionOptions {
    set_snapshot: bool,
}

impl OptimisticTransactionOptions {
    /// Default options.
    pub fn new() -> OptimisticTransactionOptions {
        OptimisticTransactionOptions::default()
    }

    /// Read at a snapshot taken when the transaction starts.
    pub fn set_snapshot(&mut self, snapshot: bool) {
        self.set_snapshot = snapshot;
    }
}

/// A transaction: reads see its own writes; `commit` applies them atomically.
pub struct Transaction<'db, DB> {
    inner: Mutex<Option<siftdb::Transaction>>,
    /// What it began with: a rollback begins it again.
    opts: siftdb::TransactionOptions,
    sync: bool,
    core: &'db DbCore,
    db: std::marker::PhantomData<&'db DB>,
}

fn finished() -> Error {
    Error::invalid("the transaction has ended")
}

impl<'db, DB> Transaction<'db, DB> {
    fn new(opts: siftdb::TransactionOptions, sync: bool, core: &'db DbCore) -> Self {
        Transaction {
            inner: Mutex::new(Some(core.db.transaction_opt(&opts))),
            opts,
            sync,
            core,
            db: std::marker::PhantomData,
        }
    }

    /// Reads several keys, with the transaction's writes.
    pub fn multi_get<K, I>(&self, keys: I) -> Vec<Result<Option<Vec<u8>>, Error>>
    where
        K: AsRef<[u8]>,
        I: IntoIterator<Item = K>,
    {
        keys.into_iter().map(|k| self.get(k)).collect()
    }

    /// Reads several keys, each of its column family, with the transaction's writes.
    pub fn multi_get_cf<'b, K, I, W>(&self, keys_cf: I) -> Vec<Result<Option<Vec<u8>>, Error>>
    where
        K: AsRef<[u8]>,
        I: IntoIterator<Item = (&'b W, K)>,
        W: AsColumnFamilyRef + 'b,
    {
        keys_cf
            .into_iter()
            .map(|(cf, k)| self.get_cf(cf, k))
            .collect()
    }

    /// The entries of the default column family as the transaction sees them: its writes so
    /// far over the database's newest state (RocksDB's transaction iterator without a
    /// snapshot in its read options). Writes the transaction makes later are not seen.
    pub fn iterator(&self, mode: IteratorMode<'_>) -> TransactionIterator {
        match self.inner.lock().as_ref() {
            Some(txn) => TransactionIterator::new(txn.write_batch().clone(), &self.core.db, mode),
            None => TransactionIterator::ended(),
        }
    }

    /// A snapshot: the transaction's own (optimistic, or `set_snapshot`), else one of the
    /// database taken now.
    pub fn snapshot(&self) -> SnapshotWithThreadMode<'_, Self> {
        SnapshotWithThreadMode::new(self)
    }

    fn with<R>(
        &self,
        f: impl FnOnce(&mut siftdb::Transaction) -> siftdb::Result<R>,
    ) -> Result<R, Error> {
        let mut guard = self.inner.lock();
        let txn = guard.as_mut().ok_or_else(finished)?;
        Ok(f(txn)?)
    }

    /// Applies the writes atomically (a conflict is an error of kind `Busy`).
    pub fn commit(self) -> Result<(), Error> {
        let txn = self.inner.lock().take().ok_or_else(finished)?;
        let opts = siftdb::WriteOptions { sync: self.sync };
        Ok(txn.commit_opt(&opts)?)
    }

    /// Names the transaction for two-phase commit: siftdb has none (`NotSupported`).
    pub fn set_name(&self, name: &[u8]) -> Result<(), Error> {
        let _ = name;
        Err(no_two_phase_commit())
    }

    /// The transaction's two-phase-commit name: never set in siftdb.
    pub fn get_name(&self) -> Option<Vec<u8>> {
        None
    }

    /// Prepares the transaction (two-phase commit's first phase): siftdb has none
    /// (`NotSupported`); `commit` alone writes it atomically.
    pub fn prepare(&self) -> Result<(), Error> {
        Err(no_two_phase_commit())
    }

    /// Drops the writes (and releases the locks); the transaction goes on, as if it had just
    /// begun, as RocksDB's does.
    pub fn rollback(&self) -> Result<(), Error> {
        let mut inner = self.inner.lock();
        let txn = inner.take().ok_or_else(finished)?;
        txn.rollback()?;
        *inner = Some(self.core.db.transaction_opt(&self.opts));
        Ok(())
    }

    /// Marks a point to roll back to.
    pub fn set_savepoint(&self) {
        let _ = self.with(|t| t.set_savepoint());
    }

    /// Drops the writes since the last savepoint.
    pub fn rollback_to_savepoint(&self) -> Result<(), Error> {
        self.with(|t| t.rollback_to_savepoint())
    }

    /// Reads `key`, with the transaction's writes.
    pub fn get<K: AsRef<[u8]>>(&self, key: K) -> Result<Option<Vec<u8>>, Error> {
        self.with(|t| t.get(key))
    }

    /// Reads `key` of a column family, with the transaction's writes.
    pub fn get_cf<K: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
    ) -> Result<Option<Vec<u8>>, Error> {
        self.with(|t| t.get_in(&cf.cf_inner().ks, key))
    }

    /// Reads `key` and guards it: the commit fails (optimistic) or others wait (pessimistic)
    /// if it changes. `exclusive` has no effect.
    pub fn get_for_update<K: AsRef<[u8]>>(
        &self,
        key: K,
        exclusive: bool,
    ) -> Result<Option<Vec<u8>>, Error> {
        let _ = exclusive;
        self.with(|t| t.get_for_update(key))
    }

    /// As [`get_for_update`](Self::get_for_update), in a column family.
    pub fn get_for_update_cf<K: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        exclusive: bool,
    ) -> Result<Option<Vec<u8>>, Error> {
        let _ = exclusive;
        self.with(|t| t.get_for_update_in(&cf.cf_inner().ks, key))
    }

    /// Writes `value` under `key`.
    pub fn put<K: AsRef<[u8]>, V: AsRef<[u8]>>(&self, key: K, value: V) -> Result<(), Error> {
        self.with(|t| t.put(key, value))
    }

    /// Writes `value` under `key` in a column family.
    pub fn put_cf<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        value: V,
    ) -> Result<(), Error> {
        self.with(|t| t.put_in(&cf.cf_inner().ks, key, value))
    }

    /// Merges `value` into `key`.
    pub fn merge<K: AsRef<[u8]>, V: AsRef<[u8]>>(&self, key: K, value: V) -> Result<(), Error> {
        self.with(|t| t.merge(key, value))
    }

    /// Merges `value` into `key` in a column family.
    pub fn merge_cf<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        value: V,
    ) -> Result<(), Error> {
        self.with(|t| t.merge_in(&cf.cf_inner().ks, key, value))
    }

    /// Deletes `key`.
    pub fn delete<K: AsRef<[u8]>>(&self, key: K) -> Result<(), Error> {
        self.with(|t| t.delete(key))
    }

    /// Deletes `key` in a column family.
    pub fn delete_cf<K: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
    ) -> Result<(), Error> {
        self.with(|t| t.delete_in(&cf.cf_inner().ks, key))
    }
}

/// A database whose transactions lock the keys they write (RocksDB's `TransactionDB`; siftdb's
/// pessimistic transactions). Every `DB` call is available on it.
pub struct TransactionDB<T: ThreadMode = SingleThreaded> {
    db: DBWithThreadMode<T>,
    lock_timeout: Option<Duration>,
    /// The lock wait of writes outside transactions.
    pub(crate) default_lock_timeout: Duration,
}

/// RocksDB's `TransactionDBOptions::default_lock_timeout`.
const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_millis(1000);

/// A database whose transactions are validated at commit (RocksDB's
/// `OptimisticTransactionDB`; siftdb's optimistic transactions). Every `DB` call is
/// available on it.
pub struct OptimisticTransactionDB<T: ThreadMode = SingleThreaded> {
    db: DBWithThreadMode<T>,
}

macro_rules! wraps_db {
    ($name:ident) => {
        impl<T: ThreadMode> Deref for $name<T> {
            type Target = DBWithThreadMode<T>;

            fn deref(&self) -> &DBWithThreadMode<T> {
                &self.db
            }
        }

        impl<T: ThreadMode> DerefMut for $name<T> {
            fn deref_mut(&mut self) -> &mut DBWithThreadMode<T> {
                &mut self.db
            }
        }

        impl<T: ThreadMode> DBAccess for $name<T> {
            fn core(&self) -> &DbCore {
                &self.db.core
            }
        }
    };
}

wraps_db!(TransactionDB);
wraps_db!(OptimisticTransactionDB);

impl<T: ThreadMode> OptimisticTransactionDB<T> {
    /// Writes a batch atomically, outside any transaction (a transaction that read one of its
    /// keys then fails to commit).
    pub fn write(&self, batch: WriteBatchWithTransaction<true>) -> Result<(), Error> {
        self.db.core.write(&batch, &WriteOptions::default())
    }

    /// Writes a batch atomically with `writeopts`, outside any transaction.
    pub fn write_opt(
        &self,
        batch: WriteBatchWithTransaction<true>,
        writeopts: &WriteOptions,
    ) -> Result<(), Error> {
        self.db.core.write(&batch, writeopts)
    }
}

impl<T: ThreadMode> TransactionDB<T> {
    /// Opens (creating if missing) with default options.
    pub fn open_default<P: AsRef<Path>>(path: P) -> Result<Self, Error> {
        let mut opts = Options::default();
        opts.create_if_missing(true);
        Self::open(&opts, &TransactionDBOptions::default(), path)
    }

    /// Opens the database.
    pub fn open<P: AsRef<Path>>(
        opts: &Options,
        txn_db_opts: &TransactionDBOptions,
        path: P,
    ) -> Result<Self, Error> {
        let db = DBWithThreadMode::open(opts, path)?;
        Ok(TransactionDB {
            db,
            lock_timeout: txn_db_opts.lock_timeout,
            default_lock_timeout: txn_db_opts
                .default_lock_timeout
                .unwrap_or(DEFAULT_LOCK_TIMEOUT),
        })
    }

    /// Opens the database with its column families named.
    pub fn open_cf<P, I, N>(
        opts: &Options,
        txn_db_opts: &TransactionDBOptions,
        path: P,
        cfs: I,
    ) -> Result<Self, Error>
    where
        P: AsRef<Path>,
        I: IntoIterator<Item = N>,
        N: AsRef<str>,
    {
        let db = DBWithThreadMode::open_cf(opts, path, cfs)?;
        Ok(TransactionDB {
            db,
            lock_timeout: txn_db_opts.lock_timeout,
            default_lock_timeout: txn_db_opts
                .default_lock_timeout
                .unwrap_or(DEFAULT_LOCK_TIMEOUT),
        })
    }

    /// Opens the database with its column families described.
    pub fn open_cf_descriptors<P, I>(
        opts: &Options,
        txn_db_opts: &TransactionDBOptions,
        path: P,
        cfs: I,
    ) -> Result<Self, Error>
    where
        P: AsRef<Path>,
        I: IntoIterator<Item = ColumnFamilyDescriptor>,
    {
        let db = DBWithThreadMode::open_cf_descriptors(opts, path, cfs)?;
        Ok(TransactionDB {
            db,
            lock_timeout: txn_db_opts.lock_timeout,
            default_lock_timeout: txn_db_opts
                .default_lock_timeout
                .unwrap_or(DEFAULT_LOCK_TIMEOUT),
        })
    }

    /// A transaction with default options.
    pub fn transaction(&self) -> Transaction<'_, Self> {
        self.transaction_opt(&WriteOptions::default(), &TransactionOptions::default())
    }

    /// A transaction with options.
    pub fn transaction_opt(
        &self,
        write_opts: &WriteOptions,
        txn_opts: &TransactionOptions,
    ) -> Transaction<'_, Self> {
        let defaults = siftdb::TransactionOptions::default();
        let opts = siftdb::TransactionOptions {
            mode: siftdb::TransactionMode::Pessimistic,
            lock_timeout: txn_opts
                .lock_timeout
                .or(self.lock_timeout)
                .unwrap_or(defaults.lock_timeout),
            deadlock_detect: txn_opts.deadlock_detect.unwrap_or(defaults.deadlock_detect),
            set_snapshot: txn_opts.set_snapshot,
        };
        Transaction::new(opts, write_opts.inner.sync, &self.db.core)
    }

    /// Transactions prepared and not yet committed, recovered at open: siftdb has no
    /// two-phase commit, so there are never any.
    pub fn prepared_transactions(&self) -> Vec<Transaction<'_, Self>> {
        Vec::new()
    }
}

impl<T: ThreadMode> OptimisticTransactionDB<T> {
    /// Opens (creating if missing) with default options.
    pub fn open_default<P: AsRef<Path>>(path: P) -> Result<Self, Error> {
        Ok(OptimisticTransactionDB {
            db: DBWithThreadMode::open_default(path)?,
        })
    }

    /// Opens the database.
    pub fn open<P: AsRef<Path>>(opts: &Options, path: P) -> Result<Self, Error> {
        Ok(OptimisticTransactionDB {
            db: DBWithThreadMode::open(opts, path)?,
        })
    }

    /// Opens the database with its column families named.
    pub fn open_cf<P, I, N>(opts: &Options, path: P, cfs: I) -> Result<Self, Error>
    where
        P: AsRef<Path>,
        I: IntoIterator<Item = N>,
        N: AsRef<str>,
    {
        Ok(OptimisticTransactionDB {
            db: DBWithThreadMode::open_cf(opts, path, cfs)?,
        })
    }

    /// Opens the database with its column families described.
    pub fn open_cf_descriptors<P, I>(opts: &Options, path: P, cfs: I) -> Result<Self, Error>
    where
        P: AsRef<Path>,
        I: IntoIterator<Item = ColumnFamilyDescriptor>,
    {
        Ok(OptimisticTransactionDB {
            db: DBWithThreadMode::open_cf_descriptors(opts, path, cfs)?,
        })
    }

    /// A transaction with default options.
    pub fn transaction(&self) -> Transaction<'_, Self> {
        self.transaction_opt(
            &WriteOptions::default(),
            &OptimisticTransactionOptions::default(),
        )
    }

    /// A transaction with options.
    pub fn transaction_opt(
        &self,
        write_opts: &WriteOptions,
        txn_opts: &OptimisticTransactionOptions,
    ) -> Transaction<'_, Self> {
        let opts = siftdb::TransactionOptions {
            set_snapshot: txn_opts.set_snapshot,
            ..Default::default()
        };
        Transaction::new(opts, write_opts.inner.sync, &self.db.core)
    }
}

impl<DB> DBAccess for Transaction<'_, DB> {
    fn core(&self) -> &DbCore {
        self.core
    }

    fn take_snapshot(&self) -> siftdb::Snapshot {
        let own = self
            .inner
            .lock()
            .as_ref()
            .and_then(|t| t.snapshot().cloned());
        own.unwrap_or_else(|| self.core.db.snapshot())
    }
}

self_cell::self_cell!(
    /// The transaction's writes (a copy) and the iterator that merges them over the database.
    struct BatchScan {
        owner: siftdb::WriteBatchWithIndex,
        #[not_covariant]
        dependent: BatchIter,
    }
);

type BatchIter<'a> = siftdb::BatchAndDbIterator<'a>;

/// An iterator over a transaction's view ([`Transaction::iterator`]): key-value pairs, or the
/// error that ended it.
pub struct TransactionIterator {
    scan: Option<BatchScan>,
    forward: bool,
}

impl TransactionIterator {
    fn new(batch: siftdb::WriteBatchWithIndex, db: &siftdb::Db, mode: IteratorMode<'_>) -> Self {
        let (forward, from): (bool, Option<Vec<u8>>) = match mode {
            IteratorMode::Start => (true, None),
            IteratorMode::End => (false, None),
            IteratorMode::From(k, Direction::Forward) => (true, Some(k.to_vec())),
            IteratorMode::From(k, Direction::Reverse) => (false, Some(k.to_vec())),
        };
        let scan = BatchScan::new(batch, |b| match (&from, forward) {
            (None, _) => b.iterator_with_base::<Vec<u8>, _>(db, ..),
            (Some(k), true) => b.iterator_with_base(db, k.clone()..),
            (Some(k), false) => b.iterator_with_base(db, ..=k.clone()),
        });
        TransactionIterator {
            scan: Some(scan),
            forward,
        }
    }

    fn ended() -> Self {
        TransactionIterator {
            scan: None,
            forward: true,
        }
    }
}

impl Iterator for TransactionIterator {
    type Item = Result<(Box<[u8]>, Box<[u8]>), Error>;

    fn next(&mut self) -> Option<Self::Item> {
        let forward = self.forward;
        let next = self.scan.as_mut()?.with_dependent_mut(|_, it| {
            if forward {
                it.next()
            } else {
                it.next_back()
            }
        });
        match next {
            Some(Ok((k, v))) => Some(Ok((k.into_boxed_slice(), v.into_boxed_slice()))),
            Some(Err(e)) => {
                self.scan = None;
                Some(Err(e.into()))
            }
            None => {
                self.scan = None;
                None
            }
        }
    }
}
