//! Reads of other views of the database: a snapshot read after later writes, a checkpoint and
//! a restored backup opened and compared on a run of keys, and a read-only instance beside the
//! writer that catches up with it.

use std::ops::Bound;

use rand::Rng;
use siftdb::backup::{BackupEngine, BackupEngineOptions};
use siftdb::{Db, Keyspace};

use crate::ctx::lock;
use crate::expected::{id_of, is_present, Allowed, PENDING_NONE};
use crate::ops::Worker;
use crate::values::{decode_id, key_name, KEYSPACES};

/// A snapshot of a run of 1 to 16 keys taken under their locks; the locks released, 1 to 3
/// keys of the run overwritten; then the run read through the snapshot (gets, pinned gets,
/// and on "default" a range scan) must show the states recorded when it was taken.
pub fn snapshot(w: &mut Worker) {
    let ctx = w.ctx;
    let _gate = ctx.locks.gate_shared();
    let ks = w.pick_ks();
    let (a, b) = w.pick_run(16);
    let (snap, recorded) = {
        let _held = ctx.locks.lock_run(ks, a, b);
        let snap = ctx.db.snapshot();
        let recorded: Vec<Allowed> = (a..b).map(|k| ctx.exp.allowed(ks, k)).collect();
        (snap, recorded)
    };
    for _ in 0..w.rng.gen_range(1..=3) {
        let key = w.rng.gen_range(a..b);
        let _held = ctx.locks.lock(&[(ks, key)]);
        let state = w.new_value(ks);
        let (name, value) = (key_name(key), w.bytes_of(ks, key, state));
        w.write("put after a snapshot", &[(ks, key, state)], || {
            ctx.ks[ks].put(&name, &value)
        });
    }
    let handle = &ctx.ks[ks];
    for (key, allowed) in (a..b).zip(&recorded) {
        let op = "snapshot get";
        match w.rng.gen_bool(0.5) {
            true => match snap.get_in(handle, &key_name(key)) {
                Ok(v) => w.checker().value(op, ks, key, allowed, v.as_deref()),
                Err(e) => w.checker().error(op, KEYSPACES[ks], "-", &e),
            },
            false => match snap.get_pinned_in(handle, key_name(key)) {
                Ok(v) => w
                    .checker()
                    .value("snapshot get_pinned", ks, key, allowed, v.as_deref()),
                Err(e) => w.checker().error(op, KEYSPACES[ks], "-", &e),
            },
        }
    }
    if ks == 0 {
        let bounds = (Bound::Included(key_name(a)), Bound::Excluded(key_name(b)));
        let it = snap.range::<Vec<u8>, _>(bounds.clone());
        let entries: siftdb::Result<Vec<(Vec<u8>, Vec<u8>)>> = if w.rng.gen_bool(0.5) {
            it.collect()
        } else {
            it.rev().collect::<siftdb::Result<Vec<_>>>().map(|mut e| {
                e.reverse();
                e
            })
        };
        match entries {
            Ok(entries) => {
                let allowed = |key: u32| recorded[(key - a) as usize].clone();
                w.checker()
                    .scan("snapshot range", ks, (a, b), &bounds, &entries, &allowed);
            }
            Err(e) => w.checker().error("snapshot range", KEYSPACES[ks], "-", &e),
        }
    }
}

/// Reads the run `a..b` of keyspace `ks` from another database `copy` and compares it with the
/// states recorded when the copy was made.
fn compare_copy(
    w: &Worker,
    op: &str,
    copy: &Db,
    ks: usize,
    (a, b): (u32, u32),
    recorded: &[Allowed],
) {
    let handle = match copy.keyspace(KEYSPACES[ks]) {
        Ok(h) => h,
        Err(e) => return w.failed(op, KEYSPACES[ks], "-", &e, false),
    };
    for (key, allowed) in (a..b).zip(recorded) {
        match handle.get(key_name(key)) {
            Ok(v) => w.checker().value(op, ks, key, allowed, v.as_deref()),
            Err(e) => return w.checker().error(op, KEYSPACES[ks], "-", &e),
        }
    }
}

/// A checkpoint taken while a run of 1 to 32 keys is locked, opened (read-only, or one in three
/// read-write) and compared on the run.
pub fn checkpoint(w: &mut Worker) {
    let ctx = w.ctx;
    let ks = w.pick_ks();
    let (a, b) = w.pick_run(32);
    let dir = ctx.scratch_path("checkpoint");
    // One in four with file deletions disabled meanwhile (as a copying backup tool would).
    let paused = w.rng.gen_ratio(1, 4) && ctx.db.disable_file_deletions().is_ok();
    let recorded: Vec<Allowed> = {
        let _held = ctx.locks.lock_run(ks, a, b);
        let made = ctx.db.checkpoint(&dir);
        if paused {
            let _ = ctx.db.enable_file_deletions();
        }
        if let Err(e) = made {
            ctx.remove_tree(&dir);
            return w.failed("checkpoint", KEYSPACES[ks], "-", &e, true);
        }
        (a..b).map(|k| ctx.exp.allowed(ks, k)).collect()
    };
    let opened = if w.rng.gen_ratio(1, 3) {
        Db::open(&dir, ctx.options.clone())
    } else {
        Db::open_read_only(&dir, ctx.options.clone())
    };
    match opened {
        Ok(copy) => {
            compare_copy(w, "checkpoint read", &copy, ks, (a, b), &recorded);
            let _ = copy.close();
        }
        Err(e) => w.failed("open of a checkpoint", KEYSPACES[ks], "-", &e, false),
    }
    ctx.remove_tree(&dir);
}

/// A backup made while a run of 1 to 32 keys is locked, restored into a new directory, opened
/// read-only and compared on the run; only the two newest backups are kept. One in three
/// first damages the new backup's metadata (a flipped byte), opens the backup engine again
/// (which must list the backup as corrupt and keep its files), repairs the byte and opens the
/// engine once more: the backup must then verify and restore as if nothing happened.
pub fn backup(w: &mut Worker) {
    let ctx = w.ctx;
    let mut engine = lock(&ctx.backup);
    if engine.is_none() {
        match open_backup_engine(ctx) {
            Ok(e) => *engine = Some(e),
            Err(e) => return w.failed("BackupEngine::open", "-", "-", &e, false),
        }
    }
    let ks = w.pick_ks();
    let (a, b) = w.pick_run(32);
    let (id, recorded) = {
        let Some(engine) = engine.as_mut() else {
            return;
        };
        let _held = ctx.locks.lock_run(ks, a, b);
        match engine.create_new_backup(&ctx.db) {
            Ok(id) => (
                id,
                (a..b).map(|k| ctx.exp.allowed(ks, k)).collect::<Vec<_>>(),
            ),
            Err(e) => return w.failed("create_new_backup", KEYSPACES[ks], "-", &e, false),
        }
    };
    if w.rng.gen_ratio(1, 3) && !damage_and_repair(w, &mut engine, id) {
        return;
    }
    let Some(engine) = engine.as_mut() else {
        return;
    };
    let dir = ctx.scratch_path("restore");
    let restored = engine
        .verify_backup(id)
        .and_then(|()| engine.restore_db_from_backup(id, &dir))
        .and_then(|()| Db::open_read_only(&dir, ctx.options.clone()));
    match restored {
        Ok(copy) => compare_copy(w, "restored backup read", &copy, ks, (a, b), &recorded),
        Err(e) => w.failed("restore of a backup", KEYSPACES[ks], "-", &e, false),
    }
    ctx.remove_tree(&dir);
    if let Err(e) = engine.purge_old_backups(2) {
        w.failed("purge_old_backups", "-", "-", &e, false);
    }
}

fn open_backup_engine(ctx: &crate::ctx::Ctx) -> siftdb::Result<BackupEngine> {
    let mut opts = BackupEngineOptions::default();
    if let Some(fs) = &ctx.fault {
        opts.fs = std::sync::Arc::new(fs.clone());
    }
    BackupEngine::open_with(ctx.scratch.join("backups"), opts)
}

/// Flips bit 6 of the middle byte of backup `id`'s metadata file (again to repair it); false
/// if there is no such file.
fn flip_meta(ctx: &crate::ctx::Ctx, id: u32) -> bool {
    let path = ctx
        .scratch
        .join("backups")
        .join("meta")
        .join(id.to_string());
    match &ctx.fault {
        Some(fs) => {
            let len = fs.file_len(&path).unwrap_or(0);
            len > 0 && fs.flip_bit(&path, len / 2, 6)
        }
        None => match std::fs::read(&path) {
            Ok(mut bytes) if !bytes.is_empty() => {
                let middle = bytes.len() / 2;
                bytes[middle] ^= 0x40;
                std::fs::write(&path, bytes).is_ok()
            }
            _ => false,
        },
    }
}

/// Damages backup `id`'s metadata, reopens the engine (it must list `id` as corrupt), repairs
/// the metadata and reopens the engine again (`id` must be listed as a good backup). False
/// when the backup cannot be restored for a reason already reported (or an injected fault).
fn damage_and_repair(w: &Worker, engine: &mut Option<BackupEngine>, id: u32) -> bool {
    let ctx = w.ctx;
    // The engine caches what it read: close it before touching its files.
    *engine = None;
    if !flip_meta(ctx, id) {
        let what = format!("meta/{id}");
        ctx.stats.mismatch(
            "backup metadata",
            "-",
            &what,
            "the file exists",
            "it does not",
        );
        return false;
    }
    let damaged = open_backup_engine(ctx);
    // Repaired whatever the open did.
    let repaired = flip_meta(ctx, id);
    match damaged {
        Ok(damaged) => {
            let corrupt = damaged.get_corrupted_backups();
            if !corrupt.contains(&id) {
                let what = format!("corrupted backups {corrupt:?}");
                ctx.stats.mismatch(
                    "BackupEngine::open with a damaged backup",
                    "-",
                    &format!("backup {id}"),
                    &format!("backup {id} listed as corrupt"),
                    &what,
                );
                return false;
            }
        }
        Err(e) => {
            w.failed(
                "BackupEngine::open with a damaged backup",
                "-",
                "-",
                &e,
                false,
            );
            return false;
        }
    }
    if !repaired {
        return false;
    }
    match open_backup_engine(ctx) {
        Ok(e) => {
            let listed = e.get_backup_info().iter().any(|i| i.backup_id == id);
            let corrupt = e.get_corrupted_backups();
            *engine = Some(e);
            if !listed || corrupt.contains(&id) {
                let what = format!("listed: {listed}, corrupted backups {corrupt:?}");
                ctx.stats.mismatch(
                    "BackupEngine::open after the repair",
                    "-",
                    &format!("backup {id}"),
                    "the backup listed, not corrupt",
                    &what,
                );
                return false;
            }
            true
        }
        Err(e) => {
            w.failed("BackupEngine::open after the repair", "-", "-", &e, false);
            false
        }
    }
}

/// The read-only instance catches up with the writer (or opens: the first time, and one in four
/// afresh), then reads a run of 1 to 32 keys without their locks. A key no write touched
/// meanwhile must read exactly as expected; any other must read as absent, or as a well-formed
/// value of the key no older than the state it had before the catch-up (ids grow with time)
/// and no newer than the newest id given. Under `--faults` only the last rule holds (see
/// below).
pub fn secondary(w: &mut Worker) {
    let ctx = w.ctx;
    let _gate = ctx.locks.gate_shared();
    let mut secondary = lock(&ctx.secondary);
    let ks = w.pick_value_ks();
    let (a, b) = w.pick_run(32);
    let before: Vec<(u64, bool)> = (a..b)
        .map(|k| (ctx.exp.committed(ks, k), ctx.exp.is_certain(ks, k)))
        .collect();
    // One in four opens afresh (an open reads the manifest, then the WAL: a keyspace the writer
    // creates in between must not fail it).
    if w.rng.gen_ratio(1, 4)
        && let Some(db) = secondary.take()
        && let Err(e) = db.close()
    {
        w.failed("close of the read-only instance", "-", "-", &e, false);
    }
    let caught_up = match secondary.as_ref() {
        Some(db) => db.try_catch_up_with_primary(),
        None => {
            let mut options = ctx.options.clone();
            options.max_open_files = -1;
            Db::open_read_only(&ctx.db_path, options).map(|db| *secondary = Some(db))
        }
    };
    let handle = caught_up.and_then(|()| {
        secondary
            .as_ref()
            .map_or(Err(siftdb::Error::Closed), |db| db.keyspace(KEYSPACES[ks]))
    });
    let handle: Keyspace = match handle {
        Ok(h) => h,
        Err(e) => return w.failed("try_catch_up_with_primary", KEYSPACES[ks], "-", &e, false),
    };
    let got: Vec<siftdb::Result<Option<Vec<u8>>>> =
        (a..b).map(|k| handle.get(key_name(k))).collect();
    for ((key, (c0, certain)), got) in (a..b).zip(before).zip(got) {
        let got = match got {
            Ok(v) => v,
            Err(e) => {
                return w
                    .checker()
                    .error("read-only instance get", KEYSPACES[ks], "-", &e)
            }
        };
        // Under `--faults` a failed sync drops the WAL pages of acknowledged writes that the
        // writer still holds in memory (until `resume` flushes them): the read-only instance,
        // which reads only files, may then be behind them. So there every version passes.
        let certain = certain && ctx.fault.is_none();
        let unchanged = certain
            && ctx.exp.is_certain(ks, key)
            && ctx.exp.committed(ks, key) == c0
            && ctx.exp.pending(ks, key) == PENDING_NONE;
        let allowed = if unchanged {
            Allowed::exactly(c0)
        } else {
            loose(w, ks, key, c0, certain, got.as_deref())
        };
        w.checker()
            .value("read-only instance get", ks, key, &allowed, got.as_deref());
    }
}

/// The states a key written meanwhile may show on the read-only instance: what it shows if
/// that is absent or a version of the key in the allowed id range; else the state before.
fn loose(
    w: &Worker,
    ks: usize,
    key: u32,
    before: u64,
    certain: bool,
    got: Option<&[u8]>,
) -> Allowed {
    let max = w.ctx.exp.max_value();
    let shown = match got {
        None => Some(0),
        Some(v) => decode_id(ks, key, max, v),
    };
    let lowest = if certain && before != 0 {
        id_of(before)
    } else {
        0
    };
    match shown {
        Some(0) => Allowed::exactly(0),
        Some(id) if id >= lowest && id < w.ctx.exp.id_limit() && is_present(id) => {
            Allowed::exactly(id)
        }
        _ => Allowed::exactly(before),
    }
}
