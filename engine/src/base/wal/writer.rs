//! Appends records to a log.

use std::io::{self, Write};

use super::{fragment_crc, sync_mark_payload, RecordType, BLOCK_SIZE, HEADER_SIZE};
use crate::base::fs::WritableFile;

/// Writes records in the log format to a file.
#[derive(Debug)]
pub struct LogWriter {
    file: Box<dyn WritableFile>,
    block_offset: usize,
    size: u64,
    /// `size` right after the last sync mark: a sync with nothing written since needs none.
    marked_at: u64,
}

impl LogWriter {
    /// A writer appending to a new, empty file.
    pub fn new(file: Box<dyn WritableFile>) -> LogWriter {
        LogWriter {
            file,
            block_offset: 0,
            size: 0,
            marked_at: 0,
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
            let room = self.start_fragment()?;
            let take = payload.len().min(room);
            let last = take == payload.len();
            let kind = match (first, last) {
                (true, true) => RecordType::Full,
                (true, false) => RecordType::First,
                (false, true) => RecordType::Last,
                (false, false) => RecordType::Middle,
            };
            let (fragment, rest) = payload.split_at(take);
            self.write_fragment(kind, fragment)?;
            payload = rest;
            first = false;
            if last {
                return Ok(());
            }
        }
    }

    /// Makes room for a fragment header in the current block (zero-filling a tail too small for
    /// one and starting a new block); returns the payload bytes the block has room for.
    fn start_fragment(&mut self) -> io::Result<usize> {
        let left = BLOCK_SIZE - self.block_offset;
        if left < HEADER_SIZE {
            self.write(&[0u8; HEADER_SIZE][..left])?;
            self.block_offset = 0;
            return Ok(BLOCK_SIZE - HEADER_SIZE);
        }
        Ok(left - HEADER_SIZE)
    }

    fn write_fragment(&mut self, kind: RecordType, fragment: &[u8]) -> io::Result<()> {
        let kind = kind as u8;
        let mut header = [0u8; HEADER_SIZE];
        header[..4].copy_from_slice(&fragment_crc(kind, fragment).to_le_bytes());
        header[4..6].copy_from_slice(&(fragment.len() as u16).to_le_bytes());
        header[6] = kind;
        self.write(&header)?;
        self.write(fragment)?;
        self.block_offset += HEADER_SIZE + fragment.len();
        Ok(())
    }

    /// Appends a sync mark (see the module docs of [`super`]): called only once every byte
    /// before it is durable.
    fn add_sync_mark(&mut self) -> io::Result<()> {
        if self.size == self.marked_at {
            return Ok(());
        }
        self.start_fragment()?;
        let payload = sync_mark_payload(self.size, BLOCK_SIZE - self.block_offset);
        self.write_fragment(RecordType::SyncMark, &payload)?;
        self.marked_at = self.size;
        Ok(())
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

    /// Makes everything written durable (survives power loss), then appends a sync mark that
    /// says so and hands it to the OS (it becomes durable with the next sync).
    pub fn sync(&mut self) -> io::Result<()> {
        self.file.flush()?;
        self.file.sync()?;
        self.add_sync_mark()?;
        self.file.flush()
    }

    /// Hands everything written to the OS and closes the log unsynced, returning its file for
    /// a later `sync` (see `core/closed_wals.rs`): until then, a power loss may take any of
    /// its pages written since its last sync.
    pub fn close_unsynced(mut self) -> io::Result<Box<dyn WritableFile>> {
        self.file.flush()?;
        Ok(self.file)
    }

    /// [`LogWriter::sync`], then syncs the mark too: once this returns, a power loss leaves a
    /// mark after every byte written so far. The manifest appends this way, so an edit whose
    /// append returned always has a durable mark after it, and a damaged last edit without
    /// one was never acknowledged.
    pub fn sync_marked(&mut self) -> io::Result<()> {
        self.sync()?;
        self.file.sync()
    }
}
