//! Simulated power loss (the fault-injecting file system): at many moments during writes,
//! flushes and compactions the machine loses power; after restart, every write acknowledged as
//! synced must be there, and the recovered state must be a prefix of the write sequence. Half
//! the power losses keep a torn byte prefix of each file's unsynced data; the other half
//! scramble it as unordered page writeback does (each unsynced 4 KiB page kept, zeroed or
//! garbage on its own). Power also fails inside `Db::open` itself, at every call of a recovery.

use std::path::Path;
use std::sync::Arc;

use siftdb::{Db, Options, WriteBatch, WriteOptions};
use siftdb_tests::FaultFs;

fn options(fs: &FaultFs) -> Options {
    Options {
        write_buffer_size: 8 << 10,
        target_file_size_base: 8 << 10,
        max_bytes_for_level_base: 32 << 10,
        max_bytes_for_level_multiplier: 4.0,
        level0_file_num_compaction_trigger: 2,
        block_cache_capacity: 1 << 20,
        // Two compactions side by side: crashes land in either.
        max_background_compactions: 2,
        fs: Arc::new(fs.clone()),
        ..Options::default()
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:07}").into_bytes()
}

fn value(i: u32) -> Vec<u8> {
    let mut v = format!("value-{i}-").into_bytes();
    v.resize(60 + (i % 50) as usize, b'x');
    v
}

/// Writes until the file system has seen `crash_after` calls, then cuts the power.
/// Returns the number of writes acknowledged and the highest index acknowledged as synced.
fn run_until_crash(fs: &FaultFs, dir: &Path, crash_after: u64) -> (u32, Option<u32>) {
    let db = Db::open(dir, options(fs)).expect("open before the crash");
    let mut acked = 0u32;
    let mut synced = None;
    let mut i = 0u32;
    while fs.calls() < crash_after && i < 20_000 {
        let sync = i.is_multiple_of(7);
        let result = if i.is_multiple_of(5) {
            // A batch of three consecutive keys: all or nothing.
            let mut b = WriteBatch::new();
            for j in i..i + 3 {
                b.put(key(j), value(j));
            }
            let r = db.write_opt(b, &WriteOptions { sync });
            if r.is_ok() {
                i += 3;
            }
            r
        } else {
            let r = db.write_opt(
                {
                    let mut b = WriteBatch::new();
                    b.put(key(i), value(i));
                    b
                },
                &WriteOptions { sync },
            );
            if r.is_ok() {
                i += 1;
            }
            r
        };
        if result.is_err() {
            break;
        }
        acked = i;
        if sync {
            synced = Some(i - 1);
        }
    }
    fs.crash();
    drop(db);
    (acked, synced)
}

fn check_recovery(fs: &FaultFs, dir: &Path, acked: u32, synced: Option<u32>) -> u32 {
    let db = Db::open(dir, options(fs)).expect("open after power loss");
    // The recovered state is a prefix: keys 0..n, nothing after.
    let present: Vec<u32> = db
        .iter()
        .map(|r| r.expect("iterate after power loss"))
        .map(|(k, v)| {
            let i: u32 = std::str::from_utf8(&k[3..]).unwrap().parse().unwrap();
            assert_eq!(v, value(i), "wrong value for key {i}");
            i
        })
        .collect();
    let n = present.len() as u32;
    assert_eq!(
        present,
        (0..n).collect::<Vec<_>>(),
        "holes in the recovered state"
    );
    assert!(
        n <= acked,
        "recovered {n} writes but only {acked} were acknowledged"
    );
    if let Some(s) = synced {
        assert!(n > s, "synced write {s} lost (recovered {n})");
    }
    // New writes work.
    db.put(b"zz-after", b"ok").expect("write after recovery");
    assert_eq!(db.get(b"zz-after").unwrap(), Some(b"ok".to_vec()));
    n
}

#[test]
fn power_loss_keeps_every_synced_write_and_a_prefix() {
    let points: u64 = siftdb_tests::env_count("SIFTDB_POWER_LOSS_POINTS", 60);
    let mut total_recovered = 0u64;
    for p in 0..points {
        let fs = FaultFs::new();
        let dir = Path::new("/db");
        // Crash points spread over the run: early (during the first flushes) to late (many
        // compactions); the torn tail varies too.
        let crash_after = 50 + p * 97 % 4000 + p * 13;
        let (acked, synced) = run_until_crash(&fs, dir, crash_after);
        power_on(&fs, p);
        total_recovered += u64::from(check_recovery(&fs, dir, acked, synced));
    }
    println!(
        "power-loss crash points: {points} ({} with scrambled pages), lost synced writes: 0, recovered writes: {total_recovered}",
        points / 2
    );
}

/// Many crash points of one long run: the file system is copied at each point (the copy keeps
/// whatever background flushes and compactions were in the middle of) and the copy loses power.
#[test]
fn power_loss_at_many_points_of_one_run() {
    let points: u32 = siftdb_tests::env_count("SIFTDB_POWER_LOSS_RUN_POINTS", 2000) as u32;
    let fs = FaultFs::new();
    let dir = Path::new("/db");
    let db = Db::open(dir, options(&fs)).unwrap();
    let mut synced = None;
    let mut checked = 0u32;
    let mut i = 0u32;
    while checked < points {
        let sync = i.is_multiple_of(11);
        let mut b = WriteBatch::new();
        b.put(key(i), value(i));
        db.write_opt(b, &WriteOptions { sync }).unwrap();
        if sync {
            synced = Some(i);
        }
        i += 1;
        if i.is_multiple_of(3) {
            let copy = fs.deep_clone();
            copy.crash();
            power_on(&copy, u64::from(checked));
            check_recovery(&copy, dir, i, synced);
            checked += 1;
        }
    }
    println!(
        "power-loss crash points: {checked} (one run of {i} writes; {} with scrambled pages), lost synced writes: 0",
        checked / 2
    );
}

/// Power back on after crash point `p`: odd points scramble the unsynced pages, even ones keep
/// a torn prefix of each file's unsynced bytes (of a length that varies with `p`).
fn power_on(fs: &FaultFs, p: u64) {
    if p % 2 == 1 {
        fs.restart_scrambled(p);
    } else {
        fs.restart((p / 2 % 5) as usize * 7);
    }
}

/// Power fails at every call of a recovery: for several databases left by a power loss (WALs
/// to replay, tables, compactions cut short), `Db::open` loses power at its k-th file-system
/// call, for every k up to the calls a whole open makes, then the machine restarts (unsynced
/// pages scrambled or torn) and opens again: every synced write is there, and a prefix.
#[test]
fn power_loss_inside_open_at_every_call() {
    let states = siftdb_tests::env_count("SIFTDB_OPEN_CRASH_STATES", 8);
    let mut points = 0u64;
    let mut opens_that_finished = 0u64;
    for state in 0..states {
        let fs = FaultFs::new();
        let dir = Path::new("/db");
        let (acked, synced) = run_until_crash(&fs, dir, 400 + state * 1300);
        power_on(&fs, state);
        // How many calls a whole open makes (its background work after it returns may add a
        // few: a margin covers them).
        let probe = fs.deep_clone();
        let before = probe.calls();
        drop(Db::open(dir, options(&probe)).expect("open after power loss"));
        let open_calls = probe.calls() - before;
        for k in 0..open_calls + 8 {
            let copy = fs.deep_clone();
            copy.crash_call_in(k);
            match Db::open(dir, options(&copy)) {
                Ok(db) => {
                    opens_that_finished += 1;
                    copy.crash();
                    drop(db);
                }
                Err(_) => copy.crash(),
            }
            power_on(&copy, k + state);
            check_recovery(&copy, dir, acked, synced);
            points += 1;
        }
    }
    println!(
        "power-loss crash points inside open: {points} ({states} databases, {opens_that_finished} opens finished before the power went), lost synced writes: 0"
    );
}
