//! Event listeners (`Options::listeners`): every flush and compaction is announced as a
//! begin/completed pair, their tables as created and the obsolete ones as deleted, checked
//! against the engine's own counters; a background error and a write stall are announced; a
//! panicking listener is contained and the others still hear everything.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use siftdb::fs::{FileSystem, RealFs};
use siftdb::{
    BackgroundErrorInfo, BackgroundJob, CompactionJobInfo, CompactionReason, Db, EventListener,
    FlushJobInfo, FlushReason, MemTableInfo, Options, TableFileCreationInfo,
    TableFileCreationReason, TableFileDeletionInfo, WriteStallCause, WriteStallCondition,
    WriteStallInfo,
};

/// Everything a listener heard, in order.
#[derive(Debug, Clone)]
enum Heard {
    FlushBegin(FlushJobInfo),
    FlushCompleted(FlushJobInfo),
    CompactionBegin(CompactionJobInfo),
    CompactionCompleted(CompactionJobInfo),
    Created(TableFileCreationInfo),
    Deleted(TableFileDeletionInfo),
    BackgroundError(BackgroundErrorInfo),
    Stall(WriteStallInfo),
    Sealed(MemTableInfo),
}

#[derive(Default)]
struct Recorder(Mutex<Vec<Heard>>);

impl Recorder {
    fn push(&self, heard: Heard) {
        self.0.lock().unwrap().push(heard);
    }

    fn heard(&self) -> Vec<Heard> {
        self.0.lock().unwrap().clone()
    }
}

impl EventListener for Recorder {
    fn on_flush_begin(&self, i: &FlushJobInfo) {
        self.push(Heard::FlushBegin(i.clone()));
    }
    fn on_flush_completed(&self, i: &FlushJobInfo) {
        self.push(Heard::FlushCompleted(i.clone()));
    }
    fn on_compaction_begin(&self, i: &CompactionJobInfo) {
        self.push(Heard::CompactionBegin(i.clone()));
    }
    fn on_compaction_completed(&self, i: &CompactionJobInfo) {
        self.push(Heard::CompactionCompleted(i.clone()));
    }
    fn on_table_file_created(&self, i: &TableFileCreationInfo) {
        self.push(Heard::Created(i.clone()));
    }
    fn on_table_file_deleted(&self, i: &TableFileDeletionInfo) {
        self.push(Heard::Deleted(i.clone()));
    }
    fn on_background_error(&self, i: &BackgroundErrorInfo) {
        self.push(Heard::BackgroundError(i.clone()));
    }
    fn on_stall_conditions_changed(&self, i: &WriteStallInfo) {
        self.push(Heard::Stall(i.clone()));
    }
    fn on_memtable_sealed(&self, i: &MemTableInfo) {
        self.push(Heard::Sealed(i.clone()));
    }
}

/// Panics on every event.
struct Panicker;

impl EventListener for Panicker {
    fn on_flush_begin(&self, _: &FlushJobInfo) {
        panic!("listener panics on flush begin");
    }
    fn on_flush_completed(&self, _: &FlushJobInfo) {
        panic!("listener panics on flush completed");
    }
    fn on_compaction_begin(&self, _: &CompactionJobInfo) {
        panic!("listener panics on compaction begin");
    }
    fn on_table_file_created(&self, _: &TableFileCreationInfo) {
        panic!("listener panics on table created");
    }
}

fn key(i: u32) -> Vec<u8> {
    siftdb_tests::scattered_key(i)
}

/// Fills a small tree with `n` keys in two keyspaces until flushes and compactions ran, lets
/// compactions settle, checks the data, closes; returns what `recorder` heard and the stats.
fn fill_and_close(mut options: Options, recorder: &Arc<Recorder>, n: u32) -> siftdb::Stats {
    options.listeners.push(recorder.clone());
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), options).unwrap();
    let other = db
        .create_keyspace(
            "other",
            siftdb::KeyspaceOptions::from(&siftdb_tests::small_tree()),
        )
        .unwrap();
    for i in 0..n {
        db.put(key(i), [b'v'; 64]).unwrap();
        if i % 4 == 0 {
            other.put(key(i), [b'o'; 64]).unwrap();
        }
    }
    db.flush().unwrap();
    other.flush().unwrap();
    db.wait_for_compaction().unwrap();
    for i in (0..n).step_by(97) {
        assert_eq!(db.get(key(i)).unwrap().as_deref(), Some(&[b'v'; 64][..]));
    }
    db.close().unwrap();
    // Read after the close, which delivered every event: the listener panics are counted as
    // the events are delivered, on the events thread.
    let stats = db.stats();
    // Closing delivered everything: nothing arrives later.
    let heard = recorder.heard().len();
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(recorder.heard().len(), heard);
    drop(dir);
    stats
}

#[test]
fn every_flush_and_compaction_is_a_begin_completed_pair() {
    let recorder = Arc::new(Recorder::default());
    let stats = fill_and_close(siftdb_tests::small_tree(), &recorder, 20_000);
    let heard = recorder.heard();
    let mut open_flushes = BTreeMap::new();
    let mut open_compactions = BTreeMap::new();
    let (mut flushes, mut merges, mut moves) = (0, 0, 0);
    for h in &heard {
        match h {
            Heard::FlushBegin(i) => assert!(open_flushes.insert(i.job_id, i.clone()).is_none()),
            Heard::FlushCompleted(i) => {
                let begun = open_flushes
                    .remove(&i.job_id)
                    .expect("completed before begun");
                assert_eq!(begun.keyspace, i.keyspace);
                assert_eq!(i.error, None);
                let table = i.table.as_ref().expect("every flush here writes a table");
                assert_eq!(table.level, 0);
                assert!(table.entries > 0 && table.size > 0, "{i:?}");
                flushes += 1;
            }
            Heard::CompactionBegin(i) => {
                assert!(!i.inputs.is_empty(), "{i:?}");
                assert!(open_compactions.insert(i.job_id, i.clone()).is_none());
            }
            Heard::CompactionCompleted(i) => {
                let begun = open_compactions
                    .remove(&i.job_id)
                    .expect("completed before begun");
                assert_eq!(
                    (begun.keyspace.as_str(), begun.inputs.len()),
                    (i.keyspace.as_str(), i.inputs.len())
                );
                assert_eq!(i.error, None);
                assert!(i.outputs.iter().all(|o| o.level == i.output_level), "{i:?}");
                if i.trivial_move {
                    moves += i.inputs.len() as u64;
                } else {
                    assert!(i.bytes_read > 0 && i.bytes_written > 0, "{i:?}");
                    merges += 1;
                }
            }
            _ => {}
        }
    }
    assert!(open_flushes.is_empty() && open_compactions.is_empty());
    assert_eq!(
        flushes, stats.flushes,
        "one completed flush per flush counted"
    );
    assert_eq!(
        merges, stats.compactions,
        "one completed merge per compaction counted"
    );
    assert_eq!(moves, stats.trivial_moves);
    assert!(
        flushes >= 10 && merges >= 3,
        "flushes {flushes}, merges {merges}"
    );
    // Both keyspaces were announced.
    let keyspaces: BTreeSet<_> = heard
        .iter()
        .filter_map(|h| match h {
            Heard::FlushCompleted(i) => Some(i.keyspace.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        keyspaces,
        BTreeSet::from(["default".to_string(), "other".to_string()])
    );
}

#[test]
fn created_and_deleted_tables_match_the_files() {
    let recorder = Arc::new(Recorder::default());
    let stats = fill_and_close(siftdb_tests::small_tree(), &recorder, 20_000);
    let heard = recorder.heard();
    let mut created: BTreeMap<u64, TableFileCreationInfo> = BTreeMap::new();
    let mut deleted = BTreeSet::new();
    for h in &heard {
        match h {
            Heard::Created(c) => {
                assert!(created.insert(c.file.number, c.clone()).is_none());
            }
            Heard::Deleted(d) => {
                assert_eq!(d.error, None);
                assert!(
                    created.contains_key(&d.number),
                    "deleted before created: {d:?}"
                );
                assert!(!d.path.exists(), "{d:?} still on disk");
                assert!(deleted.insert(d.number));
            }
            _ => {}
        }
    }
    // Each flush's and each merge's tables were announced under their job.
    let from_flushes = created
        .values()
        .filter(|c| c.reason == TableFileCreationReason::Flush)
        .count() as u64;
    assert_eq!(from_flushes, stats.flushes);
    let from_compactions: Vec<_> = created
        .values()
        .filter(|c| c.reason == TableFileCreationReason::Compaction)
        .collect();
    assert!(!from_compactions.is_empty());
    let outputs: BTreeSet<u64> = heard
        .iter()
        .filter_map(|h| match h {
            Heard::CompactionCompleted(i) if !i.trivial_move => {
                Some(i.outputs.iter().map(|o| o.number))
            }
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(
        outputs,
        from_compactions.iter().map(|c| c.file.number).collect()
    );
    // Compactions made tables obsolete, and each was announced once deleted.
    assert!(
        deleted.len() as u64 >= stats.compactions,
        "{} deleted",
        deleted.len()
    );
}

#[test]
fn sealed_memtables_are_announced_with_their_reason() {
    let recorder = Arc::new(Recorder::default());
    fill_and_close(siftdb_tests::small_tree(), &recorder, 5_000);
    let heard = recorder.heard();
    let sealed: Vec<&MemTableInfo> = heard
        .iter()
        .filter_map(|h| match h {
            Heard::Sealed(m) => Some(m),
            _ => None,
        })
        .collect();
    let flush_reasons: Vec<FlushReason> = heard
        .iter()
        .filter_map(|h| match h {
            Heard::FlushBegin(i) => Some(i.reason),
            _ => None,
        })
        .collect();
    assert_eq!(
        sealed.len(),
        flush_reasons.len(),
        "every sealed memtable was flushed"
    );
    assert!(sealed.iter().all(|m| m.entries > 0 && m.bytes > 0));
    assert!(sealed
        .iter()
        .any(|m| m.reason == FlushReason::WriteBufferFull));
    // The two `flush` calls at the end sealed the last memtable of each keyspace by hand.
    assert_eq!(
        sealed
            .iter()
            .filter(|m| m.reason == FlushReason::Manual)
            .count(),
        2
    );
    assert!(flush_reasons.contains(&FlushReason::Manual));
}

#[test]
fn a_failed_flush_is_announced_as_a_background_error() {
    let failing = Arc::new(AtomicBool::new(false));
    let fail = Arc::clone(&failing);
    let fs: Arc<dyn FileSystem> = Arc::new(siftdb_tests::CreateHookFs(move |path: &Path| {
        if fail.load(Ordering::SeqCst) && path.extension().is_some_and(|e| e == "sst") {
            return Err(std::io::Error::other("injected: no table files now"));
        }
        RealFs.create(path)
    }));
    let recorder = Arc::new(Recorder::default());
    let mut options = Options {
        fs,
        ..Options::default()
    };
    options.listeners.push(recorder.clone());
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), options).unwrap();
    db.put(b"a", b"1").unwrap();
    failing.store(true, Ordering::SeqCst);
    assert!(db.flush().is_err());
    assert!(
        db.put(b"b", b"2").is_err(),
        "writes stop on the background error"
    );
    drop(db);
    let heard = recorder.heard();
    let errors: Vec<&BackgroundErrorInfo> = heard
        .iter()
        .filter_map(|h| match h {
            Heard::BackgroundError(e) => Some(e),
            _ => None,
        })
        .collect();
    assert_eq!(errors.len(), 1, "{heard:?}");
    assert_eq!(errors[0].error.job(), BackgroundJob::Flush);
    assert!(errors[0].error.message().contains("injected"), "{errors:?}");
    // The flush that failed still completed its pair, saying why.
    let completed: Vec<&FlushJobInfo> = heard
        .iter()
        .filter_map(|h| match h {
            Heard::FlushCompleted(i) => Some(i),
            _ => None,
        })
        .collect();
    assert_eq!(completed.len(), 1);
    assert!(completed[0].table.is_none());
    assert!(completed[0]
        .error
        .as_deref()
        .is_some_and(|e| e.contains("injected")));
}

#[test]
fn a_write_stall_is_announced_when_it_begins_and_ends() {
    // Table files are slow to create: flushes fall behind, and with two memtables at most the
    // writer waits for them.
    let fs: Arc<dyn FileSystem> = Arc::new(siftdb_tests::CreateHookFs(|path: &Path| {
        if path.extension().is_some_and(|e| e == "sst") {
            std::thread::sleep(Duration::from_millis(30));
        }
        RealFs.create(path)
    }));
    let recorder = Arc::new(Recorder::default());
    let mut options = Options {
        write_buffer_size: 64 << 10,
        max_write_buffer_number: 2,
        level0_stop_writes_trigger: 10_000,
        fs,
        ..Options::default()
    };
    options.listeners.push(recorder.clone());
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), options).unwrap();
    let mut i = 0;
    while db.stats().stall_micros == 0 && i < 400_000 {
        db.put(key(i), [b'v'; 100]).unwrap();
        i += 1;
    }
    db.close().unwrap();
    let stalls: Vec<WriteStallInfo> = recorder
        .heard()
        .into_iter()
        .filter_map(|h| match h {
            Heard::Stall(s) => Some(s),
            _ => None,
        })
        .collect();
    assert!(stalls.len() >= 2, "{stalls:?}");
    assert_eq!(stalls[0].condition, WriteStallCondition::Stopped);
    assert_eq!(stalls[0].previous, WriteStallCondition::Normal);
    assert_eq!(stalls[0].cause, WriteStallCause::Memtables);
    assert_eq!(stalls[0].keyspace.as_deref(), Some("default"));
    // Conditions alternate, and the last one lets writes go again.
    for pair in stalls.windows(2) {
        assert_eq!(pair[1].previous, pair[0].condition, "{stalls:?}");
    }
    assert_eq!(
        stalls.last().map(|s| s.condition),
        Some(WriteStallCondition::Normal)
    );
}

#[test]
fn a_panicking_listener_is_contained_and_the_others_still_hear_everything() {
    let recorder = Arc::new(Recorder::default());
    let mut options = siftdb_tests::small_tree();
    options.listeners.push(Arc::new(Panicker));
    let stats = fill_and_close(options, &recorder, 5_000);
    assert!(stats.flushes > 0);
    assert!(
        stats.event_listener_panics >= stats.flushes * 2,
        "{}",
        stats.event_listener_panics
    );
    let completed = recorder
        .heard()
        .iter()
        .filter(|h| matches!(h, Heard::FlushCompleted(_)))
        .count() as u64;
    assert_eq!(completed, stats.flushes);
    // Manual compactions are announced as such, panicking listener and all.
    let recorder = Arc::new(Recorder::default());
    let mut options = siftdb_tests::small_tree();
    options.listeners.push(Arc::new(Panicker));
    options.listeners.push(recorder.clone());
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), options).unwrap();
    for i in 0..3_000 {
        db.put(key(i), [b'v'; 64]).unwrap();
    }
    db.compact_range(None, None).unwrap();
    assert_eq!(db.get(key(7)).unwrap().as_deref(), Some(&[b'v'; 64][..]));
    db.close().unwrap();
    assert!(recorder.heard().iter().any(
        |h| matches!(h, Heard::CompactionCompleted(i) if i.reason == CompactionReason::Manual)
    ));
}
