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

use std::io::{self, Read};

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

/// Reads every record of a log image and classifies how it ends (the streaming
/// [`LogReader`] over a slice: the manifest, whose logs are small, and tests use this).
pub fn read_log(bytes: &[u8]) -> LogContents {
    let mut reader = LogReader::new(bytes);
    let mut records = Vec::new();
    let end = loop {
        match reader.next_record() {
            Ok(Some(record)) => records.push(record.to_vec()),
            Ok(None) => break reader.end().cloned().unwrap_or(LogEnd::Clean),
            // Reading a slice cannot fail; were it to, what was read so far is all there is.
            Err(e) => break corrupted(reader.offset(), &format!("read failed: {e}")),
        }
    };
    LogContents {
        records,
        end,
        sync_marks: reader.sync_marks(),
    }
}

/// Reads a log's records one at a time from a [`Read`], holding one block and the record being
/// assembled: a WAL of any size is replayed in bounded memory. The log is read block by block
/// (fragments never straddle blocks, so each block parses on its own, whatever sizes the
/// `Read` hands its bytes over in); after damage the rest of the input is streamed through
/// once to classify it (see the module docs).
#[derive(Debug)]
pub struct LogReader<R> {
    input: R,
    /// The block being read: `BLOCK_SIZE` bytes, fewer only for the input's last block.
    block: Vec<u8>,
    /// Offset in the log of `block`'s first byte (a multiple of `BLOCK_SIZE`).
    block_start: u64,
    /// Where in `block` the next fragment starts.
    pos: usize,
    /// Whether the input has ended (`block` is its last block).
    eof: bool,
    assembly: Assembly,
    /// How reading ended, once it has.
    end: Option<LogEnd>,
}

/// The record being put together from its fragments, and the sync marks seen.
#[derive(Debug, Default)]
struct Assembly {
    record: Vec<u8>,
    /// Offset of the first fragment of the record being assembled, if one is.
    pending: Option<u64>,
    sync_marks: usize,
}

/// What one valid fragment contributed.
enum Taken {
    /// Nothing to return yet (a first or middle fragment, a sync mark).
    Nothing,
    /// A whole record: the fragment's payload.
    Full,
    /// The last fragment of a record now in `Assembly::record`.
    Assembled,
}

/// What one step of reading produced.
enum Step {
    Continue,
    /// A record held whole in `block[range]`.
    InBlock(std::ops::Range<usize>),
    Assembled,
}

impl<R: Read> LogReader<R> {
    /// A reader of the log `input` holds, from its first byte.
    pub fn new(input: R) -> LogReader<R> {
        LogReader {
            input,
            block: Vec::with_capacity(BLOCK_SIZE),
            block_start: 0,
            pos: 0,
            eof: false,
            assembly: Assembly::default(),
            end: None,
        }
    }

    /// The next complete record, or `None` once reading has ended (then [`LogReader::end`]
    /// says how). Only an error of the input is an error: damage ends the log.
    pub fn next_record(&mut self) -> io::Result<Option<&[u8]>> {
        loop {
            if self.end.is_some() {
                return Ok(None);
            }
            match self.step()? {
                Step::Continue => {}
                Step::InBlock(range) => return Ok(Some(&self.block[range])),
                Step::Assembled => return Ok(Some(&self.assembly.record)),
            }
        }
    }

    /// How reading ended, once [`LogReader::next_record`] has returned `None`.
    pub fn end(&self) -> Option<&LogEnd> {
        self.end.as_ref()
    }

    /// Sync marks read so far.
    pub fn sync_marks(&self) -> usize {
        self.assembly.sync_marks
    }

    /// The log offset reading has reached.
    pub fn offset(&self) -> u64 {
        self.block_start + self.pos.min(self.block.len()) as u64
    }

    /// The length of the whole log, reading (and discarding) whatever is left of the input:
    /// what a replay that stopped early needs to count the bytes it dropped.
    pub fn into_log_len(mut self) -> io::Result<u64> {
        while self.load_block()? {}
        Ok(self.block_start + self.block.len() as u64)
    }

    /// Reads the next block into `block`; false at the end of the input.
    fn load_block(&mut self) -> io::Result<bool> {
        if self.eof {
            return Ok(false);
        }
        self.block_start += self.block.len() as u64;
        self.block.resize(BLOCK_SIZE, 0);
        let mut filled = 0;
        while filled < BLOCK_SIZE {
            match self.input.read(&mut self.block[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.block.truncate(filled);
                    return Err(e);
                }
            }
        }
        self.block.truncate(filled);
        self.pos = 0;
        self.eof = filled < BLOCK_SIZE;
        Ok(filled > 0)
    }

    /// Reads one fragment (or skips a block's padding, or ends the log).
    fn step(&mut self) -> io::Result<Step> {
        if self.pos >= self.block.len() && !self.load_block()? {
            self.end = Some(match self.assembly.pending {
                Some(offset) => LogEnd::TornTail { offset },
                None => LogEnd::Clean,
            });
            return Ok(Step::Continue);
        }
        let block_left = BLOCK_SIZE - self.pos;
        if block_left < HEADER_SIZE {
            self.pos = BLOCK_SIZE; // zero padding at the end of a block
            return Ok(Step::Continue);
        }
        let at = self.block_start + self.pos as u64;
        let (kind, payload, len) = match parse_fragment(&self.block, self.pos, block_left) {
            Fragment::Ok { kind, payload, len } => (kind, payload, len),
            Fragment::Zero => {
                self.end = Some(self.classify_damage("zeroed fragment header", true)?);
                return Ok(Step::Continue);
            }
            Fragment::Bad(reason) => {
                let cut_off = reason.starts_with("truncated");
                self.end = Some(self.classify_damage(reason, cut_off)?);
                return Ok(Step::Continue);
            }
        };
        let start = self.pos + HEADER_SIZE;
        self.pos = start + len;
        match self.assembly.take(kind, payload, at) {
            Ok(Taken::Nothing) => Ok(Step::Continue),
            Ok(Taken::Full) => Ok(Step::InBlock(start..start + len)),
            Ok(Taken::Assembled) => Ok(Step::Assembled),
            Err(reason) => {
                self.end = Some(corrupted(at, reason));
                Ok(Step::Continue)
            }
        }
    }

    /// What the damage at `pos` of the current block was, from what follows it (see the module
    /// docs), streaming through the rest of the input. `cut_off`: the damage looks like a
    /// cut-off write (truncation or zeroed space) rather than altered bytes.
    fn classify_damage(&mut self, reason: &str, cut_off: bool) -> io::Result<LogEnd> {
        let offset = self.block_start + self.pos as u64;
        let reason = reason.to_string();
        // Marks are looked for from the byte after the damage, fragments only from the next
        // block on (fragments start every block afresh, so they can be found there without
        // knowing where the damage ends). A candidate mark lies inside one block, like every
        // fragment, so scanning block by block misses none.
        let mut mark = sync_mark_in(&self.block, self.block_start, self.pos + 1);
        let mut fragments_after = 0;
        while mark.is_none() && self.load_block()? {
            mark = sync_mark_in(&self.block, self.block_start, 0);
            fragments_after += fragments_in(&self.block);
        }
        if let Some(mark) = mark {
            return Ok(LogEnd::Corrupted {
                offset,
                reason: format!(
                    "{reason}, before a sync mark at {mark} (the damaged bytes had been synced)"
                ),
            });
        }
        Ok(match fragments_after {
            0 if cut_off => LogEnd::TornTail { offset },
            0 => LogEnd::DamagedTail { offset, reason },
            fragments_after => LogEnd::UnsyncedLoss {
                offset,
                reason,
                fragments_after,
            },
        })
    }
}

impl Assembly {
    /// Adds one valid fragment, read at log offset `at`; an error for fragments no writer
    /// produces.
    fn take(&mut self, kind: RecordType, payload: &[u8], at: u64) -> Result<Taken, &'static str> {
        match kind {
            RecordType::Full | RecordType::First | RecordType::SyncMark
                if self.pending.is_some() =>
            {
                Err("record interrupted by a new one")
            }
            RecordType::Full => Ok(Taken::Full),
            RecordType::First => {
                self.record.clear();
                self.record.extend_from_slice(payload);
                self.pending = Some(at);
                Ok(Taken::Nothing)
            }
            RecordType::SyncMark if is_sync_mark_at(payload, at) => {
                self.sync_marks += 1;
                Ok(Taken::Nothing)
            }
            RecordType::SyncMark => Err("sync mark names another offset"),
            RecordType::Middle | RecordType::Last => {
                if self.pending.is_none() {
                    return Err("fragment without a first part");
                }
                self.record.extend_from_slice(payload);
                if kind == RecordType::Middle {
                    return Ok(Taken::Nothing);
                }
                self.pending = None;
                Ok(Taken::Assembled)
            }
        }
    }
}

/// The log offset of the first sync mark in `block` (which starts at log offset `start`) at
/// or after position `from`, looked for at every byte: the fragments after a lost page need
/// not start where the reader could resynchronise. A mark names its own offset, so a
/// mark-shaped run of bytes inside a record's payload counts only if it also sits exactly
/// where it says.
fn sync_mark_in(block: &[u8], start: u64, from: usize) -> Option<u64> {
    let last = block
        .len()
        .checked_sub(HEADER_SIZE)?
        .min(BLOCK_SIZE - HEADER_SIZE);
    (from..=last).find_map(|pos| {
        if block[pos + 6] != RecordType::SyncMark as u8 {
            return None;
        }
        let at = start + pos as u64;
        match parse_fragment(block, pos, BLOCK_SIZE - pos) {
            Fragment::Ok {
                kind: RecordType::SyncMark,
                payload,
                ..
            } if is_sync_mark_at(payload, at) => Some(at),
            _ => None,
        }
    })
}

/// Valid fragments from the start of `block` up to the first invalid one.
fn fragments_in(block: &[u8]) -> usize {
    let mut count = 0;
    let mut pos = 0;
    while block.len() - pos >= HEADER_SIZE {
        match parse_fragment(block, pos, BLOCK_SIZE - pos) {
            Fragment::Ok { len, .. } => {
                count += 1;
                pos += HEADER_SIZE + len;
            }
            Fragment::Zero | Fragment::Bad(_) => break,
        }
    }
    count
}

/// Whether `payload` is the payload of a sync mark written at log offset `at`.
fn is_sync_mark_at(payload: &[u8], at: u64) -> bool {
    let block_left = BLOCK_SIZE - (at % BLOCK_SIZE as u64) as usize;
    payload == sync_mark_payload(at, block_left).as_slice()
}

fn corrupted(offset: u64, reason: &str) -> LogEnd {
    LogEnd::Corrupted {
        offset,
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

/// The fragment at `pos` of `block`, with `block_left` bytes left in its block.
fn parse_fragment(block: &[u8], pos: usize, block_left: usize) -> Fragment<'_> {
    let Some(header) = block.get(pos..pos + HEADER_SIZE) else {
        return Fragment::Bad("truncated fragment header");
    };
    if header.iter().all(|&b| b == 0) {
        return Fragment::Zero;
    }
    let len = read_u16(header, 4) as usize;
    if HEADER_SIZE + len > block_left {
        return Fragment::Bad("fragment crosses a block boundary");
    }
    let Some(payload) = block.get(pos + HEADER_SIZE..pos + HEADER_SIZE + len) else {
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
    use proptest::prelude::*;
    use std::io::{self, Read, Write};
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

    /// A `Read` handing `bytes` over in the sizes `chunks` cycles through, with an
    /// `Interrupted` error before every fifth read (which readers must retry).
    struct Chunked<'a> {
        bytes: &'a [u8],
        chunks: Vec<usize>,
        reads: usize,
    }

    impl Read for Chunked<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.reads += 1;
            if self.reads.is_multiple_of(5) {
                return Err(io::ErrorKind::Interrupted.into());
            }
            let chunk = self.chunks[self.reads % self.chunks.len()].max(1);
            let n = chunk.min(buf.len()).min(self.bytes.len());
            buf[..n].copy_from_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            Ok(n)
        }
    }

    /// What the streaming reader makes of `bytes` handed over in `chunks`.
    fn read_streamed(bytes: &[u8], chunks: &[usize]) -> LogContents {
        let mut reader = LogReader::new(Chunked {
            bytes,
            chunks: chunks.to_vec(),
            reads: 0,
        });
        let mut records = Vec::new();
        while let Some(record) = reader.next_record().unwrap() {
            records.push(record.to_vec());
        }
        let end = reader.end().cloned().unwrap();
        let sync_marks = reader.sync_marks();
        assert_eq!(reader.into_log_len().unwrap(), bytes.len() as u64);
        LogContents {
            records,
            end,
            sync_marks,
        }
    }

    /// The streaming reader, whatever sizes its input comes in, reads `bytes` exactly as the
    /// whole-slice reader it replaced did.
    fn assert_reads_as_before(bytes: &[u8], chunks: &[usize]) {
        let before = super::super::reference_reader::read_log(bytes);
        assert_eq!(read_log(bytes), before, "read_log");
        assert_eq!(read_streamed(bytes, chunks), before, "chunks {chunks:?}");
    }

    #[test]
    fn log_streamed_in_any_chunks_reads_as_before_on_the_unit_cases() {
        let records = many(1000, 4);
        let synced = records.len() - 5;
        let (bytes, starts) = synced_log_of(&records, &[3, synced]);
        let mut cases = vec![bytes.clone(), log_of(&sample()), Vec::new()];
        for at in [
            starts[synced] as usize + 10,
            BLOCK_SIZE + 100,
            bytes.len() - 3,
        ] {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x40;
            cases.push(damaged);
        }
        let mut lost_page = bytes.clone();
        lost_page[BLOCK_SIZE + 4096..BLOCK_SIZE + 8192].fill(0);
        cases.push(lost_page);
        cases.extend(
            (0..bytes.len())
                .step_by(4099)
                .map(|len| bytes[..len].to_vec()),
        );
        for case in &cases {
            for chunks in [
                &[1usize][..],
                &[7, 3],
                &[BLOCK_SIZE],
                &[BLOCK_SIZE + 1, 5],
                &[1 << 20],
            ] {
                assert_reads_as_before(case, chunks);
            }
        }
    }

    /// How a generated log is damaged.
    #[derive(Debug, Clone)]
    enum Damage {
        Truncate(f64),
        Flip(f64, u8),
        Zero(f64, usize),
        Garbage(f64, usize, u64),
    }

    fn damage_strategy() -> impl Strategy<Value = Damage> {
        prop_oneof![
            (0.0..1.0f64).prop_map(Damage::Truncate),
            (0.0..1.0f64, 0u8..8).prop_map(|(at, bit)| Damage::Flip(at, bit)),
            (0.0..1.0f64, 1usize..9000).prop_map(|(at, n)| Damage::Zero(at, n)),
            (0.0..1.0f64, 1usize..5000, any::<u64>())
                .prop_map(|(at, n, seed)| Damage::Garbage(at, n, seed)),
        ]
    }

    fn apply(bytes: &mut Vec<u8>, damage: &Damage) {
        let at = |f: f64, len: usize| ((len as f64 * f) as usize).min(len.saturating_sub(1));
        if bytes.is_empty() {
            return;
        }
        match *damage {
            Damage::Truncate(f) => bytes.truncate(at(f, bytes.len())),
            Damage::Flip(f, bit) => {
                let i = at(f, bytes.len());
                bytes[i] ^= 1 << bit;
            }
            Damage::Zero(f, n) => {
                let i = at(f, bytes.len());
                let end = (i + n).min(bytes.len());
                bytes[i..end].fill(0);
            }
            Damage::Garbage(f, n, mut seed) => {
                let i = at(f, bytes.len());
                let end = (i + n).min(bytes.len());
                for b in &mut bytes[i..end] {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    *b = (seed >> 56) as u8;
                }
            }
        }
    }

    fn record_size() -> impl Strategy<Value = usize> {
        prop_oneof![6 => 0usize..300, 3 => 0usize..6000, 1 => 0usize..3 * BLOCK_SIZE]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// Logs of records of any size, synced anywhere, damaged in every way recovery meets
        /// (cut off, bits flipped, pages zeroed or garbage), read through a `Read` handing the
        /// bytes over in arbitrary pieces: the same records, end and sync marks as before.
        #[test]
        fn log_streamed_in_any_chunks_reads_as_before(
            sizes in proptest::collection::vec((record_size(), proptest::bool::weighted(0.15)), 0..40),
            damages in proptest::collection::vec(damage_strategy(), 0..3),
            chunks in proptest::collection::vec(1usize..70_000, 1..6),
        ) {
            let records: Vec<Vec<u8>> = sizes
                .iter()
                .enumerate()
                .map(|(i, (n, _))| vec![(i % 251) as u8 + 1; *n])
                .collect();
            let syncs: Vec<usize> = sizes
                .iter()
                .enumerate()
                .filter(|(_, (_, sync))| *sync)
                .map(|(i, _)| i)
                .collect();
            let (mut bytes, _) = synced_log_of(&records, &syncs);
            for damage in &damages {
                apply(&mut bytes, damage);
            }
            assert_reads_as_before(&bytes, &chunks);
        }
    }
}
