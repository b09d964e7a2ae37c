//! `get_updates_since`: the write batches still in the database's WALs, read from the files
//! (siftdb's log format, `docs/FORMAT.md`: 32 KiB blocks of checksummed fragments, each record
//! a batch).

use std::path::Path;

use crate::write_batch::{DELETE, DELETE_RANGE, MERGE, PUT};
use crate::{Error, ErrorKind, WriteBatch};

const BLOCK: usize = 32 * 1024;
/// The tag of log data in a batch record (siftdb's `WriteBatch::put_log_data`).
const LOG_DATA_TAG: u8 = 0x7f;
const HEADER: usize = 7;

/// The batches of every WAL in `dir`, oldest first, with their first sequence numbers.
pub(crate) fn read_batches(dir: &Path) -> Result<Vec<(u64, WriteBatch)>, Error> {
    let io =
        |e: std::io::Error| Error::with_kind(ErrorKind::IOError, format!("{}: {e}", dir.display()));
    let mut logs: Vec<(u64, std::path::PathBuf)> = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        let number = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".log"))
            .and_then(|n| n.parse().ok());
        if let Some(number) = number {
            logs.push((number, path));
        }
    }
    logs.sort();
    let mut batches = Vec::new();
    for (_, path) in logs {
        // A WAL deleted since the listing (its memtables flushed) holds nothing to return.
        let bytes = match std::fs::read(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            read => read.map_err(io)?,
        };
        batches.extend(records(&bytes).into_iter().filter_map(|r| decode(&r)));
    }
    Ok(batches)
}

/// The whole records of one log, up to its first damage (a torn tail ends it).
fn records(bytes: &[u8]) -> Vec<Vec<u8>> {
    let (mut out, mut partial, mut pos) = (Vec::new(), Vec::new(), 0);
    while pos + HEADER <= bytes.len() {
        let left_in_block = BLOCK - pos % BLOCK;
        if left_in_block < HEADER {
            pos += left_in_block;
            continue;
        }
        let crc = u32::from_le_bytes([bytes[pos], bytes[pos + 1], bytes[pos + 2], bytes[pos + 3]]);
        let len = u16::from_le_bytes([bytes[pos + 4], bytes[pos + 5]]) as usize;
        let kind = bytes[pos + 6];
        let Some(payload) = bytes.get(pos + HEADER..pos + HEADER + len) else {
            break;
        };
        if kind == 0
            || HEADER + len > left_in_block
            || crc32fast::hash(&bytes[pos + 6..pos + HEADER + len]) != crc
        {
            break;
        }
        pos += HEADER + len;
        match kind {
            1 => out.push(payload.to_vec()),
            2 => partial = payload.to_vec(),
            3 => partial.extend_from_slice(payload),
            4 => {
                partial.extend_from_slice(payload);
                out.push(std::mem::take(&mut partial));
            }
            5 => {}
            _ => break,
        }
    }
    out
}

fn varint(rep: &[u8], pos: &mut usize) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *rep.get(*pos)?;
        *pos += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

fn bytes<'a>(rep: &'a [u8], pos: &mut usize) -> Option<&'a [u8]> {
    let len = usize::try_from(varint(rep, pos)?).ok()?;
    let out = rep.get(*pos..*pos + len)?;
    *pos += len;
    Some(out)
}

/// A batch record as a [`WriteBatch`] with its first sequence number (`None`: a sequence
/// marker, or damage).
fn decode(rep: &[u8]) -> Option<(u64, WriteBatch)> {
    let sequence = u64::from_le_bytes(rep.get(..8)?.try_into().ok()?);
    let count = u32::from_le_bytes(rep.get(8..12)?.try_into().ok()?);
    let mut pos = 12;
    let mut batch = WriteBatch::default();
    batch.set_sequence(sequence);
    let mut ops = 0;
    while pos < rep.len() {
        let tag = rep[pos];
        pos += 1;
        if tag == LOG_DATA_TAG {
            batch.put_log_data(bytes(rep, &mut pos)?);
            continue;
        }
        ops += 1;
        let ks = if tag & 0x80 != 0 {
            u32::try_from(varint(rep, &mut pos)?).ok()?
        } else {
            0
        };
        let key = bytes(rep, &mut pos)?;
        let (kind, value) = match tag & 0x7f {
            0 => (DELETE, &[][..]),
            1 => (PUT, bytes(rep, &mut pos)?),
            2 => (PUT, bytes(rep, &mut pos)?.get(8..)?),
            3 => (MERGE, bytes(rep, &mut pos)?),
            4 => (DELETE_RANGE, bytes(rep, &mut pos)?),
            _ => return None,
        };
        batch.push_logged(kind, ks, key, value);
    }
    // A batch of log data alone is returned too (RocksDB's iterator shows it).
    (ops == count && !batch.data()[12..].is_empty()).then_some((sequence, batch))
}
