//! The file-system layer: every byte the engine reads or writes goes through [`FileSystem`].
//!
//! The real implementation ([`RealFs`]) is the default; tests put a fault-injecting one underneath
//! (dropping unsynced data at a simulated crash, failing the Nth call, flipping bits) without
//! touching the engine.

use std::fmt::Debug;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use siftdb_sstable::{open_random_access, RandomAccessFile, ReadMode};

/// A file being written sequentially (WAL, table, manifest).
pub trait WritableFile: Write + Send + Debug {
    /// Makes everything written so far durable (`fdatasync`).
    fn sync(&mut self) -> io::Result<()>;

    /// Asks the OS to start writing to storage what has been written so far, without waiting
    /// for it and without promising anything (RocksDB's `RangeSync`, behind `bytes_per_sync`):
    /// the next [`sync`](WritableFile::sync) then has little left to write, and the disk works
    /// steadily instead of in one burst per sync. Durability stays with `sync`. The default
    /// does nothing; a buffering implementation hands its buffer to the OS first, and an error
    /// of that is an error of the write.
    fn start_writeback(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A held lock on a file; released on drop.
pub trait FileLock: Send + Sync + Debug {}

/// The operations the engine needs from a file system.
pub trait FileSystem: Send + Sync + Debug {
    /// Creates a directory and its parents.
    fn create_dir_all(&self, path: &Path) -> io::Result<()>;
    /// Creates (or truncates) a file for writing.
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>>;
    /// Opens an immutable file for random reads.
    fn open_random(&self, path: &Path, mode: ReadMode) -> io::Result<Box<dyn RandomAccessFile>>;
    /// Reads a whole file.
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// Opens a file for reading once from start to end (WAL replay streams its logs through
    /// this, so recovering a large log never holds it whole in memory). The default reads the
    /// whole file with [`FileSystem::read`] (correct, but recovery then holds each log in
    /// memory): a file system written before this method existed keeps working.
    fn open_sequential(&self, path: &Path) -> io::Result<Box<dyn Read + Send>> {
        Ok(Box::new(io::Cursor::new(self.read(path)?)))
    }
    /// Atomically renames `from` to `to` (replacing `to`).
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Deletes a file.
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// Names of the entries of a directory.
    fn list(&self, dir: &Path) -> io::Result<Vec<String>>;
    /// Whether a path exists.
    fn exists(&self, path: &Path) -> io::Result<bool>;
    /// Makes the directory's entries (creations, renames, deletions) durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Takes an exclusive lock on `path` (created if needed); `ErrorKind::WouldBlock` if another
    /// holder has it, in this process or another.
    fn lock(&self, path: &Path) -> io::Result<Box<dyn FileLock>>;
    /// Makes `to` a hard link of the immutable file `from` (checkpoints). The default says
    /// `Unsupported`, and the caller copies instead.
    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        let _ = (from, to);
        Err(io::ErrorKind::Unsupported.into())
    }
}

/// The operating system's file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealFs;

#[derive(Debug)]
struct RealWritable {
    inner: BufWriter<File>,
    /// Bytes handed to the OS (or buffered) so far.
    written: u64,
    /// Bytes whose writeback was started already.
    writeback_started: u64,
}

impl Write for RealWritable {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl WritableFile for RealWritable {
    fn sync(&mut self) -> io::Result<()> {
        self.inner.flush()?;
        self.inner.get_ref().sync_data()?;
        self.writeback_started = self.written;
        Ok(())
    }

    fn start_writeback(&mut self) -> io::Result<()> {
        self.inner.flush()?;
        let (from, to) = (self.writeback_started, self.written);
        if to > from {
            start_writeback_of(self.inner.get_ref(), from, to - from);
            self.writeback_started = to;
        }
        Ok(())
    }
}

/// Starts the writeback of `len` bytes of `file` from `offset` (`sync_file_range` with
/// `SYNC_FILE_RANGE_WRITE`: it queues the dirty pages for writing and returns). Its result is
/// ignored: it only hints, the data is made durable (and a writeback error reported) by the
/// `fdatasync` of [`WritableFile::sync`], which waits for every page, these included.
#[cfg(target_os = "linux")]
fn start_writeback_of(file: &File, offset: u64, len: u64) {
    use std::os::fd::AsRawFd;
    let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
        return;
    };
    // SAFETY: `sync_file_range` reads no memory of this process: it takes a file descriptor,
    // which `file` keeps open for the duration of the call, and two integers; an offset or
    // length beyond the file's end is allowed (the range is clipped by the kernel).
    unsafe {
        libc::sync_file_range(file.as_raw_fd(), offset, len, libc::SYNC_FILE_RANGE_WRITE);
    }
}

/// Elsewhere writeback is left to the OS (and to [`WritableFile::sync`]).
#[cfg(not(target_os = "linux"))]
fn start_writeback_of(_file: &File, _offset: u64, _len: u64) {}

#[derive(Debug)]
struct RealLock {
    _file: File,
}

impl FileLock for RealLock {}

impl FileSystem for RealFs {
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        std::fs::create_dir_all(path)
    }

    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        Ok(Box::new(RealWritable {
            inner: BufWriter::with_capacity(64 << 10, file),
            written: 0,
            writeback_started: 0,
        }))
    }

    fn open_random(&self, path: &Path, mode: ReadMode) -> io::Result<Box<dyn RandomAccessFile>> {
        open_random_access(File::open(path)?, mode)
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        std::fs::read(path)
    }

    fn open_sequential(&self, path: &Path) -> io::Result<Box<dyn Read + Send>> {
        // Unbuffered: the log reader asks for whole 32 KiB blocks.
        Ok(Box::new(File::open(path)?))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            names.push(entry?.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        Ok(names)
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        path.try_exists()
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::hard_link(from, to)
    }

    fn lock(&self, path: &Path) -> io::Result<Box<dyn FileLock>> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        match file.try_lock() {
            Ok(()) => Ok(Box::new(RealLock { _file: file })),
            Err(std::fs::TryLockError::WouldBlock) => Err(io::ErrorKind::WouldBlock.into()),
            Err(std::fs::TryLockError::Error(e)) => Err(e),
        }
    }
}

/// File names inside a database directory.
pub(crate) mod names {
    use super::{Path, PathBuf};

    /// The lock file.
    pub const LOCK: &str = "LOCK";
    /// Names the live manifest.
    pub const CURRENT: &str = "CURRENT";
    /// Options that shape on-disk data, recorded at creation.
    pub const OPTIONS: &str = "OPTIONS";

    /// `NNNNNN.log`: a write-ahead log.
    pub fn wal(dir: &Path, number: u64) -> PathBuf {
        dir.join(format!("{number:06}.log"))
    }

    /// `NNNNNN.sst`: a table.
    pub fn table(dir: &Path, number: u64) -> PathBuf {
        dir.join(format!("{number:06}.sst"))
    }

    /// `NNNNNN.blob`: a blob file (values kept apart from the tables).
    pub fn blob(dir: &Path, number: u64) -> PathBuf {
        dir.join(format!("{number:06}.blob"))
    }

    /// `MANIFEST-NNNNNN`: a manifest.
    pub fn manifest(dir: &Path, number: u64) -> PathBuf {
        dir.join(format!("MANIFEST-{number:06}"))
    }

    /// What a directory entry is, by its name.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    #[non_exhaustive]
    pub enum FileKind {
        /// A write-ahead log.
        Wal(u64),
        /// A table.
        Table(u64),
        /// A blob file.
        Blob(u64),
        /// A manifest.
        Manifest(u64),
        /// A temporary file (e.g. `CURRENT.tmp`).
        Temp,
        /// Anything else (`LOCK`, `CURRENT`, `OPTIONS`, foreign files).
        Other,
    }

    /// Classifies a directory entry name.
    pub fn parse(name: &str) -> FileKind {
        let number = |s: &str| s.parse::<u64>().ok();
        if let Some(n) = name.strip_suffix(".log").and_then(number) {
            FileKind::Wal(n)
        } else if let Some(n) = name.strip_suffix(".sst").and_then(number) {
            FileKind::Table(n)
        } else if let Some(n) = name.strip_suffix(".blob").and_then(number) {
            FileKind::Blob(n)
        } else if let Some(n) = name.strip_prefix("MANIFEST-").and_then(number) {
            FileKind::Manifest(n)
        } else if name.ends_with(".tmp") {
            FileKind::Temp
        } else {
            FileKind::Other
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_fs_lock_is_exclusive() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("LOCK");
        let held = RealFs.lock(&path).unwrap();
        let again = RealFs.lock(&path);
        assert_eq!(again.unwrap_err().kind(), io::ErrorKind::WouldBlock);
        drop(held);
        RealFs.lock(&path).unwrap();
    }

    /// A file system written before `open_sequential` existed: only `read` works.
    #[derive(Debug)]
    struct ReadsWhole;

    impl FileSystem for ReadsWhole {
        fn create_dir_all(&self, _: &Path) -> io::Result<()> {
            Err(io::ErrorKind::Unsupported.into())
        }
        fn create(&self, _: &Path) -> io::Result<Box<dyn WritableFile>> {
            Err(io::ErrorKind::Unsupported.into())
        }
        fn open_random(&self, _: &Path, _: ReadMode) -> io::Result<Box<dyn RandomAccessFile>> {
            Err(io::ErrorKind::Unsupported.into())
        }
        fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
            Ok(path.to_string_lossy().into_owned().into_bytes())
        }
        fn rename(&self, _: &Path, _: &Path) -> io::Result<()> {
            Err(io::ErrorKind::Unsupported.into())
        }
        fn remove(&self, _: &Path) -> io::Result<()> {
            Err(io::ErrorKind::Unsupported.into())
        }
        fn list(&self, _: &Path) -> io::Result<Vec<String>> {
            Err(io::ErrorKind::Unsupported.into())
        }
        fn exists(&self, _: &Path) -> io::Result<bool> {
            Err(io::ErrorKind::Unsupported.into())
        }
        fn sync_dir(&self, _: &Path) -> io::Result<()> {
            Err(io::ErrorKind::Unsupported.into())
        }
        fn lock(&self, _: &Path) -> io::Result<Box<dyn FileLock>> {
            Err(io::ErrorKind::Unsupported.into())
        }
    }

    #[test]
    fn open_sequential_defaults_to_the_whole_file() {
        let mut bytes = Vec::new();
        ReadsWhole
            .open_sequential(Path::new("/db/000007.log"))
            .unwrap()
            .read_to_end(&mut bytes)
            .unwrap();
        assert_eq!(bytes, b"/db/000007.log");
    }

    #[test]
    fn names_round_trip() {
        use names::*;
        let d = Path::new("/db");
        assert_eq!(parse("000007.log"), FileKind::Wal(7));
        assert_eq!(parse("000012.sst"), FileKind::Table(12));
        assert_eq!(parse("000013.blob"), FileKind::Blob(13));
        assert_eq!(blob(d, 13), Path::new("/db/000013.blob"));
        assert_eq!(parse("MANIFEST-000003"), FileKind::Manifest(3));
        assert_eq!(parse("CURRENT.tmp"), FileKind::Temp);
        assert_eq!(parse("LOCK"), FileKind::Other);
        assert_eq!(wal(d, 7), Path::new("/db/000007.log"));
    }
}
