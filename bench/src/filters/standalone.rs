//! `filter-bench --standalone`: the standalone structures of siftdb-filter (the ones a program
//! uses on its own, outside SSTables) side by side at each item count.
//!
//! Each structure is built over the same distinct 16-byte keys from a seeded generator, then
//! measured: memory (bits/key), FPR over never-inserted keys against its own expected FPR and the
//! information-theoretic floor `2^-bits/key` (no filter of that size can do better), insert and
//! query time (present and absent keys), and for the ones that delete, delete time and the FPR
//! once half the keys are deleted. The cuckoo and quotient filters also report the load at which
//! a filter sized for the item count first refuses an insert.
//!
//! | structure | configuration |
//! | --- | --- |
//! | `blocked_bloom` | [`BlockedBloom`] at 10 bits/key, the static baseline (built whole) |
//! | `counting_bloom` | [`CountingBloom`] for `n` keys at 1 % |
//! | `scalable_bloom` | [`ScalableBloom`] started at `n / 64` keys, 1 %, so it grows six times |
//! | `rotating_bloom` | [`RotatingBloom`] of 4 buckets of `n / 4` keys, 1 %, the keys spread over the window |
//! | `cuckoo` | [`CuckooFilter`] for `n` keys, 12-bit fingerprints |
//! | `quotient` | [`QuotientFilter`] for `n` keys, 8-bit remainders |
//! | `binary_fuse8` | [`BinaryFuseFilter`], 8-bit fingerprints: the static reference (built whole) |
//!
//! Every time includes hashing the key. For the two static filters "insert" is the build over
//! all keys, per key. One structure lives at a time: built, measured, dropped.

use std::hint::black_box;
use std::time::Instant;

use serde_json::json;
use siftdb_filter::{
    BinaryFuseFilter, BlockedBloom, CountingBloom, CuckooFilter, FilterError, KeyHasher,
    QuotientFilter, RotatingBloom, ScalableBloom,
};

/// Bits/key of the blocked bloom baseline.
const BLOOM_BITS_PER_KEY: f64 = 10.0;
/// FPR the bloom-based dynamic structures are sized for.
const BLOOM_FPR: f64 = 0.01;
/// The scalable bloom starts with room for `n / SCALABLE_START_DIVISOR` keys.
const SCALABLE_START_DIVISOR: usize = 64;
/// Buckets of the rotating bloom's window.
const ROTATING_BUCKETS: usize = 4;
/// Fingerprint bits of the cuckoo filter.
const CUCKOO_FINGERPRINT_BITS: u32 = 12;
/// Remainder bits of the quotient filter.
const QUOTIENT_REMAINDER_BITS: u32 = 8;
/// Fingerprint bits of the binary fuse filter.
const FUSE_FINGERPRINT_BITS: u8 = 8;
/// Key numbers of never-inserted keys start here (present keys are `0..n`).
const ABSENT_START: u64 = 1 << 62;
/// Key numbers of the extra keys that fill a filter to its first refused insert.
const EXTRA_START: u64 = 1 << 61;

/// The structures of a `--standalone` run, in row order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StandaloneStructure {
    /// [`BlockedBloom`] at 10 bits/key: the static baseline.
    BlockedBloom,
    /// [`CountingBloom`] at 1 %.
    CountingBloom,
    /// [`ScalableBloom`] at 1 %, started at `n / 64` keys.
    ScalableBloom,
    /// [`RotatingBloom`] of 4 buckets at 1 %.
    RotatingBloom,
    /// [`CuckooFilter`] with 12-bit fingerprints.
    Cuckoo,
    /// [`QuotientFilter`] with 8-bit remainders.
    Quotient,
    /// [`BinaryFuseFilter`] with 8-bit fingerprints: the static reference.
    BinaryFuse8,
}

impl StandaloneStructure {
    /// Every structure, in row order.
    pub const ALL: [StandaloneStructure; 7] = [
        StandaloneStructure::BlockedBloom,
        StandaloneStructure::CountingBloom,
        StandaloneStructure::ScalableBloom,
        StandaloneStructure::RotatingBloom,
        StandaloneStructure::Cuckoo,
        StandaloneStructure::Quotient,
        StandaloneStructure::BinaryFuse8,
    ];

    /// The name printed in the `structure` column.
    pub fn name(self) -> &'static str {
        match self {
            StandaloneStructure::BlockedBloom => "blocked_bloom",
            StandaloneStructure::CountingBloom => "counting_bloom",
            StandaloneStructure::ScalableBloom => "scalable_bloom",
            StandaloneStructure::RotatingBloom => "rotating_bloom",
            StandaloneStructure::Cuckoo => "cuckoo",
            StandaloneStructure::Quotient => "quotient",
            StandaloneStructure::BinaryFuse8 => "binary_fuse8",
        }
    }
}

/// One measured row of `--standalone` (the JSON object of `--json`).
#[derive(Debug, Clone)]
pub struct StandaloneRow {
    /// StandaloneStructure name.
    pub structure: &'static str,
    /// Keys inserted.
    pub items: usize,
    /// Bytes of the structure × 8 / items.
    pub bits_per_key: f64,
    /// Measured false-positive rate over the never-inserted keys.
    pub fpr: f64,
    /// The FPR the structure expects of itself with the items in it.
    pub expected_fpr: f64,
    /// `2^-bits_per_key`: the lowest FPR any filter of this size can have.
    pub floor_fpr: f64,
    /// Time per insert (for the static filters: build time per key).
    pub insert_ns: f64,
    /// Time per query of an inserted key.
    pub query_present_ns: f64,
    /// Time per query of a never-inserted key.
    pub query_absent_ns: f64,
    /// Time per delete, `None` for structures that cannot delete.
    pub delete_ns: Option<f64>,
    /// FPR after deleting half the keys, `None` for structures that cannot delete.
    pub fpr_after_deletes: Option<f64>,
    /// Keys over slots when a filter sized for the items first refused an insert (cuckoo and
    /// quotient filters; `None` for the others).
    pub load_at_first_failure: Option<f64>,
    /// Inserted (and not deleted) keys the structure answered "no" for: 0, or it is broken.
    pub false_negatives: u64,
}

impl StandaloneRow {
    /// The row as the JSON object filter-bench prints.
    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "structure": self.structure,
            "items": self.items,
            "bits_per_key": round(self.bits_per_key, 4),
            "fpr": self.fpr,
            "expected_fpr": self.expected_fpr,
            "floor_fpr": self.floor_fpr,
            "insert_ns": round(self.insert_ns, 2),
            "query_present_ns": round(self.query_present_ns, 2),
            "query_absent_ns": round(self.query_absent_ns, 2),
            "delete_ns": self.delete_ns.map(|ns| round(ns, 2)),
            "fpr_after_deletes": self.fpr_after_deletes,
            "load_at_first_failure": self.load_at_first_failure.map(|l| round(l, 4)),
        })
    }
}

fn round(x: f64, digits: i32) -> f64 {
    let scale = 10f64.powi(digits);
    (x * scale).round() / scale
}

/// SplitMix64's output function: a bijection of u64.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Key number `i` of generator `seed`: 16 bytes, distinct for distinct `i` (the first eight are a
/// bijection of `i`).
pub fn standalone_key(seed: u64, i: u64) -> [u8; 16] {
    let mut key = [0u8; 16];
    key[..8].copy_from_slice(&mix(i ^ seed).to_le_bytes());
    key[8..].copy_from_slice(&mix(i.wrapping_add(seed.rotate_left(32))).to_le_bytes());
    key
}

fn keys(seed: u64, start: u64, count: usize) -> Vec<[u8; 16]> {
    (start..start + count as u64)
        .map(|i| standalone_key(seed, i))
        .collect()
}

/// What filter-bench needs of a structure.
trait Subject {
    fn contains(&self, key: &[u8]) -> bool;
    /// Removes one insertion of `key`; `None` when the structure cannot delete.
    fn remove(&mut self, key: &[u8]) -> Option<bool>;
    fn size_bytes(&self) -> usize;
    /// The FPR it expects of itself holding `items` keys.
    fn expected_fpr(&self, items: usize) -> f64;
}

/// A static filter over key hashes, queried through the default hasher as the others are.
struct Hashed<F> {
    filter: F,
    hasher: KeyHasher,
}

impl Subject for Hashed<BlockedBloom> {
    fn contains(&self, key: &[u8]) -> bool {
        self.filter.may_contain_hash(self.hasher.hash(key))
    }
    fn remove(&mut self, _: &[u8]) -> Option<bool> {
        None
    }
    fn size_bytes(&self) -> usize {
        self.filter.size_bytes()
    }
    fn expected_fpr(&self, items: usize) -> f64 {
        self.filter.expected_fpr(items as u64)
    }
}

impl Subject for Hashed<BinaryFuseFilter> {
    fn contains(&self, key: &[u8]) -> bool {
        self.filter.may_contain_hash(self.hasher.hash(key))
    }
    fn remove(&mut self, _: &[u8]) -> Option<bool> {
        None
    }
    fn size_bytes(&self) -> usize {
        self.filter.size_bytes()
    }
    fn expected_fpr(&self, _: usize) -> f64 {
        self.filter.expected_fpr()
    }
}

/// `Subject` for a structure whose own methods answer: `remove` if it deletes (else no
/// deletes), and the method giving its expected FPR.
macro_rules! subject {
    ($ty:ty, $fpr:ident, remove) => {
        impl Subject for $ty {
            fn contains(&self, key: &[u8]) -> bool {
                <$ty>::contains(self, key)
            }
            fn remove(&mut self, key: &[u8]) -> Option<bool> {
                Some(<$ty>::remove(self, key))
            }
            fn size_bytes(&self) -> usize {
                <$ty>::size_bytes(self)
            }
            fn expected_fpr(&self, _: usize) -> f64 {
                <$ty>::$fpr(self)
            }
        }
    };
    ($ty:ty, $fpr:ident) => {
        impl Subject for $ty {
            fn contains(&self, key: &[u8]) -> bool {
                <$ty>::contains(self, key)
            }
            fn remove(&mut self, _: &[u8]) -> Option<bool> {
                None
            }
            fn size_bytes(&self) -> usize {
                <$ty>::size_bytes(self)
            }
            fn expected_fpr(&self, _: usize) -> f64 {
                <$ty>::$fpr(self)
            }
        }
    };
}

subject!(CountingBloom, expected_fpr, remove);
subject!(CuckooFilter, expected_fpr, remove);
subject!(QuotientFilter, expected_fpr, remove);
subject!(ScalableBloom, current_fpr);
subject!(RotatingBloom, current_fpr);

/// Inserts every key with `insert`, stopping at the first error.
fn insert_all<S>(
    subject: &mut S,
    present: &[[u8; 16]],
    mut insert: impl FnMut(&mut S, &[u8]) -> Result<(), FilterError>,
) -> Result<(), String> {
    for (i, key) in present.iter().enumerate() {
        insert(subject, key).map_err(|e| format!("insert {i} of {}: {e}", present.len()))?;
    }
    Ok(())
}

/// Builds `structure` over `present`; returns it measured against `absent`.
fn measure_structure(
    structure: StandaloneStructure,
    present: &[[u8; 16]],
    absent: &[[u8; 16]],
    seed: u64,
) -> Result<StandaloneRow, String> {
    let n = present.len();
    let hasher = KeyHasher::default();
    let start = Instant::now();
    let hashes = || present.iter().map(|k| hasher.hash(k)).collect::<Vec<u64>>();
    let err = |e: FilterError| e.to_string();
    let mut row = match structure {
        StandaloneStructure::BlockedBloom => {
            let filter = BlockedBloom::build(&hashes(), BLOOM_BITS_PER_KEY).map_err(err)?;
            measure(Hashed { filter, hasher }, start, present, absent)
        }
        StandaloneStructure::BinaryFuse8 => {
            let filter = BinaryFuseFilter::build(&hashes(), FUSE_FINGERPRINT_BITS).map_err(err)?;
            measure(Hashed { filter, hasher }, start, present, absent)
        }
        StandaloneStructure::CountingBloom => {
            let mut filter = CountingBloom::new(n as u64, BLOOM_FPR, hasher).map_err(err)?;
            for key in present {
                filter.insert(key);
            }
            measure(filter, start, present, absent)
        }
        StandaloneStructure::ScalableBloom => {
            let initial = (n / SCALABLE_START_DIVISOR).max(1) as u64;
            let mut filter = ScalableBloom::new(initial, BLOOM_FPR, hasher).map_err(err)?;
            for key in present {
                filter.insert(key);
            }
            measure(filter, start, present, absent)
        }
        StandaloneStructure::RotatingBloom => {
            let per_bucket = n.div_ceil(ROTATING_BUCKETS).max(1);
            let mut filter =
                RotatingBloom::new(ROTATING_BUCKETS, per_bucket as u64, BLOOM_FPR, hasher)
                    .map_err(err)?;
            // One slice of the window per bucket: every key is still inside it.
            for (slice, keys) in present.chunks(per_bucket).enumerate() {
                if slice > 0 {
                    filter.rotate();
                }
                for key in keys {
                    filter.insert(key);
                }
            }
            measure(filter, start, present, absent)
        }
        StandaloneStructure::Cuckoo => {
            let mut filter =
                CuckooFilter::new(n as u64, CUCKOO_FINGERPRINT_BITS, hasher).map_err(err)?;
            insert_all(&mut filter, present, |f, k| f.insert(k))?;
            measure(filter, start, present, absent)
        }
        StandaloneStructure::Quotient => {
            let mut filter =
                QuotientFilter::new(n as u64, QUOTIENT_REMAINDER_BITS, hasher).map_err(err)?;
            insert_all(&mut filter, present, |f, k| f.insert(k))?;
            measure(filter, start, present, absent)
        }
    };
    row.structure = structure.name();
    // A fresh filter sized for the items, filled with distinct keys until it first refuses one.
    row.load_at_first_failure = match structure {
        StandaloneStructure::Cuckoo => {
            let mut filter =
                CuckooFilter::new(n as u64, CUCKOO_FINGERPRINT_BITS, hasher).map_err(err)?;
            fill_until_full(&mut filter, present, seed, |f, k| f.insert(k));
            Some(filter.load())
        }
        StandaloneStructure::Quotient => {
            let mut filter =
                QuotientFilter::new(n as u64, QUOTIENT_REMAINDER_BITS, hasher).map_err(err)?;
            fill_until_full(&mut filter, present, seed, |f, k| f.insert(k));
            Some(filter.load())
        }
        _ => None,
    };
    Ok(row)
}

/// Inserts `present`, then extra distinct keys, until `insert` first fails (at most four times
/// the present keys plus 64: more than any filter sized for them has slots).
fn fill_until_full<S>(
    subject: &mut S,
    present: &[[u8; 16]],
    seed: u64,
    mut insert: impl FnMut(&mut S, &[u8]) -> Result<(), FilterError>,
) {
    for key in present {
        if insert(subject, key).is_err() {
            return;
        }
    }
    for i in 0..(3 * present.len() as u64 + 64) {
        if insert(subject, &standalone_key(seed, EXTRA_START + i)).is_err() {
            return;
        }
    }
}

/// Measures a structure holding `present` (built since `start`) against `absent`; the row's
/// name and failure load are left for the caller.
fn measure<S: Subject>(
    mut subject: S,
    start: Instant,
    present: &[[u8; 16]],
    absent: &[[u8; 16]],
) -> StandaloneRow {
    let insert_ns = start.elapsed().as_nanos() as f64;
    let n = present.len().max(1) as f64;
    let bits_per_key = subject.size_bytes() as f64 * 8.0 / n;
    let expected_fpr = subject.expected_fpr(present.len());

    let start = Instant::now();
    let found = present
        .iter()
        .filter(|k| subject.contains(black_box(&k[..])))
        .count();
    let query_present_ns = start.elapsed().as_nanos() as f64 / n;
    let mut false_negatives = (present.len() - found) as u64;

    let (fpr, query_absent_ns) = false_positive_rate(&subject, absent);

    let half = &present[..present.len() / 2];
    let start = Instant::now();
    let mut deleted = 0usize;
    let mut deletes = true;
    for key in half {
        match subject.remove(black_box(&key[..])) {
            Some(removed) => deleted += usize::from(removed),
            None => {
                deletes = false;
                break;
            }
        }
    }
    let delete_ns = start.elapsed().as_nanos() as f64 / half.len().max(1) as f64;
    let (delete_ns, fpr_after_deletes) = if deletes {
        // Every key deleted was present: each delete must find it, and the rest must stay.
        false_negatives += (half.len() - deleted) as u64;
        let rest = &present[half.len()..];
        false_negatives += rest.iter().filter(|k| !subject.contains(&k[..])).count() as u64;
        (
            Some(delete_ns),
            Some(false_positive_rate(&subject, absent).0),
        )
    } else {
        (None, None)
    };

    StandaloneRow {
        structure: "",
        items: present.len(),
        bits_per_key,
        fpr,
        expected_fpr,
        floor_fpr: (-bits_per_key).exp2(),
        insert_ns: insert_ns / n,
        query_present_ns,
        query_absent_ns,
        delete_ns,
        fpr_after_deletes,
        load_at_first_failure: None,
        false_negatives,
    }
}

/// The share of `absent` answered "maybe", and the time per query.
fn false_positive_rate<S: Subject>(subject: &S, absent: &[[u8; 16]]) -> (f64, f64) {
    let start = Instant::now();
    let maybes = absent
        .iter()
        .filter(|k| subject.contains(black_box(&k[..])))
        .count();
    let ns = start.elapsed().as_nanos() as f64;
    let count = absent.len().max(1) as f64;
    (maybes as f64 / count, ns / count)
}

/// The rows of every structure at `items` keys, FPRs over `absent_queries` never-inserted keys,
/// keys from generator `seed`; calls `on_row` as each finishes. A structure that fails to build
/// is reported on stderr and skipped.
pub fn standalone_rows(
    items: usize,
    absent_queries: usize,
    seed: u64,
    mut on_row: impl FnMut(&StandaloneRow),
) -> Vec<StandaloneRow> {
    let present = keys(seed, 0, items);
    let absent = keys(seed, ABSENT_START, absent_queries);
    let mut rows = Vec::new();
    for structure in StandaloneStructure::ALL {
        match measure_structure(structure, &present, &absent, seed) {
            Ok(row) => {
                if row.false_negatives > 0 {
                    // A false negative is a broken structure; say so loudly.
                    eprintln!(
                        "{} at {items} items: FALSE NEGATIVES: {} inserted keys not found",
                        row.structure, row.false_negatives
                    );
                }
                on_row(&row);
                rows.push(row);
            }
            Err(e) => eprintln!("{} at {items} items: {e}", structure.name()),
        }
    }
    rows
}

/// [`standalone_rows`] at each item count of `items`.
pub fn run_standalone(
    items: &[usize],
    absent_queries: usize,
    seed: u64,
    mut on_row: impl FnMut(&StandaloneRow),
) -> Vec<StandaloneRow> {
    items
        .iter()
        .filter(|&&n| n > 0)
        .flat_map(|&n| standalone_rows(n, absent_queries, seed, &mut on_row))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_distinct_and_absent_ones_disjoint() {
        let mut all: Vec<[u8; 16]> = keys(7, 0, 10_000);
        all.extend(keys(7, ABSENT_START, 10_000));
        all.extend(keys(7, EXTRA_START, 10_000));
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 30_000);
        assert_ne!(standalone_key(7, 1), standalone_key(8, 1));
    }

    #[test]
    fn standalone_rows_measure_every_structure() {
        let rows = standalone_rows(20_000, 200_000, 42, |_| {});
        let names: Vec<&str> = rows.iter().map(|r| r.structure).collect();
        assert_eq!(
            names,
            StandaloneStructure::ALL.map(StandaloneStructure::name)
        );
        for row in &rows {
            let name = row.structure;
            assert_eq!(row.items, 20_000);
            assert_eq!(row.false_negatives, 0, "{name}");
            assert!(
                row.bits_per_key > 4.0 && row.bits_per_key < 64.0,
                "{name}: {}",
                row.bits_per_key
            );
            assert!((row.floor_fpr - (-row.bits_per_key).exp2()).abs() < 1e-15);
            assert!(row.fpr >= row.floor_fpr * 0.5, "{name} beats the floor?");
            // Within a loose band of what each expects of itself (200,000 probes).
            assert!(
                row.fpr <= 2.0 * row.expected_fpr + 0.002,
                "{name}: fpr {} expected {}",
                row.fpr,
                row.expected_fpr
            );
            for ns in [row.insert_ns, row.query_present_ns, row.query_absent_ns] {
                assert!(ns.is_finite() && ns > 0.0, "{name}");
            }
            let deletes = matches!(name, "counting_bloom" | "cuckoo" | "quotient");
            assert_eq!(row.delete_ns.is_some(), deletes, "{name}");
            assert_eq!(row.fpr_after_deletes.is_some(), deletes, "{name}");
            if let Some(after) = row.fpr_after_deletes {
                // Deleting never adds a false positive.
                assert!(after <= row.fpr, "{name}: {after} > {}", row.fpr);
            }
            let json = row.to_json();
            let fields: Vec<&str> = json
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .collect();
            assert_eq!(
                fields,
                [
                    "structure",
                    "items",
                    "bits_per_key",
                    "fpr",
                    "expected_fpr",
                    "floor_fpr",
                    "insert_ns",
                    "query_present_ns",
                    "query_absent_ns",
                    "delete_ns",
                    "fpr_after_deletes",
                    "load_at_first_failure"
                ]
            );
            assert_eq!(json["delete_ns"].is_null(), !deletes);
        }
        let failure_load = |name: &str| {
            rows.iter()
                .find(|r| r.structure == name)
                .and_then(|r| r.load_at_first_failure)
        };
        let cuckoo = failure_load("cuckoo").unwrap();
        assert!(cuckoo > 0.85 && cuckoo <= 1.0, "cuckoo {cuckoo}");
        let quotient = failure_load("quotient").unwrap();
        assert!(
            quotient > 0.94 && quotient <= QuotientFilter::MAX_LOAD,
            "quotient {quotient}"
        );
        assert!(rows
            .iter()
            .filter(|r| !matches!(r.structure, "cuckoo" | "quotient"))
            .all(|r| r.load_at_first_failure.is_none()));
    }
}
