//! Under Monkey a table moved into a level planned for fewer ribbon bits keeps its file and is
//! read with its filter thinned to the plan (`Stats::filters_thinned_by_moves`). The oracles:
//! every key is found (a thinned filter never answers "no" wrongly); the moved tables' filters
//! are read at their new plan, so the tree spends what rewrites would have spent (Uniform's
//! memory, within the 2.5 % `compaction_monkey.rs` allows); and the caps are in the manifest: the same filter memory after a reopen, also once the
//! manifest has rolled over to a snapshot of the tree, and after a power loss that scrambles
//! every unsynced page.

use siftdb::{Db, FilterAllocation, LevelInfo, Options};
use siftdb_tests::scattered_key as key;
use siftdb_tests::FaultFs;

const KEYS: u32 = 120_000;

fn options(allocation: FilterAllocation, manifest_bytes: u64) -> Options {
    Options {
        filter_allocation: allocation,
        max_manifest_file_size: manifest_bytes,
        ..siftdb_tests::small_tree()
    }
}

/// Writes every key (stepped: the same tree on every run), settles, and checks each is found.
fn build(db: &Db) {
    for i in 0..KEYS {
        db.put(key(i), [b'v'; 16]).unwrap();
        siftdb_tests::run_due_work(db);
    }
    db.flush().unwrap();
    db.wait_for_compaction().unwrap();
    all_found(db);
}

fn all_found(db: &Db) {
    for i in 0..KEYS {
        assert!(db.get(key(i)).unwrap().is_some(), "key {i} lost");
    }
}

fn filter_bytes(levels: &[LevelInfo]) -> u64 {
    levels.iter().map(|l| l.filter_bytes).sum()
}

#[test]
fn moves_thin_ribbon_filters_to_the_plan_and_the_caps_survive_reopens() {
    for manifest_bytes in [64 << 20, 4 << 10] {
        let dir = siftdb_tests::temp_dir();
        let opts = || options(FilterAllocation::Monkey, manifest_bytes);
        let db = Db::open_stepped(dir.path(), opts()).unwrap();
        build(&db);
        let stats = db.stats();
        let text = db.property("siftdb.levels").unwrap();
        assert!(
            stats.filters_thinned_by_moves > 0,
            "no filter thinned by {} moves\n{text}",
            stats.trivial_moves
        );
        let levels = db.level_info();
        // Monkey still orders the levels: an upper level reads at least the bits of the one
        // below it.
        let filtered: Vec<&LevelInfo> = levels[1..].iter().filter(|l| l.files > 0).collect();
        assert!(filtered.len() >= 3, "{text}");
        for w in filtered.windows(2) {
            assert!(
                w[0].planned_bits_per_key + 0.5 >= w[1].planned_bits_per_key,
                "{text}"
            );
        }
        drop(db);

        let db = Db::open(dir.path(), opts()).unwrap();
        all_found(&db);
        assert_eq!(
            filter_bytes(&db.level_info()),
            filter_bytes(&levels),
            "filter memory changed across a reopen (manifest limit {manifest_bytes})\n{text}\n{}",
            db.property("siftdb.levels").unwrap()
        );
    }
}

#[test]
fn thinned_moves_keep_the_tree_at_uniforms_filter_memory() {
    let built = |allocation| {
        let dir = siftdb_tests::temp_dir();
        let db = Db::open_stepped(dir.path(), options(allocation, 64 << 20)).unwrap();
        build(&db);
        (filter_bytes(&db.level_info()), db.stats())
    };
    let (monkey, m_stats) = built(FilterAllocation::Monkey);
    let (uniform, _) = built(FilterAllocation::Uniform);
    let gap = (monkey as f64 - uniform as f64).abs() / uniform as f64;
    assert!(
        gap <= 0.025,
        "monkey {monkey} B against uniform {uniform} B of filters ({:.1} %)",
        gap * 100.0
    );
    assert!(m_stats.filters_thinned_by_moves > 0);
}

/// The caps are made durable with the moves' manifest edits: after power loss (unsynced pages
/// scrambled) the tree reads with the same filters and finds every key (all flushed before).
#[test]
fn thinned_moves_survive_power_loss() {
    for seed in [1, 2, 3] {
        let fs = FaultFs::new();
        let dir = std::path::Path::new("/thinned");
        let opts = || Options {
            fs: std::sync::Arc::new(fs.clone()),
            ..options(FilterAllocation::Monkey, 16 << 10)
        };
        let db = Db::open_stepped(dir, opts()).unwrap();
        build(&db);
        assert!(db.stats().filters_thinned_by_moves > 0);
        let before = filter_bytes(&db.level_info());
        fs.crash();
        drop(db);
        fs.restart_scrambled(seed);
        let db = Db::open(dir, opts()).unwrap();
        all_found(&db);
        assert_eq!(filter_bytes(&db.level_info()), before, "seed {seed}");
    }
}
