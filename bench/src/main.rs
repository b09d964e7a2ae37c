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
