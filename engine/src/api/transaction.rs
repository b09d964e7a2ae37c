//! Transactions: optimistic (RocksDB's `OptimisticTransactionDB`, fjall's `TxKeyspace`) and
//! pessimistic (RocksDB's `TransactionDB`), over one or several keyspaces.
//!
//! A transaction's writes are a [`WriteBatchWithIndex`]: its reads see them first, then the
//! database — at the transaction's snapshot (optimistic, or pessimistic with `set_snapshot`) or
//! as it is now (pessimistic). `commit` writes the batch as one atomic, WAL-logged write.
//!
//! * **Optimistic**: nothing is locked. `commit` validates (`paths/conflict.rs`) that no key
//!   the transaction wrote or read with `get_for_update` was committed by anyone after its
//!   snapshot, atomically with the write; if one was, nothing is written and `commit` returns
//!   [`Error::Conflict`]. Snapshot isolation: write skew is possible between keys that are only
//!   read with `get`, never between keys read with `get_for_update`.
//! * **Pessimistic**: `put`, `delete`, `merge` and `get_for_update` lock their key
//!   (`core/lock_table.rs`) until the transaction ends, waiting up to `lock_timeout`
//!   ([`Error::LockTimeout`]) and refusing a wait that would deadlock ([`Error::Deadlock`]).
//!   `commit` cannot conflict. Locks bind transactions only: a plain `Db::put` does not wait
//!   for them. An optimistic commit takes the locks of the keys it writes for the time of its
//!   write, without waiting: a key a pessimistic transaction holds fails it with
//!   [`Error::Conflict`], so the two kinds may share a database.
//!
//! See `docs/TRANSACTIONS.md` for the isolation level, what a conflict means and how to retry.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use crate::api::batch_index::{BatchAndDbIterator, WriteBatchWithIndex};
use crate::api::db::Db;
use crate::api::keyspace::Keyspace;
use crate::api::readable::{forward_reads_to_readable, Readable, Scan, Sealed};
use crate::api::snapshot::Snapshot;
use crate::base::error::{Error, Result};
use crate::base::options::{ReadOptions, WriteOptions};
use crate::core::keyspace_tree::KeyspaceTree;
use crate::core::lock_table::LockKey;
use crate::core::write_queue::CommitCheck;

/// How a transaction keeps others from changing what it depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum TransactionMode {
    /// Validate at commit: [`Error::Conflict`] if a key written or read for update changed
    /// after the snapshot (RocksDB's `OptimisticTransactionDB`).
    #[default]
    Optimistic,
    /// Lock each key written or read for update until the end (RocksDB's `TransactionDB`).
    Pessimistic,
}

/// How [`Db::transaction_opt`] begins a transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionOptions {
    /// Optimistic (the default) or pessimistic.
    pub mode: TransactionMode,
    /// Pessimistic: how long a lock is waited for before [`Error::LockTimeout`] (RocksDB's
    /// `lock_timeout`, 1 s by default; `Duration::ZERO` tries once, `Duration::MAX` waits
    /// without limit).
    pub lock_timeout: Duration,
    /// Pessimistic: refuse a wait that would close a cycle of waiting transactions with
    /// [`Error::Deadlock`] (RocksDB's `deadlock_detect`; on by default) instead of waiting for
    /// the timeout.
    pub deadlock_detect: bool,
    /// Pessimistic: read at a snapshot taken when the transaction begins, and fail a lock on a
    /// key committed after it with [`Error::Conflict`] (RocksDB's `set_snapshot`). Without it
    /// reads see the newest committed state, and `get_for_update` returns the newest value
    /// under the lock. Optimistic transactions always have a snapshot.
    pub set_snapshot: bool,
}

impl Default for TransactionOptions {
    fn default() -> Self {
        TransactionOptions {
            mode: TransactionMode::Optimistic,
            lock_timeout: Duration::from_secs(1),
            deadlock_detect: true,
            set_snapshot: false,
        }
    }
}

/// Where a transaction was at a savepoint.
#[derive(Debug, Clone, Copy)]
struct Savepoint {
    /// Keys read for update then (optimistic).
    tracked: usize,
    /// Locks held then (pessimistic).
    locked: usize,
}

/// A transaction ([`Db::transaction`], [`Db::transaction_opt`]): reads that see its own
/// writes, writes that commit together or not at all. Dropped without `commit`, it rolls back.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let db = siftdb::Db::open(dir.path(), siftdb::Options::default())?;
/// db.put("alice", 100u64.to_le_bytes())?;
/// db.put("bob", 0u64.to_le_bytes())?;
/// let balance = |v: Option<Vec<u8>>| u64::from_le_bytes(v.unwrap().try_into().unwrap());
/// loop {
///     let mut txn = db.transaction();
///     let alice = balance(txn.get_for_update("alice")?);
///     let bob = balance(txn.get_for_update("bob")?);
///     txn.put("alice", (alice - 30).to_le_bytes())?;
///     txn.put("bob", (bob + 30).to_le_bytes())?;
///     match txn.commit() {
///         Ok(()) => break,
///         Err(siftdb::Error::Conflict) => continue, // someone changed them: run it again
///         Err(e) => return Err(e),
///     }
/// }
/// assert_eq!(db.get("bob")?, Some(30u64.to_le_bytes().to_vec()));
/// # Ok::<(), siftdb::Error>(())
/// ```
pub struct Transaction {
    db: Db,
    id: u64,
    opts: TransactionOptions,
    snapshot: Option<Snapshot>,
    writes: WriteBatchWithIndex,
    /// The trees the transaction touched, by keyspace id (the default's first).
    trees: Vec<Arc<KeyspaceTree>>,
    /// Optimistic: keys read with `get_for_update`, in order (repeats allowed).
    tracked: Vec<LockKey>,
    /// Pessimistic: keys locked, in the order they were first locked.
    locked: Vec<LockKey>,
    savepoints: Vec<Savepoint>,
}

impl std::fmt::Debug for Transaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transaction")
            .field("id", &self.id)
            .field("mode", &self.opts.mode)
            .field("snapshot", &self.snapshot.as_ref().map(Snapshot::sequence))
            .field("writes", &self.writes.len())
            .field("locked", &self.locked.len())
            .finish_non_exhaustive()
    }
}

impl Transaction {
    pub(crate) fn begin(db: &Db, opts: &TransactionOptions) -> Transaction {
        let snapshot =
            (opts.mode == TransactionMode::Optimistic || opts.set_snapshot).then(|| db.snapshot());
        Transaction {
            db: db.clone(),
            id: db.engine().next_transaction_id(),
            opts: opts.clone(),
            snapshot,
            writes: WriteBatchWithIndex::new(),
            trees: vec![Arc::clone(db.engine().default_keyspace())],
            tracked: Vec::new(),
            locked: Vec::new(),
            savepoints: Vec::new(),
        }
    }

    /// The sequence number the transaction reads at (`None`: a pessimistic transaction
    /// without `set_snapshot` reads the newest state).
    pub fn snapshot_sequence(&self) -> Option<u64> {
        self.snapshot.as_ref().map(Snapshot::sequence)
    }

    /// The snapshot the transaction reads at, if it has one (optimistic, or pessimistic with
    /// `set_snapshot`).
    pub fn snapshot(&self) -> Option<&Snapshot> {
        self.snapshot.as_ref()
    }

    /// The transaction's writes so far.
    pub fn write_batch(&self) -> &WriteBatchWithIndex {
        &self.writes
    }

    /// [`Transaction::get`](Readable::get) in keyspace `ks`.
    pub fn get_in<K: AsRef<[u8]>>(&self, ks: &Keyspace, key: K) -> Result<Option<Vec<u8>>> {
        self.check_same_db(ks)?;
        self.read(ks.tree(), key.as_ref(), self.snapshot_sequence())
    }

    /// [`Transaction::get`](Readable::get) of a key the transaction depends on: optimistic, `commit` fails
    /// with [`Error::Conflict`] if anyone commits the key after the snapshot; pessimistic, the
    /// key is locked until the end and the newest committed value returned.
    pub fn get_for_update<K: AsRef<[u8]>>(&mut self, key: K) -> Result<Option<Vec<u8>>> {
        let tree = Arc::clone(self.db.engine().default_keyspace());
        self.read_for_update(&tree, key.as_ref())
    }

    /// [`Transaction::get_for_update`] in keyspace `ks`.
    pub fn get_for_update_in<K: AsRef<[u8]>>(
        &mut self,
        ks: &Keyspace,
        key: K,
    ) -> Result<Option<Vec<u8>>> {
        self.check_same_db(ks)?;
        self.read_for_update(&Arc::clone(ks.tree()), key.as_ref())
    }

    /// Writes `key` = `value` (the "default" keyspace) when the transaction commits.
    pub fn put<K: AsRef<[u8]>, V: AsRef<[u8]>>(&mut self, key: K, value: V) -> Result<()> {
        self.claim_default(key.as_ref())?;
        self.writes.put(key, value);
        Ok(())
    }

    /// [`Transaction::put`] in keyspace `ks`.
    pub fn put_in<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &mut self,
        ks: &Keyspace,
        key: K,
        value: V,
    ) -> Result<()> {
        self.claim_in(ks, key.as_ref())?;
        self.writes.put_in(ks, key, value);
        Ok(())
    }

    /// Writes `key` = `value` expiring `ttl` from now (`Db::put_with_ttl`) when the transaction
    /// commits.
    pub fn put_with_ttl<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &mut self,
        key: K,
        value: V,
        ttl: Duration,
    ) -> Result<()> {
        self.claim_default(key.as_ref())?;
        let expiry = self.expiry_after(ttl);
        self.writes
            .put_expiring(None, key.as_ref(), value.as_ref(), expiry);
        Ok(())
    }

    /// [`Transaction::put_with_ttl`] in keyspace `ks`.
    pub fn put_with_ttl_in<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &mut self,
        ks: &Keyspace,
        key: K,
        value: V,
        ttl: Duration,
    ) -> Result<()> {
        self.claim_in(ks, key.as_ref())?;
        let expiry = self.expiry_after(ttl);
        self.writes
            .put_expiring(Some(ks), key.as_ref(), value.as_ref(), expiry);
        Ok(())
    }

    /// Deletes `key` (the "default" keyspace) when the transaction commits.
    pub fn delete<K: AsRef<[u8]>>(&mut self, key: K) -> Result<()> {
        self.claim_default(key.as_ref())?;
        self.writes.delete(key);
        Ok(())
    }

    /// [`Transaction::delete`] in keyspace `ks`.
    pub fn delete_in<K: AsRef<[u8]>>(&mut self, ks: &Keyspace, key: K) -> Result<()> {
        self.claim_in(ks, key.as_ref())?;
        self.writes.delete_in(ks, key);
        Ok(())
    }

    /// Adds a merge operand for `key` (the "default" keyspace; the database needs a merge
    /// operator); the transaction's reads of the key apply it.
    pub fn merge<K: AsRef<[u8]>, V: AsRef<[u8]>>(&mut self, key: K, operand: V) -> Result<()> {
        self.check_merge_operator(self.db.engine().default_keyspace())?;
        self.claim_default(key.as_ref())?;
        self.writes.merge(key, operand);
        Ok(())
    }

    /// [`Transaction::merge`] in keyspace `ks`.
    pub fn merge_in<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &mut self,
        ks: &Keyspace,
        key: K,
        operand: V,
    ) -> Result<()> {
        self.check_merge_operator(ks.tree())?;
        self.claim_in(ks, key.as_ref())?;
        self.writes.merge_in(ks, key, operand);
        Ok(())
    }

    /// [`Transaction::range`](Readable::range) in keyspace `ks`.
    pub fn range_in<K: AsRef<[u8]>, R: std::ops::RangeBounds<K>>(
        &self,
        ks: &Keyspace,
        range: R,
    ) -> BatchAndDbIterator<'_> {
        let scan = Scan::range(&range);
        self.scan(Arc::clone(ks.tree()), scan, &ReadOptions::default())
    }

    /// [`Transaction::prefix_iter`](Readable::prefix_iter) in keyspace `ks`.
    pub fn prefix_iter_in<P: AsRef<[u8]>>(
        &self,
        ks: &Keyspace,
        prefix: P,
    ) -> BatchAndDbIterator<'_> {
        let scan = Scan::prefix(prefix.as_ref());
        self.scan(Arc::clone(ks.tree()), scan, &ReadOptions::default())
    }

    /// Marks the transaction as it is now: [`Transaction::rollback_to_savepoint`] returns it
    /// here. Savepoints nest.
    pub fn set_savepoint(&mut self) -> Result<()> {
        self.writes.set_savepoint();
        self.savepoints.push(Savepoint {
            tracked: self.tracked.len(),
            locked: self.locked.len(),
        });
        Ok(())
    }

    /// Undoes everything since the last savepoint — writes, keys read for update, and locks
    /// first taken since (released) — and removes that savepoint. An
    /// [`Error::InvalidArgument`] when there is none.
    pub fn rollback_to_savepoint(&mut self) -> Result<()> {
        let Some(mark) = self.savepoints.pop() else {
            return Err(Error::InvalidArgument(
                "rollback_to_savepoint without a savepoint".to_string(),
            ));
        };
        self.writes.rollback_to_savepoint()?;
        self.tracked.truncate(mark.tracked);
        let released = self.locked.split_off(mark.locked);
        self.db.engine().locks().unlock(self.id, &released);
        Ok(())
    }

    /// Commits: every write of the transaction, in one atomic batch through the WAL (not
    /// synced; see [`Transaction::commit_opt`]). [`Error::Conflict`] (optimistic) when a key
    /// it wrote or read for update was committed by another writer after its snapshot: then
    /// nothing was written.
    pub fn commit(self) -> Result<()> {
        self.commit_opt(&WriteOptions::default())
    }

    /// [`Transaction::commit`] with write options (`sync: true`: durable across power loss
    /// when this returns).
    pub fn commit_opt(mut self, opts: &WriteOptions) -> Result<()> {
        let writes = std::mem::take(&mut self.writes);
        let check = match self.opts.mode {
            TransactionMode::Optimistic => {
                let check = self.commit_check(&writes)?;
                self.hold_written_keys(&writes)?;
                Some(check)
            }
            TransactionMode::Pessimistic => None,
        };
        let nothing_to_do = writes.is_empty() && check.as_ref().is_none_or(|c| c.keys.is_empty());
        if nothing_to_do && !opts.sync {
            return Ok(());
        }
        // Locks are released when `self` drops, after the write.
        self.db
            .engine()
            .write_checked(writes.into(), opts.sync, check)
    }

    /// Ends the transaction without writing anything (and releases its locks); dropping it
    /// does the same.
    pub fn rollback(self) -> Result<()> {
        drop(self);
        Ok(())
    }

    /// The value of `key` in `tree` as the transaction sees it: its own write over the
    /// database's at `seq` (the newest without one).
    fn read(
        &self,
        tree: &Arc<KeyspaceTree>,
        key: &[u8],
        seq: Option<u64>,
    ) -> Result<Option<Vec<u8>>> {
        self.read_opt(tree, key, seq, &ReadOptions::default())
    }

    fn read_opt(
        &self,
        tree: &Arc<KeyspaceTree>,
        key: &[u8],
        seq: Option<u64>,
        opts: &ReadOptions,
    ) -> Result<Option<Vec<u8>>> {
        let engine = self.db.engine();
        self.writes.get_over(tree, key, || {
            let mut value = Vec::new();
            let found = engine.get_point(tree, key, seq, opts, &mut value, None)?;
            Ok(found.then_some(value))
        })
    }

    fn read_for_update(&mut self, tree: &Arc<KeyspaceTree>, key: &[u8]) -> Result<Option<Vec<u8>>> {
        match self.opts.mode {
            TransactionMode::Optimistic => {
                self.note_keyspace(tree);
                self.tracked.push((tree.id, key.to_vec()));
                self.read(tree, key, self.snapshot_sequence())
            }
            TransactionMode::Pessimistic => {
                self.lock(tree, key)?;
                // Under the lock no other transaction changes the key: its newest value is
                // the one the transaction's write will replace.
                self.read(tree, key, None)
            }
        }
    }

    /// Before a write of `key` in the default keyspace: its lock, when pessimistic.
    fn claim_default(&mut self, key: &[u8]) -> Result<()> {
        let tree = Arc::clone(self.db.engine().default_keyspace());
        self.claim(&tree, key)
    }

    fn claim_in(&mut self, ks: &Keyspace, key: &[u8]) -> Result<()> {
        self.check_same_db(ks)?;
        self.claim(&Arc::clone(ks.tree()), key)
    }

    fn claim(&mut self, tree: &Arc<KeyspaceTree>, key: &[u8]) -> Result<()> {
        self.note_keyspace(tree);
        match self.opts.mode {
            TransactionMode::Optimistic => Ok(()),
            TransactionMode::Pessimistic => self.lock(tree, key),
        }
    }

    /// Locks `key` of `tree` for this transaction; with a snapshot, fails with
    /// [`Error::Conflict`] when the key was committed after it (the lock is kept: it is
    /// released with the others).
    fn lock(&mut self, tree: &Arc<KeyspaceTree>, key: &[u8]) -> Result<()> {
        tree.check_live()?;
        let lock_key = (tree.id, key.to_vec());
        let engine = self.db.engine();
        let fresh = engine.locks().lock(
            self.id,
            &lock_key,
            self.opts.lock_timeout,
            self.opts.deadlock_detect,
        )?;
        if fresh {
            self.locked.push(lock_key);
            if let Some(seq) = self.snapshot_sequence()
                && engine.written_after(tree, key, seq)?
            {
                return Err(Error::Conflict);
            }
        }
        Ok(())
    }

    /// Optimistic: takes the locks of the keys the commit writes, without waiting, until the
    /// write is done. A key a pessimistic transaction holds fails the commit with
    /// [`Error::Conflict`]: that transaction read the key's newest value under its lock and
    /// will write over it, so this write would be lost (or, committed between its lock and its
    /// read, read by it after this transaction's validation).
    fn hold_written_keys(&mut self, writes: &WriteBatchWithIndex) -> Result<()> {
        let engine = Arc::clone(self.db.engine());
        for key in writes.written_keys() {
            match engine.locks().lock(self.id, key, Duration::ZERO, false) {
                Ok(true) => self.locked.push(key.clone()),
                Ok(false) => {}
                Err(Error::LockTimeout) => return Err(Error::Conflict),
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn note_keyspace(&mut self, tree: &Arc<KeyspaceTree>) {
        if !self.trees.iter().any(|t| t.id == tree.id) {
            self.trees.push(Arc::clone(tree));
        }
    }

    /// What an optimistic commit must find unchanged since the snapshot: every key written or
    /// read for update.
    fn commit_check(&self, writes: &WriteBatchWithIndex) -> Result<CommitCheck> {
        let snapshot = self.snapshot_sequence().ok_or_else(|| {
            Error::InvalidArgument("an optimistic transaction without a snapshot".to_string())
        })?;
        let keys: BTreeSet<&LockKey> = writes.written_keys().chain(&self.tracked).collect();
        let keys = keys
            .into_iter()
            .map(|(id, key)| {
                let tree = self.trees.iter().find(|t| t.id == *id).ok_or_else(|| {
                    Error::InvalidArgument(format!("the transaction names keyspace id {id}"))
                })?;
                Ok((Arc::clone(tree), key.clone()))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(CommitCheck { snapshot, keys })
    }

    /// The entries of `scan` in `tree` as the transaction sees them, within `opts`' bounds
    /// (its own writes too).
    fn scan(
        &self,
        tree: Arc<KeyspaceTree>,
        scan: Scan,
        opts: &ReadOptions,
    ) -> BatchAndDbIterator<'_> {
        let engine = self.db.engine();
        let seq = self.snapshot_sequence();
        let scan = scan.within(opts);
        let base =
            crate::paths::read::iterator(engine, &tree, seq, &scan.bounds, scan.prefix, opts);
        self.writes.iterator_over(tree, base, scan.bounds)
    }

    fn expiry_after(&self, ttl: Duration) -> u64 {
        let clock = &self.db.engine().shared().options().clock;
        crate::base::ttl::expiry_after(clock.as_ref(), ttl)
    }

    fn check_merge_operator(&self, tree: &KeyspaceTree) -> Result<()> {
        if tree.options().merge_operator.is_none() {
            return Err(Error::InvalidArgument(
                "merge needs a merge operator (Options::merge_operator)".to_string(),
            ));
        }
        Ok(())
    }

    fn check_same_db(&self, ks: &Keyspace) -> Result<()> {
        if ks.tag().instance != self.db.engine().instance() {
            return Err(Error::InvalidArgument(
                "the keyspace belongs to another database than the transaction".to_string(),
            ));
        }
        Ok(())
    }
}

impl Sealed for Transaction {}

/// Reads of the `"default"` keyspace: the transaction's writes over the database at its
/// snapshot (the newest data, pessimistic without a snapshot).
impl Readable for Transaction {
    type Iter<'a> = BatchAndDbIterator<'a>;

    fn read_value(
        &self,
        key: &[u8],
        opts: &ReadOptions,
        value: &mut Vec<u8>,
        _pinned: Option<&mut Option<siftdb_sstable::PinnedValue>>,
    ) -> Result<bool> {
        let tree = Arc::clone(self.db.engine().default_keyspace());
        let found = self.read_opt(&tree, key, self.snapshot_sequence(), opts)?;
        Ok(found.map(|v| *value = v).is_some())
    }

    fn read_scan(&self, scan: Scan, opts: &ReadOptions) -> BatchAndDbIterator<'_> {
        let tree = Arc::clone(self.db.engine().default_keyspace());
        self.scan(tree, scan, opts)
    }
}
forward_reads_to_readable!(Transaction, BatchAndDbIterator<'_>);

impl Drop for Transaction {
    fn drop(&mut self) {
        self.db.engine().locks().unlock(self.id, &self.locked);
    }
}
