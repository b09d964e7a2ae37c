//! Reads records back from a log image, telling a torn tail and lost unsynced pages from real
//! corruption.
//!
//! Reading stops at the first damage. What follows it decides what the damage was:
//! - nothing valid: a write cut off by a crash, or its pages lost ([`LogEnd::TornTail`],
//!   [`LogEnd::DamagedTail`]);
//! - valid fragments, but no sync mark after the damage: page writeback is not ordered, so a
//!   power loss can keep a later unsynced page and lose an earlier one
//!   ([`LogEnd::UnsyncedLoss`]);
//! - a sync mark after the damage: the damaged bytes were durable before the mark was written,
//!   so synced data was lost ([`LogEnd::Corrupted`]).

use super::{fragment_crc, sync_mark_payload, RecordType, BLOCK_SIZE, HEADER_SIZE};
use siftdb_sstable::coding::read_u16;

/// How reading a log ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogEnd {
    /// Every byte was a valid record (or block padding).
    Clean,
    /// An incomplete or zeroed record at the end, with no valid fragment after it: a torn write
    /// from a crash, or pages of an unsynced write lost in a power loss.
    TornTail {
        /// Offset where the damaged tail starts.
        offset: u64,
    },
    /// The last record is complete but damaged (bad checksum or type) with nothing valid after
    /// it: an unsynced write whose pages were lost or torn, or altered bytes.
    DamagedTail {
        /// Offset of the damaged fragment.
        offset: u64,
        /// What was wrong.
        reason: String,
    },
    /// Damage followed by valid fragments, none of them a sync mark: nothing proves the damaged
    /// bytes were ever synced, and a power loss that wrote back a later page of unsynced writes
    /// but not an earlier one leaves exactly this.
    UnsyncedLoss {
        /// Offset of the first damaged fragment.
        offset: u64,
        /// What was wrong.
        reason: String,
        /// Valid records (or record fragments) found after the damage and not returned.
        fragments_after: usize,
    },
    /// Damage that a sync mark after it proves was durable, or fragments that no writer
    /// produces: synced data was lost.
    Corrupted {
        /// Offset of the first damaged fragment.
        offset: u64,
        /// What was wrong.
        reason: String,
    },
}

/// What a log holds: its complete records in order, how it ended, and how many sync marks were
/// read before the end (a log written by a build of database format 6 or older has none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogContents {
    /// Every complete record before the end, in order.
    pub records: Vec<Vec<u8>>,
    /// How reading ended.
    pub end: LogEnd,
    /// Sync marks read among the records.
    pub sync_marks: usize,
}

/// Reads every record of a log and classifies how it ends.
pub fn read_log(bytes: &[u8]) -> LogContents {
    let mut contents = LogContents {
        records: Vec::new(),
        end: LogEnd::Clean,
        sync_marks: 0,
    };
    let mut pending: Option<(Vec<u8>, u64)> = None;
    let mut pos = 0usize;
    while pos < bytes.len() {
        let block_left = BLOCK_SIZE - pos % BLOCK_SIZE;
        if block_left < HEADER_SIZE {
            pos += block_left; // zero padding at the end of a block
            continue;
        }
        let (kind, payload, len) = match parse_fragment(bytes, pos, block_left) {
            Fragment::Ok { kind, payload, len } => (kind, payload, len),
            Fragment::Zero => {
                contents.end = classify_damage(bytes, pos, "zeroed fragment header", true);
                return contents;
            }
            Fragment::Bad(reason) => {
                let cut_off = reason.starts_with("truncated");
                contents.end = classify_damage(bytes, pos, reason, cut_off);
                return contents;
            }
        };
        if let Err(reason) = take_fragment(&mut contents, &mut pending, kind, payload, pos) {
            contents.end = corrupted(pos, reason);
            return contents;
        }
        pos += HEADER_SIZE + len;
    }
    if let Some((_, offset)) = pending {
        contents.end = LogEnd::TornTail { offset };
    }
    contents
}

/// Adds one valid fragment to what was read; an error for fragments no writer produces.
fn take_fragment(
    contents: &mut LogContents,
    pending: &mut Option<(Vec<u8>, u64)>,
    kind: RecordType,
    payload: &[u8],
    pos: usize,
) -> Result<(), &'static str> {
    match kind {
        RecordType::Full | RecordType::First | RecordType::SyncMark if pending.is_some() => {
            Err("record interrupted by a new one")
        }
        RecordType::Full => {
            contents.records.push(payload.to_vec());
            Ok(())
        }
        RecordType::First => {
            *pending = Some((payload.to_vec(), pos as u64));
            Ok(())
        }
        RecordType::SyncMark if is_sync_mark_at(payload, pos) => {
            contents.sync_marks += 1;
            Ok(())
        }
        RecordType::SyncMark => Err("sync mark names another offset"),
        RecordType::Middle | RecordType::Last => {
            let Some((buf, _)) = pending.as_mut() else {
                return Err("fragment without a first part");
            };
            buf.extend_from_slice(payload);
            if kind == RecordType::Last {
                if let Some((buf, _)) = pending.take() {
                    contents.records.push(buf);
                }
            }
            Ok(())
        }
    }
}

/// What damage at `at` was, from what follows it (see the module docs). `cut_off`: the damage
/// looks like a cut-off write (truncation or zeroed space) rather than altered bytes.
fn classify_damage(bytes: &[u8], at: usize, reason: &str, cut_off: bool) -> LogEnd {
    let offset = at as u64;
    let reason = reason.to_string();
    if let Some(mark) = sync_mark_after(bytes, at) {
        return LogEnd::Corrupted {
            offset,
            reason: format!(
                "{reason}, before a sync mark at {mark} (the damaged bytes had been synced)"
            ),
        };
    }
    match fragments_after(bytes, at) {
        0 if cut_off => LogEnd::TornTail { offset },
        0 => LogEnd::DamagedTail { offset, reason },
        fragments_after => LogEnd::UnsyncedLoss {
            offset,
            reason,
            fragments_after,
        },
    }
}

/// The offset of the first sync mark after `at`, looked for at every byte: the fragments after
/// a lost page need not start where the reader could resynchronise. A mark names its own
/// offset, so a mark-shaped run of bytes inside a record's payload counts only if it also sits
/// exactly where it says.
fn sync_mark_after(bytes: &[u8], at: usize) -> Option<usize> {
    (at + 1..bytes.len().saturating_sub(HEADER_SIZE - 1)).find(|&pos| {
        let block_left = BLOCK_SIZE - pos % BLOCK_SIZE;
        if block_left < HEADER_SIZE || bytes[pos + 6] != RecordType::SyncMark as u8 {
            return false;
        }
        matches!(
            parse_fragment(bytes, pos, block_left),
            Fragment::Ok { kind: RecordType::SyncMark, payload, .. } if is_sync_mark_at(payload, pos)
        )
    })
}

/// Valid fragments in the blocks after the one holding `at` (fragments start every block
/// afresh, so they can be found there without knowing where the damage ends).
fn fragments_after(bytes: &[u8], at: usize) -> usize {
    let mut count = 0;
    let mut block = (at / BLOCK_SIZE + 1) * BLOCK_SIZE;
    while block < bytes.len() {
        let mut pos = block;
        let end = (block + BLOCK_SIZE).min(bytes.len());
        while end - pos >= HEADER_SIZE {
            match parse_fragment(bytes, pos, block + BLOCK_SIZE - pos) {
                Fragment::Ok { len, .. } => {
                    count += 1;
                    pos += HEADER_SIZE + len;
                }
                Fragment::Zero | Fragment::Bad(_) => break,
            }
        }
        block += BLOCK_SIZE;
    }
    count
}

/// Whether `payload` is the payload of a sync mark written at offset `pos`.
fn is_sync_mark_at(payload: &[u8], pos: usize) -> bool {
    let block_left = BLOCK_SIZE - pos % BLOCK_SIZE;
    payload == sync_mark_payload(pos as u64, block_left).as_slice()
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

    /// A log of `records`, synced after the records whose indexes `syncs` holds; returns the
    /// bytes and the offset where each record starts.
    fn synced_log_of(records: &[Vec<u8>], syncs: &[usize]) -> (Vec<u8>, Vec<u64>) {
        let file = MemFile::default();
        let mut w = LogWriter::new(Box::new(file.clone()));
        let mut starts = Vec::new();
        for (i, r) in records.iter().enumerate() {
            starts.push(w.size());
            w.add_record(r).unwrap();
            if syncs.contains(&i) {
                w.sync().unwrap();
            }
        }
        let bytes = file.0.lock().unwrap().clone();
        assert_eq!(w.size(), bytes.len() as u64);
        (bytes, starts)
    }

    fn log_of(records: &[Vec<u8>]) -> Vec<u8> {
        synced_log_of(records, &[]).0
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

    /// Records of `n` bytes each, enough of them to fill `blocks` blocks.
    fn many(n: usize, blocks: usize) -> Vec<Vec<u8>> {
        (0..blocks * BLOCK_SIZE / (n + HEADER_SIZE))
            .map(|i| vec![(i % 251) as u8 + 1; n])
            .collect()
    }

    #[test]
    fn log_round_trips_records_of_every_size() {
        let records = sample();
        let got = read_log(&log_of(&records));
        assert_eq!(got.end, LogEnd::Clean);
        assert_eq!(got.records, records);
        assert_eq!(got.sync_marks, 0);
    }

    #[test]
    fn log_sync_marks_are_skipped_wherever_they_fall_in_a_block() {
        // Syncs after every record: marks land with 8, fewer, or no payload bytes of room.
        for size in [1usize, 100, 1000, 4090, BLOCK_SIZE - 20] {
            let records = many(size, 3);
            let all: Vec<usize> = (0..records.len()).collect();
            let (bytes, _) = synced_log_of(&records, &all);
            let got = read_log(&bytes);
            assert_eq!(got.end, LogEnd::Clean, "records of {size} bytes");
            assert_eq!(got.records, records, "records of {size} bytes");
            assert_eq!(got.sync_marks, records.len(), "records of {size} bytes");
        }
    }

    #[test]
    fn log_truncated_anywhere_recovers_a_prefix() {
        let records = sample();
        let (bytes, _) = synced_log_of(&records, &[0, 2, 4]);
        for len in (0..bytes.len()).step_by(97).chain([bytes.len() - 1]) {
            let got = read_log(&bytes[..len]);
            assert!(records.starts_with(&got.records), "cut at {len}");
            assert!(
                matches!(got.end, LogEnd::Clean | LogEnd::TornTail { .. }),
                "cut at {len}: {:?}",
                got.end
            );
        }
    }

    #[test]
    fn log_damage_before_valid_records_without_a_sync_mark_is_unsynced_loss() {
        let records = many(1000, 4);
        let mut bytes = log_of(&records);
        // A lost page in the second block: the pages after it survived.
        bytes[BLOCK_SIZE + 4096..BLOCK_SIZE + 8192].fill(0);
        let got = read_log(&bytes);
        assert!(records.starts_with(&got.records));
        assert!(!got.records.is_empty());
        assert!(
            matches!(got.end, LogEnd::UnsyncedLoss { fragments_after, .. } if fragments_after > 30),
            "{:?}",
            got.end
        );
    }

    #[test]
    fn log_damage_before_a_sync_mark_is_corruption() {
        let records = many(1000, 4);
        let synced = records.len() - 5;
        let (mut bytes, starts) = synced_log_of(&records, &[synced]);
        // Damage in a record the sync covered, in the block of the mark and in an earlier one.
        for at in [starts[synced] as usize + 10, BLOCK_SIZE + 100] {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x40;
            let got = read_log(&damaged);
            assert!(
                matches!(got.end, LogEnd::Corrupted { .. }),
                "at {at}: {:?}",
                got.end
            );
        }
        // Damage after the mark is not (nothing valid is found after it: the later records are
        // in the damaged block, where fragments cannot be told from payload bytes).
        let at = starts[synced + 2] as usize + 10;
        bytes[at] ^= 0x40;
        let got = read_log(&bytes);
        assert_eq!(got.records, records[..synced + 2].to_vec());
        assert!(
            matches!(got.end, LogEnd::DamagedTail { .. }),
            "{:?}",
            got.end
        );
    }

    #[test]
    fn log_mark_shaped_bytes_in_a_payload_prove_nothing() {
        // A record whose payload is a valid sync mark for the offset it would have if it were
        // a fragment of its own, and one naming its true offset inside the payload.
        let mut forged = Vec::new();
        let pos = HEADER_SIZE; // the payload of the first record starts here
        let payload = 0u64.to_le_bytes(); // names offset 0, not `pos`
        forged.extend_from_slice(&fragment_crc(5, &payload).to_le_bytes());
        forged.extend_from_slice(&8u16.to_le_bytes());
        forged.push(5);
        forged.extend_from_slice(&payload);
        let _ = pos;
        let records = vec![b"first".to_vec(), forged, b"last".to_vec()];
        let mut bytes = log_of(&records);
        bytes[HEADER_SIZE] ^= 1; // damage the first record
        let got = read_log(&bytes);
        assert!(
            !matches!(got.end, LogEnd::Corrupted { .. }),
            "{:?}",
            got.end
        );
    }

    #[test]
    fn log_damage_in_the_last_record_is_a_damaged_tail() {
        let records = sample();
        let mut bytes = log_of(&records);
        let at = bytes.len() - 3;
        bytes[at] ^= 0x01;
        let got = read_log(&bytes);
        assert_eq!(got.records, records[..4].to_vec());
        assert!(
            matches!(got.end, LogEnd::DamagedTail { .. }),
            "{:?}",
            got.end
        );
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
