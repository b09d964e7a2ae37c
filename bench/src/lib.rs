//! siftdb-bench: measurement tools for siftdb.
//!
//! * `filter-bench` (module [`filters`]): filter build/query speed and FPR versus bits/key for
//!   siftdb's blocked bloom and ribbon filters, with standard bloom (`fastbloom`) and binary fuse
//!   (`xorf`) as comparison rows, and the Monkey-versus-uniform allocation report.
//! * criterion micro-benchmarks under `benches/`.
#![deny(missing_docs)]
#![warn(clippy::unwrap_used, clippy::expect_used)]

pub mod filters;
pub mod runner;
