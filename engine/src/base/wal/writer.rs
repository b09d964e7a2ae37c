//! Appends records to a log.

use std::io::{self, Write};

use super::{fragment_crc, RecordType, BLOCK_SIZE, HEADER_SIZE};
use crate::base::fs::WritableFile;

/// Writes records in the log format to a file.
#[derive(Debug)]
pub struct LogWriter {
    file: Box<dyn WritableFile>,
    block_offset: usize,
    size: u64,
}

impl LogWriter {
    /// A writer appending to a new, empty file.
    pub fn new(file: Box<dyn WritableFile>) -> LogWriter {
        LogWriter {
            file,
            block_offset: 0,
            size: 0,
        }
    }

    /// Bytes written so far.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Appends one record (buffered: call [`LogWriter::flush`] or [`LogWriter::sync`]).
    pub fn add_record(&mut self, mut payload: &[u8]) -> io::Result<()> {
        let mut first = true;
        loop {
            let left = BLOCK_SIZE - self.block_offset;
            if left < HEADER_SIZE {
                // Too small for a header: zero-fill and start a new block.
                self.write(&[0u8; HEADER_SIZE][..left])?;
                self.block_offset = 0;
                continue;
            }
            let room = left - HEADER_SIZE;
            let take = payload.len().min(room);
            let last = take == payload.len();
            let kind = match (first, last) {
                (true, true) => RecordType::Full,
                (true, false) => RecordType::First,
                (false, true) => RecordType::Last,
                (false, false) => RecordType::Middle,
            } as u8;
            let (fragment, rest) = payload.split_at(take);
            let mut header = [0u8; HEADER_SIZE];
            header[..4].copy_from_slice(&fragment_crc(kind, fragment).to_le_bytes());
            header[4..6].copy_from_slice(&(take as u16).to_le_bytes());
            header[6] = kind;
            self.write(&header)?;
            self.write(fragment)?;
            self.block_offset += HEADER_SIZE + take;
            payload = rest;
            first = false;
            if last {
                return Ok(());
            }
        }
    }

    fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.file.write_all(bytes)?;
        self.size += bytes.len() as u64;
        Ok(())
    }

    /// Hands everything written to the operating system (survives a process crash).
    pub fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }

    /// Makes everything written durable (survives power loss).
    pub fn sync(&mut self) -> io::Result<()> {
        self.file.flush()?;
        self.file.sync()
    }
}
