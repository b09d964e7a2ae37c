//! Version edits: the records of the manifest.
//!
//! ```text
//! edit  := field*
//! field := 1 varint log_number
//!        | 2 varint next_file_number
//!        | 3 varint last_sequence
//!        | 4 varint level | varint number | varint file_size | bytes smallest | bytes largest
//!            | varint entries | varint distinct_keys
//!        | 5 varint level | varint number                      (file deleted)
//!        | 6 varint level | varint number | varint filter_level (follows the 4 of that file
//!            when its filter was planned for another level: a trivial move)
//!        | 7 varint keyspace_id                  (the keyspace the edit applies to; absent: 0,
//!            "default" — so every edit of a database of format 3 or older is the default's)
//!        | 8 bytes name | bytes options           (the keyspace is created: its name and its
//!            options as `key=value` lines, see `keyspace::options_text`)
//!        | 9                                     (the keyspace is dropped, with all its tables)
//!        | 10 varint next_keyspace_id            (ids are never reused)
//!        | 11 varint keyspace_id | varint log_number (another keyspace's log number: an idle
//!            keyspace holds nothing in WALs below it; written with another keyspace's flush so
//!            that idle keyspaces do not keep old WALs)
//!        | 13 varint level | varint number | varint millibits (follows the 4 of that file when
//!            its ribbon filter is read thinned to `millibits / 1000` bits per key: a trivial
//!            move into a level planned for fewer bits)
//!        | 12 varint wal_number | varint first_sequence (the sequence number WAL `wal_number`'s
//!            first record has, written with each log number an edit records: recovery checks
//!            that the oldest WAL it replays starts there, so a log emptied or cut to nothing is
//!            seen even when another keyspace's flush has moved `last_sequence` past it)
//!        | 14 varint level | varint number | varint n | (varint blob_file | varint count
//!            | varint bytes){n}                   (follows the 4 of a table holding blob
//!            indexes: per blob file, how many of its values the table references and their
//!            stored bytes)
//!        | 15 varint number | varint records | varint stored_bytes | varint file_size
//!            (a blob file is added to the edit's keyspace; it leaves the keyspace with the last
//!            table that references it, so no field deletes one)
//! bytes := varint length | raw bytes
//! ```
//! `log_number` (1) and the files (4, 5, 6) belong to the edit's keyspace; 2, 3 and 10 are the
//! database's. One edit is one manifest record, so creating or dropping a keyspace is atomic.

use siftdb_sstable::coding::{get_bytes, get_varint, put_bytes, put_varint};
use siftdb_sstable::InternalKey;

/// What the manifest records about one table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileMeta {
    /// File number (`NNNNNN.sst`).
    pub number: u64,
    /// File size in bytes.
    pub file_size: u64,
    /// Smallest internal key.
    pub smallest: InternalKey,
    /// Largest internal key.
    pub largest: InternalKey,
    /// Entries.
    pub entries: u64,
    /// Distinct user keys.
    pub distinct_keys: u64,
    /// The level the table's filter was planned for: its level when it was written, kept when
    /// a trivial move takes the table down unchanged.
    pub filter_level: usize,
    /// The bits per key, in thousandths, its ribbon whole-key filter is read with (`None`: as
    /// built). Set when a trivial move took the table into a level planned for fewer bits
    /// than its filter holds: the filter is thinned as it is read instead of the table being
    /// rewritten (see `Table::set_filter_bits_cap`).
    pub filter_cap_millibits: Option<u32>,
    /// The blob files the table's blob indexes point into, ascending by file number.
    pub blob_refs: Vec<BlobRefs>,
    /// The sequence number every entry of an ingested table is read at (RocksDB's global
    /// seqno): the file was written outside the database with every entry at sequence 0, and
    /// ingestion gave the whole file one number, newer than every write before it. `None`:
    /// the entries carry their own.
    pub global_seqno: Option<u64>,
}

/// A table's references into one blob file: what keeps the blob file alive, and (against the
/// file's own totals) how much of it is garbage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlobRefs {
    /// The blob file's number.
    pub file: u64,
    /// Blob indexes of the table that point into it.
    pub count: u64,
    /// The stored bytes of the values they point to.
    pub bytes: u64,
}

/// What the manifest records about one blob file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlobMeta {
    /// File number (`NNNNNN.blob`).
    pub number: u64,
    /// Values written to it.
    pub records: u64,
    /// Their stored bytes (compressed where that paid), the file's garbage accounting unit.
    pub stored_bytes: u64,
    /// The file's size.
    pub file_size: u64,
}

impl FileMeta {
    /// [`FileMeta::filter_cap_millibits`] in bits per key.
    pub fn filter_bits_cap(&self) -> Option<f64> {
        self.filter_cap_millibits.map(|m| f64::from(m) / 1000.0)
    }
}

/// A change to the set of live files and counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VersionEdit {
    /// WALs numbered below this hold nothing that is not in tables.
    pub log_number: Option<u64>,
    /// Next file number to hand out.
    pub next_file_number: Option<u64>,
    /// Last sequence number used.
    pub last_sequence: Option<u64>,
    /// Files added: (level, meta).
    pub added: Vec<(usize, FileMeta)>,
    /// Files removed: (level, number).
    pub deleted: Vec<(usize, u64)>,
    /// The keyspace `log_number` and the files belong to (0: "default").
    pub keyspace: u32,
    /// The keyspace is created: its name and its options (`key=value` lines).
    pub created: Option<(String, String)>,
    /// The keyspace is dropped.
    pub dropped: bool,
    /// Next keyspace id to hand out.
    pub next_keyspace_id: Option<u32>,
    /// Log numbers of other keyspaces: (keyspace id, log number).
    pub other_log_numbers: Vec<(u32, u64)>,
    /// Where WALs start: (WAL number, the sequence number its first record has).
    pub wal_starts: Vec<(u64, u64)>,
    /// Blob files added to the keyspace.
    pub blob_files: Vec<BlobMeta>,
}

impl VersionEdit {
    /// The edit creating keyspace `id` named `name` with its recorded options.
    pub(crate) fn create_keyspace(id: u32, name: &str, options_text: String) -> VersionEdit {
        VersionEdit {
            keyspace: id,
            created: Some((name.to_string(), options_text)),
            ..VersionEdit::default()
        }
    }

    /// Encodes the edit.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        if self.keyspace != 0 {
            put_varint(&mut out, 7);
            put_varint(&mut out, u64::from(self.keyspace));
        }
        if let Some((name, options)) = &self.created {
            put_varint(&mut out, 8);
            put_bytes(&mut out, name.as_bytes());
            put_bytes(&mut out, options.as_bytes());
        }
        if self.dropped {
            put_varint(&mut out, 9);
        }
        if let Some(v) = self.next_keyspace_id {
            put_varint(&mut out, 10);
            put_varint(&mut out, u64::from(v));
        }
        for (keyspace, log_number) in &self.other_log_numbers {
            put_varint(&mut out, 11);
            put_varint(&mut out, u64::from(*keyspace));
            put_varint(&mut out, *log_number);
        }
        for (wal, first_sequence) in &self.wal_starts {
            put_varint(&mut out, 12);
            put_varint(&mut out, *wal);
            put_varint(&mut out, *first_sequence);
        }
        if let Some(v) = self.log_number {
            put_varint(&mut out, 1);
            put_varint(&mut out, v);
        }
        if let Some(v) = self.next_file_number {
            put_varint(&mut out, 2);
            put_varint(&mut out, v);
        }
        if let Some(v) = self.last_sequence {
            put_varint(&mut out, 3);
            put_varint(&mut out, v);
        }
        for (level, f) in &self.added {
            put_varint(&mut out, 4);
            put_varint(&mut out, *level as u64);
            put_varint(&mut out, f.number);
            put_varint(&mut out, f.file_size);
            put_bytes(&mut out, f.smallest.encoded());
            put_bytes(&mut out, f.largest.encoded());
            put_varint(&mut out, f.entries);
            put_varint(&mut out, f.distinct_keys);
            if f.filter_level != *level {
                put_varint(&mut out, 6);
                put_varint(&mut out, *level as u64);
                put_varint(&mut out, f.number);
                put_varint(&mut out, f.filter_level as u64);
            }
            if let Some(cap) = f.filter_cap_millibits {
                put_varint(&mut out, 13);
                put_varint(&mut out, *level as u64);
                put_varint(&mut out, f.number);
                put_varint(&mut out, u64::from(cap));
            }
            if !f.blob_refs.is_empty() {
                put_varint(&mut out, 14);
                put_varint(&mut out, *level as u64);
                put_varint(&mut out, f.number);
                put_varint(&mut out, f.blob_refs.len() as u64);
                for r in &f.blob_refs {
                    put_varint(&mut out, r.file);
                    put_varint(&mut out, r.count);
                    put_varint(&mut out, r.bytes);
                }
            }
            if let Some(seqno) = f.global_seqno {
                put_varint(&mut out, 16);
                put_varint(&mut out, *level as u64);
                put_varint(&mut out, f.number);
                put_varint(&mut out, seqno);
            }
        }
        for b in &self.blob_files {
            put_varint(&mut out, 15);
            put_varint(&mut out, b.number);
            put_varint(&mut out, b.records);
            put_varint(&mut out, b.stored_bytes);
            put_varint(&mut out, b.file_size);
        }
        for (level, number) in &self.deleted {
            put_varint(&mut out, 5);
            put_varint(&mut out, *level as u64);
            put_varint(&mut out, *number);
        }
        out
    }

    /// Decodes an edit; `None` if malformed.
    pub fn decode(bytes: &[u8]) -> Option<VersionEdit> {
        let mut e = VersionEdit::default();
        let mut pos = 0;
        let level = |pos: &mut usize| -> Option<usize> {
            let l = usize::try_from(get_varint(bytes, pos)?).ok()?;
            (l < crate::base::options::MAX_LEVELS).then_some(l)
        };
        while pos < bytes.len() {
            match get_varint(bytes, &mut pos)? {
                1 => e.log_number = Some(get_varint(bytes, &mut pos)?),
                2 => e.next_file_number = Some(get_varint(bytes, &mut pos)?),
                3 => e.last_sequence = Some(get_varint(bytes, &mut pos)?),
                4 => {
                    let l = level(&mut pos)?;
                    let number = get_varint(bytes, &mut pos)?;
                    let file_size = get_varint(bytes, &mut pos)?;
                    let smallest = InternalKey::from_encoded(get_bytes(bytes, &mut pos)?.to_vec())?;
                    let largest = InternalKey::from_encoded(get_bytes(bytes, &mut pos)?.to_vec())?;
                    let entries = get_varint(bytes, &mut pos)?;
                    let distinct_keys = get_varint(bytes, &mut pos)?;
                    e.added.push((
                        l,
                        FileMeta {
                            number,
                            file_size,
                            smallest,
                            largest,
                            entries,
                            distinct_keys,
                            filter_level: l,
                            filter_cap_millibits: None,
                            blob_refs: Vec::new(),
                            global_seqno: None,
                        },
                    ));
                }
                16 => {
                    let l = level(&mut pos)?;
                    let number = get_varint(bytes, &mut pos)?;
                    let seqno = get_varint(bytes, &mut pos)?;
                    let meta = added_meta(&mut e, l, number)?;
                    meta.global_seqno = Some(seqno);
                }
                14 => decode_blob_refs(bytes, &mut pos, &mut e, level)?,
                15 => e.blob_files.push(decode_blob_meta(bytes, &mut pos)?),
                5 => {
                    let l = level(&mut pos)?;
                    e.deleted.push((l, get_varint(bytes, &mut pos)?));
                }
                6 => {
                    let l = level(&mut pos)?;
                    let number = get_varint(bytes, &mut pos)?;
                    let filter_level = level(&mut pos)?;
                    let meta = added_meta(&mut e, l, number)?;
                    meta.filter_level = filter_level;
                }
                13 => {
                    let l = level(&mut pos)?;
                    let number = get_varint(bytes, &mut pos)?;
                    let cap = u32::try_from(get_varint(bytes, &mut pos)?).ok()?;
                    let meta = added_meta(&mut e, l, number)?;
                    meta.filter_cap_millibits = Some(cap);
                }
                7 => e.keyspace = u32::try_from(get_varint(bytes, &mut pos)?).ok()?,
                8 => {
                    let text =
                        |pos: &mut usize| String::from_utf8(get_bytes(bytes, pos)?.to_vec()).ok();
                    let name = text(&mut pos)?;
                    e.created = Some((name, text(&mut pos)?));
                }
                9 => e.dropped = true,
                10 => e.next_keyspace_id = Some(u32::try_from(get_varint(bytes, &mut pos)?).ok()?),
                11 => {
                    let keyspace = u32::try_from(get_varint(bytes, &mut pos)?).ok()?;
                    e.other_log_numbers
                        .push((keyspace, get_varint(bytes, &mut pos)?));
                }
                12 => {
                    let wal = get_varint(bytes, &mut pos)?;
                    e.wal_starts.push((wal, get_varint(bytes, &mut pos)?));
                }
                _ => return None,
            }
        }
        Some(e)
    }
}

/// The table edit `e` adds at level `l` as number `number` (the fields that follow a 4 name it
/// so); `None` when there is none: the edit is malformed.
fn added_meta(e: &mut VersionEdit, l: usize, number: u64) -> Option<&mut FileMeta> {
    e.added
        .iter_mut()
        .rev()
        .find(|(al, m)| *al == l && m.number == number)
        .map(|(_, m)| m)
}

/// Field 14: a table's references into blob files, set on the table the edit adds.
fn decode_blob_refs(
    bytes: &[u8],
    pos: &mut usize,
    e: &mut VersionEdit,
    level: impl Fn(&mut usize) -> Option<usize>,
) -> Option<()> {
    let l = level(pos)?;
    let number = get_varint(bytes, pos)?;
    let n = get_varint(bytes, pos)?;
    let mut refs = Vec::new();
    for _ in 0..n {
        // Each reference takes at least 3 bytes: a count past the edit's end is damage, not an
        // allocation (the loop stops at the first missing varint).
        refs.push(BlobRefs {
            file: get_varint(bytes, pos)?,
            count: get_varint(bytes, pos)?,
            bytes: get_varint(bytes, pos)?,
        });
    }
    added_meta(e, l, number)?.blob_refs = refs;
    Some(())
}

/// Field 15: a blob file added.
fn decode_blob_meta(bytes: &[u8], pos: &mut usize) -> Option<BlobMeta> {
    Some(BlobMeta {
        number: get_varint(bytes, pos)?,
        records: get_varint(bytes, pos)?,
        stored_bytes: get_varint(bytes, pos)?,
        file_size: get_varint(bytes, pos)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use siftdb_sstable::ValueKind;

    #[test]
    fn version_edit_round_trips() {
        let e = VersionEdit {
            log_number: Some(3),
            next_file_number: Some(10),
            last_sequence: Some(99),
            added: vec![(
                1,
                FileMeta {
                    number: 7,
                    file_size: 1234,
                    smallest: InternalKey::new(b"a", 5, ValueKind::Put),
                    largest: InternalKey::new(b"z", 1, ValueKind::Delete),
                    entries: 10,
                    distinct_keys: 8,
                    filter_level: 1,
                    filter_cap_millibits: Some(5_250),
                    blob_refs: vec![
                        BlobRefs {
                            file: 3,
                            count: 2,
                            bytes: 8_192,
                        },
                        BlobRefs {
                            file: 5,
                            count: 1,
                            bytes: 100,
                        },
                    ],
                    global_seqno: Some(42),
                },
            )],
            deleted: vec![(0, 4)],
            blob_files: vec![BlobMeta {
                number: 3,
                records: 10,
                stored_bytes: 40_960,
                file_size: 41_500,
            }],
            ..VersionEdit::default()
        };
        let bytes = e.encode();
        assert_eq!(VersionEdit::decode(&bytes), Some(e));
        for len in 0..bytes.len() {
            // Truncations either fail or decode to a different (shorter) edit, never panic.
            let _ = VersionEdit::decode(&bytes[..len]);
        }
        assert_eq!(VersionEdit::decode(&[11]), None);
    }

    #[test]
    fn keyspace_fields_round_trip_and_default_is_implicit() {
        let e = VersionEdit {
            keyspace: 3,
            created: Some(("orders".to_string(), "write_buffer_size=1024\n".to_string())),
            next_keyspace_id: Some(4),
            log_number: Some(9),
            other_log_numbers: vec![(0, 8), (2, 9)],
            wal_starts: vec![(8, 1000), (9, 1234)],
            ..VersionEdit::default()
        };
        let bytes = e.encode();
        assert_eq!(VersionEdit::decode(&bytes), Some(e));
        for len in 0..bytes.len() {
            let _ = VersionEdit::decode(&bytes[..len]);
        }
        let dropped = VersionEdit {
            keyspace: 3,
            dropped: true,
            ..VersionEdit::default()
        };
        assert_eq!(VersionEdit::decode(&dropped.encode()), Some(dropped));
        // The default keyspace writes no field 7: its edits read as those of older builds.
        let default = VersionEdit {
            log_number: Some(2),
            ..VersionEdit::default()
        };
        assert_eq!(default.encode(), vec![1, 2]);
    }

    #[test]
    fn a_moved_table_keeps_the_level_its_filter_was_planned_for() {
        let meta = FileMeta {
            number: 7,
            file_size: 1234,
            smallest: InternalKey::new(b"a", 5, ValueKind::Put),
            largest: InternalKey::new(b"z", 1, ValueKind::Put),
            entries: 10,
            distinct_keys: 10,
            filter_level: 0,
            filter_cap_millibits: None,
            blob_refs: Vec::new(),
            global_seqno: None,
        };
        let moved = VersionEdit {
            added: vec![(3, meta.clone())],
            deleted: vec![(2, 7)],
            ..VersionEdit::default()
        };
        let decoded = VersionEdit::decode(&moved.encode()).unwrap();
        assert_eq!(decoded, moved);
        assert_eq!(decoded.added[0].1.filter_level, 0);
        // An edit of the first format (no field 6) reads as "planned for its own level".
        let old = VersionEdit {
            added: vec![(
                3,
                FileMeta {
                    filter_level: 3,
                    ..meta
                },
            )],
            ..VersionEdit::default()
        };
        let bytes = old.encode();
        assert_eq!(
            VersionEdit::decode(&bytes).unwrap().added[0].1.filter_level,
            3
        );
        // A field 6 naming no added table is malformed.
        assert_eq!(VersionEdit::decode(&[6, 1, 7, 0]), None);
    }
}
