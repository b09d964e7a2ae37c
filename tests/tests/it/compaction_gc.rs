//! Garbage collection by compaction: overwritten and deleted keys give their space back after a
//! full compaction, while snapshots keep reading what they saw.

use siftdb::{Db, Options};

fn table_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sst"))
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum()
}

fn options() -> Options {
    Options {
        write_buffer_size: 64 << 10,
        target_file_size_base: 64 << 10,
        max_bytes_for_level_base: 256 << 10,
        level0_file_num_compaction_trigger: 4,
        ..Options::default()
    }
}

#[test]
fn full_compaction_reclaims_overwritten_and_deleted_keys() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), options()).unwrap();
    const N: u32 = 4000;
    for round in 0..3u8 {
        for i in 0..N {
            db.put(format!("key{i:06}").as_bytes(), [round; 100])
                .unwrap();
        }
        db.flush().unwrap();
    }
    let snapshot = db.snapshot();
    for i in (0..N).step_by(2) {
        db.delete(format!("key{i:06}").as_bytes()).unwrap();
    }
    db.flush().unwrap();
    let before = table_bytes(dir.path());

    // With a snapshot alive, the deleted values it sees must survive compaction.
    db.compact_range(None, None).unwrap();
    assert_eq!(snapshot.get(b"key000000").unwrap(), Some(vec![2u8; 100]));
    let with_snapshot = table_bytes(dir.path());
    drop(snapshot);

    db.compact_range(None, None).unwrap();
    let after = table_bytes(dir.path());
    // Live data: N/2 keys of ~120 bytes on disk; before: up to 3 versions of every key plus
    // tombstones (background compaction may already have merged some).
    let live_estimate = u64::from(N / 2) * 150;
    assert!(
        after < live_estimate && after * 2 < before,
        "before {before}, with snapshot {with_snapshot}, after {after}, live {live_estimate}"
    );
    assert!(after < with_snapshot);
    for i in 0..N {
        let want = (i % 2 == 1).then(|| vec![2u8; 100]);
        assert_eq!(
            db.get(format!("key{i:06}").as_bytes()).unwrap(),
            want,
            "key{i}"
        );
    }
    let stats = db.stats();
    assert!(stats.compactions > 0);
    assert_eq!(
        db.property("siftdb.num-files-at-level0").as_deref(),
        Some("0")
    );
    drop(db);
    let db = Db::open(dir.path(), options()).unwrap();
    assert_eq!(db.iter().count() as u32, N / 2);
}

#[test]
fn background_compaction_keeps_l0_small_and_builds_levels() {
    let dir = siftdb_tests::temp_dir();
    let options = Options {
        write_buffer_size: 16 << 10,
        target_file_size_base: 16 << 10,
        max_bytes_for_level_base: 64 << 10,
        max_bytes_for_level_multiplier: 4.0,
        ..options()
    };
    let db = Db::open(dir.path(), options).unwrap();
    for i in 0..30_000u32 {
        db.put(
            format!("k{:08}", i.wrapping_mul(2_654_435_761) % 1_000_000).as_bytes(),
            [7; 60],
        )
        .unwrap();
    }
    db.flush().unwrap();
    // Let the background catch up.
    for _ in 0..100 {
        if db
            .property("siftdb.num-files-at-level0")
            .as_deref()
            .unwrap_or("9")
            .parse::<usize>()
            .unwrap_or(9)
            < 4
        {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let levels = db.property("siftdb.levels").unwrap();
    let deep = (2..7).any(|l| {
        db.property(&format!("siftdb.num-files-at-level{l}"))
            .as_deref()
            != Some("0")
    });
    assert!(deep, "expected data below L1:\n{levels}");
    // Deeper levels get ribbon filters under the default policy.
    assert!(levels.contains("ribbon"), "{levels}");
    for i in (0..30_000u32).step_by(97) {
        let k = format!("k{:08}", i.wrapping_mul(2_654_435_761) % 1_000_000);
        assert_eq!(db.get(k.as_bytes()).unwrap(), Some(vec![7; 60]));
    }
}

#[test]
fn orphan_outputs_of_an_interrupted_compaction_are_deleted_on_open() {
    // The state a crash between writing compaction outputs and installing the manifest edit
    // leaves: table files no version names. They must never be read, and open deletes them.
    let dir = siftdb_tests::temp_dir();
    {
        let db = Db::open(dir.path(), options()).unwrap();
        for i in 0..3000u32 {
            db.put(format!("key{i:06}").as_bytes(), b"live").unwrap();
        }
        db.flush().unwrap();
    }
    let live: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sst"))
        .collect();
    // An orphan holding different values for the same keys, numbered above everything.
    let orphan = dir.path().join("999990.sst");
    std::fs::copy(&live[0], &orphan).unwrap();
    std::fs::write(dir.path().join("999991.sst"), b"half-written garbage").unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    assert!(!orphan.exists());
    assert!(!dir.path().join("999991.sst").exists());
    for i in (0..3000u32).step_by(37) {
        assert_eq!(
            db.get(format!("key{i:06}").as_bytes()).unwrap(),
            Some(b"live".to_vec())
        );
    }
    // New files never reuse the orphans' numbers.
    db.put(b"after", b"1").unwrap();
    db.flush().unwrap();
    let newest = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| {
            e.unwrap()
                .file_name()
                .to_str()?
                .strip_suffix(".sst")?
                .parse::<u64>()
                .ok()
        })
        .max()
        .unwrap();
    assert!(newest > 999_991, "{newest}");
}
