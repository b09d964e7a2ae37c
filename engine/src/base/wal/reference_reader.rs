//! The log reader as it was before it streamed (it took the whole log as one slice), kept
//! only for tests: the streaming [`super::reader::LogReader`] must read every input, however
//! its `Read` hands the bytes over, exactly as this did.

use super::reader::{LogContents, LogEnd};
use super::{fragment_crc, sync_mark_payload, RecordType, BLOCK_SIZE, HEADER_SIZE};
use siftdb_sstable::coding::read_u16;

/// Reads every record of a log and classifies how it ends.
pub(crate) fn read_log(bytes: &[u8]) -> LogContents {
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
            if kind == RecordType::Last
                && let Some((buf, _)) = pending.take()
            {
                contents.records.push(buf);
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
