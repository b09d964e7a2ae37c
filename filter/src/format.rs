//! The serialized filter block, and the builder and reader around it.
//!
//! ```text
//! offset  size  field
//!      0     4  magic "SFLT"
//!      4     1  format version (1)
//!      5     1  filter kind (1 = blocked bloom, 2 = ribbon, 3 = binary fuse)
//!      6     1  hash function id (1 = xxh3-64, 2 = siphash-1-3)
//!      7     1  reserved, 0
//!      8     8  seed (xxh3 seed, or the secret's check value for siphash)
//!     16     8  key count the filter was sized for
//!     24     4  target bits/key (f32, informational)
//!     28     4  reserved, 0
//!     32    16  kind parameters
//!               bloom:  u32 num_blocks, u8 num_probes, 11 × 0
//!               ribbon: u32 num_blocks, u32 upper_start_block, u32 seed ordinal,
//!                       u8 lower_columns, u8 width (128), 2 × 0
//!               fuse:   u64 seed, u32 segment_count, u8 log2(segment_length),
//!                       u8 fingerprint bits (8 or 16), 2 × 0
//!     48     …  payload (bloom: num_blocks × 64 bytes; ribbon: solution words, u64 LE;
//!               fuse: (segment_count + 2) · segment_length cells of 1 or 2 bytes, LE)
//!  end-4     4  CRC32 (IEEE) of every preceding byte
//! ```
//! All integers little-endian. See `docs/FORMAT.md`.

use crate::bloom::BlockedBloom;
use crate::error::FilterError;
use crate::fuse::{fuse_fingerprint_bits_for, BinaryFuseFilter, FuseParams};
use crate::hash::{HashId, KeyHasher};
use crate::kind::FilterKind;
use crate::ribbon::{RibbonFilter, RibbonParams, RIBBON_WIDTH};

/// First four bytes of every filter block.
pub const FILTER_MAGIC: [u8; 4] = *b"SFLT";
/// The filter block format version this build writes and reads.
pub const FILTER_FORMAT_VERSION: u8 = 1;
/// Size of the fixed header.
pub const HEADER_LEN: usize = 48;
/// Size of the checksum trailer.
pub const TRAILER_LEN: usize = 4;

/// The structure behind a [`Filter`].
#[derive(Debug, Clone)]
enum Structure {
    Bloom(BlockedBloom),
    Ribbon(RibbonFilter),
    Fuse(BinaryFuseFilter),
}

/// A filter over a set of keys, built by [`FilterBuilder`] or decoded from a block.
///
/// ```
/// use siftdb_filter::{Filter, FilterBuilder, FilterKind, KeyHasher};
/// let mut builder = FilterBuilder::new(FilterKind::BlockedBloom, 10.0, KeyHasher::default());
/// builder.add_key(b"apple");
/// builder.add_key(b"pear");
/// let block = builder.finish()?;
/// let filter = Filter::decode(&block, &KeyHasher::default())?;
/// assert!(filter.may_contain(b"apple")); // never a false negative
/// // A reader with another seed is refused instead of answering wrongly.
/// assert!(Filter::decode(&block, &KeyHasher::xxh3(42)).is_err());
/// # Ok::<(), siftdb_filter::FilterError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Filter {
    hasher: KeyHasher,
    key_count: u64,
    target_bits_per_key: f32,
    structure: Structure,
}

impl Filter {
    /// Builds a filter directly from key hashes (computed with `hasher`).
    pub fn from_hashes(
        kind: FilterKind,
        bits_per_key: f64,
        hasher: KeyHasher,
        hashes: &[u64],
    ) -> Result<Filter, FilterError> {
        let structure = match kind {
            FilterKind::BlockedBloom => {
                Structure::Bloom(BlockedBloom::build(hashes, bits_per_key)?)
            }
            FilterKind::Ribbon => Structure::Ribbon(RibbonFilter::build(hashes, bits_per_key)?),
            FilterKind::BinaryFuse => {
                if !(bits_per_key > 0.0 && bits_per_key.is_finite()) {
                    return Err(FilterError::Build(format!(
                        "binary fuse bits/key must be positive, got {bits_per_key}"
                    )));
                }
                let bits = fuse_fingerprint_bits_for(hashes.len(), bits_per_key);
                Structure::Fuse(BinaryFuseFilter::build(hashes, bits)?)
            }
        };
        Ok(Filter {
            hasher,
            key_count: hashes.len() as u64,
            target_bits_per_key: bits_per_key as f32,
            structure,
        })
    }

    /// `false`: the key is certainly not in the set. `true`: it may be.
    #[inline]
    pub fn may_contain(&self, key: &[u8]) -> bool {
        self.may_contain_hash(self.hasher.hash(key))
    }

    /// As [`Filter::may_contain`], for a hash computed with [`Filter::hasher`].
    #[inline]
    pub fn may_contain_hash(&self, hash: u64) -> bool {
        match &self.structure {
            Structure::Bloom(f) => f.may_contain_hash(hash),
            Structure::Ribbon(f) => f.may_contain_hash(hash),
            Structure::Fuse(f) => f.may_contain_hash(hash),
        }
    }

    /// [`Filter::may_contain_hash`] for every hash of `hashes`, answers in order into `out`
    /// (cleared first). Loads for later hashes are started while earlier ones are checked, so on
    /// a filter larger than the CPU caches the memory waits overlap: use it when many keys are
    /// checked against one filter (a multi-key lookup, a join).
    pub fn may_contain_batch(&self, hashes: &[u64], out: &mut Vec<bool>) {
        crate::prefetch::batched(
            hashes,
            out,
            |h| self.prefetch_hash(h),
            |h| self.may_contain_hash(h),
        );
    }

    /// Starts loading the memory [`Filter::may_contain_hash`] will read for `hash` (a hint:
    /// a lookup prefetches the next level's filter before probing this one's).
    #[inline]
    pub fn prefetch_hash(&self, hash: u64) {
        match &self.structure {
            Structure::Bloom(f) => f.prefetch_hash(hash),
            Structure::Ribbon(f) => f.prefetch_hash(hash),
            Structure::Fuse(f) => f.prefetch_hash(hash),
        }
    }

    /// The filter's kind.
    pub fn kind(&self) -> FilterKind {
        match self.structure {
            Structure::Bloom(_) => FilterKind::BlockedBloom,
            Structure::Ribbon(_) => FilterKind::Ribbon,
            Structure::Fuse(_) => FilterKind::BinaryFuse,
        }
    }

    /// The hasher keys must be hashed with.
    pub fn hasher(&self) -> &KeyHasher {
        &self.hasher
    }

    /// Number of keys the filter was built over (and sized for).
    pub fn key_count(&self) -> u64 {
        self.key_count
    }

    /// The bits/key the filter was asked for.
    pub fn target_bits_per_key(&self) -> f64 {
        f64::from(self.target_bits_per_key)
    }

    /// Size of the filter structure (payload, without header and checksum) in bytes.
    pub fn payload_bytes(&self) -> usize {
        match &self.structure {
            Structure::Bloom(f) => f.size_bytes(),
            Structure::Ribbon(f) => f.size_bytes(),
            Structure::Fuse(f) => f.size_bytes(),
        }
    }

    /// Size of the serialized block in bytes.
    pub fn encoded_len(&self) -> usize {
        HEADER_LEN + self.payload_bytes() + TRAILER_LEN
    }

    /// Real bits per key of the structure: payload bits / key count (0 for an empty filter).
    pub fn bits_per_key(&self) -> f64 {
        if self.key_count == 0 {
            return 0.0;
        }
        self.payload_bytes() as f64 * 8.0 / self.key_count as f64
    }

    /// This filter brought down to about `bits_per_key` bits per key without its keys, where
    /// its structure allows: a ribbon filter drops solution columns
    /// ([`RibbonFilter::thinned`]: the same keys, never a false negative, the FPR of the
    /// smaller layout). `None` for the other kinds, which cannot shed bits without a rebuild,
    /// and for a filter that holds no more than that already.
    ///
    /// ```
    /// use siftdb_filter::{Filter, FilterBuilder, FilterKind, KeyHasher};
    /// let mut builder = FilterBuilder::new(FilterKind::Ribbon, 12.0, KeyHasher::default());
    /// for i in 0..10_000u32 {
    ///     builder.add_key(&i.to_be_bytes());
    /// }
    /// let filter = builder.build()?;
    /// let thin = filter.thinned_to(7.0).expect("a ribbon filter thins");
    /// assert!(thin.bits_per_key() < 7.2 && thin.bits_per_key() > 6.8);
    /// assert!((0..10_000u32).all(|i| thin.may_contain(&i.to_be_bytes())));
    /// # Ok::<(), siftdb_filter::FilterError>(())
    /// ```
    pub fn thinned_to(&self, bits_per_key: f64) -> Option<Filter> {
        let Structure::Ribbon(ribbon) = &self.structure else {
            return None;
        };
        let thin = ribbon.thinned(self.key_count, bits_per_key);
        if thin.size_bytes() >= ribbon.size_bytes() {
            return None;
        }
        Some(Filter {
            hasher: self.hasher,
            key_count: self.key_count,
            target_bits_per_key: bits_per_key as f32,
            structure: Structure::Ribbon(thin),
        })
    }

    /// The FPR this filter should give at the key count it was sized for.
    ///
    /// This is the over-fill guard's reference: a measured FPR well above it means the filter
    /// holds more keys than it was built for, or the hash is not what the builder used.
    pub fn expected_fpr(&self) -> f64 {
        match &self.structure {
            Structure::Bloom(f) => f.expected_fpr(self.key_count),
            Structure::Ribbon(f) => f.expected_fpr(),
            Structure::Fuse(f) => f.expected_fpr(),
        }
    }

    /// Serializes the filter into a self-describing, checksummed block.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded_len());
        out.extend_from_slice(&FILTER_MAGIC);
        out.push(FILTER_FORMAT_VERSION);
        out.push(self.kind() as u8);
        out.push(self.hasher.id() as u8);
        out.push(0);
        out.extend_from_slice(&self.hasher.seed_tag().to_le_bytes());
        out.extend_from_slice(&self.key_count.to_le_bytes());
        out.extend_from_slice(&self.target_bits_per_key.to_le_bytes());
        out.extend_from_slice(&[0; 4]);
        let mut params = [0u8; 16];
        match &self.structure {
            Structure::Bloom(f) => {
                params[0..4].copy_from_slice(&(f.num_blocks() as u32).to_le_bytes());
                params[4] = f.num_probes();
            }
            Structure::Ribbon(f) => {
                let p = f.params();
                params[0..4].copy_from_slice(&p.num_blocks.to_le_bytes());
                params[4..8].copy_from_slice(&p.upper_start_block.to_le_bytes());
                params[8..12].copy_from_slice(&p.seed.to_le_bytes());
                params[12] = p.lower_columns;
                params[13] = RIBBON_WIDTH as u8;
            }
            Structure::Fuse(f) => {
                let p = f.params();
                params[0..8].copy_from_slice(&p.seed.to_le_bytes());
                params[8..12].copy_from_slice(&p.segment_count.to_le_bytes());
                params[12] = p.segment_length.trailing_zeros() as u8;
                params[13] = p.fingerprint_bits;
            }
        }
        out.extend_from_slice(&params);
        match &self.structure {
            Structure::Bloom(f) => f.write_payload(&mut out),
            Structure::Ribbon(f) => {
                for word in f.words() {
                    out.extend_from_slice(&word.to_le_bytes());
                }
            }
            Structure::Fuse(f) => f.write_payload(&mut out),
        }
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// Decodes a filter block, refusing anything it does not fully understand.
    ///
    /// `expected` is the hasher the reader will query with: a block built under another hash
    /// function or seed would produce false negatives, so it is an error
    /// ([`FilterError::HashMismatch`], [`FilterError::SeedMismatch`]). Never panics.
    pub fn decode(bytes: &[u8], expected: &KeyHasher) -> Result<Filter, FilterError> {
        let min = HEADER_LEN + TRAILER_LEN;
        if bytes.len() < min {
            return Err(FilterError::Truncated {
                needed: min,
                actual: bytes.len(),
            });
        }
        let header = Header::new(bytes);
        if header.bytes(0..4) != FILTER_MAGIC {
            return Err(FilterError::BadMagic {
                found: header.u32(0),
            });
        }
        if header.u8(4) != FILTER_FORMAT_VERSION {
            return Err(FilterError::UnsupportedVersion(header.u8(4)));
        }
        let body_len = bytes.len() - TRAILER_LEN;
        let expected_crc = Header::new(&bytes[body_len..]).u32(0);
        let got_crc = crc32fast::hash(&bytes[..body_len]);
        if got_crc != expected_crc {
            return Err(FilterError::ChecksumMismatch {
                got: got_crc,
                expected: expected_crc,
            });
        }
        let kind =
            FilterKind::from_u8(header.u8(5)).ok_or(FilterError::UnknownKind(header.u8(5)))?;
        let hash_id =
            HashId::from_u8(header.u8(6)).ok_or(FilterError::UnknownHash(header.u8(6)))?;
        if hash_id != expected.id() {
            return Err(FilterError::HashMismatch {
                found: hash_id as u8,
                expected: expected.id() as u8,
            });
        }
        let seed = header.u64(8);
        if seed != expected.seed_tag() {
            return Err(FilterError::SeedMismatch {
                found: seed,
                expected: expected.seed_tag(),
            });
        }
        if header.u8(7) != 0 || header.u32(28) != 0 {
            return Err(FilterError::InvalidParameter(
                "reserved header bytes are not zero",
            ));
        }
        let key_count = header.u64(16);
        let target_bits_per_key =
            f32::from_le_bytes([header.u8(24), header.u8(25), header.u8(26), header.u8(27)]);
        let payload = &bytes[HEADER_LEN..body_len];
        let structure = match kind {
            FilterKind::BlockedBloom => {
                if header.bytes(37..48).iter().any(|&b| b != 0) {
                    return Err(FilterError::InvalidParameter(
                        "reserved bloom parameter bytes",
                    ));
                }
                let num_blocks = header.u32(32) as usize;
                if payload.len() / crate::bloom::BLOCK_BYTES != num_blocks
                    || !payload.len().is_multiple_of(crate::bloom::BLOCK_BYTES)
                {
                    return Err(FilterError::InvalidParameter(
                        "bloom payload size does not match block count",
                    ));
                }
                Structure::Bloom(BlockedBloom::from_parts(header.u8(36), payload)?)
            }
            FilterKind::Ribbon => {
                if u32::from(header.u8(45)) != RIBBON_WIDTH
                    || header.u8(46) != 0
                    || header.u8(47) != 0
                {
                    return Err(FilterError::InvalidParameter("unsupported ribbon width"));
                }
                let params = RibbonParams {
                    num_blocks: header.u32(32),
                    upper_start_block: header.u32(36),
                    seed: header.u32(40),
                    lower_columns: header.u8(44),
                };
                if !payload.len().is_multiple_of(8) {
                    return Err(FilterError::InvalidParameter(
                        "ribbon payload is not a whole number of words",
                    ));
                }
                let words = payload
                    .chunks_exact(8)
                    .map(|c| Header::new(c).u64(0))
                    .collect();
                Structure::Ribbon(RibbonFilter::from_parts(params, words)?)
            }
            FilterKind::BinaryFuse => {
                if header.u8(46) != 0 || header.u8(47) != 0 || header.u8(44) > 18 {
                    return Err(FilterError::InvalidParameter("binary fuse parameters"));
                }
                let params = FuseParams {
                    seed: header.u64(32),
                    segment_count: header.u32(40),
                    segment_length: 1u32 << header.u8(44),
                    fingerprint_bits: header.u8(45),
                };
                Structure::Fuse(BinaryFuseFilter::from_parts(params, payload)?)
            }
        };
        if key_count == 0 && !is_empty(&structure) {
            return Err(FilterError::InvalidParameter(
                "zero keys but a non-empty structure",
            ));
        }
        Ok(Filter {
            hasher: *expected,
            key_count,
            target_bits_per_key,
            structure,
        })
    }
}

fn is_empty(structure: &Structure) -> bool {
    match structure {
        Structure::Bloom(f) => f.num_blocks() == 0,
        Structure::Ribbon(f) => f.params().num_blocks == 0,
        Structure::Fuse(f) => f.is_empty(),
    }
}

/// Bounds-checked little-endian field reads over a slice whose length the caller has checked.
struct Header<'a>(&'a [u8]);

impl<'a> Header<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Header(bytes)
    }
    fn bytes(&self, range: std::ops::Range<usize>) -> &'a [u8] {
        self.0.get(range).unwrap_or(&[])
    }
    fn u8(&self, at: usize) -> u8 {
        self.0.get(at).copied().unwrap_or(0)
    }
    fn array<const N: usize>(&self, at: usize) -> [u8; N] {
        let mut out = [0u8; N];
        if let Some(src) = self.0.get(at..at + N) {
            out.copy_from_slice(src);
        }
        out
    }
    fn u32(&self, at: usize) -> u32 {
        u32::from_le_bytes(self.array(at))
    }
    fn u64(&self, at: usize) -> u64 {
        u64::from_le_bytes(self.array(at))
    }
}

/// Collects the keys of one table and builds its filter at seal time, sized from the exact count.
///
/// The caller adds each *distinct* key once (an SSTable adds each user key once, however many
/// versions it holds); duplicates are harmless but inflate the recorded key count.
#[derive(Debug, Clone)]
pub struct FilterBuilder {
    kind: FilterKind,
    bits_per_key: f64,
    hasher: KeyHasher,
    hashes: Vec<u64>,
}

impl FilterBuilder {
    /// A builder for a `kind` filter at `bits_per_key`, hashing with `hasher`.
    pub fn new(kind: FilterKind, bits_per_key: f64, hasher: KeyHasher) -> Self {
        FilterBuilder {
            kind,
            bits_per_key,
            hasher,
            hashes: Vec::new(),
        }
    }

    /// Adds a key.
    pub fn add_key(&mut self, key: &[u8]) {
        self.hashes.push(self.hasher.hash(key));
    }

    /// Adds a key by its hash (computed with this builder's hasher).
    pub fn add_hash(&mut self, hash: u64) {
        self.hashes.push(hash);
    }

    /// Keys added so far.
    pub fn len(&self) -> usize {
        self.hashes.len()
    }

    /// Whether no key was added.
    pub fn is_empty(&self) -> bool {
        self.hashes.is_empty()
    }

    /// Builds the filter from the keys added.
    pub fn build(&self) -> Result<Filter, FilterError> {
        Filter::from_hashes(self.kind, self.bits_per_key, self.hasher, &self.hashes)
    }

    /// Builds the filter and serializes it as a filter block.
    pub fn finish(self) -> Result<Vec<u8>, FilterError> {
        Ok(self.build()?.encode())
    }
}
