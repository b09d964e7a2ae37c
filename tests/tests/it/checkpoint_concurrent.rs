//! Checkpoints taken while writers write: each checkpoint must open as an ordinary database that
//! holds a consistent cut of the writes — every write acknowledged before the `checkpoint` call
//! started, none issued after it returned, each batch (also across keyspaces) all or nothing,
//! and per writer a prefix of its sequence of writes (each writer writes in order, so a cut
//! through the commit order is a prefix of each writer's sequence).
//!
//! Tiny memtables and level sizes keep flushes and compactions running the whole time, so the
//! checkpoint's tables are linked while compactions delete their originals, and the WAL it copies
//! is cut while writers append to it.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use siftdb::{Db, KeyspaceOptions, Options, WriteBatch};

/// The keyspaces every writer writes (index = keyspace number in an [`Op`]).
const KEYSPACES: [&str; 3] = ["default", "a", "b"];
const WRITERS: usize = 3;
const CHECKPOINTS: usize = 5;
/// Keys each keyspace of a checkpoint gets after it is opened (to see that it keeps working).
const NEW_KEYS: u64 = 40;
/// A writer stops here at the latest (the test normally stops them sooner).
const MAX_OPS: u64 = 50_000;

fn options() -> Options {
    Options {
        write_buffer_size: 8 << 10,
        target_file_size_base: 8 << 10,
        max_bytes_for_level_base: 32 << 10,
        max_bytes_for_level_multiplier: 4.0,
        level0_file_num_compaction_trigger: 2,
        max_background_compactions: 2,
        ..Options::default()
    }
}

/// The named keyspaces get the same tiny tree as "default".
fn keyspace_options() -> KeyspaceOptions {
    KeyspaceOptions::from(&options())
}

/// One write of a batch: keyspace number, key, value (`None`: a delete).
type Op = (usize, Vec<u8>, Option<Vec<u8>>);

fn key(w: usize, i: u64, sub: Option<usize>) -> Vec<u8> {
    match sub {
        None => format!("w{w}:{i:07}").into_bytes(),
        Some(j) => format!("w{w}:{i:07}:{j}").into_bytes(),
    }
}

fn value(w: usize, i: u64, ks: usize) -> Vec<u8> {
    let mut v = format!("w{w} op{i} ks{ks} ").into_bytes();
    // ~100 bytes a value: an 8 KiB memtable holds a few dozen writes.
    v.resize(80 + (i % 41) as usize, b'a' + (i % 26) as u8);
    v
}

/// The `i`-th batch of writer `w`: a deterministic mix of single writes, batches in one
/// keyspace, batches across keyspaces, overwrites and deletes, so that the expected state after
/// any prefix of a writer's batches can be replayed.
fn batch_ops(w: usize, i: u64) -> Vec<Op> {
    let round = i / 5;
    match i % 5 {
        // A put into every keyspace in one batch.
        0 => (0..KEYSPACES.len())
            .map(|ks| (ks, key(w, i, None), Some(value(w, i, ks))))
            .collect(),
        // A single put into one keyspace.
        1 => {
            let ks = (round % 3) as usize;
            vec![(ks, key(w, i, None), Some(value(w, i, ks)))]
        }
        // Three puts into one keyspace.
        2 => {
            let ks = ((round + 1) % 3) as usize;
            (0..3)
                .map(|j| (ks, key(w, i, Some(j)), Some(value(w, i + j as u64, ks))))
                .collect()
        }
        // Across keyspaces: delete op i-3's key from every keyspace, put into "b".
        3 => {
            let mut ops: Vec<Op> = (0..KEYSPACES.len())
                .map(|ks| (ks, key(w, i - 3, None), None))
                .collect();
            ops.push((2, key(w, i, None), Some(value(w, i, 2))));
            ops
        }
        // A single overwrite of op i-3's key (a single put), and on odd rounds a single delete
        // of one of op i-2's keys.
        _ => {
            let ks = ((i - 3) / 5 % 3) as usize;
            if round.is_multiple_of(2) {
                vec![(ks, key(w, i - 3, None), Some(value(w, i, ks)))]
            } else {
                let ks2 = ((round + 1) % 3) as usize;
                vec![(ks2, key(w, i - 2, Some(1)), None)]
            }
        }
    }
}

/// What one writer's keys must be after its first `n` batches: keyspace number -> key -> value.
type WriterModel = Vec<BTreeMap<Vec<u8>, Vec<u8>>>;

fn apply(model: &mut WriterModel, ops: &[Op]) {
    for (ks, k, v) in ops {
        match v {
            Some(v) => model[*ks].insert(k.clone(), v.clone()),
            None => model[*ks].remove(k),
        };
    }
}

/// Progress of one writer: batches issued (a `write` call begun) and acknowledged (returned).
#[derive(Default)]
struct Progress {
    issued: AtomicU64,
    acked: AtomicU64,
}

fn writer(db: Db, w: usize, progress: Arc<Progress>, stop: Arc<AtomicBool>) {
    let handles: Vec<siftdb::Keyspace> = KEYSPACES
        .iter()
        .map(|n| db.keyspace(n).expect("writer keyspace"))
        .collect();
    let mut i = 0;
    while !stop.load(Ordering::Relaxed) && i < MAX_OPS {
        let ops = batch_ops(w, i);
        progress.issued.store(i + 1, Ordering::SeqCst);
        if let [(ks, k, v)] = ops.as_slice() {
            // Single writes through the handle (and `Db`'s own methods for "default").
            match (ks, v) {
                (0, Some(v)) => db.put(k, v),
                (0, None) => db.delete(k),
                (_, Some(v)) => handles[*ks].put(k, v),
                (_, None) => handles[*ks].delete(k),
            }
            .unwrap_or_else(|e| panic!("writer {w} op {i}: {e}"));
        } else {
            let mut b = WriteBatch::new();
            for (ks, k, v) in &ops {
                match (ks, v) {
                    (0, Some(v)) => b.put(k, v),
                    (_, Some(v)) => b.put_in(&handles[*ks], k, v),
                    (_, None) => b.delete_in(&handles[*ks], k),
                };
            }
            db.write(b)
                .unwrap_or_else(|e| panic!("writer {w} batch {i}: {e}"));
        }
        progress.acked.store(i + 1, Ordering::SeqCst);
        i += 1;
    }
}

/// Every key/value of every keyspace of `db` (by keyspace number), by iteration.
fn contents(db: &Db, ctx: &str) -> Vec<Vec<(Vec<u8>, Vec<u8>)>> {
    KEYSPACES
        .iter()
        .map(|name| {
            let ks = db
                .keyspace(name)
                .unwrap_or_else(|e| panic!("{ctx}: keyspace {name}: {e}"));
            ks.iter()
                .collect::<Result<Vec<_>, _>>()
                .unwrap_or_else(|e| panic!("{ctx}: iterate {name}: {e}"))
        })
        .collect()
}

/// Checks that `db` holds, for each writer, the state after some number of its batches in
/// `bounds[w]` (inclusive), and nothing else in the writers' keyspaces; returns that number per
/// writer. A torn batch (part of it applied), a hole in a writer's sequence, a lost
/// acknowledged write or a write from after the cut all leave no count that matches.
fn check_cut(db: &Db, bounds: &[(u64, u64)], ctx: &str) -> Vec<u64> {
    let all = contents(db, ctx);
    let mut found = Vec::new();
    for (w, &(lo, hi)) in bounds.iter().enumerate() {
        let prefix = format!("w{w}:").into_bytes();
        let actual: WriterModel = all
            .iter()
            .map(|kvs| {
                kvs.iter()
                    .filter(|(k, _)| k.starts_with(&prefix))
                    .cloned()
                    .collect()
            })
            .collect();
        let mut model: WriterModel = vec![BTreeMap::new(); KEYSPACES.len()];
        for i in 0..lo {
            apply(&mut model, &batch_ops(w, i));
        }
        let mut n = lo;
        loop {
            if model == actual {
                break;
            }
            assert!(
                n < hi,
                "{ctx}: writer {w}'s keys match no prefix of its batches from {lo} (acknowledged \
                 before the call) to {hi} (issued before it returned); it holds {} keys, the \
                 state after {lo} batches {}",
                actual.iter().map(BTreeMap::len).sum::<usize>(),
                model.iter().map(BTreeMap::len).sum::<usize>()
            );
            apply(&mut model, &batch_ops(w, n));
            n += 1;
        }
        found.push(n);
    }
    // Nothing but the writers' keys.
    for (ks, kvs) in all.iter().enumerate() {
        for (k, _) in kvs {
            let ok = (0..bounds.len()).any(|w| k.starts_with(format!("w{w}:").as_bytes()));
            assert!(ok, "{ctx}: stray key {k:?} in {}", KEYSPACES[ks]);
        }
    }
    // Point lookups agree with iteration (a sample of each keyspace).
    for (ks, kvs) in all.iter().enumerate() {
        let handle = db.keyspace(KEYSPACES[ks]).unwrap();
        for (k, v) in kvs.iter().step_by(7) {
            assert_eq!(handle.get(k).unwrap().as_ref(), Some(v), "{ctx}: get {k:?}");
        }
    }
    found
}

/// One checkpoint taken: where, and per writer (acknowledged before, issued after).
struct Taken {
    dir: std::path::PathBuf,
    bounds: Vec<(u64, u64)>,
    /// Whether keyspace "late" (created by the test between checkpoints) must be in it.
    has_late: bool,
}

#[test]
fn checkpoints_under_concurrent_writes_are_consistent_cuts() {
    let root = siftdb_tests::temp_dir();
    let db = Db::open(root.path().join("db"), options()).unwrap();
    for name in &KEYSPACES[1..] {
        db.create_keyspace(name, keyspace_options()).unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let progress: Vec<Arc<Progress>> = (0..WRITERS).map(|_| Arc::default()).collect();
    let threads: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (db, p, stop) = (db.clone(), Arc::clone(&progress[w]), Arc::clone(&stop));
            std::thread::spawn(move || writer(db, w, p, stop))
        })
        .collect();

    // Let the writers fill several memtables first (a memtable holds ~20 batches), so the first
    // checkpoint already has tables and compactions.
    let start = Instant::now();
    while progress.iter().any(|p| p.acked.load(Ordering::SeqCst) < 60)
        && start.elapsed() < Duration::from_secs(20)
    {
        std::thread::sleep(Duration::from_millis(5));
    }

    let mut taken = Vec::new();
    for c in 0..CHECKPOINTS {
        if c == 2 {
            // A keyspace created between checkpoints is in the later ones only.
            let late = db.create_keyspace("late", keyspace_options()).unwrap();
            late.put(b"late-key", b"late-value").unwrap();
        }
        let dir = root.path().join(format!("cp{c}"));
        let lo: Vec<u64> = progress
            .iter()
            .map(|p| p.acked.load(Ordering::SeqCst))
            .collect();
        db.checkpoint(&dir)
            .unwrap_or_else(|e| panic!("checkpoint {c}: {e}"));
        // The upper bound is what was *issued* before the call returned, not what was
        // acknowledged: a write the checkpoint holds is committed before its point, but its
        // writer may only wake up (and see the acknowledgement) after the call returned.
        let hi: Vec<u64> = progress
            .iter()
            .map(|p| p.issued.load(Ordering::SeqCst))
            .collect();
        taken.push(Taken {
            dir,
            bounds: lo.into_iter().zip(hi).collect(),
            has_late: c >= 2,
        });
        std::thread::sleep(Duration::from_millis(40));
    }
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().expect("writer thread");
    }
    let final_acked: Vec<u64> = progress
        .iter()
        .map(|p| p.acked.load(Ordering::SeqCst))
        .collect();
    let stats = db.stats();
    assert_eq!(stats.checkpoints, CHECKPOINTS as u64);
    assert!(
        stats.checkpoint_files_linked > 0,
        "checkpoints on the database's own file system should link tables: {stats:?}"
    );
    assert!(
        stats.flushes > 10 && stats.compactions > 0,
        "the test meant flushes and compactions to run during the checkpoints: {} flushes, {} \
         compactions",
        stats.flushes,
        stats.compactions
    );
    // The source itself holds every acknowledged write (nothing is in flight now).
    check_cut(&db, &exact_bounds(&final_acked), "source");
    drop(db);

    // Each checkpoint opens as an ordinary database — after the source compacted away many of
    // the files it linked — and holds a consistent cut.
    for (c, t) in taken.iter().enumerate() {
        let ctx = format!("checkpoint {c}");
        let cp = Db::open(&t.dir, options()).unwrap_or_else(|e| panic!("{ctx}: open: {e}"));
        let mut names = vec!["default", "a", "b"];
        if t.has_late {
            names.push("late");
        }
        assert_eq!(cp.keyspace_names(), names, "{ctx}");
        if t.has_late {
            let late = cp.keyspace("late").unwrap();
            assert_eq!(late.get(b"late-key").unwrap(), Some(b"late-value".to_vec()));
        }
        let cut = check_cut(&cp, &t.bounds, &ctx);
        eprintln!("{ctx}: cut {cut:?} within {:?}", t.bounds);

        // The checkpoint keeps working: writes in every keyspace (across them too), a flush,
        // a compaction, then a reopen.
        let handles: Vec<_> = KEYSPACES.iter().map(|n| cp.keyspace(n).unwrap()).collect();
        for i in 0..NEW_KEYS {
            let mut b = WriteBatch::new();
            for h in &handles {
                b.put_in(h, format!("x:{i:04}").as_bytes(), value(9, i, 0));
            }
            cp.write(b).unwrap();
        }
        for h in &handles {
            h.flush().unwrap();
        }
        handles[1].compact_range(None, None).unwrap();
        drop(handles);
        drop(cp);
        let cp = Db::open(&t.dir, options()).unwrap_or_else(|e| panic!("{ctx}: reopen: {e}"));
        // The writers' keys are exactly the same cut; the new keys are all there.
        let exact = exact_bounds(&cut);
        let all = contents(&cp, &ctx);
        for (ks, kvs) in all.iter().enumerate() {
            let new: Vec<_> = kvs.iter().filter(|(k, _)| k.starts_with(b"x:")).collect();
            assert_eq!(
                new.len(),
                NEW_KEYS as usize,
                "{ctx}: new keys in {}",
                KEYSPACES[ks]
            );
        }
        for h in KEYSPACES.iter().map(|n| cp.keyspace(n).unwrap()) {
            for i in 0..NEW_KEYS {
                h.delete(format!("x:{i:04}")).unwrap();
            }
        }
        check_cut(&cp, &exact, &format!("{ctx} after writes and reopen"));
    }

    // The source opens with every acknowledged write, untouched by the checkpoints' writes.
    let db = Db::open(root.path().join("db"), options()).unwrap();
    check_cut(&db, &exact_bounds(&final_acked), "source after reopen");
    assert!(db
        .keyspace("late")
        .unwrap()
        .get(b"x:0000")
        .unwrap()
        .is_none());
}

fn exact_bounds(n: &[u64]) -> Vec<(u64, u64)> {
    n.iter().map(|&n| (n, n)).collect()
}

/// On one file system a checkpoint hard-links the tables (the checkpoint's table files are the
/// source's inodes) and copies only the WAL; a flushed database's checkpoint links every table.
#[test]
fn checkpoint_links_tables_on_one_file_system() {
    use std::os::unix::fs::MetadataExt;

    let root = siftdb_tests::temp_dir();
    let db = Db::open(root.path().join("db"), options()).unwrap();
    let a = db.create_keyspace("a", keyspace_options()).unwrap();
    for i in 0..300u64 {
        db.put(key(0, i, None), value(0, i, 0)).unwrap();
        a.put(key(0, i, None), value(0, i, 1)).unwrap();
    }
    db.flush().unwrap();
    a.flush().unwrap();
    // Settled first: a compaction finishing after the checkpoint would delete a source table
    // the inode comparison below reads (it did, once, on a busy machine).
    db.wait_for_compaction().unwrap();
    // A tail only in the WAL, which the checkpoint must copy.
    db.put(b"tail", b"in the wal").unwrap();
    let cp = root.path().join("cp");
    db.checkpoint(&cp).unwrap();
    let stats = db.stats();
    assert_eq!(stats.checkpoints, 1);
    assert!(stats.checkpoint_files_linked > 0, "{stats:?}");
    assert!(
        stats.checkpoint_bytes_copied > 0,
        "the WAL is copied: {stats:?}"
    );

    let tables = |dir: &Path| -> Vec<std::fs::DirEntry> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(Result::unwrap)
            .filter(|e| e.file_name().to_string_lossy().ends_with(".sst"))
            .collect()
    };
    let cp_tables = tables(&cp);
    assert_eq!(
        cp_tables.len() as u64,
        stats.checkpoint_files_linked,
        "every table of the checkpoint is linked"
    );
    for e in &cp_tables {
        let in_cp = e.metadata().unwrap();
        let in_db = std::fs::metadata(root.path().join("db").join(e.file_name())).unwrap();
        assert_eq!(in_cp.ino(), in_db.ino(), "{:?} is a copy", e.file_name());
        assert!(in_cp.nlink() >= 2);
    }

    let copy = Db::open(&cp, options()).unwrap();
    assert_eq!(copy.get(b"tail").unwrap(), Some(b"in the wal".to_vec()));
    let ca = copy.keyspace("a").unwrap();
    for i in (0..300u64).step_by(13) {
        assert_eq!(copy.get(key(0, i, None)).unwrap(), Some(value(0, i, 0)));
        assert_eq!(ca.get(key(0, i, None)).unwrap(), Some(value(0, i, 1)));
    }
    // Compacting the copy rewrites its tables; the source's linked files must be unaffected.
    ca.compact_range(None, None).unwrap();
    copy.compact_range(None, None).unwrap();
    drop((ca, copy));
    for i in (0..300u64).step_by(13) {
        assert_eq!(db.get(key(0, i, None)).unwrap(), Some(value(0, i, 0)));
        assert_eq!(a.get(key(0, i, None)).unwrap(), Some(value(0, i, 1)));
    }
}
