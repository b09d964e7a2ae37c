//! Operations on the database's shape: flush, compact_range, set_options, and creating and
//! dropping the scratch keyspace (whose contents are checked while it lives, never after a
//! drop).

use std::collections::BTreeMap;

use rand::Rng;
use siftdb::{Error, Keyspace, KeyspaceOptions};

use crate::ctx::lock;
use crate::ops::Worker;
use crate::values::{key_name, KEYSPACES, SCRATCH_KEYSPACE};

/// The scratch keyspace while it exists, and what was written to it (`None` once a write
/// failed: then it is not checked).
pub struct Scratch {
    /// Its handle.
    pub handle: Keyspace,
    /// Its contents.
    pub contents: Option<BTreeMap<Vec<u8>, Vec<u8>>>,
}

/// A flush of one keyspace; one in four then rebuilds the filter indexes.
pub fn flush(w: &mut Worker) {
    let ks = w.pick_ks();
    if let Err(e) = w.ctx.ks[ks].flush() {
        return w.failed("flush", KEYSPACES[ks], "-", &e, true);
    }
    if w.rng.gen_ratio(1, 4)
        && let Err(e) = w.ctx.db.build_filter_index()
    {
        w.failed("build_filter_index", KEYSPACES[ks], "-", &e, false);
    }
}

/// A compaction of a run of up to 256 keys, or (one in five) of a whole keyspace.
pub fn compact_range(w: &mut Worker) {
    let ks = w.pick_ks();
    let handle = &w.ctx.ks[ks];
    let result = if w.rng.gen_ratio(1, 5) {
        handle.compact_range(None, None)
    } else {
        let (a, b) = w.pick_run(256);
        handle.compact_range(Some(&key_name(a)), Some(&key_name(b)))
    };
    if let Err(e) = result {
        w.failed("compact_range", KEYSPACES[ks], "-", &e, true);
    }
}

/// Options `set_options` changes, with the values it picks from.
const CHANGES: &[(&str, &[&str])] = &[
    (
        "write_buffer_size",
        &["262144", "1048576", "2097152", "4194304"],
    ),
    ("max_write_buffer_number", &["2", "3", "4"]),
    ("level0_file_num_compaction_trigger", &["2", "4", "8"]),
    ("level0_slowdown_writes_trigger", &["4", "8", "20"]),
    ("target_file_size_base", &["524288", "1048576", "4194304"]),
    (
        "max_bytes_for_level_base",
        &["2097152", "4194304", "16777216"],
    ),
    ("filter_bits_per_key", &["6", "10", "14"]),
    ("compression", &["none", "lz4", "zstd"]),
];

/// A live change of one option of one keyspace (or of the database's compaction threads).
pub fn set_options(w: &mut Worker) {
    let ks = w.pick_ks();
    let (name, value) = match w.rng.gen_range(0..CHANGES.len() + 2) {
        i if i < CHANGES.len() => {
            let (name, values) = CHANGES[i];
            (name, values[w.rng.gen_range(0..values.len())])
        }
        i if i == CHANGES.len() && KEYSPACES[ks] == "blob" => (
            "min_blob_size",
            ["64", "128", "1024"][w.rng.gen_range(0..3)],
        ),
        _ => (
            "max_background_jobs",
            ["2", "3", "4"][w.rng.gen_range(0..3)],
        ),
    };
    let result = if name == "max_background_jobs" {
        w.ctx.db.set_options(&[(name, value)])
    } else {
        w.ctx.ks[ks].set_options(&[(name, value)])
    };
    if let Err(e) = result {
        let what = format!("{name}={value}");
        w.failed("set_options", KEYSPACES[ks], &what, &e, true);
    }
}

/// Creates the scratch keyspace and writes 1 to 20 keys into it, or checks what it holds and
/// drops it.
pub fn keyspace(w: &mut Worker) {
    let ctx = w.ctx;
    let mut scratch = lock(&ctx.scratch_ks);
    match scratch.take() {
        Some(s) => check_and_drop(w, s),
        None => *scratch = create(w),
    }
}

fn create(w: &mut Worker) -> Option<Scratch> {
    let ctx = w.ctx;
    if crate::setup::has_scratch(&ctx.db) {
        // Left by a killed worker, or by a drop that failed.
        if let Err(e) = ctx.db.drop_keyspace(SCRATCH_KEYSPACE) {
            w.failed("drop_keyspace", SCRATCH_KEYSPACE, "-", &e, true);
            return None;
        }
    }
    let handle = match ctx
        .db
        .create_keyspace(SCRATCH_KEYSPACE, KeyspaceOptions::default())
    {
        Ok(h) => h,
        Err(e) => {
            w.failed("create_keyspace", SCRATCH_KEYSPACE, "-", &e, true);
            return None;
        }
    };
    let mut contents = BTreeMap::new();
    for _ in 0..w.rng.gen_range(1..=20) {
        let key = key_name(w.rng.gen_range(0..1000));
        let value = w.rng.r#gen::<u64>().to_le_bytes().to_vec();
        if let Err(e) = handle.put(&key, &value) {
            w.failed("put (scratch keyspace)", SCRATCH_KEYSPACE, "-", &e, true);
            return Some(Scratch {
                handle,
                contents: None,
            });
        }
        contents.insert(key, value);
    }
    Some(Scratch {
        handle,
        contents: Some(contents),
    })
}

fn check_and_drop(w: &mut Worker, s: Scratch) {
    let ctx = w.ctx;
    if let Some(contents) = &s.contents {
        let got: siftdb::Result<BTreeMap<Vec<u8>, Vec<u8>>> = s.handle.iter().collect();
        match got {
            Ok(got) if &got == contents => {}
            Ok(got) => {
                let want = format!("{} keys written", contents.len());
                let what = format!("{} keys, equal: {}", got.len(), &got == contents);
                ctx.stats.mismatch(
                    "scratch keyspace scan",
                    SCRATCH_KEYSPACE,
                    "(all)",
                    &want,
                    &what,
                );
            }
            Err(e) => w
                .checker()
                .error("scratch keyspace scan", SCRATCH_KEYSPACE, "(all)", &e),
        }
    }
    if let Err(e) = ctx.db.drop_keyspace(SCRATCH_KEYSPACE) {
        return w.failed("drop_keyspace", SCRATCH_KEYSPACE, "-", &e, true);
    }
    match s.handle.get(key_name(0)) {
        Err(Error::KeyspaceDropped(_)) => {}
        other => {
            let what = format!("{:?}", other.map(|v| v.map(|v| v.len())));
            ctx.stats.mismatch(
                "get after drop_keyspace",
                SCRATCH_KEYSPACE,
                "k00000000",
                "Error::KeyspaceDropped",
                &what,
            );
        }
    }
    if crate::setup::has_scratch(&ctx.db) {
        ctx.stats.mismatch(
            "keyspace_names after drop",
            SCRATCH_KEYSPACE,
            "-",
            "no scratch keyspace",
            "it is listed",
        );
    }
}
