//! Read access to a table file: memory-mapped (default) or positional reads.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// Random read access to an immutable file. The engine's file-system layer hands tables these.
pub trait RandomAccessFile: Send + Sync + std::fmt::Debug {
    /// Reads exactly `len` bytes at `offset`; an error if the file is shorter.
    fn read_at(&self, offset: u64, len: usize) -> io::Result<Vec<u8>>;
    /// [`RandomAccessFile::read_at`] for a one-pass scan (a compaction reading its inputs):
    /// bytes read once and not again. A memory-mapped file answers it with `pread`, so the
    /// pages stay out of the mapping, and out of the process's resident set: a compaction
    /// that went through the mapping would leave every page of its inputs resident until the
    /// table is deleted. Other files read as `read_at` does.
    fn read_at_once(&self, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        self.read_at(offset, len)
    }
    /// [`RandomAccessFile::read_at_once`] into `buf` (exactly `buf.len()` bytes): a reader that
    /// reads ahead refills one buffer instead of allocating (and zeroing) a new one each time.
    fn read_into_once(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let bytes = self.read_at_once(offset, buf.len())?;
        if bytes.len() != buf.len() {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        buf.copy_from_slice(&bytes);
        Ok(())
    }
    /// File size in bytes.
    fn size(&self) -> u64;
}

/// How a table file is read, chosen once at open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ReadMode {
    /// `mmap` the file and copy blocks out of the mapping.
    #[default]
    Mmap,
    /// `pread` each block.
    Pread,
}

/// A table file read with `pread`.
#[derive(Debug)]
pub struct PreadFile {
    file: File,
    size: u64,
}

impl PreadFile {
    /// Wraps an open file.
    pub fn new(file: File) -> io::Result<PreadFile> {
        let size = file.metadata()?.len();
        Ok(PreadFile { file, size })
    }
}

impl RandomAccessFile for PreadFile {
    fn read_at(&self, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        let mut buf = vec![0u8; len];
        self.file.read_exact_at(&mut buf, offset)?;
        Ok(buf)
    }

    fn read_into_once(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.file.read_exact_at(buf, offset)
    }

    fn size(&self) -> u64 {
        self.size
    }
}

/// A table file read through a read-only memory map.
#[derive(Debug)]
pub struct MmapFile {
    map: Option<memmap2::Mmap>,
    /// The mapped file, read with `pread` for [`RandomAccessFile::read_at_once`] (`None`:
    /// built by [`MmapFile::new`] from a borrowed file, which reads everything through the map).
    file: Option<PreadFile>,
}

impl MmapFile {
    /// Maps an open file.
    ///
    /// Contract: the file is an immutable siftdb table, never truncated or rewritten while mapped
    /// (tables are written once under a new name and deleted only after their last reader is
    /// gone; the database directory lock keeps other siftdb processes out).
    pub fn new(file: &File) -> io::Result<MmapFile> {
        if file.metadata()?.len() == 0 {
            // Mapping an empty file fails on some platforms; there is nothing to read anyway.
            return Ok(MmapFile {
                map: None,
                file: None,
            });
        }
        // SAFETY: `Mmap::map` is unsafe because another process could modify or truncate the
        // file while it is mapped, which would change bytes under our slices or fault on access.
        // Table files are immutable once written (see the contract above), so the mapping stays
        // valid and unchanged for its lifetime. Exercised by `file::tests::mmap_reads_match_pread`,
        // the table tests that open in `ReadMode::Mmap` and siftdb-tests' model test (its
        // `Append` variant reads through maps, compactions included).
        let map = unsafe { memmap2::Mmap::map(file)? };
        Ok(MmapFile {
            map: Some(map),
            file: None,
        })
    }

    /// Maps `file` and keeps it open, so that one-pass reads
    /// ([`RandomAccessFile::read_at_once`]) bypass the mapping. The contract of
    /// [`MmapFile::new`] applies.
    pub fn with_file(file: File) -> io::Result<MmapFile> {
        let mut mapped = MmapFile::new(&file)?;
        // The map's length is the file's: no second `fstat`.
        let size = mapped.size();
        mapped.file = Some(PreadFile { file, size });
        Ok(mapped)
    }
}

impl RandomAccessFile for MmapFile {
    fn read_at(&self, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        let bytes: &[u8] = self.map.as_deref().unwrap_or(&[]);
        let start = usize::try_from(offset).map_err(|_| io::ErrorKind::UnexpectedEof)?;
        let end = start.checked_add(len).ok_or(io::ErrorKind::UnexpectedEof)?;
        bytes
            .get(start..end)
            .map(<[u8]>::to_vec)
            .ok_or_else(|| io::ErrorKind::UnexpectedEof.into())
    }

    fn read_at_once(&self, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        match &self.file {
            // The same immutable bytes as the map, without faulting them into it.
            Some(file) => file.read_at(offset, len),
            None => self.read_at(offset, len),
        }
    }

    fn read_into_once(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        match &self.file {
            Some(file) => file.read_into_once(offset, buf),
            None => {
                let bytes = self.read_at(offset, buf.len())?;
                buf.copy_from_slice(&bytes);
                Ok(())
            }
        }
    }

    fn size(&self) -> u64 {
        self.map.as_ref().map_or(0, |m| m.len() as u64)
    }
}

/// Opens `file` in `mode`.
pub fn open_random_access(file: File, mode: ReadMode) -> io::Result<Box<dyn RandomAccessFile>> {
    Ok(match mode {
        ReadMode::Mmap => Box::new(MmapFile::with_file(file)?),
        ReadMode::Pread => Box::new(PreadFile::new(file)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn mmap_reads_match_pread() {
        let mut tmp = tempfile::NamedTempFile::new().unwrap();
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7) as u8).collect();
        tmp.write_all(&data).unwrap();
        tmp.flush().unwrap();
        let m = open_random_access(tmp.reopen().unwrap(), ReadMode::Mmap).unwrap();
        let p = open_random_access(tmp.reopen().unwrap(), ReadMode::Pread).unwrap();
        assert_eq!(m.size(), 10_000);
        assert_eq!(p.size(), 10_000);
        let borrowed = MmapFile::new(&tmp.reopen().unwrap()).unwrap();
        for (off, len) in [(0u64, 10usize), (9_990, 10), (1234, 4000), (10_000, 0)] {
            let want = &data[off as usize..off as usize + len];
            for file in [&m, &p] {
                assert_eq!(file.read_at(off, len).unwrap(), want);
                assert_eq!(file.read_at_once(off, len).unwrap(), want);
            }
            assert_eq!(borrowed.read_at_once(off, len).unwrap(), want);
        }
        for file in [&m, &p] {
            assert!(file.read_at(9_995, 10).is_err());
            assert!(file.read_at_once(9_995, 10).is_err());
            assert!(file.read_at_once(u64::MAX, 1).is_err());
        }
        assert!(m.read_at(u64::MAX, 1).is_err());
        let empty = tempfile::NamedTempFile::new().unwrap();
        let e = open_random_access(empty.reopen().unwrap(), ReadMode::Mmap).unwrap();
        assert_eq!(e.size(), 0);
        assert!(e.read_at(0, 1).is_err());
    }
}
