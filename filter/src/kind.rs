//! Filter kinds and their space-versus-FPR curves.

use crate::bloom::blocked_bloom_expected_fpr;
use crate::ribbon::ribbon_expected_fpr;

/// Which filter structure a block holds. The discriminant is the byte stored in the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
#[non_exhaustive]
pub enum FilterKind {
    /// Cache-line blocked bloom: fast to build, one cache miss per query (L0, upper levels).
    BlockedBloom = 1,
    /// Standard ribbon (w = 128): ~30 % smaller at equal FPR, slower to build (deep levels).
    Ribbon = 2,
    /// Binary fuse: 8-bit fingerprints (~9 bits/key, FPR 2^-8) or 16-bit ones (~18 bits/key,
    /// FPR 2^-16), chosen from the bits/key asked for ([`crate::fuse::fuse_fingerprint_bits_for`]);
    /// three cells per query, fast to build.
    BinaryFuse = 3,
}

impl FilterKind {
    /// Every kind this build knows.
    pub const ALL: [FilterKind; 3] = [
        FilterKind::BlockedBloom,
        FilterKind::Ribbon,
        FilterKind::BinaryFuse,
    ];

    /// The kind of a [`FilterKind::name`], `None` for names this build does not know.
    pub fn from_name(name: &str) -> Option<FilterKind> {
        FilterKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Maps a stored byte back to a kind, `None` for kinds this build does not know.
    pub fn from_u8(byte: u8) -> Option<FilterKind> {
        match byte {
            1 => Some(FilterKind::BlockedBloom),
            2 => Some(FilterKind::Ribbon),
            3 => Some(FilterKind::BinaryFuse),
            _ => None,
        }
    }

    /// A short stable name (`"blocked_bloom"`, `"ribbon"`, `"binary_fuse"`), used in properties
    /// and reports.
    pub fn name(self) -> &'static str {
        match self {
            FilterKind::BlockedBloom => "blocked_bloom",
            FilterKind::Ribbon => "ribbon",
            FilterKind::BinaryFuse => "binary_fuse",
        }
    }

    /// The FPR a filter of this kind over `num_keys` keys at `bits_per_key` is expected to give.
    pub fn expected_fpr(self, num_keys: usize, bits_per_key: f64) -> f64 {
        FprCurve::from(self).fpr(num_keys, bits_per_key)
    }
}

impl std::fmt::Display for FilterKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A space-versus-FPR curve: what FPR a filter reaches for a given number of bits per key.
///
/// The Monkey allocator plans with the curve of the kind that will actually be built, so the
/// memory it hands out buys the FPR it promises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FprCurve {
    /// Textbook bloom filter with optimal k: `p = exp(-b · ln²2)`. For reference and for the
    /// closed-form Monkey solution; siftdb never builds it.
    StandardBloom,
    /// siftdb's cache-line blocked bloom.
    BlockedBloom,
    /// siftdb's ribbon filter.
    Ribbon,
    /// siftdb's binary fuse filter: a step — no filter below the 8-bit filter's cost, 2^-8
    /// from it, 2^-16 from the 16-bit filter's cost ([`crate::fuse::fuse_fpr_at`]). A level of
    /// this kind always gets at least the 8-bit filter (see [`FprCurve::min_bits_per_key`]).
    BinaryFuse,
}

impl From<FilterKind> for FprCurve {
    fn from(kind: FilterKind) -> Self {
        match kind {
            FilterKind::BlockedBloom => FprCurve::BlockedBloom,
            FilterKind::Ribbon => FprCurve::Ribbon,
            FilterKind::BinaryFuse => FprCurve::BinaryFuse,
        }
    }
}

impl FprCurve {
    /// The fewest bits/key a level of this kind is planned with over `num_keys` keys: 0 for the
    /// kinds that build a filter at any size, the 8-bit filter's cost for binary fuse. A fuse
    /// level left below it would get no filter at all (its step curve has nothing between "no
    /// filter" and 2^-8), a performance cliff no user asks for by choosing the kind; so the
    /// planners treat that cost as the level's floor and take it out of the budget the other
    /// levels share (the tree exceeds its budget only if the floors alone do).
    pub fn min_bits_per_key(self, num_keys: usize) -> f64 {
        match self {
            FprCurve::BinaryFuse if num_keys > 0 => crate::fuse::fuse_bits_per_key(num_keys, 8),
            _ => 0.0,
        }
    }

    /// The fewest bits/key (to 0.01) at which a filter over `num_keys` keys reaches `fpr`, at
    /// most `max_bits`; 0 for an FPR of 1 or more (no filter needed). The curves fall with
    /// more bits, so a bisection finds it.
    pub fn bits_for_fpr(self, num_keys: usize, fpr: f64, max_bits: f64) -> f64 {
        if fpr >= 1.0 || max_bits <= 0.0 {
            return 0.0;
        }
        if self.fpr(num_keys, max_bits) > fpr {
            return max_bits;
        }
        let (mut lo, mut hi) = (0.0, max_bits);
        while hi - lo > 0.01 {
            let mid = (lo + hi) / 2.0;
            if self.fpr(num_keys, mid) <= fpr {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        hi
    }

    /// FPR at `bits_per_key` for a filter over `num_keys` keys (0 bits → 1.0: no filter).
    pub fn fpr(self, num_keys: usize, bits_per_key: f64) -> f64 {
        if bits_per_key <= 0.0 {
            return 1.0;
        }
        match self {
            FprCurve::StandardBloom => {
                let ln2 = std::f64::consts::LN_2;
                (-bits_per_key * ln2 * ln2).exp()
            }
            FprCurve::BlockedBloom => blocked_bloom_expected_fpr(num_keys, bits_per_key),
            FprCurve::Ribbon => ribbon_expected_fpr(num_keys, bits_per_key),
            FprCurve::BinaryFuse => crate::fuse::fuse_fpr_at(num_keys, bits_per_key),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_for_fpr_inverts_every_curve() {
        for curve in [
            FprCurve::BlockedBloom,
            FprCurve::Ribbon,
            FprCurve::StandardBloom,
        ] {
            for target in [0.3, 0.05, 0.01, 0.001] {
                let bits = curve.bits_for_fpr(40_000, target, 32.0);
                assert!(curve.fpr(40_000, bits) <= target, "{curve:?} {target}");
                assert!(
                    curve.fpr(40_000, bits - 0.02) > target,
                    "{curve:?} {target}"
                );
            }
            assert_eq!(curve.bits_for_fpr(40_000, 1.0, 32.0), 0.0);
            assert_eq!(curve.bits_for_fpr(40_000, 1e-30, 12.0), 12.0);
        }
        // The step curve: the 8-bit filter's cost for anything it reaches.
        let fuse = FprCurve::BinaryFuse;
        let bits = fuse.bits_for_fpr(40_000, 0.01, 32.0);
        assert!(
            (bits - fuse.min_bits_per_key(40_000)).abs() < 0.02,
            "{bits}"
        );
    }
}
