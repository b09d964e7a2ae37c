//! siftdb-bench: a `db_bench`-style workload runner for siftdb (see `docs/BENCHMARKS.md`).
//!
//! ```text
//! cargo run --release -p siftdb-bench
//! cargo run --release -p siftdb-bench -- --benchmarks=fillseq,readrandom,readmissing,stats \
//!     --num=5000000 --bloom_bits=10 --filter_policy=hybrid --histogram
//! ```

use std::process::ExitCode;

use clap::Parser;
use siftdb_bench::runner::{run, Args};

/// The runner's allocator, as `db_bench` links jemalloc: with glibc's malloc the flush thread's
/// teardown of a flushed memtable (millions of small frees of blocks the writer thread
/// allocated) fights the foreground over the writer's arena lock — tens of thousands of context
/// switches and a read phase 1.6× slower right after a fill. A Rust service embedding siftdb
/// should choose a thread-caching allocator for the same reason (`docs/TUNING.md`). RocksDB's
/// C++ allocations in `--features peers` runs are not affected (they use the C allocator).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("siftdb-bench: {e}");
            ExitCode::FAILURE
        }
    }
}
