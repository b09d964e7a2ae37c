//! Filters left out where they only cost (the articles' decision table): `filter_bits_per_key =
//! 0` writes no whole-key filter anywhere (lookups go straight to the index), and
//! `optimize_filters_for_hits` writes none on the bottom level while Monkey spends the budget on
//! the levels above. Each table records why it has none; `siftdb.levels` shows it; the filter
//! counters are the oracle (no probe where no filter is).

use siftdb::{Db, KeyspaceOptions, LevelInfo, Options};

use siftdb_tests::scattered_key as key;

fn missing(i: u32) -> Vec<u8> {
    format!("k{:010}x", i.wrapping_mul(2_654_435_761)).into_bytes()
}

fn small_tree(bits: f64, for_hits: bool) -> Options {
    Options {
        filter_bits_per_key: bits,
        optimize_filters_for_hits: for_hits,
        ..siftdb_tests::small_tree()
    }
}

fn filter_probes(db: &Db) -> Vec<u64> {
    db.stats().levels.iter().map(|l| l.checked).collect()
}

fn fill(db: &Db, n: u32) {
    for i in 0..n {
        db.put(key(i), [b'v'; 16]).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compaction().unwrap();
}

/// [`fill`] on a database opened stepped: every due flush and compaction runs after each put,
/// so the tree takes the same shape on every run. With background threads the writer's lead
/// decided whether a level written as the bottom (unfiltered under `optimize_filters_for_hits`)
/// had just been covered by a new bottom level when the fill ended (failing 4 runs in 6 on a
/// fast machine: 9 unfiltered tables left above the bottom).
fn fill_stepped(db: &Db, n: u32) {
    for i in 0..n {
        db.put(key(i), [b'v'; 16]).unwrap();
        siftdb_tests::run_due_work(db);
    }
    db.flush().unwrap();
    db.wait_for_compaction().unwrap();
}

#[test]
fn zero_bits_per_key_writes_no_filter_and_still_finds_every_key() {
    let dir = siftdb_tests::temp_dir();
    // No tree-wide filter index either: the lookups below must reach the tables.
    let no_index = Options {
        filter_index_bits_per_key: 0.0,
        ..small_tree(0.0, false)
    };
    let db = Db::open(dir.path(), no_index).unwrap();
    fill(&db, 20_000);
    let levels = db.level_info();
    let text = db.property("siftdb.levels").unwrap();
    println!("{text}");
    let tables: usize = levels.iter().map(|l| l.files).sum();
    assert!(tables > 1, "{text}");
    for l in levels.iter().filter(|l| l.files > 0) {
        assert_eq!(l.filter_kind, "none", "{text}");
        assert_eq!(l.filter_bytes, 0, "{text}");
        assert_eq!(l.unfiltered_tables, l.files, "{text}");
        assert_eq!(l.filter_omitted, "disabled", "{text}");
    }
    assert!(text.contains("disabled"), "{text}");
    for i in (0..20_000).step_by(7) {
        assert!(db.get(key(i)).unwrap().is_some(), "key {i} lost");
    }
    let before = db.stats();
    for i in 0..2_000 {
        assert_eq!(db.get(missing(i)).unwrap(), None);
    }
    let after = db.stats();
    // No filter was asked; the lookups went to the tables' index and data blocks.
    assert!(filter_probes(&db).iter().all(|&c| c == 0));
    let blocks = |s: &siftdb::Stats| s.levels.iter().map(|l| l.data_block_accesses).sum::<u64>();
    assert!(blocks(&after) - blocks(&before) >= 2_000);

    // Reopened with filters on: old tables keep none, new ones get a filter; a keyspace may
    // turn them off on its own.
    drop(db);
    let db = Db::open(dir.path(), small_tree(10.0, false)).unwrap();
    for i in 20_000..24_000 {
        db.put(key(i), b"w").unwrap();
    }
    db.flush().unwrap();
    // Wherever the new tables are by now (a compaction may already have moved them out of L0),
    // they have a filter.
    let levels = db.level_info();
    assert!(
        levels
            .iter()
            .any(|l| l.filter_bytes > 0 && l.filter_kind != "none"),
        "{}",
        db.property("siftdb.levels").unwrap_or_default()
    );
    let ks = db
        .create_keyspace(
            "scan_only",
            KeyspaceOptions {
                filter_bits_per_key: 0.0,
                ..Default::default()
            },
        )
        .unwrap();
    ks.put(b"a", b"1").unwrap();
    ks.flush().unwrap();
    let ks_levels = ks.level_info();
    assert_eq!(ks_levels[0].filter_kind, "none");
    assert_eq!(ks_levels[0].filter_omitted, "disabled");
    assert_eq!(ks.get(b"a").unwrap(), Some(b"1".to_vec()));
}

/// Bytes and keys of the filtered levels above the bottom.
fn upper(levels: &[LevelInfo]) -> (u64, u64, usize) {
    let bottom = levels.iter().rposition(|l| l.files > 0).unwrap();
    let (bytes, keys) = levels[..bottom]
        .iter()
        .fold((0, 0), |(b, k), l| (b + l.filter_bytes, k + l.keys));
    (bytes, keys, bottom)
}

#[test]
fn optimize_filters_for_hits_leaves_the_bottom_unfiltered_and_spends_the_budget_above() {
    // About 2.4 MB of tables: L1..L3 with L3, the bottom, the largest (L4 would start near 2.7).
    const N: u32 = 70_000;
    let dir = siftdb_tests::temp_dir();
    let db = Db::open_stepped(dir.path(), small_tree(10.0, true)).unwrap();
    fill_stepped(&db, N);
    let levels = db.level_info();
    let text = db.property("siftdb.levels").unwrap();
    println!("{text}");
    let (upper_bytes, upper_keys, bottom) = upper(&levels);
    assert!(bottom >= 3, "the test needs a deep tree:\n{text}");
    let b = &levels[bottom];
    // Written there or moved there, no bottom table has a filter.
    assert_eq!(b.unfiltered_tables, b.files, "{text}");
    assert_eq!(b.filter_omitted, "optimize_filters_for_hits", "{text}");
    assert!(b.bits_per_key < 2.0, "{text}");
    // The budget is the upper levels' own: about 10 bits/key there (built figures add headers
    // and rounding), not the whole tree's budget crammed into them, nor less.
    let upper_bits = upper_bytes as f64 * 8.0 / upper_keys as f64;
    assert!((8.5..=13.0).contains(&upper_bits), "{upper_bits}\n{text}");
    // Monkey still orders them: an upper level gets at least the bits of the one below it.
    let filtered: Vec<&LevelInfo> = levels[1..bottom].iter().filter(|l| l.files > 0).collect();
    for w in filtered.windows(2) {
        assert!(
            w[0].planned_bits_per_key + 0.5 >= w[1].planned_bits_per_key,
            "{text}"
        );
    }

    // Present keys are all found, and never ask the bottom level's (missing) filters.
    let before = filter_probes(&db);
    for i in (0..N).step_by(3) {
        assert!(db.get(key(i)).unwrap().is_some(), "key {i} lost");
    }
    let after = filter_probes(&db);
    assert_eq!(after[bottom], before[bottom], "{text}");
    assert!(after[..bottom].iter().sum::<u64>() > before[..bottom].iter().sum::<u64>());

    // The same writes without the option: the tree spends far more filter memory.
    let dir2 = siftdb_tests::temp_dir();
    let db2 = Db::open_stepped(dir2.path(), small_tree(10.0, false)).unwrap();
    fill_stepped(&db2, N);
    let all = |levels: &[LevelInfo]| levels.iter().map(|l| l.filter_bytes).sum::<u64>();
    let (with, without) = (all(&levels), all(&db2.level_info()));
    println!("filter bytes: {with} with optimize_filters_for_hits, {without} without");
    assert!(with * 2 < without, "{with} vs {without}");
}
