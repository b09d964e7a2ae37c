//! Standard Ribbon filter (Dillinger & Walzer, "Ribbon filter: practically smaller than Bloom and
//! Xor", 2021) with 128-bit coefficient rows and interleaved, fractional-column solution storage.
//!
//! # The idea
//!
//! A filter over a key set is a solution `S` (a `num_slots × c` bit matrix) of the GF(2) linear
//! system "for every key: `coeff(key) · S[start(key) ..][.., j] = fingerprint(key)_j` for all
//! columns `j`". A key's equation has a *ribbon* shape: its coefficient row is 128 random bits
//! (lowest bit set) placed at a random start slot, so the whole system is a band matrix that can be
//! solved by on-the-fly Gaussian elimination (each new row is reduced against the pivot rows it
//! meets, then parked at the first free pivot slot it reaches) followed by back-substitution.
//! A key not in the set matches all `c` fingerprint bits only by chance: FPR = `2^-c`.
//!
//! # Layout
//!
//! Slots are grouped into blocks of 128 ([`RIBBON_WIDTH`]). For each block the solution is stored
//! *column-major* ("interleaved"): column `j` of block `b` is one `u128`, written as two `u64`
//! words (low half first), blocks one after another. A row starting at offset `o` of block `b`
//! covers slots `o..128` of block `b` and `0..o` of block `b + 1`, so a query reads column `j` of
//! two *adjacent* blocks — one or two neighbouring cache lines per column, and column 0 (where
//! a negative query usually already fails) sits at the front of each block.
//!
//! Fractional bits/key: blocks `[0, upper_start_block)` store `lower_columns` columns, blocks
//! `[upper_start_block, num_blocks)` store one more. A key is checked against `columns(b)` bits
//! where `b` is the block of its start slot; column counts never decrease with the block index, so
//! block `b + 1` always has at least those columns, and block `b + 1` begins exactly
//! `2 · columns(b)` words after block `b` (whichever side of the boundary `b + 1` lies on).
//!
//! # Per-key derivations ("remixing")
//!
//! The caller's 64-bit hash `h` is combined with the seed ordinal `s` of the build attempt:
//! `a = mix_a(h ^ salt(s))` where `salt(s)` is itself a strong mix of `s`. `mix_a` is a bijection
//! with full avalanche, so distinct hashes give distinct `a`, and every retry seed gives an
//! unrelated system. From `a`:
//! * start slot = `fastrange(a, num_starts)` = high 64 bits of `a · num_starts` (multiply-shift, no
//!   division; determined by the *top* bits of `a`);
//! * fingerprint = low 32 bits of `a` (masked to the block's column count) — practically
//!   independent of the top bits that choose the start;
//! * coefficient row = the full 128-bit product `(rotl(a, 32) ^ K_B) · K_C`, with bit 0 forced
//!   to one. The rotation matters: bit `k` of a product's low word depends only on input bits `0..=k`,
//!   so without it the low coefficient bits would be functions of the fingerprint bits (which
//!   would bias the FPR). Rotated, they come from bits `32..` of `a`, which the fingerprint never
//!   uses and the start (top bits) only for the higher coefficient bits, where the multiply has
//!   mixed in everything. One multiply keeps the query short; banding success measured the same
//!   as with two full 64-bit mixers (see the `calibrate` test).
//!
//! # Sizing
//!
//! `num_slots = ceil(n · ribbon_overhead(n) / 128)` blocks (at least 2). Start slots are drawn
//! from `[0, num_slots - 128)` (a subset of the paper's `[0, num_slots - 128]`: it keeps the
//! second block of every row inside the filter, so no query needs a bounds special case). The
//! overhead factor comes from an empirical table (see [`ribbon_overhead`]): Standard Ribbon needs
//! more relative slack as `n` grows (roughly `+0.4 %` per doubling of `n` for w = 128). If
//! banding fails for `SEEDS_PER_SIZE` seeds in a row, the filter grows by 1 % and keeps trying.
//!
//! The average column count is `bits_per_key / ribbon_overhead(n)`, so for large `n` the solution
//! takes `≈ bits_per_key · n` bits; for tiny `n` (where a 256-slot minimum dominates) the filter
//! keeps the requested FPR and is bigger per key than asked.

use crate::error::FilterError;

/// Coefficient width in bits = slots per block.
pub const RIBBON_WIDTH: u32 = 128;

/// Columns a query checks before its first (and usually only) branch on the data.
const FIRST_GROUP: usize = 4;

/// Slots per block (as `usize`).
const BLOCK_SLOTS: usize = RIBBON_WIDTH as usize;

/// Most columns (fingerprint bits) any block stores: fingerprints come from 32 bits of the remixed
/// hash. 32 columns is an FPR of 2^-32, far below anything an LSM tree plans for.
const MAX_COLUMNS: u32 = 32;

/// Largest accepted bits/key (more is silently capped at [`MAX_COLUMNS`] columns).
const MAX_BITS_PER_KEY: f64 = 64.0;

/// Seeds tried at one size before the filter grows by [`GROWTH_PERCENT`].
const SEEDS_PER_SIZE: u32 = 16;

/// Growth of `num_slots` after [`SEEDS_PER_SIZE`] failed seeds.
const GROWTH_PERCENT: u64 = 1;

/// Safety net: after this many failed seeds (64 growth steps, ~1.9× the planned slots, which no
/// real key set ever reaches) the build gives up solving and returns a zero-column filter that
/// answers "maybe" for everything. Still never a false negative, and `build` never loops forever.
const MAX_ATTEMPTS: u32 = SEEDS_PER_SIZE * 64;

/// Everything a reader needs besides the solution words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RibbonParams {
    /// Blocks of 128 slots (0 for an empty filter).
    pub num_blocks: u32,
    /// Columns in blocks `[0, upper_start_block)`.
    pub lower_columns: u8,
    /// Blocks `>= upper_start_block` store `lower_columns + 1` columns; `== num_blocks` if none.
    pub upper_start_block: u32,
    /// The seed ordinal banding succeeded with.
    pub seed: u32,
}

/// A built (or decoded) Standard Ribbon filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RibbonFilter {
    params: RibbonParams,
    /// Interleaved solution: per block, `columns(block)` × (low word, high word).
    words: Vec<u64>,
    /// `salt(params.seed)`, cached for queries.
    salt: u64,
    /// Number of possible start slots, `(num_blocks - 1) · 128`; 0 for the empty filter.
    num_starts: u64,
}

// ---------------------------------------------------------------------------------------------
// Hash remixing
// ---------------------------------------------------------------------------------------------

/// Constant XORed into the rotated `a` before the coefficient multiply (and into free-slot fill).
const K_B: u64 = 0x2545_F491_4F6C_DD1D;
/// Odd multiplier of the coefficient product.
const K_C: u64 = 0x9FB2_1C65_1E98_DF25;

/// Full-avalanche 64-bit bijection (Pelle Evensen's "moremur" constants).
#[inline(always)]
fn mix_a(mut x: u64) -> u64 {
    x ^= x >> 27;
    x = x.wrapping_mul(0x3C79_AC49_2BA7_B653);
    x ^= x >> 33;
    x = x.wrapping_mul(0x1C69_B3F7_4AC4_AE35);
    x ^ (x >> 27)
}

/// Full-avalanche 64-bit bijection (SplitMix64 finalizer, Stafford variant 13).
#[inline(always)]
fn mix_b(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Salt of seed ordinal `seed`: consecutive ordinals give unrelated salts.
#[inline]
fn seed_salt(seed: u32) -> u64 {
    mix_b(
        u64::from(seed)
            .wrapping_add(1)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15),
    )
}

/// The remixed per-key value `a` every derivation starts from.
#[inline(always)]
fn remix(hash: u64, salt: u64) -> u64 {
    mix_a(hash ^ salt)
}

/// Start slot in `[0, num_starts)`: multiply-shift ("fastrange") on the whole of `a`.
#[inline(always)]
fn start_of(a: u64, num_starts: u64) -> u64 {
    ((u128::from(a) * u128::from(num_starts)) >> 64) as u64
}

/// 128-bit coefficient row, bit 0 (the start slot) always set.
///
/// One 64×64→128 multiply of `a` rotated by 32 bits: the low product word's bit `k` depends on
/// input bits `0..=k`, i.e. on bits `32..` of `a`, which neither the fingerprint (bits `0..32`)
/// nor, for its lowest bits, the start (top bits of `a`) use; the high word mixes all of `a`.
#[inline(always)]
fn coeff_of(a: u64) -> u128 {
    let p = u128::from(a.rotate_left(32) ^ K_B) * u128::from(K_C);
    p | 1
}

/// Fingerprint: the low 32 bits of `a` (bit `j` is checked against column `j`).
#[inline(always)]
fn fingerprint_of(a: u64) -> u32 {
    a as u32
}

/// Parity (0 or 1) of a word.
#[inline(always)]
fn parity(x: u64) -> u64 {
    u64::from(x.count_ones() & 1)
}

/// Mask of the low `columns` bits of a fingerprint.
#[inline(always)]
fn column_mask(columns: u32) -> u32 {
    if columns >= 32 {
        u32::MAX
    } else {
        (1u32 << columns) - 1
    }
}

// ---------------------------------------------------------------------------------------------
// Sizing
// ---------------------------------------------------------------------------------------------

/// Empirical slots-per-key factors at `n = 2^k` keys, `k = 0..=27` (interpolated in `log2 n`,
/// extrapolated beyond 2^27 with the last step's slope).
///
/// Measured with this implementation (see the `calibrate` test): the factor at which a single
/// banding attempt succeeds with probability ≈ 70-80 % (a failed attempt costs one more seed; at
/// 16 failures the filter grows). Standard Ribbon at w = 128 needs slack growing ~0.4 % per
/// doubling of `n` for large `n`; below ~256 keys the 2-block minimum dominates anyway.
const OVERHEAD_BY_POW2: [f64; 28] = [
    1.000, 1.000, 1.000, 1.000, 1.000, 1.000, 1.000, 1.000, // 1 .. 128
    1.005, 1.005, 1.005, 1.008, 1.010, 1.013, 1.016, 1.019, // 256 .. 32K
    1.023, 1.026, 1.029, 1.032, 1.035, 1.039, 1.043, 1.047, // 64K .. 8M
    1.051, 1.055, 1.059, 1.063, // 16M .. 128M
];

/// The slots-per-key overhead factor used for `num_keys` keys (≥ 1.0).
///
/// Standard Ribbon needs a few percent more slots than keys for banding to succeed with good
/// probability; the needed slack grows slowly (logarithmically) with the number of keys. The
/// values come from an empirical table interpolated in `log2(num_keys)`.
pub fn ribbon_overhead(num_keys: usize) -> f64 {
    if num_keys <= 1 {
        return OVERHEAD_BY_POW2[0];
    }
    let lg = (num_keys as f64).log2();
    let last = OVERHEAD_BY_POW2.len() - 1;
    let k = lg.floor() as usize;
    let factor = if k >= last {
        let slope = OVERHEAD_BY_POW2[last] - OVERHEAD_BY_POW2[last - 1];
        OVERHEAD_BY_POW2[last] + slope * (lg - last as f64)
    } else {
        let frac = lg - k as f64;
        OVERHEAD_BY_POW2[k] + (OVERHEAD_BY_POW2[k + 1] - OVERHEAD_BY_POW2[k]) * frac
    };
    factor.max(1.0)
}

/// Blocks planned for `num_keys > 0` keys at slot factor `overhead`: at least 2, so that start
/// slots `[0, (num_blocks - 1) · 128)` exist and every row's second block is inside the filter.
fn planned_blocks(num_keys: usize, overhead: f64) -> u32 {
    let slots = (num_keys as f64 * overhead).ceil();
    let blocks = (slots / BLOCK_SLOTS as f64).ceil();
    // Saturating float→int conversion; u32::MAX blocks (2^39 slots) is beyond any real filter.
    (blocks as u32).max(2)
}

/// Average columns per slot for `bits_per_key` at slot factor `overhead`, capped at 32.
fn target_columns(bits_per_key: f64, overhead: f64) -> f64 {
    (bits_per_key / overhead).clamp(0.0, f64::from(MAX_COLUMNS))
}

/// Column layout of a `num_blocks`-block filter whose keys should average `target` columns.
///
/// Keys start only in blocks `0..num_blocks - 1` (each equally likely), so a fraction
/// `frac(target)` of those *start blocks* get the extra column; the last block (which only holds
/// row tails) follows the monotonic rule and is upper whenever any block is.
fn layout(num_blocks: u32, target: f64) -> (u8, u32) {
    let lower = target.floor();
    if lower >= f64::from(MAX_COLUMNS) {
        return (MAX_COLUMNS as u8, num_blocks);
    }
    let start_blocks = num_blocks.saturating_sub(1);
    let upper = ((target - lower) * f64::from(start_blocks)).round() as u32;
    let upper = upper.min(start_blocks);
    let upper_start = if upper == 0 {
        num_blocks
    } else {
        start_blocks - upper
    };
    (lower as u8, upper_start)
}

/// FPR of a layout: the average over start blocks of `2^-columns(block)`.
fn layout_fpr(params: &RibbonParams) -> f64 {
    if params.num_blocks == 0 {
        return 0.0;
    }
    let start_blocks = f64::from(params.num_blocks - 1);
    let lower_blocks = f64::from(params.upper_start_block.min(params.num_blocks - 1));
    let upper_blocks = start_blocks - lower_blocks;
    let l = i32::from(params.lower_columns);
    (lower_blocks * 0.5f64.powi(l) + upper_blocks * 0.5f64.powi(l + 1)) / start_blocks
}

/// The space-vs-FPR curve used for planning (Monkey allocation needs it): the FPR a ribbon filter
/// built over `num_keys` keys at `bits_per_key` is expected to give (same sizing rules as build).
///
/// `num_keys == 0` gives 0.0 (an empty filter never says "maybe"); a `bits_per_key` that
/// [`RibbonFilter::build`] would reject (non-finite, `<= 0`) gives 1.0, above 64 it is capped
/// like the build caps columns.
pub fn ribbon_expected_fpr(num_keys: usize, bits_per_key: f64) -> f64 {
    RibbonFprCurve::new(num_keys).fpr(bits_per_key)
}

/// [`ribbon_expected_fpr`] over one key count at many bits/key: the slot factor and block count
/// (a logarithm each) are worked out once, so a planner's 1,281-point curve costs a few
/// multiplications per point (before, the logarithms were most of a compaction's planning).
#[derive(Debug, Clone, Copy)]
pub struct RibbonFprCurve {
    num_keys: usize,
    overhead: f64,
    num_blocks: u32,
}

impl RibbonFprCurve {
    /// The curve of a filter over `num_keys` keys.
    pub fn new(num_keys: usize) -> RibbonFprCurve {
        let overhead = ribbon_overhead(num_keys.max(1));
        RibbonFprCurve {
            num_keys,
            overhead,
            num_blocks: planned_blocks(num_keys.max(1), overhead),
        }
    }

    /// The expected FPR at `bits_per_key` (see [`ribbon_expected_fpr`]).
    pub fn fpr(&self, bits_per_key: f64) -> f64 {
        if self.num_keys == 0 {
            return 0.0;
        }
        if bits_per_key.is_nan() || bits_per_key <= 0.0 {
            return 1.0;
        }
        let (lower_columns, upper_start_block) = layout(
            self.num_blocks,
            target_columns(bits_per_key.min(MAX_BITS_PER_KEY), self.overhead),
        );
        layout_fpr(&RibbonParams {
            num_blocks: self.num_blocks,
            lower_columns,
            upper_start_block,
            seed: 0,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Construction
// ---------------------------------------------------------------------------------------------

/// Reusable allocations of the build attempts.
///
/// Peak temporary memory of a build is `sorted` (64 bits/key) plus `coeffs` and `results`
/// (160 bits/slot, ≈ 1.05 slots/key): ≈ 230 bits/key besides the filter itself. The remixed
/// values are computed twice (counting pass, scatter pass) instead of being stored a third time.
#[derive(Default)]
struct Scratch {
    /// Remixed values bucketed by start slot.
    sorted: Vec<u64>,
    /// Counting-sort bucket offsets.
    offsets: Vec<usize>,
    /// Pivot rows by slot (0 = empty).
    coeffs: Vec<u128>,
    /// Right-hand sides of the pivot rows.
    results: Vec<u32>,
}

/// A filter geometry to try.
#[derive(Clone, Copy)]
struct Geometry {
    num_blocks: u32,
    lower_columns: u8,
    upper_start_block: u32,
}

impl Geometry {
    fn num_slots(&self) -> usize {
        self.num_blocks as usize * BLOCK_SLOTS
    }
    fn num_starts(&self) -> u64 {
        u64::from(self.num_blocks - 1) * BLOCK_SLOTS as u64
    }
    fn columns(&self, block: usize) -> u32 {
        u32::from(self.lower_columns) + u32::from(block >= self.upper_start_block as usize)
    }
    fn max_columns(&self) -> u32 {
        u32::from(self.lower_columns) + u32::from(self.upper_start_block < self.num_blocks)
    }
}

/// log2 of the slots per counting-sort bucket. Keys are banded in bucket order; within a bucket
/// the order is arbitrary, so the pivot rows being touched stay inside a window of
/// `2^BUCKET_SHIFT + 256` slots (≈ 40 KiB of coefficients and results: L1/L2 resident), while the
/// number of buckets (the scatter fan-out of the sort) stays small.
const BUCKET_SHIFT: u32 = 11;

/// Filters of at most this many slots (≈ 160 KiB of coefficients and results: L2 resident)
/// are banded in their keys' order: sorting them would buy no locality and costs two passes.
const UNSORTED_SLOTS: usize = 4 << BUCKET_SHIFT;

/// [`band`] on the best instruction set this CPU has ([`crate::kernel`]).
fn band_kernel(hashes: &[u64], geo: Geometry, seed: u32, scratch: &mut Scratch) -> bool {
    #[cfg(target_arch = "x86_64")]
    if crate::kernel::x86_v3() {
        // SAFETY: `x86_v3()` checked at run time that this CPU has every feature `band_v3` is
        // compiled for.
        return unsafe { band_v3(hashes, geo, seed, scratch) };
    }
    band(hashes, geo, seed, scratch)
}

/// [`band`] compiled for x86-64 v3 (`tzcnt`, BMI shifts).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "bmi1,bmi2,popcnt,lzcnt")]
fn band_v3(hashes: &[u64], geo: Geometry, seed: u32, scratch: &mut Scratch) -> bool {
    band(hashes, geo, seed, scratch)
}

/// [`back_substitute`] on the best instruction set this CPU has.
fn back_substitute_kernel(geo: Geometry, seed: u32, scratch: &Scratch) -> Vec<u64> {
    #[cfg(target_arch = "x86_64")]
    if crate::kernel::x86_v3() {
        // SAFETY: `x86_v3()` checked at run time that this CPU has every feature
        // `back_substitute_v3` is compiled for.
        return unsafe { back_substitute_v3(geo, seed, scratch) };
    }
    back_substitute(geo, seed, scratch)
}

/// [`back_substitute`] compiled for x86-64 v3 (`popcnt` parities).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "bmi1,bmi2,popcnt,lzcnt")]
fn back_substitute_v3(geo: Geometry, seed: u32, scratch: &Scratch) -> Vec<u64> {
    back_substitute(geo, seed, scratch)
}

/// Bands all keys for `seed` into `scratch.coeffs` / `scratch.results`. Returns false if some key
/// reduced to an all-zero coefficient row with a non-zero result (an inconsistent system).
#[inline(always)]
fn band(hashes: &[u64], geo: Geometry, seed: u32, scratch: &mut Scratch) -> bool {
    let salt = seed_salt(seed);
    let num_starts = geo.num_starts();
    let num_slots = geo.num_slots();

    let Scratch {
        sorted,
        offsets,
        coeffs,
        results,
    } = scratch;
    if num_slots <= UNSORTED_SLOTS {
        // The whole band stays in cache: band in the keys' order, without sorting.
        sorted.clear();
        sorted.extend(hashes.iter().map(|&h| remix(h, salt)));
    } else {
        bucket_by_start(hashes, salt, num_starts, sorted, offsets);
    }

    coeffs.clear();
    coeffs.resize(num_slots, 0);
    results.clear();
    results.resize(num_slots, 0);

    let lower_mask = column_mask(u32::from(geo.lower_columns));
    let upper_mask = column_mask(geo.max_columns());
    let upper_first_slot = geo.upper_start_block as usize * BLOCK_SLOTS;
    for &a in sorted.iter() {
        let start = start_of(a, num_starts) as usize;
        let mut slot = start;
        let mut coeff = coeff_of(a);
        // Result bits beyond the key's own column count are zero (see the module docs).
        let mask = if start >= upper_first_slot {
            upper_mask
        } else {
            lower_mask
        };
        let mut result = fingerprint_of(a) & mask;
        // On-the-fly Gaussian elimination. Invariant: bit 0 of `coeff` is set and stands for
        // `slot`. Every original row lies inside `[0, num_slots)` and XORs of such rows do too, so
        // `slot` never leaves the arrays.
        loop {
            let existing = coeffs[slot];
            if existing == 0 {
                coeffs[slot] = coeff;
                results[slot] = result;
                break;
            }
            coeff ^= existing;
            result ^= results[slot];
            if coeff == 0 {
                if result != 0 {
                    return false;
                }
                // Linearly dependent but consistent (e.g. a duplicate hash): nothing to store.
                break;
            }
            let shift = coeff.trailing_zeros();
            coeff >>= shift;
            slot += shift as usize;
        }
    }
    true
}

/// Counting sort of the remixed values of `hashes` by start bucket, into `sorted`.
#[inline(always)]
fn bucket_by_start(
    hashes: &[u64],
    salt: u64,
    num_starts: u64,
    sorted: &mut Vec<u64>,
    offsets: &mut Vec<usize>,
) {
    let num_buckets = ((num_starts - 1) >> BUCKET_SHIFT) as usize + 1;
    offsets.clear();
    offsets.resize(num_buckets + 1, 0);
    for &h in hashes {
        let a = remix(h, salt);
        offsets[(start_of(a, num_starts) >> BUCKET_SHIFT) as usize + 1] += 1;
    }
    for i in 1..offsets.len() {
        offsets[i] += offsets[i - 1];
    }
    sorted.clear();
    sorted.resize(hashes.len(), 0);
    for &h in hashes {
        let a = remix(h, salt);
        let bucket = (start_of(a, num_starts) >> BUCKET_SHIFT) as usize;
        sorted[offsets[bucket]] = a;
        offsets[bucket] += 1;
    }
}

/// Back-substitution from the banded pivot rows into interleaved solution words.
///
/// Walks slots from last to first keeping, per column `j`, a 128-bit window `win[j]` whose bit `k`
/// is the solution bit of slot `i + k`. For slot `i`: shift the window by one (bit 0 = slot `i`,
/// still 0), solve `bit = result_j ^ parity(coeff & window)`, set bit 0. When `i` is the first slot
/// of a block, the window *is* that block's column word. Empty pivot slots are free variables and
/// get pseudo-random bits (a zero would work too; random bits keep every solution bit unbiased).
#[inline(always)]
fn back_substitute(geo: Geometry, seed: u32, scratch: &Scratch) -> Vec<u64> {
    let l = geo.lower_columns as usize;
    let u = geo.upper_start_block as usize;
    let nb = geo.num_blocks as usize;
    let total = 2 * (l * u.min(nb) + (l + 1) * (nb - u.min(nb)));
    let mut words = vec![0u64; total];
    let mut win = [0u128; MAX_COLUMNS as usize];
    let free_salt = seed_salt(seed) ^ K_C;
    let mut write_end = total;
    for block in (0..nb).rev() {
        // Below the upper region the extra column is never read again: skip it.
        let cols = geo.columns(block) as usize;
        let base = block * BLOCK_SLOTS;
        let coeffs = &scratch.coeffs[base..base + BLOCK_SLOTS];
        let results = &scratch.results[base..base + BLOCK_SLOTS];
        for (off, (&coeff, &res)) in coeffs.iter().zip(results.iter()).enumerate().rev() {
            let (coeff, res) = if coeff == 0 {
                (0u128, mix_b((base + off) as u64 ^ free_salt) as u32)
            } else {
                (coeff, res)
            };
            let c_lo = coeff as u64;
            let c_hi = (coeff >> 64) as u64;
            for (j, w) in win[..cols].iter_mut().enumerate() {
                let shifted = *w << 1;
                let x = (c_lo & shifted as u64) ^ (c_hi & (shifted >> 64) as u64);
                let bit = parity(x) ^ u64::from((res >> j) & 1);
                *w = shifted | u128::from(bit);
            }
        }
        let out = &mut words[write_end - 2 * cols..write_end];
        for (pair, w) in out.chunks_exact_mut(2).zip(win.iter()) {
            pair[0] = *w as u64;
            pair[1] = (*w >> 64) as u64;
        }
        write_end -= 2 * cols;
    }
    debug_assert_eq!(write_end, 0);
    words
}

/// Where one query reads: the remixed hash `a`, the word offset `base` of its block, the
/// block's column count, and the start's offset inside the block.
#[derive(Debug, Clone, Copy)]
struct Probe {
    a: u64,
    base: usize,
    cols: usize,
    off: u32,
}

impl RibbonFilter {
    /// Builds a filter over `hashes` (64-bit key hashes; duplicates are fine) at `bits_per_key`.
    ///
    /// `bits_per_key` may be fractional and must be finite and in `(0, 64]` (beyond 32 columns the
    /// extra bits are not used). The build always finishes: failed banding attempts retry with the
    /// next seed ordinal and grow the filter by 1 % every 16 failures.
    pub fn build(hashes: &[u64], bits_per_key: f64) -> Result<RibbonFilter, FilterError> {
        if !(bits_per_key > 0.0 && bits_per_key <= MAX_BITS_PER_KEY) {
            return Err(FilterError::Build(format!(
                "ribbon bits/key must be in (0, {MAX_BITS_PER_KEY}], got {bits_per_key}"
            )));
        }
        Ok(Self::build_with_overhead(
            hashes,
            bits_per_key,
            ribbon_overhead(hashes.len()),
        ))
    }

    /// The build with an explicit slot factor (tests force banding failures through it).
    fn build_with_overhead(hashes: &[u64], bits_per_key: f64, overhead: f64) -> RibbonFilter {
        if hashes.is_empty() {
            return Self::empty();
        }
        let target = target_columns(bits_per_key, overhead);
        let mut num_blocks = planned_blocks(hashes.len(), overhead);
        let mut scratch = Scratch::default();
        let mut seed = 0u32;
        let mut tries_at_size = 0u32;
        loop {
            let (lower_columns, upper_start_block) = layout(num_blocks, target);
            let geo = Geometry {
                num_blocks,
                lower_columns,
                upper_start_block,
            };
            if seed >= MAX_ATTEMPTS {
                // Never reached in practice (see MAX_ATTEMPTS): a zero-column filter is always a
                // valid (if useless) answer.
                return Self::assemble(
                    RibbonParams {
                        num_blocks,
                        lower_columns: 0,
                        upper_start_block: num_blocks,
                        seed,
                    },
                    Vec::new(),
                );
            }
            if band_kernel(hashes, geo, seed, &mut scratch) {
                let words = back_substitute_kernel(geo, seed, &scratch);
                return Self::assemble(
                    RibbonParams {
                        num_blocks,
                        lower_columns,
                        upper_start_block,
                        seed,
                    },
                    words,
                );
            }
            seed += 1;
            tries_at_size += 1;
            if tries_at_size == SEEDS_PER_SIZE {
                tries_at_size = 0;
                let grow = (u64::from(num_blocks) * GROWTH_PERCENT / 100).max(1);
                num_blocks = u32::try_from(u64::from(num_blocks) + grow).unwrap_or(u32::MAX);
            }
        }
    }

    /// The filter over no keys: answers `false` for everything.
    fn empty() -> RibbonFilter {
        Self::assemble(
            RibbonParams {
                num_blocks: 0,
                lower_columns: 0,
                upper_start_block: 0,
                seed: 0,
            },
            Vec::new(),
        )
    }

    /// Wraps already validated parts.
    fn assemble(params: RibbonParams, words: Vec<u64>) -> RibbonFilter {
        let num_starts = if params.num_blocks == 0 {
            0
        } else {
            u64::from(params.num_blocks - 1) * BLOCK_SLOTS as u64
        };
        RibbonFilter {
            params,
            words,
            salt: seed_salt(params.seed),
            num_starts,
        }
    }

    /// Where a probe for `hash` reads (see [`RibbonFilter::may_contain_hash`]); the filter
    /// must not be empty.
    #[inline]
    fn probe(&self, hash: u64) -> Probe {
        let a = remix(hash, self.salt);
        let start = start_of(a, self.num_starts) as usize;
        let block = start / BLOCK_SLOTS;
        let off = (start % BLOCK_SLOTS) as u32;
        let l = self.params.lower_columns as usize;
        let u = self.params.upper_start_block as usize;
        let cols = l + usize::from(block >= u);
        // Word offset of `block`: lower blocks hold `l` columns, upper ones `l + 1`, so it is
        // `2 · (block · l + max(0, block - u))` (no overflow: at most `words.len()`, which
        // `from_parts` checked against the parameters).
        let base = 2 * (block * l + block.saturating_sub(u));
        Probe { a, base, cols, off }
    }

    /// Starts loading the words [`RibbonFilter::may_contain_hash`] will read first for `hash`
    /// (the front of its block and of the next one), so that a caller can overlap the wait with
    /// other work. A hint only.
    #[inline]
    pub fn prefetch_hash(&self, hash: u64) {
        if self.num_starts == 0 {
            return;
        }
        let p = self.probe(hash);
        if let Some(w) = self.words.get(p.base) {
            crate::prefetch::prefetch(w);
        }
        if let Some(w) = self.words.get(p.base + 2 * p.cols) {
            crate::prefetch::prefetch(w);
        }
    }

    /// [`RibbonFilter::may_contain_hash`] for every hash of `hashes`, answers in order into `out`
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

    /// True if `hash` may be in the set; false means it definitely is not.
    ///
    /// Reads the column words of the key's start block and of the next block (one contiguous
    /// region of `32 · columns` bytes) and checks all columns without a data-dependent branch.
    ///
    /// Runs the kernel for the best instruction set this CPU has ([`crate::kernel`]).
    #[inline]
    pub fn may_contain_hash(&self, hash: u64) -> bool {
        #[cfg(target_arch = "x86_64")]
        if crate::kernel::x86_v3() {
            // SAFETY: `x86_v3()` checked at run time that this CPU has every feature
            // `may_contain_v3` is compiled for.
            return unsafe { self.may_contain_v3(hash) };
        }
        self.may_contain_body(hash)
    }

    /// [`RibbonFilter::may_contain_hash`] compiled for x86-64 v3 (`popcnt` parities).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "bmi1,bmi2,popcnt,lzcnt")]
    fn may_contain_v3(&self, hash: u64) -> bool {
        self.may_contain_body(hash)
    }

    /// The query, for whichever instruction set its caller was compiled for.
    #[inline(always)]
    fn may_contain_body(&self, hash: u64) -> bool {
        if self.num_starts == 0 {
            return false;
        }
        let Probe { a, base, cols, off } = self.probe(hash);
        // Block `block + 1` starts right after this block's `cols` columns and has at least `cols`
        // columns; `block + 1 < num_blocks` because starts stop one block early.
        let Some(region) = self.words.get(base..base + 4 * cols) else {
            // Unreachable for validated parts.
            return true;
        };
        let (cur, next) = region.split_at(2 * cols);
        let coeff = coeff_of(a);
        let cur_part = coeff << off;
        // `coeff >> (128 - off)` without the overflowing shift by 128 when `off == 0`.
        let next_part = (coeff >> 1) >> (127 - off);
        let (c_lo, c_hi) = (cur_part as u64, (cur_part >> 64) as u64);
        let (n_lo, n_hi) = (next_part as u64, (next_part >> 64) as u64);
        let fp = u64::from(fingerprint_of(a)) & ((1u64 << cols) - 1);
        // Columns in groups of FIRST_GROUP: branch-free inside a group (parities collected into
        // one word, compared once). A negative query fails the first group with probability
        // 1 - 2^-FIRST_GROUP, so it reads only the front of both blocks and the exit branch
        // predicts well; the rest of the columns are checked only for the few that pass.
        let group = |from: usize, to: usize| {
            let mut parities = 0u64;
            for j in from..to {
                let (c, n) = (&cur[2 * j..2 * j + 2], &next[2 * j..2 * j + 2]);
                let x = (c_lo & c[0]) ^ (c_hi & c[1]) ^ (n_lo & n[0]) ^ (n_hi & n[1]);
                parities |= parity(x) << j;
            }
            parities
        };
        let first = cols.min(FIRST_GROUP);
        let first_mask = (1u64 << first) - 1;
        group(0, first) == fp & first_mask && group(first, cols) == fp & !first_mask
    }

    /// The layout parameters (everything a reader needs besides [`RibbonFilter::words`]).
    pub fn params(&self) -> RibbonParams {
        self.params
    }

    /// The payload: interleaved solution words; the caller serializes them little-endian.
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// Number of solution words `params` describe: `2 · Σ_blocks columns(block)`, computed with
    /// checked arithmetic. `None` on overflow or if `upper_start_block > num_blocks`.
    pub fn expected_words(params: &RibbonParams) -> Option<usize> {
        if params.upper_start_block > params.num_blocks {
            return None;
        }
        let l = usize::from(params.lower_columns);
        let lower_blocks = usize::try_from(params.upper_start_block).ok()?;
        let upper_blocks = usize::try_from(params.num_blocks - params.upper_start_block).ok()?;
        let lower = lower_blocks.checked_mul(l)?;
        let upper = upper_blocks.checked_mul(l.checked_add(1)?)?;
        lower.checked_add(upper)?.checked_mul(2)
    }

    /// Rebuilds a filter from decoded parts, validating everything (column range,
    /// `upper_start_block <= num_blocks`, at least 2 blocks unless empty,
    /// `words.len() == expected_words`). Never panics.
    pub fn from_parts(params: RibbonParams, words: Vec<u64>) -> Result<RibbonFilter, FilterError> {
        if params.upper_start_block > params.num_blocks {
            return Err(FilterError::InvalidParameter(
                "ribbon upper_start_block exceeds num_blocks",
            ));
        }
        if params.num_blocks == 0 {
            if params.lower_columns != 0 || params.upper_start_block != 0 || !words.is_empty() {
                return Err(FilterError::InvalidParameter(
                    "empty ribbon filter with columns or payload",
                ));
            }
            return Ok(Self::empty_with_seed(params.seed));
        }
        if params.num_blocks < 2 {
            return Err(FilterError::InvalidParameter(
                "ribbon filter needs at least 2 blocks",
            ));
        }
        let has_upper = params.upper_start_block < params.num_blocks;
        let max_columns = u32::from(params.lower_columns) + u32::from(has_upper);
        if max_columns > MAX_COLUMNS {
            return Err(FilterError::InvalidParameter(
                "ribbon column count exceeds 32",
            ));
        }
        match Self::expected_words(&params) {
            Some(n) if n == words.len() => Ok(Self::assemble(params, words)),
            Some(_) => Err(FilterError::InvalidParameter(
                "ribbon payload length does not match its parameters",
            )),
            None => Err(FilterError::InvalidParameter(
                "ribbon parameters overflow the address space",
            )),
        }
    }

    /// The empty filter, remembering a decoded seed so round trips are exact.
    fn empty_with_seed(seed: u32) -> RibbonFilter {
        let mut f = Self::empty();
        f.params.seed = seed;
        f.salt = seed_salt(seed);
        f
    }

    /// FPR this filter should give for keys not in the set (from its column layout): the mean of
    /// `2^-columns(b)` over the blocks keys can start in. 0.0 for the empty filter.
    pub fn expected_fpr(&self) -> f64 {
        layout_fpr(&self.params)
    }

    /// Size of the solution in bytes.
    pub fn size_bytes(&self) -> usize {
        self.words.len() * 8
    }

    /// The same filter over `num_keys` keys with about `bits_per_key` bits per key, made by
    /// dropping solution columns instead of building anew; a clone if it holds no more than
    /// that already.
    ///
    /// Why this is a filter of the same keys: each column is a separate solution of the same
    /// banded system (column `j` answers fingerprint bit `j`), so any prefix of a block's
    /// columns still answers every key for the bits it keeps. The thinned layout keeps, in
    /// every block, no more columns than the block had and column counts that never decrease
    /// with the block index, so a query still finds its columns in its start block and the
    /// next. Its FPR is that of its layout ([`RibbonFilter::expected_fpr`]), as for a filter
    /// built with that layout. A filter whose keys moved to a level planned for fewer bits
    /// (Monkey) is brought to the plan without reading a key.
    pub fn thinned(&self, num_keys: u64, bits_per_key: f64) -> RibbonFilter {
        let p = self.params;
        if p.num_blocks < 2 || bits_per_key.is_nan() || bits_per_key < 0.0 || num_keys == 0 {
            return self.clone();
        }
        let slots = f64::from(p.num_blocks) * BLOCK_SLOTS as f64;
        let target = target_columns(bits_per_key, slots / num_keys as f64);
        let (lower, upper_start) = layout(p.num_blocks, target);
        // The thinner of the two layouts in every block (both are a step up at their upper
        // start, so this is one too).
        let (lower, upper_start) = match lower.cmp(&p.lower_columns) {
            std::cmp::Ordering::Less => (lower, upper_start),
            std::cmp::Ordering::Equal => (lower, upper_start.max(p.upper_start_block)),
            std::cmp::Ordering::Greater => return self.clone(),
        };
        if (lower, upper_start) == (p.lower_columns, p.upper_start_block) {
            return self.clone();
        }
        let old = Geometry {
            num_blocks: p.num_blocks,
            lower_columns: p.lower_columns,
            upper_start_block: p.upper_start_block,
        };
        let new = Geometry {
            num_blocks: p.num_blocks,
            lower_columns: lower,
            upper_start_block: upper_start,
        };
        let mut words = Vec::new();
        let mut at = 0usize;
        for block in 0..p.num_blocks as usize {
            let keep = 2 * new.columns(block) as usize;
            words.extend_from_slice(&self.words[at..at + keep]);
            at += 2 * old.columns(block) as usize;
        }
        Self::assemble(
            RibbonParams {
                lower_columns: lower,
                upper_start_block: upper_start,
                ..p
            },
            words,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    fn random_hashes(n: usize, seed: u64) -> Vec<u64> {
        let mut rng = StdRng::seed_from_u64(seed);
        (0..n).map(|_| rng.r#gen()).collect()
    }

    fn assert_no_false_negatives(f: &RibbonFilter, hashes: &[u64]) {
        for &h in hashes {
            assert!(
                f.may_contain_hash(h),
                "false negative for {h:#x} in {:?}",
                f.params()
            );
        }
    }

    #[test]
    fn both_kernels_build_the_same_filter_and_answer_alike() {
        let keys = random_hashes(30_000, 5);
        let f = RibbonFilter::build(&keys, 9.5).unwrap();
        // The portable banding and back-substitution, by hand, give the same words.
        let p = f.params();
        let geo = Geometry {
            num_blocks: p.num_blocks,
            lower_columns: p.lower_columns,
            upper_start_block: p.upper_start_block,
        };
        let mut scratch = Scratch::default();
        assert!(band(&keys, geo, p.seed, &mut scratch));
        assert_eq!(back_substitute(geo, p.seed, &scratch), f.words());
        #[cfg(target_arch = "x86_64")]
        if crate::kernel::x86_v3() {
            let mut scratch = Scratch::default();
            // SAFETY: `x86_v3()` says the CPU has the features `band_v3` and
            // `back_substitute_v3` need.
            unsafe {
                assert!(band_v3(&keys, geo, p.seed, &mut scratch));
                assert_eq!(back_substitute_v3(geo, p.seed, &scratch), f.words());
            }
        }
        for &h in keys.iter().chain(&random_hashes(30_000, 6)) {
            let answer = f.may_contain_body(h);
            assert_eq!(f.may_contain_hash(h), answer);
            #[cfg(target_arch = "x86_64")]
            if crate::kernel::x86_v3() {
                // SAFETY: `x86_v3()` says the CPU has the features `may_contain_v3` needs.
                assert_eq!(unsafe { f.may_contain_v3(h) }, answer);
            }
        }
    }

    #[test]
    fn no_false_negatives_grid() {
        for &n in &[0usize, 1, 2, 3, 10, 127, 128, 129, 1000, 50_000] {
            let hashes = random_hashes(n, n as u64 + 7);
            for &bpk in &[1.0, 3.3, 6.7, 7.0, 9.5, 12.0, 16.0, 20.0] {
                let f = RibbonFilter::build(&hashes, bpk).unwrap();
                assert_no_false_negatives(&f, &hashes);
                let p = f.params();
                assert_eq!(RibbonFilter::expected_words(&p), Some(f.words().len()));
                if n == 0 {
                    assert_eq!(p.num_blocks, 0);
                } else {
                    assert!(p.num_blocks >= 2);
                }
            }
        }
    }

    #[test]
    fn empty_filter_says_no() {
        let f = RibbonFilter::build(&[], 7.0).unwrap();
        assert_eq!(f.expected_fpr(), 0.0);
        assert_eq!(f.size_bytes(), 0);
        for h in random_hashes(1000, 1) {
            assert!(!f.may_contain_hash(h));
        }
        assert_eq!(ribbon_expected_fpr(0, 7.0), 0.0);
    }

    #[test]
    fn rejects_bad_bits_per_key() {
        for bpk in [0.0, -1.0, 64.01, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert!(matches!(
                RibbonFilter::build(&[1, 2, 3], bpk),
                Err(FilterError::Build(_))
            ));
        }
        assert!(RibbonFilter::build(&[1, 2, 3], 64.0).is_ok());
        assert!(RibbonFilter::build(&[1, 2, 3], 0.01).is_ok());
    }

    #[test]
    fn duplicates_are_fine() {
        let mut hashes = random_hashes(5000, 3);
        let copy = hashes.clone();
        hashes.extend_from_slice(&copy);
        hashes.extend_from_slice(&copy[..1000]);
        hashes.extend_from_slice(&[42u64; 500]);
        let f = RibbonFilter::build(&hashes, 8.0).unwrap();
        assert_no_false_negatives(&f, &hashes);
        // All-equal input.
        let same = vec![7u64; 10_000];
        let f = RibbonFilter::build(&same, 10.0).unwrap();
        assert!(f.may_contain_hash(7));
        assert_eq!(f.params().seed, 0);
    }

    /// Binomial check: measured false positives within 5 sigma of `expected_fpr()`.
    fn check_fpr(n: usize, bpk: f64, queries: usize, seed: u64) {
        let hashes = random_hashes(n, seed);
        let f = RibbonFilter::build(&hashes, bpk).unwrap();
        let p = f.expected_fpr();
        assert!((p - ribbon_expected_fpr(n, bpk)).abs() < 1e-12 || f.params().seed >= 16);
        let mut rng = StdRng::seed_from_u64(seed ^ 0xdead_beef);
        let fp = (0..queries)
            .filter(|_| f.may_contain_hash(rng.r#gen()))
            .count() as f64;
        let mean = p * queries as f64;
        let sigma = (queries as f64 * p * (1.0 - p)).sqrt();
        assert!(
            (fp - mean).abs() <= 5.0 * sigma + 1.0,
            "n={n} bpk={bpk}: {fp} false positives, expected {mean} ± {sigma} ({:?})",
            f.params()
        );
    }

    /// A thinned filter answers every key it was built over, holds about the bits asked for,
    /// never more columns in a block than before, and has the FPR its layout promises.
    #[test]
    fn thinned_keeps_every_key_at_the_fpr_of_its_layout() {
        let n = 50_000;
        let hashes = random_hashes(n, 21);
        let f = RibbonFilter::build(&hashes, 9.6).unwrap();
        for bits in [9.6, 8.3, 7.0, 5.5, 2.2, 0.0] {
            let t = f.thinned(n as u64, bits);
            assert_no_false_negatives(&t, &hashes);
            let (old, new) = (f.params(), t.params());
            assert_eq!((new.num_blocks, new.seed), (old.num_blocks, old.seed));
            let cols = |p: RibbonParams, b: u32| {
                u32::from(p.lower_columns) + u32::from(b >= p.upper_start_block)
            };
            assert!((0..old.num_blocks).all(|b| cols(new, b) <= cols(old, b)));
            assert_eq!(Some(t.words().len()), RibbonFilter::expected_words(&new));
            let got = t.size_bytes() as f64 * 8.0 / n as f64;
            assert!(
                (got - bits.min(9.6)).abs() < 0.2,
                "{bits} bits/key asked, {got} kept"
            );
            let p = t.expected_fpr();
            let mut rng = StdRng::seed_from_u64(bits.to_bits());
            let queries = 200_000;
            let fp = (0..queries)
                .filter(|_| t.may_contain_hash(rng.r#gen()))
                .count() as f64;
            let (mean, sigma) = (p * queries as f64, (queries as f64 * p * (1.0 - p)).sqrt());
            assert!(
                (fp - mean).abs() <= 5.0 * sigma + 1.0,
                "{bits}: {fp} against {mean}"
            );
        }
        // Asking for as many bits or more changes nothing.
        assert_eq!(f.thinned(n as u64, 9.6), f);
        assert_eq!(f.thinned(n as u64, 20.0), f);
        assert_eq!(f.thinned(0, 1.0), f);
    }

    #[test]
    fn fpr_matches_expectation() {
        check_fpr(100_000, 6.7, 1_000_000, 11);
        check_fpr(100_000, 3.3, 300_000, 12);
        check_fpr(20_000, 10.0, 300_000, 13);
        check_fpr(1000, 1.0, 100_000, 14);
    }

    #[test]
    fn expected_fpr_curve_is_monotonic() {
        let mut last = 1.0;
        for i in 1..=128 {
            let bpk = f64::from(i) * 0.25;
            let p = ribbon_expected_fpr(1_000_000, bpk);
            assert!(p <= last + 1e-15, "bpk {bpk}: {p} > {last}");
            last = p;
        }
        assert!(ribbon_expected_fpr(1_000_000, 6.7) < 0.013);
        assert!(ribbon_expected_fpr(1_000_000, 6.7) > 0.009);
    }

    #[test]
    fn overhead_is_sane() {
        let mut last = 1.0;
        for k in 0..40 {
            let o = ribbon_overhead(1usize << k);
            assert!(o >= 1.0 && o >= last - 1e-12 && o < 1.2, "{k}: {o}");
            last = o;
        }
        assert_eq!(ribbon_overhead(0), 1.0);
        assert!(ribbon_overhead(usize::MAX) >= 1.0);
    }

    #[test]
    fn layout_is_monotonic_and_sized() {
        let hashes = random_hashes(30_000, 5);
        let f = RibbonFilter::build(&hashes, 6.5).unwrap();
        let p = f.params();
        assert!(p.upper_start_block < p.num_blocks);
        let bits = f.size_bytes() as f64 * 8.0 / hashes.len() as f64;
        assert!((bits - 6.5).abs() < 0.15, "{bits}");
        // Integer target: no upper region.
        let o = ribbon_overhead(30_000);
        let f = RibbonFilter::build(&hashes, 7.0 * o).unwrap();
        assert_eq!(f.params().upper_start_block, f.params().num_blocks);
        assert_eq!(f.params().lower_columns, 7);
    }

    #[test]
    fn high_bits_per_key_caps_columns() {
        let hashes = random_hashes(2000, 8);
        let f = RibbonFilter::build(&hashes, 64.0).unwrap();
        assert_eq!(f.params().lower_columns, 32);
        assert_eq!(f.params().upper_start_block, f.params().num_blocks);
        assert_no_false_negatives(&f, &hashes);
        let f = RibbonFilter::build(&hashes, 32.5).unwrap();
        assert_no_false_negatives(&f, &hashes);
        assert!(
            f.params().lower_columns <= 31 || f.params().upper_start_block == f.params().num_blocks
        );
    }

    #[test]
    fn low_bits_per_key_may_have_zero_columns() {
        let hashes = random_hashes(10_000, 9);
        let f = RibbonFilter::build(&hashes, 0.5).unwrap();
        assert_eq!(f.params().lower_columns, 0);
        assert!(f.params().upper_start_block < f.params().num_blocks);
        assert_no_false_negatives(&f, &hashes);
        let p = f.expected_fpr();
        assert!(p > 0.7 && p < 0.8, "{p}");
    }

    #[test]
    fn tiny_sets_keep_requested_fpr() {
        for n in [1usize, 2, 10] {
            let hashes = random_hashes(n, 100 + n as u64);
            let f = RibbonFilter::build(&hashes, 7.0).unwrap();
            assert_no_false_negatives(&f, &hashes);
            assert_eq!(f.params().num_blocks, 2);
            assert!(f.expected_fpr() <= 0.01, "{}", f.expected_fpr());
        }
    }

    #[test]
    fn forced_banding_failure_retries() {
        // 0.97 slots per key: the system has more equations than unknowns, every seed fails until
        // the filter has grown past the number of keys (and a little more).
        let hashes = random_hashes(20_000, 21);
        let f = RibbonFilter::build_with_overhead(&hashes, 7.0, 0.97);
        let p = f.params();
        assert!(p.seed >= SEEDS_PER_SIZE, "{p:?}");
        assert!(p.seed < MAX_ATTEMPTS);
        assert!(p.num_blocks as usize * BLOCK_SLOTS > hashes.len());
        assert_no_false_negatives(&f, &hashes);
        // Round trip of a retried filter keeps answering the same.
        let g = RibbonFilter::from_parts(p, f.words().to_vec()).unwrap();
        for h in random_hashes(10_000, 22) {
            assert_eq!(f.may_contain_hash(h), g.may_contain_hash(h));
        }
        // A milder squeeze fails only sometimes: some seed > 0 succeeds without growth or after.
        let f = RibbonFilter::build_with_overhead(&hashes, 5.0, 1.0);
        assert_no_false_negatives(&f, &hashes);
    }

    #[test]
    fn from_parts_round_trip() {
        for (n, bpk) in [
            (0usize, 7.0),
            (1, 7.0),
            (5000, 6.7),
            (5000, 12.3),
            (3000, 0.7),
        ] {
            let hashes = random_hashes(n, 31 + n as u64);
            let f = RibbonFilter::build(&hashes, bpk).unwrap();
            let g = RibbonFilter::from_parts(f.params(), f.words().to_vec()).unwrap();
            assert_eq!(f, g);
            for h in random_hashes(20_000, 32)
                .into_iter()
                .chain(hashes.iter().copied())
            {
                assert_eq!(f.may_contain_hash(h), g.may_contain_hash(h));
            }
            assert_eq!(f.expected_fpr(), g.expected_fpr());
        }
    }

    #[test]
    fn from_parts_rejects_bad_params() {
        let hashes = random_hashes(5000, 41);
        let f = RibbonFilter::build(&hashes, 6.7).unwrap();
        let p = f.params();
        let w = f.words().to_vec();
        let bad = |params: RibbonParams, words: Vec<u64>| {
            assert!(matches!(
                RibbonFilter::from_parts(params, words),
                Err(FilterError::InvalidParameter(_))
            ));
        };
        bad(
            RibbonParams {
                upper_start_block: p.num_blocks + 1,
                ..p
            },
            w.clone(),
        );
        bad(
            RibbonParams {
                lower_columns: p.lower_columns + 1,
                ..p
            },
            w.clone(),
        );
        bad(
            RibbonParams {
                num_blocks: p.num_blocks + 1,
                ..p
            },
            w.clone(),
        );
        bad(p, w[..w.len() - 1].to_vec());
        bad(
            RibbonParams {
                lower_columns: 32,
                ..p
            },
            w.clone(),
        );
        bad(
            RibbonParams {
                lower_columns: 255,
                upper_start_block: 0,
                ..p
            },
            w.clone(),
        );
        bad(
            RibbonParams {
                num_blocks: 1,
                lower_columns: 0,
                upper_start_block: 1,
                seed: 0,
            },
            vec![],
        );
        bad(
            RibbonParams {
                num_blocks: 0,
                lower_columns: 1,
                upper_start_block: 0,
                seed: 0,
            },
            vec![],
        );
        bad(
            RibbonParams {
                num_blocks: 0,
                lower_columns: 0,
                upper_start_block: 0,
                seed: 0,
            },
            vec![1],
        );
        bad(
            RibbonParams {
                num_blocks: u32::MAX,
                lower_columns: 31,
                upper_start_block: 0,
                seed: 0,
            },
            vec![],
        );
        assert!(RibbonFilter::from_parts(p, w).is_ok());
        // Zero columns everywhere is valid and says "maybe" to everything.
        let g = RibbonFilter::from_parts(
            RibbonParams {
                num_blocks: 4,
                lower_columns: 0,
                upper_start_block: 4,
                seed: 9,
            },
            vec![],
        )
        .unwrap();
        assert!(g.may_contain_hash(12345));
        assert_eq!(g.expected_fpr(), 1.0);
    }

    #[test]
    fn expected_words_overflow() {
        let p = RibbonParams {
            num_blocks: u32::MAX,
            lower_columns: 255,
            upper_start_block: 0,
            seed: 0,
        };
        // 2 · 256 · (2^32 - 1) fits in 64-bit usize; on 32-bit it must be None rather than wrap.
        let w = RibbonFilter::expected_words(&p);
        assert!(w.is_none() || w == Some(2 * 256 * (u32::MAX as usize)));
        assert_eq!(
            RibbonFilter::expected_words(&RibbonParams {
                upper_start_block: 5,
                num_blocks: 4,
                ..p
            }),
            None
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn prop_no_false_negatives(
            hashes in prop::collection::vec(any::<u64>(), 0..3000),
            bpk in 0.05f64..24.0,
        ) {
            let f = RibbonFilter::build(&hashes, bpk).unwrap();
            for &h in &hashes {
                prop_assert!(f.may_contain_hash(h));
            }
            prop_assert_eq!(RibbonFilter::expected_words(&f.params()), Some(f.words().len()));
        }

        #[test]
        fn prop_thinned_has_no_false_negatives(
            hashes in prop::collection::vec(any::<u64>(), 1..3000),
            bpk in 0.05f64..24.0,
            thin in 0.0f64..24.0,
        ) {
            let f = RibbonFilter::build(&hashes, bpk).unwrap();
            let t = f.thinned(hashes.len() as u64, thin);
            for &h in &hashes {
                prop_assert!(t.may_contain_hash(h));
            }
            prop_assert!(t.size_bytes() <= f.size_bytes());
            let params = t.params();
            let rebuilt = RibbonFilter::from_parts(params, t.words().to_vec()).unwrap();
            prop_assert_eq!(rebuilt, t);
        }

        #[test]
        fn prop_from_parts_never_panics(
            num_blocks in prop_oneof![0u32..70, any::<u32>()],
            lower_columns in any::<u8>(),
            upper in any::<u32>(),
            seed in any::<u32>(),
            len_delta in -3i64..3,
            fill in any::<u64>(),
            queries in prop::collection::vec(any::<u64>(), 16),
        ) {
            let upper_start_block = if num_blocks > 0 && upper % 2 == 0 { upper % (num_blocks + 1) } else { upper };
            let params = RibbonParams { num_blocks, lower_columns, upper_start_block, seed };
            let len = RibbonFilter::expected_words(&params)
                .filter(|&n| n < 200_000)
                .map(|n| (n as i64 + len_delta).max(0) as usize)
                .unwrap_or((fill % 64) as usize);
            let words: Vec<u64> = (0..len as u64).map(|i| mix_b(i ^ fill)).collect();
            if let Ok(f) = RibbonFilter::from_parts(params, words) {
                prop_assert_eq!(f.params(), params);
                prop_assert!(params.num_blocks != 1);
                prop_assert!(params.upper_start_block <= params.num_blocks);
                // Any valid layout with any payload answers without panicking.
                for h in queries {
                    let _ = f.may_contain_hash(h);
                }
                let p = f.expected_fpr();
                prop_assert!((0.0..=1.0).contains(&p));
            }
        }
    }

    /// Calibration of the overhead table (run in release):
    /// `cargo test --release calibrate -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn calibrate() {
        let sizes: Vec<usize> = std::env::var("RIBBON_CAL_N")
            .ok()
            .map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect())
            .unwrap_or_else(|| vec![1000, 10_000, 100_000, 1_000_000]);
        let trials: u32 = std::env::var("RIBBON_CAL_T")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(20);
        for n in sizes {
            let hashes = random_hashes(n, n as u64);
            let mut scratch = Scratch::default();
            for step in 0..12 {
                let overhead = 1.0 + 0.005 * f64::from(step);
                let num_blocks = planned_blocks(n, overhead);
                let geo = Geometry {
                    num_blocks,
                    lower_columns: 7,
                    upper_start_block: num_blocks,
                };
                let ok = (0..trials)
                    .filter(|&s| band(&hashes, geo, s, &mut scratch))
                    .count();
                println!("n={n} overhead={overhead:.3} success {ok}/{trials}");
                if ok == trials as usize {
                    break;
                }
            }
        }
    }
}
