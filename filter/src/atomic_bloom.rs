//! A cache-line blocked bloom filter of atomic words, which threads insert into and query at the
//! same time without a lock: the memtable's bloom chain ([`crate::ConcurrentScalableBloom`]) and
//! the engine's tree-wide filter index (every key of a tree's tables, added to by flushes while
//! lookups probe it) are made of it.
//!
//! The layout is the SSTable filters' (`bloom.rs`): every probe of a key falls in one 64-byte
//! block chosen by the hash's upper half, so an insert or a query touches one cache line. Bits
//! are set with atomic OR and read with atomic loads: a query never waits and never sees a torn
//! word, and an insert that returned before a query started (through a release store the query
//! acquires) is seen by it.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::bloom::{
    best_num_probes, block_index, blocked_bloom_fpr, num_blocks_for, probe_mask, BLOCK_BITS,
    BLOCK_BYTES, MAX_BITS_PER_KEY,
};
use crate::error::FilterError;

/// One 512-bit block, aligned so it never straddles two cache lines.
#[derive(Debug)]
#[repr(C, align(64))]
struct AtomicBlock([AtomicU64; 8]);

/// See the module documentation.
///
/// ```
/// use siftdb_filter::AtomicBlockedBloom;
///
/// # fn main() -> Result<(), siftdb_filter::FilterError> {
/// let bloom = AtomicBlockedBloom::with_capacity(10_000, 10.0)?;
/// std::thread::scope(|s| {
///     s.spawn(|| (0..10_000u64).for_each(|h| bloom.insert_hash(h.wrapping_mul(0x9E37_79B9_7F4A_7C15))));
/// });
/// assert!((0..10_000u64).all(|h| bloom.may_contain_hash(h.wrapping_mul(0x9E37_79B9_7F4A_7C15))));
/// assert!(bloom.expected_fpr(10_000) < 0.02);
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct AtomicBlockedBloom {
    blocks: Box<[AtomicBlock]>,
    num_probes: u8,
}

impl AtomicBlockedBloom {
    /// An empty filter with room for `keys` keys at `bits_per_key` (finite, in `(0, 64]`): the
    /// blocks and probe count [`crate::BlockedBloom::build`] would choose for that many keys.
    pub fn with_capacity(keys: u64, bits_per_key: f64) -> Result<AtomicBlockedBloom, FilterError> {
        if !(bits_per_key > 0.0 && bits_per_key <= MAX_BITS_PER_KEY) {
            return Err(FilterError::InvalidParameter(
                "blocked bloom bits/key must be in (0, 64]",
            ));
        }
        let keys = usize::try_from(keys.max(1))
            .map_err(|_| FilterError::InvalidParameter("the filter does not fit in memory"))?;
        let blocks = num_blocks_for(keys, bits_per_key);
        let probes = best_num_probes(keys as f64 / blocks as f64);
        Ok(AtomicBlockedBloom::with_blocks(blocks, probes))
    }

    /// An empty filter of `blocks` blocks (at least one) probed `num_probes` times per key.
    pub(crate) fn with_blocks(blocks: usize, num_probes: u8) -> AtomicBlockedBloom {
        AtomicBlockedBloom {
            blocks: (0..blocks.max(1))
                .map(|_| AtomicBlock(Default::default()))
                .collect(),
            num_probes,
        }
    }

    #[inline]
    fn block(&self, hash: u64) -> &[AtomicU64; 8] {
        &self.blocks[block_index(hash, self.blocks.len())].0
    }

    /// Adds a key by its 64-bit hash.
    pub fn insert_hash(&self, hash: u64) {
        let mask = probe_mask(hash, self.num_probes);
        for (word, m) in self.block(hash).iter().zip(mask) {
            if m != 0 {
                word.fetch_or(m, Ordering::Relaxed);
            }
        }
    }

    /// `false` means no key of this hash was inserted; `true` means one may have been.
    #[inline]
    pub fn may_contain_hash(&self, hash: u64) -> bool {
        // The block's words as they are now (one cache line, plain loads: relaxed atomic loads
        // compile to them), queried as an SSTable filter's block is.
        let block = self.block(hash);
        let words: [u64; 8] = std::array::from_fn(|i| block[i].load(Ordering::Relaxed));
        crate::bloom::query(&words, hash, self.num_probes)
    }

    /// Starts loading the block a query of `hash` reads (a hint only).
    #[inline]
    pub fn prefetch_hash(&self, hash: u64) {
        crate::prefetch::prefetch(self.block(hash));
    }

    /// Bytes of the bit array.
    pub fn size_bytes(&self) -> usize {
        self.blocks.len() * BLOCK_BYTES
    }

    /// Blocks of 512 bits.
    pub fn num_blocks(&self) -> usize {
        self.blocks.len()
    }

    /// Bits set per key.
    pub fn num_probes(&self) -> u8 {
        self.num_probes
    }

    /// The FPR this filter should give once `keys` distinct keys are in it.
    pub fn expected_fpr(&self, keys: u64) -> f64 {
        if keys == 0 {
            return 0.0;
        }
        blocked_bloom_fpr(keys as f64 / self.blocks.len() as f64, self.num_probes)
    }

    /// Bits per key at `keys` keys.
    pub fn bits_per_key(&self, keys: u64) -> f64 {
        (self.blocks.len() as f64 * f64::from(BLOCK_BITS)) / keys.max(1) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hashes(n: u64, salt: u64) -> impl Iterator<Item = u64> {
        (0..n).map(move |i| xxhash_rust::xxh3::xxh3_64_with_seed(&i.to_le_bytes(), salt))
    }

    #[test]
    fn atomic_bloom_has_no_false_negatives_and_its_expected_fpr() {
        let bloom = AtomicBlockedBloom::with_capacity(50_000, 10.0).expect("sized");
        hashes(50_000, 1).for_each(|h| bloom.insert_hash(h));
        assert!(hashes(50_000, 1).all(|h| bloom.may_contain_hash(h)));
        let fp = hashes(100_000, 2)
            .filter(|&h| bloom.may_contain_hash(h))
            .count();
        let measured = fp as f64 / 100_000.0;
        let expected = bloom.expected_fpr(50_000);
        assert!(
            measured < expected * 1.5 + 0.001,
            "{measured} vs {expected}"
        );
        assert!((bloom.bits_per_key(50_000) - 10.0).abs() < 0.1);
    }

    #[test]
    fn atomic_bloom_answers_like_the_sstable_bloom() {
        let keys: Vec<u64> = hashes(20_000, 3).collect();
        let built = crate::BlockedBloom::build(&keys, 10.0).expect("built");
        let atomic = AtomicBlockedBloom::with_capacity(20_000, 10.0).expect("sized");
        keys.iter().for_each(|&h| atomic.insert_hash(h));
        assert_eq!(atomic.num_blocks(), built.num_blocks());
        assert_eq!(atomic.num_probes(), built.num_probes());
        for h in hashes(50_000, 4) {
            assert_eq!(atomic.may_contain_hash(h), built.may_contain_hash(h));
        }
    }

    #[test]
    fn atomic_bloom_refuses_bad_bits_per_key() {
        for bits in [0.0, -1.0, 65.0, f64::NAN] {
            assert!(AtomicBlockedBloom::with_capacity(10, bits).is_err());
        }
    }

    #[test]
    fn atomic_bloom_inserts_from_many_threads() {
        let bloom = AtomicBlockedBloom::with_capacity(40_000, 12.0).expect("sized");
        std::thread::scope(|s| {
            for t in 0..4 {
                let bloom = &bloom;
                s.spawn(move || hashes(10_000, 10 + t).for_each(|h| bloom.insert_hash(h)));
            }
        });
        for t in 0..4 {
            assert!(hashes(10_000, 10 + t).all(|h| bloom.may_contain_hash(h)));
        }
    }
}
