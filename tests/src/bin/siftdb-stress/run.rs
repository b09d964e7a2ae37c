//! A stress run in this process: where its files go, the threads, the final verification, the
//! reopen and its verification; and the crash test's worker process.

use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use siftdb::{Db, Keyspace, Options};
use siftdb_tests::FaultFs;

use crate::cli::Args;
use crate::ctx::Ctx;
use crate::expected::Expected;
use crate::locks::KeyLocks;
use crate::stats::Stats;
use crate::verify::{full_pass, Checker};
use crate::{faults, ops, setup};

/// Where a run's files are.
pub struct Layout {
    /// The database.
    pub db: PathBuf,
    /// The expected-state file (`None`: in memory, `--faults`).
    pub expected: Option<PathBuf>,
    /// Scratch files: tables to ingest, checkpoints, backups.
    pub scratch: PathBuf,
    /// The in-memory file system (`--faults`).
    pub fault: Option<FaultFs>,
    /// The temporary directory holding it all when no `--db` was given.
    _temp: Option<tempfile::TempDir>,
}

/// `path` with `.suffix` appended to its last component.
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(format!(".{suffix}"));
    PathBuf::from(s)
}

impl Layout {
    /// The files of a run of `args`: in memory under `--faults`; else `--db` (or a temporary
    /// directory's `db`) with `<db>.expected` and `<db>.scratch` beside it.
    pub fn new(args: &Args) -> io::Result<Layout> {
        if args.faults {
            return Ok(Layout {
                db: PathBuf::from("/stress/db"),
                expected: None,
                scratch: PathBuf::from("/stress/scratch"),
                fault: Some(FaultFs::new()),
                _temp: None,
            });
        }
        let (temp, db) = match &args.db {
            Some(db) => (None, db.clone()),
            None => {
                let temp = tempfile::Builder::new()
                    .prefix("siftdb-stress-")
                    .tempdir()?;
                let db = temp.path().join("db");
                (Some(temp), db)
            }
        };
        Ok(Layout {
            expected: Some(sibling(&db, "expected")),
            scratch: sibling(&db, "scratch"),
            db,
            fault: None,
            _temp: temp,
        })
    }

    /// The file system the run's database is on (`None`: the real one).
    pub fn fs(&self) -> Option<std::sync::Arc<dyn siftdb::fs::FileSystem>> {
        self.fault
            .as_ref()
            .map(|f| std::sync::Arc::new(f.clone()) as std::sync::Arc<dyn siftdb::fs::FileSystem>)
    }

    /// Empties the scratch directory.
    pub fn reset_scratch(&self) -> io::Result<()> {
        if self.fault.is_none() {
            let _ = std::fs::remove_dir_all(&self.scratch);
            std::fs::create_dir_all(&self.scratch)?;
        }
        Ok(())
    }

    /// The expected state: loaded from its file when there is one (a database this tool made
    /// before), else new; and whether it was loaded.
    pub fn expected(&self, args: &Args) -> io::Result<(Expected, bool)> {
        let Some(path) = &self.expected else {
            return Ok((Expected::in_memory(args.keys(), args.max_value()), false));
        };
        if path.exists() {
            let exp = Expected::load(path)?;
            if args.keys.is_some_and(|k| k != exp.keys()) {
                eprintln!(
                    "stress: the expected state has {} keys per keyspace: using that",
                    exp.keys()
                );
            }
            return Ok((exp, true));
        }
        let holds_files = std::fs::read_dir(&self.db).is_ok_and(|mut d| d.next().is_some());
        if holds_files {
            return Err(io::Error::other(format!(
                "{} holds files but there is no expected state ({}): give an empty or new directory",
                self.db.display(),
                path.display()
            )));
        }
        Ok((
            Expected::create(path, args.keys(), args.max_value())?,
            false,
        ))
    }
}

/// The shared state of a run over an open database (`round`: how many opens of this process
/// came before, so scratch names stay apart); the lock-free workloads' accounts and range are
/// written or checked here.
pub fn context<'a>(
    args: &'a Args,
    exp: &'a Expected,
    stats: &'a Stats,
    layout: &Layout,
    options: Options,
    (db, ks): (Db, Vec<Keyspace>),
    round: u64,
) -> siftdb::Result<Ctx<'a>> {
    let (bank, excise, claims) = setup::lock_free_handles(&db)?;
    let ctx = Ctx {
        args,
        exp,
        stats,
        locks: KeyLocks::new(exp.keys()),
        db,
        ks,
        bank,
        excise,
        excise_state: crate::ops_excise::State::new(),
        claims,
        claims_state: crate::ops_claims::State::new(),
        options,
        db_path: layout.db.clone(),
        scratch: layout.scratch.clone(),
        fault: layout.fault.clone(),
        backup: Mutex::new(None),
        secondary: Mutex::new(None),
        scratch_ks: Mutex::new(None),
        resume_lock: Mutex::new(()),
        unique: AtomicU64::new(round << 40),
    };
    crate::ops_bank::init(&ctx.db, &ctx.bank, stats);
    crate::ops_excise::init(&ctx.db, &ctx.excise, &ctx.excise_state, stats);
    crate::ops_claims::init(&ctx.claims, &ctx.claims_state, stats);
    Ok(ctx)
}

/// Runs the worker threads (with the progress line, and the fault injector under `--faults`)
/// until they end.
pub fn run_threads(ctx: &Ctx, deadline: Option<Instant>, progress: Option<Instant>) {
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        if let Some(started) = progress {
            let done = &done;
            s.spawn(move || crate::stats::progress_loop(ctx.stats, done, started));
        }
        if let Some(fs) = &ctx.fault {
            s.spawn(|| faults::inject(fs, ctx.stats, &done));
        }
        let workers: Vec<_> = (0..ctx.args.threads)
            .map(|tid| s.spawn(move || ops::run_thread(ctx, tid, deadline)))
            .collect();
        for worker in workers {
            if worker.join().is_err() {
                ctx.stats
                    .mismatch("worker thread", "-", "-", "no panic", "the thread panicked");
            }
        }
        done.store(true, Relaxed);
    });
}

fn fail(what: &str, e: impl std::fmt::Display) -> ExitCode {
    eprintln!("stress: {what}: {e}");
    ExitCode::FAILURE
}

/// A stress run (`--faults` too): threads for `--duration` or `--ops_per_thread`, a full
/// verification, a close and reopen, another full verification; the last line says it all.
pub fn stress(args: &Args, seed: u64) -> ExitCode {
    let stats = Stats::new(seed);
    let layout = match Layout::new(args) {
        Ok(l) => l,
        Err(e) => return fail("cannot lay out the run's files", e),
    };
    let (exp, loaded) = match layout
        .expected(args)
        .and_then(|e| layout.reset_scratch().map(|()| e))
    {
        Ok(e) => e,
        Err(e) => return fail("expected state", e),
    };
    let options = setup::options(args, layout.fs(), setup::style(args, 0));
    let opened = match setup::open(&layout.db, &options) {
        Ok(o) => o,
        Err(e) => return fail("cannot open the database", e),
    };
    eprintln!(
        "stress: seed {seed}, {} threads, {} keys per keyspace, database {}{}",
        args.threads,
        exp.keys(),
        layout.db.display(),
        if args.faults {
            " (in memory, with faults)"
        } else {
            ""
        }
    );
    let mut verifications = 0;
    let started = Instant::now();
    let deadline = started + Duration::from_secs(args.duration);
    let mut rng = StdRng::seed_from_u64(crate::values::mix(seed ^ 0x0005_0f7e));
    let (mut options, mut opened) = (options, opened);
    // Under `--faults` the run is cut into rounds of 2 to 8 s, each ended by the scenario of
    // `faults::fail_with_empty_memtables` and a close and reopen (which must succeed).
    let mut round = 0;
    loop {
        let ctx = match context(args, &exp, &stats, &layout, options, opened, round) {
            Ok(ctx) => ctx,
            Err(e) => return fail("cannot open the lock-free workloads' keyspaces", e),
        };
        if loaded && round == 0 {
            verifications += full_pass(&ctx.checker(), &ctx.ks, "verification at start");
        }
        let round_end = if args.faults {
            deadline.min(Instant::now() + Duration::from_millis(rng.gen_range(2000..8000)))
        } else {
            deadline
        };
        run_threads(&ctx, Some(round_end), Some(started));
        if let Some(fs) = &ctx.fault {
            faults::disarm(fs);
            faults::recover(&ctx);
        }
        verifications += full_pass(&ctx.checker(), &ctx.ks, "final verification");
        check_lock_free(&ctx, "final verification");
        let failed_empty = ctx.fault.is_some()
            && !stats.stopped()
            && faults::fail_with_empty_memtables(&ctx, &mut rng);
        let last = stats.stopped() || Instant::now() >= deadline;
        if let Err(e) = close(ctx) {
            stats.mismatch("close", "-", "-", "success", &format!("error: {e}"));
            break;
        }
        if last {
            break;
        }
        let how = if failed_empty {
            ", a write failed with every memtable empty and resumed"
        } else {
            ""
        };
        eprintln!("stress: round {round} over{how}: closed, opening again");
        round += 1;
        options = setup::options(args, layout.fs(), setup::style(args, round as usize));
        opened = match setup::open(&layout.db, &options) {
            Ok(o) => o,
            Err(e) => {
                let what = format!("error: {e}");
                stats.mismatch("reopen after a round", "-", "-", "success", &what);
                return finish(args, &stats, verifications);
            }
        };
    }
    let checker = Checker {
        exp: &exp,
        stats: &stats,
        faults: args.faults,
    };
    let reopened = reopen_and_verify(args, &layout, &checker, round as usize + 1);
    verifications += match reopened {
        Ok(n) => n,
        Err(e) => {
            stats.mismatch(
                "close and reopen",
                "-",
                "-",
                "success",
                &format!("error: {e}"),
            );
            0
        }
    };
    finish(args, &stats, verifications)
}

/// The lock-free workloads' final checks (no thread running).
fn check_lock_free(ctx: &Ctx, what: &str) {
    let faults = ctx.fault.is_some();
    crate::ops_bank::check_all(ctx.stats, &ctx.bank, &format!("{what} (bank)"), faults);
    crate::ops_excise::check_all(
        ctx.stats,
        &ctx.excise,
        &ctx.excise_state,
        &format!("{what} (excise range)"),
        faults,
    );
    crate::ops_claims::check_all(
        ctx.stats,
        &ctx.claims,
        &ctx.claims_state,
        &format!("{what} (claims)"),
        faults,
    );
}

/// Closes the run's database and every handle the operations kept.
fn close(ctx: Ctx) -> siftdb::Result<()> {
    if let Some(db) = crate::ctx::lock(&ctx.secondary).take() {
        db.close()?;
    }
    drop(crate::ctx::lock(&ctx.backup).take());
    drop(crate::ctx::lock(&ctx.scratch_ks).take());
    ctx.db.close()
}

/// Opens the database again (in the next compaction style of `all`) and verifies every key.
fn reopen_and_verify(
    args: &Args,
    layout: &Layout,
    checker: &Checker,
    open: usize,
) -> siftdb::Result<u64> {
    let options = setup::options(args, layout.fs(), setup::style(args, open));
    let (db, ks) = setup::open(&layout.db, &options)?;
    let n = full_pass(checker, &ks, "verification after reopen");
    let (bank, excise, _) = setup::lock_free_handles(&db)?;
    let op = "verification after reopen (bank)";
    crate::ops_bank::check_all(checker.stats, &bank, op, checker.faults);
    // Every key of the excise range there, of any generation.
    let any = crate::ops_excise::State::any_generation();
    let op = "verification after reopen (excise range)";
    crate::ops_excise::check_all(checker.stats, &excise, &any, op, checker.faults);
    drop((bank, excise));
    drop(ks);
    db.close()?;
    Ok(n)
}

/// The summary on stderr, the last line on stdout, and the exit code.
fn finish(args: &Args, stats: &Stats, final_checks: u64) -> ExitCode {
    eprintln!("stress: operations: {}", stats.per_op_summary());
    eprintln!(
        "stress: {} write errors, {} read errors, {} resumes, {} faults injected, {} forced conflicts, {} transaction retries, {} keys checked by the final passes",
        stats.write_errors.load(Relaxed),
        stats.read_errors.load(Relaxed),
        stats.resumes.load(Relaxed),
        stats.faults.load(Relaxed),
        stats.forced_conflicts.load(Relaxed),
        stats.retries.load(Relaxed),
        final_checks,
    );
    let mismatches = stats.mismatches.load(Relaxed);
    if mismatches > 0 {
        eprintln!("stress: FAILED with seed {}", stats.seed);
    }
    println!(
        "stress: {} ops, {} threads, {} verifications, {} mismatches",
        stats.ops.load(Relaxed),
        args.threads,
        stats.verifications.load(Relaxed),
        mismatches
    );
    if mismatches > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// A crash test's worker: runs over the database and the expected-state file the driver made
/// until it is killed (or a mismatch stops it: then it exits non-zero).
pub fn worker(args: &Args, seed: u64) -> ExitCode {
    let stats = Stats::new(seed);
    let layout = match Layout::new(args) {
        Ok(l) => l,
        Err(e) => return fail("cannot lay out the run's files", e),
    };
    let exp = match layout.expected.as_deref().map(Expected::load) {
        Some(Ok(exp)) => exp,
        Some(Err(e)) => return fail("expected state", e),
        None => return fail("expected state", "a worker needs --db"),
    };
    if let Err(e) = layout.reset_scratch() {
        return fail("scratch directory", e);
    }
    let options = setup::options(args, None, setup::style(args, 0));
    let opened = match setup::open(&layout.db, &options) {
        Ok(o) => o,
        Err(e) => return fail("cannot open the database", e),
    };
    let ctx = match context(args, &exp, &stats, &layout, options, opened, 0) {
        Ok(ctx) => ctx,
        Err(e) => return fail("cannot open the lock-free workloads' keyspaces", e),
    };
    run_threads(&ctx, None, None);
    if stats.mismatches.load(Relaxed) > 0 {
        eprintln!("stress: worker FAILED with seed {seed}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
