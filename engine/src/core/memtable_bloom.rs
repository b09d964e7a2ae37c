//! The memtable's bloom filter (RocksDB's `memtable_prefix_bloom_size_ratio`): prefixes, and
//! optionally whole keys, of the memtable's entries, asked before the skiplist is searched.
//!
//! Why: a lookup of a key the memtable lacks walks the skiplist from the top, a few dozen
//! pointer chases through a structure of hundreds of MiB; a "no" from the filter costs a few
//! probes of a few MiB. `prefix_iter` likewise leaves out a memtable that holds none of the
//! prefix's keys. How many keys a memtable will hold is unknown when it is made, so the filter
//! is a scalable bloom (siftdb-filter's [`ConcurrentScalableBloom`]): a chain that grows with
//! the keys, FPR under [`MEMTABLE_BLOOM_FPR`], readers and the writer at once without a lock.
//! Its memory is charged to the memtable, and capped at the ratio of the write buffer.

use std::sync::Arc;

use siftdb_filter::ConcurrentScalableBloom;
use siftdb_sstable::PrefixExtractor;

use crate::base::options::Options;

/// The FPR the chain stays under (while it fits its memory ceiling).
pub(crate) const MEMTABLE_BLOOM_FPR: f64 = 0.01;

/// Write-buffer bytes per key the first filter of the chain is sized for: a memtable full of
/// 256-byte entries fills it exactly; smaller entries grow the chain, larger ones leave room.
const BYTES_PER_KEY_GUESS: usize = 256;

/// See the module documentation.
#[derive(Debug)]
pub(crate) struct MemtableBloom {
    bloom: ConcurrentScalableBloom,
    prefix_extractor: Option<Arc<dyn PrefixExtractor>>,
    whole_keys: bool,
}

impl MemtableBloom {
    /// The bloom a memtable of a tree with `options` gets; `None` when the ratio is 0.
    pub(crate) fn for_options(options: &Options) -> Option<MemtableBloom> {
        let ratio = options.memtable_prefix_bloom_size_ratio;
        if ratio <= 0.0 {
            return None;
        }
        let max_bytes = ((options.write_buffer_size as f64 * ratio) as usize).max(1);
        let initial = (options.write_buffer_size / BYTES_PER_KEY_GUESS).max(1_024) as u64;
        let bloom = ConcurrentScalableBloom::new(
            initial,
            MEMTABLE_BLOOM_FPR,
            max_bytes,
            // The tree's hasher: prefix hashes then match `KeyspaceTree::prefix_hash`.
            options.filter_hasher,
        )
        .ok()?;
        Some(MemtableBloom {
            bloom,
            prefix_extractor: options.prefix_extractor.clone(),
            // Without an extractor the bloom could hold nothing else.
            whole_keys: options.memtable_whole_key_filtering || options.prefix_extractor.is_none(),
        })
    }

    /// Records an entry's user key: its prefix (if the extractor has one for it) and, with
    /// whole-key filtering, the key.
    pub(crate) fn insert(&self, key: &[u8]) {
        if let Some(prefix) = self.prefix_of(key) {
            self.bloom.insert(prefix);
        }
        if self.whole_keys {
            self.bloom.insert(key);
        }
    }

    /// Whether the memtable may hold a version of `key`: `false` is certain.
    pub(crate) fn may_contain_key(&self, key: &[u8]) -> bool {
        if self.whole_keys {
            return self.bloom.contains(key);
        }
        match self.prefix_of(key) {
            Some(prefix) => self.bloom.contains(prefix),
            None => true,
        }
    }

    /// Whether the memtable may hold a key of the prefix whose hash (by the tree's filter
    /// hasher, of the extractor's prefix) is `prefix_hash`: `false` is certain.
    pub(crate) fn may_contain_prefix_hash(&self, prefix_hash: u64) -> bool {
        self.prefix_extractor.is_none() || self.bloom.contains_hash(prefix_hash)
    }

    /// Bytes of the filters made so far (charged to the memtable).
    pub(crate) fn size_bytes(&self) -> usize {
        self.bloom.size_bytes()
    }

    fn prefix_of<'k>(&self, key: &'k [u8]) -> Option<&'k [u8]> {
        self.prefix_extractor.as_ref()?.prefix(key)
    }
}
