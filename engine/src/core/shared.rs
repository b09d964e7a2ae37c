//! What the readers, writers and background jobs of one open database share: its directory,
//! file system, options, block cache, counters, the state cell, the version set and the
//! snapshots. A job is handed this — never the database handle — and reaches nothing else: not
//! the write queue, not the background threads, not the directory lock.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};
use siftdb_cache::FalsePositiveMemo;
use siftdb_sstable::TableCache;

use crate::base::error::{Error, Result};
use crate::base::fs::FileSystem;
use crate::base::options::Options;
use crate::core::closed_wals::ClosedWals;
use crate::core::events::Events;
use crate::core::file_cache::FileCache;
use crate::core::file_deleter::FileDeleter;
use crate::core::live_tables::LiveTables;
use crate::core::lock_order::{Rank, Ranked};
use crate::core::snapshot_list::SnapshotList;
use crate::core::state::StateCell;
use crate::core::stats::EngineCounters;
use crate::core::version_set::VersionSet;

/// See the module documentation.
pub(crate) struct Shared {
    dir: PathBuf,
    options: Options,
    fs: Arc<dyn FileSystem>,
    cache: Arc<TableCache>,
    /// This open's namespace in the block cache, which other databases may share
    /// (`Options::block_cache`): see [`Shared::cache_id`]. Released after `drop` erased its
    /// blocks.
    cache_namespace: CacheNamespace,
    /// The memo of hot false positives every table consults (`None`: off).
    memo: Option<Arc<FalsePositiveMemo>>,
    counters: EngineCounters,
    /// The table cache: the bound on open table files.
    files: Arc<FileCache>,
    /// Tables referenced by a reader (never deleted under it).
    live_tables: Arc<LiveTables>,
    /// Obsolete tables on their way to the deleter thread.
    file_deleter: Arc<FileDeleter>,
    /// The listeners' queue (`Options::listeners`).
    events: Events,
    state: Arc<StateCell>,
    /// The trees' metadata and the manifest.
    versions: VersionSet,
    snapshots: SnapshotList,
    deletions: FileDeletions,
    /// Logs a WAL switch closed before they were durable.
    closed_wals: ClosedWals,
    /// Opened by `Db::open_read_only`: no writes, no background work, no file changes.
    read_only: bool,
    shutting_down: AtomicBool,
    /// One flush at a time: the single flush thread takes it for each flush (uncontended), and
    /// in stepped mode it keeps two callers of `Db::step_flush` from flushing one memtable
    /// twice (see `core/lock_order.rs`).
    flushes: Mutex<()>,
    /// Opened with `Db::open_stepped`: no background thread runs; the test steps flushes and
    /// compactions itself, and writes never stall (see `Db::open_stepped`).
    #[cfg(feature = "test-hooks")]
    stepped: AtomicBool,
}

/// The parts [`Shared`] is made of, named (see [`Shared::new`]).
pub(crate) struct SharedParts {
    pub dir: PathBuf,
    pub options: Options,
    pub cache: Arc<TableCache>,
    pub memo: Option<Arc<FalsePositiveMemo>>,
    pub state: Arc<StateCell>,
    pub versions: VersionSet,
    pub read_only: bool,
    /// The listeners' queue (also in the state, for background errors and stalls).
    pub events: Events,
}

impl Shared {
    /// The shared state of a database being opened.
    pub(crate) fn new(parts: SharedParts) -> Shared {
        let files = Arc::new(FileCache::new(
            Arc::clone(&parts.options.fs),
            parts.options.read_mode,
            parts.options.max_open_files,
        ));
        let file_deleter = Arc::new(FileDeleter::new(parts.events.clone()));
        let live_tables = Arc::new(LiveTables::new(
            Arc::clone(&parts.options.fs),
            parts.dir.clone(),
            Arc::clone(&file_deleter),
        ));
        Shared {
            files,
            live_tables,
            file_deleter,
            events: parts.events,
            dir: parts.dir,
            fs: Arc::clone(&parts.options.fs),
            options: parts.options,
            cache: parts.cache,
            cache_namespace: CacheNamespace::acquire(),
            memo: parts.memo,
            counters: EngineCounters::default(),
            state: parts.state,
            versions: parts.versions,
            snapshots: SnapshotList::default(),
            deletions: FileDeletions::default(),
            closed_wals: ClosedWals::default(),
            read_only: parts.read_only,
            shutting_down: AtomicBool::new(false),
            flushes: Mutex::new(()),
            #[cfg(feature = "test-hooks")]
            stepped: AtomicBool::new(false),
        }
    }

    /// The database directory.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The database's options (a keyspace's tree options are in its `KeyspaceTree`).
    pub(crate) fn options(&self) -> &Options {
        &self.options
    }

    pub(crate) fn fs(&self) -> &Arc<dyn FileSystem> {
        &self.fs
    }

    /// Creates a table or blob file a flush or compaction writes: paced by the rate limiter at
    /// `priority`, its writeback started every `bytes_per_sync` bytes.
    pub(crate) fn create_output(
        &self,
        path: &std::path::Path,
        priority: crate::base::rate_limiter::IoPriority,
    ) -> std::io::Result<Box<dyn crate::base::fs::WritableFile>> {
        let options = self.options();
        let file = crate::base::writeback::every(self.fs.create(path)?, options.bytes_per_sync);
        Ok(crate::base::rate_limiter::paced(
            file,
            options.rate_limiter.as_ref(),
            priority,
        ))
    }

    /// Creates a WAL, its writeback started every `wal_bytes_per_sync` bytes.
    pub(crate) fn create_wal(
        &self,
        number: u64,
    ) -> std::io::Result<Box<dyn crate::base::fs::WritableFile>> {
        let file = self
            .fs
            .create(&crate::base::fs::names::wal(&self.dir, number))?;
        Ok(crate::base::writeback::every(
            file,
            self.options().wal_bytes_per_sync,
        ))
    }

    pub(crate) fn cache(&self) -> &Arc<TableCache> {
        &self.cache
    }

    /// The id table or blob file `number` is cached under. One block cache may serve several
    /// databases (`Options::block_cache`), whose file numbers repeat; so the id is the number
    /// with this open's namespace above bit 40. A database would need 2^40 file numbers
    /// (a trillion files) before two of its own ids met.
    pub(crate) fn cache_id(&self, number: u64) -> u64 {
        (self.cache_namespace.0 << CACHE_NAMESPACE_SHIFT) | (number & CACHE_NUMBER_MASK)
    }

    /// Drops the cached blocks of table `number` (it is gone, or was only staged).
    pub(crate) fn uncache_table(&self, number: u64) {
        self.cache.erase_table(self.cache_id(number));
    }

    pub(crate) fn memo(&self) -> Option<&Arc<FalsePositiveMemo>> {
        self.memo.as_ref()
    }

    pub(crate) fn counters(&self) -> &EngineCounters {
        &self.counters
    }

    /// The table cache.
    pub(crate) fn files(&self) -> &Arc<FileCache> {
        &self.files
    }

    /// Tables referenced by a reader.
    pub(crate) fn live_tables(&self) -> &Arc<LiveTables> {
        &self.live_tables
    }

    /// Obsolete tables on their way to the deleter thread.
    pub(crate) fn file_deleter(&self) -> &FileDeleter {
        &self.file_deleter
    }

    /// Waits until the obsolete tables queued so far are deleted — unless the user disabled
    /// deletions (`Db::disable_file_deletions`): then they stay until enabled again.
    pub(crate) fn drain_deletions(&self) {
        if !self.deletions.disabled() {
            self.file_deleter.drain();
        }
    }

    /// The listeners' queue.
    pub(crate) fn events(&self) -> &Events {
        &self.events
    }

    /// The state lock and its condition variables.
    pub(crate) fn state(&self) -> &StateCell {
        &self.state
    }

    pub(crate) fn versions(&self) -> &VersionSet {
        &self.versions
    }

    pub(crate) fn snapshots(&self) -> &SnapshotList {
        &self.snapshots
    }

    pub(crate) fn deletions(&self) -> &FileDeletions {
        &self.deletions
    }

    /// The logs WAL switches closed before they were durable (see `core/closed_wals.rs`).
    pub(crate) fn closed_wals(&self) -> &ClosedWals {
        &self.closed_wals
    }

    pub(crate) fn read_only(&self) -> bool {
        self.read_only
    }

    #[cfg(feature = "test-hooks")]
    pub(crate) fn sync_points(&self) -> &crate::base::sync_point::SyncPoints {
        self.state.sync_points()
    }

    /// The right to flush a memtable, until the guard drops (one flush at a time).
    pub(crate) fn flush_role(&self) -> Ranked<MutexGuard<'_, ()>> {
        Ranked::take(Rank::Flush, || self.flushes.lock())
    }

    /// Whether background work is stepped by the caller (`Db::open_stepped`) instead of run by
    /// threads: waits for a flush or compaction then do it inline, and writes never stall.
    pub(crate) fn stepped(&self) -> bool {
        #[cfg(feature = "test-hooks")]
        return self.stepped.load(Ordering::Acquire);
        #[cfg(not(feature = "test-hooks"))]
        false
    }

    /// Switches to stepped background work (before any background thread would start).
    #[cfg(feature = "test-hooks")]
    pub(crate) fn set_stepped(&self) {
        self.stepped.store(true, Ordering::Release);
    }

    /// Whether the database is closing (background loops end, calls fail with `Closed`).
    pub(crate) fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::Acquire)
    }

    /// Starts closing; `false` if it had started already. Wakes every waiter so that it sees.
    pub(crate) fn begin_shutdown(&self) -> bool {
        if self.shutting_down.swap(true, Ordering::AcqRel) {
            return false;
        }
        {
            let _state = self.state.lock();
            self.state.notify_all();
        }
        self.file_deleter.begin_closing();
        true
    }

    /// Fails with [`Error::Closed`] once the database is closing.
    pub(crate) fn check_open(&self) -> Result<()> {
        if self.is_shutting_down() {
            return Err(Error::Closed);
        }
        Ok(())
    }

    /// Fails with [`Error::ReadOnly`] for a read-only open.
    pub(crate) fn check_writable(&self) -> Result<()> {
        if self.read_only {
            return Err(Error::ReadOnly);
        }
        Ok(())
    }
}

/// Whether obsolete files may be deleted now: a checkpoint pauses deletion while it links and
/// copies files.
#[derive(Default)]
pub(crate) struct FileDeletions {
    /// Held by a deletion from its pause check to its last deletion, and by a checkpoint while
    /// it pauses deletions.
    lock: Mutex<()>,
    /// While above zero (a checkpoint is copying files), no file is deleted.
    paused: AtomicUsize,
    /// Of `paused`, the pauses `Db::disable_file_deletions` holds (waits for deletions do not
    /// wait while there are any: nothing would end them).
    disabled: AtomicUsize,
}

impl FileDeletions {
    /// The right to delete files until the guard drops; `None` while deletions are paused.
    pub(crate) fn begin(&self) -> Option<Ranked<MutexGuard<'_, ()>>> {
        let guard = Ranked::take(Rank::FileDeletions, || self.lock.lock());
        (self.paused.load(Ordering::Acquire) == 0).then_some(guard)
    }

    /// Pauses deletions, after any deletion under way has finished.
    pub(crate) fn pause(&self) {
        let _deleting = Ranked::take(Rank::FileDeletions, || self.lock.lock());
        self.paused.fetch_add(1, Ordering::AcqRel);
    }

    /// Ends one [`FileDeletions::pause`].
    pub(crate) fn resume(&self) {
        self.paused.fetch_sub(1, Ordering::AcqRel);
    }

    /// Pauses deletions until [`FileDeletions::enable`] (`Db::disable_file_deletions`).
    pub(crate) fn disable(&self) {
        self.pause();
        self.disabled.fetch_add(1, Ordering::AcqRel);
    }

    /// Ends one [`FileDeletions::disable`]; false if none was in effect.
    pub(crate) fn enable(&self) -> bool {
        let ended = self
            .disabled
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok();
        if ended {
            self.resume();
        }
        ended
    }

    /// Whether `Db::disable_file_deletions` holds deletions.
    pub(crate) fn disabled(&self) -> bool {
        self.disabled.load(Ordering::Acquire) > 0
    }

    /// Pauses deletions until the guard drops (however the caller's step ends).
    pub(crate) fn paused(&self) -> PausedDeletions<'_> {
        self.pause();
        PausedDeletions(self)
    }
}

/// Deletions paused while it lives ([`FileDeletions::paused`]).
pub(crate) struct PausedDeletions<'a>(&'a FileDeletions);

impl Drop for PausedDeletions<'_> {
    fn drop(&mut self) {
        self.0.resume();
    }
}

impl Drop for Shared {
    /// A database's blocks leave a cache other databases share when the last user of its state
    /// goes: nothing will read them again, and the next open caches under a new namespace.
    fn drop(&mut self) {
        if self.options.block_cache.is_some() {
            let first = self.cache_id(0);
            self.cache.erase_tables(first..=first | CACHE_NUMBER_MASK);
        }
    }
}

/// Where an open's namespace starts in a cache id ([`Shared::cache_id`]).
const CACHE_NAMESPACE_SHIFT: u32 = 40;
const CACHE_NUMBER_MASK: u64 = (1 << CACHE_NAMESPACE_SHIFT) - 1;

/// How many namespaces there are: 23 bits above bit 40, so no id reaches
/// [`RESERVATION_TABLE_ID`](siftdb_sstable::RESERVATION_TABLE_ID) (all ones).
const CACHE_NAMESPACES: u64 = 1 << 23;

/// The namespaces of the opens alive in this process.
static LIVE_CACHE_NAMESPACES: parking_lot::Mutex<std::collections::BTreeSet<u64>> =
    parking_lot::Mutex::new(std::collections::BTreeSet::new());

/// One open's namespace in the block cache: no other live open of the process has it (a
/// namespace is handed out again only after its open is gone, and with it its blocks).
struct CacheNamespace(u64);

impl CacheNamespace {
    fn acquire() -> CacheNamespace {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let mut live = LIVE_CACHE_NAMESPACES.lock();
        // Ends within a few steps unless millions of databases are open at once.
        loop {
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % CACHE_NAMESPACES;
            if live.insert(n) {
                return CacheNamespace(n);
            }
        }
    }
}

impl Drop for CacheNamespace {
    fn drop(&mut self) {
        LIVE_CACHE_NAMESPACES.lock().remove(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_cache_namespaces_are_distinct_and_released_on_drop() {
        let held: Vec<CacheNamespace> = (0..100).map(|_| CacheNamespace::acquire()).collect();
        let ids: std::collections::BTreeSet<u64> = held.iter().map(|n| n.0).collect();
        assert_eq!(ids.len(), 100);
        assert!(ids.iter().all(|&n| n < CACHE_NAMESPACES));
        let first = held[0].0;
        drop(held);
        assert!(!LIVE_CACHE_NAMESPACES.lock().contains(&first));
    }
}
