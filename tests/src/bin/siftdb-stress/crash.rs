//! `--crash_test`: runs this binary as a worker process over the database, SIGKILLs it at a
//! seeded random moment, reopens the database here and checks every key against the expected
//! state the worker left in its file (a key whose write was in flight may hold either version),
//! settles each key to what it holds, and starts the next worker.

use std::ffi::OsString;
use std::path::Path;
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use siftdb::Keyspace;

use crate::cli::Args;
use crate::expected::{is_present, Expected, DELETED};
use crate::run::Layout;
use crate::setup;
use crate::stats::Stats;
use crate::values::{key_name, mix, KEYSPACES};
use crate::verify::{accepts, describe_allowed, describe_got, recognise, Checker};

/// Flags of the driver that the worker does not take, or gets a value of its own for.
const DROPPED_FLAGS: &[&str] = &["--crash_test", "--worker"];
const DROPPED_OPTIONS: &[&str] = &[
    "--kills",
    "--seed",
    "--db",
    "--duration",
    "--ops_per_thread",
    "--kill_min_ms",
    "--kill_max_ms",
    "--open_index",
];

/// The worker's command line: the driver's, less its own flags, plus the worker's.
fn worker_args(db: &Path, seed: u64, open_index: usize) -> Vec<OsString> {
    let mut out: Vec<OsString> = Vec::new();
    let mut given = std::env::args_os().skip(1);
    while let Some(arg) = given.next() {
        let text = arg.to_string_lossy().into_owned();
        let name = text.split('=').next().unwrap_or_default();
        if DROPPED_FLAGS.contains(&name) {
            continue;
        }
        if DROPPED_OPTIONS.contains(&name) {
            if !text.contains('=') {
                given.next();
            }
            continue;
        }
        out.push(arg);
    }
    out.push("--worker".into());
    out.push("--db".into());
    out.push(db.as_os_str().to_owned());
    out.extend(["--seed".into(), seed.to_string().into()]);
    out.extend(["--open_index".into(), open_index.to_string().into()]);
    out
}

/// What the reopens found.
#[derive(Default)]
struct Totals {
    kills: u64,
    reopens: u64,
    verified: u64,
    lost: u64,
    wrong: u64,
}

fn fail(what: &str, e: impl std::fmt::Display) -> ExitCode {
    eprintln!("crash: {what}: {e}");
    ExitCode::FAILURE
}

/// Creates the database and its keyspaces (or opens the one `--db` holds), and the
/// expected state beside it; the path of the expected state.
fn prepare(args: &Args, layout: &Layout) -> Result<std::path::PathBuf, String> {
    if args.faults {
        return Err("--crash_test runs on the real file system: drop --faults".to_string());
    }
    layout
        .expected(args)
        .map_err(|e| format!("expected state: {e}"))?;
    let options = setup::options(args, None, setup::style(args, 0));
    let (db, ks) = setup::open(&layout.db, &options).map_err(|e| format!("open: {e}"))?;
    drop(ks);
    db.close().map_err(|e| format!("close: {e}"))?;
    layout
        .expected
        .clone()
        .ok_or_else(|| "no expected-state file".to_string())
}

/// The crash test.
pub fn drive(args: &Args, seed: u64) -> ExitCode {
    let layout = match Layout::new(args) {
        Ok(l) => l,
        Err(e) => return fail("cannot lay out the run's files", e),
    };
    let expected_path = match prepare(args, &layout) {
        Ok(p) => p,
        Err(e) => return fail("cannot prepare the database", e),
    };
    let (db, kills) = (layout.db.display(), args.kills);
    eprintln!("crash: seed {seed}, {kills} kills, database {db}");
    let mut rng = StdRng::seed_from_u64(mix(seed ^ 0xc4a5));
    let mut totals = Totals::default();
    let stats = Stats::new(seed);
    for i in 0..args.kills as usize {
        let (min, max) = (args.kill_min_ms, args.kill_max_ms.max(args.kill_min_ms));
        let wait = Duration::from_millis(rng.gen_range(min..=max));
        let worker_seed = mix(seed ^ i as u64);
        match run_and_kill(&layout.db, worker_seed, i, wait) {
            Ok(true) => totals.kills += 1,
            Ok(false) => {
                // It printed what it found: one wrong read (at least).
                eprintln!("crash: FAILED with seed {seed}: worker {i} (seed {worker_seed}) found a mismatch");
                totals.wrong += 1;
                break;
            }
            Err(e) => return fail(&format!("worker {i}"), e),
        }
        let (verified, lost, wrong) =
            match reopen_and_verify(args, &layout, &expected_path, &stats, i) {
                Ok(counts) => counts,
                Err(e) => return fail(&format!("reopen after kill {}", i + 1), e),
            };
        totals.reopens += 2;
        let ms = wait.as_millis();
        eprintln!("crash: kill {} of {kills} after {ms} ms: {verified} keys verified, {lost} lost, {wrong} wrong", i + 1);
        totals.verified += verified;
        totals.lost += lost;
        totals.wrong += wrong;
        if lost + wrong > 0 {
            eprintln!("crash: FAILED with seed {seed} (worker {i}, seed {worker_seed})");
            break;
        }
    }
    println!(
        "crash: {} kills, {} reopens, {} keys verified, {} lost, {} wrong",
        totals.kills, totals.reopens, totals.verified, totals.lost, totals.wrong
    );
    if totals.lost + totals.wrong > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// After kill `i`: opens the database and verifies every key (settling each to what it
/// holds), then closes, opens and verifies it again (recovery must answer the same twice).
fn reopen_and_verify(
    args: &Args,
    layout: &Layout,
    expected: &Path,
    stats: &Stats,
    i: usize,
) -> Result<(u64, u64, u64), String> {
    let exp = Expected::load(expected).map_err(|e| format!("expected state: {e}"))?;
    let (mut verified, mut lost, mut wrong) = (0, 0, 0);
    for _ in 0..2 {
        let options = setup::options(args, None, setup::style(args, i + 1));
        let (db, ks) = setup::open(&layout.db, &options).map_err(|e| e.to_string())?;
        let (v, l, x) = verify_after_kill(&exp, &ks, stats, i + 1);
        (verified, lost, wrong) = (verified + v, lost + l, wrong + x);
        drop(ks);
        db.close().map_err(|e| format!("close: {e}"))?;
    }
    Ok((verified, lost, wrong))
}

/// Starts a worker, lets it run for `wait`, and SIGKILLs it: `Ok(true)`; `Ok(false)` when it
/// ended by itself (a worker that finds a mismatch exits 1).
fn run_and_kill(db: &Path, seed: u64, index: usize, wait: Duration) -> Result<bool, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this binary: {e}"))?;
    let mut child: Child = Command::new(exe)
        .args(worker_args(db, seed, index))
        .stdin(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start: {e}"))?;
    let deadline = Instant::now() + wait;
    while Instant::now() < deadline {
        if child.try_wait().map_err(|e| e.to_string())?.is_some() {
            return Ok(false);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    // `Child::kill` is SIGKILL on Unix.
    child.kill().map_err(|e| format!("cannot kill: {e}"))?;
    let status = child.wait().map_err(|e| e.to_string())?;
    // Killed (no exit code), or ended on its own just before.
    Ok(status.code().is_none())
}

/// Reads every key, counts the lost (expected present, read absent) and the wrong, and
/// settles each key to what it holds; then scans each keyspace against the settled state.
fn verify_after_kill(
    exp: &Expected,
    ks: &[Keyspace],
    stats: &Stats,
    kill: usize,
) -> (u64, u64, u64) {
    let (max, op) = (exp.max_value(), format!("verification after kill {kill}"));
    let (mut verified, mut lost, mut wrong) = (0, 0, 0);
    for (k, handle) in ks.iter().enumerate() {
        for key in 0..exp.keys() {
            let allowed = exp.allowed(k, key);
            let got = match handle.get(key_name(key)) {
                Ok(got) => got,
                Err(e) => {
                    wrong += 1;
                    stats.mismatch(
                        &op,
                        KEYSPACES[k],
                        &String::from_utf8_lossy(&key_name(key)),
                        "a read",
                        &format!("error: {e}"),
                    );
                    continue;
                }
            };
            verified += 1;
            if !accepts(k, key, max, &allowed, got.as_deref()) {
                if got.is_none() {
                    lost += 1
                } else {
                    wrong += 1
                }
                let name = String::from_utf8_lossy(&key_name(key)).into_owned();
                stats.mismatch(
                    &op,
                    KEYSPACES[k],
                    &name,
                    &describe_allowed(k, key, max, &allowed),
                    &describe_got(k, key, max, got.as_deref()),
                );
                continue;
            }
            let state = match recognise(k, key, max, got.as_deref()) {
                Some(0) => allowed
                    .states
                    .iter()
                    .copied()
                    .find(|&s| !is_present(s))
                    .unwrap_or_else(|| DELETED | exp.new_id()),
                Some(state) => state,
                None => continue,
            };
            exp.settle(k, key, state);
        }
    }
    wrong += scan_all(exp, ks, stats, &op);
    (verified, lost, wrong)
}

/// Scans each keyspace against the expected state; the mismatches found.
fn scan_all(exp: &Expected, ks: &[Keyspace], stats: &Stats, op: &str) -> u64 {
    let before = stats.mismatches.load(Relaxed);
    let checker = Checker {
        exp,
        stats,
        faults: false,
    };
    for (k, handle) in ks.iter().enumerate() {
        match handle.iter().collect::<siftdb::Result<Vec<_>>>() {
            Ok(entries) => {
                let all = (std::ops::Bound::Unbounded, std::ops::Bound::Unbounded);
                checker.scan(
                    &format!("{op} (scan)"),
                    k,
                    (0, exp.keys()),
                    &all,
                    &entries,
                    &|key| exp.allowed(k, key),
                );
            }
            Err(e) => checker.error(op, KEYSPACES[k], "(scan)", &e),
        }
    }
    stats.mismatches.load(Relaxed) - before
}
