//! `Options::compaction_filter`: values are kept, removed or changed as compactions rewrite
//! them; a removed value never lets an older version resurface; what a snapshot sees never
//! changes; a filter that panics fails the compaction cleanly and loses nothing.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use siftdb::{CompactionDecision, CompactionFilter, Db, Error, Options};

/// Removes values "remove-me", rewrites values starting with "old:" to "new:…", keeps the rest;
/// panics while `panicking` is set.
#[derive(Default)]
struct TestFilter {
    calls: AtomicUsize,
    panicking: AtomicBool,
}

impl CompactionFilter for TestFilter {
    fn name(&self) -> &str {
        "test-filter"
    }

    fn filter(&self, _level: usize, _key: &[u8], value: &[u8]) -> CompactionDecision {
        self.calls.fetch_add(1, Ordering::Relaxed);
        assert!(
            !self.panicking.load(Ordering::Relaxed),
            "the filter was told to panic"
        );
        if value == b"remove-me" {
            CompactionDecision::Remove
        } else if let Some(rest) = value.strip_prefix(b"old:") {
            CompactionDecision::ChangeValue([b"new:", rest].concat())
        } else {
            CompactionDecision::Keep
        }
    }
}

fn open(dir: &std::path::Path, filter: &Arc<TestFilter>) -> Db {
    let options = Options {
        compaction_filter: Some(filter.clone()),
        ..Options::default()
    };
    Db::open(dir, options).expect("open")
}

#[test]
fn values_are_kept_removed_or_changed() {
    let dir = siftdb_tests::temp_dir();
    let filter = Arc::new(TestFilter::default());
    let db = open(dir.path(), &filter);
    for i in 0..300u32 {
        let value = match i % 3 {
            0 => "remove-me".to_string(),
            1 => format!("old:{i}"),
            _ => format!("keep:{i}"),
        };
        db.put(format!("k{i:04}"), value).expect("put");
    }
    // Before any compaction, every value reads as written.
    assert_eq!(db.get("k0000").expect("get"), Some(b"remove-me".to_vec()));
    db.compact_range(None, None).expect("compact");
    for i in 0..300u32 {
        let want = match i % 3 {
            0 => None,
            1 => Some(format!("new:{i}").into_bytes()),
            _ => Some(format!("keep:{i}").into_bytes()),
        };
        assert_eq!(db.get(format!("k{i:04}")).expect("get"), want, "k{i:04}");
    }
    let stats = db.stats();
    assert_eq!(
        (
            stats.compaction_filter_removed,
            stats.compaction_filter_changed
        ),
        (100, 100)
    );
    assert_eq!(db.iter().count(), 200);
    assert_eq!(db.iter().rev().count(), 200);
}

#[test]
fn a_removed_value_never_lets_an_older_version_resurface_and_snapshots_keep_their_view() {
    let dir = siftdb_tests::temp_dir();
    let filter = Arc::new(TestFilter::default());
    let db = open(dir.path(), &filter);
    db.put("k", "keep-old").expect("put");
    db.put("seen", "old:by-snapshot").expect("put");
    db.flush().expect("flush");
    let snapshot = db.snapshot();
    db.put("k", "remove-me").expect("put");
    db.compact_range(None, None).expect("compact");
    // The newest "k" was removed, but a snapshot still needs "keep-old": a tombstone hides it
    // from current readers instead of letting it come back.
    assert_eq!(db.get("k").expect("get"), None);
    assert_eq!(
        snapshot.get("k").expect("snapshot get"),
        Some(b"keep-old".to_vec())
    );
    // A value the snapshot sees is not shown to the filter: it stays as written, for everyone.
    assert_eq!(
        db.get("seen").expect("get"),
        Some(b"old:by-snapshot".to_vec())
    );
    assert_eq!(
        snapshot.get("seen").expect("snapshot get"),
        Some(b"old:by-snapshot".to_vec())
    );
    drop(snapshot);
    db.compact_range(None, None).expect("compact");
    assert_eq!(db.get("k").expect("get"), None);
    assert_eq!(
        db.get("seen").expect("get"),
        Some(b"new:by-snapshot".to_vec())
    );
    drop(db);
    let db = open(dir.path(), &filter);
    assert_eq!(db.get("k").expect("get"), None);
    assert_eq!(db.iter().count(), 1);
}

#[test]
fn a_panicking_filter_fails_the_compaction_cleanly_and_it_is_retried() {
    let dir = siftdb_tests::temp_dir();
    let filter = Arc::new(TestFilter::default());
    let db = Db::open(
        dir.path(),
        Options {
            compaction_filter: Some(filter.clone()),
            write_buffer_size: 16 << 10,
            level0_file_num_compaction_trigger: 2,
            ..Options::default()
        },
    )
    .expect("open");
    filter.panicking.store(true, Ordering::Relaxed);
    for i in 0..2000u32 {
        db.put(format!("k{i:05}"), format!("old:{i}")).expect("put");
    }
    // compact_range reports the filter's failure; background compactions (L0 reached its
    // trigger) fail too, and wait_for_compaction says why instead of waiting forever.
    match db.compact_range(None, None) {
        Err(Error::CompactionFilter(why)) => {
            assert!(why.message().contains("test-filter"), "{why}")
        }
        other => panic!("{other:?}"),
    }
    match db.wait_for_compaction() {
        Err(Error::CompactionFilter(_)) => {}
        other => panic!("{other:?}"),
    }
    // Nothing lost, writes go on.
    for i in 0..2000u32 {
        assert_eq!(
            db.get(format!("k{i:05}")).expect("get"),
            Some(format!("old:{i}").into_bytes())
        );
    }
    db.put("after", "v").expect("writes continue");
    assert!(db.stats().compaction_filter_failures >= 1);
    // Once the filter works again, the retried compactions rewrite everything.
    filter.panicking.store(false, Ordering::Relaxed);
    db.compact_range(None, None).expect("compact");
    db.wait_for_compaction().expect("settled");
    for i in (0..2000u32).step_by(97) {
        assert_eq!(
            db.get(format!("k{i:05}")).expect("get"),
            Some(format!("new:{i}").into_bytes())
        );
    }
}

/// Holds the first call of the filter until the test lets it go.
struct HeldFilter {
    entered: std::sync::Barrier,
    release: std::sync::Barrier,
    first: AtomicBool,
}

impl CompactionFilter for HeldFilter {
    fn name(&self) -> &str {
        "held-filter"
    }

    fn filter(&self, _level: usize, _key: &[u8], value: &[u8]) -> CompactionDecision {
        if self.first.swap(false, Ordering::SeqCst) {
            self.entered.wait();
            self.release.wait();
        }
        if value.starts_with(b"tmp:") {
            CompactionDecision::Remove
        } else {
            CompactionDecision::Keep
        }
    }
}

#[test]
fn a_snapshot_taken_while_the_filter_runs_keeps_its_view() {
    let dir = siftdb_tests::temp_dir();
    let filter = Arc::new(HeldFilter {
        entered: std::sync::Barrier::new(2),
        release: std::sync::Barrier::new(2),
        first: AtomicBool::new(true),
    });
    let db = Db::open(
        dir.path(),
        Options {
            compaction_filter: Some(filter.clone()),
            ..Options::default()
        },
    )
    .expect("open");
    db.put("a", "keep").expect("put");
    db.put("k", "tmp:x").expect("put");
    let compacting = {
        let db = db.clone();
        std::thread::spawn(move || db.compact_range(None, None))
    };
    // The merge is under way (its snapshot list fixed) when this snapshot is taken.
    filter.entered.wait();
    let snapshot = db.snapshot();
    assert_eq!(snapshot.get("k").expect("get"), Some(b"tmp:x".to_vec()));
    filter.release.wait();
    compacting
        .join()
        .expect("compaction thread")
        .expect("compact");
    // The compaction saw the new snapshot before installing and merged again: the snapshot's
    // answer has not changed.
    assert_eq!(snapshot.get("k").expect("get"), Some(b"tmp:x".to_vec()));
    drop(snapshot);
    db.compact_range(None, None).expect("compact");
    assert_eq!(db.get("k").expect("get"), None);
    assert_eq!(db.get("a").expect("get"), Some(b"keep".to_vec()));
}

#[test]
fn writes_stalled_behind_a_failing_filter_get_its_error_instead_of_waiting_forever() {
    let dir = siftdb_tests::temp_dir();
    let filter = Arc::new(TestFilter::default());
    filter.panicking.store(true, Ordering::Relaxed);
    let db = Db::open(
        dir.path(),
        Options {
            compaction_filter: Some(filter.clone()),
            write_buffer_size: 4 << 10,
            level0_file_num_compaction_trigger: 2,
            level0_stop_writes_trigger: 2,
            ..Options::default()
        },
    )
    .expect("open");
    let mut refused = None;
    for i in 0..20_000u32 {
        match db.put(format!("k{i:05}"), [b'v'; 100]) {
            Ok(()) => {}
            Err(e) => {
                refused = Some((i, e));
                break;
            }
        }
    }
    match refused {
        Some((_, Error::CompactionFilter(why))) => {
            assert!(why.message().contains("test-filter"), "{why}")
        }
        other => panic!("writes were not refused with the filter's error: {other:?}"),
    }
    // Once the filter works, compactions catch up and writes go on.
    filter.panicking.store(false, Ordering::Relaxed);
    db.compact_range(None, None).expect("compact");
    db.put("after", "v").expect("put after recovery");
}
