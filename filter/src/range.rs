//! Range filter: "may the set hold a key whose image lies in `[lo, hi]`?", over 64-bit
//! order-preserving images of the keys (the caller maps keys to `u64` so that key order implies
//! image order; equal images are fine, they only make the answer coarser).
//!
//! # Construction (Grafite: Costa, Ferragina, Vinciguerra, SIGMOD 2024)
//!
//! Images are cut into blocks of `2^s` consecutive values. A *locality-preserving* hash maps an
//! image `x` to the code `g(x >> s) · 2^s + (x mod 2^s)` in a reduced universe `[0, r)`,
//! `r = m · 2^s`, where `g` sends each block to one of `m` block slots by a seeded hash: inside a
//! block the order and distances of images are kept, different blocks land independently. The
//! distinct codes are sorted and stored with Elias-Fano. A range `[lo, hi]` covers one block or a
//! few adjacent ones; in each it maps to one interval of codes, and the answer is whether any code
//! falls into one of them (a successor query). A key in the range has its code in there: no false
//! negatives.
//!
//! # FPR
//!
//! Each code of another block lands in a given code interval of length `ℓ` with probability
//! `ℓ / r`, so a range of `ℓ` images is a false positive with probability `≤ n·ℓ / r`. Elias-Fano
//! over `n` codes in `[0, r)` takes `≈ n · (2 + log2(r / n))` bits; at `B` bits/key,
//! `r = n · 2^(B-2)` and FPR `≤ ℓ / 2^(B-2)` — Grafite's bound, for ranges up to `2^s` wide.
//! Correlated queries (a range just after a present key) are no worse: the key's block neighbours
//! keep their true distances, and other blocks' codes fall in at the same rate as anywhere.
//! A range wider than [`MAX_BLOCKS_PER_QUERY`] blocks answers "maybe" without looking.

use crate::error::FilterError;

/// A range spanning more blocks than this is answered "maybe" without a look (its cost would
/// grow with its width, and at that width the FPR bound is near 1 anyway).
pub const MAX_BLOCKS_PER_QUERY: u64 = 16;

/// One select sample every this many zeros of the upper bits.
const SELECT_SAMPLE: u64 = 256;

/// Everything a reader needs besides the two bit arrays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RangeParams {
    /// Distinct codes stored.
    pub num_codes: u64,
    /// Block slots `m` (the reduced universe is `m · 2^block_log2`).
    pub block_slots: u64,
    /// `s`: images per block `2^s`.
    pub block_log2: u8,
    /// Low bits per code (Elias-Fano `l`).
    pub low_bits: u8,
    /// Seed of the block hash.
    pub seed: u64,
}

impl RangeParams {
    /// `r`, the reduced universe; `None` if it overflows 64 bits.
    fn universe(&self) -> Option<u64> {
        self.block_slots
            .checked_mul(1u64.checked_shl(u32::from(self.block_log2))?)
    }

    /// Words of the low-bits array and of the upper-bits array these parameters need.
    pub fn word_counts(&self) -> Option<(usize, usize)> {
        if self.low_bits >= 64 || self.block_log2 >= 64 {
            return None;
        }
        let universe = self.universe()?;
        let low_bits = self.num_codes.checked_mul(u64::from(self.low_bits))?;
        let high_bits = self
            .num_codes
            .checked_add(universe >> self.low_bits)?
            .checked_add(1)?;
        Some((
            usize::try_from(low_bits.div_ceil(64)).ok()?,
            usize::try_from(high_bits.div_ceil(64)).ok()?,
        ))
    }
}

/// A built (or decoded) range filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeFilter {
    params: RangeParams,
    /// Low `low_bits` bits of each code, packed little-endian.
    low: Vec<u64>,
    /// Upper bits in unary: for each code `i`, bit `(code_i >> low_bits) + i` is set.
    high: Vec<u64>,
    /// Position of zero number `t · SELECT_SAMPLE` of `high`, for every `t`.
    zero_samples: Vec<u64>,
}

/// SplitMix64 finalizer: the block hash.
#[inline]
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

impl RangeFilter {
    /// Builds a filter over `images` at `bits_per_key` (in `[3, 64]`), for ranges up to
    /// `2^block_log2` images wide (wider ones cost one successor query per block, up to
    /// [`MAX_BLOCKS_PER_QUERY`] blocks). `seed` picks the block hash.
    pub fn build(
        images: &[u64],
        bits_per_key: f64,
        block_log2: u8,
        seed: u64,
    ) -> Result<RangeFilter, FilterError> {
        if !(3.0..=64.0).contains(&bits_per_key) {
            return Err(FilterError::Build(format!(
                "range filter bits/key must be in [3, 64], got {bits_per_key}"
            )));
        }
        if block_log2 >= 63 {
            return Err(FilterError::Build(format!(
                "range filter block size 2^{block_log2} is too large"
            )));
        }
        let n = images.len().max(1) as f64;
        // r = n · 2^(B-2), rounded up to whole blocks (at least one), capped below 2^63.
        let target = (n * (bits_per_key - 2.0).exp2()).min(2f64.powi(62));
        let block = 1u64 << block_log2;
        let block_slots = ((target / block as f64).ceil() as u64).max(1);
        let params = RangeParams {
            num_codes: 0,
            block_slots,
            block_log2,
            low_bits: 0,
            seed,
        };
        let mut codes: Vec<u64> = images.iter().map(|&x| params.code(x)).collect();
        codes.sort_unstable();
        codes.dedup();
        Ok(Self::from_sorted_codes(params, &codes))
    }

    /// Elias-Fano over sorted distinct `codes`.
    fn from_sorted_codes(mut params: RangeParams, codes: &[u64]) -> RangeFilter {
        let universe = params.universe().unwrap_or(u64::MAX);
        let k = codes.len() as u64;
        params.num_codes = k;
        params.low_bits = if k == 0 || universe <= k {
            0
        } else {
            (63 - (universe / k).leading_zeros()) as u8
        };
        let (low_words, high_words) = params.word_counts().unwrap_or((0, 0));
        let mut low = vec![0u64; low_words];
        let mut high = vec![0u64; high_words];
        let l = u32::from(params.low_bits);
        for (i, &c) in codes.iter().enumerate() {
            if l > 0 {
                set_bits(&mut low, i as u64 * u64::from(l), l, c & ((1u64 << l) - 1));
            }
            let pos = (c >> l) + i as u64;
            high[(pos / 64) as usize] |= 1u64 << (pos % 64);
        }
        let zero_samples = zero_samples(&high);
        RangeFilter {
            params,
            low,
            high,
            zero_samples,
        }
    }

    /// Rebuilds a filter from decoded parts, validating sizes and that the upper bits hold
    /// exactly `num_codes` ones in order (never panics; a damaged array is refused).
    pub fn from_parts(
        params: RangeParams,
        low: Vec<u64>,
        high: Vec<u64>,
    ) -> Result<RangeFilter, FilterError> {
        let Some((low_words, high_words)) = params.word_counts() else {
            return Err(FilterError::InvalidParameter(
                "range filter parameters overflow",
            ));
        };
        if params.block_slots == 0 || params.block_log2 >= 63 {
            return Err(FilterError::InvalidParameter(
                "range filter with no block slots",
            ));
        }
        if low.len() != low_words || high.len() != high_words {
            return Err(FilterError::InvalidParameter(
                "range filter arrays do not match their parameters",
            ));
        }
        let ones: u64 = high.iter().map(|w| u64::from(w.count_ones())).sum();
        if ones != params.num_codes {
            return Err(FilterError::InvalidParameter(
                "range filter upper bits do not hold one bit per code",
            ));
        }
        let zero_samples = zero_samples(&high);
        let filter = RangeFilter {
            params,
            low,
            high,
            zero_samples,
        };
        // Codes strictly increasing and inside the universe: the successor search relies on it.
        let universe = params.universe().unwrap_or(u64::MAX);
        let mut previous = None;
        for code in filter.codes() {
            if previous.is_some_and(|p| code <= p) || code >= universe {
                return Err(FilterError::InvalidParameter(
                    "range filter codes out of order",
                ));
            }
            previous = Some(code);
        }
        Ok(filter)
    }

    /// Every stored code, in order.
    fn codes(&self) -> impl Iterator<Item = u64> + '_ {
        let l = u32::from(self.params.low_bits);
        let total_bits = self.high.len() as u64 * 64;
        let (mut high, mut i) = (0u64, 0u64);
        (0..total_bits).filter_map(move |pos| {
            if i >= self.params.num_codes {
                return None;
            }
            if self.high[(pos / 64) as usize] >> (pos % 64) & 1 == 0 {
                high += 1;
                None
            } else {
                let code = (high << l) | self.low_bits_of(i);
                i += 1;
                Some(code)
            }
        })
    }

    /// The parameters.
    pub fn params(&self) -> RangeParams {
        self.params
    }

    /// The packed low bits (serialize little-endian).
    pub fn low_words(&self) -> &[u64] {
        &self.low
    }

    /// The upper bits (serialize little-endian).
    pub fn high_words(&self) -> &[u64] {
        &self.high
    }

    /// Size of the two arrays in bytes.
    pub fn size_bytes(&self) -> usize {
        (self.low.len() + self.high.len()) * 8
    }

    /// The FPR bound for a range of `width` images (Grafite's `ℓ · n / r`, at most 1).
    pub fn fpr_bound(&self, width: u64) -> f64 {
        let universe = self.params.universe().unwrap_or(u64::MAX) as f64;
        (width as f64 * self.params.num_codes as f64 / universe).min(1.0)
    }

    /// `false`: no image of the set lies in `[lo, hi]` (inclusive); `true`: one may.
    /// An empty range (`lo > hi`) is `false`.
    pub fn may_contain_range(&self, lo: u64, hi: u64) -> bool {
        if lo > hi || self.params.num_codes == 0 {
            return false;
        }
        let s = u32::from(self.params.block_log2);
        let (first, last) = (lo >> s, hi >> s);
        if last - first >= MAX_BLOCKS_PER_QUERY {
            return true;
        }
        let mask = (1u64 << s) - 1;
        (first..=last).any(|b| {
            let from = if b == first { lo & mask } else { 0 };
            let to = if b == last { hi & mask } else { mask };
            let base = self.params.slot(b) << s;
            self.any_code_in(base + from, base + to)
        })
    }

    /// `true` if the set may hold `image` (a range of one).
    pub fn may_contain(&self, image: u64) -> bool {
        self.may_contain_range(image, image)
    }

    /// Whether some stored code lies in `[lo, hi]`: the successor of `lo` is at most `hi`.
    fn any_code_in(&self, lo: u64, hi: u64) -> bool {
        let l = u32::from(self.params.low_bits);
        let bucket = lo >> l;
        // Codes before `i` have a high part below `bucket`; scan the codes from there.
        let (mut i, mut pos) = if bucket == 0 {
            (0, 0)
        } else {
            match self.select_zero(bucket - 1) {
                Some(p) => (p - (bucket - 1), p + 1),
                None => return false,
            }
        };
        let mut high = bucket;
        let total_bits = self.high.len() as u64 * 64;
        while i < self.params.num_codes && pos < total_bits {
            if self.high[(pos / 64) as usize] >> (pos % 64) & 1 == 0 {
                high += 1;
                if high > hi >> l {
                    return false;
                }
            } else {
                let code = (high << l) | self.low_bits_of(i);
                if code >= lo {
                    return code <= hi;
                }
                i += 1;
            }
            pos += 1;
        }
        false
    }

    fn low_bits_of(&self, i: u64) -> u64 {
        let l = u32::from(self.params.low_bits);
        if l == 0 {
            0
        } else {
            get_bits(&self.low, i * u64::from(l), l)
        }
    }

    /// Position of zero number `j` (0-based) of the upper bits.
    fn select_zero(&self, j: u64) -> Option<u64> {
        let sample = *self.zero_samples.get((j / SELECT_SAMPLE) as usize)?;
        let mut left = j % SELECT_SAMPLE;
        let mut word = (sample / 64) as usize;
        // Zeros of the first word at or after the sample's position.
        let mut bits = !self.high.get(word)? & (u64::MAX << (sample % 64));
        loop {
            let zeros = u64::from(bits.count_ones());
            if left < zeros {
                for _ in 0..left {
                    bits &= bits - 1;
                }
                return Some(word as u64 * 64 + u64::from(bits.trailing_zeros()));
            }
            left -= zeros;
            word += 1;
            bits = !*self.high.get(word)?;
        }
    }
}

impl RangeParams {
    /// The block slot of block `b`.
    #[inline]
    fn slot(&self, b: u64) -> u64 {
        ((u128::from(mix(b ^ self.seed)) * u128::from(self.block_slots)) >> 64) as u64
    }

    /// The code of image `x`.
    #[inline]
    fn code(&self, x: u64) -> u64 {
        let s = u32::from(self.block_log2);
        (self.slot(x >> s) << s) | (x & ((1u64 << s) - 1))
    }
}

/// Positions of zeros number `0, SELECT_SAMPLE, 2·SELECT_SAMPLE, …` of `bits` (whole words:
/// the padding past the last code counts as zeros, never asked for). A word at a time: the
/// zeros of a word are counted, and only a word holding a sampled zero is walked.
fn zero_samples(bits: &[u64]) -> Vec<u64> {
    let mut samples = Vec::new();
    let mut zeros = 0u64; // zeros before the current word
    for (w, &word) in bits.iter().enumerate() {
        let mut free = !word;
        let in_word = u64::from(free.count_ones());
        // The next sampled zero's rank, if it falls in this word.
        let mut next = zeros.div_ceil(SELECT_SAMPLE) * SELECT_SAMPLE;
        while next < zeros + in_word {
            for _ in zeros..next {
                free &= free - 1;
            }
            samples.push(w as u64 * 64 + u64::from(free.trailing_zeros()));
            // Continue from the sampled zero itself (ranks counted from it).
            let skipped = next - zeros;
            zeros += skipped;
            next += SELECT_SAMPLE;
        }
        zeros += u64::from(free.count_ones());
    }
    samples
}

/// Writes the low `width` bits of `value` at bit `at` of `words`.
fn set_bits(words: &mut [u64], at: u64, width: u32, value: u64) {
    let (w, b) = ((at / 64) as usize, (at % 64) as u32);
    words[w] |= value << b;
    if b + width > 64 {
        words[w + 1] |= value >> (64 - b);
    }
}

/// Reads `width` (1..=63) bits at bit `at` of `words` (0 past the end).
fn get_bits(words: &[u64], at: u64, width: u32) -> u64 {
    let (w, b) = ((at / 64) as usize, (at % 64) as u32);
    let mut v = words.get(w).copied().unwrap_or(0) >> b;
    if b + width > 64 {
        v |= words.get(w + 1).copied().unwrap_or(0) << (64 - b);
    }
    v & ((1u64 << width) - 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn images(n: usize, seed: u64) -> Vec<u64> {
        (0..n as u64)
            .map(|i| mix(i ^ seed.rotate_left(17)))
            .collect()
    }

    /// The exact answer.
    fn truth(sorted: &[u64], lo: u64, hi: u64) -> bool {
        let i = sorted.partition_point(|&x| x < lo);
        i < sorted.len() && sorted[i] <= hi
    }

    #[test]
    fn range_filter_has_no_false_negatives_and_meets_grafites_bound() {
        let n = 100_000;
        let mut keys = images(n, 1);
        let f = RangeFilter::build(&keys, 12.0, 10, 7).unwrap();
        keys.sort_unstable();
        let bits_per_key = f.size_bytes() as f64 * 8.0 / n as f64;
        assert!(bits_per_key < 12.6, "{bits_per_key}");
        for &k in keys.iter().step_by(7) {
            assert!(f.may_contain(k));
            assert!(f.may_contain_range(k.saturating_sub(5), k.saturating_add(5)));
        }
        for width in [2u64, 16, 64] {
            let (mut fp, mut negatives) = (0u64, 0u64);
            // Random ranges, and ranges just after a present key (correlated).
            for q in 0..200_000u64 {
                let lo = if q % 2 == 0 {
                    mix(q ^ 0xABCD)
                } else {
                    keys[(mix(q) % n as u64) as usize].saturating_add(1)
                };
                let hi = lo.saturating_add(width - 1);
                if truth(&keys, lo, hi) {
                    continue;
                }
                negatives += 1;
                fp += u64::from(f.may_contain_range(lo, hi));
            }
            let fpr = fp as f64 / negatives as f64;
            let bound = width as f64 / (bits_per_key - 2.0).exp2();
            println!("width {width}: {negatives} empty ranges, fpr {fpr:.5}, bound {bound:.5}");
            assert!(negatives > 150_000, "{negatives}");
            assert!(
                fpr <= 1.3 * bound + 0.001,
                "width {width}: fpr {fpr} bound {bound}"
            );
        }
    }

    #[test]
    fn zero_samples_match_a_bit_by_bit_count() {
        let mut x = 7u64;
        for density in [0u32, 1, 3, 8] {
            let words: Vec<u64> = (0..300)
                .map(|_| {
                    x = mix(x);
                    (0..density).fold(x, |w, i| w & mix(x ^ u64::from(i)))
                })
                .collect();
            let mut naive = Vec::new();
            let mut zeros = 0u64;
            for pos in 0..words.len() as u64 * 64 {
                if words[(pos / 64) as usize] >> (pos % 64) & 1 == 0 {
                    if zeros.is_multiple_of(SELECT_SAMPLE) {
                        naive.push(pos);
                    }
                    zeros += 1;
                }
            }
            assert_eq!(zero_samples(&words), naive, "density {density}");
        }
    }

    #[test]
    fn range_filter_of_nothing_says_no() {
        let f = RangeFilter::build(&[], 10.0, 8, 1).unwrap();
        assert!(!f.may_contain_range(0, u64::MAX));
        assert!(RangeFilter::build(&[1], 2.0, 8, 1).is_err());
        assert!(RangeFilter::build(&[1], 10.0, 63, 1).is_err());
    }

    #[test]
    fn range_filter_parts_round_trip_and_damage_is_refused() {
        let f = RangeFilter::build(&images(5_000, 3), 10.0, 12, 9).unwrap();
        let back =
            RangeFilter::from_parts(f.params(), f.low_words().to_vec(), f.high_words().to_vec())
                .unwrap();
        assert_eq!(back, f);
        let mut high = f.high_words().to_vec();
        high[3] ^= 1 << 5;
        assert!(RangeFilter::from_parts(f.params(), f.low_words().to_vec(), high).is_err());
        let mut params = f.params();
        params.low_bits += 1;
        assert!(
            RangeFilter::from_parts(params, f.low_words().to_vec(), f.high_words().to_vec())
                .is_err()
        );
    }

    proptest! {
        #[test]
        fn range_filter_never_says_no_to_a_range_holding_a_key(
            keys in proptest::collection::vec(any::<u64>(), 0..300),
            ranges in proptest::collection::vec((any::<u64>(), 0u64..5000), 1..50),
            bits in 3.0f64..20.0,
            block_log2 in 0u8..20,
            seed in any::<u64>(),
        ) {
            let f = RangeFilter::build(&keys, bits, block_log2, seed).unwrap();
            let mut sorted = keys.clone();
            sorted.sort_unstable();
            for &k in &keys {
                prop_assert!(f.may_contain(k));
            }
            for (lo, w) in ranges {
                let hi = lo.saturating_add(w);
                if truth(&sorted, lo, hi) {
                    prop_assert!(f.may_contain_range(lo, hi), "[{lo}, {hi}]");
                }
                // Ranges starting at a key, and just around one.
                if let Some(&k) = sorted.get((lo % 301) as usize) {
                    prop_assert!(f.may_contain_range(k.saturating_sub(w), k));
                    prop_assert!(f.may_contain_range(k, k.saturating_add(w)));
                }
            }
        }
    }
}
