//! Model test of interleavings chosen on purpose: the database is opened with stepped background
//! work (`Db::open_stepped`: no flush or compaction thread), and a seed decides where flushes,
//! compactions and file deletions run among writes (put, delete, range delete, merge,
//! cross-keyspace batches), reads (get, scans both ways, ranges), snapshots and iterators taken
//! and read later, checkpoints opened and checked, keyspaces created and dropped, and reopens —
//! all against a `BTreeMap` per keyspace. The same seed gives the same schedule, so a failure
//! shrinks to a short sequence of steps that replays exactly.
//!
//! Tiny memtables, `max_write_buffer_number = 2` and `level0_stop_writes_trigger = 4` put the
//! writes past the points where a threaded database would stall (stepped mode never stalls), so
//! immutable memtables and L0 tables pile up until the schedule steps them down. Each step's
//! answer is checked: `step_flush` says whether it flushed, and the immutable memtables it
//! leaves must be one fewer (or none were there).
//!
//! `SIFTDB_SCHEDULE_CASES` sets the number of cases.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use proptest::prelude::*;
use siftdb::{merge, Db, DbIterator, Error, Keyspace, KeyspaceOptions, Options, Snapshot};
use siftdb::{WriteBatch, WriteOptions};

/// The keyspaces a case uses, by index; 0 is "default" (never dropped).
const NAMES: [&str; 3] = ["default", "a", "b"];

type Model = BTreeMap<Vec<u8>, Vec<u8>>;
/// What a scan yields, in order.
type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

/// One write of a batch or of its own.
#[derive(Debug, Clone)]
enum Entry {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
    /// `[start, end)`, `start <= end`.
    DeleteRange(Vec<u8>, Vec<u8>),
    /// An `Append` operand (joined with ",").
    Merge(Vec<u8>, Vec<u8>),
}

#[derive(Debug, Clone)]
enum Op {
    /// A single write in keyspace `.0`.
    Write(usize, Entry),
    /// A burst of puts into keyspace `.0` (keys `.1`, values of 100 bytes): enough to freeze
    /// memtables past `max_write_buffer_number` between two steps.
    Fill(usize, Vec<Vec<u8>>),
    /// One batch over several keyspaces, synced or not.
    Batch(Vec<(usize, Entry)>, bool),
    Get(usize, Vec<u8>),
    /// A full scan, forward (true) or backward.
    Scan(usize, bool),
    Range(usize, Bound<Vec<u8>>, Bound<Vec<u8>>),
    Snapshot,
    /// Reads snapshot `.0` (mod the live ones) in keyspace `.1`: one key and a full scan.
    CheckSnapshot(usize, usize, Vec<u8>),
    DropSnapshot(usize),
    /// An iterator over keyspace `.0`, kept (at most 3) and drained later.
    HoldIter(usize),
    DrainIter(usize),
    Checkpoint,
    Create(usize),
    Drop(usize),
    StepFlush,
    StepCompaction,
    StepObsolete,
    /// `Keyspace::flush` (stepped: flushes inline, older memtables of others first).
    Flush(usize),
    CompactRange(usize, Option<Vec<u8>>, Option<Vec<u8>>),
    WaitForCompaction,
    Reopen,
}

fn key() -> impl Strategy<Value = Vec<u8>> {
    // A small alphabet so keys collide, share prefixes and get overwritten.
    proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(b'c')], 0..5)
}

fn ks() -> impl Strategy<Value = usize> {
    0..NAMES.len()
}

fn bound() -> impl Strategy<Value = Bound<Vec<u8>>> {
    prop_oneof![
        key().prop_map(Bound::Included),
        key().prop_map(Bound::Excluded),
        Just(Bound::Unbounded),
    ]
}

fn entry() -> impl Strategy<Value = Entry> {
    prop_oneof![
        6 => (key(), proptest::collection::vec(any::<u8>(), 0..200)).prop_map(|(k, v)| Entry::Put(k, v)),
        2 => key().prop_map(Entry::Delete),
        1 => (key(), key()).prop_map(|(a, b)| if a <= b { Entry::DeleteRange(a, b) } else { Entry::DeleteRange(b, a) }),
        2 => (key(), proptest::collection::vec(any::<u8>(), 0..16)).prop_map(|(k, o)| Entry::Merge(k, o)),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        14 => (ks(), entry()).prop_map(|(i, e)| Op::Write(i, e)),
        2 => (ks(), proptest::collection::vec(key(), 5..60)).prop_map(|(i, k)| Op::Fill(i, k)),
        3 => (proptest::collection::vec((ks(), entry()), 1..6), proptest::bool::weighted(0.2))
            .prop_map(|(e, s)| Op::Batch(e, s)),
        4 => (ks(), key()).prop_map(|(i, k)| Op::Get(i, k)),
        1 => (ks(), any::<bool>()).prop_map(|(i, f)| Op::Scan(i, f)),
        1 => (ks(), bound(), bound()).prop_map(|(i, a, b)| Op::Range(i, a, b)),
        1 => Just(Op::Snapshot),
        2 => (0usize..4, ks(), key()).prop_map(|(s, i, k)| Op::CheckSnapshot(s, i, k)),
        1 => (0usize..4).prop_map(Op::DropSnapshot),
        1 => ks().prop_map(Op::HoldIter),
        1 => (0usize..3).prop_map(Op::DrainIter),
        1 => Just(Op::Checkpoint),
        1 => (1..NAMES.len()).prop_map(Op::Create),
        1 => (1..NAMES.len()).prop_map(Op::Drop),
        5 => Just(Op::StepFlush),
        4 => Just(Op::StepCompaction),
        1 => Just(Op::StepObsolete),
        1 => ks().prop_map(Op::Flush),
        1 => (ks(), proptest::option::of(key()), proptest::option::of(key())).prop_map(|(i, a, b)| Op::CompactRange(i, a, b)),
        1 => Just(Op::WaitForCompaction),
        1 => Just(Op::Reopen),
    ]
}

/// Tiny trees so a few writes fill a memtable and a few flushes trigger a compaction.
fn options() -> Options {
    Options {
        write_buffer_size: 1024,
        max_write_buffer_number: 2,
        block_size: 256,
        target_file_size_base: 2048,
        max_bytes_for_level_base: 4096,
        max_bytes_for_level_multiplier: 3.0,
        level0_file_num_compaction_trigger: 2,
        level0_stop_writes_trigger: 4,
        max_background_compactions: 2,
        block_cache_capacity: 1 << 20,
        max_total_wal_size: 16 << 10,
        merge_operator: Some(Arc::new(merge::Append::new(b","))),
        // Three open table files and a manifest rolled over every 2 KiB: held iterators read
        // tables the cache closed while cleanup steps run, and reopens replay rolled manifests.
        max_open_files: 3,
        max_manifest_file_size: 2 << 10,
        ..Options::default()
    }
}

fn merged(existing: Option<&Vec<u8>>, operand: &[u8]) -> Vec<u8> {
    match existing {
        Some(v) => [v.as_slice(), b",", operand].concat(),
        None => operand.to_vec(),
    }
}

fn model_apply(model: &mut Model, entry: &Entry) {
    match entry {
        Entry::Put(k, v) => {
            model.insert(k.clone(), v.clone());
        }
        Entry::Delete(k) => {
            model.remove(k);
        }
        Entry::DeleteRange(a, b) => model.retain(|k, _| k < a || k >= b),
        Entry::Merge(k, o) => {
            let v = merged(model.get(k), o);
            model.insert(k.clone(), v);
        }
    }
}

fn add_to_batch(batch: &mut WriteBatch, ks: &Keyspace, entry: &Entry) {
    match entry {
        Entry::Put(k, v) => batch.put_in(ks, k, v),
        Entry::Delete(k) => batch.delete_in(ks, k),
        Entry::DeleteRange(a, b) => batch.delete_range_in(ks, a, b),
        Entry::Merge(k, o) => batch.merge_in(ks, k, o),
    };
}

fn collect(
    it: impl Iterator<Item = siftdb::Result<(Vec<u8>, Vec<u8>)>>,
    what: &str,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    it.map(|r| r.unwrap_or_else(|e| panic!("{what}: {e}")))
        .collect()
}

fn in_bounds(k: &[u8], lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> bool {
    let above = match lo {
        Bound::Included(b) => k >= b.as_slice(),
        Bound::Excluded(b) => k > b.as_slice(),
        Bound::Unbounded => true,
    };
    let below = match hi {
        Bound::Included(b) => k <= b.as_slice(),
        Bound::Excluded(b) => k < b.as_slice(),
        Bound::Unbounded => true,
    };
    above && below
}

/// A keyspace as the case sees it: its handle and model, or `None` while it does not exist.
/// `generation` counts its creations, so a snapshot or iterator can tell its keyspace from a
/// later one of the same name.
struct Space {
    live: Option<(Keyspace, Model)>,
    generation: u64,
}

/// A snapshot and, per keyspace that existed then, its generation, handle and model.
struct HeldSnapshot {
    snapshot: Snapshot,
    spaces: Vec<Option<(u64, Keyspace, Model)>>,
}

/// One case: the database, the model and what the case holds.
struct Case {
    dir: tempfile::TempDir,
    db: Option<Db>,
    spaces: Vec<Space>,
    snapshots: Vec<HeldSnapshot>,
    iters: Vec<(DbIterator, Pairs)>,
    checkpoints: usize,
}

impl Case {
    fn new() -> Case {
        let dir = siftdb_tests::temp_dir();
        let db = Db::open_stepped(dir.path().join("db"), options()).expect("open");
        let default = db.keyspace("default").expect("default keyspace");
        let mut spaces = vec![Space {
            live: Some((default, Model::new())),
            generation: 1,
        }];
        spaces.extend((1..NAMES.len()).map(|_| Space {
            live: None,
            generation: 0,
        }));
        Case {
            dir,
            db: Some(db),
            spaces,
            snapshots: Vec::new(),
            iters: Vec::new(),
            checkpoints: 0,
        }
    }

    fn db(&self) -> &Db {
        self.db.as_ref().expect("the case's database is open")
    }

    /// The total of immutable memtables of every keyspace.
    fn immutable_memtables(&self) -> usize {
        self.spaces
            .iter()
            .filter_map(|s| s.live.as_ref())
            .map(|(ks, _)| {
                ks.property("siftdb.num-immutable-mem-table")
                    .and_then(|n| n.parse::<usize>().ok())
                    .expect("the immutable memtable count")
            })
            .sum()
    }

    fn run(&mut self, op: &Op) {
        match op {
            Op::Write(i, entry) => self.write(&[(*i, entry.clone())], false),
            Op::Batch(entries, sync) => self.write(entries, *sync),
            Op::Fill(i, keys) => {
                for (n, k) in keys.iter().enumerate() {
                    let v = format!("fill-{n}-").into_bytes().repeat(10);
                    self.write(&[(*i, Entry::Put(k.clone(), v))], false);
                }
            }
            Op::Get(i, k) => {
                if let Some((ks, model)) = &self.spaces[*i].live {
                    let got = ks.get(k).unwrap_or_else(|e| panic!("get: {e}"));
                    assert_eq!(got.as_ref(), model.get(k), "get {k:?} in {}", NAMES[*i]);
                }
            }
            Op::Scan(i, forward) => {
                if let Some((ks, model)) = &self.spaces[*i].live {
                    let mut want: Vec<_> = model.clone().into_iter().collect();
                    let got = if *forward {
                        collect(ks.iter(), "scan")
                    } else {
                        want.reverse();
                        collect(ks.iter().rev(), "reverse scan")
                    };
                    assert_eq!(got, want, "scan of {} (forward: {forward})", NAMES[*i]);
                }
            }
            Op::Range(i, lo, hi) => {
                if let Some((ks, model)) = &self.spaces[*i].live {
                    let got = collect(ks.range::<Vec<u8>, _>((lo.clone(), hi.clone())), "range");
                    let want: Vec<_> = model
                        .iter()
                        .filter(|(k, _)| in_bounds(k, lo, hi))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    assert_eq!(got, want, "range {lo:?}..{hi:?} of {}", NAMES[*i]);
                }
            }
            Op::Snapshot => self.take_snapshot(),
            Op::CheckSnapshot(s, i, k) => self.check_snapshot(*s, *i, k),
            Op::DropSnapshot(s) => {
                if !self.snapshots.is_empty() {
                    let n = self.snapshots.len();
                    self.snapshots.remove(s % n);
                }
            }
            Op::HoldIter(i) => {
                if self.iters.len() < 3
                    && let Some((ks, model)) = &self.spaces[*i].live
                {
                    let want = model.clone().into_iter().collect();
                    self.iters.push((ks.iter(), want));
                }
            }
            Op::DrainIter(n) => {
                if !self.iters.is_empty() {
                    let len = self.iters.len();
                    let (it, want) = self.iters.remove(n % len);
                    // An iterator reads the state of its creation, whatever ran since (its
                    // keyspace's drop included: it holds what it reads).
                    assert_eq!(collect(it, "held iterator"), want, "a held iterator");
                }
            }
            Op::Checkpoint => self.checkpoint(),
            Op::Create(i) => self.create(*i),
            Op::Drop(i) => self.drop_keyspace(*i),
            Op::StepFlush => self.step_flush(),
            Op::StepCompaction => {
                self.db().step_compaction().expect("step_compaction");
            }
            Op::StepObsolete => self
                .db()
                .step_obsolete_files()
                .expect("step_obsolete_files"),
            Op::Flush(i) => {
                if let Some((ks, _)) = &self.spaces[*i].live {
                    ks.flush().expect("flush");
                    let imm = ks.property("siftdb.num-immutable-mem-table");
                    assert_eq!(imm.as_deref(), Some("0"), "flush left memtables frozen");
                }
            }
            Op::CompactRange(i, a, b) => {
                if let Some((ks, _)) = &self.spaces[*i].live {
                    ks.compact_range(a.as_deref(), b.as_deref())
                        .expect("compact_range");
                }
            }
            Op::WaitForCompaction => {
                self.db()
                    .wait_for_compaction()
                    .expect("wait_for_compaction");
                assert!(
                    !self.db().step_compaction().expect("step_compaction"),
                    "wait_for_compaction left a compaction due"
                );
            }
            Op::Reopen => self.reopen(),
        }
    }

    /// Writes `entries` as one batch (those of keyspaces that do not exist are left out).
    fn write(&mut self, entries: &[(usize, Entry)], sync: bool) {
        let mut batch = WriteBatch::new();
        let mut applied = Vec::new();
        for (i, entry) in entries {
            if let Some((ks, _)) = &self.spaces[*i].live {
                add_to_batch(&mut batch, ks, entry);
                applied.push((*i, entry));
            }
        }
        self.db()
            .write_opt(batch, &WriteOptions { sync })
            .unwrap_or_else(|e| panic!("write {entries:?}: {e}"));
        for (i, entry) in applied {
            if let Some((_, model)) = &mut self.spaces[i].live {
                model_apply(model, entry);
            }
        }
    }

    fn step_flush(&mut self) {
        let before = self.immutable_memtables();
        let flushed = self.db().step_flush().expect("step_flush");
        let after = self.immutable_memtables();
        assert_eq!(flushed, before > 0, "step_flush with {before} frozen");
        assert_eq!(
            after,
            before.saturating_sub(1),
            "step_flush left {after} of {before}"
        );
    }

    fn take_snapshot(&mut self) {
        if self.snapshots.len() >= 4 {
            self.snapshots.remove(0);
        }
        let snapshot = self.db().snapshot();
        let spaces = self
            .spaces
            .iter()
            .map(|s| {
                s.live
                    .as_ref()
                    .map(|(ks, m)| (s.generation, ks.clone(), m.clone()))
            })
            .collect();
        self.snapshots.push(HeldSnapshot { snapshot, spaces });
    }

    fn check_snapshot(&self, s: usize, i: usize, k: &[u8]) {
        if self.snapshots.is_empty() {
            return;
        }
        let held = &self.snapshots[s % self.snapshots.len()];
        let Some((generation, ks, model)) = &held.spaces[i] else {
            return;
        };
        let same = self.spaces[i].generation == *generation && self.spaces[i].live.is_some();
        let got = held.snapshot.get_in(ks, k);
        if !same {
            // Dropped since: its handles answer so, snapshot or not.
            assert!(
                matches!(got, Err(Error::KeyspaceDropped(_))),
                "a snapshot read of dropped {}: {got:?}",
                NAMES[i]
            );
            return;
        }
        let got = got.unwrap_or_else(|e| panic!("snapshot get: {e}"));
        assert_eq!(
            got.as_ref(),
            model.get(k),
            "snapshot get {k:?} in {}",
            NAMES[i]
        );
        let scanned = collect(held.snapshot.iter_in(ks), "snapshot scan");
        let want: Vec<_> = model.clone().into_iter().collect();
        assert_eq!(scanned, want, "snapshot scan of {}", NAMES[i]);
    }

    fn create(&mut self, i: usize) {
        if self.spaces[i].live.is_some() {
            return;
        }
        let ks = self
            .db()
            .create_keyspace(NAMES[i], KeyspaceOptions::default())
            .expect("create_keyspace");
        let space = &mut self.spaces[i];
        space.generation += 1;
        space.live = Some((ks, Model::new()));
    }

    fn drop_keyspace(&mut self, i: usize) {
        if self.spaces[i].live.is_none() {
            return;
        }
        self.db().drop_keyspace(NAMES[i]).expect("drop_keyspace");
        self.spaces[i].live = None;
    }

    /// The names of the keyspaces the model holds, "default" first, in `NAMES` order.
    fn live_names(&self) -> Vec<String> {
        (0..NAMES.len())
            .filter(|i| self.spaces[*i].live.is_some())
            .map(|i| NAMES[i].to_string())
            .collect()
    }

    /// Checks every keyspace of `db` against the model (`what` names the database).
    fn check_all(&self, db: &Db, what: &str) {
        let mut names = db.keyspace_names();
        names.sort_by_key(|n| NAMES.iter().position(|m| m == n));
        assert_eq!(names, self.live_names(), "{what}: keyspaces");
        for (i, space) in self.spaces.iter().enumerate() {
            if let Some((_, model)) = &space.live {
                let ks = db.keyspace(NAMES[i]).expect("keyspace");
                let got = collect(ks.iter(), what);
                let want: Vec<_> = model.clone().into_iter().collect();
                assert_eq!(got, want, "{what}: contents of {}", NAMES[i]);
            }
        }
    }

    fn checkpoint(&mut self) {
        self.checkpoints += 1;
        let path = self
            .dir
            .path()
            .join(format!("checkpoint-{}", self.checkpoints));
        self.db().checkpoint(&path).expect("checkpoint");
        let copy = Db::open_stepped(&path, options()).expect("open the checkpoint");
        self.check_all(&copy, "checkpoint");
        copy.close().expect("close the checkpoint");
        drop(copy);
        let _ = std::fs::remove_dir_all(&path);
    }

    fn reopen(&mut self) {
        // Snapshots and iterators belong to the instance that goes. Its keyspace handles hold
        // it too: `close` ends it (lock released) with them still around, and they are replaced.
        self.snapshots.clear();
        self.iters.clear();
        if let Some(db) = self.db.take() {
            db.close().expect("close");
        }
        let db = Db::open_stepped(self.dir.path().join("db"), options()).expect("reopen");
        self.check_all(&db, "after reopen");
        for (i, space) in self.spaces.iter_mut().enumerate() {
            if let Some((ks, _)) = &mut space.live {
                *ks = db.keyspace(NAMES[i]).expect("keyspace after reopen");
            }
        }
        self.db = Some(db);
    }
}

fn run_case(ops: &[Op]) {
    let mut case = Case::new();
    for op in ops {
        case.run(op);
    }
    // Everything still frozen, flushed; then the whole state, here and after a reopen.
    while case.db().step_flush().expect("final flush") {}
    let db = case.db().clone();
    case.check_all(&db, "at the end");
    drop(db);
    case.reopen();
}

fn cases() -> u32 {
    siftdb_tests::env_count("SIFTDB_SCHEDULE_CASES", 128) as u32
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn stepped_schedules_match_the_model(ops in proptest::collection::vec(op(), 1..250)) {
        run_case(&ops);
    }
}
