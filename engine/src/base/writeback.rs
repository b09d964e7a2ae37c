//! Steady writeback of the files jobs write (`Options::bytes_per_sync`, RocksDB's): every so
//! many bytes, the OS is asked to start writing what a file holds so far.
//!
//! Without it, a flush's 64 MiB of blob file or table sits in the page cache until the flush's
//! `fdatasync`, which then waits for all of it at once while the WAL's pages compete for the
//! same disk; the memtables waiting for that flush stall the writers. Started early, the
//! writeback runs beside the writing, and the sync waits for the last stretch only.

use std::io::{self, Write};

use crate::base::fs::WritableFile;

/// `file`, with its writeback started every `bytes` bytes written (0: left to the OS).
pub(crate) fn every(file: Box<dyn WritableFile>, bytes: u64) -> Box<dyn WritableFile> {
    if bytes == 0 {
        return file;
    }
    Box::new(WritebackEvery {
        inner: file,
        every: bytes,
        pending: 0,
    })
}

/// A file that starts its own writeback every `every` bytes.
#[derive(Debug)]
struct WritebackEvery {
    inner: Box<dyn WritableFile>,
    every: u64,
    /// Bytes written since the last writeback was started (or the last sync).
    pending: u64,
}

impl Write for WritebackEvery {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.pending += n as u64;
        if self.pending >= self.every {
            self.inner.start_writeback()?;
            self.pending = 0;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl WritableFile for WritebackEvery {
    fn sync(&mut self) -> io::Result<()> {
        self.inner.sync()?;
        self.pending = 0;
        Ok(())
    }

    fn start_writeback(&mut self) -> io::Result<()> {
        self.inner.start_writeback()?;
        self.pending = 0;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::fs::{FileSystem, RealFs};

    /// Counts the writebacks started, as the real file's would be.
    #[derive(Debug, Default)]
    struct Counting {
        bytes: Vec<u8>,
        started: usize,
    }

    impl Write for Counting {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.bytes.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl WritableFile for Counting {
        fn sync(&mut self) -> io::Result<()> {
            Ok(())
        }
        fn start_writeback(&mut self) -> io::Result<()> {
            self.started += 1;
            Ok(())
        }
    }

    #[test]
    fn writeback_starts_every_so_many_bytes() {
        let mut file = WritebackEvery {
            inner: Box::new(Counting::default()),
            every: 1000,
            pending: 0,
        };
        for _ in 0..25 {
            file.write_all(&[7u8; 100]).unwrap_or_default();
        }
        assert_eq!(file.pending, 500);
        let debug = format!("{:?}", file.inner);
        assert!(debug.contains("started: 2"), "{debug}");
    }

    #[test]
    fn a_real_file_with_writeback_started_holds_every_byte() {
        // Exercises `sync_file_range` on Linux: ranges started while the file grows, then a
        // sync; the file reads back whole.
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
        let path = dir.path().join("f");
        let fs = RealFs;
        let mut file = every(fs.create(&path).unwrap_or_else(|e| panic!("{e}")), 4096);
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        for chunk in data.chunks(1000) {
            file.write_all(chunk).unwrap_or_else(|e| panic!("{e}"));
        }
        file.start_writeback().unwrap_or_else(|e| panic!("{e}"));
        file.sync().unwrap_or_else(|e| panic!("{e}"));
        drop(file);
        assert_eq!(fs.read(&path).unwrap_or_default(), data);
    }
}
