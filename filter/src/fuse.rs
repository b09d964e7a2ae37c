//! Binary fuse filters (Graf & Lemire, "Binary Fuse Filters: Fast and Smaller Than Xor Filters",
//! JEA 2022): a key's fingerprint is the XOR of three array cells, one in each of three
//! consecutive segments of a window; building peels the hypergraph of keys and cells. With
//! 8-bit fingerprints a filter costs about 9 bits/key for an FPR of 2^-8 (0.39 %); with 16-bit
//! ones about 18 bits/key for 2^-16. A query reads three cells of one window (usually two or three
//! cache lines, close together) and needs no branch on the data.
//!
//! ```text
//!  cells:  | seg 0 | seg 1 | seg 2 | … | seg s+1 |      s = segment_count
//!  key  →  h0 in seg i, h1 in seg i+1, h2 in seg i+2   (i from the hash's high bits)
//!  query:  fingerprint(key) == cell[h0] ^ cell[h1] ^ cell[h2]
//! ```
//!
//! The construction follows the paper's reference algorithm (keys sorted by segment first, so the
//! peeling touches memory in order); this is siftdb's own implementation.

use crate::error::FilterError;

/// Fingerprint widths a binary fuse filter may have.
pub const FUSE_FINGERPRINT_BITS: [u8; 2] = [8, 16];

/// Largest segment length (cells).
const MAX_SEGMENT_LENGTH: u32 = 1 << 18;
/// Seeds tried before a build gives up (each fails with probability well under 1 % for more than
/// a few keys; never reached in practice).
const MAX_ATTEMPTS: u32 = 100;

/// The parameters a reader needs besides the fingerprints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FuseParams {
    /// The seed the keys' hashes were remixed with.
    pub seed: u64,
    /// Cells per segment (a power of two).
    pub segment_length: u32,
    /// Segments a window may start in (`segment_count · segment_length` cells of starts).
    pub segment_count: u32,
    /// 8 or 16.
    pub fingerprint_bits: u8,
}

impl FuseParams {
    /// Cells in the array: the start segments plus the two a window reaches beyond them.
    pub fn array_length(&self) -> Option<usize> {
        let cells =
            (u64::from(self.segment_count) + 2).checked_mul(u64::from(self.segment_length))?;
        usize::try_from(cells).ok()
    }
}

/// Fingerprint cells: one or two bytes each.
#[derive(Clone, PartialEq, Eq)]
enum Cells {
    Eight(Vec<u8>),
    Sixteen(Vec<u16>),
}

/// A built (or decoded) binary fuse filter.
#[derive(Clone, PartialEq, Eq)]
pub struct BinaryFuseFilter {
    params: FuseParams,
    /// `segment_count · segment_length`: the range of `h0`.
    start_cells: u64,
    cells: Cells,
}

impl std::fmt::Debug for BinaryFuseFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BinaryFuseFilter")
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}

/// MurmurHash3's 64-bit finalizer: the remix of a key's hash with the filter's seed.
#[inline(always)]
fn murmur64(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// SplitMix64 step: the sequence of seeds a build tries.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The fingerprint of a remixed hash (its low `bits` bits after folding the high half in).
#[inline(always)]
fn fingerprint(h: u64, bits: u8) -> u16 {
    let f = h ^ (h >> 32);
    if bits == 8 {
        u16::from(f as u8)
    } else {
        f as u16
    }
}

/// The three cells of remixed hash `h`.
#[inline(always)]
fn cells_of(h: u64, start_cells: u64, segment_length: u32) -> [usize; 3] {
    let h0 = ((u128::from(h) * u128::from(start_cells)) >> 64) as u64;
    let mask = u64::from(segment_length - 1);
    let len = u64::from(segment_length);
    let h1 = (h0 + len) ^ ((h >> 18) & mask);
    let h2 = (h0 + 2 * len) ^ (h & mask);
    [h0 as usize, h1 as usize, h2 as usize]
}

/// Segment length and count for `n` keys (the paper's sizing for three segments per window).
fn sizing(n: usize) -> (u32, u32) {
    let nf = n.max(2) as f64;
    let exponent = (nf.ln() / 3.33f64.ln() + 2.25).floor().max(1.0);
    let segment_length =
        (1u64 << (exponent as u32).min(18)).min(u64::from(MAX_SEGMENT_LENGTH)) as u32;
    let size_factor = (0.875 + 0.25 * 1_000_000f64.ln() / nf.ln()).max(1.125);
    let capacity = (nf * size_factor).round() as u64;
    let len = u64::from(segment_length);
    let segments = capacity.div_ceil(len).saturating_sub(2).max(1);
    (segment_length, u32::try_from(segments).unwrap_or(u32::MAX))
}

impl BinaryFuseFilter {
    /// Builds a filter over `hashes` (64-bit key hashes; duplicates are fine) with fingerprints of
    /// `fingerprint_bits` bits (8 or 16).
    pub fn build(hashes: &[u64], fingerprint_bits: u8) -> Result<BinaryFuseFilter, FilterError> {
        if !FUSE_FINGERPRINT_BITS.contains(&fingerprint_bits) {
            return Err(FilterError::Build(format!(
                "binary fuse fingerprints are 8 or 16 bits, not {fingerprint_bits}"
            )));
        }
        if hashes.is_empty() {
            return Ok(Self::empty(fingerprint_bits));
        }
        let (segment_length, segment_count) = sizing(hashes.len());
        let mut rng = 0x726b_2b9d_438b_9d4d_u64;
        for _ in 0..MAX_ATTEMPTS {
            let params = FuseParams {
                seed: splitmix64(&mut rng),
                segment_length,
                segment_count,
                fingerprint_bits,
            };
            if let Some(filter) = Self::try_build(hashes, params) {
                return Ok(filter);
            }
        }
        Err(FilterError::Build(format!(
            "binary fuse construction failed {MAX_ATTEMPTS} times over {} keys",
            hashes.len()
        )))
    }

    /// The filter over no keys (no cells): answers "no" to everything.
    fn empty(fingerprint_bits: u8) -> BinaryFuseFilter {
        let params = FuseParams {
            seed: 0,
            segment_length: 1,
            segment_count: 0,
            fingerprint_bits,
        };
        BinaryFuseFilter {
            params,
            start_cells: 0,
            cells: if fingerprint_bits == 8 {
                Cells::Eight(Vec::new())
            } else {
                Cells::Sixteen(Vec::new())
            },
        }
    }

    /// Whether the filter holds no cells (built over no keys).
    pub fn is_empty(&self) -> bool {
        self.params.segment_count == 0
    }

    /// One construction attempt with `params` (`None`: the keys did not peel; try another seed).
    fn try_build(hashes: &[u64], params: FuseParams) -> Option<BinaryFuseFilter> {
        let array_length = params.array_length()?;
        let start_cells = u64::from(params.segment_count) * u64::from(params.segment_length);
        let seg = params.segment_length;
        let remixed = sorted_by_window(hashes, params.seed);
        // Per cell: how many keys touch it (count << 2) and, in the low two bits, the XOR of
        // which of its keys' three positions it is; and the XOR of those keys' hashes.
        let mut count = vec![0u8; array_length];
        let mut xors = vec![0u64; array_length];
        for &h in &remixed {
            let c = cells_of(h, start_cells, seg);
            for (position, &cell) in c.iter().enumerate() {
                count[cell] = count[cell].wrapping_add(4) ^ position as u8;
                xors[cell] ^= h;
            }
            if c.iter().any(|&cell| count[cell] < 4) {
                return None; // a cell's count overflowed (more than 63 keys): another seed
            }
        }
        // Peel: a cell with one key decides that key's value; removing the key may free others.
        let mut alone: Vec<usize> = (0..array_length).filter(|&i| count[i] >> 2 == 1).collect();
        let mut order: Vec<(u64, u8)> = Vec::with_capacity(remixed.len());
        while let Some(cell) = alone.pop() {
            if count[cell] >> 2 != 1 {
                continue;
            }
            let h = xors[cell];
            let position = count[cell] & 3;
            order.push((h, position));
            let c = cells_of(h, start_cells, seg);
            for (other_position, &other) in c.iter().enumerate() {
                if other_position as u8 == position {
                    continue;
                }
                count[other] = count[other].wrapping_sub(4) ^ other_position as u8;
                xors[other] ^= h;
                if count[other] >> 2 == 1 {
                    alone.push(other);
                }
            }
            count[cell] = 0;
            xors[cell] = 0;
        }
        if order.len() != remixed.len() {
            return None;
        }
        Some(Self::assign(params, start_cells, array_length, &order))
    }

    /// Fills the cells in reverse peeling order: each key's free cell makes its XOR right.
    fn assign(
        params: FuseParams,
        start_cells: u64,
        array_length: usize,
        order: &[(u64, u8)],
    ) -> BinaryFuseFilter {
        let mut cells = vec![0u16; array_length];
        for &(h, position) in order.iter().rev() {
            let c = cells_of(h, start_cells, params.segment_length);
            let p = usize::from(position);
            let others = cells[c[(p + 1) % 3]] ^ cells[c[(p + 2) % 3]];
            cells[c[p]] = fingerprint(h, params.fingerprint_bits) ^ others;
        }
        let cells = if params.fingerprint_bits == 8 {
            Cells::Eight(cells.iter().map(|&c| c as u8).collect())
        } else {
            Cells::Sixteen(cells)
        };
        BinaryFuseFilter {
            params,
            start_cells,
            cells,
        }
    }

    /// Rebuilds a filter from decoded parts: `payload` holds `array_length` cells of
    /// `fingerprint_bits / 8` bytes each, little-endian.
    pub fn from_parts(params: FuseParams, payload: &[u8]) -> Result<BinaryFuseFilter, FilterError> {
        let bad = |what: &'static str| FilterError::InvalidParameter(what);
        if !FUSE_FINGERPRINT_BITS.contains(&params.fingerprint_bits) {
            return Err(bad("binary fuse fingerprint width"));
        }
        if !params.segment_length.is_power_of_two() || params.segment_length > MAX_SEGMENT_LENGTH {
            return Err(bad("binary fuse segment length"));
        }
        if params.segment_count == 0 {
            return if payload.is_empty() {
                Ok(Self::empty(params.fingerprint_bits))
            } else {
                Err(bad("binary fuse segment count"))
            };
        }
        let cells_len = params
            .array_length()
            .ok_or(bad("binary fuse array length"))?;
        let width = usize::from(params.fingerprint_bits / 8);
        if cells_len.checked_mul(width) != Some(payload.len()) {
            return Err(bad("binary fuse payload length"));
        }
        let cells = if width == 1 {
            Cells::Eight(payload.to_vec())
        } else {
            Cells::Sixteen(
                payload
                    .chunks_exact(2)
                    .map(|b| u16::from_le_bytes([b[0], b[1]]))
                    .collect(),
            )
        };
        Ok(BinaryFuseFilter {
            params,
            start_cells: u64::from(params.segment_count) * u64::from(params.segment_length),
            cells,
        })
    }

    /// Appends the cells, little-endian (the block's payload).
    pub fn write_payload(&self, out: &mut Vec<u8>) {
        match &self.cells {
            Cells::Eight(c) => out.extend_from_slice(c),
            Cells::Sixteen(c) => c
                .iter()
                .for_each(|v| out.extend_from_slice(&v.to_le_bytes())),
        }
    }

    /// The parameters.
    pub fn params(&self) -> FuseParams {
        self.params
    }

    /// Starts loading the first cell a query of `hash` reads (a hint only).
    #[inline]
    pub fn prefetch_hash(&self, hash: u64) {
        let h = murmur64(hash.wrapping_add(self.params.seed));
        let [h0, h1, _] = cells_of(h, self.start_cells, self.params.segment_length);
        match &self.cells {
            Cells::Eight(c) => {
                if let (Some(a), Some(b)) = (c.get(h0), c.get(h1)) {
                    crate::prefetch::prefetch(a);
                    crate::prefetch::prefetch(b);
                }
            }
            Cells::Sixteen(c) => {
                if let (Some(a), Some(b)) = (c.get(h0), c.get(h1)) {
                    crate::prefetch::prefetch(a);
                    crate::prefetch::prefetch(b);
                }
            }
        }
    }

    /// [`BinaryFuseFilter::may_contain_hash`] for every hash of `hashes`, answers in order into `out`
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

    /// `false`: the key is certainly absent; `true`: it may be present.
    #[inline]
    pub fn may_contain_hash(&self, hash: u64) -> bool {
        if self.start_cells == 0 {
            return false;
        }
        let h = murmur64(hash.wrapping_add(self.params.seed));
        let f = fingerprint(h, self.params.fingerprint_bits);
        let [h0, h1, h2] = cells_of(h, self.start_cells, self.params.segment_length);
        // In range for validated parts (`h2 < (segment_count + 2) · segment_length`); a miss
        // answers "maybe", never a false "no".
        match &self.cells {
            Cells::Eight(c) => match (c.get(h0), c.get(h1), c.get(h2)) {
                (Some(&a), Some(&b), Some(&d)) => u16::from(a ^ b ^ d) == f,
                _ => true,
            },
            Cells::Sixteen(c) => match (c.get(h0), c.get(h1), c.get(h2)) {
                (Some(&a), Some(&b), Some(&d)) => a ^ b ^ d == f,
                _ => true,
            },
        }
    }

    /// Bytes of the cells.
    pub fn size_bytes(&self) -> usize {
        match &self.cells {
            Cells::Eight(c) => c.len(),
            Cells::Sixteen(c) => 2 * c.len(),
        }
    }

    /// The FPR a filter of this fingerprint width gives: 2^-bits.
    pub fn expected_fpr(&self) -> f64 {
        fuse_expected_fpr(self.params.fingerprint_bits)
    }
}

/// The FPR of a binary fuse filter with `fingerprint_bits`-bit fingerprints.
pub fn fuse_expected_fpr(fingerprint_bits: u8) -> f64 {
    0.5f64.powi(i32::from(fingerprint_bits))
}

/// The fingerprint width a binary fuse filter over `num_keys` keys asked for `bits_per_key` gets:
/// 16 bits when the bits asked for are nearer the 16-bit filter's cost (about 18 bits/key, FPR
/// 2^-16) than the 8-bit one's (about 9 bits/key, FPR 2^-8), else 8.
pub fn fuse_fingerprint_bits_for(num_keys: usize, bits_per_key: f64) -> u8 {
    let (c8, c16) = (
        fuse_bits_per_key(num_keys, 8),
        fuse_bits_per_key(num_keys, 16),
    );
    if bits_per_key >= 0.5 * (c8 + c16) {
        16
    } else {
        8
    }
}

/// The FPR a binary fuse filter over `num_keys` keys has at `bits_per_key` — a step: no filter
/// (1.0) below the 8-bit filter's cost, 2^-8 from it, 2^-16 from the 16-bit filter's cost. The
/// Monkey planner sees the real price of each step, so the bits it hands a fuse level are bits
/// the filter uses.
pub fn fuse_fpr_at(num_keys: usize, bits_per_key: f64) -> f64 {
    if bits_per_key >= fuse_bits_per_key(num_keys, 16) {
        fuse_expected_fpr(16)
    } else if bits_per_key >= fuse_bits_per_key(num_keys, 8) {
        fuse_expected_fpr(8)
    } else {
        1.0
    }
}

/// Bits per key of a binary fuse filter over `num_keys` keys with `fingerprint_bits`-bit
/// fingerprints (array cells over keys).
pub fn fuse_bits_per_key(num_keys: usize, fingerprint_bits: u8) -> f64 {
    let (segment_length, segment_count) = sizing(num_keys);
    let cells = (f64::from(segment_count) + 2.0) * f64::from(segment_length);
    cells * f64::from(fingerprint_bits) / num_keys.max(1) as f64
}

/// The hashes remixed with `seed`, sorted and without duplicates: a counting sort on the high
/// bits into buckets of about 16, then each bucket sorted. Sorted, the keys' windows (and so the
/// cells the build touches) advance in order, and equal hashes (which could never peel) sit side
/// by side.
fn sorted_by_window(hashes: &[u64], seed: u64) -> Vec<u64> {
    let n = hashes.len().max(2);
    let bits = (usize::BITS - (n - 1).leading_zeros())
        .saturating_sub(4)
        .clamp(1, 20);
    let buckets = 1usize << bits;
    let bucket_of = |h: u64| (h >> (64 - bits)) as usize;
    let mut starts = vec![0usize; buckets + 1];
    let remixed: Vec<u64> = hashes
        .iter()
        .map(|&h| murmur64(h.wrapping_add(seed)))
        .collect();
    for &h in &remixed {
        starts[bucket_of(h) + 1] += 1;
    }
    for i in 1..=buckets {
        starts[i] += starts[i - 1];
    }
    let bounds = starts.clone();
    let mut out = vec![0u64; remixed.len()];
    for &h in &remixed {
        let b = bucket_of(h);
        out[starts[b]] = h;
        starts[b] += 1;
    }
    for w in bounds.windows(2) {
        out[w[0]..w[1]].sort_unstable();
    }
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn random_hashes(n: usize, seed: u64) -> Vec<u64> {
        let mut s = seed;
        (0..n).map(|_| splitmix64(&mut s)).collect()
    }

    #[test]
    fn no_false_negatives_and_the_fpr_of_the_width() {
        for bits in FUSE_FINGERPRINT_BITS {
            for n in [1usize, 2, 3, 10, 100, 1000, 50_000] {
                let keys = random_hashes(n, n as u64 + u64::from(bits));
                let f = BinaryFuseFilter::build(&keys, bits).unwrap();
                assert!(
                    keys.iter().all(|&h| f.may_contain_hash(h)),
                    "n {n} bits {bits}"
                );
            }
            let keys = random_hashes(100_000, 7);
            let f = BinaryFuseFilter::build(&keys, bits).unwrap();
            let probes = random_hashes(400_000, 99);
            let fp = probes.iter().filter(|&&h| f.may_contain_hash(h)).count();
            let fpr = fp as f64 / probes.len() as f64;
            let expected = fuse_expected_fpr(bits);
            assert!(
                fpr < expected * 1.5 + 1e-5,
                "bits {bits}: fpr {fpr} vs {expected}"
            );
            let bpk = f.size_bytes() as f64 * 8.0 / keys.len() as f64;
            assert!(bpk < f64::from(bits) * 1.2, "bits {bits}: {bpk} bits/key");
            assert!((bpk - fuse_bits_per_key(keys.len(), bits)).abs() < 1e-9);
        }
    }

    #[test]
    fn duplicates_and_empty_sets_build() {
        let mut keys = random_hashes(5000, 3);
        keys.extend_from_slice(&keys.clone()[..1000]);
        let f = BinaryFuseFilter::build(&keys, 8).unwrap();
        assert!(keys.iter().all(|&h| f.may_contain_hash(h)));
        let empty = BinaryFuseFilter::build(&[], 8).unwrap();
        assert!(random_hashes(1000, 4)
            .iter()
            .all(|&h| !empty.may_contain_hash(h)));
        assert!(BinaryFuseFilter::build(&keys, 12).is_err());
    }

    #[test]
    fn parts_round_trip_and_bad_parts_are_refused() {
        for bits in FUSE_FINGERPRINT_BITS {
            let keys = random_hashes(3000, 8);
            let f = BinaryFuseFilter::build(&keys, bits).unwrap();
            let mut payload = Vec::new();
            f.write_payload(&mut payload);
            let back = BinaryFuseFilter::from_parts(f.params(), &payload).unwrap();
            assert_eq!(back, f);
            let p = f.params();
            assert!(BinaryFuseFilter::from_parts(p, &payload[1..]).is_err());
            let odd = FuseParams {
                segment_length: 3,
                ..p
            };
            assert!(BinaryFuseFilter::from_parts(odd, &payload).is_err());
            let zero = FuseParams {
                segment_count: 0,
                ..p
            };
            assert!(BinaryFuseFilter::from_parts(zero, &payload).is_err());
            let empty = BinaryFuseFilter::from_parts(zero, &[]).unwrap();
            assert!(empty.is_empty() && !empty.may_contain_hash(keys[0]));
            let huge = FuseParams {
                segment_count: u32::MAX,
                segment_length: MAX_SEGMENT_LENGTH,
                ..p
            };
            assert!(BinaryFuseFilter::from_parts(huge, &payload).is_err());
        }
    }
}
