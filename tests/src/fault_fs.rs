//! A file system in memory that can lose power.
//!
//! It keeps, for every file, the bytes written and how many of them were synced, and for the
//! directory both the live names and the names as of the last directory sync. [`FaultFs::crash`]
//! freezes it (every later call fails, as if the machine were off), and
//! [`FaultFs::restart`] brings back only what was durable: names as of the last `sync_dir`, each
//! file cut to its synced length (optionally keeping a torn part of the unsynced tail), or
//! [`FaultFs::restart_scrambled`] with every unsynced 4 KiB page kept, zeroed or garbage on its
//! own, as unordered page writeback leaves a disk. It can also fail the Nth call from now (an I/O
//! error), make it panic (a file system that panics), cut the power at it
//! ([`FaultFs::crash_call_in`]), and fail the Nth sync the way a disk does
//! ([`FaultFs::fail_sync_in`]: the file's unsynced pages are gone, as after Linux's failed
//! `fsync`, so retrying the sync cannot bring them back).

use std::collections::{BTreeMap, HashSet};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use siftdb::fs::{FileLock, FileSystem, WritableFile};
use siftdb_sstable::{RandomAccessFile, ReadMode};

#[derive(Debug, Default, Clone)]
struct FileData {
    data: Vec<u8>,
    synced: usize,
}

#[derive(Debug, Default, Clone)]
struct State {
    /// File contents by id.
    files: BTreeMap<u64, FileData>,
    /// Live directory: path → file id.
    names: BTreeMap<PathBuf, u64>,
    /// Directory as of the last `sync_dir`.
    durable_names: BTreeMap<PathBuf, u64>,
    next_id: u64,
    dirs: HashSet<PathBuf>,
    locks: HashSet<PathBuf>,
    crashed: bool,
    /// Fail the call when this reaches zero.
    fail_in: Option<u64>,
    /// Panic in the call when this reaches zero.
    panic_in: Option<u64>,
    /// Cut the power at the call when this reaches zero (it and every later call fail).
    crash_in: Option<u64>,
    /// Fail the sync when this reaches zero, dropping the file's unsynced bytes.
    fail_sync_in: Option<u64>,
    calls: u64,
    syncs: u64,
    /// Writebacks started (`WritableFile::start_writeback`).
    writebacks: u64,
    /// The file whose sync [`FaultFs::fail_sync_in`] failed, by its name then.
    failed_sync: Option<PathBuf>,
    /// Bytes all files may hold together; a write past it fails with `StorageFull` and writes
    /// nothing. Survives restarts (a full disk stays full).
    space_limit: Option<u64>,
    /// Random-access files (tables) that may be open at once; one more fails with `EMFILE`,
    /// as the process's descriptor limit (`ulimit -n`) makes `open` fail.
    descriptor_limit: Option<usize>,
    /// Random-access files open now (given out and not dropped).
    open_readers: usize,
}

impl State {
    /// Bytes of the files the directory names (a removed file's space is free at once).
    fn used_bytes(&self) -> u64 {
        let live: HashSet<u64> = self.names.values().copied().collect();
        self.files
            .iter()
            .filter(|(id, _)| live.contains(id))
            .map(|(_, f)| f.data.len() as u64)
            .sum()
    }
}

/// The fault-injecting file system (cheap to clone: clones share the state).
#[derive(Debug, Clone, Default)]
pub struct FaultFs {
    state: Arc<Mutex<State>>,
}

fn gone() -> io::Error {
    io::Error::other("simulated power loss: the machine is off")
}

impl FaultFs {
    /// An empty file system.
    pub fn new() -> FaultFs {
        FaultFs::default()
    }

    fn lock_state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock only happens in a failing test; keep going.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts a call; fails it if the machine is off or the injected failure is due, cuts the
    /// power at it, or panics in it.
    fn enter(&self) -> io::Result<MutexGuard<'_, State>> {
        let mut s = self.lock_state();
        if s.crashed {
            return Err(gone());
        }
        s.calls += 1;
        if due(&mut s.crash_in) {
            s.crashed = true;
            return Err(gone());
        }
        if due(&mut s.panic_in) {
            drop(s);
            panic!("injected file-system panic");
        }
        if due(&mut s.fail_in) {
            return Err(io::Error::other("injected I/O failure"));
        }
        Ok(s)
    }

    /// An independent copy of the whole file system (files, names, durable state).
    pub fn deep_clone(&self) -> FaultFs {
        let mut state = self.lock_state().clone();
        state.locks.clear();
        state.open_readers = 0; // the copy's files are not open
        FaultFs {
            state: Arc::new(Mutex::new(state)),
        }
    }

    /// Size of the file at `path`, if it exists.
    pub fn file_len(&self, path: &Path) -> Option<usize> {
        let s = self.lock_state();
        let id = s.names.get(path)?;
        s.files.get(id).map(|f| f.data.len())
    }

    /// Calls made so far.
    pub fn calls(&self) -> u64 {
        self.lock_state().calls
    }

    /// Makes the `n`th call from now (0 = the next one) fail once.
    pub fn fail_call_in(&self, n: u64) {
        self.lock_state().fail_in = Some(n);
    }

    /// Makes the `n`th call from now panic (once), as a file system with a bug would.
    pub fn panic_call_in(&self, n: u64) {
        self.lock_state().panic_in = Some(n);
    }

    /// Cuts the power at the `n`th call from now: it and every later call fail until
    /// [`FaultFs::restart`].
    pub fn crash_call_in(&self, n: u64) {
        self.lock_state().crash_in = Some(n);
    }

    /// Makes the `n`th sync from now (of a file; directory syncs do not count) fail, dropping
    /// that file's unsynced bytes: after a failed `fsync` the kernel may have discarded the dirty
    /// pages, so a later sync that succeeds does not make them durable.
    pub fn fail_sync_in(&self, n: u64) {
        self.lock_state().fail_sync_in = Some(n);
    }

    /// The file whose sync failed through [`FaultFs::fail_sync_in`], if one did.
    pub fn failed_sync(&self) -> Option<PathBuf> {
        self.lock_state().failed_sync.clone()
    }

    /// Limits the bytes all files may hold together (`None`: no limit): a write past the limit
    /// fails with `ErrorKind::StorageFull` and writes nothing, until files are removed or the
    /// limit is raised. The limit survives restarts.
    pub fn set_space_limit(&self, limit: Option<u64>) {
        self.lock_state().space_limit = limit;
    }

    /// Limits the random-access files (tables) open at once (`None`: no limit): opening one
    /// more fails with the OS's "too many open files" (`EMFILE`) until one is dropped.
    pub fn set_descriptor_limit(&self, limit: Option<usize>) {
        self.lock_state().descriptor_limit = limit;
    }

    /// Random-access files (tables) open now.
    pub fn open_readers(&self) -> usize {
        self.lock_state().open_readers
    }

    /// Bytes all files hold together (what [`FaultFs::set_space_limit`] counts).
    pub fn used_bytes(&self) -> u64 {
        self.lock_state().used_bytes()
    }

    /// File syncs made so far.
    pub fn syncs(&self) -> u64 {
        self.lock_state().syncs
    }

    /// Writebacks started so far (`bytes_per_sync`, `wal_bytes_per_sync`).
    pub fn writebacks(&self) -> u64 {
        self.lock_state().writebacks
    }

    /// Power loss: every later call fails until [`FaultFs::restart`].
    pub fn crash(&self) {
        self.lock_state().crashed = true;
    }

    /// Back on after a crash: only durable state survives. `keep_torn` keeps that many bytes of
    /// each file's unsynced tail (a torn write).
    pub fn restart(&self, keep_torn: usize) {
        let mut s = self.lock_state();
        s.names = s.durable_names.clone();
        for f in s.files.values_mut() {
            let keep = (f.synced + keep_torn).min(f.data.len());
            f.data.truncate(keep);
            f.synced = keep;
        }
        let live: HashSet<u64> = s.names.values().copied().collect();
        s.files.retain(|id, _| live.contains(id));
        s.locks.clear();
        s.crashed = false;
        s.clear_injections();
    }

    /// Back on after a crash, as unordered page writeback leaves a disk: names as of the last
    /// `sync_dir`, and in each file the synced bytes intact while every unsynced 4 KiB page
    /// (counted from the file's start) independently survives, reads as zeros, or holds
    /// garbage, and the file keeps a length between its synced length and all it was written
    /// (its size may or may not have reached the disk). `seed` picks the outcome.
    pub fn restart_scrambled(&self, seed: u64) {
        let mut rng = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let mut s = self.lock_state();
        s.names = s.durable_names.clone();
        for f in s.files.values_mut() {
            let unsynced = f.data.len() - f.synced;
            let len = f.synced + (next() % (unsynced as u64 + 1)) as usize;
            f.data.truncate(len);
            let mut page = f.synced / PAGE * PAGE;
            while page < len {
                let start = page.max(f.synced);
                let end = (page + PAGE).min(len);
                match next() % 3 {
                    0 => {}
                    1 => f.data[start..end].fill(0),
                    _ => f.data[start..end]
                        .iter_mut()
                        .for_each(|b| *b = next() as u8),
                }
                page += PAGE;
            }
            f.synced = len;
        }
        let live: HashSet<u64> = s.names.values().copied().collect();
        s.files.retain(|id, _| live.contains(id));
        s.locks.clear();
        s.crashed = false;
        s.clear_injections();
    }

    /// Clears an injected failure and the locks of dropped instances, keeping every byte (no
    /// power loss): the state after a failed call in a process that is then restarted.
    pub fn restart_without_loss(&self) {
        let mut s = self.lock_state();
        s.clear_injections();
        s.crashed = false;
        s.locks.clear();
    }

    /// Flips bit `bit` of byte `offset` of the file at `path` (for corruption tests).
    pub fn flip_bit(&self, path: &Path, offset: usize, bit: u8) -> bool {
        let mut s = self.lock_state();
        let Some(&id) = s.names.get(path) else {
            return false;
        };
        match s.files.get_mut(&id).and_then(|f| f.data.get_mut(offset)) {
            Some(b) => {
                *b ^= 1 << (bit % 8);
                true
            }
            None => false,
        }
    }

    /// Cuts the file at `path` to `len` bytes (at most its length), as a power loss leaves a
    /// file whose later pages and size update never reached the disk; false if there is no
    /// such file.
    pub fn truncate(&self, path: &Path, len: usize) -> bool {
        let mut s = self.lock_state();
        let Some(&id) = s.names.get(path) else {
            return false;
        };
        match s.files.get_mut(&id) {
            Some(f) => {
                f.data.truncate(len);
                f.synced = f.synced.min(f.data.len());
                true
            }
            None => false,
        }
    }

    /// Paths of live files.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.lock_state().names.keys().cloned().collect()
    }
}

/// The page size of [`FaultFs::restart_scrambled`]: the unit page-cache writeback loses.
const PAGE: usize = 4096;

/// Counts down an injection; true when it is due now (then it is cleared).
fn due(slot: &mut Option<u64>) -> bool {
    match slot {
        Some(0) => {
            *slot = None;
            true
        }
        Some(n) => {
            *n -= 1;
            false
        }
        None => false,
    }
}

impl State {
    fn clear_injections(&mut self) {
        self.fail_in = None;
        self.panic_in = None;
        self.crash_in = None;
        self.fail_sync_in = None;
    }
}

#[derive(Debug)]
struct FaultWritable {
    fs: FaultFs,
    id: u64,
}

impl Write for FaultWritable {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut s = self.fs.enter()?;
        if s.space_limit
            .is_some_and(|limit| s.used_bytes() + buf.len() as u64 > limit)
        {
            return Err(io::Error::new(
                io::ErrorKind::StorageFull,
                "no space left on device (FaultFs space limit)",
            ));
        }
        let f = s
            .files
            .get_mut(&self.id)
            .ok_or_else(|| io::Error::other("file deleted"))?;
        f.data.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        self.fs.enter().map(|_| ())
    }
}

impl WritableFile for FaultWritable {
    /// A call like any other: it can fail, panic or cut the power as the Nth. The hint itself
    /// changes nothing here, since any unsynced bytes may already survive a power loss
    /// (`restart_scrambled`) or be lost.
    fn start_writeback(&mut self) -> io::Result<()> {
        let mut s = self.fs.enter()?;
        s.writebacks += 1;
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        let mut s = self.fs.enter()?;
        s.syncs += 1;
        let failed = due(&mut s.fail_sync_in);
        if failed {
            let name = s
                .names
                .iter()
                .find(|(_, id)| **id == self.id)
                .map(|(p, _)| p.clone());
            s.failed_sync = name;
            let Some(f) = s.files.get_mut(&self.id) else {
                return Ok(());
            };
            // The dirty pages are gone; what was synced before stays.
            f.data.truncate(f.synced);
            return Err(io::Error::other(
                "injected fsync failure (unsynced pages dropped)",
            ));
        }
        if let Some(f) = s.files.get_mut(&self.id) {
            f.synced = f.data.len();
        }
        Ok(())
    }
}

#[derive(Debug)]
struct FaultRandom {
    data: Vec<u8>,
    /// Gives the descriptor back when dropped.
    fs: FaultFs,
}

impl Drop for FaultRandom {
    fn drop(&mut self) {
        let mut s = self.fs.lock_state();
        s.open_readers = s.open_readers.saturating_sub(1);
    }
}

impl RandomAccessFile for FaultRandom {
    fn read_at(&self, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        let start = usize::try_from(offset).map_err(|_| io::ErrorKind::UnexpectedEof)?;
        let end = start.checked_add(len).ok_or(io::ErrorKind::UnexpectedEof)?;
        self.data
            .get(start..end)
            .map(<[u8]>::to_vec)
            .ok_or_else(|| io::ErrorKind::UnexpectedEof.into())
    }
    fn size(&self) -> u64 {
        self.data.len() as u64
    }
}

/// A file read from start to end. It reads the file's bytes as they are at each read, as an
/// open file does (a file removed after the open stays readable until a restart); once the
/// power is cut every read fails, as every call does.
#[derive(Debug)]
struct FaultSequential {
    fs: FaultFs,
    id: u64,
    pos: usize,
}

impl io::Read for FaultSequential {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let s = self.fs.lock_state();
        if s.crashed {
            return Err(gone());
        }
        let data = s.files.get(&self.id).map_or(&[][..], |f| f.data.as_slice());
        let rest = data.get(self.pos..).unwrap_or_default();
        let n = rest.len().min(buf.len());
        buf[..n].copy_from_slice(&rest[..n]);
        self.pos += n;
        Ok(n)
    }
}

#[derive(Debug)]
struct FaultLock {
    fs: FaultFs,
    path: PathBuf,
}

impl FileLock for FaultLock {}

impl Drop for FaultLock {
    fn drop(&mut self) {
        self.fs.lock_state().locks.remove(&self.path);
    }
}

fn not_found() -> io::Error {
    io::ErrorKind::NotFound.into()
}

impl FileSystem for FaultFs {
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        self.enter()?.dirs.insert(path.to_path_buf());
        Ok(())
    }

    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let mut s = self.enter()?;
        let id = s.next_id;
        s.next_id += 1;
        s.files.insert(id, FileData::default());
        s.names.insert(path.to_path_buf(), id);
        Ok(Box::new(FaultWritable {
            fs: self.clone(),
            id,
        }))
    }

    fn open_random(&self, path: &Path, _mode: ReadMode) -> io::Result<Box<dyn RandomAccessFile>> {
        let mut s = self.enter()?;
        if s.descriptor_limit
            .is_some_and(|limit| s.open_readers >= limit)
        {
            return Err(io::Error::from_raw_os_error(24)); // EMFILE
        }
        let id = s.names.get(path).ok_or_else(not_found)?;
        let data = s.files.get(id).map(|f| f.data.clone()).unwrap_or_default();
        s.open_readers += 1;
        Ok(Box::new(FaultRandom {
            data,
            fs: self.clone(),
        }))
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        let s = self.enter()?;
        let id = s.names.get(path).ok_or_else(not_found)?;
        Ok(s.files.get(id).map(|f| f.data.clone()).unwrap_or_default())
    }

    /// One call, like [`FileSystem::read`] (the reads after it are not counted, so a sweep
    /// over an open's calls sees the same calls as when recovery read whole files).
    fn open_sequential(&self, path: &Path) -> io::Result<Box<dyn io::Read + Send>> {
        let s = self.enter()?;
        let id = *s.names.get(path).ok_or_else(not_found)?;
        Ok(Box::new(FaultSequential {
            fs: self.clone(),
            id,
            pos: 0,
        }))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut s = self.enter()?;
        let id = s.names.remove(from).ok_or_else(not_found)?;
        s.names.insert(to.to_path_buf(), id);
        Ok(())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        let mut s = self.enter()?;
        s.names.remove(path).ok_or_else(not_found)?;
        Ok(())
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let s = self.enter()?;
        Ok(s.names
            .keys()
            .filter(|p| p.parent() == Some(dir))
            .filter_map(|p| p.file_name()?.to_str().map(str::to_string))
            .collect())
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        let s = self.enter()?;
        Ok(s.dirs.contains(path) || s.names.contains_key(path))
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut s = self.enter()?;
        let live: Vec<(PathBuf, u64)> = s
            .names
            .iter()
            .filter(|(p, _)| p.parent() == Some(dir))
            .map(|(p, id)| (p.clone(), *id))
            .collect();
        s.durable_names.retain(|p, _| p.parent() != Some(dir));
        s.durable_names.extend(live);
        Ok(())
    }

    /// A second name for the file `from` names: the same bytes (synced or not) under both; the
    /// new name is durable only after its directory is synced, as a real link's is.
    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut s = self.enter()?;
        if s.names.contains_key(to) {
            return Err(io::ErrorKind::AlreadyExists.into());
        }
        let id = *s.names.get(from).ok_or_else(not_found)?;
        s.names.insert(to.to_path_buf(), id);
        Ok(())
    }

    fn lock(&self, path: &Path) -> io::Result<Box<dyn FileLock>> {
        let mut s = self.enter()?;
        if !s.locks.insert(path.to_path_buf()) {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        Ok(Box::new(FaultLock {
            fs: self.clone(),
            path: path.to_path_buf(),
        }))
    }
}
