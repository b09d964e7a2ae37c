//! Model test of expiring values (`put_with_ttl`) against a `BTreeMap` of (value, expiry), with
//! a clock the test moves by hand: an expired value must read as absent at once — from `get`,
//! `multi_get`, iterators in both directions and snapshots — before and after flushes,
//! compactions (which remove expired values) and reopens.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use proptest::prelude::*;
use siftdb::{Clock, Db, Options};

/// A clock that moves only when told to.
#[derive(Debug)]
struct ManualClock(AtomicU64);

impl Clock for ManualClock {
    fn now(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.0.load(Ordering::SeqCst))
    }
}

/// key → (value, expiry in ms; `None`: never expires).
type Model = BTreeMap<Vec<u8>, (Vec<u8>, Option<u64>)>;

#[derive(Debug, Clone)]
enum Op {
    Put(Vec<u8>, Vec<u8>),
    PutTtl(Vec<u8>, Vec<u8>, u64),
    Delete(Vec<u8>),
    Advance(u64),
    Get(Vec<u8>),
    MultiGet(Vec<Vec<u8>>),
    Iter,
    IterRev,
    Snapshot,
    CheckSnapshot(usize),
    Flush,
    Compact,
    Reopen,
}

fn key() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(b'c')], 0..4)
}

fn value() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..120)
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (key(), value()).prop_map(|(k, v)| Op::Put(k, v)),
        6 => (key(), value(), 0u64..60).prop_map(|(k, v, t)| Op::PutTtl(k, v, t)),
        2 => key().prop_map(Op::Delete),
        3 => (0u64..40).prop_map(Op::Advance),
        4 => key().prop_map(Op::Get),
        2 => proptest::collection::vec(key(), 0..10).prop_map(Op::MultiGet),
        1 => Just(Op::Iter),
        1 => Just(Op::IterRev),
        1 => Just(Op::Snapshot),
        2 => (0usize..3).prop_map(Op::CheckSnapshot),
        1 => Just(Op::Flush),
        1 => Just(Op::Compact),
        1 => Just(Op::Reopen),
    ]
}

fn options(clock: &Arc<ManualClock>) -> Options {
    options_with_blobs(clock, false)
}

/// [`options`], with values of 40 bytes and more in blob files (their expiry in the tables'
/// blob indexes) when `blobs`.
fn options_with_blobs(clock: &Arc<ManualClock>, blobs: bool) -> Options {
    Options {
        enable_blob_files: blobs,
        min_blob_size: 40,
        blob_file_size: 1024,
        enable_blob_garbage_collection: blobs,
        write_buffer_size: 2048,
        block_size: 256,
        target_file_size_base: 2048,
        max_bytes_for_level_base: 4096,
        max_bytes_for_level_multiplier: 3.0,
        level0_file_num_compaction_trigger: 2,
        max_background_compactions: 2,
        clock: clock.clone(),
        ..Options::default()
    }
}

/// What a reader sees of `model` at `now`.
fn visible(model: &Model, now: u64) -> BTreeMap<Vec<u8>, Vec<u8>> {
    model
        .iter()
        .filter(|(_, (_, expiry))| expiry.is_none_or(|e| now < e))
        .map(|(k, (v, _))| (k.clone(), v.clone()))
        .collect()
}

fn run(ops: &[Op], blobs: bool) {
    let dir = siftdb_tests::temp_dir();
    let clock = Arc::new(ManualClock(AtomicU64::new(1_700_000_000_000)));
    let now = || clock.0.load(Ordering::SeqCst);
    let options = || options_with_blobs(&clock, blobs);
    let mut db = Db::open(dir.path(), options()).expect("open");
    let mut model = Model::new();
    let mut snapshots: Vec<(siftdb::Snapshot, Model)> = Vec::new();
    for op in ops {
        match op {
            Op::Put(k, v) => {
                db.put(k, v).expect("put");
                model.insert(k.clone(), (v.clone(), None));
            }
            Op::PutTtl(k, v, ttl) => {
                db.put_with_ttl(k, v, Duration::from_millis(*ttl))
                    .expect("put_with_ttl");
                model.insert(k.clone(), (v.clone(), Some(now() + ttl)));
            }
            Op::Delete(k) => {
                db.delete(k).expect("delete");
                model.remove(k);
            }
            Op::Advance(ms) => {
                clock.0.fetch_add(*ms, Ordering::SeqCst);
            }
            Op::Get(k) => {
                let want = visible(&model, now()).get(k).cloned();
                assert_eq!(db.get(k).expect("get"), want, "get {k:?} at {}", now());
            }
            Op::MultiGet(keys) => {
                let seen = visible(&model, now());
                let got: Vec<Option<Vec<u8>>> = db
                    .multi_get(keys)
                    .into_iter()
                    .collect::<Result<_, _>>()
                    .expect("multi_get");
                let want: Vec<Option<Vec<u8>>> =
                    keys.iter().map(|k| seen.get(k).cloned()).collect();
                assert_eq!(got, want, "multi_get {keys:?}");
            }
            Op::Iter => {
                let got: BTreeMap<_, _> = db.iter().map(|r| r.expect("iter")).collect();
                assert_eq!(got, visible(&model, now()), "iteration");
            }
            Op::IterRev => {
                let mut got: Vec<_> = db.iter().rev().map(|r| r.expect("iter")).collect();
                got.reverse();
                let want: Vec<_> = visible(&model, now()).into_iter().collect();
                assert_eq!(got, want, "reverse iteration");
            }
            Op::Snapshot => {
                if snapshots.len() < 3 {
                    snapshots.push((db.snapshot(), model.clone()));
                }
            }
            Op::CheckSnapshot(i) => {
                if let Some((snap, seen)) = snapshots.get(*i) {
                    let got: BTreeMap<_, _> = snap.iter().map(|r| r.expect("iter")).collect();
                    assert_eq!(got, visible(seen, now()), "snapshot {i}");
                    for k in seen.keys() {
                        assert_eq!(
                            snap.get(k).expect("get"),
                            visible(seen, now()).get(k).cloned(),
                            "snapshot {i} get {k:?}"
                        );
                    }
                }
            }
            Op::Flush => db.flush().expect("flush"),
            Op::Compact => db.compact_range(None, None).expect("compact"),
            Op::Reopen => {
                snapshots.clear();
                db.close().expect("close");
                db = Db::open(dir.path(), options()).expect("reopen");
            }
        }
    }
    snapshots.clear();
    // A full compaction removes every expired value: what is left on disk is what is visible.
    db.compact_range(None, None).expect("compact");
    let got: BTreeMap<_, _> = db.iter().map(|r| r.expect("iter")).collect();
    assert_eq!(got, visible(&model, now()));
}

#[test]
fn compaction_removes_expired_values_from_disk() {
    let dir = siftdb_tests::temp_dir();
    let clock = Arc::new(ManualClock(AtomicU64::new(1_000_000)));
    let db = Db::open(dir.path(), options(&clock)).expect("open");
    for i in 0..500u32 {
        let key = format!("k{i:04}");
        if i % 2 == 0 {
            db.put_with_ttl(key.as_bytes(), [b'v'; 200], Duration::from_millis(10))
                .expect("put");
        } else {
            db.put(&key, [b'v'; 200]).expect("put");
        }
    }
    db.compact_range(None, None).expect("compact");
    let before = db.stats().compaction_filter_removed;
    assert_eq!(db.iter().count(), 500);
    clock.0.fetch_add(10, Ordering::SeqCst);
    assert_eq!(
        db.iter().count(),
        250,
        "expired values read as absent at once"
    );
    assert_eq!(db.get("k0000").expect("get"), None);
    db.compact_range(None, None).expect("compact");
    assert_eq!(db.stats().compaction_filter_removed - before, 250);
    let entries: u64 = db.level_info().iter().map(|l| l.keys).sum();
    assert_eq!(entries, 250, "the expired values are gone from the tables");
}

#[test]
fn both_ends_of_one_iterator_judge_expiry_at_its_creation() {
    let dir = siftdb_tests::temp_dir();
    let clock = Arc::new(ManualClock(AtomicU64::new(1_000_000)));
    let db = Db::open(dir.path(), options(&clock)).expect("open");
    db.put("a", "1").expect("put");
    db.put_with_ttl(b"z", b"26", Duration::from_millis(5))
        .expect("put");
    let mut it = db.iter();
    assert_eq!(it.next().expect("front").expect("ok").0, b"a");
    // The back end makes its cursor only now; it must still see the state of the iterator's
    // creation, when "z" was live.
    clock.0.fetch_add(10, Ordering::SeqCst);
    assert_eq!(it.next_back().expect("back").expect("ok").0, b"z");
    assert_eq!(db.iter().count(), 1, "a new iterator sees z expired");
}

fn cases() -> u32 {
    siftdb_tests::env_count("SIFTDB_MODEL_CASES", 128) as u32
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn expiring_values_match_the_model(ops in proptest::collection::vec(op(), 1..120)) {
        run(&ops, false);
    }

    #[test]
    fn expiring_values_in_blob_files_match_the_model(
        ops in proptest::collection::vec(op(), 1..120)
    ) {
        run(&ops, true);
    }
}
