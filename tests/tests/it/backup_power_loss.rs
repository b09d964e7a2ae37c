//! Power loss at every step of a backup, of a purge and of a restore (the fault-injecting file
//! system cuts the power at its k-th call, for every k until the operation runs through):
//! after restart — unsynced pages torn or scrambled — every earlier backup is whole (it
//! verifies, and restores to what it held), the interrupted backup exists whole or not at all
//! (whole if the call returned), the database itself is untouched, and the next backup or
//! restore works.

use std::path::Path;
use std::sync::Arc;

use siftdb::backup::{BackupEngine, BackupEngineOptions};
use siftdb::{Db, Options, WriteOptions};
use siftdb_tests::FaultFs;

fn options(fs: &FaultFs) -> Options {
    Options {
        write_buffer_size: 8 << 10,
        fs: Arc::new(fs.clone()),
        ..Options::default()
    }
}

fn engine(fs: &FaultFs) -> BackupEngine {
    let options = BackupEngineOptions {
        fs: Arc::new(fs.clone()),
        ..BackupEngineOptions::default()
    };
    BackupEngine::open_with(BACKUPS, options).expect("open the backup engine")
}

const DB: &str = "/db";
const BACKUPS: &str = "/backups";

fn key(i: usize) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

/// Writes keys `from..to` (value: the key's round), synced.
fn write(db: &Db, from: usize, to: usize, round: &str) {
    for i in from..to {
        db.put(key(i), round).expect("put");
    }
    db.write_opt(siftdb::WriteBatch::new(), &WriteOptions { sync: true })
        .expect("sync");
}

/// A database with `rounds` backups made: backup r (1-based) holds keys 0..200r, the first
/// 200 of them flushed into tables before backup 1. Then keys up to 200(rounds + 1) are
/// written (not backed up).
fn setup(fs: &FaultFs, rounds: usize) {
    let db = Db::open(DB, options(fs)).expect("open");
    let mut backups = engine(fs);
    for r in 1..=rounds {
        write(&db, 200 * (r - 1), 200 * r, "v");
        if r == 1 {
            db.flush().expect("flush");
        }
        assert_eq!(backups.create_new_backup(&db).expect("backup"), r as u32);
    }
    write(&db, 200 * rounds, 200 * (rounds + 1), "v");
    db.close().expect("close");
}

/// Restores backup `id` into a fresh directory and checks it holds keys 0..keys.
fn check_restores(fs: &FaultFs, backups: &BackupEngine, id: u32, keys: usize, what: &str) {
    backups
        .verify_backup(id)
        .unwrap_or_else(|e| panic!("{what}: backup {id} does not verify: {e}"));
    let target = Path::new("/restored").join(format!("{id}-{}", fs.calls()));
    backups
        .restore_db_from_backup(id, &target)
        .unwrap_or_else(|e| panic!("{what}: backup {id} does not restore: {e}"));
    let db = Db::open(&target, options(fs)).expect("open the restored database");
    assert_eq!(db.iter().count(), keys, "{what}: backup {id}'s keys");
    assert_eq!(
        db.get(key(keys - 1)).expect("get").as_deref(),
        Some(&b"v"[..])
    );
}

/// The ids of the backups there, oldest first.
fn ids(backups: &BackupEngine) -> Vec<u32> {
    backups
        .get_backup_info()
        .iter()
        .map(|b| b.backup_id)
        .collect()
}

/// Restarts after a power cut at call `k`: torn tails or scrambled pages, alternately.
fn restart(fs: &FaultFs, k: u64) {
    fs.crash();
    if k % 2 == 1 {
        fs.restart_scrambled(k);
    } else {
        fs.restart((k / 2 % 5) as usize * 7);
    }
}

/// Runs `step` with the power cut at the k-th call after it arms the cut (right before the
/// operation, after opening what it needs), for k = 0, 1, ... until the operation runs
/// through; `check` looks at the restarted file system (with whether the step returned `Ok`).
fn at_every_call(
    name: &str,
    rounds: usize,
    step: impl Fn(&FaultFs, &mut dyn FnMut()) -> bool,
    check: impl Fn(&FaultFs, bool, &str),
) {
    let mut k = 0u64;
    loop {
        let fs = FaultFs::new();
        setup(&fs, rounds);
        let mut before = None;
        let ok = step(&fs, &mut || {
            before = Some(fs.calls());
            fs.crash_call_in(k);
        });
        let before = before.expect("the step arms the cut");
        let ran_through = ok && fs.calls() - before <= k;
        restart(&fs, k);
        check(&fs, ok, &format!("{name}: power cut at call {k}"));
        if ran_through {
            break;
        }
        k += 1;
        assert!(k < 2000, "{name} never ran through");
    }
    println!("{name}: {k} power-loss points");
    assert!(k > 10, "{name}: too few calls to cut");
}

#[test]
fn power_loss_at_every_step_of_a_backup_keeps_earlier_backups_whole() {
    at_every_call(
        "backup",
        1,
        |fs, arm| {
            let db = Db::open(DB, options(fs)).expect("open");
            let mut backups = engine(fs);
            arm();
            let ok = backups.create_new_backup(&db).is_ok();
            drop(db);
            ok
        },
        |fs, ok, what| {
            let mut backups = engine(fs);
            let ids = ids(&backups);
            assert!(ids == [1] || ids == [1, 2], "{what}: backups {ids:?}");
            if ok {
                assert_eq!(ids, [1, 2], "{what}: an acknowledged backup was lost");
            }
            check_restores(fs, &backups, 1, 200, what);
            if ids.len() == 2 {
                check_restores(fs, &backups, 2, 400, what);
            }
            // The database is untouched, and backs up again.
            let db = Db::open(DB, options(fs)).expect("open the database");
            assert_eq!(db.iter().count(), 400, "{what}: the database");
            let id = backups.create_new_backup(&db).expect("backup again");
            check_restores(fs, &backups, id, 400, what);
        },
    );
}

#[test]
fn power_loss_at_every_step_of_a_purge_keeps_the_backups_it_keeps_whole() {
    at_every_call(
        "purge",
        3,
        |fs, arm| {
            let mut backups = engine(fs);
            arm();
            backups.purge_old_backups(1).is_ok()
        },
        |fs, ok, what| {
            let mut backups = engine(fs);
            let ids = ids(&backups);
            // Oldest first: what remains is a suffix of 1, 2, 3.
            assert!(
                [vec![1, 2, 3], vec![2, 3], vec![3]].contains(&ids),
                "{what}: backups {ids:?}"
            );
            if ok {
                assert_eq!(ids, [3], "{what}: the purge returned");
            }
            for id in ids {
                check_restores(fs, &backups, id, 200 * id as usize, what);
            }
            backups.purge_old_backups(1).expect("purge again");
            assert_eq!(backups.get_backup_info().len(), 1);
        },
    );
}

#[test]
fn power_loss_at_every_step_of_a_restore_leaves_no_database_and_restores_again() {
    at_every_call(
        "restore",
        2,
        |fs, arm| {
            let backups = engine(fs);
            arm();
            backups.restore_db_from_backup(2, "/target").is_ok()
        },
        |fs, ok, what| {
            let target = Path::new("/target");
            let current = fs.file_len(&target.join("CURRENT")).is_some();
            if ok {
                assert!(current, "{what}: a restore that returned left no CURRENT");
            }
            if !current {
                engine(fs)
                    .restore_db_from_backup(2, target)
                    .expect("restore again");
            }
            let db = Db::open(target, options(fs)).expect("open the restored database");
            assert_eq!(db.iter().count(), 400, "{what}");
            assert_eq!(db.get(key(399)).expect("get").as_deref(), Some(&b"v"[..]));
        },
    );
}
