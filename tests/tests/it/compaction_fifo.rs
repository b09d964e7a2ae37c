//! FIFO compaction (`CompactionStyle::Fifo`): tables are dropped oldest first once all of them
//! hold more than `max_table_files_size`, or once older than the TTL. The oracle: the tables'
//! bytes stay under the limit, and a read returns a key's newest value or nothing — never a
//! value an overwrite replaced (the newer table went while the older stayed) — and every key
//! newer than the newest one dropped is still there.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use siftdb::{Clock, CompactionStyle, Db, FifoCompactionOptions, Options};

const LIMIT: u64 = 96 << 10;

fn options() -> Options {
    Options {
        compaction_style: CompactionStyle::Fifo,
        compaction_options_fifo: FifoCompactionOptions {
            max_table_files_size: LIMIT,
            ttl: None,
        },
        write_buffer_size: 16 << 10,
        // Far below the tables FIFO keeps: writes must not stall on the L0 count.
        level0_file_num_compaction_trigger: 2,
        level0_stop_writes_trigger: 4,
        ..Options::default()
    }
}

fn table_bytes(db: &Db) -> u64 {
    db.level_info().iter().map(|l| l.bytes).sum()
}

fn event_key(i: u64) -> Vec<u8> {
    format!("event:{i:010}").into_bytes()
}

#[test]
fn fifo_time_series_stays_under_its_limit_and_keeps_the_newest_events() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    let events = 20_000u64;
    for i in 0..events {
        db.put(event_key(i), format!("payload {i:06} {}", "x".repeat(40)))
            .unwrap();
        if i % 2_000 == 1_999 {
            db.flush().unwrap();
            db.wait_for_compaction().unwrap();
            assert!(table_bytes(&db) <= LIMIT, "{} > {LIMIT}", table_bytes(&db));
        }
    }
    db.flush().unwrap();
    db.wait_for_compaction().unwrap();
    let stats = db.stats();
    assert!(stats.fifo_tables_dropped > 0, "nothing was dropped");
    assert_eq!(stats.compactions, 0, "FIFO never merges");
    assert!(table_bytes(&db) <= LIMIT);
    // What is left is a suffix of the series: the newest events, each with its value.
    let kept: Vec<u64> = (0..events)
        .filter(|&i| db.get(event_key(i)).unwrap().is_some())
        .collect();
    let first = *kept.first().expect("the newest events are kept");
    assert_eq!(
        kept,
        (first..events).collect::<Vec<_>>(),
        "a gap in the kept events"
    );
    assert!(first > 0);
    let scanned = db.iter().count() as u64;
    assert_eq!(scanned, events - first);
    // Reopened, the same.
    drop(db);
    let db = Db::open(dir.path(), options()).unwrap();
    assert_eq!(db.iter().count() as u64, events - first);
}

#[test]
fn fifo_reads_never_return_a_replaced_value() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    let keys = 300u64;
    let mut newest: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    for round in 0..40u64 {
        for k in 0..keys {
            // Every round rewrites a different share of the keys.
            if (k + round) % 3 == 0 {
                continue;
            }
            let key = format!("k{k:04}").into_bytes();
            let value = format!("round {round:03} {}", "v".repeat(60)).into_bytes();
            db.put(&key, &value).unwrap();
            newest.insert(key, value);
        }
        db.flush().unwrap();
        db.wait_for_compaction().unwrap();
        for (key, value) in &newest {
            if let Some(got) = db.get(key).unwrap() {
                assert_eq!(&got, value, "an older value of {key:?} came back");
            }
        }
    }
    assert!(db.stats().fifo_tables_dropped > 0);
    // The last round's keys are in the newest table, never dropped.
    for k in (0..keys).filter(|k| (k + 39) % 3 != 0) {
        let key = format!("k{k:04}").into_bytes();
        assert_eq!(db.get(&key).unwrap().as_ref(), newest.get(&key));
    }
}

/// A clock that moves only when told to.
#[derive(Debug)]
struct ManualClock(AtomicU64);

impl Clock for ManualClock {
    fn now(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(self.0.load(Ordering::SeqCst))
    }
}

#[test]
fn fifo_drops_tables_past_their_ttl() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock(AtomicU64::new(1_800_000_000)));
    let options = Options {
        compaction_options_fifo: FifoCompactionOptions {
            max_table_files_size: u64::MAX,
            ttl: Some(Duration::from_secs(3600)),
        },
        clock: clock.clone(),
        ..options()
    };
    let db = Db::open(dir.path(), options.clone()).unwrap();
    db.put(b"old", b"1").unwrap();
    db.flush().unwrap();
    clock.0.fetch_add(1800, Ordering::SeqCst);
    db.put(b"newer", b"2").unwrap();
    db.flush().unwrap();
    db.wait_for_compaction().unwrap();
    assert_eq!(
        db.get(b"old").unwrap(),
        Some(b"1".to_vec()),
        "not yet an hour old"
    );
    // An hour after the first table was written: it goes, the second stays.
    clock.0.fetch_add(1800, Ordering::SeqCst);
    db.wait_for_compaction().unwrap();
    assert_eq!(db.get(b"old").unwrap(), None);
    assert_eq!(db.get(b"newer").unwrap(), Some(b"2".to_vec()));
    assert_eq!(db.stats().fifo_tables_dropped, 1);
    // Reopened after another hour: the second goes too, while the memtable's never did.
    drop(db);
    clock.0.fetch_add(3600, Ordering::SeqCst);
    let db = Db::open(dir.path(), options).unwrap();
    db.wait_for_compaction().unwrap();
    assert_eq!(db.get(b"newer").unwrap(), None);
    assert_eq!(table_bytes(&db), 0);
}
