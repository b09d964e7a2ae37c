//! Reads records back from a log image, telling a torn tail from real corruption.

use super::{fragment_crc, RecordType, BLOCK_SIZE, HEADER_SIZE};
use siftdb_sstable::coding::read_u16;

/// How reading a log ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogEnd {
    /// Every byte was a valid record (or block padding).
    Clean,
    /// An incomplete or damaged record at the end, with no valid record after it: a torn write
    /// from a crash. The records before it are the log's contents.
    TornTail {
        /// Offset where the damaged tail starts.
        offset: u64,
    },
    /// The last record is complete but damaged (bad checksum or type) with nothing valid after
    /// it. For a WAL that can be an unsynced write torn by power loss (recovered like a torn
    /// tail); for a manifest, whose records are synced before they count, it is corruption.
    DamagedTail {
        /// Offset of the damaged fragment.
        offset: u64,
        /// What was wrong.
        reason: String,
    },
    /// Damage followed by valid records: acknowledged data was lost.
    Corrupted {
        /// Offset of the first damaged fragment.
        offset: u64,
        /// What was wrong.
        reason: String,
    },
}

/// Every complete record of a log, in order, and how the log ended.
pub fn read_log(bytes: &[u8]) -> (Vec<Vec<u8>>, LogEnd) {
    let mut records = Vec::new();
    let mut pending: Option<(Vec<u8>, u64)> = None;
    let mut pos = 0usize;
    // Damage seen so far: offset, reason, and whether it looks like a cut-off write (truncation
    // or zeroed space) rather than altered bytes.
    let mut damage: Option<(u64, String, bool)> = None;
    while pos < bytes.len() {
        let block_left = BLOCK_SIZE - pos % BLOCK_SIZE;
        if block_left < HEADER_SIZE {
            pos += block_left; // zero padding at the end of a block
            continue;
        }
        match parse_fragment(bytes, pos, block_left) {
            Fragment::Ok { kind, payload, len } => {
                if let Some((offset, reason, _)) = damage.take() {
                    // A valid fragment after damage: the damage was not a torn tail.
                    return (records, LogEnd::Corrupted { offset, reason });
                }
                match kind {
                    RecordType::Full => {
                        if pending.take().is_some() {
                            return (records, corrupted(pos, "record interrupted by a new one"));
                        }
                        records.push(payload.to_vec());
                    }
                    RecordType::First => {
                        if pending.is_some() {
                            return (records, corrupted(pos, "record interrupted by a new one"));
                        }
                        pending = Some((payload.to_vec(), pos as u64));
                    }
                    RecordType::Middle | RecordType::Last => match pending.as_mut() {
                        Some((buf, _)) => {
                            buf.extend_from_slice(payload);
                            if kind == RecordType::Last {
                                if let Some((buf, _)) = pending.take() {
                                    records.push(buf);
                                }
                            }
                        }
                        None => return (records, corrupted(pos, "fragment without a first part")),
                    },
                }
                pos += HEADER_SIZE + len;
            }
            Fragment::Zero => {
                // Zeroed space (preallocated or never written): skip the rest of this block.
                damage.get_or_insert((pos as u64, "zeroed fragment header".to_string(), true));
                pos += block_left;
            }
            Fragment::Bad(reason) => {
                let cut_off = reason.starts_with("truncated");
                damage.get_or_insert((pos as u64, reason.to_string(), cut_off));
                // Resynchronise at the next block: later valid records prove real corruption.
                pos += block_left;
            }
        }
    }
    if let Some((offset, reason, cut_off)) = damage {
        let end = if cut_off {
            LogEnd::TornTail { offset }
        } else {
            LogEnd::DamagedTail { offset, reason }
        };
        return (records, end);
    }
    if let Some((_, offset)) = pending {
        return (records, LogEnd::TornTail { offset });
    }
    (records, LogEnd::Clean)
}

fn corrupted(pos: usize, reason: &str) -> LogEnd {
    LogEnd::Corrupted {
        offset: pos as u64,
        reason: reason.to_string(),
    }
}

enum Fragment<'a> {
    Ok {
        kind: RecordType,
        payload: &'a [u8],
        len: usize,
    },
    Zero,
    Bad(&'static str),
}

fn parse_fragment(bytes: &[u8], pos: usize, block_left: usize) -> Fragment<'_> {
    let Some(header) = bytes.get(pos..pos + HEADER_SIZE) else {
        return Fragment::Bad("truncated fragment header");
    };
    if header.iter().all(|&b| b == 0) {
        return Fragment::Zero;
    }
    let len = read_u16(header, 4) as usize;
    if HEADER_SIZE + len > block_left {
        return Fragment::Bad("fragment crosses a block boundary");
    }
    let Some(payload) = bytes.get(pos + HEADER_SIZE..pos + HEADER_SIZE + len) else {
        return Fragment::Bad("truncated fragment payload");
    };
    let stored = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
    if fragment_crc(header[6], payload) != stored {
        return Fragment::Bad("fragment checksum mismatch");
    }
    match RecordType::from_u8(header[6]) {
        Some(kind) => Fragment::Ok { kind, payload, len },
        None => Fragment::Bad("unknown fragment type"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::fs::WritableFile;
    use crate::base::wal::writer::LogWriter;
    use std::io::{self, Write};
    use std::sync::{Arc, Mutex};

    #[derive(Debug, Clone, Default)]
    struct MemFile(Arc<Mutex<Vec<u8>>>);
    impl Write for MemFile {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    impl WritableFile for MemFile {
        fn sync(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn log_of(records: &[Vec<u8>]) -> Vec<u8> {
        let file = MemFile::default();
        let mut w = LogWriter::new(Box::new(file.clone()));
        for r in records {
            w.add_record(r).unwrap();
        }
        let bytes = file.0.lock().unwrap().clone();
        assert_eq!(w.size(), bytes.len() as u64);
        bytes
    }

    fn sample() -> Vec<Vec<u8>> {
        vec![
            b"one".to_vec(),
            Vec::new(),
            vec![7u8; BLOCK_SIZE * 2 + 100], // spans three blocks
            vec![1u8; BLOCK_SIZE - HEADER_SIZE - 3], // leaves a tail shorter than a header
            b"after padding".to_vec(),
        ]
    }

    #[test]
    fn log_round_trips_records_of_every_size() {
        let records = sample();
        let (got, end) = read_log(&log_of(&records));
        assert_eq!(end, LogEnd::Clean);
        assert_eq!(got, records);
    }

    #[test]
    fn log_truncated_anywhere_recovers_a_prefix() {
        let records = sample();
        let bytes = log_of(&records);
        for len in (0..bytes.len()).step_by(97).chain([bytes.len() - 1]) {
            let (got, end) = read_log(&bytes[..len]);
            assert!(records.starts_with(&got), "cut at {len}");
            assert!(
                !matches!(end, LogEnd::Corrupted { .. }),
                "cut at {len}: {end:?}"
            );
        }
    }

    #[test]
    fn log_damage_before_valid_records_is_corruption() {
        let records = sample();
        let mut bytes = log_of(&records);
        bytes[8] ^= 0xff; // inside the payload of the first record
        let (got, end) = read_log(&bytes);
        assert!(got.is_empty());
        assert!(matches!(end, LogEnd::Corrupted { .. }), "{end:?}");
    }

    #[test]
    fn log_damage_in_the_last_record_is_a_damaged_tail() {
        let records = sample();
        let mut bytes = log_of(&records);
        let at = bytes.len() - 3;
        bytes[at] ^= 0x01;
        let (got, end) = read_log(&bytes);
        assert_eq!(got, records[..4].to_vec());
        assert!(matches!(end, LogEnd::DamagedTail { .. }), "{end:?}");
    }

    #[test]
    fn log_random_bytes_never_panic() {
        let mut state = 0x1234_5678u64;
        for len in [0usize, 1, 6, 7, 100, BLOCK_SIZE + 13] {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state as u8
                })
                .collect();
            let _ = read_log(&bytes);
        }
    }
}
