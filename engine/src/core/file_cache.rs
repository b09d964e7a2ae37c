//! The table cache (`Options::max_open_files`; LevelDB's `TableCache`, Pebble's `FileCache`):
//! at most that many table files are open at once, database-wide.
//!
//! What it bounds is the file: the descriptor, and in `ReadMode::Mmap` the mapping with it. A
//! table's parsed parts — footer, properties, range tombstones, the top levels it holds — stay
//! with the live table, and its index, filter and data blocks stay in the block cache as
//! always, so a lookup whose blocks are cached never asks this cache, and a missing key's
//! filter probe costs what it did. Only a read from the file itself (a block-cache miss)
//! comes here: the file is still open (a *hit*), or it was closed to make room and is opened
//! again (a *miss*).
//!
//! Replacement is CLOCK, the approximation of LRU that needs no lock on a hit: a hit sets the
//! file's reference bit; making room sweeps the ring of open files, clearing set bits and
//! closing the first file found clear. A file being read when it is chosen stays open until that
//! read ends (readers hold the open file, not the slot), so the bound may be passed briefly by
//! the reads in flight — never by more than one file per reading thread.
//!
//! With `max_open_files = -1` tables are opened once, directly, and this cache is not in their
//! path at all.

use std::collections::VecDeque;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Weak};

use parking_lot::{Mutex, RwLock};
use siftdb_sstable::{RandomAccessFile, ReadMode, Ticker};

use crate::base::fs::FileSystem;

/// Open-file counters ([`Stats`](crate::Stats)'s `table_cache_*`).
#[derive(Debug, Default)]
struct FileCacheCounters {
    /// Reads that found their table's file open (bounded cache only; striped: every block read
    /// from a file bumps it, from every reading thread).
    hits: Ticker,
    /// Reads that found their table's file closed and opened it again.
    misses: AtomicU64,
    /// Table files opened: each table's first open, and every reopen after an eviction.
    opens: AtomicU64,
    /// Files closed to stay within the bound.
    evictions: AtomicU64,
}

/// See the module documentation.
pub(crate) struct FileCache {
    fs: Arc<dyn FileSystem>,
    mode: ReadMode,
    /// At most this many files open (`None`: unbounded, no file goes through the ring).
    limit: Option<usize>,
    /// Files now open through the cache.
    open: AtomicUsize,
    /// Every open file once, in CLOCK order (entries of dropped tables are skipped and pruned).
    ring: Mutex<VecDeque<Weak<Slot>>>,
    counters: FileCacheCounters,
}

/// One table's file, open or closed.
#[derive(Debug)]
struct Slot {
    path: PathBuf,
    size: u64,
    /// Readers clone the open file out, so closing it never waits for them.
    file: RwLock<Option<Arc<dyn RandomAccessFile>>>,
    /// CLOCK's reference bit: read since the sweep last passed.
    referenced: AtomicBool,
}

/// A table file read through the cache: what the table holds instead of the open file.
pub(crate) struct CachedFile {
    slot: Arc<Slot>,
    cache: Arc<FileCache>,
}

impl std::fmt::Debug for CachedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachedFile")
            .field("path", &self.slot.path)
            .field("open", &self.slot.file.read().is_some())
            .finish()
    }
}

impl FileCache {
    /// A cache opening files of `fs` in `mode`, bounded by `max_open_files` (`-1`: unbounded).
    pub(crate) fn new(fs: Arc<dyn FileSystem>, mode: ReadMode, max_open_files: i32) -> FileCache {
        FileCache {
            fs,
            mode,
            limit: usize::try_from(max_open_files).ok().filter(|n| *n > 0),
            open: AtomicUsize::new(0),
            ring: Mutex::new(VecDeque::new()),
            counters: FileCacheCounters::default(),
        }
    }

    /// Table files open through the cache now.
    #[cfg(test)]
    fn open_files(&self) -> usize {
        self.open.load(Relaxed)
    }

    /// Fills in `stats`' table cache fields.
    pub(crate) fn report(&self, stats: &mut crate::core::stats::Stats) {
        let c = &self.counters;
        stats.table_cache_hits = c.hits.load(Relaxed);
        stats.table_cache_misses = c.misses.load(Relaxed);
        stats.table_cache_opens = c.opens.load(Relaxed);
        stats.table_cache_evictions = c.evictions.load(Relaxed);
        stats.open_table_files = self.open.load(Relaxed) as u64;
    }

    /// Opens the table file at `path` for a new live table: through the cache when it is
    /// bounded, else directly.
    pub(crate) fn open_table_file(
        self: &Arc<Self>,
        path: PathBuf,
    ) -> io::Result<Box<dyn RandomAccessFile>> {
        if self.limit.is_none() {
            let file = self.fs.open_random(&path, self.mode)?;
            self.counters.opens.fetch_add(1, Relaxed);
            return Ok(file);
        }
        let file: Arc<dyn RandomAccessFile> = Arc::from(self.open_with_room(&path)?);
        // The size is fixed at the first open: tables are immutable.
        let slot = Arc::new(Slot {
            path,
            size: file.size(),
            file: RwLock::new(Some(file)),
            referenced: AtomicBool::new(true),
        });
        self.entered(&slot);
        Ok(Box::new(CachedFile {
            slot,
            cache: Arc::clone(self),
        }))
    }

    /// Opens `slot`'s file again (unless another reader just did).
    fn reopen(&self, slot: &Arc<Slot>) -> io::Result<Arc<dyn RandomAccessFile>> {
        let mut guard = slot.file.write();
        if let Some(file) = guard.as_ref() {
            return Ok(Arc::clone(file));
        }
        let file: Arc<dyn RandomAccessFile> = Arc::from(
            self.open_with_room(&slot.path)
                .map_err(|e| opened_again_error(&slot.path, e))?,
        );
        *guard = Some(Arc::clone(&file));
        drop(guard);
        self.entered(slot);
        Ok(file)
    }

    /// Counts `slot`'s file as open, enters it in the ring and makes room for it.
    fn entered(&self, slot: &Arc<Slot>) {
        self.counters.opens.fetch_add(1, Relaxed);
        self.open.fetch_add(1, Relaxed);
        let closed = {
            let mut ring = self.ring.lock();
            ring.push_back(Arc::downgrade(slot));
            self.sweep(&mut ring, self.limit.unwrap_or(usize::MAX))
        };
        drop(closed); // closed outside the ring's lock (`munmap` and `close` take time)
    }

    /// Opens the file; when the process is out of descriptors (the bound is set above what
    /// `ulimit -n` allows), closes half the cache's files and tries once more.
    fn open_with_room(&self, path: &Path) -> io::Result<Box<dyn RandomAccessFile>> {
        match self.fs.open_random(path, self.mode) {
            Err(e) if is_out_of_descriptors(&e) => {
                let closed = {
                    let mut ring = self.ring.lock();
                    self.sweep(&mut ring, self.open.load(Relaxed) / 2)
                };
                drop(closed);
                self.fs.open_random(path, self.mode)
            }
            result => result,
        }
    }

    /// CLOCK: closes files until at most `target` are open (or every open file was passed
    /// twice: the rest are being read). Returns the closed files, to be dropped without the lock.
    fn sweep(
        &self,
        ring: &mut VecDeque<Weak<Slot>>,
        target: usize,
    ) -> Vec<Arc<dyn RandomAccessFile>> {
        let mut closed = Vec::new();
        let mut passes = 2 * ring.len() + 1;
        while self.open.load(Relaxed) > target && passes > 0 {
            passes -= 1;
            let Some(weak) = ring.pop_front() else { break };
            let Some(slot) = weak.upgrade() else {
                continue; // its table is gone; it gave its count back when dropped
            };
            if slot.referenced.swap(false, Relaxed) {
                ring.push_back(weak);
                continue;
            }
            let taken = slot.file.try_write().map(|mut file| file.take());
            match taken {
                Some(Some(file)) => {
                    self.open.fetch_sub(1, Relaxed);
                    self.counters.evictions.fetch_add(1, Relaxed);
                    closed.push(file);
                }
                Some(None) => {} // closed already: not in the ring any more
                None => ring.push_back(weak), // being opened or closed right now
            }
        }
        // Tables dropped while open leave dead entries; prune them before they pile up.
        if ring.len() > 2 * self.open.load(Relaxed) + 64 {
            ring.retain(|w| w.strong_count() > 0);
        }
        closed
    }
}

impl CachedFile {
    /// The open file: the slot's, or opened again.
    fn file(&self) -> io::Result<Arc<dyn RandomAccessFile>> {
        if !self.slot.referenced.load(Relaxed) {
            self.slot.referenced.store(true, Relaxed);
        }
        if let Some(file) = self.slot.file.read().as_ref() {
            self.cache.counters.hits.fetch_add(1, Relaxed);
            return Ok(Arc::clone(file));
        }
        self.cache.counters.misses.fetch_add(1, Relaxed);
        self.cache.reopen(&self.slot)
    }
}

impl RandomAccessFile for CachedFile {
    fn read_at(&self, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        self.file()?.read_at(offset, len)
    }

    fn read_at_once(&self, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        self.file()?.read_at_once(offset, len)
    }

    fn read_into_once(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.file()?.read_into_once(offset, buf)
    }

    fn size(&self) -> u64 {
        self.slot.size
    }
}

impl Drop for CachedFile {
    /// The table is gone: its file closes and its place in the bound is free.
    fn drop(&mut self) {
        if self.slot.file.write().take().is_some() {
            self.cache.open.fetch_sub(1, Relaxed);
        }
    }
}

/// `EMFILE` / `ENFILE`: no descriptor left in the process or the system.
fn is_out_of_descriptors(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(23 | 24))
}

/// A table file that cannot be opened again says which, and why that may be: a database
/// opened read-only beside a writer keeps tables the writer may delete, and a closed one is
/// gone for it.
fn opened_again_error(path: &Path, e: io::Error) -> io::Error {
    if e.kind() == io::ErrorKind::NotFound {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!(
                "table file {} is gone since the table cache closed it (a read-only instance \
                 beside a writer loses the tables the writer deletes; `max_open_files = -1` \
                 keeps every table open)",
                path.display()
            ),
        )
    } else {
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::fs::RealFs;

    /// `files` table-like files of distinct bytes in a temporary directory.
    fn files(n: usize) -> (tempfile::TempDir, Vec<PathBuf>) {
        let dir = tempfile::tempdir().unwrap();
        let paths = (0..n)
            .map(|i| {
                let path = dir.path().join(format!("{i:06}.sst"));
                std::fs::write(&path, vec![i as u8; 4096 + i]).unwrap();
                path
            })
            .collect();
        (dir, paths)
    }

    #[test]
    fn reads_stay_right_and_within_the_bound_under_eviction() {
        for mode in [ReadMode::Pread, ReadMode::Mmap] {
            let (_dir, paths) = files(24);
            let cache = Arc::new(FileCache::new(Arc::new(RealFs), mode, 4));
            let opened: Vec<_> = paths
                .iter()
                .map(|p| cache.open_table_file(p.clone()).unwrap())
                .collect();
            assert!(cache.open_files() <= 4, "{mode:?}: {}", cache.open_files());
            std::thread::scope(|s| {
                for t in 0..4usize {
                    let (opened, cache) = (&opened, &cache);
                    s.spawn(move || {
                        for n in 0..2_000usize {
                            let i = (n * 7 + t * 5) % opened.len();
                            let file = &opened[i];
                            assert_eq!(file.size(), 4096 + i as u64);
                            let bytes = file.read_at(i as u64, 64).unwrap();
                            assert!(bytes.iter().all(|b| *b == i as u8), "file {i}");
                            // Readers in flight may hold one closed file each beyond the bound.
                            assert!(cache.open_files() <= 4 + 4);
                        }
                    });
                }
            });
            let c = &cache.counters;
            assert!(c.misses.load(Relaxed) > 0 && c.evictions.load(Relaxed) > 0);
            // Every open is a first open or a miss; two readers missing the same closed file
            // at once open it once.
            let (opens, misses) = (c.opens.load(Relaxed), c.misses.load(Relaxed));
            assert!(
                opens > 24 && opens <= 24 + misses,
                "{mode:?}: {opens} opens, {misses} misses"
            );
            drop(opened);
            assert_eq!(
                cache.open_files(),
                0,
                "dropped tables give their places back"
            );
        }
    }

    #[test]
    fn a_file_gone_since_it_was_closed_is_a_clear_error() {
        let (_dir, paths) = files(3);
        let cache = Arc::new(FileCache::new(Arc::new(RealFs), ReadMode::Pread, 1));
        let first = cache.open_table_file(paths[0].clone()).unwrap();
        let _second = cache.open_table_file(paths[1].clone()).unwrap(); // closes the first
        std::fs::remove_file(&paths[0]).unwrap();
        let err = first.read_at(0, 8).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert!(err.to_string().contains("000000.sst"), "{err}");
    }

    #[test]
    fn unbounded_keeps_every_file_open_without_the_ring() {
        let (_dir, paths) = files(5);
        let cache = Arc::new(FileCache::new(Arc::new(RealFs), ReadMode::Pread, -1));
        let opened: Vec<_> = paths
            .iter()
            .map(|p| cache.open_table_file(p.clone()).unwrap())
            .collect();
        for (i, f) in opened.iter().enumerate() {
            assert_eq!(f.read_at(0, 1).unwrap(), vec![i as u8]);
        }
        assert_eq!(cache.open_files(), 0);
        assert_eq!(cache.counters.opens.load(Relaxed), 5);
        assert_eq!(cache.counters.hits.load(Relaxed), 0);
        assert!(cache.ring.lock().is_empty());
    }
}
