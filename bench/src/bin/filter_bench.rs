//! filter-bench: build speed, query speed and FPR of siftdb's filters against bits/key, with
//! standard bloom and binary fuse as comparison rows; the Monkey-versus-uniform report; and the
//! standalone structures (counting, scalable and rotating bloom, cuckoo, quotient) side by side.
//! The sweep times its one-at-a-time queries in five rounds over every filter built, and reports
//! each filter's median pass; every allocation of 2 MiB or more (each contender's filter) is
//! advised onto huge pages.
//!
//! ```text
//! cargo run --release -p siftdb-bench --bin filter-bench -- [--keys 10000000] [--json] [--plot fpr.svg]
//! cargo run --release -p siftdb-bench --bin filter-bench -- --range [--keys 1000000] [--sweep 8,10,12,16] [--json]
//! cargo run --release -p siftdb-bench --bin filter-bench -- --monkey --level-keys 1000,10000,100000 \
//!     --bits-per-key 10 --kind bloom|ribbon|policy [--json]
//! cargo run --release -p siftdb-bench --bin filter-bench -- --standalone \
//!     [--standalone-items 1000000,10000000] [--queries 4000000] [--json]
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, ValueEnum};
use siftdb_bench::filters::{
    monkey_report, plot_fpr, run_range_sweep, run_standalone, run_sweep, HugePageAlloc, MonkeyKind,
    StandaloneRow, SweepConfig, SweepRow,
};

/// Every contender's filter on huge pages (`siftdb_bench::filters::HugePageAlloc`), so that
/// rows compare queries rather than the TLB luck of each run.
#[global_allocator]
static GLOBAL: HugePageAlloc = HugePageAlloc;

#[derive(Debug, Clone, Copy, ValueEnum)]
enum KindArg {
    Bloom,
    Ribbon,
    Policy,
}

/// Filter benchmark (see the crate docs).
#[derive(Debug, Parser)]
#[command(name = "filter-bench", version, about)]
struct Args {
    /// Keys inserted into each filter.
    #[arg(long, default_value_t = 1_000_000)]
    keys: usize,
    /// Never-inserted keys queried per filter (FPR sample; raised to at least 2,000,000 and the key
    /// count; with `--standalone`, to at least 1,000,000).
    #[arg(long, default_value_t = 4_000_000)]
    queries: usize,
    /// Bits/key values of the sweep (comma separated).
    #[arg(long, value_delimiter = ',', default_value = "6,8,10,12,16")]
    sweep: Vec<f64>,
    /// Print one JSON object per line instead of a table.
    #[arg(long)]
    json: bool,
    /// Also draw FPR against bits/key as an SVG.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Seed of the query shuffles.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Allocation mode: Monkey versus uniform over the levels of `--level-keys`.
    #[arg(long)]
    monkey: bool,
    /// Range filter mode: FPR of empty ranges of width 2, 16 and 64 (random and correlated)
    /// against Grafite's bound, for each bits/key of `--sweep`.
    #[arg(long)]
    range: bool,
    /// Standalone structures mode: bits/key, FPR (against the structure's own expectation and the
    /// 2^-bits/key floor), insert, query and delete time of the counting, scalable and rotating
    /// bloom, cuckoo and quotient filters, with a blocked bloom and a binary fuse filter as the
    /// static references, at each count of `--standalone-items`.
    #[arg(long)]
    standalone: bool,
    /// Item counts of `--standalone` (comma separated).
    #[arg(
        long = "standalone-items",
        alias = "standalone_items",
        value_delimiter = ',',
        default_value = "1000000,10000000"
    )]
    standalone_items: Vec<usize>,
    /// Keys per level, L0 first (allocation mode).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "10000,100000,1000000,10000000,100000000"
    )]
    level_keys: Vec<u64>,
    /// Average bits/key over all levels (allocation mode).
    #[arg(long, default_value_t = 10.0)]
    bits_per_key: f64,
    /// Filter kind of the levels (allocation mode).
    #[arg(long, value_enum, default_value_t = KindArg::Policy)]
    kind: KindArg,
    /// First ribbon level for `--kind policy`.
    #[arg(long, default_value_t = 2)]
    bloom_before_level: usize,
    /// Allocation mode: build and measure levels up to this many keys (larger ones report the model only).
    #[arg(long, default_value_t = 20_000_000)]
    max_built_level_keys: u64,
}

fn main() -> ExitCode {
    let args = Args::parse();
    if args.monkey {
        run_monkey(&args);
    } else if args.range {
        run_range(&args);
    } else if args.standalone {
        run_standalone_mode(&args);
    } else if let Err(e) = run_filters(&args) {
        eprintln!("filter-bench: {e}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

fn run_filters(args: &Args) -> Result<(), String> {
    let config = SweepConfig {
        keys: args.keys,
        negative_queries: args.queries.max(2_000_000).max(args.keys),
        positive_queries: args.keys.min(2_000_000),
        bits_per_key: args.sweep.clone(),
        seed: args.seed,
    };
    if !args.json {
        println!(
            "filter-bench: {} keys, {} negative queries per filter; kernel {} (build {})",
            config.keys,
            config.negative_queries,
            siftdb_filter::kernel::active().name(),
            siftdb_bench::filters::build_flags()
        );
        println!(
            "{:<14} {:>7} {:>9} {:>10} {:>7} {:>10} {:>9} {:>9} {:>9}",
            "filter",
            "target",
            "bits/key",
            "fpr %",
            "floor×",
            "build ns/k",
            "pos ns",
            "neg ns",
            "batch ns"
        );
    }
    let rows = run_sweep(&config, |row| print_row(row, args.json));
    if let Some(path) = &args.plot {
        plot_fpr(&rows, path)?;
        if !args.json {
            println!("plot written to {}", path.display());
        }
    }
    Ok(())
}

fn print_row(row: &SweepRow, json: bool) {
    if json {
        println!("{}", row.to_json());
    } else {
        println!(
            "{:<14} {:>7.3} {:>9.3} {:>10.4} {:>7.3} {:>10.1} {:>9.1} {:>9.1} {:>9}",
            row.filter,
            row.target_bits_per_key,
            row.bits_per_key,
            row.fpr * 100.0,
            row.floor_ratio,
            row.build_ns_per_key,
            row.query_pos_ns,
            row.query_neg_ns,
            row.query_neg_batch_ns
                .map_or_else(|| "-".to_string(), |ns| format!("{ns:.1}"))
        );
    }
}

fn run_range(args: &Args) {
    if !args.json {
        println!(
            "filter-bench --range: {} keys, {} ranges per row (blocks of 2^16 images)",
            args.keys,
            args.queries.min(1_000_000)
        );
        println!(
            "{:<7} {:>9} {:>6} {:<11} {:>10} {:>10} {:>10} {:>10} {:>9}",
            "target",
            "bits/key",
            "width",
            "queries",
            "empty",
            "fpr %",
            "bound %",
            "build ns/k",
            "query ns"
        );
    }
    run_range_sweep(args.keys, args.queries.min(1_000_000), &args.sweep, |row| {
        if args.json {
            println!("{}", row.to_json());
        } else {
            println!(
                "{:<7.2} {:>9.3} {:>6} {:<11} {:>10} {:>10.4} {:>10.4} {:>10.1} {:>9.1}",
                row.target_bits_per_key,
                row.bits_per_key,
                row.width,
                row.queries,
                row.empty_ranges,
                row.fpr * 100.0,
                row.bound * 100.0,
                row.build_ns_per_key,
                row.query_ns
            );
        }
    });
}

fn run_monkey(args: &Args) {
    let kind = match args.kind {
        KindArg::Bloom => MonkeyKind::Bloom,
        KindArg::Ribbon => MonkeyKind::Ribbon,
        KindArg::Policy => MonkeyKind::Policy {
            bloom_before_level: args.bloom_before_level,
        },
    };
    let (rows, summary) = monkey_report(
        &args.level_keys,
        args.bits_per_key,
        kind,
        args.queries.max(2_000_000),
        args.max_built_level_keys,
    );
    if args.json {
        for row in &rows {
            println!("{}", row.to_json());
        }
        println!("{}", summary.to_json());
        return;
    }
    println!(
        "Monkey vs uniform at {} bits/key average ({} levels)",
        args.bits_per_key,
        rows.len()
    );
    println!(
        "{:>5} {:>11} {:>14} {:>9} {:>11} {:>11} {:>9} {:>11} {:>11}",
        "level", "keys", "kind", "M b/key", "M fpr", "M meas.", "U b/key", "U fpr", "U meas."
    );
    for r in &rows {
        println!(
            "{:>5} {:>11} {:>14} {:>9.3} {:>11.3e} {:>11.3e} {:>9.3} {:>11.3e} {:>11.3e}",
            r.level,
            r.keys,
            r.kind.name(),
            r.monkey.bits_per_key,
            r.monkey.fpr,
            r.monkey_measured_fpr,
            r.uniform.bits_per_key,
            r.uniform.fpr,
            r.uniform_measured_fpr
        );
    }
    println!(
        "sum of FPRs: monkey {:.4e} (measured {:.4e}), uniform {:.4e} (measured {:.4e}): {:.2}x lower",
        summary.monkey_sum_fpr,
        summary.monkey_measured_sum_fpr,
        summary.uniform_sum_fpr,
        summary.uniform_measured_sum_fpr,
        summary.uniform_sum_fpr / summary.monkey_sum_fpr
    );
    println!(
        "planned bits: monkey {:.0}, uniform {:.0}; real bits of built filters: monkey {:.0}, uniform {:.0}",
        summary.monkey_bits, summary.uniform_bits, summary.monkey_real_bits, summary.uniform_real_bits
    );
}

fn run_standalone_mode(args: &Args) {
    let absent = args.queries.max(1_000_000);
    if !args.json {
        println!(
            "filter-bench --standalone: items {:?}, {absent} absent keys per FPR (16-byte keys, seed {})",
            args.standalone_items, args.seed
        );
        println!(
            "{:<15} {:>9} {:>8} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8} {:>10} {:>9}",
            "structure",
            "items",
            "bits/key",
            "fpr %",
            "expect %",
            "floor",
            "ins ns",
            "pos ns",
            "neg ns",
            "del ns",
            "del fpr %",
            "fail load"
        );
    }
    run_standalone(&args.standalone_items, absent, args.seed, |row| {
        print_standalone_row(row, args.json)
    });
}

fn print_standalone_row(row: &StandaloneRow, json: bool) {
    if json {
        println!("{}", row.to_json());
        return;
    }
    let or_dash = |value: Option<f64>, scale: f64, digits: usize| {
        value.map_or_else(|| "-".to_string(), |v| format!("{:.digits$}", v * scale))
    };
    println!(
        "{:<15} {:>9} {:>8.3} {:>9.4} {:>9.4} {:>9.2e} {:>8.1} {:>8.1} {:>8.1} {:>8} {:>10} {:>9}",
        row.structure,
        row.items,
        row.bits_per_key,
        row.fpr * 100.0,
        row.expected_fpr * 100.0,
        row.floor_fpr,
        row.insert_ns,
        row.query_present_ns,
        row.query_absent_ns,
        or_dash(row.delete_ns, 1.0, 1),
        or_dash(row.fpr_after_deletes, 100.0, 4),
        or_dash(row.load_at_first_failure, 1.0, 4),
    );
}
