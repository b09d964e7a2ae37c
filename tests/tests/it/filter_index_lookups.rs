//! The tree-wide filter index (`Options::filter_index_bits_per_key`): a key it rules out is
//! answered without probing any table's filter, and it never rules out a key a table holds —
//! after flushes, compactions, rebuilds and reopens, and while all of them run at once.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;

use siftdb::{Db, Options};

fn small_tree() -> Options {
    Options {
        write_buffer_size: 32 << 10,
        target_file_size_base: 16 << 10,
        max_bytes_for_level_base: 64 << 10,
        max_bytes_for_level_multiplier: 4.0,
        ..Options::default()
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

/// Filter probes of every level so far.
fn table_filter_checks(db: &Db) -> u64 {
    db.stats().levels.iter().map(|l| l.checked).sum()
}

/// A small tree of the 20,000 even keys `key(0)`, `key(2)`, …, compactions settled.
fn even_keys_settled(dir: &std::path::Path) -> Db {
    let db = Db::open(dir, small_tree()).unwrap();
    for i in 0..20_000u32 {
        db.put(key(2 * i), i.to_le_bytes()).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compaction().unwrap();
    db
}

#[test]
fn filter_index_rules_out_missing_keys_without_probing_tables() {
    let dir = siftdb_tests::temp_dir();
    let db = even_keys_settled(dir.path());
    assert_eq!(db.build_filter_index().unwrap(), 1);
    let levels = db.property("siftdb.levels").unwrap();
    assert!(levels.contains("\nindex "), "{levels}");
    // Missing keys first: a window of lookups that all find their keys retires the index.
    let before = db.stats();
    let probes_before = table_filter_checks(&db);
    for i in 0..20_000u32 {
        assert_eq!(db.get(key(2 * i + 1)).unwrap(), None);
    }
    let after = db.stats();
    let useful = after.filter_index_useful - before.filter_index_useful;
    let false_positives = after.filter_index_false_positives - before.filter_index_false_positives;
    assert_eq!(useful + false_positives, 20_000);
    // Sized at 10 bits per key for twice the keys: well under 1 % false positives.
    assert!(false_positives < 200, "{false_positives} false positives");
    let probes = table_filter_checks(&db) - probes_before;
    assert!(
        probes <= 6 * false_positives,
        "{probes} table filter probes for {false_positives} index false positives"
    );
    assert!(after.filter_index_bytes > 0);
    assert!(after.cache.pinned_usage >= after.filter_index_bytes as usize);
    for i in 0..20_000u32 {
        assert_eq!(
            db.get(key(2 * i)).unwrap(),
            Some(i.to_le_bytes().to_vec()),
            "key {i}"
        );
    }
}

#[test]
fn filter_index_covers_flushed_and_compacted_tables() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), small_tree()).unwrap();
    for i in 0..5_000u32 {
        db.put(key(i), b"first").unwrap();
    }
    db.flush().unwrap();
    db.build_filter_index().unwrap();
    // New tables after the rebuild: flushed keys are added to the filter, compaction outputs
    // inherit its cover.
    for i in 5_000..15_000u32 {
        db.put(key(i), b"second").unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    assert_every_table_covered(&db);
    // Missing keys first (present ones may retire the index).
    let before = db.stats().filter_index_useful;
    for i in 15_000..20_000u32 {
        assert_eq!(db.get(key(i)).unwrap(), None);
    }
    // Sized for 10,000 keys, it now holds 15,000 (6.7 bits per key: about 5 % false
    // positives) until the background thread rebuilds it.
    let useful = db.stats().filter_index_useful - before;
    assert!(useful > 4_500, "{useful} of 5,000 ruled out");
    for i in 0..15_000u32 {
        assert!(db.get(key(i)).unwrap().is_some(), "key {i}");
    }
}

/// The `index` row of `siftdb.levels` shows as many covered tables as there are.
fn assert_every_table_covered(db: &Db) {
    let levels = db.property("siftdb.levels").unwrap();
    let row = levels
        .lines()
        .find(|l| l.starts_with("index"))
        .unwrap_or_else(|| panic!("no index row: {levels}"));
    let covered = row.split_whitespace().nth(1).unwrap();
    let (c, f) = covered.split_once('/').unwrap();
    assert_eq!(c, f, "every table covered: {row}");
}

/// Rebuilds run back to back while flushes and compactions install tables: one that a flush
/// or a compaction registered during a rebuild's scan, or installed just after its start, must
/// come out covered once the tree is quiet (none was written when no index existed). The last
/// rebuild of each round overlaps the writes, so that no later one heals what it missed.
#[test]
fn filter_index_covers_tables_installed_while_rebuilds_run() {
    let dir = siftdb_tests::temp_dir();
    let db = Arc::new(Db::open(dir.path(), small_tree()).unwrap());
    db.put(key(0), b"v").unwrap();
    db.flush().unwrap();
    db.build_filter_index().unwrap();
    for round in 0..6u32 {
        let done = Arc::new(AtomicBool::new(false));
        let rebuilder = {
            let (db, done) = (Arc::clone(&db), Arc::clone(&done));
            std::thread::spawn(move || {
                while !done.load(Ordering::Acquire) {
                    db.build_filter_index().unwrap();
                }
            })
        };
        for i in 1..8_000u32 {
            db.put(key(round * 8_000 + i), i.to_le_bytes()).unwrap();
        }
        done.store(true, Ordering::Release);
        rebuilder.join().unwrap();
        db.flush().unwrap();
        db.wait_for_compaction().unwrap();
        assert_every_table_covered(&db);
    }
}

#[test]
fn filter_index_is_rebuilt_after_reopen() {
    let dir = siftdb_tests::temp_dir();
    {
        let db = Db::open(dir.path(), small_tree()).unwrap();
        for i in 0..3_000u32 {
            db.put(key(i), b"v").unwrap();
        }
        db.flush().unwrap();
        db.build_filter_index().unwrap();
        db.close().unwrap();
    }
    let db = Db::open(dir.path(), small_tree()).unwrap();
    // Until an index covers the reopened tables, lookups probe them by their own filters.
    for i in 0..3_000u32 {
        assert!(db.get(key(i)).unwrap().is_some(), "key {i}");
    }
    db.build_filter_index().unwrap();
    for i in 0..3_000u32 {
        assert!(db.get(key(i)).unwrap().is_some(), "key {i}");
    }
    let before = db.stats().filter_index_useful;
    for i in 3_000..4_000u32 {
        assert_eq!(db.get(key(i)).unwrap(), None);
    }
    assert!(db.stats().filter_index_useful - before > 980);
}

#[test]
fn filter_index_off_keeps_no_index() {
    let dir = siftdb_tests::temp_dir();
    let options = Options {
        filter_index_bits_per_key: 0.0,
        ..small_tree()
    };
    let db = Db::open(dir.path(), options).unwrap();
    for i in 0..2_000u32 {
        db.put(key(i), b"v").unwrap();
    }
    db.flush().unwrap();
    assert_eq!(db.build_filter_index().unwrap(), 0);
    assert_eq!(db.get(key(9_999_999)).unwrap(), None);
    let stats = db.stats();
    assert_eq!(stats.filter_index_checked, 0);
    assert_eq!(stats.filter_index_bytes, 0);
    assert!(!db.property("siftdb.levels").unwrap().contains("\nindex "));
}

#[test]
fn filter_index_bits_per_key_out_of_range_is_refused() {
    for bits in [-1.0, 0.5, 33.0, f64::NAN, f64::INFINITY] {
        let dir = siftdb_tests::temp_dir();
        let options = Options {
            filter_index_bits_per_key: bits,
            ..Options::default()
        };
        match Db::open(dir.path(), options) {
            Err(siftdb::Error::InvalidArgument(msg)) => {
                assert!(msg.contains("filter_index_bits_per_key"), "{msg}")
            }
            other => panic!("bits {bits}: {other:?}"),
        }
    }
}

/// Writers flush and compact while rebuilds run back to back and readers check every key a
/// writer acknowledged: a key must never be ruled out once written, whatever the interleaving
/// of flush marks, compaction inheritance and a rebuild's swap.
#[test]
fn filter_index_never_hides_an_acknowledged_key_under_concurrency() {
    let dir = siftdb_tests::temp_dir();
    let db = Arc::new(Db::open(dir.path(), small_tree()).unwrap());
    let written = Arc::new(AtomicU32::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, written) = (Arc::clone(&db), Arc::clone(&written));
        std::thread::spawn(move || {
            for i in 0..40_000u32 {
                db.put(key(i), i.to_le_bytes()).unwrap();
                written.store(i + 1, Ordering::Release);
                if i % 5_000 == 4_999 {
                    db.flush().unwrap();
                }
            }
        })
    };
    let rebuilder = {
        let (db, done) = (Arc::clone(&db), Arc::clone(&done));
        std::thread::spawn(move || {
            let mut rebuilds = 0;
            while !done.load(Ordering::Acquire) {
                rebuilds += db.build_filter_index().unwrap();
            }
            rebuilds
        })
    };
    let readers: Vec<_> = (0..2u32)
        .map(|r| {
            let (db, written, done) = (Arc::clone(&db), Arc::clone(&written), Arc::clone(&done));
            std::thread::spawn(move || {
                let mut n = r;
                while !done.load(Ordering::Acquire) {
                    let upto = written.load(Ordering::Acquire);
                    if upto == 0 {
                        continue;
                    }
                    let i = n.wrapping_mul(2_654_435_761) % upto;
                    assert_eq!(
                        db.get(key(i)).unwrap(),
                        Some(i.to_le_bytes().to_vec()),
                        "key {i}"
                    );
                    n = n.wrapping_add(1);
                }
            })
        })
        .collect();
    writer.join().unwrap();
    db.flush().unwrap();
    db.wait_for_compaction().unwrap();
    done.store(true, Ordering::Release);
    for r in readers {
        r.join().unwrap();
    }
    let rebuilds = rebuilder.join().unwrap();
    assert!(rebuilds > 0);
    db.build_filter_index().unwrap();
    let keys: Vec<Vec<u8>> = (0..40_000u32).map(key).collect();
    for (i, got) in db.multi_get(&keys).into_iter().enumerate() {
        assert_eq!(
            got.unwrap(),
            Some((i as u32).to_le_bytes().to_vec()),
            "key {i}"
        );
    }
}

#[test]
fn filter_index_covers_the_empty_key_whichever_table_holds_it() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), small_tree()).unwrap();
    // Two tables, the newer scanned first: the empty key opens the older one.
    db.put(b"", b"empty").unwrap();
    db.flush().unwrap();
    db.put(b"b", b"bee").unwrap();
    db.flush().unwrap();
    db.build_filter_index().unwrap();
    assert_eq!(db.get(b"").unwrap().as_deref(), Some(&b"empty"[..]));
    let got: Vec<_> = db
        .multi_get(&[&b""[..], b"a", b"b"])
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(
        got,
        vec![Some(b"empty".to_vec()), None, Some(b"bee".to_vec())]
    );
}

#[test]
fn filter_index_steps_aside_while_lookups_find_their_keys_and_returns_when_they_miss() {
    use std::time::{Duration, Instant};
    let dir = siftdb_tests::temp_dir();
    let db = even_keys_settled(dir.path());
    db.build_filter_index().unwrap();
    assert!(db.stats().filter_index_bytes > 0);
    // Present keys only: the index rules nothing out and only costs, so it goes.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut i = 0u32;
    while db.stats().filter_index_retirements == 0 {
        assert!(Instant::now() < deadline, "the index never stepped aside");
        for _ in 0..1000 {
            assert!(db.get(key(2 * (i % 20_000))).unwrap().is_some());
            i += 1;
        }
    }
    let retired = db.stats();
    assert_eq!(retired.filter_index_bytes, 0);
    assert!(!db.property("siftdb.levels").unwrap().contains("\nindex "));
    // Lookups without it are answered as before.
    assert!(db.get(key(4)).unwrap().is_some());
    assert!(db.get(key(5)).unwrap().is_none());
    // Missing keys: it comes back.
    let deadline = Instant::now() + Duration::from_secs(60);
    while db.stats().filter_index_rebuilds == retired.filter_index_rebuilds {
        assert!(Instant::now() < deadline, "the index never returned");
        for _ in 0..1000 {
            assert!(db.get(key(2 * (i % 20_000) + 1)).unwrap().is_none());
            i += 1;
        }
    }
    assert!(db.stats().filter_index_bytes > 0);
    // And rules missing keys out again.
    let before = db.stats().filter_index_useful;
    for i in 0..100 {
        assert!(db.get(key(2 * i + 1)).unwrap().is_none());
    }
    assert!(db.stats().filter_index_useful - before >= 90);
}

#[test]
fn filter_index_waits_after_an_open_until_lookups_miss() {
    use std::time::{Duration, Instant};
    let dir = siftdb_tests::temp_dir();
    drop(even_keys_settled(dir.path()));
    let db = Db::open(dir.path(), small_tree()).unwrap();
    // Lookups that find their keys, over three usage windows and ticks of the background
    // thread: no scan of the tables, no cache room taken.
    for i in 0..30_000u32 {
        assert!(db.get(key(2 * (i % 20_000))).unwrap().is_some());
    }
    std::thread::sleep(Duration::from_millis(300));
    let stats = db.stats();
    assert_eq!(stats.filter_index_rebuilds, 0);
    assert_eq!(stats.filter_index_bytes, 0);
    // Lookups that miss: the index is built.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut i = 0u32;
    while db.stats().filter_index_rebuilds == 0 {
        assert!(
            Instant::now() < deadline,
            "no index was built for missing keys"
        );
        for _ in 0..1000 {
            assert!(db.get(key(2 * (i % 20_000) + 1)).unwrap().is_none());
            i += 1;
        }
    }
    assert!(db.stats().filter_index_bytes > 0);
    assert_every_table_covered(&db);
}
