//! The database handle: public API, shared state, the read path.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex};
use siftdb_cache::CacheOptions;
use siftdb_sstable::{GetTrace, Lookup, PreparedGet, TableCache};

use crate::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::fs::{FileLock, FileSystem};
use crate::iterator::{merge_for, DbIterator, KeyBounds, RawIterator, ScanSpec};
use crate::memtable::Memtable;
use crate::options::{Options, ReadOptions, WriteOptions};
use crate::properties::LevelInfo;
use crate::snapshot::{Snapshot, SnapshotList};
use crate::stats::{EngineCounters, Stats};
use crate::version::{TableFile, Version};
use crate::version_set::VersionSet;
use crate::wal::writer::LogWriter;
use crate::write::WriteQueue;

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
    pub(crate) inner: Arc<DbInner>,
    /// Shared by the clones of this handle; the last one dropped closes the database.
    _guard: Arc<CloseOnDrop>,
}

/// Closes the database when the last user handle goes away. Iterators and snapshots keep the
/// data they read alive (they hold `DbInner`), but not the background work or the lock.
struct CloseOnDrop(Arc<DbInner>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        self.0.shutdown();
    }
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db").field("path", &self.inner.dir).finish()
    }
}

/// What reads need, captured under the state lock and then used without it.
#[derive(Clone)]
pub(crate) struct ReadView {
    pub mem: Arc<Memtable>,
    /// Immutable memtables, newest first.
    pub imm: Vec<Arc<Memtable>>,
    pub version: Arc<Version>,
}

/// The memtables and the write-ahead log, changed under [`DbInner::state`]. The tree's metadata
/// (versions, file numbers, the manifest) belongs to the [`VersionSet`].
pub(crate) struct DbState {
    pub mem: Arc<Memtable>,
    /// Immutable memtables waiting for flush, oldest first.
    pub imm: Vec<Arc<Memtable>>,
    /// The WAL of `mem` (taken out by the write leader while it appends).
    pub wal: Option<LogWriter>,
    /// First background error; writes fail once it is set.
    pub bg_error: Option<String>,
}

pub(crate) struct DbInner {
    pub dir: PathBuf,
    pub options: Options,
    pub fs: Arc<dyn FileSystem>,
    pub cache: Arc<TableCache>,
    pub counters: EngineCounters,
    pub state: Mutex<DbState>,
    /// The tree's metadata and the manifest.
    pub versions: VersionSet,
    /// What reads see, republished from `state` by every change of memtables or version.
    pub view: parking_lot::RwLock<Arc<ReadView>>,
    /// Signalled when memtables are flushed or a background error occurs.
    pub state_changed: Condvar,
    /// Signalled when there is background work.
    pub work_available: Condvar,
    pub writes: WriteQueue,
    /// Sequence number of the newest write visible to reads.
    pub visible_sequence: AtomicU64,
    pub snapshots: SnapshotList,
    pub shutting_down: AtomicBool,
    pub background: Mutex<Option<JoinHandle<()>>>,
    pub compaction_threads: Mutex<Vec<JoinHandle<()>>>,
    /// Background compactions hold it shared (they keep clear of each other through the
    /// version set's reservations); `compact_range` holds it exclusively and so runs alone.
    pub compaction_lock: parking_lot::RwLock<()>,
    /// The directory lock, released at shutdown.
    pub lock: Mutex<Option<Box<dyn FileLock>>>,
    /// Test pause points (`Db::set_sync_point`).
    #[cfg(feature = "test-hooks")]
    pub sync_points: crate::sync_point::SyncPoints,
}

impl Db {
    /// Opens (or creates) the database in `path`.
    ///
    /// Recovers every acknowledged write: replays the manifest, opens the live tables, replays
    /// the WALs newer than the last flush (dropping a torn tail record from a crash), and flushes
    /// what they held to a table. Fails with [`Error::Locked`] if another instance has the
    /// directory open, [`Error::NotADatabase`] for a directory holding something else,
    /// [`Error::UnsupportedVersion`] for a database from a newer format, and
    /// [`Error::Corruption`] for damaged metadata. A failed open changes nothing on disk.
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        let inner = crate::recovery::open(path.as_ref(), options)?;
        let db = Db {
            _guard: Arc::new(CloseOnDrop(Arc::clone(&inner))),
            inner,
        };
        crate::flush::start_background(&db.inner);
        crate::compaction::start_background(&db.inner);
        Ok(db)
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
        let mut batch = WriteBatch::new();
        batch.put(key, value);
        self.write(batch)
    }

    /// Removes `key` (no error if it is absent).
    pub fn delete<K: AsRef<[u8]>>(&self, key: K) -> Result<()> {
        let mut batch = WriteBatch::new();
        batch.delete(key);
        self.write(batch)
    }

    /// Applies a batch atomically: after a crash either all of it is there or none.
    pub fn write(&self, batch: WriteBatch) -> Result<()> {
        self.write_opt(batch, &WriteOptions::default())
    }

    /// [`Db::write`] with options (`sync` for durability across power loss).
    pub fn write_opt(&self, batch: WriteBatch, opts: &WriteOptions) -> Result<()> {
        self.inner.write(batch, opts.sync)
    }

    /// The value of `key`, or `None`.
    pub fn get<K: AsRef<[u8]>>(&self, key: K) -> Result<Option<Vec<u8>>> {
        let mut value = Vec::new();
        let found = self.get_into(key, &mut value)?;
        Ok(found.then_some(value))
    }

    /// [`Db::get`] reading as `opts` say (`fill_cache: false` leaves the block cache as it
    /// was: blocks it holds are used, others are read and dropped).
    pub fn get_opt<K: AsRef<[u8]>>(&self, key: K, opts: &ReadOptions) -> Result<Option<Vec<u8>>> {
        let mut value = Vec::new();
        let (view, seq) = self.inner.read_point();
        let found = self
            .inner
            .get_in(&view, key.as_ref(), seq, opts, &mut value)?;
        Ok(found.then_some(value))
    }

    /// Reads `key` into `buf` (cleared first); returns whether it was found. The value is copied
    /// once, straight from the memtable or the data block into `buf`, so a caller that reuses
    /// one buffer allocates nothing per lookup.
    pub fn get_into<K: AsRef<[u8]>>(&self, key: K, buf: &mut Vec<u8>) -> Result<bool> {
        buf.clear();
        let (view, seq) = self.inner.read_point();
        self.inner
            .get_in(&view, key.as_ref(), seq, &ReadOptions::default(), buf)
    }

    /// A consistent view of the database as of now.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::new(Arc::clone(&self.inner))
    }

    /// An iterator over all keys in order (`.rev()` for descending order). It owns what it
    /// reads (no borrow of `Db`) and can move to another thread; it sees the database as of its
    /// creation. Use [`DbIterator::seek`] to start at a key.
    pub fn iter(&self) -> DbIterator {
        self.iter_opt(&ReadOptions::default())
    }

    /// [`Db::iter`] reading as `opts` say (`fill_cache: false` for a scan that must not push
    /// the working set out of the block cache).
    pub fn iter_opt(&self, opts: &ReadOptions) -> DbIterator {
        let (view, seq) = self.inner.read_point();
        DbIterator::new(&self.inner, view, seq, KeyBounds::all(), None, opts.clone())
    }

    /// An iterator over the keys in `range`, any [`RangeBounds`](std::ops::RangeBounds) of
    /// byte strings: `db.range("a".."m")`, `db.range(b"k".to_vec()..)`,
    /// `db.range::<&[u8], _>((Bound::Excluded(start), Bound::Included(end)))`. Both bounds hold
    /// in both directions and after a [`DbIterator::seek`].
    ///
    /// ```
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
    pub fn range<K: AsRef<[u8]>, R: std::ops::RangeBounds<K>>(&self, range: R) -> DbIterator {
        let (view, seq) = self.inner.read_point();
        DbIterator::new(
            &self.inner,
            view,
            seq,
            KeyBounds::of(&range),
            None,
            ReadOptions::default(),
        )
    }

    /// An iterator over the keys that start with `prefix`, in order (`.rev()`: descending); it
    /// never yields another key. Tables whose prefix filter says the prefix is absent are
    /// skipped without being read.
    pub fn prefix_iter<P: AsRef<[u8]>>(&self, prefix: P) -> DbIterator {
        let (view, seq) = self.inner.read_point();
        prefix_iterator(&self.inner, view, seq, prefix.as_ref())
    }

    /// A cursor over all keys, both ways, that lends its key and value instead of copying them
    /// (RocksDB's `DBRawIterator`); unpositioned until a `seek*`.
    pub fn raw_iter(&self) -> RawIterator {
        let (view, seq) = self.inner.read_point();
        raw_iterator(&self.inner, &view, seq)
    }

    /// Flushes the memtable to an L0 table and waits until it (and any earlier one) is on disk.
    pub fn flush(&self) -> Result<()> {
        crate::flush::flush_and_wait(&self.inner)
    }

    /// Compacts the key range `[start, end]` (`None` = open end) down to the bottom level,
    /// reclaiming the space of overwritten and deleted keys; `compact_range(None, None)` rewrites
    /// the whole database. Flushes the memtable first. Waits until done.
    pub fn compact_range(&self, start: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.inner.check_open()?;
        crate::compaction::compact_range(&self.inner, start, end)
    }

    /// Waits until the tree is in shape (no level over its target, L0 below its trigger) and no
    /// compaction is running; the background threads do the work. Benchmarks call it so reads
    /// meet a settled tree. Fails with [`Error::Background`] if background work has failed
    /// (writes are stopped then), and with [`Error::Closed`] if the database closes meanwhile.
    pub fn wait_for_compaction(&self) -> Result<()> {
        self.inner.check_open()?;
        crate::compaction::wait_for_compaction(&self.inner)
    }

    /// A snapshot of the statistics.
    pub fn stats(&self) -> Stats {
        self.inner.counters.snapshot(self.inner.cache.stats())
    }

    /// Every level of the current tree (index = level), with the filters its tables were built
    /// with: where the filter memory went. The same figures as the `siftdb.levels` property.
    pub fn level_info(&self) -> Vec<LevelInfo> {
        let view = self.inner.read_view();
        crate::properties::level_reports(&self.inner, &view.version)
    }

    /// A named property (`siftdb.levels`, `siftdb.stats`, `siftdb.num-files-at-level<N>`,
    /// `siftdb.estimate-num-keys`, `siftdb.cur-size-all-mem-tables`), or `None` if unknown.
    pub fn property(&self, name: &str) -> Option<String> {
        crate::properties::property(&self.inner, name)
    }

    /// Installs `callback` at the named pause point (see the `sync_point` module); it runs on
    /// every thread that reaches the point until [`Db::clear_sync_point`]. Test builds only
    /// (cargo feature `test-hooks`).
    #[cfg(feature = "test-hooks")]
    pub fn set_sync_point(&self, name: &'static str, callback: impl Fn() + Send + Sync + 'static) {
        self.inner.sync_points.set(name, Arc::new(callback));
    }

    /// Removes the callback of a pause point. Test builds only (cargo feature `test-hooks`).
    #[cfg(feature = "test-hooks")]
    pub fn clear_sync_point(&self, name: &str) {
        self.inner.sync_points.clear(name);
    }

    /// Stops background work and waits for it. Further calls on any handle fail with
    /// [`Error::Closed`]. Acknowledged writes are already durable (or in the OS cache); `close`
    /// is not needed for safety, only for an orderly shutdown. Dropping the last handle closes too.
    pub fn close(&self) -> Result<()> {
        self.inner.shutdown();
        Ok(())
    }
}

impl DbInner {
    /// The tables and memtables a read sees: the view published last, one `Arc` clone under a
    /// read lock, never the state mutex that writers, flushes and compactions take.
    pub(crate) fn read_view(&self) -> Arc<ReadView> {
        Arc::clone(&self.view.read())
    }

    /// What a read uses: the published view, then the visible sequence number — in this order.
    ///
    /// Why the order: a compaction drops an old version of a key once a newer one exists and no
    /// registered snapshot needs the old one, and every table of a published view holds only
    /// sequence numbers that were visible before the view was published. A sequence loaded
    /// *after* the view is therefore at least as new as everything in its tables, so the newest
    /// version the view kept of any key is visible to the read. Loaded *before* the view, the
    /// sequence could predate an overwrite whose compaction removed the version the read should
    /// see (issue 11's race: the key seemed absent).
    pub(crate) fn read_point(&self) -> (Arc<ReadView>, u64) {
        let view = self.read_view();
        crate::sync_point::sync_point!(self, crate::sync_point::READ_SEQUENCE_AND_VIEW);
        let seq = self.visible_sequence.load(Ordering::Acquire);
        (view, seq)
    }

    /// Publishes the view of `state` for readers. Called, with the state lock held, by every
    /// change of the active memtable, the immutable memtables or the version, so that a reader
    /// that sees a write's sequence number also sees the memtable or table holding it (the
    /// write is made visible after the switch that created its memtable published it).
    pub(crate) fn publish_view(&self, state: &DbState) {
        let view = Arc::new(ReadView {
            mem: Arc::clone(&state.mem),
            imm: state.imm.iter().rev().cloned().collect(),
            version: self.versions.current(),
        });
        *self.view.write() = view;
    }

    /// The hash of `prefix`'s extracted prefix, which every table's prefix filter is probed with
    /// (`None`: no extractor, or `prefix` too short for it — no filter can rule it out).
    pub(crate) fn prefix_hash(&self, prefix: &[u8]) -> Option<u64> {
        let extractor = self.options.prefix_extractor.as_ref()?;
        extractor
            .prefix(prefix)
            .map(|p| self.options.filter_hasher.hash(p))
    }

    pub(crate) fn check_open(&self) -> Result<()> {
        if self.shutting_down.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        Ok(())
    }

    /// The value of `key` as of `seq` (a registered snapshot's sequence), in the current view.
    pub(crate) fn get_at(&self, key: &[u8], seq: u64, value: &mut Vec<u8>) -> Result<bool> {
        self.get_in(&self.read_view(), key, seq, &ReadOptions::default(), value)
    }

    /// The read path: memtables, then L0 newest first, then one table per deeper level. A found
    /// value is copied into `value` (cleared by the caller).
    pub(crate) fn get_in(
        &self,
        view: &ReadView,
        key: &[u8],
        seq: u64,
        opts: &ReadOptions,
        value: &mut Vec<u8>,
    ) -> Result<bool> {
        use std::sync::atomic::Ordering::Relaxed;
        self.check_open()?;
        self.counters.gets.fetch_add(1, Relaxed);
        for mem in std::iter::once(&view.mem).chain(view.imm.iter()) {
            match mem.get_into(key, seq, value) {
                Lookup::Found => {
                    self.counters.memtable_hits.fetch_add(1, Relaxed);
                    self.counters.gets_found.fetch_add(1, Relaxed);
                    return Ok(true);
                }
                Lookup::Deleted => {
                    self.counters.memtable_hits.fetch_add(1, Relaxed);
                    return Ok(false);
                }
                Lookup::NotFound => {}
            }
        }
        let found =
            self.get_from_tables(&view.version, key, seq, opts.fill_cache, value)? == Lookup::Found;
        if found {
            self.counters.gets_found.fetch_add(1, Relaxed);
        }
        Ok(found)
    }

    /// The tables that may hold the key, in the order that finds its newest version (L0 newest
    /// first, then one table per level); the first that holds any version decides.
    fn get_from_tables(
        &self,
        version: &Version,
        key: &[u8],
        seq: u64,
        fill_cache: bool,
        value: &mut Vec<u8>,
    ) -> Result<Lookup> {
        let head = crate::key_head::KeyHead::of(key);
        // One hash for every table: all filters of a database share its hasher (a table built
        // with another is refused at open).
        let hash = self.options.filter_hasher.hash(key);
        let mut candidates = version
            .level(0)
            .iter()
            .filter(move |f| f.contains_key_with_head(key, head))
            .map(|f| (0usize, f))
            .chain((1..version.num_levels()).filter_map(move |level| {
                version.find_with_head(level, key, head).map(|f| (level, f))
            }));
        // One table ahead: the next table's filter is fetched and its memory requested before
        // this table's filter is probed, so on a tree whose filters do not fit the CPU's caches
        // the two waits overlap. A failure to prepare a table only counts once it is reached.
        fn prepare<'v>(
            key: &[u8],
            hash: u64,
            fill_cache: bool,
            (level, file): (usize, &'v Arc<TableFile>),
        ) -> (usize, &'v TableFile, siftdb_sstable::Result<PreparedGet>) {
            let prepared = file.table.prepare_get_hashed(key, hash);
            (level, file, prepared.map(|p| p.filling_cache(fill_cache)))
        }
        let mut trace = GetTrace::default();
        let mut next = candidates.next().map(|c| prepare(key, hash, fill_cache, c));
        while let Some((level, file, prepared)) = next.take() {
            next = candidates.next().map(|c| prepare(key, hash, fill_cache, c));
            let got = file
                .table
                .get_prepared_into(key, seq, prepared?, &mut trace, value)?;
            self.counters.levels[level].record(&trace);
            if got != Lookup::NotFound {
                return Ok(got);
            }
        }
        Ok(Lookup::NotFound)
    }

    pub(crate) fn shutdown(&self) {
        if self.shutting_down.swap(true, Ordering::AcqRel) {
            return;
        }
        {
            let _state = self.state.lock();
            self.work_available.notify_all();
            self.state_changed.notify_all();
        }
        let handles = self
            .background
            .lock()
            .take()
            .into_iter()
            .chain(std::mem::take(&mut *self.compaction_threads.lock()));
        for handle in handles {
            if handle.thread().id() != std::thread::current().id() {
                let _ = handle.join();
            }
        }
        // Let another instance open the directory; this one's readers keep their open files.
        self.lock.lock().take();
    }
}

/// A prefix iterator over `view` at `seq`.
pub(crate) fn prefix_iterator(
    db: &Arc<DbInner>,
    view: Arc<ReadView>,
    seq: u64,
    prefix: &[u8],
) -> DbIterator {
    DbIterator::new(
        db,
        view,
        seq,
        KeyBounds::prefix(prefix),
        Some(prefix.to_vec()),
        ReadOptions::default(),
    )
}

/// A raw cursor over all of `view` at `seq`.
pub(crate) fn raw_iterator(db: &Arc<DbInner>, view: &ReadView, seq: u64) -> RawIterator {
    let all = KeyBounds::all();
    let spec = ScanSpec {
        bounds: &all,
        prefix: None,
        read: &ReadOptions::default(),
    };
    match merge_for(db, view, &spec) {
        Ok(merge) => RawIterator::new(Arc::clone(db), merge, seq),
        Err(e) => RawIterator::failed(Arc::clone(db), seq, e),
    }
}

/// Creates the shared block cache: shards of at least 4 MiB so a large table's filter block
/// (often over a megabyte) is never refused as oversize.
pub(crate) fn new_cache(capacity: usize) -> Arc<TableCache> {
    let shards = (capacity / (4 << 20)).max(1).next_power_of_two();
    let bits = shards.trailing_zeros().min(6) as u8;
    Arc::new(TableCache::new(
        CacheOptions::new(capacity).with_num_shard_bits(bits),
    ))
}
