//! `delete_range` over a key range whose entries live on every level of the tree at once — deep
//! levels (L2+), L1, L0 and the memtable: one range tombstone hides them from every read path
//! (get, multi_get, iterators both ways, snapshots taken after it) while snapshots taken before
//! keep seeing them; a full compaction then drops the deleted entries and the tombstone itself
//! and gives the space back. Also: a range delete costs one record however many keys it covers,
//! tombstones split across compaction outputs keep hiding what is below them, range deletes stay
//! in their keyspace, and bad bounds are refused without writing anything.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use siftdb::{Db, Error, Options, WriteBatch};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

/// Values of generation `gen` (each generation is written on another level).
fn value(r#gen: u32, i: u32) -> Vec<u8> {
    let mut v = format!("gen{gen}-{i}-").into_bytes();
    v.resize(100, b'.');
    v
}

/// Small tables and a small L1, so that a few hundred kilobytes spread over several levels.
/// `l1_bytes`: L1's target size (a small one pushes L1 down to L2).
fn options(l1_bytes: u64) -> Options {
    Options {
        write_buffer_size: 4 << 20,
        target_file_size_base: 16 << 10,
        max_bytes_for_level_base: l1_bytes,
        max_bytes_for_level_multiplier: 10.0,
        level0_file_num_compaction_trigger: 2,
        compression: siftdb::Compression::None,
        compression_per_level: Vec::new(),
        ..Options::default()
    }
}

fn open(dir: &Path, l1_bytes: u64) -> Db {
    Db::open(dir, options(l1_bytes)).unwrap_or_else(|e| panic!("open {}: {e}", dir.display()))
}

/// Files per level.
fn shape(db: &Db) -> Vec<usize> {
    db.level_info().iter().map(|l| l.files).collect()
}

/// Bytes of the `.sst` files in `dir`.
fn sst_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".sst"))
        .map(|e| e.metadata().unwrap().len())
        .sum()
}

/// Range tombstones recorded in the `.sst` files of `dir` (each table opened on its own).
fn range_tombstones_on_disk(dir: &Path) -> u64 {
    use siftdb_sstable::{PreadFile, Table, TableCache, TableReadOptions};
    let cache = Arc::new(TableCache::new(siftdb_cache::CacheOptions::new(1 << 20)));
    let mut total = 0;
    for (id, e) in std::fs::read_dir(dir).unwrap().enumerate() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.ends_with(".sst") {
            continue;
        }
        let file = PreadFile::new(std::fs::File::open(e.path()).unwrap()).unwrap();
        let table = Table::open(
            Box::new(file),
            id as u64,
            name.clone(),
            Arc::clone(&cache),
            TableReadOptions::default(),
        )
        .unwrap_or_else(|e| panic!("open {name}: {e}"));
        total += table.properties().range_deletions;
    }
    total
}

/// Checks every read path of `db` against `model` (keys `0..n`): get, multi_get, iteration both
/// ways, and a bounded range both ways.
fn check(db: &Db, model: &Model, n: u32, ctx: &str) {
    let keys: Vec<Vec<u8>> = (0..n).map(key).collect();
    for k in &keys {
        assert_eq!(
            db.get(k).unwrap(),
            model.get(k).cloned(),
            "{ctx}: get {}",
            String::from_utf8_lossy(k)
        );
    }
    let got: Vec<Option<Vec<u8>>> = db
        .multi_get(&keys)
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    let want: Vec<Option<Vec<u8>>> = keys.iter().map(|k| model.get(k).cloned()).collect();
    assert!(got == want, "{ctx}: multi_get differs from the model");
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    let fwd: Vec<_> = db.iter().map(|r| r.unwrap()).collect();
    assert!(
        fwd == want,
        "{ctx}: forward iteration: {} entries, want {}",
        fwd.len(),
        want.len()
    );
    let mut back: Vec<_> = db.iter().rev().map(|r| r.unwrap()).collect();
    back.reverse();
    assert!(
        back == want,
        "{ctx}: backward iteration: {} entries, want {}",
        back.len(),
        want.len()
    );
}

/// `(true positives per level)`: which levels point lookups found their keys in.
fn found_per_level(db: &Db) -> Vec<u64> {
    db.level_info()
        .iter()
        .map(|l| l.measured.true_positive)
        .collect()
}

/// Which levels a lookup of each of `keys` found its key in (by the per-level filter counters;
/// L0 is level 0, a memtable hit is no level).
fn levels_found_in(db: &Db, keys: impl IntoIterator<Item = u32>) -> Vec<usize> {
    let mut levels = Vec::new();
    for i in keys {
        let before = found_per_level(db);
        assert!(db.get(key(i)).unwrap().is_some(), "key {i} is there");
        let after = found_per_level(db);
        if let Some(l) = (0..after.len()).find(|&l| after[l] > before.get(l).copied().unwrap_or(0))
        {
            levels.push(l);
        }
    }
    levels.sort_unstable();
    levels.dedup();
    levels
}

const N: u32 = 3000;
/// The range deleted: `[key(LO), key(HI))`.
const LO: u32 = 500;
const HI: u32 = 2500;

/// Builds the tree: generation 1 (every key) pushed to L2 and below, generation 2 (every tenth
/// key, offset 1) in L1, generation 3 (offset 2) in one L0 table, generation 4 (offset 3) in
/// the memtable. Returns the model.
fn build_tree(dir: &Path) -> (Db, Model) {
    let mut model = Model::new();
    // L1 of 16 KiB: the first generation (about 330 KiB) goes down to L2.
    let db = open(dir, 16 << 10);
    let mut put_all = |db: &Db, r#gen: u32, keys: &mut dyn Iterator<Item = u32>| {
        let mut b = WriteBatch::new();
        for i in keys {
            b.put(key(i), value(r#gen, i));
            model.insert(key(i), value(r#gen, i));
        }
        db.write(b).unwrap();
    };
    put_all(&db, 1, &mut (0..N));
    db.compact_range(None, None).unwrap();
    db.wait_for_compaction().unwrap();
    drop(db);
    // From now on L1 may hold a megabyte: what comes next stays there.
    let db = open(dir, 1 << 20);
    let deep: usize = shape(&db).iter().skip(2).sum();
    assert!(deep > 0, "nothing below L1: {:?}", shape(&db));
    // Two L0 tables reach the trigger: compacted into L1.
    put_all(&db, 2, &mut (1..N / 2).step_by(10));
    db.flush().unwrap();
    put_all(&db, 2, &mut (N / 2 + 1..N).step_by(10));
    db.flush().unwrap();
    db.wait_for_compaction().unwrap();
    // One L0 table stays below the trigger.
    put_all(&db, 3, &mut (2..N).step_by(10));
    db.flush().unwrap();
    put_all(&db, 4, &mut (3..N).step_by(10));
    let tree = shape(&db);
    assert_eq!(tree[0], 1, "one L0 table: {tree:?}");
    assert!(tree[1] > 0, "L1 holds tables: {tree:?}");
    assert!(
        tree.iter().skip(2).sum::<usize>() > 0,
        "L2+ holds tables: {tree:?}"
    );
    (db, model)
}

/// One `delete_range` over a key range with entries on L2+, L1, L0 and in the memtable.
#[test]
fn delete_range_hides_entries_of_every_level_and_compaction_reclaims_them() {
    let dir = siftdb_tests::temp_dir();
    let (db, mut model) = build_tree(dir.path());
    // The range has entries on every level: lookups of its keys find them in L0, L1 and deeper.
    let in_range = |offset: u32| (LO + offset..HI).step_by(10);
    assert_eq!(
        levels_found_in(&db, in_range(2)),
        vec![0],
        "generation 3 in L0"
    );
    assert_eq!(
        levels_found_in(&db, in_range(1)),
        vec![1],
        "generation 2 in L1"
    );
    let deep = levels_found_in(&db, (LO..HI).filter(|i| i % 10 >= 4));
    assert!(
        deep.iter().any(|&l| l >= 2),
        "generation 1 of the range is found on levels {deep:?}, none of them L2+\n{}",
        db.property("siftdb.levels").unwrap()
    );
    check(&db, &model, N, "before the range delete");

    let before = db.snapshot();
    let before_model = model.clone();
    db.delete_range(key(LO), key(HI)).unwrap();
    let after = db.snapshot();
    for i in LO..HI {
        model.remove(&key(i));
    }
    // Just outside the range: the key before its start and its (exclusive) end.
    assert!(model.contains_key(&key(LO - 1)) && model.contains_key(&key(HI)));
    check(&db, &model, N, "after the range delete");
    assert_eq!(db.get(key(LO - 1)).unwrap(), Some(value(1, LO - 1)));
    assert_eq!(db.get(key(HI)).unwrap(), Some(value(1, HI)));
    assert_eq!(db.get(key(LO)).unwrap(), None);
    assert_eq!(db.get(key(HI - 1)).unwrap(), None);
    // A range read across both ends, forward and backward, and seeks into the range.
    let window: Vec<_> = db
        .range(key(LO - 2)..key(HI + 2))
        .map(|r| r.unwrap().0)
        .collect();
    assert_eq!(window, vec![key(LO - 2), key(LO - 1), key(HI), key(HI + 1)]);
    let window_back: Vec<_> = db
        .range(key(LO - 2)..key(HI + 2))
        .rev()
        .map(|r| r.unwrap().0)
        .collect();
    assert_eq!(
        window_back,
        vec![key(HI + 1), key(HI), key(LO - 1), key(LO - 2)]
    );
    let mut seek = db.iter();
    seek.seek(key(LO + 7));
    assert_eq!(seek.next().unwrap().unwrap().0, key(HI));
    let mut seek_back = db.iter();
    seek_back.seek_for_prev(key(HI - 3));
    assert_eq!(seek_back.next_back().unwrap().unwrap().0, key(LO - 1));
    let mut raw = db.raw_iter();
    raw.seek(&key(LO));
    assert!(raw.valid());
    assert_eq!(raw.key(), key(HI).as_slice());
    raw.prev();
    assert_eq!(raw.key(), key(LO - 1).as_slice());
    raw.status().unwrap();

    // The snapshot before sees everything; the one after, nothing in the range.
    for (snap, seen, name) in [
        (&before, &before_model, "snapshot before"),
        (&after, &model, "snapshot after"),
    ] {
        let got: Vec<_> = snap.iter().map(|r| r.unwrap()).collect();
        let want: Vec<_> = seen.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        assert!(
            got == want,
            "{name}: {} entries, want {}",
            got.len(),
            want.len()
        );
        let mut back: Vec<_> = snap.iter().rev().map(|r| r.unwrap()).collect();
        back.reverse();
        assert!(back == want, "{name} backward");
        for i in (LO - 3..HI + 3).step_by(7) {
            assert_eq!(
                snap.get(key(i)).unwrap(),
                seen.get(&key(i)).cloned(),
                "{name} get {i}"
            );
        }
    }
    // Compactions while the snapshot before lives keep what it sees.
    db.compact_range(None, None).unwrap();
    assert_eq!(before.get(key(LO + 2)).unwrap(), Some(value(3, LO + 2)));
    assert_eq!(before.get(key(LO + 4)).unwrap(), Some(value(1, LO + 4)));
    assert_eq!(before.iter().count(), before_model.len());
    check(&db, &model, N, "after a compaction under the snapshot");
    // Iterators pin the tables they read (their files stay until they go, as in RocksDB).
    drop((before, after, seek, seek_back, raw));
    // The last reader's drop hands the obsolete tables to the deleter thread: let it finish
    // before the files are listed (a file listed, then deleted, failed the size read).
    db.wait_for_compaction().unwrap();

    // With no snapshot or iterator left, a full compaction drops the deleted entries and the tombstone.
    let bytes_before = sst_bytes(dir.path());
    let stats_before = db.stats();
    db.compact_range(None, None).unwrap();
    db.wait_for_compaction().unwrap();
    let stats = db.stats();
    let bytes_after = sst_bytes(dir.path());
    let keys_in_tables: u64 = db.level_info().iter().map(|l| l.keys).sum();
    assert_eq!(
        keys_in_tables,
        model.len() as u64,
        "the tables hold the range's keys still\n{}",
        db.property("siftdb.levels").unwrap()
    );
    assert!(
        bytes_after * 2 < bytes_before,
        "the range's bytes were not reclaimed: {bytes_before} -> {bytes_after}"
    );
    let dropped = stats.range_deleted_dropped - stats_before.range_deleted_dropped;
    assert!(
        stats.range_deleted_dropped >= u64::from(HI - LO),
        "range_deleted_dropped = {} (this compaction {dropped}), at least {} entries were deleted",
        stats.range_deleted_dropped,
        HI - LO
    );
    assert!(
        stats.range_tombstones_dropped > 0,
        "the tombstone was not dropped: {stats:?}"
    );
    check(&db, &model, N, "after the full compaction");
    drop(db);
    assert_eq!(
        range_tombstones_on_disk(dir.path()),
        0,
        "a table still holds the range tombstone"
    );
    let db = open(dir.path(), 1 << 20);
    check(&db, &model, N, "after reopen");
}

/// A range tombstone wider than a compaction output: compacted from L0 into L1 (small tables),
/// its pieces go to several outputs, and together they keep hiding the L2 entries below them —
/// but not keys written after the range delete.
#[test]
fn a_range_tombstone_split_across_l1_tables_keeps_hiding_deeper_keys() {
    let dir = siftdb_tests::temp_dir();
    let mut model = Model::new();
    let db = open(dir.path(), 16 << 10);
    let mut b = WriteBatch::new();
    for i in 0..N {
        b.put(key(i), value(1, i));
        model.insert(key(i), value(1, i));
    }
    db.write(b).unwrap();
    db.compact_range(None, None).unwrap();
    db.wait_for_compaction().unwrap();
    drop(db);
    let db = open(dir.path(), 1 << 20);
    assert!(
        shape(&db).iter().skip(2).sum::<usize>() > 0,
        "{:?}",
        shape(&db)
    );
    let old = db.snapshot();
    let old_model = model.clone();

    db.delete_range(key(100), key(2900)).unwrap();
    for i in 100..2900 {
        model.remove(&key(i));
    }
    // Keys re-written after the tombstone (newer than it), spread over the range, with enough
    // bytes that L1 gets several tables.
    for i in (150..2900).step_by(3) {
        db.put(key(i), value(2, i)).unwrap();
        model.insert(key(i), value(2, i));
    }
    db.flush().unwrap();
    // A second L0 table (outside the range) reaches the trigger: both go to L1.
    db.put(key(N + 1), value(2, N + 1)).unwrap();
    model.insert(key(N + 1), value(2, N + 1));
    db.flush().unwrap();
    db.wait_for_compaction().unwrap();
    let tree = shape(&db);
    assert_eq!(tree[0], 0, "L0 compacted: {tree:?}");
    assert!(tree[1] >= 2, "L1 has several tables: {tree:?}");
    check(&db, &model, N + 2, "tombstone in L1");
    // The old snapshot is untouched.
    let got: Vec<_> = old.iter().map(|r| r.unwrap()).collect();
    let want: Vec<_> = old_model.into_iter().collect();
    assert!(got == want, "old snapshot: {} entries", got.len());
    drop(old);
    drop(db);
    let db = open(dir.path(), 1 << 20);
    check(&db, &model, N + 2, "tombstone in L1, after reopen");
    db.compact_range(None, None).unwrap();
    check(&db, &model, N + 2, "after the full compaction");
    let keys_in_tables: u64 = db.level_info().iter().map(|l| l.keys).sum();
    assert_eq!(keys_in_tables, model.len() as u64);
}

/// A range delete alone in a memtable, flushed: an L0 table holding only the tombstone (no point
/// key at all) still hides the keys of the levels below.
#[test]
fn a_flushed_table_holding_only_a_range_tombstone_hides_keys_below() {
    let dir = siftdb_tests::temp_dir();
    let db = open(dir.path(), 1 << 20);
    let mut model = Model::new();
    for i in 0..200 {
        db.put(key(i), value(1, i)).unwrap();
        model.insert(key(i), value(1, i));
    }
    db.compact_range(None, None).unwrap();
    db.delete_range(key(50), key(150)).unwrap();
    for i in 50..150 {
        model.remove(&key(i));
    }
    db.flush().unwrap();
    assert_eq!(shape(&db)[0], 1, "the tombstone has its own L0 table");
    check(&db, &model, 200, "tombstone-only L0 table");
    drop(db);
    let db = open(dir.path(), 1 << 20);
    check(&db, &model, 200, "tombstone-only L0 table, reopened");
    db.compact_range(None, None).unwrap();
    check(&db, &model, 200, "compacted");
    assert_eq!(
        db.level_info().iter().map(|l| l.keys).sum::<u64>(),
        100,
        "the deleted keys left the tables"
    );
}

/// 200,000 keys removed by one `delete_range`: one WAL record of a few bytes, one key written,
/// a memtable that barely grows — and every read path sees an empty database.
#[test]
fn delete_range_over_200k_keys_costs_one_small_record() {
    const KEYS: u32 = 200_000;
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(
        dir.path(),
        Options {
            write_buffer_size: 8 << 20,
            ..Options::default()
        },
    )
    .unwrap();
    for chunk in (0..KEYS).collect::<Vec<_>>().chunks(5_000) {
        let mut b = WriteBatch::new();
        for &i in chunk {
            b.put(format!("k{i:07}"), i.to_le_bytes());
        }
        db.write(b).unwrap();
    }
    // Some of them in tables, the rest in the memtable.
    db.flush().unwrap();
    for i in 0..1000u32 {
        db.put(format!("k{i:07}"), b"again").unwrap();
    }
    let mem_size = |db: &Db| -> u64 {
        db.property("siftdb.cur-size-all-mem-tables")
            .unwrap()
            .parse()
            .unwrap()
    };
    let (stats0, mem0) = (db.stats(), mem_size(&db));
    db.delete_range(b"k", b"l").unwrap();
    let (stats1, mem1) = (db.stats(), mem_size(&db));
    let wal = stats1.wal_bytes - stats0.wal_bytes;
    assert!(wal <= 64, "one range delete wrote {wal} WAL bytes");
    assert_eq!(stats1.keys_written - stats0.keys_written, 1);
    assert_eq!(stats1.write_groups - stats0.write_groups, 1);
    assert!(
        mem1 - mem0 <= 256,
        "the memtable grew by {} bytes",
        mem1 - mem0
    );
    assert_eq!(db.get(b"k0000000").unwrap(), None);
    assert_eq!(db.get(b"k0199999").unwrap(), None);
    assert_eq!(db.iter().next().map(|r| r.unwrap()), None);
    assert_eq!(db.iter().next_back().map(|r| r.unwrap()), None);
    let mut raw = db.raw_iter();
    raw.seek_to_last();
    assert!(!raw.valid());
    raw.status().unwrap();
    // Keys written after it are there.
    db.put(b"k0100000", b"new").unwrap();
    assert_eq!(
        db.iter().map(|r| r.unwrap()).collect::<Vec<_>>(),
        vec![(b"k0100000".to_vec(), b"new".to_vec())]
    );
    let shape_before = db.property("siftdb.levels").unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(
        db.level_info().iter().map(|l| l.keys).sum::<u64>(),
        1,
        "{}",
        db.property("siftdb.levels").unwrap()
    );
    // Every key had one version the tombstone deletes (the older version of the 1,000 keys
    // written twice is shadowed, not range-deleted), except k0100000, written again after it.
    let stats = db.stats();
    assert!(
        stats.range_deleted_dropped >= u64::from(KEYS) - 1,
        "{} entries dropped by the range tombstone (tree before the compaction:\n{shape_before})\n{stats:?}",
        stats.range_deleted_dropped
    );
}

/// A range delete in one keyspace (by its handle or in a batch) leaves the same keys of other
/// keyspaces alone; snapshots see each keyspace as of their time.
#[test]
fn delete_range_stays_in_its_keyspace() {
    let dir = siftdb_tests::temp_dir();
    let db = open(dir.path(), 1 << 20);
    let a = db.keyspace("a").unwrap();
    let b = db.keyspace("b").unwrap();
    for i in 0..100 {
        db.put(key(i), b"default").unwrap();
        a.put(key(i), b"a").unwrap();
        b.put(key(i), b"b").unwrap();
    }
    a.flush().unwrap();
    let snap = db.snapshot();
    a.delete_range(key(10), key(20)).unwrap();
    let mut batch = WriteBatch::new();
    batch
        .delete_range_in(&b, key(30), key(40))
        .delete_range(key(50), key(60));
    db.write(batch).unwrap();
    let live = |ks: Option<&siftdb::Keyspace>| -> Vec<u32> {
        (0..100)
            .filter(|&i| match ks {
                Some(ks) => ks.get(key(i)).unwrap().is_some(),
                None => db.get(key(i)).unwrap().is_some(),
            })
            .collect()
    };
    let except =
        |lo: u32, hi: u32| -> Vec<u32> { (0..100).filter(|i| !(lo..hi).contains(i)).collect() };
    for round in 0..2 {
        assert_eq!(live(Some(&a)), except(10, 20), "round {round}: keyspace a");
        assert_eq!(live(Some(&b)), except(30, 40), "round {round}: keyspace b");
        assert_eq!(live(None), except(50, 60), "round {round}: default");
        assert_eq!(a.iter().count(), 90);
        assert_eq!(b.iter().rev().count(), 90);
        assert_eq!(db.iter().count(), 90);
        a.compact_range(None, None).unwrap();
        b.flush().unwrap();
    }
    assert_eq!(snap.iter_in(&a).count(), 100);
    assert_eq!(snap.get_in(&b, &key(35)).unwrap(), Some(b"b".to_vec()));
}

fn assert_invalid<T: std::fmt::Debug>(got: siftdb::Result<T>, ctx: &str) {
    match got {
        Err(Error::InvalidArgument(_)) => {}
        other => panic!("{ctx}: expected InvalidArgument, got {other:?}"),
    }
}

/// `start > end` is `InvalidArgument` (and a batch holding one writes none of its other
/// operations), `start == end` removes nothing and writes nothing, bounds longer than
/// `MAX_KEY_SIZE` are `InvalidArgument` — through `Db`, `Keyspace` and `WriteBatch`.
#[test]
fn bad_range_bounds_are_refused_and_write_nothing() {
    let dir = siftdb_tests::temp_dir();
    let db = open(dir.path(), 1 << 20);
    let ks = db.keyspace("ks").unwrap();
    for i in 0..20 {
        db.put(key(i), value(1, i)).unwrap();
        ks.put(key(i), value(1, i)).unwrap();
    }
    let all = |db: &Db| -> Vec<(Vec<u8>, Vec<u8>)> { db.iter().map(|r| r.unwrap()).collect() };
    let ks_all = |ks: &siftdb::Keyspace| -> Vec<(Vec<u8>, Vec<u8>)> {
        ks.iter().map(|r| r.unwrap()).collect()
    };
    let want = all(&db);
    let wal0 = db.stats().wal_bytes;

    // start > end.
    assert_invalid(db.delete_range(key(10), key(5)), "Db start > end");
    assert_invalid(db.delete_range(b"b", b"a"), "Db b > a");
    assert_invalid(db.delete_range(b"a\0", b"a"), "Db a\\0 > a");
    assert_invalid(ks.delete_range(key(10), key(5)), "Keyspace start > end");
    let mut batch = WriteBatch::new();
    batch
        .put(b"batch-put", b"x")
        .delete(key(1))
        .delete_range_in(&ks, key(0), key(3))
        .delete_range(key(9), key(8))
        .put(b"after", b"y");
    assert_invalid(db.write(batch), "batch with start > end");

    // Bounds over the key size limit.
    let long_a = vec![b'a'; siftdb::MAX_KEY_SIZE + 1];
    let long_b = vec![b'b'; siftdb::MAX_KEY_SIZE + 1];
    assert_invalid(db.delete_range(&long_a, &long_b), "both bounds too long");
    assert_invalid(db.delete_range(b"a", &long_b), "end too long");
    assert_invalid(db.delete_range(&long_a, b"b"), "start too long");
    assert_invalid(ks.delete_range(b"a", &long_b), "Keyspace end too long");
    let mut batch = WriteBatch::new();
    batch.put(b"batch-put", b"x").delete_range(b"a", &long_b);
    assert_invalid(db.write(batch), "batch with a bound too long");
    // The limit itself is accepted.
    let at_limit = vec![b'\xff'; siftdb::MAX_KEY_SIZE];
    db.delete_range(b"zzz", &at_limit).unwrap();

    assert_eq!(all(&db), want, "a refused range delete changed the data");
    assert_eq!(ks_all(&ks).len(), 20);

    // start == end: nothing removed, nothing written.
    let wal1 = db.stats().wal_bytes;
    db.delete_range(key(3), key(3)).unwrap();
    ks.delete_range(key(3), key(3)).unwrap();
    db.delete_range(b"", b"").unwrap();
    assert_eq!(db.stats().wal_bytes, wal1, "an empty range was written");
    let mut batch = WriteBatch::new();
    batch.delete_range(key(4), key(4));
    assert!(batch.is_empty(), "an empty range added an operation");
    batch.put(b"p", b"q").delete_range_in(&ks, key(5), key(5));
    assert_eq!(batch.len(), 1);
    db.write(batch).unwrap();
    assert_eq!(db.get(key(3)).unwrap(), Some(value(1, 3)));
    assert_eq!(db.get(key(4)).unwrap(), Some(value(1, 4)));
    assert_eq!(ks.get(key(3)).unwrap(), Some(value(1, 3)));
    assert_eq!(ks.get(key(5)).unwrap(), Some(value(1, 5)));
    assert_eq!(db.get(b"p").unwrap(), Some(b"q".to_vec()));
    assert!(db.stats().wal_bytes > wal0);

    // Nothing refused reached the WAL: the same after a reopen.
    drop(ks);
    drop(db);
    let db = open(dir.path(), 1 << 20);
    let mut want = want;
    want.push((b"p".to_vec(), b"q".to_vec()));
    assert_eq!(all(&db), want, "after reopen");
    assert_eq!(db.get(b"batch-put").unwrap(), None);
    assert_eq!(db.get(b"after").unwrap(), None);
    assert_eq!(ks_all(&db.keyspace("ks").unwrap()).len(), 20);
}

/// An iterator sees the database as of its creation: a range delete after it, flushed and
/// compacted away (the deleted entries dropped from the tables), changes nothing for either of
/// its ends — the back end included, which opens its cursor only when first asked.
#[test]
fn an_iterator_created_before_a_range_delete_keeps_seeing_the_range() {
    let dir = siftdb_tests::temp_dir();
    let db = open(dir.path(), 1 << 20);
    let mut model = Model::new();
    for i in 0..500 {
        db.put(key(i), value(1, i)).unwrap();
        model.insert(key(i), value(1, i));
    }
    db.flush().unwrap();
    let mut it = db.iter();
    let mut raw = db.raw_iter();
    raw.seek(&key(250));
    assert_eq!(it.next().unwrap().unwrap().0, key(0));
    db.delete_range(key(0), key(500)).unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(db.iter().count(), 0);
    assert!(db.stats().range_deleted_dropped >= 500);
    // The back end starts only now.
    assert_eq!(it.next_back().unwrap().unwrap().0, key(499));
    let rest: Vec<_> = it.map(|r| r.unwrap()).collect();
    let want: Vec<_> = model
        .iter()
        .skip(1)
        .take(498)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert!(
        rest == want,
        "the iterator lost entries: {} of 498",
        rest.len()
    );
    assert_eq!(raw.key(), key(250).as_slice());
    raw.next();
    assert_eq!(raw.key(), key(251).as_slice());
    raw.seek_to_first();
    assert_eq!(raw.key(), key(0).as_slice());
    raw.seek_to_last();
    assert_eq!(raw.key(), key(499).as_slice());
    raw.status().unwrap();
}

/// A read-only open and a checkpoint see the range deletes the writer made — in its tables and
/// in its WAL alike.
#[test]
fn read_only_open_and_checkpoint_see_range_deletes() {
    let dir = siftdb_tests::temp_dir();
    let path = dir.path().join("db");
    let db = open(&path, 1 << 20);
    let mut model = Model::new();
    for i in 0..300 {
        db.put(key(i), value(1, i)).unwrap();
        model.insert(key(i), value(1, i));
    }
    db.delete_range(key(10), key(50)).unwrap();
    db.flush().unwrap();
    // In the WAL only.
    db.delete_range(key(100), key(200)).unwrap();
    for i in (10..50).chain(100..200) {
        model.remove(&key(i));
    }
    db.checkpoint(dir.path().join("cp")).unwrap();
    let ro = Db::open_read_only(&path, options(1 << 20)).unwrap();
    check(&ro, &model, 300, "read-only open");
    assert!(matches!(ro.delete_range(b"a", b"b"), Err(Error::ReadOnly)));
    drop(ro);
    let cp = open(&dir.path().join("cp"), 1 << 20);
    check(&cp, &model, 300, "checkpoint");
    drop(cp);
    check(&db, &model, 300, "source");
}
