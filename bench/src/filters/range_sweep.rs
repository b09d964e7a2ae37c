//! The range filter's rows of filter-bench: FPR against bits/key for empty ranges of several
//! widths, random and correlated (starting just after a present key), beside Grafite's bound
//! `width / 2^(B-2)`; build and query time.

use std::hint::black_box;
use std::time::Instant;

use serde_json::json;
use siftdb_filter::RangeFilter;

/// One measured row of `--range`.
#[derive(Debug, Clone)]
pub struct RangeRow {
    /// Bits/key asked for.
    pub target_bits_per_key: f64,
    /// Bits/key of the built filter (its two arrays over the keys).
    pub bits_per_key: f64,
    /// Images per range.
    pub width: u64,
    /// `random` (anywhere) or `correlated` (starting just after a present key).
    pub queries: &'static str,
    /// Empty ranges asked.
    pub empty_ranges: u64,
    /// Of those, answered "maybe".
    pub fpr: f64,
    /// Grafite's bound at the built bits/key.
    pub bound: f64,
    /// Build time per key.
    pub build_ns_per_key: f64,
    /// Time per range query.
    pub query_ns: f64,
}

impl RangeRow {
    /// The row as the JSON object filter-bench prints.
    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "filter": "range",
            "target_bits_per_key": self.target_bits_per_key,
            "bits_per_key": (self.bits_per_key * 1e4).round() / 1e4,
            "width": self.width,
            "queries": self.queries,
            "empty_ranges": self.empty_ranges,
            "fpr": self.fpr,
            "bound": self.bound,
            "build_ns_per_key": (self.build_ns_per_key * 100.0).round() / 100.0,
            "query_ns": (self.query_ns * 100.0).round() / 100.0,
        })
    }
}

/// SplitMix64: key images and query starts.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Whether sorted `keys` hold an image in `[lo, hi]`.
fn holds(keys: &[u64], lo: u64, hi: u64) -> bool {
    let i = keys.partition_point(|&k| k < lo);
    keys.get(i).is_some_and(|&k| k <= hi)
}

/// Runs the range rows over `keys` random images for each bits/key of `sweep`, widths 2, 16 and
/// 64 (blocks of 2^16 images), `queries` ranges per row.
pub fn run_range_sweep(
    keys: usize,
    queries: usize,
    sweep: &[f64],
    mut on_row: impl FnMut(&RangeRow),
) -> Vec<RangeRow> {
    let mut images: Vec<u64> = (0..keys as u64).map(|i| mix(i ^ 0x5EED)).collect();
    let mut rows = Vec::new();
    for &bits in sweep.iter().filter(|&&b| b >= 3.0) {
        let start = Instant::now();
        let Ok(filter) = RangeFilter::build(&images, bits, 16, 42) else {
            continue;
        };
        let build_ns = start.elapsed().as_nanos() as f64 / keys.max(1) as f64;
        images.sort_unstable();
        let built_bits = filter.size_bytes() as f64 * 8.0 / keys.max(1) as f64;
        for width in [2u64, 16, 64] {
            for queries_kind in ["random", "correlated"] {
                let starts: Vec<u64> = (0..queries as u64)
                    .map(|q| match queries_kind {
                        "random" => mix(q ^ (width << 40) ^ 0xF00D),
                        _ => {
                            images[(mix(q) % images.len().max(1) as u64) as usize].saturating_add(1)
                        }
                    })
                    .filter(|&lo| !holds(&images, lo, lo.saturating_add(width - 1)))
                    .collect();
                let started = Instant::now();
                let maybes = starts
                    .iter()
                    .filter(|&&lo| {
                        filter.may_contain_range(black_box(lo), lo.saturating_add(width - 1))
                    })
                    .count();
                let query_ns = started.elapsed().as_nanos() as f64 / starts.len().max(1) as f64;
                let row = RangeRow {
                    target_bits_per_key: bits,
                    bits_per_key: built_bits,
                    width,
                    queries: queries_kind,
                    empty_ranges: starts.len() as u64,
                    fpr: maybes as f64 / starts.len().max(1) as f64,
                    bound: (width as f64 / (built_bits - 2.0).exp2()).min(1.0),
                    build_ns_per_key: build_ns,
                    query_ns,
                };
                on_row(&row);
                rows.push(row);
            }
        }
    }
    rows
}
