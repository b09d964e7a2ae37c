//! The cursor over a table's entries: an index cursor naming data blocks, and the data block it
//! names — both ways. The index cursor is itself two levels deep on a partitioned table (the
//! held top level naming index partitions, read through the cache as the cursor reaches them).

use std::sync::Arc;

use siftdb_cache::BlockKind;

use super::blocks::Readahead;
use super::global_seqno::{patch_key_into, stored_order_target};
use super::{Table, TableIterOptions};
use crate::block::{Block, BlockIter};
use crate::error::SstError;
use crate::format::BlockHandle;
use crate::internal_key::compare_internal;

impl Table {
    /// An iterator over all entries (internal keys) of the table. It holds an `Arc` of the
    /// table, so it can outlive the caller's borrow and move to another thread.
    pub fn iter(self: &Arc<Self>) -> TableIter {
        self.iter_with(TableIterOptions::default())
    }

    /// [`Table::iter`] reading blocks as `options` say (compaction: without filling the cache).
    pub fn iter_with(self: &Arc<Self>, options: TableIterOptions) -> TableIter {
        TableIter {
            table: Arc::clone(self),
            options,
            index: None,
            data: None,
            error: None,
            readahead: None,
            sequential: SequentialReads::default(),
            global_seqno: self.global_seqno,
            patched_key: Vec::new(),
            target: Vec::new(),
        }
    }
}

/// Sequential data block reads after which a scan starts reading ahead (RocksDB's automatic
/// readahead starts after two file reads).
const AUTO_READAHEAD_AFTER: u32 = 2;
/// The first automatic readahead (RocksDB's `initial_auto_readahead_size`, 8 KiB).
const AUTO_READAHEAD_INITIAL: usize = 8 << 10;
/// The automatic readahead doubles with each refill up to this (RocksDB's
/// `max_auto_readahead_size`, 256 KiB).
const AUTO_READAHEAD_MAX: usize = 256 << 10;

/// How sequential a cursor's data block reads are: a scan that reads block after block of a
/// table gets its next blocks read ahead in one read (growing from 8 KiB to 256 KiB), a cursor
/// that jumps (seeks) reads one block at a time. Kernel readahead does this for buffered reads
/// of a file read in order; a cursor that also seeks defeats it, and direct reads have none.
#[derive(Debug, Default)]
struct SequentialReads {
    /// The offset right after the last data block read: the next one, if the reads go on in
    /// order.
    next: Option<u64>,
    /// Data blocks read in a row, each right after the one before.
    run: u32,
    /// The automatic readahead now (0: none yet).
    size: usize,
}

impl SequentialReads {
    /// The bytes to read ahead for the data block at `offset` (`len` bytes stored): a fixed
    /// `readahead_bytes`, or with `auto_readahead` the automatic size once the reads are
    /// sequential; 0 for a read of the block alone.
    fn readahead_for(&mut self, offset: u64, len: usize, options: &TableIterOptions) -> usize {
        let sequential = self.next == Some(offset);
        self.next = offset.checked_add(len as u64);
        if options.readahead_bytes > 0 {
            return options.readahead_bytes;
        }
        if !options.auto_readahead || !sequential {
            self.run = 0;
            self.size = 0;
            return 0;
        }
        self.run += 1;
        if self.run < AUTO_READAHEAD_AFTER {
            return 0;
        }
        if self.size == 0 {
            self.size = AUTO_READAHEAD_INITIAL;
        }
        self.size
    }

    /// The readahead was used up and read again: the next one reads twice as much.
    fn refilled(&mut self) {
        self.size = (self.size * 2).min(AUTO_READAHEAD_MAX);
    }
}

/// Where the index cursor is: on a data block's index entry, in the index or in a partition.
enum IndexCursor {
    Single(BlockIter),
    /// The top level and the partition it names (`None` before one is loaded).
    Partitioned {
        top: BlockIter,
        partition: Option<BlockIter>,
    },
}

/// A cursor over a table's entries: index → data blocks (→ index partitions when partitioned).
pub struct TableIter {
    table: Arc<Table>,
    options: TableIterOptions,
    index: Option<IndexCursor>,
    data: Option<BlockIter>,
    error: Option<SstError>,
    /// The bytes read ahead (with `readahead_bytes`, or a scan's automatic readahead).
    readahead: Option<Readahead>,
    /// How sequential the cursor's data block reads are (its automatic readahead).
    sequential: SequentialReads,
    /// The table's global seqno ([`Table::global_seqno`], `None` at 0): every key the cursor
    /// yields carries it.
    global_seqno: Option<u64>,
    /// With a global seqno: the current key, patched to it (the data block's key buffer is the
    /// base of the next key's shared prefix, so it is not patched in place).
    patched_key: Vec<u8>,
    /// With a global seqno: the last seek target, translated to the stored keys' order.
    target: Vec<u8>,
}

impl std::fmt::Debug for TableIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableIter")
            .field("table", &self.table.id)
            .field("valid", &self.valid())
            .finish()
    }
}

/// How the index cursor moves.
#[derive(Clone, Copy)]
enum Move<'a> {
    First,
    Last,
    Seek(&'a [u8]),
    Next,
    Prev,
}

impl TableIter {
    /// Whether the iterator is on an entry.
    pub fn valid(&self) -> bool {
        self.error.is_none() && self.data.as_ref().is_some_and(BlockIter::valid)
    }

    /// Current internal key (at the table's global seqno if it has one).
    pub fn key(&self) -> &[u8] {
        if self.global_seqno.is_some() {
            return &self.patched_key;
        }
        self.data.as_ref().map_or(&[], |d| d.key())
    }

    /// Current value.
    pub fn value(&self) -> &[u8] {
        self.data.as_ref().map_or(&[], |d| d.value())
    }

    /// The error that stopped the iterator, if any. Check it when `valid()` turns false.
    pub fn status(&self) -> Option<&SstError> {
        self.error.as_ref()
    }

    /// Takes the error out, if any (the iterator then stays invalid until repositioned).
    pub fn take_error(&mut self) -> Option<SstError> {
        let error = self.error.take();
        if error.is_some() {
            self.data = None;
            self.patched_key.clear();
        }
        error
    }

    fn fail(&mut self, e: SstError) {
        self.error = Some(e);
        self.data = None;
    }

    /// A block the cursor reads (an index partition or a data block), as its options say.
    fn block(&mut self, handle: BlockHandle, kind: BlockKind) -> Result<Arc<Block>, SstError> {
        if !self.options.fill_cache {
            if self.options.readahead_bytes > 0 {
                let ahead = self.readahead.get_or_insert_with(Readahead::default);
                return self
                    .table
                    .block_read_ahead(handle, kind, &self.options, ahead);
            }
            return self.table.block_for_iter(handle, kind, &self.options);
        }
        let want = match kind {
            BlockKind::Data => {
                let len = self.table.stored_len(handle)?;
                self.sequential
                    .readahead_for(handle.offset, len, &self.options)
            }
            _ => 0,
        };
        if want == 0 {
            return self.table.block_for_iter(handle, kind, &self.options);
        }
        let ahead = self.readahead.get_or_insert_with(Readahead::default);
        let (block, refilled) = self
            .table
            .cached_block_read_ahead(handle, kind, want, ahead)?;
        if refilled {
            self.sequential.refilled();
        }
        Ok(block)
    }

    /// The index cursor, opened (the index, or a partitioned index's top level) if needed.
    fn open_index(&mut self) -> bool {
        if self.index.is_some() {
            return true;
        }
        match self.table.index_block_filling(self.options.fill_cache) {
            Ok((block, _)) => {
                self.index = Some(if self.table.is_partitioned() {
                    IndexCursor::Partitioned {
                        top: block.iter(),
                        partition: None,
                    }
                } else {
                    IndexCursor::Single(block.iter())
                });
                true
            }
            Err(e) => {
                self.fail(e);
                false
            }
        }
    }

    /// Moves the index cursor; afterwards it is on an index entry or invalid (an error is kept
    /// in `self.error`).
    fn move_index(&mut self, how: Move<'_>) {
        let table = Arc::clone(&self.table);
        let index_offset = table.footer.index.offset;
        let Some(cursor) = self.index.as_mut() else {
            return;
        };
        let result = match cursor {
            IndexCursor::Single(it) => {
                step(it, how);
                it.error()
                    .map(|e| table.corruption(index_offset, e))
                    .map_or(Ok(()), Err)
            }
            IndexCursor::Partitioned { top, partition } => {
                let load = |handle| table.block_for_iter(handle, BlockKind::Index, &self.options);
                move_partitioned(top, partition, how, index_offset, &table, load)
            }
        };
        if let Err(e) = result {
            self.fail(e);
        }
    }

    fn index_entry(&self) -> Option<&BlockIter> {
        match self.index.as_ref()? {
            IndexCursor::Single(it) => Some(it),
            IndexCursor::Partitioned { partition, .. } => partition.as_ref(),
        }
    }

    /// Loads the data block the index cursor is on (`data` = `None` if it is not on one).
    fn load_data_block(&mut self) -> bool {
        let Some(entry) = self.index_entry() else {
            self.data = None;
            return false;
        };
        if !entry.valid() {
            self.data = None;
            return false;
        }
        let Some(handle) = BlockHandle::decode(entry.value()) else {
            let offset = self.table.footer.index.offset;
            self.fail(self.table.corruption(offset, "undecodable index entry"));
            return false;
        };
        match self.block(handle, BlockKind::Data) {
            Ok(block) => {
                self.data = Some(block.iter());
                true
            }
            Err(e) => {
                self.fail(e);
                false
            }
        }
    }

    /// After positioning within a data block: move on to following blocks while invalid
    /// (`forward`), or to earlier ones.
    fn skip_exhausted_blocks(&mut self, forward: bool) {
        loop {
            let Some(data) = self.data.as_ref() else {
                return;
            };
            if data.valid() {
                return;
            }
            if let Some(e) = data.error() {
                self.fail(self.table.corruption(0, e));
                return;
            }
            self.move_index(if forward { Move::Next } else { Move::Prev });
            if self.error.is_some() || !self.load_data_block() {
                return;
            }
            if let Some(d) = self.data.as_mut() {
                if forward {
                    d.seek_to_first();
                } else {
                    d.seek_to_last();
                }
            }
        }
    }

    /// With a global seqno: patches the current key into `patched_key` (emptied when the
    /// cursor is on no entry). Called after every move, so `key()` only reads.
    fn patch_key(&mut self) {
        let Some(g) = self.global_seqno else {
            return;
        };
        match self.data.as_ref().filter(|d| d.valid()) {
            Some(d) if self.error.is_none() => patch_key_into(d.key(), g, &mut self.patched_key),
            _ => self.patched_key.clear(),
        }
    }

    /// Positions the index cursor with `how`, then the data block it names with `position`,
    /// and patches the key it lands on.
    fn position(&mut self, how: Move<'_>, position: impl FnOnce(&mut BlockIter), forward: bool) {
        self.position_raw(how, position, forward);
        self.patch_key();
    }

    /// [`TableIter::position`] without patching the key.
    fn position_raw(
        &mut self,
        how: Move<'_>,
        position: impl FnOnce(&mut BlockIter),
        forward: bool,
    ) {
        self.error = None;
        if !self.open_index() {
            return;
        }
        self.move_index(how);
        if self.error.is_some() {
            return;
        }
        if self.load_data_block()
            && let Some(d) = self.data.as_mut()
        {
            position(d);
        }
        self.skip_exhausted_blocks(forward);
    }

    /// Moves to the first entry.
    pub fn seek_to_first(&mut self) {
        self.position(Move::First, BlockIter::seek_to_first, true);
    }

    /// Moves to the last entry.
    pub fn seek_to_last(&mut self) {
        self.position(Move::Last, BlockIter::seek_to_last, false);
    }

    /// Moves to the first entry whose internal key is ≥ `target` (an encoded internal key);
    /// at a global seqno, the first whose key carrying it is.
    pub fn seek(&mut self, target: &[u8]) {
        let Some(g) = self.global_seqno else {
            self.position(
                Move::Seek(target),
                |d| d.seek(target, compare_internal),
                true,
            );
            return;
        };
        // The blocks hold the keys as stored: seek to the target that lands there as `target`
        // lands among the patched keys (the buffer is reused across seeks).
        let mut buf = std::mem::take(&mut self.target);
        let stored = stored_order_target(target, g, &mut buf);
        self.position(
            Move::Seek(stored),
            |d| d.seek(stored, compare_internal),
            true,
        );
        self.target = buf;
    }

    /// Moves to the last entry whose internal key is ≤ `target` (an encoded internal key);
    /// at a global seqno, the last whose key carrying it is (the patched key is what is
    /// compared with `target`).
    pub fn seek_for_prev(&mut self, target: &[u8]) {
        self.seek(target);
        if self.error.is_some() {
            return;
        }
        if !self.valid() {
            self.seek_to_last();
        } else if compare_internal(self.key(), target) == std::cmp::Ordering::Greater {
            self.prev();
        }
    }

    /// Moves to the next entry.
    pub fn next(&mut self) {
        if let Some(d) = self.data.as_mut() {
            d.next();
        }
        self.skip_exhausted_blocks(true);
        self.patch_key();
    }

    /// Moves to the previous entry (invalid before the first).
    pub fn prev(&mut self) {
        if let Some(d) = self.data.as_mut() {
            d.prev();
        }
        self.skip_exhausted_blocks(false);
        self.patch_key();
    }
}

/// Moves a block cursor (an index or an index partition).
fn step(it: &mut BlockIter, how: Move<'_>) {
    match how {
        Move::First => it.seek_to_first(),
        Move::Last => it.seek_to_last(),
        Move::Seek(target) => it.seek(target, compare_internal),
        Move::Next => it.next(),
        Move::Prev => it.prev(),
    }
}

/// Moves a partitioned index cursor: the top level picks a partition (loaded with `load`), the
/// partition the entry; running off a partition moves the top level on (or back) to the next
/// non-empty one.
fn move_partitioned(
    top: &mut BlockIter,
    partition: &mut Option<BlockIter>,
    how: Move<'_>,
    index_offset: u64,
    table: &Table,
    load: impl Fn(BlockHandle) -> Result<Arc<Block>, SstError>,
) -> Result<(), SstError> {
    let forward = !matches!(how, Move::Last | Move::Prev);
    match how {
        Move::Next | Move::Prev => match partition.as_mut() {
            Some(p) => step(p, how),
            None => return Ok(()),
        },
        Move::First | Move::Last | Move::Seek(_) => {
            step(top, how);
            *partition = open_partition(top, index_offset, table, &load)?;
            if let Some(p) = partition.as_mut() {
                step(p, how);
            }
        }
    }
    // Off the end (or the start) of a partition: the next (or previous) partition's first (or
    // last) entry.
    while let Some(p) = partition.as_ref() {
        if let Some(e) = p.error() {
            return Err(table.corruption(index_offset, e));
        }
        if p.valid() {
            return Ok(());
        }
        if forward {
            top.next();
        } else {
            top.prev();
        }
        *partition = open_partition(top, index_offset, table, &load)?;
        if let Some(p) = partition.as_mut() {
            if forward {
                p.seek_to_first();
            } else {
                p.seek_to_last();
            }
        }
    }
    Ok(())
}

/// The partition the top-level cursor is on (`None` when it is on none).
fn open_partition(
    top: &BlockIter,
    index_offset: u64,
    table: &Table,
    load: &impl Fn(BlockHandle) -> Result<Arc<Block>, SstError>,
) -> Result<Option<BlockIter>, SstError> {
    if let Some(e) = top.error() {
        return Err(table.corruption(index_offset, e));
    }
    if !top.valid() {
        return Ok(None);
    }
    let handle = BlockHandle::decode(top.value())
        .ok_or_else(|| table.corruption(index_offset, "undecodable index partition handle"))?;
    Ok(Some(load(handle)?.iter()))
}
