//! Bulk changes of a locked run of keys: ingestion of a table file built with `SstFileWriter`
//! (plain, over a range deletion in the file, or replacing the run with `excise`), and
//! `delete_files_in_range` followed by a `delete_range` of the same run.

use rand::Rng;
use siftdb::{IngestOptions, SstFileWriter};

use crate::expected::PENDING_ANY;
use crate::ops::{Change, Worker};
use crate::values::{key_name, KEYSPACES};

/// Builds a table file over a locked run of 1 to 32 keys (each key: a put, a delete, or left
/// out) and ingests it; with `excise` (one in three) the keys left out disappear, as they do
/// under a range deletion written into the file (one in four of the others).
pub fn ingest(w: &mut Worker) {
    let ctx = w.ctx;
    let ks = w.pick_ks();
    let (a, b) = w.pick_run(32);
    let _held = ctx.locks.lock_run(ks, a, b);
    let one_in = ctx.args.excise_one_in;
    let excise = one_in > 0 && w.rng.gen_ratio(1, one_in);
    let range_deletion = !excise && w.rng.gen_ratio(1, 4);
    let path = ctx.scratch_path("ingest.sst");
    let range_name = format!(
        "{}..{}",
        String::from_utf8_lossy(&key_name(a)),
        String::from_utf8_lossy(&key_name(b))
    );
    let built = build_file(w, ks, (a, b), &path, range_deletion, excise);
    let (changes, entries) = match built {
        Ok(built) => built,
        Err(e) => {
            ctx.remove_tree(&path);
            return w.failed("SstFileWriter", KEYSPACES[ks], &range_name, &e, false);
        }
    };
    let opts = IngestOptions {
        move_files: w.rng.gen_bool(0.5),
        excise: excise.then(|| key_name(a)..key_name(b)),
        ..IngestOptions::default()
    };
    let files: Vec<&std::path::Path> = if entries { vec![&path] } else { Vec::new() };
    let op = if excise {
        "ingest_external_file (excise)"
    } else {
        "ingest_external_file"
    };
    if entries || excise {
        w.write(op, &changes, || {
            ctx.ks[ks].ingest_external_file(&files, &opts)
        });
    }
    ctx.remove_tree(&path);
}

/// Writes the file; returns the run's new states and whether the file was written (it needs
/// an entry or a range deletion).
fn build_file(
    w: &mut Worker,
    ks: usize,
    (a, b): (u32, u32),
    path: &std::path::Path,
    range_deletion: bool,
    excise: bool,
) -> siftdb::Result<(Vec<Change>, bool)> {
    let mut changes = Vec::new();
    let mut pending = Vec::new();
    for key in a..b {
        match w.rng.gen_range(0..10) {
            0..=5 => {
                let state = w.new_value(ks);
                pending.push((key, Some(w.bytes_of(ks, key, state))));
                changes.push((ks, key, state));
            }
            6 => {
                pending.push((key, None));
                changes.push((ks, key, w.new_deletion()));
            }
            _ if range_deletion || excise => changes.push((ks, key, w.new_deletion())),
            _ => {}
        }
    }
    if pending.is_empty() && !range_deletion {
        return Ok((changes, false));
    }
    let mut writer = SstFileWriter::create(path, &w.ctx.options)?;
    if range_deletion {
        writer.delete_range(key_name(a), key_name(b))?;
    }
    for (key, value) in pending {
        match value {
            Some(v) => writer.put(key_name(key), v)?,
            None => writer.delete(key_name(key))?,
        }
    }
    writer.finish()?;
    Ok((changes, true))
}

/// `delete_files_in_range` over a locked run of 8 to 64 keys (the tables wholly inside it go,
/// which may bring older versions of its keys back), then `delete_range` over the run: every
/// key of it is deleted. Between the two any version may show, so the keys are marked so until
/// the range deletion is acknowledged; the gate keeps snapshot and read-only readers, which
/// look without the keys' locks, out of that window.
pub fn delete_files_in_range(w: &mut Worker) {
    let ctx = w.ctx;
    let _gate = ctx.locks.gate_exclusive();
    let ks = w.pick_ks();
    let (a, b) = w.pick_run(64);
    let _held = ctx.locks.lock_run(ks, a, b);
    let any: Vec<Change> = (a..b).map(|k| (ks, k, PENDING_ANY)).collect();
    w.begin(&any);
    let handle = &ctx.ks[ks];
    let deleted = handle.delete_files_in_range(key_name(a), key_name(b - 1));
    let changes: Vec<Change> = (a..b).map(|k| (ks, k, w.new_deletion())).collect();
    let result = deleted.and_then(|_| handle.delete_range(key_name(a), key_name(b)));
    w.complete("delete_files_in_range + delete_range", &changes, result);
}
