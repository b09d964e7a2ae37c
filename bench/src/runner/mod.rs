//! `siftdb-bench`: a `db_bench`-style workload runner.
//!
//! The workloads (`fillseq`, `fillrandom`, `overwrite`, `readrandom`, `readmissing`,
//! `multireadrandom`, `multireadmissing`, `readhot`, `seekrandom`, `prefixscan`, `deleterandom`,
//! `readwhilewriting`, `checkpoint`, `stats`, ...)
//! run in the order of `--benchmarks` on one database, a fresh temporary directory by default,
//! its keys spread over `--keyspaces` keyspaces (siftdb). Each prints one line in
//! `db_bench`'s shape (`micros/op`, `ops/sec`, found counts) followed by the engine statistics of
//! that phase (after minus before): filter useful / positive / true positive and measured FPR
//! per level, data blocks per lookup, block-cache hit rates per block kind, write amplification
//! and stall time. `--json` prints the same figures as one JSON object per workload.
//!
//! Modules, from the bottom up (each uses only modules listed before it): [`error`],
//! [`progress`], [`memory`]; [`keys`] (key layout, random choices, the model of which keys
//! exist) and [`zipf`]; [`args`] (flags, resolved into a [`Config`]); [`text`] (settings in
//! words) and [`settings`] (the siftdb options a run describes, the settings table); [`engine`]
//! (the [`Engine`] trait), then [`sift`] (siftdb behind it) and `peers` (RocksDB and fjall,
//! cargo feature `peers`); [`measure`] (threads and timing) and [`workloads`]; [`report`] (text
//! and JSON) and [`plot`]. This module opens the engines ([`open_engine`]) and runs them.

pub mod args;
pub mod compat;
pub mod disk_io;
pub mod engine;
pub mod error;
pub mod keys;
pub mod measure;
pub mod memory;
#[cfg(feature = "peers")]
pub mod peers;
pub mod plot;
pub mod progress;
pub mod report;
pub mod settings;
pub mod sift;
pub mod text;
pub mod workloads;
pub mod zipf;

use std::io::Write as _;
use std::path::{Path, PathBuf};

pub use args::{Args, Benchmark, Config};
pub use engine::Engine;
pub use error::{Error, Result};
pub use sift::SiftEngine;
pub use workloads::{PhaseResult, Workbench};

/// Runs the workloads of `args` on every engine of `--engine`, printing to stdout.
pub fn run(args: &Args) -> Result<()> {
    let config = Config::from_args(args)?;
    engine::check_engines(&config.engines)?;
    engine::check_keyspaces(&config.engines, config.keyspaces)?;
    let mut runs = Vec::new();
    let mut settings = Vec::new();
    let mut memory = Vec::new();
    let mut charts = Vec::new();
    for name in &config.engines {
        let run = run_engine(&config, name)?;
        runs.push((name.clone(), run.ops));
        settings.push((name.clone(), run.rows));
        memory.push((name.clone(), run.peak_rss));
        charts.push(plot::EngineRun {
            engine: name.clone(),
            phases: run.phases,
        });
    }
    if config.json {
        if let Some(ratios) = report::ratio_json(&runs) {
            emit(&format!("{ratios}\n"))?;
        }
    } else {
        // Beside the ratios, what each engine was given.
        if settings.len() > 1 {
            emit(&settings::table(&settings))?;
        }
        emit(&report::ratio_table(&runs))?;
        emit(&report::memory_text(&memory))?;
    }
    if let Some(dir) = &config.plot {
        let written = plot::write_charts(dir, &charts)?;
        let note = format!("{} charts written to {}\n", written.len(), dir.display());
        if config.json {
            eprint!("{note}");
        } else {
            emit(&note)?;
        }
    }
    Ok(())
}

/// Opens engine `name` in `dir` with the options of `config`.
pub fn open_engine(name: &str, dir: &Path, config: &Config) -> Result<Box<dyn Engine>> {
    engine::check_engines(&[name.to_string()])?;
    engine::check_keyspaces(&[name.to_string()], config.keyspaces)?;
    let context = |e: Error| e.context(format!("cannot open {name} in {}", dir.display()));
    #[cfg(feature = "peers")]
    match name {
        "rocksdb" => {
            let engine = peers::rocks::RocksEngine::open(dir, config).map_err(context)?;
            return Ok(Box::new(engine));
        }
        "fjall" => {
            let engine = peers::fjall::FjallEngine::open(dir, config).map_err(context)?;
            return Ok(Box::new(engine));
        }
        _ => {}
    }
    if name == compat::NAME {
        let engine = compat::CompatEngine::open(dir, config).map_err(context)?;
        return Ok(Box::new(engine));
    }
    let engine = SiftEngine::open(dir, config).map_err(context)?;
    Ok(Box::new(engine))
}

/// What one engine's run produced.
struct EngineOutcome {
    /// The ops/sec of each timed workload (and of each write workload with its flush).
    ops: report::Throughputs,
    /// What the engine was given ([`settings::ROWS`]).
    rows: settings::SettingRows,
    /// The largest peak resident set of its workloads (Linux).
    peak_rss: Option<u64>,
    /// Every workload's result, kept for `--plot` (empty without it).
    phases: Vec<workloads::PhaseResult>,
}

/// Where the database of `engine` lives: `--db` (a subdirectory per engine when there are
/// several), or a fresh temporary directory.
fn database_dir(config: &Config, engine: &str) -> Result<(PathBuf, Option<tempfile::TempDir>)> {
    match &config.db {
        Some(path) => {
            let dir = if config.engines.len() > 1 {
                path.join(engine)
            } else {
                path.clone()
            };
            if config.use_existing_db {
                if !dir.is_dir() {
                    return Err(Error::new(format!(
                        "--use_existing_db: {} is not a directory",
                        dir.display()
                    )));
                }
            } else if dir.exists() {
                let not_empty = std::fs::read_dir(&dir)
                    .map_err(|e| Error::from(e).context(dir.display()))?
                    .next()
                    .is_some();
                if not_empty {
                    return Err(Error::new(format!(
                        "--db {} exists and is not empty: remove it, or pass --use_existing_db to \
                         run on it",
                        dir.display()
                    )));
                }
            }
            Ok((dir, None))
        }
        None => {
            let temp = tempfile::Builder::new()
                .prefix("siftdb-bench-")
                .tempdir()
                .map_err(|e| Error::from(e).context("cannot create a temporary directory"))?;
            Ok((temp.path().to_path_buf(), Some(temp)))
        }
    }
}

fn emit(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| Error::from(e).context("cannot write to stdout"))
}

/// Runs every workload on engine `name`.
fn run_engine(config: &Config, name: &str) -> Result<EngineOutcome> {
    let (dir, temp) = database_dir(config, name)?;
    let engine = open_engine(name, &dir, config)?;
    let rows = engine.setting_rows(config);
    if !config.json {
        let settings = engine.settings();
        emit(&report::header(
            config,
            name,
            settings.as_deref(),
            &dir,
            temp.is_some(),
        ))?;
    }
    let mut ops = Vec::new();
    let mut phases = Vec::new();
    let mut peak_rss: Option<u64> = None;
    let bench = Workbench::new(config, engine.as_ref(), &dir)?;
    let mut outcome = Ok(());
    for (phase, &benchmark) in config.benchmarks.iter().enumerate() {
        let result = match run_phase(&bench, benchmark, phase) {
            Ok(result) => result,
            Err(e) => {
                outcome = Err(e);
                break;
            }
        };
        if let Some(m) = &result.measured {
            ops.push((benchmark.name().to_string(), m.ops_per_sec()));
            if let Some(flush) = result.flush_time {
                // The same operations over the phase plus the flush after it, which waits for
                // the compactions the phase left behind: what the next workload would wait for.
                let settled = m.wall + flush;
                ops.push((
                    format!("{}+flush", benchmark.name()),
                    m.totals.ops as f64 / settled.as_secs_f64().max(1e-9),
                ));
            }
        }
        if let Some(rss) = result.rss {
            peak_rss = Some(peak_rss.unwrap_or(0).max(rss.peak));
        }
        let text = if config.json {
            format!("{}\n", report::json(&result, config, name))
        } else {
            report::text(&result, config)
        };
        emit(&text)?;
        if config.plot.is_some() {
            phases.push(result);
        }
    }
    // The tree's shape at the end, unless `stats` just printed it.
    let ends_with_stats = config.benchmarks.last() == Some(&Benchmark::Stats);
    if outcome.is_ok() && !config.json && !ends_with_stats {
        emit(&report::footer(name, engine.shape().as_deref()))?;
    }
    let closed = engine.close();
    drop(bench);
    drop(engine);
    memory::release_free_memory();
    finish_database(config, temp)?;
    outcome?;
    closed?;
    Ok(EngineOutcome {
        ops,
        rows,
        peak_rss,
        phases,
    })
}

/// Runs `benchmark`, the `phase`-th workload, with the resident set and the process's storage
/// I/O measured around it.
fn run_phase(bench: &Workbench<'_>, benchmark: Benchmark, phase: usize) -> Result<PhaseResult> {
    let resettable = memory::reset_peak();
    let start = memory::read();
    let io_start = disk_io::read();
    let mut result = bench
        .run(benchmark, phase as u64)
        .map_err(|e| e.context(benchmark.name()))?;
    result.rss = match (resettable, start, memory::read()) {
        (true, Some(start), Some(end)) => Some(memory::Rss {
            current: start.current,
            peak: end.peak,
        }),
        _ => None,
    };
    result.disk_io = io_start.zip(disk_io::read()).map(|(s, e)| s.until(e));
    Ok(result)
}

/// Keeps (`--keep`) or removes the temporary database of a run; a `--db` is left as it is.
fn finish_database(config: &Config, temp: Option<tempfile::TempDir>) -> Result<()> {
    if let Some(temp) = temp {
        if config.keep {
            let kept = temp.keep();
            let note = format!("database kept in {}\n", kept.display());
            if config.json {
                eprint!("{note}");
            } else {
                emit(&note)?;
            }
        } else {
            let path = temp.path().to_path_buf();
            temp.close()
                .map_err(|e| Error::from(e).context(format!("cannot remove {}", path.display())))?;
        }
    }
    Ok(())
}
