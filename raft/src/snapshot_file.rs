//! The snapshot file: the state keyspace's entries at one point, with the snapshot's metadata,
//! checked end to end by a CRC.
//!
//! ```text
//! file    := magic "SIFTRSNP" | u32 version (1 or 2) | u32 meta_len | meta | record* | end
//! meta    := SnapshotMeta, postcard-encoded (last log id, last membership, snapshot id)
//! record  := entry | table (version 2)
//! entry   := u32 key_len | u32 value_len | key | value
//! table   := u32 0xFFFF_FFFE | u64 len | len bytes: a table file (SstFileWriter's)
//! end     := u32 0xFFFF_FFFF | u64 records | u32 crc32 of every byte before it
//! ```
//! Integers are little-endian. Version 2 (written since siftdb-raft carried its state as table
//! files) holds tables, in key order and not overlapping: the follower ingests them as they
//! are, instead of rebuilding tables from entries. Version 1 files (entries only) still read. A node keeps one current snapshot, `current.snap`, replaced by
//! rename; files being built or received end in `.part` and are removed when the store opens.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, Write};
use std::path::{Path, PathBuf};

use openraft::SnapshotMeta;

use crate::codec::{decode, encode};
use crate::{Error, KeyValue, NodeId};

/// The metadata openraft keeps with a snapshot.
pub type Meta = SnapshotMeta<NodeId, openraft::BasicNode>;

/// The current snapshot's file name.
pub(crate) const CURRENT: &str = "current.snap";
/// How the names of files snapshots are received into begin (see [`part_path`]).
pub(crate) const RECEIVING: &str = "receiving";
const MAGIC: &[u8; 8] = b"SIFTRSNP";
const VERSION: u32 = 2;
/// The oldest version this build reads.
const FIRST_VERSION: u32 = 1;
const END: u32 = u32::MAX;
/// Marks a table record (version 2).
const TABLE: u32 = u32::MAX - 1;
/// Bounds on what one entry may claim (siftdb's own limits), so that damaged lengths fail
/// cleanly instead of asking for gigabytes.
const MAX_KEY: usize = siftdb::MAX_KEY_SIZE;
const MAX_VALUE: usize = siftdb::MAX_VALUE_SIZE;

/// Writes a snapshot file entry by entry.
pub(crate) struct SnapshotWriter<W: Write> {
    out: W,
    crc: crc32fast::Hasher,
    entries: u64,
}

impl<W: Write> SnapshotWriter<W> {
    /// Starts a file with `meta`.
    pub(crate) fn new(out: W, meta: &Meta) -> Result<Self, Error> {
        Self::with_version(out, meta, VERSION)
    }

    /// Starts a file of format `version` (tests write version 1 files, as older builds did).
    fn with_version(out: W, meta: &Meta, version: u32) -> Result<Self, Error> {
        let meta = encode("snapshot meta", meta)?;
        let mut writer = SnapshotWriter {
            out,
            crc: crc32fast::Hasher::new(),
            entries: 0,
        };
        writer.put(MAGIC)?;
        writer.put(&version.to_le_bytes())?;
        writer.put(&len_u32(meta.len())?.to_le_bytes())?;
        writer.put(&meta)?;
        Ok(writer)
    }

    /// Appends the table file at `path` (on `fs`, the database's file system) whole, as one
    /// record.
    pub(crate) fn table(
        &mut self,
        fs: &dyn siftdb::fs::FileSystem,
        path: &Path,
    ) -> Result<(), Error> {
        let file = fs
            .open_random(path, siftdb::ReadMode::Pread)
            .map_err(siftdb::Error::Io)?;
        let len = file.size();
        self.put(&TABLE.to_le_bytes())?;
        self.put(&len.to_le_bytes())?;
        let mut offset = 0;
        while offset < len {
            let want = usize::try_from(len - offset).map_or(1 << 20, |l| l.min(1 << 20));
            let chunk = file.read_at(offset, want).map_err(siftdb::Error::Io)?;
            if chunk.is_empty() {
                return Err(Error::corrupt("snapshot table", "shorter than its length"));
            }
            self.put(&chunk)?;
            offset += chunk.len() as u64;
        }
        self.entries += 1;
        Ok(())
    }

    /// Appends one key-value pair (version 1's records; this build writes tables).
    #[cfg(test)]
    pub(crate) fn entry(&mut self, key: &[u8], value: &[u8]) -> Result<(), Error> {
        self.put(&len_u32(key.len())?.to_le_bytes())?;
        self.put(&len_u32(value.len())?.to_le_bytes())?;
        self.put(key)?;
        self.put(value)?;
        self.entries += 1;
        Ok(())
    }

    /// Writes the end record; returns the output.
    pub(crate) fn finish(mut self) -> Result<W, Error> {
        self.put(&END.to_le_bytes())?;
        self.put(&self.entries.to_le_bytes())?;
        let crc = self.crc.clone().finalize();
        self.out.write_all(&crc.to_le_bytes())?;
        self.out.flush()?;
        Ok(self.out)
    }

    fn put(&mut self, bytes: &[u8]) -> Result<(), Error> {
        self.crc.update(bytes);
        self.out.write_all(bytes)?;
        Ok(())
    }
}

fn len_u32(len: usize) -> Result<u32, Error> {
    u32::try_from(len)
        .ok()
        .filter(|l| *l < TABLE)
        .ok_or_else(|| Error::corrupt("snapshot entry", format!("{len} bytes is too long")))
}

/// One record of a snapshot file.
pub(crate) enum Record {
    Entry(KeyValue),
    /// A table file of this many bytes: read it with [`SnapshotReader::copy_table`] before the
    /// next record.
    Table(u64),
}

/// Reads a snapshot file record by record; the CRC is checked when the end record is reached.
pub(crate) struct SnapshotReader<R: Read> {
    input: R,
    crc: crc32fast::Hasher,
    entries: u64,
    version: u32,
    done: bool,
}

impl<R: Read> SnapshotReader<R> {
    /// Reads the header; returns the reader and the snapshot's metadata.
    pub(crate) fn new(input: R) -> Result<(Self, Meta), Error> {
        let mut reader = SnapshotReader {
            input,
            crc: crc32fast::Hasher::new(),
            entries: 0,
            version: 0,
            done: false,
        };
        let magic = reader.take(MAGIC.len())?;
        if magic != MAGIC {
            return Err(Error::corrupt(
                "snapshot",
                "not a siftdb-raft snapshot file",
            ));
        }
        let version = reader.u32()?;
        reader.version = version;
        if !(FIRST_VERSION..=VERSION).contains(&version) {
            return Err(Error::corrupt(
                "snapshot",
                format!("unknown version {version}"),
            ));
        }
        let meta_len = reader.u32()? as usize;
        if meta_len > MAX_KEY {
            return Err(Error::corrupt("snapshot", "metadata too long"));
        }
        let meta = decode("snapshot meta", &reader.take(meta_len)?)?;
        Ok((reader, meta))
    }

    /// The next record, or `None` after the end record (whose count and CRC must match).
    pub(crate) fn next_record(&mut self) -> Result<Option<Record>, Error> {
        if self.done {
            return Ok(None);
        }
        let key_len = self.u32()?;
        if key_len == END {
            return self.end().map(|()| None);
        }
        if key_len == TABLE && self.version >= 2 {
            let mut len = [0u8; 8];
            self.fill(&mut len)?;
            self.entries += 1;
            return Ok(Some(Record::Table(u64::from_le_bytes(len))));
        }
        let value_len = self.u32()? as usize;
        let key_len = key_len as usize;
        if key_len > MAX_KEY || value_len > MAX_VALUE {
            return Err(Error::corrupt(
                "snapshot",
                "entry longer than siftdb allows",
            ));
        }
        let key = self.take(key_len)?;
        let value = self.take(value_len)?;
        self.entries += 1;
        Ok(Some(Record::Entry((key, value))))
    }

    /// Copies the `len` bytes of the table record just read into `out`.
    pub(crate) fn copy_table(&mut self, len: u64, out: &mut dyn Write) -> Result<(), Error> {
        let mut buf = vec![0u8; 1 << 16];
        let mut left = len;
        while left > 0 {
            let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
            let n = self.input.read(&mut buf[..want])?;
            if n == 0 {
                return Err(truncated(io::ErrorKind::UnexpectedEof.into()));
            }
            self.crc.update(&buf[..n]);
            out.write_all(&buf[..n])?;
            left -= n as u64;
        }
        Ok(())
    }

    /// Reads every record to the end (tables into nothing): checks the file whole.
    pub(crate) fn check_to_end(&mut self) -> Result<(), Error> {
        while let Some(record) = self.next_record()? {
            if let Record::Table(len) = record {
                self.copy_table(len, &mut io::sink())?;
            }
        }
        Ok(())
    }

    fn end(&mut self) -> Result<(), Error> {
        let mut count = [0u8; 8];
        self.fill(&mut count)?;
        let expected = self.crc.clone().finalize();
        let mut stored = [0u8; 4];
        self.input.read_exact(&mut stored).map_err(truncated)?;
        if u32::from_le_bytes(stored) != expected || u64::from_le_bytes(count) != self.entries {
            return Err(Error::corrupt(
                "snapshot",
                "checksum or entry count mismatch",
            ));
        }
        let mut rest = [0u8; 1];
        if self.input.read(&mut rest)? != 0 {
            return Err(Error::corrupt("snapshot", "bytes after the end record"));
        }
        self.done = true;
        Ok(())
    }

    fn u32(&mut self) -> Result<u32, Error> {
        let mut bytes = [0u8; 4];
        self.fill(&mut bytes)?;
        Ok(u32::from_le_bytes(bytes))
    }

    fn fill(&mut self, buf: &mut [u8]) -> Result<(), Error> {
        self.input.read_exact(buf).map_err(truncated)?;
        self.crc.update(buf);
        Ok(())
    }

    /// `len` bytes, read without trusting `len` for the allocation.
    fn take(&mut self, len: usize) -> Result<Vec<u8>, Error> {
        let mut buf = Vec::new();
        (&mut self.input).take(len as u64).read_to_end(&mut buf)?;
        if buf.len() != len {
            return Err(truncated(io::ErrorKind::UnexpectedEof.into()));
        }
        self.crc.update(&buf);
        Ok(buf)
    }
}

fn truncated(e: io::Error) -> Error {
    if e.kind() == io::ErrorKind::UnexpectedEof {
        Error::corrupt("snapshot", "file ends early")
    } else {
        Error::Io(e)
    }
}

/// Reads a whole snapshot file (as a node's `snapshot/current.snap` holds it, or as openraft
/// streams it): its metadata and its key-value pairs in key order. Damaged or truncated bytes
/// are [`Error::Corrupt`]; nothing is trusted before the end record's checksum matches. The
/// table files of a version 2 file are read through a temporary directory.
///
/// ```
/// # fn main() -> Result<(), siftdb_raft::Error> {
/// let damaged = b"SIFTRSNP\x01\x00\x00\x00";
/// assert!(siftdb_raft::read_snapshot(&damaged[..]).is_err());
/// # Ok(())
/// # }
/// ```
pub fn read_snapshot(input: impl Read) -> Result<(Meta, Vec<KeyValue>), Error> {
    let (mut reader, meta) = SnapshotReader::new(input)?;
    let mut scratch = None;
    let mut entries = Vec::new();
    let mut tables = Vec::new();
    while let Some(record) = reader.next_record()? {
        match record {
            Record::Entry(entry) => entries.push(entry),
            Record::Table(len) => {
                let dir = match &scratch {
                    Some(dir) => dir,
                    None => scratch.insert(tempfile::tempdir()?),
                };
                let path = dir.path().join(format!("{}.sst", tables.len()));
                let mut out = BufWriter::new(File::create(&path)?);
                reader.copy_table(len, &mut out)?;
                out.flush()?;
                tables.push(path);
            }
        }
    }
    // Only now, the checksum matched: the tables are what the leader wrote.
    for path in tables {
        let table = siftdb::SstFileReader::open(&path, &siftdb::Options::default())?;
        for entry in table.iter() {
            let entry = entry?;
            if entry.kind != siftdb::SstEntryKind::Put {
                return Err(Error::corrupt(
                    "snapshot table",
                    "holds an entry that is not a put",
                ));
            }
            entries.push((entry.key, entry.value));
        }
    }
    Ok((meta, entries))
}

/// The metadata of the snapshot file at `path`, if there is one.
pub(crate) fn read_meta(path: &Path) -> Result<Option<Meta>, Error> {
    Ok(open_current(path)?.map(|(meta, _)| meta))
}

/// The current snapshot, if there is one: its metadata and a handle at its start. One open
/// serves both, so a newer file renamed over it meanwhile cannot mix with it.
pub(crate) fn open_current(path: &Path) -> Result<Option<(Meta, File)>, Error> {
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let (_, meta) = SnapshotReader::new(BufReader::new(&mut file))?;
    file.seek(io::SeekFrom::Start(0))?;
    Ok(Some((meta, file)))
}

/// A new file for a snapshot being built or received: `<dir>/<what>-<unique>.part`.
pub(crate) fn part_path(dir: &Path, what: &str) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    dir.join(format!("{what}-{}-{n}.part", std::process::id()))
}

/// Creates `path` for writing through a buffer.
pub(crate) fn create(path: &Path) -> Result<BufWriter<File>, Error> {
    Ok(BufWriter::new(File::create(path)?))
}

/// Makes the finished file at `part` durable and, if it is not older than the current one,
/// the current snapshot (by rename, then a directory sync). Returns whether it became current.
pub(crate) fn publish(dir: &Path, part: &Path, meta: &Meta) -> Result<bool, Error> {
    File::open(part)?.sync_all()?;
    let current = dir.join(CURRENT);
    let older = match read_meta(&current) {
        Ok(found) => found.is_some_and(|c| c.last_log_id > meta.last_log_id),
        // A damaged current snapshot is worth nothing: any whole one replaces it.
        Err(Error::Corrupt { .. }) => false,
        Err(e) => return Err(e),
    };
    if older {
        return Ok(false);
    }
    std::fs::rename(part, &current)?;
    File::open(dir)?.sync_all()?;
    Ok(true)
}

/// Removes the `.part` files (and directories) an interrupted build or receive left.
pub(crate) fn remove_partial_files(dir: &Path) -> Result<(), Error> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "part") {
            if path.is_dir() {
                std::fs::remove_dir_all(&path)?; // the tables of a snapshot being built
            } else {
                std::fs::remove_file(&path)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use openraft::{LogId, StoredMembership};

    fn meta() -> Meta {
        Meta {
            last_log_id: Some(LogId::new(openraft::CommittedLeaderId::new(3, 1), 42)),
            last_membership: StoredMembership::default(),
            snapshot_id: "3-1-42-x".to_string(),
        }
    }

    fn file(entries: &[(&[u8], &[u8])]) -> Vec<u8> {
        let mut w = SnapshotWriter::new(Vec::new(), &meta()).unwrap();
        for (k, v) in entries {
            w.entry(k, v).unwrap();
        }
        w.finish().unwrap()
    }

    /// A version 2 file carrying `keys` as two table files.
    fn table_file(keys: usize) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let options = siftdb::Options::default();
        let mut sink = crate::table_sink::TableSink::new(dir.path(), &options);
        for i in 0..keys {
            if i == keys / 2 {
                sink.finish_file().unwrap();
            }
            sink.put(format!("key{i:04}").as_bytes(), b"value").unwrap();
        }
        let mut w = SnapshotWriter::new(Vec::new(), &meta()).unwrap();
        for table in sink.finish().unwrap() {
            w.table(&siftdb::fs::RealFs, &table).unwrap();
        }
        w.finish().unwrap()
    }

    #[test]
    fn a_file_of_tables_round_trips() {
        let (m, entries) = read_all(&table_file(100)).unwrap();
        assert_eq!(m, meta());
        assert_eq!(entries.len(), 100);
        assert_eq!(entries[99], (b"key0099".to_vec(), b"value".to_vec()));
    }

    #[test]
    fn a_version_1_file_still_reads() {
        let mut w = SnapshotWriter::with_version(Vec::new(), &meta(), 1).unwrap();
        w.entry(b"a", b"1").unwrap();
        let bytes = w.finish().unwrap();
        assert_eq!(
            read_all(&bytes).unwrap().1,
            vec![(b"a".to_vec(), b"1".to_vec())]
        );
        // A table record is not version 1's.
        let tables = table_file(4);
        let mut v1 = tables.clone();
        v1[8..12].copy_from_slice(&1u32.to_le_bytes());
        assert!(read_all(&v1).is_err());
    }

    #[test]
    fn every_bit_flip_in_a_file_of_tables_is_refused() {
        let bytes = table_file(10);
        for i in (0..bytes.len() * 8).step_by(5) {
            let mut damaged = bytes.clone();
            damaged[i / 8] ^= 1 << (i % 8);
            assert!(read_all(&damaged).is_err(), "flip of bit {i} not seen");
        }
        for len in (0..bytes.len()).step_by(3) {
            assert!(read_all(&bytes[..len]).is_err(), "truncation to {len}");
        }
    }

    fn read_all(bytes: &[u8]) -> Result<(Meta, Vec<KeyValue>), Error> {
        read_snapshot(bytes)
    }

    #[test]
    fn a_snapshot_file_round_trips() {
        let bytes = file(&[(b"a", b"1"), (b"bb", b""), (b"c", &[7u8; 300])]);
        let (m, entries) = read_all(&bytes).unwrap();
        assert_eq!(m, meta());
        assert_eq!(entries.len(), 3);
        assert_eq!(entries[2], (b"c".to_vec(), vec![7u8; 300]));
    }

    #[test]
    fn every_bit_flip_and_truncation_is_refused() {
        let bytes = file(&[(b"key", b"value"), (b"k2", b"v2")]);
        for i in 0..bytes.len() * 8 {
            let mut damaged = bytes.clone();
            damaged[i / 8] ^= 1 << (i % 8);
            assert!(read_all(&damaged).is_err(), "flip of bit {i} not seen");
        }
        for len in 0..bytes.len() {
            assert!(
                read_all(&bytes[..len]).is_err(),
                "truncation to {len} not seen"
            );
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(read_all(&longer).is_err());
    }

    // The same entry point as the cargo-fuzz target `raft_snapshot` (`tests/fuzz/`): whatever
    // the bytes, an error and never a panic, and no allocation a damaged length asks for.
    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_are_an_error_never_a_panic(
            tail in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512),
            header in proptest::prelude::any::<bool>(),
        ) {
            let mut bytes = Vec::new();
            if header {
                bytes.extend_from_slice(MAGIC);
                bytes.extend_from_slice(&VERSION.to_le_bytes());
            }
            bytes.extend_from_slice(&tail);
            proptest::prop_assert!(read_snapshot(&bytes[..]).is_err());
        }

        #[test]
        fn a_damaged_snapshot_file_is_refused(
            entries in proptest::collection::vec(
                (proptest::collection::vec(0u8..8, 1..12), proptest::collection::vec(0u8..=255, 0..40)),
                0..30,
            ),
            at in proptest::prelude::any::<proptest::sample::Index>(),
            xor in 1u8..=255,
            damage in 0u8..3,
        ) {
            let pairs: Vec<(&[u8], &[u8])> =
                entries.iter().map(|(k, v)| (k.as_slice(), v.as_slice())).collect();
            let bytes = file(&pairs);
            proptest::prop_assert_eq!(read_all(&bytes).map(|r| r.1.len()).ok(), Some(pairs.len()));
            let mut damaged = bytes.clone();
            let i = at.index(bytes.len());
            match damage {
                0 => damaged[i] ^= xor,
                1 => damaged.truncate(i),
                _ => damaged.insert(i, xor),
            }
            let read = read_all(&damaged);
            proptest::prop_assert!(
                matches!(read, Err(Error::Corrupt { .. })),
                "damage {} at {}: {:?}", damage, i, read
            );
        }
    }
}
