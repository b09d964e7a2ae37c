//! The excise range: a lock-free workload of `KEYS` keys in their own keyspace, "excise", that
//! are present from the start and never deleted. Writers (one at a time, under `State::one`)
//! rewrite the whole range by ingesting a file that holds every key with `excise` over the
//! range (the tables the range covers leave in the same edit), or put a few keys, or flush.
//! Readers take no lock: a get, a snapshot's gets or an iterator must find every key, each a
//! well-formed value of that key of a generation no older than its last acknowledged write
//! before the read began, and no newer than the last write issued when the read ended.
//!
//! Generations come from one counter taken under the writers' mutex, so a key's generations
//! only grow with its writes. A write whose outcome is unknown (under `--faults`) may or may
//! not show; either way every key stays present (an ingestion is one edit, a put one key).

use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::Mutex;

use rand::Rng;
use siftdb::{IngestOptions, Keyspace, SstFileWriter, WriteBatch, WriteOptions};

use crate::ctx::lock;
use crate::ops::Worker;
use crate::stats::Stats;

/// The keyspace of the range.
pub const EXCISE_KEYSPACE: &str = "excise";
/// Keys in the range.
pub const KEYS: u32 = 64;
/// Every key lies in `FROM..TO` (the excise range).
const FROM: &[u8] = b"x";
const TO: &[u8] = b"y";

/// The key `i`.
pub fn key(i: u32) -> Vec<u8> {
    format!("x{i:04}").into_bytes()
}

/// Generation `generation` of key `i`: the key, the generation, and padding drawn from both.
fn value(i: u32, generation: u64) -> Vec<u8> {
    let mut v = format!("x{i:04}:{generation:016}:").into_bytes();
    let len = 40 + (crate::values::mix(generation ^ u64::from(i)) % 200) as usize;
    let fill = b'a' + (generation % 26) as u8;
    v.resize(len, fill);
    v
}

/// The generation `bytes` hold if they are exactly a value of key `i`.
fn generation_of(i: u32, bytes: &[u8]) -> Option<u64> {
    let text = bytes.get(..23)?;
    let generation: u64 = std::str::from_utf8(text.get(6..22)?).ok()?.parse().ok()?;
    (value(i, generation) == bytes).then_some(generation)
}

/// What the writers have done.
pub struct State {
    /// One writer at a time.
    one: Mutex<()>,
    /// The newest generation issued (a write in flight, or one whose outcome is unknown).
    issued: AtomicU64,
    /// Per key, the generation of its last acknowledged write.
    acked: Vec<AtomicU64>,
}

impl State {
    /// Nothing known yet (`init` reads the keyspace).
    pub fn new() -> State {
        State {
            one: Mutex::new(()),
            issued: AtomicU64::new(0),
            acked: (0..KEYS).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// A state any generation of every key passes (a check after a reopen: presence only).
    pub fn any_generation() -> State {
        let state = State::new();
        state.issued.store(u64::MAX, SeqCst);
        state
    }

    fn floors(&self) -> Vec<u64> {
        self.acked.iter().map(|a| a.load(SeqCst)).collect()
    }
}

/// At the start of a run (or a reopen): writes generation 1 of every key when none exists
/// (one batch), else reads every key (each must be there) and takes what it holds as known.
pub fn init(db: &siftdb::Db, ks: &Keyspace, state: &State, stats: &Stats) {
    let read: siftdb::Result<Vec<Option<Vec<u8>>>> = (0..KEYS).map(|i| ks.get(key(i))).collect();
    let got = match read {
        Ok(got) => got,
        Err(e) => {
            return stats.mismatch(
                "excise init",
                EXCISE_KEYSPACE,
                "-",
                "a read",
                &e.to_string(),
            )
        }
    };
    if got.iter().all(Option::is_none) {
        let mut batch = WriteBatch::new();
        for i in 0..KEYS {
            batch.put_in(ks, key(i), value(i, 1));
        }
        state.issued.store(1, SeqCst);
        match db.write_opt(batch, &WriteOptions { sync: true }) {
            Ok(()) => state.acked.iter().for_each(|a| a.store(1, SeqCst)),
            Err(e) => stats.mismatch(
                "excise init",
                EXCISE_KEYSPACE,
                "-",
                "success",
                &e.to_string(),
            ),
        }
        return;
    }
    for (i, v) in (0..KEYS).zip(got) {
        match v.as_deref().and_then(|v| generation_of(i, v)) {
            Some(g) => {
                state.acked[i as usize].store(g, SeqCst);
                state.issued.fetch_max(g, SeqCst);
            }
            None => {
                let name = String::from_utf8_lossy(&key(i)).into_owned();
                let what = v.map_or("absent".to_string(), |v| crate::values::describe(&v));
                stats.mismatch(
                    "excise check at open",
                    EXCISE_KEYSPACE,
                    &name,
                    "a value",
                    &what,
                );
            }
        }
    }
}

/// A writer: one in six puts 1 to 4 keys (a batch), one in twelve flushes the keyspace, the
/// others ingest a file of every key with `excise` over the range.
pub fn write(w: &mut Worker) {
    let ctx = w.ctx;
    let state = &ctx.excise_state;
    let _one = lock(&state.one);
    let generation = state.issued.load(SeqCst) + 1;
    match w.rng.gen_range(0..12) {
        0 => {
            if let Err(e) = ctx.excise.flush() {
                w.failed("excise range flush", EXCISE_KEYSPACE, "-", &e, true);
            }
        }
        1 | 2 => {
            let mut keys: Vec<u32> = (0..w.rng.gen_range(1..=4))
                .map(|_| w.rng.gen_range(0..KEYS))
                .collect();
            keys.sort_unstable();
            keys.dedup();
            let mut batch = WriteBatch::new();
            for &i in &keys {
                batch.put_in(&ctx.excise, key(i), value(i, generation));
            }
            state.issued.store(generation, SeqCst);
            let opts = w.write_options();
            match ctx.db.write_opt(batch, &opts) {
                Ok(()) => {
                    for &i in &keys {
                        state.acked[i as usize].store(generation, SeqCst);
                    }
                }
                Err(e) => w.failed("excise range put", EXCISE_KEYSPACE, "-", &e, true),
            }
        }
        _ => {
            let path = ctx.scratch_path("excise.sst");
            let built = SstFileWriter::create(&path, &ctx.options).and_then(|mut writer| {
                for i in 0..KEYS {
                    writer.put(key(i), value(i, generation))?;
                }
                writer.finish().map(|_| ())
            });
            if let Err(e) = built {
                ctx.remove_tree(&path);
                return w.failed("excise SstFileWriter", EXCISE_KEYSPACE, "-", &e, false);
            }
            let opts = IngestOptions {
                move_files: w.rng.gen_bool(0.5),
                excise: Some(FROM.to_vec()..TO.to_vec()),
                ..IngestOptions::default()
            };
            state.issued.store(generation, SeqCst);
            let ingested = ctx.excise.ingest_external_file(&[&path], &opts);
            ctx.remove_tree(&path);
            match ingested {
                Ok(()) => state.acked.iter().for_each(|a| a.store(generation, SeqCst)),
                Err(e) => w.failed(
                    "ingest_external_file (excise range)",
                    EXCISE_KEYSPACE,
                    "-",
                    &e,
                    true,
                ),
            }
        }
    }
}

/// Checks one key's read: present, a value of the key, of a generation in `floor..=ceiling`.
fn check(stats: &Stats, op: &str, i: u32, floor: u64, ceiling: u64, got: Option<&[u8]>) {
    stats.verifications.fetch_add(1, SeqCst);
    let generation = got.and_then(|v| generation_of(i, v));
    if generation.is_some_and(|g| g >= floor && g <= ceiling) {
        return;
    }
    let what = match (got, generation) {
        (None, _) => "absent".to_string(),
        (Some(v), None) => format!("unrecognised bytes [{}]", crate::values::describe(v)),
        (Some(_), Some(g)) => format!("generation {g}"),
    };
    let name = String::from_utf8_lossy(&key(i)).into_owned();
    stats.mismatch(
        op,
        EXCISE_KEYSPACE,
        &name,
        &format!("present, generation {floor} to {ceiling}"),
        &what,
    );
}

/// Checks a scan of the whole range: every key once, in order, each as `check` says.
fn check_scan(
    stats: &Stats,
    op: &str,
    floors: &[u64],
    ceiling: u64,
    entries: &[(Vec<u8>, Vec<u8>)],
) {
    let keys: Vec<Vec<u8>> = (0..KEYS).map(key).collect();
    let got: Vec<&Vec<u8>> = entries.iter().map(|(k, _)| k).collect();
    if got.len() != keys.len() || got.iter().zip(&keys).any(|(g, k)| *g != k) {
        let missing: Vec<String> = keys
            .iter()
            .filter(|k| !got.contains(k))
            .map(|k| String::from_utf8_lossy(k).into_owned())
            .collect();
        let what = format!("{} keys; missing: {}", got.len(), missing.join(" "));
        return stats.mismatch(
            op,
            EXCISE_KEYSPACE,
            "(range)",
            &format!("{KEYS} keys"),
            &what,
        );
    }
    for ((i, (_, v)), &floor) in (0..KEYS).zip(entries).zip(floors) {
        check(stats, op, i, floor, ceiling, Some(v));
    }
}

/// A lock-free reader: gets of 1 to 8 keys (most often), or every key through a snapshot, or
/// an iterator over the range (forward or backward).
pub fn read(w: &mut Worker) {
    let ctx = w.ctx;
    let state = &ctx.excise_state;
    let stats = ctx.stats;
    match w.rng.gen_range(0..6) {
        0 => {
            let floors = state.floors();
            let snap = ctx.db.snapshot();
            let got: Vec<siftdb::Result<Option<Vec<u8>>>> = (0..KEYS)
                .map(|i| snap.get_in(&ctx.excise, &key(i)))
                .collect();
            let ceiling = state.issued.load(SeqCst);
            for (i, got) in (0..KEYS).zip(got) {
                match got {
                    Ok(v) => check(
                        stats,
                        "excise range snapshot get",
                        i,
                        floors[i as usize],
                        ceiling,
                        v.as_deref(),
                    ),
                    Err(e) => {
                        return w.checker().error(
                            "excise range snapshot get",
                            EXCISE_KEYSPACE,
                            "-",
                            &e,
                        )
                    }
                }
            }
        }
        1 => {
            let floors = state.floors();
            let backward = w.rng.gen_bool(0.5);
            let it = ctx.excise.range(FROM..TO);
            let entries: siftdb::Result<Vec<(Vec<u8>, Vec<u8>)>> = if backward {
                it.rev().collect::<siftdb::Result<Vec<_>>>().map(|mut e| {
                    e.reverse();
                    e
                })
            } else {
                it.collect()
            };
            let ceiling = state.issued.load(SeqCst);
            let op = if backward {
                "excise range iterator (backward)"
            } else {
                "excise range iterator"
            };
            match entries {
                Ok(entries) => check_scan(stats, op, &floors, ceiling, &entries),
                Err(e) => w.checker().error(op, EXCISE_KEYSPACE, "-", &e),
            }
        }
        _ => {
            for _ in 0..w.rng.gen_range(1..=8) {
                let i = w.rng.gen_range(0..KEYS);
                let floor = state.acked[i as usize].load(SeqCst);
                let got = ctx.excise.get(key(i));
                let ceiling = state.issued.load(SeqCst);
                match got {
                    Ok(v) => check(stats, "excise range get", i, floor, ceiling, v.as_deref()),
                    Err(e) => {
                        return w
                            .checker()
                            .error("excise range get", EXCISE_KEYSPACE, "-", &e)
                    }
                }
            }
        }
    }
}

/// The whole range read with `get` and scanned (no writer running).
pub fn check_all(stats: &Stats, ks: &Keyspace, state: &State, op: &str, faults: bool) {
    let floors = state.floors();
    let ceiling = state.issued.load(SeqCst);
    for i in 0..KEYS {
        match ks.get(key(i)) {
            Ok(v) => check(stats, op, i, floors[i as usize], ceiling, v.as_deref()),
            Err(e) if faults && crate::ops::is_fault(&e) => {
                stats.read_errors.fetch_add(1, SeqCst);
            }
            Err(e) => stats.mismatch(op, EXCISE_KEYSPACE, "-", "a read", &e.to_string()),
        }
    }
    match ks.iter().collect::<siftdb::Result<Vec<_>>>() {
        Ok(entries) => check_scan(stats, &format!("{op} (scan)"), &floors, ceiling, &entries),
        Err(e) if faults && crate::ops::is_fault(&e) => {
            stats.read_errors.fetch_add(1, SeqCst);
        }
        Err(e) => stats.mismatch(op, EXCISE_KEYSPACE, "(scan)", "a scan", &e.to_string()),
    }
}
