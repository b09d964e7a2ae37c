//! siftdb-filter: the filters in front of every SSTable read.
//!
//! * [`BlockedBloom`] — cache-line blocked bloom filter (one cache miss per query).
//! * [`AtomicBlockedBloom`] — the same layout in atomic words: threads insert while others query.
//! * [`RibbonFilter`] — standard ribbon filter (GF(2) linear system, ~30 % smaller).
//! * [`BinaryFuseFilter`] — binary fuse filter (8- or 16-bit fingerprints, three cells a query).
//! * [`RangeFilter`] — range filter (Grafite: locality-preserving hash + Elias-Fano) for "any key
//!   in [a, b]?" over order-preserving 64-bit key images; [`KeyImage`] learns a dense image of a
//!   table's keys.
//! * [`Filter`] / [`FilterBuilder`] — the versioned, checksummed filter block.
//! * [`CountingBloom`] — a counting bloom filter (4-bit saturating counters): insert, remove,
//!   query.
//! * [`CuckooFilter`] — a cuckoo filter (4-slot buckets, partial-key cuckoo hashing): insert,
//!   query, delete; full is an error that changes nothing.
//! * [`QuotientFilter`] — a quotient filter (sorted fingerprints in `2^q` slots of `r`-bit
//!   remainders and three metadata bits): insert, query, delete, and merge and grow without the
//!   keys.
//! * [`ScalableBloom`] — a chain of growing bloom filters for key counts nobody knows in
//!   advance, its FPR kept under a bound.
//! * [`ConcurrentScalableBloom`] — the same chain for many threads at once, without a lock
//!   (atomic bits; what a memtable's prefix bloom needs).
//! * [`RotatingBloom`] — time-bucketed bloom filters for "seen in the last hour?", the oldest
//!   bucket retired whole.
//!
//! The counting, cuckoo, quotient, scalable and rotating filters are standalone structures, each
//! with a versioned, checksummed serialized form that refuses another hash function or seed.
//! * [`KeyHasher`] — seeded XXH3 or keyed SipHash; recorded in every block.
//! * [`FilterPolicy`], [`monkey()`](fn@monkey) — which kind and how many bits each level gets.
//!
//! Filters may say "maybe" wrongly but never "no" wrongly. Everything that could make a reader
//! disagree with the writer (format version, kind, hash function, seed) is recorded in the block
//! and checked on decode.
//!
//! This crate depends on no other crate of the workspace.
#![deny(missing_docs)]
#![warn(clippy::unwrap_used, clippy::expect_used)]

pub mod atomic_bloom;
pub mod bloom;
mod concurrent_scalable;
mod counting;
mod cuckoo;
mod envelope;
mod error;
mod format;
pub mod fuse;
mod hash;
pub mod kernel;
mod key_image;
mod kind;
pub mod monkey;
mod plain;
mod policy;
mod prefetch;
mod quotient;
pub mod range;
pub mod ribbon;
mod rotating;
mod scalable;

pub use atomic_bloom::AtomicBlockedBloom;
pub use bloom::{blocked_bloom_expected_fpr, BlockedBloom};
pub use concurrent_scalable::ConcurrentScalableBloom;
pub use counting::CountingBloom;
pub use cuckoo::CuckooFilter;
pub use error::FilterError;
pub use format::{Filter, FilterBuilder, FILTER_FORMAT_VERSION, FILTER_MAGIC, HEADER_LEN};
pub use fuse::{
    fuse_expected_fpr, fuse_fingerprint_bits_for, fuse_fpr_at, BinaryFuseFilter, FuseParams,
};
pub use hash::{HashId, KeyHasher, DEFAULT_SEED};
pub use kernel::Kernel;
pub use key_image::KeyImage;
pub use kind::{FilterKind, FprCurve};
pub use monkey::{monkey, sum_fpr, uniform, FilterBudget, LevelAllocation, LevelSpec};
pub use policy::{pooled_level_keys, FilterAllocation, FilterPolicy, LevelFilter};
pub use quotient::QuotientFilter;
pub use range::{RangeFilter, RangeParams};
pub use ribbon::{ribbon_expected_fpr, RibbonFilter, RibbonFprCurve, RibbonParams};
pub use rotating::RotatingBloom;
pub use scalable::ScalableBloom;

/// The crate README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
