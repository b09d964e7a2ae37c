//! The database handle: [`Db`] is an `Arc<Engine>` (`paths::engine`) plus what only the handle
//! owns, the background threads and the directory lock (`CloseOnDrop`, closed by the last clone
//! or by [`Db::close`]). Its reads are [`Readable`](crate::Readable)'s (`api::readable`); the
//! read path itself is `paths/read.rs`.

use std::path::Path;
use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::Mutex;

use crate::api::keyspace::Keyspace;
use crate::api::readable::{forward_reads_to_readable, readable_through_target, ReadTarget};
use crate::api::snapshot::Snapshot;
use crate::api::transaction::{Transaction, TransactionOptions};
use crate::base::batch::WriteBatch;
use crate::base::error::{Error, Result};
use crate::base::fs::FileLock;
use crate::base::keyspace_options::KeyspaceOptions;
use crate::base::options::{Options, ReadOptions, WriteOptions};
use crate::core::level_info::LevelInfo;
use crate::core::stats::Stats;
use crate::paths::engine::Engine;
use crate::paths::iterator::{DbIterator, RawIterator};
use crate::paths::latency::{timed, Op};

/// An embedded LSM-tree key-value store.
///
/// `Db` is `Send + Sync`: share it through an `Arc` (or clone it: clones are handles to the same
/// database). Writes are atomic per call and per [`WriteBatch`]; reads see every acknowledged
/// write. A second `open` of the same directory fails with [`Error::Locked`].
///
/// ```
/// use siftdb::{Db, Options, WriteBatch};
/// let dir = tempfile::tempdir()?;
/// let db = Db::open(dir.path(), Options::default())?;
/// db.put(b"apple", b"red")?;
/// let mut batch = WriteBatch::new();
/// batch.put(b"pear", b"green").delete(b"apple");
/// db.write(batch)?;
/// assert_eq!(db.get(b"pear")?, Some(b"green".to_vec()));
/// assert_eq!(db.get(b"apple")?, None);
///
/// let snapshot = db.snapshot();
/// db.put(b"pear", b"yellow")?;
/// assert_eq!(snapshot.get(b"pear")?, Some(b"green".to_vec()));
///
/// db.flush()?; // memtable -> L0 table
/// let keys: Vec<Vec<u8>> = db.iter().map(|kv| kv.map(|(k, _)| k)).collect::<Result<_, _>>()?;
/// assert_eq!(keys, vec![b"pear".to_vec()]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Db {
    engine: Arc<Engine>,
    /// Shared by the clones of this handle; the last one dropped closes the database.
    guard: Arc<CloseOnDrop>,
}

/// What only the handle owns: the background threads and the directory lock. Closes the
/// database when the last user handle goes away. Iterators and snapshots keep the data they
/// read alive (they hold the engine's shared state), but not the background work or the lock.
struct CloseOnDrop {
    engine: Arc<Engine>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// The directory lock, released at shutdown (`None` for a read-only open).
    lock: Mutex<Option<Box<dyn FileLock>>>,
}

impl CloseOnDrop {
    /// Stops background work, waits for it, syncs the WAL and releases the directory lock
    /// (once; later calls return `Ok`). Returns the WAL sync's failure.
    fn close(&self) -> Result<()> {
        if !self.engine.shared().begin_shutdown() {
            return Ok(());
        }
        for handle in std::mem::take(&mut *self.threads.lock()) {
            if handle.thread().id() != std::thread::current().id() {
                // Wakes a thread parked until its next round (the metrics publisher).
                handle.thread().unpark();
                let _ = handle.join();
            }
        }
        let synced = self.engine.sync_wal_at_close();
        // Let another instance open the directory; this one's readers keep their open files.
        self.lock.lock().take();
        // Every event raised until now reaches the listeners before `close` returns.
        self.engine.shared().events().stop();
        synced
    }
}

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        if let Err(e) = self.close() {
            tracing::warn!("siftdb: closing on drop: {e}");
        }
    }
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db")
            .field("path", &self.engine.shared().dir())
            .finish()
    }
}

impl Db {
    /// Opens (or creates) the database in `path`.
    ///
    /// Recovers every acknowledged write: replays the manifest, opens the live tables of every
    /// keyspace, replays the WALs newer than the last flush (dropping a torn tail record from a
    /// crash), and flushes what they held to tables. Fails with [`Error::Locked`] if another
    /// instance has the directory open, [`Error::NotADatabase`] for a directory holding something
    /// else, [`Error::UnsupportedVersion`] for a database from a newer format, and
    /// [`Error::Corruption`] for damaged metadata. A failed open changes nothing on disk.
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        #[cfg(feature = "metrics")]
        let options = crate::api::metrics::with_job_durations(options);
        let (engine, lock) = crate::paths::recovery::open(path.as_ref(), options)?;
        let shared = engine.shared();
        let threads = crate::jobs::flush::start_background(shared)
            .into_iter()
            .chain(crate::jobs::compaction::start_background(
                shared,
                engine.compactions(),
            ))
            .chain(crate::jobs::filter_index_rebuild::start_background(shared))
            .chain(crate::jobs::deleter_thread::start_background(shared))
            .collect();
        let db = Db::with_engine(engine, threads, Some(lock));
        #[cfg(feature = "metrics")]
        db.start_metrics_publisher();
        Ok(db)
    }

    /// Opens (or creates) the database in `path` with **stepped background work**, for tests
    /// that choose the interleaving of writes and background work themselves. Test builds only
    /// (cargo feature `test-hooks`).
    ///
    /// No flush or compaction thread starts. The test runs background work with
    /// [`Db::step_flush`], [`Db::step_compaction`] and [`Db::step_obsolete_files`], which run
    /// the very code the threads run, on the calling thread. Calls that would wait for that work
    /// do it themselves instead: [`Db::flush`] (and so [`Db::compact_range`]) flushes the
    /// keyspace's memtables and the older ones of others, [`Db::wait_for_compaction`] compacts
    /// until nothing is due, [`Db::resume`] flushes what it froze.
    ///
    /// Writes never stall: a write that would wait for a flush (`max_write_buffer_number`
    /// memtables frozen) switches its full memtable anyway, and one that would wait for a
    /// compaction (`level0_stop_writes_trigger`) goes on. A stall is flow control only — it
    /// changes when data moves, never what reads see — so a model of the contents holds either
    /// way, and running the flush inline could not end an L0 stall (a compaction may not start
    /// on the write path: see the lock order). Stalls themselves are tested with the threads.
    #[cfg(feature = "test-hooks")]
    pub fn open_stepped(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        let (engine, lock) = crate::paths::recovery::open(path.as_ref(), options)?;
        engine.shared().set_stepped();
        Ok(Db::with_engine(engine, Vec::new(), Some(lock)))
    }

    /// Stepped mode ([`Db::open_stepped`]): flushes the oldest immutable memtable of any
    /// keyspace, as the flush thread would; returns whether there was one. Callers are serialized
    /// (one flush at a time, as with the one thread). A failure stops writes, as a background
    /// flush's does, and is returned. In a threaded open it races the flush thread harmlessly.
    #[cfg(feature = "test-hooks")]
    pub fn step_flush(&self) -> Result<bool> {
        self.engine.step_flush()
    }

    /// Stepped mode ([`Db::open_stepped`]): picks and runs one compaction of any keyspace, as a
    /// compaction thread would; returns whether one was due (and fit beside those other callers
    /// run). A failure is handled as a background compaction's (a compaction filter's failure is
    /// returned and remembered; any other stops writes) and returned.
    #[cfg(feature = "test-hooks")]
    pub fn step_compaction(&self) -> Result<bool> {
        self.engine.step_compaction()
    }

    /// Deletes the files no live state needs (what every flush and compaction does at its end;
    /// a no-op while a checkpoint pauses deletions). Test builds only (cargo feature
    /// `test-hooks`).
    #[cfg(feature = "test-hooks")]
    pub fn step_obsolete_files(&self) -> Result<()> {
        self.engine.step_obsolete_files()
    }

    /// Opens the database in `path` for reading only, as it is at this moment: no lock (a
    /// writer may have it open, in this process or another), no writes, no background work, no
    /// file created or deleted. It keeps working when the writer later compacts and deletes
    /// files (it holds the ones it reads open); several read-only opens may coexist. Writes,
    /// flushes, compactions, keyspace changes and checkpoints fail with [`Error::ReadOnly`].
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// let db = siftdb::Db::open(dir.path(), siftdb::Options::default())?;
    /// db.put("k", "v")?;
    /// let reader = siftdb::Db::open_read_only(dir.path(), siftdb::Options::default())?;
    /// assert_eq!(reader.get("k")?, Some(b"v".to_vec()));
    /// assert!(matches!(reader.put("k", "w"), Err(siftdb::Error::ReadOnly)));
    /// # Ok::<(), siftdb::Error>(())
    /// ```
    pub fn open_read_only(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        let engine = crate::paths::recovery::open_read_only(path.as_ref(), options)?;
        Ok(Db::with_engine(engine, Vec::new(), None))
    }

    /// Catches a read-only open up with the writer of its database (RocksDB's secondary
    /// instance): what the writer flushed, compacted or logged in its WAL since the open (or the
    /// last catch-up) becomes what reads see, keyspace by keyspace. Iterators
    /// already open keep reading what they were opened on. Keyspaces the writer created since
    /// stay unknown to this handle; keyspaces it dropped read empty.
    ///
    /// Fails with [`Error::InvalidArgument`] on a database that is not open read-only, or while
    /// this handle holds snapshots (the writer keeps only the versions its own snapshots need,
    /// so an older snapshot here could miss a key's version compacted away).
    ///
    /// A read of a table the writer deleted after the last catch-up can fail with a "not
    /// found" I/O error when the table is not among the open files ([`Options::max_open_files`]):
    /// catch up again, as with RocksDB's secondary instances.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// let db = siftdb::Db::open(dir.path(), siftdb::Options::default())?;
    /// db.put("k", "v1")?;
    /// let secondary = siftdb::Db::open_read_only(dir.path(), siftdb::Options::default())?;
    /// db.put("k", "v2")?;
    /// assert_eq!(secondary.get("k")?, Some(b"v1".to_vec()));
    /// secondary.try_catch_up_with_primary()?;
    /// assert_eq!(secondary.get("k")?, Some(b"v2".to_vec()));
    /// # Ok::<(), siftdb::Error>(())
    /// ```
    pub fn try_catch_up_with_primary(&self) -> Result<()> {
        crate::paths::recovery::catch_up_with_primary(&self.engine)
    }

    /// The sequence number of the newest write reads see (RocksDB's
    /// `GetLatestSequenceNumber`): every operation of a batch takes one, log data none. Unlike
    /// [`snapshot`](Db::snapshot) it registers nothing.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// let db = siftdb::Db::open(dir.path(), siftdb::Options::default())?;
    /// db.put("a", "1")?;
    /// db.write({ let mut b = siftdb::WriteBatch::new(); b.put("b", "2").delete("a"); b })?;
    /// assert_eq!(db.latest_sequence_number(), 3);
    /// # Ok::<(), siftdb::Error>(())
    /// ```
    pub fn latest_sequence_number(&self) -> u64 {
        self.engine.latest_sequence()
    }

    fn with_engine(
        engine: Engine,
        threads: Vec<JoinHandle<()>>,
        lock: Option<Box<dyn FileLock>>,
    ) -> Db {
        let engine = Arc::new(engine);
        Db {
            guard: Arc::new(CloseOnDrop {
                engine: Arc::clone(&engine),
                threads: Mutex::new(threads),
                lock: Mutex::new(lock),
            }),
            engine,
        }
    }

    /// The engine behind the handle.
    pub(crate) fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// Hands a background thread to the handle: joined when the database closes.
    #[cfg(feature = "metrics")]
    pub(crate) fn adopt_thread(&self, handle: JoinHandle<()>) {
        self.guard.threads.lock().push(handle);
    }

    /// The keyspace `name`, created with `KeyspaceOptions::default()` if it does not exist (with
    /// a read-only open: [`Error::KeyspaceNotFound`]). `"default"` is the keyspace of `Db`'s own
    /// methods. Names are 1 to 255 bytes without control characters.
    pub fn keyspace(&self, name: &str) -> Result<Keyspace> {
        crate::base::keyspace_options::validate_name(name)?;
        self.engine.check_open()?;
        let tree = match self.engine.tree_named(name) {
            Some(tree) => tree,
            None if self.engine.shared().read_only() => {
                return Err(Error::KeyspaceNotFound(name.to_string()))
            }
            None => self
                .engine
                .create_keyspace_tree(name, &KeyspaceOptions::default(), true)?,
        };
        Ok(Keyspace::new(self.clone(), tree))
    }

    /// Creates keyspace `name` with `opts`; [`Error::AlreadyExists`] if it exists. The options
    /// are recorded, and a reopened keyspace runs with them (see [`Options::keyspaces`]).
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = siftdb::Db::open(dir.path(), siftdb::Options::default())?;
    /// let opts = siftdb::KeyspaceOptions {
    ///     prefix_extractor: Some(siftdb::FixedPrefix::shared(4)),
    ///     ..Default::default()
    /// };
    /// let index = db.create_keyspace("index", opts.clone())?;
    /// assert!(matches!(db.create_keyspace("index", opts), Err(siftdb::Error::AlreadyExists(_))));
    /// # let _ = index;
    /// # Ok::<(), siftdb::Error>(())
    /// ```
    pub fn create_keyspace(&self, name: &str, opts: KeyspaceOptions) -> Result<Keyspace> {
        self.engine.check_open()?;
        let tree = self.engine.create_keyspace_tree(name, &opts, false)?;
        Ok(Keyspace::new(self.clone(), tree))
    }

    /// Drops keyspace `name`: its memtables, cached blocks and table files go, and its handles
    /// fail with [`Error::KeyspaceDropped`] from then on. A crash in the middle leaves it wholly
    /// there or wholly gone. `"default"` cannot be dropped.
    pub fn drop_keyspace(&self, name: &str) -> Result<()> {
        crate::base::keyspace_options::validate_name(name)?;
        self.engine.check_open()?;
        self.engine.drop_keyspace_tree(name)
    }

    /// The names of the keyspaces, `"default"` first, then in creation order.
    pub fn keyspace_names(&self) -> Vec<String> {
        self.engine.keyspace_names()
    }

    /// Writes a consistent copy of the database into `dir` (which must not exist, or be empty)
    /// that [`Db::open`] opens as an ordinary database: every write acknowledged before the call
    /// and none after. Table files are hard-linked (copied where `dir` is on another file
    /// system); the WAL is copied up to the checkpoint's sequence number; a fresh manifest names
    /// it all. Writers are held up only while the checkpoint's point is chosen (no I/O).
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = siftdb::Db::open(dir.path().join("db"), siftdb::Options::default())?;
    /// db.put("k", "v")?;
    /// db.checkpoint(dir.path().join("backup"))?;
    /// db.put("k", "after")?;
    /// let copy = siftdb::Db::open(dir.path().join("backup"), siftdb::Options::default())?;
    /// assert_eq!(copy.get("k")?, Some(b"v".to_vec()));
    /// # Ok::<(), siftdb::Error>(())
    /// ```
    pub fn checkpoint(&self, dir: impl AsRef<Path>) -> Result<()> {
        self.engine.checkpoint(dir.as_ref())
    }

    /// Stores `value` under `key`. Keys and values are anything that is bytes: `&[u8]`,
    /// `Vec<u8>`, `&str`, `String`, byte-string literals.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = siftdb::Db::open(dir.path(), siftdb::Options::default())?;
    /// db.put("user:1", "ann")?;
    /// db.put(b"user:2", vec![1u8, 2, 3])?;
    /// assert_eq!(db.get("user:1")?, Some(b"ann".to_vec()));
    /// # Ok::<(), siftdb::Error>(())
    /// ```
    pub fn put<K: AsRef<[u8]>, V: AsRef<[u8]>>(&self, key: K, value: V) -> Result<()> {
        self.put_opt(key, value, &WriteOptions::default())
    }

    /// [`Db::put`] with write options: `sync: true` returns once the write survives a power
    /// loss (RocksDB's `Put(WriteOptions, ...)`), without a batch of one.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = siftdb::Db::open(dir.path(), siftdb::Options::default())?;
    /// let synced = siftdb::WriteOptions { sync: true, ..Default::default() };
    /// db.put_opt(b"balance", b"100", &synced)?;
    /// db.merge_opt(b"unused", b"", &synced).unwrap_err(); // no merge operator configured
    /// db.delete_opt(b"balance", &synced)?;
    /// db.delete_range_opt(b"a", b"z", &synced)?;
    /// assert_eq!(db.get(b"balance")?, None);
    /// # Ok::<(), siftdb::Error>(())
    /// ```
    pub fn put_opt<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        key: K,
        value: V,
        opts: &WriteOptions,
    ) -> Result<()> {
        let mut batch = WriteBatch::new();
        batch.put(key, value);
        self.write_opt(batch, opts)
    }

    /// Stores `value` under `key` until `ttl` has passed (by `Options::clock`): from then on it
    /// reads as absent — from `get`, iterators and `multi_get` at once — and compactions remove
    /// it. Values written without a TTL carry no expiry.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = siftdb::Db::open(dir.path(), siftdb::Options::default())?;
    /// use std::time::Duration;
    /// db.put_with_ttl(b"session:1", b"token", Duration::from_secs(3600))?;
    /// assert_eq!(db.get("session:1")?, Some(b"token".to_vec()));
    /// db.put_with_ttl(b"session:2", b"token", Duration::ZERO)?; // expired at once
    /// assert_eq!(db.get("session:2")?, None);
    /// # Ok::<(), siftdb::Error>(())
    /// ```
    pub fn put_with_ttl<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        key: K,
        value: V,
        ttl: std::time::Duration,
    ) -> Result<()> {
        let expiry =
            crate::base::ttl::expiry_after(self.engine.shared().options().clock.as_ref(), ttl);
        let mut batch = WriteBatch::new();
        batch.put_expiring(None, key.as_ref(), value.as_ref(), expiry);
        self.write(batch)
    }

    /// Removes `key` (no error if it is absent).
    pub fn delete<K: AsRef<[u8]>>(&self, key: K) -> Result<()> {
        self.delete_opt(key, &WriteOptions::default())
    }

    /// [`Db::delete`] with write options (see [`Db::put_opt`]).
    pub fn delete_opt<K: AsRef<[u8]>>(&self, key: K, opts: &WriteOptions) -> Result<()> {
        let mut batch = WriteBatch::new();
        batch.delete(key);
        self.write_opt(batch, opts)
    }

    /// Removes every key in `[start, end)` with one record (a range tombstone), however many
    /// keys the range holds; compaction reclaims their space later. `start == end` removes
    /// nothing; `start > end` is [`Error::InvalidArgument`].
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = siftdb::Db::open(dir.path(), siftdb::Options::default())?;
    /// for i in 0..100u32 {
    ///     db.put(format!("log:{i:03}"), b"entry")?;
    /// }
    /// db.delete_range(b"log:000", b"log:090")?; // purge all but the last ten
    /// assert_eq!(db.get(b"log:089")?, None);
    /// assert_eq!(db.prefix_iter(b"log:").count(), 10);
    /// # Ok::<(), siftdb::Error>(())
    /// ```
    pub fn delete_range<S: AsRef<[u8]>, E: AsRef<[u8]>>(&self, start: S, end: E) -> Result<()> {
        self.delete_range_opt(start, end, &WriteOptions::default())
    }

    /// [`Db::delete_range`] with write options (see [`Db::put_opt`]).
    pub fn delete_range_opt<S: AsRef<[u8]>, E: AsRef<[u8]>>(
        &self,
        start: S,
        end: E,
        opts: &WriteOptions,
    ) -> Result<()> {
        let mut batch = WriteBatch::new();
        batch.delete_range(start, end);
        self.write_opt(batch, opts)
    }

    /// Stores a merge operand for `key`: the database's merge operator
    /// (`Options::merge_operator`) combines it with the key's older value when the key is read
    /// or compacted. Without an operator: [`Error::InvalidArgument`].
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// let options = siftdb::Options {
    ///     merge_operator: Some(std::sync::Arc::new(siftdb::merge::U64Add)),
    ///     ..Default::default()
    /// };
    /// let db = siftdb::Db::open(dir.path(), options)?;
    /// for _ in 0..3 {
    ///     db.merge(b"hits", &1u64.to_le_bytes())?;
    /// }
    /// assert_eq!(db.get(b"hits")?, Some(3u64.to_le_bytes().to_vec()));
    /// # Ok::<(), siftdb::Error>(())
    /// ```
    pub fn merge<K: AsRef<[u8]>, V: AsRef<[u8]>>(&self, key: K, operand: V) -> Result<()> {
        self.merge_opt(key, operand, &WriteOptions::default())
    }

    /// [`Db::merge`] with write options (see [`Db::put_opt`]).
    pub fn merge_opt<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        key: K,
        operand: V,
        opts: &WriteOptions,
    ) -> Result<()> {
        let mut batch = WriteBatch::new();
        batch.merge(key, operand);
        self.write_opt(batch, opts)
    }

    /// Applies a batch atomically (in one keyspace or several): after a crash either all of it
    /// is there or none. A [`WriteBatchWithIndex`](crate::WriteBatchWithIndex) is written the
    /// same way.
    pub fn write(&self, batch: impl Into<WriteBatch>) -> Result<()> {
        self.write_opt(batch, &WriteOptions::default())
    }

    /// [`Db::write`] with options (`sync` for durability across power loss).
    pub fn write_opt(&self, batch: impl Into<WriteBatch>, opts: &WriteOptions) -> Result<()> {
        let batch = batch.into();
        timed(Op::Put, None, || self.engine.write(batch, opts.sync))
    }

    /// A consistent view of the database (every keyspace) as of now.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::new(Arc::clone(&self.engine))
    }

    /// Begins an optimistic transaction with a snapshot taken now (RocksDB's
    /// `OptimisticTransactionDB::BeginTransaction`; see [`Transaction`]).
    pub fn transaction(&self) -> Transaction {
        self.transaction_opt(&TransactionOptions::default())
    }

    /// Begins a transaction as `opts` say: optimistic or pessimistic, the lock timeout,
    /// deadlock detection, a snapshot for a pessimistic one.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = siftdb::Db::open(dir.path(), siftdb::Options::default())?;
    /// use siftdb::{TransactionMode, TransactionOptions};
    /// let opts = TransactionOptions {
    ///     mode: TransactionMode::Pessimistic,
    ///     lock_timeout: std::time::Duration::from_millis(100),
    ///     ..TransactionOptions::default()
    /// };
    /// let mut first = db.transaction_opt(&opts);
    /// first.put("k", "1")?; // locks "k" until `first` ends
    /// let mut second = db.transaction_opt(&opts);
    /// assert!(matches!(second.put("k", "2"), Err(siftdb::Error::LockTimeout)));
    /// first.commit()?;
    /// second.put("k", "2")?; // free now
    /// second.commit()?;
    /// assert_eq!(db.get("k")?, Some(b"2".to_vec()));
    /// # Ok::<(), siftdb::Error>(())
    /// ```
    pub fn transaction_opt(&self, opts: &TransactionOptions) -> Transaction {
        Transaction::begin(self, opts)
    }

    /// A cursor over all keys, both ways, that lends its key and value instead of copying them
    /// (RocksDB's `DBRawIterator`); unpositioned until a `seek*`.
    pub fn raw_iter(&self) -> RawIterator {
        self.raw_iter_opt(&ReadOptions::default())
    }

    /// [`Db::raw_iter`] reading as `opts` say, within its
    /// [`iterate_lower_bound`](ReadOptions::iterate_lower_bound) and
    /// [`iterate_upper_bound`](ReadOptions::iterate_upper_bound) (RocksDB's bounded
    /// `DBRawIterator`). A seek with an upper bound passes over every table whose range filter
    /// ([`Options::range_filter_bits_per_key`]) says it holds no key between the target and the
    /// bound.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = siftdb::Db::open(dir.path(), siftdb::Options::default())?;
    /// for k in ["a1", "a2", "b1", "b2"] {
    ///     db.put(k, "v")?;
    /// }
    /// let opts = siftdb::ReadOptions {
    ///     iterate_lower_bound: Some(b"a2".to_vec()),
    ///     iterate_upper_bound: Some(b"b2".to_vec()),
    ///     ..Default::default()
    /// };
    /// let mut it = db.raw_iter_opt(&opts);
    /// it.seek_to_last(); // the last key below the upper bound
    /// assert_eq!(it.key(), b"b1");
    /// it.seek(b"a"); // below the lower bound: lands on it
    /// assert_eq!(it.key(), b"a2");
    /// it.next();
    /// it.next(); // past "b1": the bound ends the walk
    /// assert!(!it.valid());
    /// it.status()?;
    /// # Ok::<(), siftdb::Error>(())
    /// ```
    pub fn raw_iter_opt(&self, opts: &ReadOptions) -> RawIterator {
        let tree = self.engine.default_keyspace();
        crate::paths::read::raw_iterator(&self.engine, tree, None, opts).in_keyspace(&tree.name)
    }

    /// Flushes the memtable to an L0 table and waits until it (and any earlier one) is on disk.
    pub fn flush(&self) -> Result<()> {
        self.engine.flush(self.engine.default_keyspace())
    }

    /// Ingests table files built by [`SstFileWriter`](crate::SstFileWriter) (RocksDB's
    /// `IngestExternalFile`): the files join the tree by one manifest edit, each at the deepest
    /// level where nothing at or above it overlaps it, and their entries read as one write
    /// newer than every write before (a snapshot taken before does not see them). The files
    /// are copied, or with [`IngestOptions::move_files`](crate::IngestOptions) hard-linked and
    /// removed. Refused with [`Error::InvalidArgument`] when the files overlap each other, are
    /// not external files (entries with sequence numbers) or hold merge operands without a
    /// merge operator; a damaged file is refused with the error that found it. Writes stall
    /// while the files are placed (and while a memtable holding keys of their range flushes);
    /// background compactions wait. See `docs/ARCHITECTURE.md`.
    ///
    /// ```
    /// use siftdb::{Db, IngestOptions, Options, SstFileWriter};
    /// let dir = tempfile::tempdir()?;
    /// let db = Db::open(dir.path().join("db"), Options::default())?;
    /// db.put(b"k2", b"old")?;
    /// let path = dir.path().join("batch.sst");
    /// let mut writer = SstFileWriter::create(&path, &Options::default())?;
    /// writer.put(b"k1", b"one")?;
    /// writer.put(b"k2", b"two")?;
    /// writer.finish()?;
    /// db.ingest_external_file(&[&path], &IngestOptions::default())?;
    /// assert_eq!(db.get(b"k2")?.as_deref(), Some(&b"two"[..]));
    /// # Ok::<(), siftdb::Error>(())
    /// ```
    pub fn ingest_external_file<P: AsRef<Path>>(
        &self,
        paths: &[P],
        opts: &crate::IngestOptions,
    ) -> Result<()> {
        let paths: Vec<std::path::PathBuf> =
            paths.iter().map(|p| p.as_ref().to_path_buf()).collect();
        self.engine
            .ingest_external_files(self.engine.default_keyspace(), &paths, opts)
    }

    /// Deletes the tables below L0 whose keys all lie in `[start, end]` (RocksDB's
    /// `DeleteFilesInRange`), by one manifest edit: no tombstone is written, no byte
    /// compacted, and the space comes back at once. Returns how many tables went. L0 tables and
    /// tables reaching out of the range stay, so keys of the range may remain; and where a
    /// deleted table hid older versions of its keys in a deeper table that stays, those are
    /// visible again (snapshots included). Follow with [`Db::delete_range`] over the range to
    /// remove everything, as RocksDB advises.
    ///
    /// ```
    /// use siftdb::{Db, Options};
    /// let dir = tempfile::tempdir()?;
    /// let db = Db::open(dir.path(), Options::default())?;
    /// for i in 0..1000u32 {
    ///     db.put(format!("shard7/{i:04}"), b"v")?;
    /// }
    /// db.compact_range(None, None)?; // out of L0
    /// db.delete_files_in_range(b"shard7/", b"shard7/\xff")?;
    /// db.delete_range(b"shard7/", b"shard8/")?; // whatever is left
    /// assert_eq!(db.get(b"shard7/0042")?, None);
    /// # Ok::<(), siftdb::Error>(())
    /// ```
    pub fn delete_files_in_range(
        &self,
        start: impl AsRef<[u8]>,
        end: impl AsRef<[u8]>,
    ) -> Result<usize> {
        self.engine.delete_files_in_range(
            self.engine.default_keyspace(),
            start.as_ref(),
            end.as_ref(),
        )
    }

    /// Compacts the key range `[start, end]` (`None` = open end) down to the bottom level,
    /// reclaiming the space of overwritten and deleted keys; `compact_range(None, None)` rewrites
    /// the whole database. Flushes the memtable first. Waits until done.
    pub fn compact_range(&self, start: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.engine
            .compact_range(self.engine.default_keyspace(), start, end)
    }

    /// Waits until every keyspace's tree is in shape (no level over its target, L0 below its
    /// trigger) and no compaction is running; the background threads do the work. Benchmarks
    /// call it so reads meet a settled tree. Fails with [`Error::Background`] if background work
    /// has failed (writes are stopped then), and with [`Error::Closed`] if the database closes
    /// meanwhile. A read-only `Db` has nothing to wait for.
    pub fn wait_for_compaction(&self) -> Result<()> {
        self.engine.wait_for_compaction()
    }

    /// Rebuilds every keyspace's filter index now, on the calling thread, from the tables of
    /// its current tree (`Options::filter_index_bits_per_key`; a keyspace without tables or
    /// without an index is skipped); returns how many were rebuilt. The background thread
    /// does this by itself once lookups miss (a window of 10,000 without an index in which one
    /// in 5 found nothing: after an open, or after the index stepped aside) and once an index
    /// is full or stale; a benchmark or a test calls it so that lookups meet a complete index
    /// at once.
    ///
    /// ```
    /// # fn main() -> siftdb::Result<()> {
    /// let dir = tempfile::tempdir().map_err(siftdb::Error::Io)?;
    /// let db = siftdb::Db::open(dir.path(), siftdb::Options::default())?;
    /// db.put(b"present", b"v")?;
    /// db.flush()?;
    /// assert_eq!(db.build_filter_index()?, 1);
    /// assert_eq!(db.get(b"absent")?, None); // ruled out by the index alone
    /// assert_eq!(db.stats().filter_index_useful, 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn build_filter_index(&self) -> Result<usize> {
        self.engine.build_filter_index()
    }

    /// Changes options of the open database (RocksDB's `SetOptions`): those of the "default"
    /// keyspace RocksDB marks mutable that siftdb has — `write_buffer_size`,
    /// `max_write_buffer_number`, `level0_file_num_compaction_trigger`,
    /// `level0_stop_writes_trigger`, `target_file_size_base`, `max_bytes_for_level_base`,
    /// `max_bytes_for_level_multiplier`, `disable_auto_compactions`, `filter_bits_per_key`,
    /// `optimize_filters_for_hits`, `bloom_before_level`, `compression`,
    /// `compression_per_level` (codec names joined by `,`) and the blob file options — and the
    /// database's compaction threads (`max_background_jobs`, `max_background_compactions`).
    /// Values are written as in the keyspace options' text form (`docs/TUNING.md`).
    ///
    /// All changes apply or none: an unknown name, an option that cannot change on an open
    /// database (`block_size`, `prefix_extractor`, ...), a value that does not parse or options
    /// that do not validate are [`Error::InvalidArgument`](crate::Error::InvalidArgument)
    /// naming the option. New memtables, the stall checks, compaction picks and new tables
    /// follow the change; tables already written keep their filters and codecs. The changes
    /// are recorded in `OPTIONS` (`set_options.<keyspace>.<name>=<value>` lines); a reopen
    /// runs with the options it is given, as RocksDB's does.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// let db = siftdb::Db::open(dir.path(), siftdb::Options::default())?;
    /// // A bulk load: no compactions, large memtables; then back to normal.
    /// db.set_options(&[("disable_auto_compactions", "true"), ("write_buffer_size", "268435456")])?;
    /// db.put(b"k", b"v")?;
    /// db.set_options(&[("disable_auto_compactions", "false"), ("write_buffer_size", "67108864")])?;
    /// assert!(db.set_options(&[("block_size", "8192")]).is_err()); // fixed at open
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_options(&self, changes: &[(&str, &str)]) -> Result<()> {
        self.set_tree_options(self.engine.default_keyspace(), changes, true)
    }

    /// [`Db::set_options`] on `tree`; `db_wide`: the database's options may be named too.
    pub(crate) fn set_tree_options(
        &self,
        tree: &Arc<crate::core::keyspace_tree::KeyspaceTree>,
        changes: &[(&str, &str)],
        db_wide: bool,
    ) -> Result<()> {
        let threads = self.engine.set_options(tree, changes, db_wide)?;
        if let (Some(n), false) = (threads, self.engine.shared().stepped()) {
            let started = crate::jobs::compaction::set_threads(
                self.engine.shared(),
                self.engine.compactions(),
                n,
            );
            self.guard.threads.lock().extend(started);
        }
        Ok(())
    }

    /// Stops deleting obsolete files (RocksDB's `DisableFileDeletions`): tables a compaction
    /// replaced, WALs and manifests no longer needed stay on disk until
    /// [`Db::enable_file_deletions`] — e.g. while a backup tool copies the directory. Calls
    /// nest: deletions resume once each has been matched by an enable.
    /// `wait_for_compaction` and `compact_range` do not wait for deletions meanwhile.
    pub fn disable_file_deletions(&self) -> Result<()> {
        self.engine.shared().check_open()?;
        self.engine.shared().deletions().disable();
        Ok(())
    }

    /// Ends one [`Db::disable_file_deletions`]; once none is left, the files that became
    /// obsolete meanwhile are deleted (before this returns). Without a disable in effect it
    /// does nothing.
    pub fn enable_file_deletions(&self) -> Result<()> {
        let shared = self.engine.shared();
        if shared.deletions().enable() && !shared.deletions().disabled() {
            crate::jobs::obsolete::delete_obsolete_files(shared);
            shared.drain_deletions();
        }
        Ok(())
    }

    /// A snapshot of the statistics (of every keyspace together).
    pub fn stats(&self) -> Stats {
        self.engine.stats()
    }

    /// Every level of the current tree (index = level), with the filters its tables were built
    /// with: where the filter memory went. The same figures as the `siftdb.levels` property.
    pub fn level_info(&self) -> Vec<LevelInfo> {
        let tree = self.engine.default_keyspace();
        crate::core::level_info::level_reports(tree, &tree.read_view().version)
    }

    /// A named property (`siftdb.levels`, `siftdb.sstables`, `siftdb.stats`, `siftdb.keyspaces`,
    /// `siftdb.num-files-at-level<N>`, `siftdb.estimate-num-keys`,
    /// `siftdb.cur-size-all-mem-tables`, `siftdb.total-size-all-mem-tables` (every keyspace's
    /// memtables together, at one instant: what `Options::db_write_buffer_size` bounds),
    /// `siftdb.memtables-memory-bytes` (the heap bytes every keyspace's memtables hold: arena
    /// chunks, skiplist nodes and blooms; an empty memtable's fixed part included),
    /// `siftdb.num-immutable-mem-table`,
    /// `siftdb.estimate-pending-compaction-bytes`: the bytes compaction owes the tree in its
    /// style, as RocksDB's property of that name), or `None` if
    /// unknown. The tree properties are the
    /// "default" keyspace's ([`Keyspace::property`] for another).
    pub fn property(&self, name: &str) -> Option<String> {
        crate::paths::properties::property(&self.engine, self.engine.default_keyspace(), name)
    }

    /// Installs `callback` at the named pause point (see the `sync_point` module); it runs on
    /// every thread that reaches the point until [`Db::clear_sync_point`]. Test builds only
    /// (cargo feature `test-hooks`).
    #[cfg(feature = "test-hooks")]
    pub fn set_sync_point(&self, name: &'static str, callback: impl Fn() + Send + Sync + 'static) {
        self.engine
            .shared()
            .sync_points()
            .set(name, Arc::new(callback));
    }

    /// Removes the callback of a pause point. Test builds only (cargo feature `test-hooks`).
    #[cfg(feature = "test-hooks")]
    pub fn clear_sync_point(&self, name: &str) {
        self.engine.shared().sync_points().clear(name);
    }

    /// Clears a background error whose cause was I/O — no space left, an I/O error writing a
    /// flush's or compaction's output, the WAL or the manifest — once the cause is gone (RocksDB's
    /// `DB::Resume`), so writes work again without a reopen. A manifest whose append failed is
    /// replaced by a new one; after a WAL failure every memtable is frozen into a new WAL and
    /// flushed before `resume` returns (the old log may have lost unsynced pages); a failed flush
    /// is retried and waited for. Every write acknowledged before the error is kept.
    ///
    /// # Errors
    /// The background error again when its cause is not I/O (a panic in a callback), or when
    /// the retried work fails again (the disk is still full): the database stays stopped and
    /// `resume` may be called again later. [`Error::ReadOnly`] for a read-only handle.
    ///
    /// ```
    /// # fn main() -> siftdb::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = siftdb::Db::open(dir.path(), siftdb::Options::default())?;
    /// if let Err(siftdb::Error::Background(why)) = db.put(b"k", b"v") {
    ///     // ... free some space, then:
    ///     eprintln!("writes stopped: {why}");
    ///     db.resume()?;
    /// }
    /// db.resume()?; // no background error: nothing to do
    /// # Ok(())
    /// # }
    /// ```
    pub fn resume(&self) -> Result<()> {
        self.engine.resume()
    }

    /// Stops background work, waits for it, and syncs the WAL (as RocksDB does at shutdown
    /// unless `avoid_sync_during_shutdown`), so every write acknowledged before a clean close
    /// survives a later power loss. Further calls on any handle fail with [`Error::Closed`].
    /// Acknowledged writes are already in the OS cache (synced ones durable); `close` is not
    /// needed for safety, only for an orderly shutdown. Dropping the last handle closes too (and
    /// logs a failed sync instead of returning it).
    ///
    /// # Errors
    /// The WAL sync's failure (then writes since the last synced one may not survive a power
    /// loss). A later call returns `Ok`.
    pub fn close(&self) -> Result<()> {
        self.guard.close()
    }
}

readable_through_target!(Db, |db| ReadTarget {
    engine: &db.engine,
    tree: db.engine.default_keyspace(),
    sequence: None,
});
forward_reads_to_readable!(Db, DbIterator);
