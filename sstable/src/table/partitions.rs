//! The top level of a partitioned index or filter, decoded once at open into arrays a lookup
//! can binary-search without decoding block entries.
//!
//! Why: a seek in the top-level *block* decodes a varint header and compares whole internal keys
//! at every step (~250 ns for 300 partitions, measured), which was most of a missing-key lookup.
//! Here a step compares the first 8 bytes of the separator's user key as one `u64` and falls
//! back to the whole key only when those are equal.

use crate::block::Block;
use crate::format::BlockHandle;
use crate::internal_key::TRAILER_LEN;

/// Separators (the last internal key of each partition) and partition handles, in key order.
#[derive(Debug)]
pub(super) struct PartitionIndex {
    /// The first 8 bytes of each separator's user key, big-endian, zero-padded: ordered as the
    /// keys are, up to ties.
    heads: Vec<u64>,
    /// End of each separator's user key in `keys`.
    key_ends: Vec<usize>,
    /// The separators' user keys, one after another.
    keys: Vec<u8>,
    /// The separators' trailers (`sequence << 8 | kind`).
    trailers: Vec<u64>,
    handles: Vec<BlockHandle>,
}

/// The `u64` whose big-endian bytes are the first 8 bytes of `key`, zero-padded.
fn head_of(key: &[u8]) -> u64 {
    let mut bytes = [0u8; 8];
    let n = key.len().min(8);
    bytes[..n].copy_from_slice(&key[..n]);
    u64::from_be_bytes(bytes)
}

impl PartitionIndex {
    /// Decodes a top-level block (separator → partition handle); `Err(reason)` when an entry
    /// does not parse or the block is empty.
    pub(super) fn decode(block: &std::sync::Arc<Block>) -> Result<PartitionIndex, &'static str> {
        let mut index = PartitionIndex {
            heads: Vec::new(),
            key_ends: Vec::new(),
            keys: Vec::new(),
            trailers: Vec::new(),
            handles: Vec::new(),
        };
        let mut it = block.iter();
        it.seek_to_first();
        while it.valid() {
            let key = it.key();
            let user_len = key
                .len()
                .checked_sub(TRAILER_LEN)
                .ok_or("partition separator shorter than a trailer")?;
            let (user_key, trailer) = key.split_at(user_len);
            let trailer: [u8; 8] = trailer.try_into().map_err(|_| "bad trailer")?;
            let handle = BlockHandle::decode(it.value()).ok_or("undecodable partition handle")?;
            index.heads.push(head_of(user_key));
            index.keys.extend_from_slice(user_key);
            index.key_ends.push(index.keys.len());
            index.trailers.push(u64::from_le_bytes(trailer));
            index.handles.push(handle);
            it.next();
        }
        if let Some(e) = it.error() {
            return Err(e);
        }
        if index.handles.is_empty() {
            return Err("partitioned table with an empty top level");
        }
        Ok(index)
    }

    /// Number of partitions.
    pub(super) fn len(&self) -> usize {
        self.handles.len()
    }

    /// The handles, in key order.
    pub(super) fn handles(&self) -> &[BlockHandle] {
        &self.handles
    }

    fn user_key(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.key_ends[i - 1] };
        &self.keys[start..self.key_ends[i]]
    }

    /// The first partition whose separator sorts at or after the internal key
    /// (`user_key`, `trailer`) — the only one that can hold it — with its handle; `None` when
    /// the key sorts after every separator. `trailer = u64::MAX` asks for the partition of the
    /// key's newest version.
    pub(super) fn find(&self, user_key: &[u8], trailer: u64) -> Option<(usize, BlockHandle)> {
        let head = head_of(user_key);
        // Internal order: user key ascending, then trailer descending.
        let (mut lo, mut hi) = (0usize, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let before = match self.heads[mid].cmp(&head) {
                std::cmp::Ordering::Less => true,
                std::cmp::Ordering::Greater => false,
                std::cmp::Ordering::Equal => match self.user_key(mid).cmp(user_key) {
                    std::cmp::Ordering::Less => true,
                    std::cmp::Ordering::Greater => false,
                    std::cmp::Ordering::Equal => self.trailers[mid] > trailer,
                },
            };
            if before {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        self.handles.get(lo).map(|h| (lo, *h))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::block::BlockBuilder;
    use crate::internal_key::{compare_internal, InternalKey, ValueKind, MAX_SEQUENCE};

    fn top(separators: &[InternalKey]) -> Arc<Block> {
        let mut b = BlockBuilder::new(1);
        for (i, s) in separators.iter().enumerate() {
            let h = BlockHandle {
                offset: i as u64 * 100,
                size: 90,
            };
            b.add(s.encoded(), &h.encode());
        }
        Arc::new(Block::new(b.finish()).unwrap_or_else(|e| panic!("{e}")))
    }

    /// What a seek in the top-level block answers, as the reference.
    fn block_find(block: &Arc<Block>, target: &InternalKey) -> Option<u64> {
        let mut it = block.iter();
        it.seek(target.encoded(), compare_internal);
        it.valid()
            .then(|| BlockHandle::decode(it.value()).map(|h| h.offset))
            .flatten()
    }

    #[test]
    fn find_agrees_with_a_block_seek() {
        // Keys sharing 8-byte heads, of different lengths, and versions of one key straddling
        // separators.
        let users: Vec<Vec<u8>> = vec![
            b"a".to_vec(),
            b"abcdefgh".to_vec(),
            b"abcdefgh\x00".to_vec(),
            b"abcdefghz".to_vec(),
            b"b".to_vec(),
            b"b".to_vec(),
            b"zzzzzzzzzz".to_vec(),
        ];
        let separators: Vec<InternalKey> = users
            .iter()
            .enumerate()
            .map(|(i, u)| InternalKey::new(u, 100 - i as u64, ValueKind::Put))
            .collect();
        let block = top(&separators);
        let index = PartitionIndex::decode(&block).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(index.len(), separators.len());
        let probes: Vec<&[u8]> = vec![
            b"",
            b"a",
            b"a\x00",
            b"abcdefg",
            b"abcdefgh",
            b"abcdefgh\x00",
            b"abcdefgha",
            b"abcdefghz",
            b"b",
            b"ba",
            b"zzzzzzzzzz",
            b"zzzzzzzzzzz",
        ];
        for user in probes {
            for seq in [0, 1, 94, 95, 96, 99, 100, MAX_SEQUENCE] {
                let target = InternalKey::for_lookup(user, seq);
                let (u, t) = target.encoded().split_at(target.encoded().len() - 8);
                let t = u64::from_le_bytes(t.try_into().unwrap_or([0; 8]));
                let found = index.find(u, t).map(|(_, h)| h.offset);
                assert_eq!(found, block_find(&block, &target), "{user:?} @ {seq}");
            }
            // u64::MAX: the partition of the newest version.
            let newest = InternalKey::for_lookup(user, MAX_SEQUENCE);
            assert_eq!(
                index.find(user, u64::MAX).map(|(_, h)| h.offset),
                block_find(&block, &newest)
            );
        }
    }
}
