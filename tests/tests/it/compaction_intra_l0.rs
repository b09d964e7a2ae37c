//! Intra-L0 compaction: once L1 is large beside the L0 tables it overlaps (tables of keys and blob
//! references, or a few hot keys rewritten), a due L0 is merged into one L0 table instead of
//! into all of L1, and L1 is left alone. The merged table holds older data than tables flushed
//! while it was written, yet takes a newer file number than a flush that started first: L0 is
//! ordered by sequence, not by number, or a lookup would find the older value.
//!
//! Stepped (`Db::open_stepped`): nothing runs but what the test starts.

use std::collections::BTreeMap;
use std::path::Path;
use std::thread;

use siftdb::sync_point::FLUSH_TABLE_WRITTEN;
use siftdb::{Db, Options};
use siftdb_tests::pause::{must_finish, Window};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn options() -> Options {
    Options {
        write_buffer_size: 4096,
        max_write_buffer_number: 16,
        level0_file_num_compaction_trigger: 4,
        target_file_size_base: 1 << 20,
        // L1 never over its target: only L0 is ever due.
        max_bytes_for_level_base: 64 << 20,
        ..Options::default()
    }
}

fn key(i: usize) -> Vec<u8> {
    format!("k{i:05}").into_bytes()
}

fn value(i: usize, round: usize) -> Vec<u8> {
    format!("v{round}-{i}-").into_bytes().repeat(6)
}

/// Puts `keys` of `round` into the database and the model.
fn put_round(db: &Db, model: &mut Model, keys: impl Iterator<Item = usize>, round: usize) {
    for i in keys {
        db.put(key(i), value(i, round)).expect("put");
        model.insert(key(i), value(i, round));
    }
}

/// Every key of `model` through `get`, and a full scan.
fn check(db: &Db, model: &Model, what: &str) {
    for (k, v) in model {
        let got = db.get(k).unwrap_or_else(|e| panic!("{what}: get: {e}"));
        assert_eq!(
            got.as_ref(),
            Some(v),
            "{what}: {:?}",
            String::from_utf8_lossy(k)
        );
    }
    let scanned: Vec<(Vec<u8>, Vec<u8>)> = db
        .iter()
        .map(|r| r.unwrap_or_else(|e| panic!("{what}: scan: {e}")))
        .collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.clone().into_iter().collect();
    assert_eq!(scanned, want, "{what}: scan");
}

/// The table numbers of each level (`siftdb.sstables`), L0 in the order lookups probe it.
fn tables(db: &Db) -> Vec<Vec<u64>> {
    let table = db.property("siftdb.sstables").expect("siftdb.sstables");
    let mut levels: Vec<Vec<u64>> = Vec::new();
    for row in table.lines().filter(|l| l.starts_with('L')) {
        let mut cells = row.split_whitespace();
        let level: usize = cells
            .next()
            .and_then(|l| l[1..].parse().ok())
            .expect("level");
        let number: u64 = cells.next().and_then(|n| n.parse().ok()).expect("number");
        if levels.len() <= level {
            levels.resize(level + 1, Vec::new());
        }
        levels[level].push(number);
    }
    levels
}

/// Flushes every memtable (inline: the database is stepped).
fn flush_all(db: &Db) {
    db.flush().expect("flush");
}

/// A stepped database whose 5,000 keys are all in L1, and four small L0 tables over it (a few
/// keys spread over the whole range, rewritten).
fn setup(path: &Path) -> (Db, Model) {
    let db = Db::open_stepped(path, options()).expect("open");
    let mut model = Model::new();
    put_round(&db, &mut model, 0..5000, 0);
    flush_all(&db);
    db.compact_range(None, None).expect("compact_range");
    assert_eq!(
        tables(&db).first().map_or(0, Vec::len),
        0,
        "L0 after compact_range"
    );
    for round in 1..=4 {
        put_round(&db, &mut model, (round..5000).step_by(250), round);
        flush_all(&db);
    }
    assert_eq!(tables(&db)[0].len(), 4, "{:?}", tables(&db));
    (db, model)
}

#[test]
fn intra_l0_merges_small_l0_tables_into_one_and_leaves_l1_alone() {
    let dir = siftdb_tests::temp_dir();
    let path = dir.path().join("db");
    let (db, model) = setup(&path);
    let l1 = tables(&db)[1].clone();
    let compacted_before = db.stats().compactions;
    assert!(db.step_compaction().expect("compaction"), "nothing was due");
    let after = tables(&db);
    assert_eq!(after[0].len(), 1, "L0 merged into one table: {after:?}");
    assert_eq!(after[1], l1, "L1 untouched");
    assert_eq!(db.stats().compactions, compacted_before + 1);
    check(&db, &model, "after the merge");
    // Nothing more is due until L0 fills again.
    assert!(!db.step_compaction().expect("compaction"));
    db.close().expect("close");
    drop(db);
    let db = Db::open(&path, options()).expect("reopen");
    check(&db, &model, "after reopen");
}

#[test]
fn intra_l0_output_numbered_after_a_newer_flush_is_still_read_as_older() {
    let dir = siftdb_tests::temp_dir();
    let path = dir.path().join("db");
    let (db, mut model) = setup(&path);
    // Round 5 rewrites keys the L0 tables hold; its flush takes its table number and pauses.
    put_round(&db, &mut model, (1..5000).step_by(250), 5);
    let mut window = Window::arm(&db, FLUSH_TABLE_WRITTEN);
    let flusher = {
        let db = db.clone();
        thread::spawn(move || db.flush())
    };
    window.wait_entered("the flush");
    // The intra-L0 compaction of the four older tables numbers its output after the flush's.
    let d = db.clone();
    let compacted = must_finish("an intra-L0 compaction beside the flush", move || {
        d.step_compaction()
    });
    assert!(compacted.expect("compaction"), "nothing was due");
    window.close();
    flusher.join().expect("flusher").expect("flush");
    let l0 = tables(&db)[0].clone();
    assert_eq!(l0.len(), 2, "{l0:?}");
    assert!(
        l0[0] < l0[1],
        "the flushed table (newer data, older number) is probed first: {l0:?}"
    );
    check(&db, &model, "after both installed");
    db.close().expect("close");
    drop(db);
    let db = Db::open(&path, options()).expect("reopen");
    assert_eq!(tables(&db)[0], l0, "L0 order after reopen");
    check(&db, &model, "after reopen");
}
