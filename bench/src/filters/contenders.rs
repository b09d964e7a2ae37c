//! The filters under test, behind one small interface.

use siftdb_filter::{Filter, FilterKind, KeyHasher};
use xorf::{BinaryFuse16, BinaryFuse8, Filter as _};

/// A filter implementation filter-bench can build and query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Contender {
    /// siftdb's cache-line blocked bloom.
    BlockedBloom,
    /// siftdb's ribbon filter.
    Ribbon,
    /// siftdb's binary fuse filter (its width from the bits/key: 8 or 16).
    SiftFuse,
    /// `fastbloom`: a standard (unblocked) bloom filter, for comparison.
    FastBloom,
    /// `xorf::BinaryFuse8`: 8-bit fingerprints, ~9 bits/key, for comparison.
    BinaryFuse8,
    /// `xorf::BinaryFuse16`: 16-bit fingerprints, for comparison.
    BinaryFuse16,
}

impl Contender {
    /// The name printed in the `filter` column.
    pub fn name(self) -> &'static str {
        match self {
            Contender::BlockedBloom => "blocked_bloom",
            Contender::Ribbon => "ribbon",
            Contender::SiftFuse => "binary_fuse",
            Contender::FastBloom => "fastbloom",
            Contender::BinaryFuse8 => "binary_fuse8",
            Contender::BinaryFuse16 => "binary_fuse16",
        }
    }

    /// Builds this contender over `hashes` at `bits_per_key` (ignored by fixed-size filters).
    pub fn build(self, hashes: &[u64], bits_per_key: f64) -> Result<Built, String> {
        Ok(match self {
            Contender::BlockedBloom | Contender::Ribbon | Contender::SiftFuse => {
                let kind = match self {
                    Contender::Ribbon => FilterKind::Ribbon,
                    Contender::SiftFuse => FilterKind::BinaryFuse,
                    _ => FilterKind::BlockedBloom,
                };
                Built::Siftdb(
                    Filter::from_hashes(kind, bits_per_key, KeyHasher::default(), hashes)
                        .map_err(|e| e.to_string())?,
                )
            }
            Contender::FastBloom => {
                let bits = ((hashes.len() as f64 * bits_per_key).ceil() as usize).max(64);
                let mut f =
                    fastbloom::BloomFilter::with_num_bits(bits).expected_items(hashes.len());
                for &h in hashes {
                    f.insert_hash(h);
                }
                Built::FastBloom(f)
            }
            Contender::BinaryFuse8 => Built::Fuse8(BinaryFuse8::try_from(hashes)?),
            Contender::BinaryFuse16 => Built::Fuse16(BinaryFuse16::try_from(hashes)?),
        })
    }
}

/// A built filter of any contender.
#[derive(Debug)]
pub enum Built {
    /// siftdb filter (blocked bloom, ribbon or binary fuse).
    Siftdb(Filter),
    /// fastbloom.
    FastBloom(fastbloom::BloomFilter),
    /// BinaryFuse8.
    Fuse8(BinaryFuse8),
    /// BinaryFuse16.
    Fuse16(BinaryFuse16),
}

/// Serialized size of xorf's binary fuse descriptor (seed, segment length and mask, counts).
const FUSE_DESCRIPTOR_BYTES: usize = 24;

impl Built {
    /// Query by key hash.
    #[inline]
    pub fn contains(&self, hash: u64) -> bool {
        match self {
            Built::Siftdb(f) => f.may_contain_hash(hash),
            Built::FastBloom(f) => f.contains_hash(hash),
            Built::Fuse8(f) => f.contains(&hash),
            Built::Fuse16(f) => f.contains(&hash),
        }
    }

    /// Batched query (prefetching ahead): siftdb's filters only, `None` for the comparison
    /// crates, which have no prefetch hook (their rows report the one-at-a-time loop alone).
    pub fn contains_batch(&self, hashes: &[u64], out: &mut Vec<bool>) -> Option<()> {
        match self {
            Built::Siftdb(f) => {
                f.may_contain_batch(hashes, out);
                Some(())
            }
            Built::FastBloom(_) | Built::Fuse8(_) | Built::Fuse16(_) => None,
        }
    }

    /// Size of the serialized filter in bytes (header and checksum included for siftdb).
    pub fn serialized_bytes(&self) -> usize {
        match self {
            Built::Siftdb(f) => f.encoded_len(),
            Built::FastBloom(f) => f.num_bits().div_ceil(8),
            Built::Fuse8(f) => f.len() + FUSE_DESCRIPTOR_BYTES,
            Built::Fuse16(f) => f.len() * 2 + FUSE_DESCRIPTOR_BYTES,
        }
    }
}
