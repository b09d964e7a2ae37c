//! Universal compaction (`CompactionStyle::Universal`): sorted runs of similar size merge into
//! one level each. The oracles: contents match a `BTreeMap` through overwrites, deletes and
//! range deletes, before and after reopening (also under the leveled style: a database may
//! switch); the tree settles below `level0_file_num_compaction_trigger` runs; and it writes
//! fewer compaction bytes than leveled compaction of the same writes.

use std::collections::BTreeMap;

use siftdb::{CompactionStyle, Db, Options};

fn options(style: CompactionStyle) -> Options {
    let mut o = Options {
        compaction_style: style,
        write_buffer_size: 32 << 10,
        target_file_size_base: 32 << 10,
        max_bytes_for_level_base: 128 << 10,
        max_bytes_for_level_multiplier: 4.0,
        level0_file_num_compaction_trigger: 4,
        level0_stop_writes_trigger: 20,
        ..Options::default()
    };
    o.compaction_options_universal
        .max_size_amplification_percent = 200;
    o
}

/// Sorted runs: each L0 table, and each non-empty level below.
fn sorted_runs(db: &Db) -> usize {
    let levels = db.level_info();
    levels[0].files + levels[1..].iter().filter(|l| l.files > 0).count()
}

/// Writes a deterministic mix of puts, overwrites, deletes and range deletes; returns the model.
fn write_mix(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
    write_mix_with(db, |_| {})
}

/// [`write_mix`], calling `after_write` after every write.
fn write_mix_with(db: &Db, after_write: impl Fn(&Db)) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in 0..60_000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let key = format!("key{:06}", x % 20_000).into_bytes();
        match i % 50 {
            0 => {
                db.delete(&key).unwrap();
                model.remove(&key);
            }
            1 if i % 5_000 == 1 => {
                let end = format!("key{:06}", x % 20_000 + 40).into_bytes();
                db.delete_range(&key, &end).unwrap();
                let doomed: Vec<Vec<u8>> = model
                    .range(key.clone()..end)
                    .map(|(k, _)| k.clone())
                    .collect();
                for k in doomed {
                    model.remove(&k);
                }
            }
            _ => {
                let value = format!("v{i}-{}", "u".repeat(20)).into_bytes();
                db.put(&key, &value).unwrap();
                model.insert(key, value);
            }
        }
        after_write(db);
    }
    db.flush().unwrap();
    db.wait_for_compaction().unwrap();
    model
}

fn contents(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
    db.iter().map(|r| r.unwrap()).collect()
}

#[test]
fn universal_matches_the_model_and_settles_below_its_trigger() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options(CompactionStyle::Universal)).unwrap();
    let model = write_mix(&db);
    assert!(db.stats().compactions > 0, "no universal compaction ran");
    assert!(
        sorted_runs(&db) < 4,
        "{} runs after settling",
        sorted_runs(&db)
    );
    assert_eq!(contents(&db), model);
    for (k, v) in model.iter().step_by(97) {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
    }
    drop(db);
    let db = Db::open(dir.path(), options(CompactionStyle::Universal)).unwrap();
    assert_eq!(contents(&db), model);
    drop(db);
    // The same tables under leveled compaction: valid, and compacted into its shape.
    let db = Db::open(dir.path(), options(CompactionStyle::Level)).unwrap();
    db.put(b"after", b"switch").unwrap();
    db.flush().unwrap();
    db.wait_for_compaction().unwrap();
    let mut expected = model;
    expected.insert(b"after".to_vec(), b"switch".to_vec());
    assert_eq!(contents(&db), expected);
}

#[test]
fn universal_rewrites_fewer_bytes_than_leveled() {
    // Stepped, so both styles see the same tree at every pick: with background threads the
    // bytes depend on how far the writer runs ahead of compaction (a loaded machine once gave
    // universal more).
    let written = |style| {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open_stepped(dir.path(), options(style)).unwrap();
        let model = write_mix_with(&db, siftdb_tests::run_due_work);
        assert_eq!(contents(&db), model);
        db.stats().compaction_bytes_written
    };
    let universal = written(CompactionStyle::Universal);
    let leveled = written(CompactionStyle::Level);
    assert!(universal > 0, "no universal compaction wrote a table");
    assert!(
        universal < leveled,
        "universal wrote {universal} compaction bytes, leveled {leveled}"
    );
}
