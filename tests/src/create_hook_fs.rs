//! The real file system with one call replaced: how files are created. Tests that slow
//! creation down or wrap the files written (to hold a `sync` at a gate) need nothing else.

use std::io;
use std::path::Path;

use siftdb::fs::{FileLock, FileSystem, RealFs, WritableFile};
use siftdb::{RandomAccessFile, ReadMode};

/// [`RealFs`], but `create` is the given function's.
pub struct CreateHookFs<F>(pub F);

impl<F> std::fmt::Debug for CreateHookFs<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CreateHookFs")
    }
}

impl<F> FileSystem for CreateHookFs<F>
where
    F: Fn(&Path) -> io::Result<Box<dyn WritableFile>> + Send + Sync,
{
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        RealFs.create_dir_all(path)
    }
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        (self.0)(path)
    }
    fn open_random(&self, path: &Path, mode: ReadMode) -> io::Result<Box<dyn RandomAccessFile>> {
        RealFs.open_random(path, mode)
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        RealFs.read(path)
    }
    fn open_sequential(&self, path: &Path) -> io::Result<Box<dyn io::Read + Send>> {
        RealFs.open_sequential(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        RealFs.rename(from, to)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        RealFs.remove(path)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        RealFs.list(dir)
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        RealFs.exists(path)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        RealFs.sync_dir(dir)
    }
    fn lock(&self, path: &Path) -> io::Result<Box<dyn FileLock>> {
        RealFs.lock(path)
    }
}
