//! Blob files beside the engine's other features (issue 37): checkpoints link them, read-only
//! opens read them, compaction filters see the values they hold (read only when a filter is
//! set), and each keyspace keeps its own blob settings.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use siftdb::{CompactionDecision, CompactionFilter, Db, KeyspaceOptions, Options};

fn options() -> Options {
    Options {
        enable_blob_files: true,
        min_blob_size: 64,
        blob_file_size: 16 << 10,
        write_buffer_size: 64 << 10,
        ..Options::default()
    }
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn value(i: u64) -> Vec<u8> {
    let mut v = format!("value {i} ").into_bytes();
    v.resize(200, b'.');
    v
}

fn blob_files_in(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension() == Some("blob".as_ref()))
        .count()
}

#[test]
fn checkpoints_and_read_only_opens_read_blob_values() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), options()).unwrap();
    for i in 0..500 {
        db.put(key(i), value(i)).unwrap();
    }
    db.flush().unwrap();
    let target = siftdb_tests::temp_dir();
    let checkpoint = target.path().join("cp");
    db.checkpoint(&checkpoint).unwrap();
    assert!(
        blob_files_in(&checkpoint) > 0,
        "the checkpoint holds the blob files"
    );
    // Later writes and deletes in the source do not reach the checkpoint.
    for i in 0..500 {
        db.delete(key(i)).unwrap();
    }
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    drop(db);
    let copy = Db::open(&checkpoint, options()).unwrap();
    for i in 0..500 {
        assert_eq!(copy.get(key(i)).unwrap(), Some(value(i)), "key {i}");
    }
    drop(copy);
    let read_only = Db::open_read_only(&checkpoint, options()).unwrap();
    assert_eq!(read_only.iter().count(), 500);
    assert_eq!(read_only.get(key(7)).unwrap(), Some(value(7)));
}

/// Counts what it was asked about; removes keys ending in 0, rewrites keys ending in 5.
#[derive(Default)]
struct Rewriter {
    asked: AtomicU64,
    saw_blob_value: AtomicU64,
}

impl CompactionFilter for Rewriter {
    fn name(&self) -> &str {
        "rewriter"
    }

    fn filter(&self, _level: usize, key: &[u8], value: &[u8]) -> CompactionDecision {
        self.asked.fetch_add(1, Ordering::Relaxed);
        // A value it rewrote is asked about again by the next level's compaction.
        if (value.starts_with(b"value ") && value.len() == 200) || value == b"rewritten" {
            self.saw_blob_value.fetch_add(1, Ordering::Relaxed);
        }
        match key.last() {
            Some(b'0') => CompactionDecision::Remove,
            Some(b'5') => CompactionDecision::ChangeValue(b"rewritten".to_vec()),
            _ => CompactionDecision::Keep,
        }
    }
}

#[test]
fn compaction_filters_see_blob_values_and_their_decisions_hold() {
    let dir = siftdb_tests::temp_dir();
    let filter = Arc::new(Rewriter::default());
    let db = Db::open(
        dir.path(),
        Options {
            compaction_filter: Some(filter.clone()),
            ..options()
        },
    )
    .unwrap();
    for i in 0..500 {
        db.put(key(i), value(i)).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert!(filter.asked.load(Ordering::Relaxed) >= 500);
    assert_eq!(
        filter.saw_blob_value.load(Ordering::Relaxed),
        filter.asked.load(Ordering::Relaxed),
        "the filter was shown blob indexes instead of values"
    );
    for i in 0..500 {
        let expected = match i % 10 {
            0 => None,
            5 => Some(b"rewritten".to_vec()),
            _ => Some(value(i)),
        };
        assert_eq!(db.get(key(i)).unwrap(), expected, "key {i}");
    }
    drop(db);
    let db = Db::open(dir.path(), options()).unwrap();
    assert_eq!(db.get(key(5)).unwrap(), Some(b"rewritten".to_vec()));
    assert_eq!(db.get(key(6)).unwrap(), Some(value(6)));
}

#[test]
fn each_keyspace_keeps_its_own_blob_settings_across_reopens() {
    let dir = siftdb_tests::temp_dir();
    let inline = Options {
        enable_blob_files: false,
        ..options()
    };
    {
        let db = Db::open(dir.path(), inline.clone()).unwrap();
        let separated = db
            .create_keyspace(
                "docs",
                KeyspaceOptions {
                    enable_blob_files: true,
                    min_blob_size: 100,
                    ..KeyspaceOptions::default()
                },
            )
            .unwrap();
        for i in 0..300 {
            db.put(key(i), value(i)).unwrap();
            separated.put(key(i), value(i)).unwrap();
        }
        db.flush().unwrap();
        separated.flush().unwrap();
        let stats = db.stats();
        // Only "docs" wrote blob files: about its values' bytes.
        assert!(stats.blob_bytes_written >= 300 * 200, "{stats:?}");
        assert!(stats.blob_bytes_written < 2 * 300 * 200, "{stats:?}");
    }
    let db = Db::open(dir.path(), inline).unwrap();
    let docs = db.keyspace("docs").unwrap();
    for i in 0..300 {
        db.put(key(i + 1_000), value(i)).unwrap();
        docs.put(key(i + 1_000), value(i)).unwrap();
    }
    let before = db.stats().blob_bytes_written;
    db.flush().unwrap();
    docs.flush().unwrap();
    let written = db.stats().blob_bytes_written - before;
    assert!(
        (300 * 200..2 * 300 * 200).contains(&written),
        "the recorded keyspace options came back: {written} blob bytes"
    );
    for i in 0..300 {
        assert_eq!(docs.get(key(i)).unwrap(), Some(value(i)));
        assert_eq!(db.get(key(i)).unwrap(), Some(value(i)));
    }
}
