//! The snapshot file: the state keyspace's entries at one point, with the snapshot's metadata,
//! checked end to end by a CRC.
//!
//! ```text
//! file    := magic "SIFTRSNP" | u32 version (1) | u32 meta_len | meta | entry* | end
//! meta    := SnapshotMeta, postcard-encoded (last log id, last membership, snapshot id)
//! entry   := u32 key_len | u32 value_len | key | value
//! end     := u32 0xFFFF_FFFF | u64 entries | u32 crc32 of every byte before it
//! ```
//! Integers are little-endian. A node keeps one current snapshot, `current.snap`, replaced by
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
const VERSION: u32 = 1;
const END: u32 = u32::MAX;
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
        let meta = encode("snapshot meta", meta)?;
        let mut writer = SnapshotWriter {
            out,
            crc: crc32fast::Hasher::new(),
            entries: 0,
        };
        writer.put(MAGIC)?;
        writer.put(&VERSION.to_le_bytes())?;
        writer.put(&len_u32(meta.len())?.to_le_bytes())?;
        writer.put(&meta)?;
        Ok(writer)
    }

    /// Appends one key-value pair.
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
        .filter(|l| *l != END)
        .ok_or_else(|| Error::corrupt("snapshot entry", format!("{len} bytes is too long")))
}

/// Reads a snapshot file entry by entry; the CRC is checked when the end record is reached.
pub(crate) struct SnapshotReader<R: Read> {
    input: R,
    crc: crc32fast::Hasher,
    entries: u64,
    done: bool,
}

impl<R: Read> SnapshotReader<R> {
    /// Reads the header; returns the reader and the snapshot's metadata.
    pub(crate) fn new(input: R) -> Result<(Self, Meta), Error> {
        let mut reader = SnapshotReader {
            input,
            crc: crc32fast::Hasher::new(),
            entries: 0,
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
        if version != VERSION {
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

    /// The next entry, or `None` after the end record (whose count and CRC must match).
    pub(crate) fn next_entry(&mut self) -> Result<Option<KeyValue>, Error> {
        if self.done {
            return Ok(None);
        }
        let key_len = self.u32()?;
        if key_len == END {
            return self.end().map(|()| None);
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
        Ok(Some((key, value)))
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
/// are [`Error::Corrupt`]; nothing is trusted before the end record's checksum matches.
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
    let mut entries = Vec::new();
    while let Some(entry) = reader.next_entry()? {
        entries.push(entry);
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

/// Removes the `.part` files an interrupted build or receive left.
pub(crate) fn remove_partial_files(dir: &Path) -> Result<(), Error> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "part") {
            std::fs::remove_file(&path)?;
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
