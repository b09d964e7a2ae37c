//! The memo of hot false positives (`Options::false_positive_memo_bytes`): a remembered false
//! positive costs no index or data block read, entries leave with their table, and the memo
//! never hides a key a table holds (not even one written after a snapshot it was looked up at).

use siftdb::{Db, Options};

fn options(memo_bytes: usize) -> Options {
    Options {
        write_buffer_size: 64 << 10,
        target_file_size_base: 64 << 10,
        max_bytes_for_level_base: 256 << 10,
        // Loose filters: many missing keys are false positives of some table.
        filter_bits_per_key: 2.0,
        false_positive_memo_bytes: memo_bytes,
        ..Options::default()
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{:08}", i.wrapping_mul(2_654_435_761) % 10_000_000).into_bytes()
}

fn missing(i: u32) -> Vec<u8> {
    format!("key{:08}x", i).into_bytes()
}

fn filled(memo_bytes: usize) -> (tempfile::TempDir, Db) {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), options(memo_bytes)).unwrap();
    for i in 0..20_000u32 {
        db.put(key(i), format!("v{i}")).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compaction().unwrap();
    (dir, db)
}

/// Data blocks used by point lookups so far, over all levels.
fn data_blocks(db: &Db) -> u64 {
    db.stats().filter_total().data_block_accesses
}

/// Missing keys that are false positives of some table (a lookup read a data block for them).
fn false_positives(db: &Db, want: usize) -> Vec<Vec<u8>> {
    let mut found = Vec::new();
    for i in 0.. {
        let k = missing(i);
        let before = data_blocks(db);
        assert_eq!(db.get(&k).unwrap(), None);
        if data_blocks(db) > before {
            found.push(k);
            if found.len() == want {
                break;
            }
        }
        assert!(i < 1_000_000, "no false positives at 2 bits/key?");
    }
    found
}

#[test]
fn memo_a_remembered_false_positive_reads_no_data_block() {
    let (_dir, db) = filled(256 << 10);
    let hot = false_positives(&db, 200);
    let memo = db.stats().memo;
    assert!(memo.inserts >= 200, "{memo:?}");
    let before = data_blocks(&db);
    let hits_before = memo.hits;
    for _ in 0..5 {
        for k in &hot {
            assert_eq!(db.get(k).unwrap(), None);
        }
    }
    assert_eq!(
        data_blocks(&db),
        before,
        "a memoized false positive read a data block"
    );
    let stats = db.stats();
    assert!(stats.memo.hits >= hits_before + 1000, "{:?}", stats.memo);
    let per_level: u64 = stats.levels.iter().map(|l| l.memo_hits).sum();
    assert_eq!(per_level, stats.memo.hits);
    assert!(db.property("siftdb.levels").unwrap().contains("memo hits"));
}

#[test]
fn memo_off_reads_the_blocks_every_time() {
    let (_dir, db) = filled(0);
    let hot = false_positives(&db, 50);
    let before = data_blocks(&db);
    for k in &hot {
        assert_eq!(db.get(k).unwrap(), None);
    }
    assert!(data_blocks(&db) >= before + 50);
    assert_eq!(db.stats().memo, siftdb::MemoStats::default());
}

#[test]
fn memo_entries_leave_with_their_tables() {
    let (_dir, db) = filled(256 << 10);
    false_positives(&db, 100);
    let held = db.stats().memo.entries;
    assert!(held >= 100);
    // Rewrite every table: the old ones close, and their entries go with them.
    db.compact_range(None, None).unwrap();
    let memo = db.stats().memo;
    assert!(memo.forgotten >= held, "{memo:?}");
    assert_eq!(memo.entries, 0, "{memo:?}");
}

#[test]
fn memo_never_hides_a_key_a_table_holds() {
    let (_dir, db) = filled(256 << 10);
    // A key written after a snapshot: a table holding it says NotFound at that snapshot, which
    // must not be remembered as "not in the table".
    let snap = db.snapshot();
    let late: Vec<Vec<u8>> = (0..300)
        .map(|i| format!("late{i:05}").into_bytes())
        .collect();
    for k in &late {
        db.put(k, b"here").unwrap();
    }
    db.flush().unwrap();
    for k in &late {
        assert_eq!(snap.get(k).unwrap(), None);
    }
    for k in &late {
        assert_eq!(db.get(k).unwrap(), Some(b"here".to_vec()), "{k:?} hidden");
    }
    // A remembered false positive that is then written: found (the new version is in the
    // memtable, then in a new table with its own id).
    let hot = false_positives(&db, 50);
    for k in &hot {
        db.put(k, b"now").unwrap();
    }
    for k in &hot {
        assert_eq!(db.get(k).unwrap(), Some(b"now".to_vec()));
    }
    db.flush().unwrap();
    db.wait_for_compaction().unwrap();
    for k in &hot {
        assert_eq!(db.get(k).unwrap(), Some(b"now".to_vec()));
    }
}
