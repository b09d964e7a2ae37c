//! filter-bench: in the spirit of RocksDB's `filter_bench`.
//!
//! For `n` keys and a sweep of bits/key, every contender is built from the same 64-bit key
//! hashes, sized by its serialized bytes, and queried over shuffled arrays of inserted and
//! never-inserted hashes, so cache misses are honest once the filter outgrows the CPU caches.
//! `--standalone` ([`run_standalone`]) compares the structures a program uses on their own
//! (counting, scalable and rotating bloom, cuckoo and quotient filters) at each item count.

mod contenders;
mod huge_pages;
mod monkey_report;
mod plot;
mod range_sweep;
mod standalone;
mod sweep;

pub use contenders::Contender;
pub use huge_pages::{HugePageAlloc, HUGE_PAGE};
pub use monkey_report::{monkey_report, MonkeyKind, MonkeyLevelRow, MonkeySummary};
pub use plot::plot_fpr;
pub use range_sweep::{run_range_sweep, RangeRow};
pub use standalone::{
    run_standalone, standalone_key, standalone_rows, StandaloneRow, StandaloneStructure,
};
pub use sweep::{build_flags, ribbon_bits_for_fpr, run_sweep, SweepConfig, SweepRow, QUERY_PASSES};

/// `count` distinct 64-bit key hashes: xxh3 of the numbers `start..start + count`, the way the
/// engine hashes user keys. Positives and negatives come from disjoint ranges.
pub fn key_hashes(start: u64, count: usize) -> Vec<u64> {
    let hasher = siftdb_filter::KeyHasher::default();
    (start..start + count as u64)
        .map(|i| hasher.hash(&i.to_le_bytes()))
        .collect()
}
