//! Data and index blocks: sorted entries with prefix-compressed keys and restart points.
//!
//! ```text
//! entry   := varint shared | varint unshared | varint value_len | key[shared..] | value
//! block   := entry* | restart offset (u32 LE)* | restart count (u32 LE)
//! ```
//!
//! Every `restart_interval`-th entry stores its whole key (shared = 0) and its offset is listed
//! in the restart array, so a seek binary-searches the restarts and then scans at most one
//! interval. Decoding is bounds-checked everywhere: a malformed block yields an error, never a
//! panic or an out-of-range read.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::coding::{get_len, put_varint, read_u32};

/// Builds one block.
#[derive(Debug)]
pub struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    restart_interval: usize,
    counter: usize,
    last_key: Vec<u8>,
    entries: usize,
}

impl BlockBuilder {
    /// A builder with a restart point every `restart_interval` entries (at least 1).
    pub fn new(restart_interval: usize) -> Self {
        BlockBuilder {
            buf: Vec::new(),
            restarts: vec![0],
            restart_interval: restart_interval.max(1),
            counter: 0,
            last_key: Vec::new(),
            entries: 0,
        }
    }

    /// Appends an entry. Keys must arrive in sorted order (the table builder checks).
    pub fn add(&mut self, key: &[u8], value: &[u8]) {
        let mut shared = 0;
        if self.counter < self.restart_interval {
            shared = self
                .last_key
                .iter()
                .zip(key)
                .take_while(|(a, b)| a == b)
                .count();
        } else {
            self.restarts.push(self.buf.len() as u32);
            self.counter = 0;
        }
        put_varint(&mut self.buf, shared as u64);
        put_varint(&mut self.buf, (key.len() - shared) as u64);
        put_varint(&mut self.buf, value.len() as u64);
        self.buf.extend_from_slice(&key[shared..]);
        self.buf.extend_from_slice(value);
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
        self.counter += 1;
        self.entries += 1;
    }

    /// Size the finished block would have.
    pub fn estimated_size(&self) -> usize {
        self.buf.len() + self.restarts.len() * 4 + 4
    }

    /// Entries added.
    pub fn len(&self) -> usize {
        self.entries
    }

    /// Whether no entry was added.
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// The last key added.
    pub fn last_key(&self) -> &[u8] {
        &self.last_key
    }

    /// Finishes the block and resets the builder for the next one.
    pub fn finish(&mut self) -> Vec<u8> {
        // The next block will likely be about this size: start it with that much room rather
        // than growing it from nothing by doubling (a copy per doubling, for every block).
        let room = self.buf.len() + 4 * (self.restarts.len() + 1);
        let mut out = std::mem::replace(&mut self.buf, Vec::with_capacity(room));
        for r in &self.restarts {
            out.extend_from_slice(&r.to_le_bytes());
        }
        out.extend_from_slice(&(self.restarts.len() as u32).to_le_bytes());
        self.restarts = vec![0];
        self.counter = 0;
        self.last_key.clear();
        self.entries = 0;
        out
    }
}

/// A decoded block (contents without the on-disk trailer).
#[derive(Debug)]
pub struct Block {
    data: Vec<u8>,
    restarts_at: usize,
    num_restarts: usize,
}

impl Block {
    /// The block's contents (entries, then the restart array).
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.data
    }

    /// Wraps block contents, validating the restart array.
    pub fn new(data: Vec<u8>) -> Result<Block, &'static str> {
        let len = data.len();
        let count_at = len
            .checked_sub(4)
            .ok_or("block shorter than its restart count")?;
        let num_restarts = read_u32(&data, count_at).ok_or("block truncated")? as usize;
        if num_restarts == 0 {
            return Err("block has no restart points");
        }
        let restarts_at = num_restarts
            .checked_mul(4)
            .and_then(|n| count_at.checked_sub(n))
            .ok_or("restart array larger than the block")?;
        let block = Block {
            data,
            restarts_at,
            num_restarts,
        };
        let mut previous = 0usize;
        for i in 0..num_restarts {
            let r = block.restart(i);
            if r > restarts_at || (i > 0 && r <= previous) || (i == 0 && r != 0) {
                return Err("restart points out of order or out of range");
            }
            previous = r;
        }
        Ok(block)
    }

    fn restart(&self, i: usize) -> usize {
        read_u32(&self.data, self.restarts_at + i * 4).unwrap_or(u32::MAX) as usize
    }

    /// Bytes of the block contents (its charge in the cache).
    pub fn size(&self) -> usize {
        self.data.len()
    }

    /// Whether the block holds no entries.
    pub fn is_empty(&self) -> bool {
        self.restarts_at == 0
    }

    /// An iterator over the block. Holds an `Arc` so it outlives any cache lock.
    pub fn iter(self: &Arc<Self>) -> BlockIter {
        BlockIter {
            block: Arc::clone(self),
            current: self.restarts_at,
            next: self.restarts_at,
            key: Vec::new(),
            value: (0, 0),
            error: None,
            behind: Vec::new(),
            behind_keys: Vec::new(),
            key_behind: None,
        }
    }
}

/// A cursor over a block's entries. Positioned on an entry when [`BlockIter::valid`].
#[derive(Debug)]
pub struct BlockIter {
    block: Arc<Block>,
    /// Offset of the current entry (`restarts_at` when not positioned).
    current: usize,
    /// Offset of the entry after the current one.
    next: usize,
    key: Vec<u8>,
    value: (usize, usize),
    error: Option<&'static str>,
    /// Entries decoded by the last backward step that had to return to a restart point, in
    /// block order (RocksDB's `prev_entries_`): the following steps back within the same
    /// restart interval take them from here instead of decoding the interval again.
    behind: Vec<DecodedEntry>,
    /// The keys of `behind`, one after another.
    behind_keys: Vec<u8>,
    /// When the current entry came from `behind`: its key in `behind_keys` (and `key` is stale
    /// until a forward step needs it as the base of the next entry's shared prefix).
    key_behind: Option<(usize, usize)>,
}

/// An entry decoded ahead of time: where it is, its key (in `BlockIter::behind_keys`) and value.
#[derive(Debug, Clone, Copy)]
struct DecodedEntry {
    offset: usize,
    next: usize,
    key: (usize, usize),
    value: (usize, usize),
}

impl BlockIter {
    /// Whether the cursor is on an entry.
    pub fn valid(&self) -> bool {
        self.error.is_none() && self.current < self.block.restarts_at
    }

    /// The first decoding error met, if any (the cursor is then invalid).
    pub fn error(&self) -> Option<&'static str> {
        self.error
    }

    /// Current key (only meaningful when valid).
    pub fn key(&self) -> &[u8] {
        match self.key_behind {
            Some((start, end)) => self.behind_keys.get(start..end).unwrap_or(&[]),
            None => &self.key,
        }
    }

    /// Current value (only meaningful when valid).
    pub fn value(&self) -> &[u8] {
        self.block
            .data
            .get(self.value.0..self.value.1)
            .unwrap_or(&[])
    }

    fn fail(&mut self, reason: &'static str) {
        self.error = Some(reason);
        self.current = self.block.restarts_at;
        self.next = self.block.restarts_at;
    }

    /// Decodes the entry at `self.next` into the cursor; false at the end or on error.
    fn parse_next(&mut self) -> bool {
        if let Some((start, end)) = self.key_behind.take() {
            // The entry after a backward step shares its prefix with the current key.
            self.key.clear();
            self.key
                .extend_from_slice(self.behind_keys.get(start..end).unwrap_or(&[]));
        }
        self.current = self.next;
        let data = &self.block.data;
        let end = self.block.restarts_at;
        if self.current >= end {
            self.current = end;
            return false;
        }
        let mut pos = self.current;
        let header = (|| {
            let shared = get_len(data, &mut pos)?;
            let unshared = get_len(data, &mut pos)?;
            let value_len = get_len(data, &mut pos)?;
            Some((shared, unshared, value_len))
        })();
        let Some((shared, unshared, value_len)) = header else {
            self.fail("truncated entry header");
            return false;
        };
        let key_end = pos.checked_add(unshared);
        let value_end = key_end.and_then(|k| k.checked_add(value_len));
        let (Some(key_end), Some(value_end)) = (key_end, value_end) else {
            self.fail("entry length overflow");
            return false;
        };
        if value_end > end || shared > self.key.len() {
            self.fail("entry runs past the block or shares more than the previous key");
            return false;
        }
        self.key.truncate(shared);
        self.key.extend_from_slice(&data[pos..key_end]);
        self.value = (key_end, value_end);
        self.next = value_end;
        true
    }

    /// Moves to the first entry.
    pub fn seek_to_first(&mut self) {
        self.error = None;
        self.key_behind = None;
        self.key.clear();
        self.next = 0;
        self.parse_next();
    }

    /// Moves to the next entry.
    pub fn next(&mut self) {
        if self.valid() {
            self.parse_next();
        }
    }

    /// Moves to the last entry.
    pub fn seek_to_last(&mut self) {
        self.error = None;
        self.key_behind = None;
        self.key.clear();
        self.next = self.block.restart(self.block.num_restarts - 1);
        while self.parse_next() && self.next < self.block.restarts_at {}
    }

    /// Moves to the previous entry (invalid before the first). Entries are prefix-compressed
    /// forward only, so the cursor goes back to the restart point before the current entry and
    /// decodes forward to the entry before it (LevelDB's `Block::Iter::Prev`), keeping the
    /// entries it decoded on the way: the next steps back within that restart interval cost a
    /// key copy each, so a backward walk decodes every entry about once, as a forward walk does.
    pub fn prev(&mut self) {
        if !self.valid() {
            return;
        }
        let original = self.current;
        if self.behind.last().is_none_or(|e| e.next != original) {
            // Offsets identify entries, so decoded entries stay right for this block whatever the
            // cursor did since; only when none ends at the current entry is a restart revisited.
            self.decode_interval_before(original);
            if self.error.is_some() {
                return;
            }
        }
        match self.behind.pop() {
            Some(e) => {
                self.current = e.offset;
                self.next = e.next;
                self.key_behind = Some(e.key);
                self.value = e.value;
            }
            None => {
                // The current entry is the first: move before it.
                self.current = self.block.restarts_at;
                self.next = self.block.restarts_at;
            }
        }
    }

    /// Decodes, into `behind`, the entries from the last restart point before `original` up to
    /// the entry before it (none if `original` is the first entry).
    fn decode_interval_before(&mut self, original: usize) {
        self.key_behind = None;
        self.behind.clear();
        self.behind_keys.clear();
        let (mut lo, mut hi) = (0usize, self.block.num_restarts);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.block.restart(mid) < original {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let Some(restart) = lo.checked_sub(1) else {
            return;
        };
        self.key.clear();
        self.next = self.block.restart(restart);
        loop {
            if !self.parse_next() {
                if self.error.is_none() {
                    self.fail("entries do not lead back to the current one");
                }
                return;
            }
            let start = self.behind_keys.len();
            self.behind_keys.extend_from_slice(&self.key);
            self.behind.push(DecodedEntry {
                offset: self.current,
                next: self.next,
                key: (start, self.behind_keys.len()),
                value: self.value,
            });
            match self.next.cmp(&original) {
                Ordering::Less => continue,
                Ordering::Equal => return,
                Ordering::Greater => {
                    self.fail("entries do not lead back to the current one");
                    return;
                }
            }
        }
    }

    /// Key stored whole at restart point `i`, for the binary search.
    fn restart_key(&self, i: usize) -> Option<&[u8]> {
        let data = &self.block.data;
        let mut pos = self.block.restart(i);
        let shared = get_len(data, &mut pos)?;
        let unshared = get_len(data, &mut pos)?;
        let _value_len = get_len(data, &mut pos)?;
        if shared != 0 {
            return None;
        }
        data.get(pos..pos.checked_add(unshared)?)
    }

    /// Moves to the first entry whose key is ≥ `target` under `cmp` (invalid if none).
    pub fn seek(&mut self, target: &[u8], cmp: impl Fn(&[u8], &[u8]) -> Ordering) {
        self.error = None;
        // Binary search for the last restart point whose key is < target.
        let (mut lo, mut hi) = (0usize, self.block.num_restarts - 1);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            match self.restart_key(mid) {
                Some(k) if cmp(k, target) == Ordering::Less => lo = mid,
                Some(_) => hi = mid - 1,
                None => {
                    self.fail("restart point does not hold a whole key");
                    return;
                }
            }
        }
        self.key_behind = None;
        self.key.clear();
        self.next = self.block.restart(lo);
        while self.parse_next() {
            if cmp(&self.key, target) != Ordering::Less {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(entries: &[(Vec<u8>, Vec<u8>)], interval: usize) -> Arc<Block> {
        let mut b = BlockBuilder::new(interval);
        for (k, v) in entries {
            b.add(k, v);
        }
        Arc::new(Block::new(b.finish()).unwrap())
    }

    fn entries(n: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
        (0..n)
            .map(|i| {
                (
                    format!("key{:05}", i * 2).into_bytes(),
                    format!("v{i}").into_bytes(),
                )
            })
            .collect()
    }

    #[test]
    fn block_iterates_in_order() {
        for interval in [1, 2, 16] {
            let e = entries(100);
            let block = build(&e, interval);
            let mut it = block.iter();
            it.seek_to_first();
            for (k, v) in &e {
                assert!(it.valid());
                assert_eq!(it.key(), k.as_slice());
                assert_eq!(it.value(), v.as_slice());
                it.next();
            }
            assert!(!it.valid());
            assert!(it.error().is_none());
        }
    }

    #[test]
    fn block_seek_finds_first_greater_or_equal() {
        let e = entries(100);
        let block = build(&e, 16);
        let mut it = block.iter();
        for i in 0..200 {
            let target = format!("key{i:05}").into_bytes();
            it.seek(&target, |a, b| a.cmp(b));
            let want = e.iter().find(|(k, _)| k >= &target);
            match want {
                Some((k, _)) => assert_eq!(it.key(), k.as_slice()),
                None => assert!(!it.valid()),
            }
        }
        it.seek(b"", |a, b| a.cmp(b));
        assert_eq!(it.key(), e[0].0.as_slice());
    }

    #[test]
    fn block_walks_backward_and_forward_again() {
        for interval in [1, 2, 3, 16] {
            let e = entries(77);
            let block = build(&e, interval);
            let mut it = block.iter();
            it.seek_to_last();
            for (k, v) in e.iter().rev() {
                assert!(it.valid(), "interval {interval}");
                assert_eq!(it.key(), k.as_slice());
                assert_eq!(it.value(), v.as_slice());
                it.prev();
            }
            assert!(!it.valid());
            assert!(it.error().is_none());
            // Zig-zag: prev then next returns to the same entry.
            it.seek(&e[40].0, |a, b| a.cmp(b));
            it.prev();
            assert_eq!(it.key(), e[39].0.as_slice());
            it.next();
            assert_eq!(it.key(), e[40].0.as_slice());
        }
    }

    #[test]
    fn empty_block_is_valid_and_empty() {
        let block = build(&[], 16);
        assert!(block.is_empty());
        let mut it = block.iter();
        it.seek_to_first();
        assert!(!it.valid());
        it.seek(b"x", |a, b| a.cmp(b));
        assert!(!it.valid());
        it.seek_to_last();
        assert!(!it.valid());
    }

    #[test]
    fn block_rejects_bad_restarts_and_survives_garbage() {
        assert!(Block::new(vec![]).is_err());
        assert!(Block::new(vec![0, 0, 0, 0]).is_err());
        assert!(Block::new(vec![0xff, 0xff, 0xff, 0xff]).is_err());
        let good = {
            let mut b = BlockBuilder::new(4);
            for (k, v) in entries(20) {
                b.add(&k, &v);
            }
            b.finish()
        };
        // Flip every byte: either rejected up front or iterated without panicking.
        for at in 0..good.len() {
            let mut bad = good.clone();
            bad[at] ^= 0x5a;
            if let Ok(block) = Block::new(bad) {
                let block = Arc::new(block);
                let mut it = block.iter();
                it.seek_to_first();
                let mut n = 0;
                while it.valid() && n < 1000 {
                    it.next();
                    n += 1;
                }
                it.seek_to_last();
                while it.valid() && n < 2000 {
                    it.prev();
                    n += 1;
                }
                it.seek(b"key00010", |a, b| a.cmp(b));
                it.prev();
            }
        }
    }
}
