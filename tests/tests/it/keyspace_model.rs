//! Model tests of several keyspaces: random writes (cross-keyspace batches included), drops and
//! re-creations, flushes, compactions, snapshots, checkpoints, read-only opens and reopens
//! against one `BTreeMap` per keyspace; and the same across simulated power loss, where the
//! recovered database must equal the model at some point between the last durable write and
//! the last acknowledged one — every keyspace at the same point (batches are all-or-nothing
//! across keyspaces).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use proptest::prelude::*;
use siftdb::{Db, Error, Keyspace, KeyspaceOptions, Options, WriteBatch, WriteOptions};
use siftdb_tests::FaultFs;

/// The keyspaces a case uses, by index; 0 is "default".
const NAMES: [&str; 4] = ["default", "a", "b", "c"];

type Model = BTreeMap<Vec<u8>, Vec<u8>>;
/// Per keyspace index: its model, or `None` while it does not exist.
type State = Vec<Option<Model>>;
/// One op of a batch: (keyspace index, key, value or `None` for a delete).
type BatchEntry = (usize, Vec<u8>, Option<Vec<u8>>);

#[derive(Debug, Clone)]
enum Op {
    /// One batch: (keyspace, key, value or delete), synced or not.
    Write(Vec<BatchEntry>, bool),
    Get(usize, Vec<u8>),
    /// `multi_get` of these keys (repeats allowed) in one keyspace.
    MultiGet(usize, Vec<Vec<u8>>),
    Iter(usize),
    Prefix(usize, Vec<u8>),
    Flush(usize),
    Compact(usize),
    Drop(usize),
    Snapshot,
    CheckSnapshot(usize, usize, Vec<u8>),
    Checkpoint,
    ReadOnly,
    Reopen,
    /// Power loss, keeping this many bytes of torn writes (power-loss variant only).
    Crash(usize),
    /// `put_with_ttl` (an hour: it does not expire during the test) in an existing keyspace:
    /// an expiring value through the WAL, flushes, compactions and power loss.
    PutTtl(usize, Vec<u8>, Vec<u8>),
}

fn key() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(b'c')], 0..5)
}

fn ks() -> impl Strategy<Value = usize> {
    0..NAMES.len()
}

fn write() -> impl Strategy<Value = Op> {
    let entry = (
        ks(),
        key(),
        proptest::option::weighted(0.8, proptest::collection::vec(any::<u8>(), 0..200)),
    );
    (
        proptest::collection::vec(entry, 1..5),
        proptest::bool::weighted(0.2),
    )
        .prop_map(|(e, s)| Op::Write(e, s))
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        12 => write(),
        2 => (ks(), key(), proptest::collection::vec(any::<u8>(), 0..100)).prop_map(|(i, k, v)| Op::PutTtl(i, k, v)),
        4 => (ks(), key()).prop_map(|(i, k)| Op::Get(i, k)),
        2 => (ks(), proptest::collection::vec(key(), 0..12)).prop_map(|(i, k)| Op::MultiGet(i, k)),
        1 => ks().prop_map(Op::Iter),
        1 => (ks(), proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b')], 0..3)).prop_map(|(i, p)| Op::Prefix(i, p)),
        1 => ks().prop_map(Op::Flush),
        1 => ks().prop_map(Op::Compact),
        1 => (1..NAMES.len()).prop_map(Op::Drop),
        1 => Just(Op::Snapshot),
        2 => (0usize..3, ks(), key()).prop_map(|(s, i, k)| Op::CheckSnapshot(s, i, k)),
        1 => Just(Op::Checkpoint),
        1 => Just(Op::ReadOnly),
        1 => Just(Op::Reopen),
    ]
}

fn crash_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        12 => write(),
        2 => (ks(), key(), proptest::collection::vec(any::<u8>(), 0..100)).prop_map(|(i, k, v)| Op::PutTtl(i, k, v)),
        3 => (ks(), key()).prop_map(|(i, k)| Op::Get(i, k)),
        1 => ks().prop_map(Op::Flush),
        1 => ks().prop_map(Op::Compact),
        1 => (1..NAMES.len()).prop_map(Op::Drop),
        2 => (0usize..40).prop_map(Op::Crash),
    ]
}

/// Tiny trees so flushes and compactions run constantly; the database-wide settings.
fn options(fs: Option<&FaultFs>) -> Options {
    let mut o = Options {
        write_buffer_size: 2048,
        max_write_buffer_number: 3,
        block_size: 256,
        target_file_size_base: 2048,
        max_bytes_for_level_base: 4096,
        max_bytes_for_level_multiplier: 3.0,
        level0_file_num_compaction_trigger: 2,
        level0_stop_writes_trigger: 8,
        max_background_compactions: 2,
        partition_above: Some(256),
        metadata_block_size: 64,
        block_cache_capacity: 1 << 20,
        // Small enough that an idle keyspace's memtable is flushed to let old WALs go.
        max_total_wal_size: 16 << 10,
        // Below four keyspaces' memtables: the shared budget switches the largest one.
        db_write_buffer_size: 6 << 10,
        ..Options::default()
    };
    if let Some(fs) = fs {
        o.fs = Arc::new(fs.clone());
    }
    o
}

/// Each keyspace tuned its own way: another prefix, other filters, other codecs.
fn keyspace_options(index: usize, db: &Options) -> KeyspaceOptions {
    let base = KeyspaceOptions::from(db);
    match index {
        1 => KeyspaceOptions {
            prefix_extractor: Some(siftdb::FixedPrefix::shared(1)),
            filter_allocation: siftdb::FilterAllocation::Uniform,
            memtable_prefix_bloom_size_ratio: 0.2,
            ..base
        },
        2 => KeyspaceOptions {
            // No filters at all: every lookup goes to the tables' indexes.
            filter_bits_per_key: 0.0,
            compression_per_level: vec![siftdb::Compression::Zstd],
            write_buffer_size: 4096,
            ..base
        },
        _ => base,
    }
}

/// The database under test and its keyspace handles.
struct Harness {
    dir: std::path::PathBuf,
    fs: Option<FaultFs>,
    db: Db,
    handles: Vec<Option<Keyspace>>,
}

impl Harness {
    fn open(dir: &Path, fs: Option<FaultFs>) -> Harness {
        let db = Db::open(dir, options(fs.as_ref())).expect("open");
        let mut h = Harness {
            dir: dir.to_path_buf(),
            fs,
            db,
            handles: vec![None; NAMES.len()],
        };
        h.refresh_handles();
        h
    }

    /// Handles of the keyspaces that exist (after an open).
    fn refresh_handles(&mut self) {
        let names = self.db.keyspace_names();
        for (i, name) in NAMES.iter().enumerate() {
            self.handles[i] = names
                .iter()
                .any(|n| n == name)
                .then(|| self.db.keyspace(name).expect("existing keyspace"));
        }
    }

    /// The handle of keyspace `i`, created (with its own options) if it does not exist.
    fn ensure(&mut self, i: usize, state: &mut State) -> Keyspace {
        if self.handles[i].is_none() {
            let opts = keyspace_options(i, &options(self.fs.as_ref()));
            let ks = if i == 0 {
                self.db.keyspace(NAMES[0]).expect("default")
            } else {
                self.db.create_keyspace(NAMES[i], opts).expect("create")
            };
            self.handles[i] = Some(ks);
            state[i].get_or_insert_with(Model::new);
        }
        self.handles[i].clone().expect("handle")
    }

    fn reopen(&mut self) {
        self.handles.iter_mut().for_each(|h| *h = None);
        // Closing releases the directory lock; the old handle is dropped by the assignment.
        self.db.close().expect("close");
        self.db = Db::open(&self.dir, options(self.fs.as_ref())).expect("reopen");
        self.refresh_handles();
    }
}

fn contents(it: siftdb::DbIterator) -> Model {
    it.map(|r| r.expect("iterate")).collect()
}

/// Every keyspace of `db` equals `state`: the same keyspaces exist, with the same contents.
fn assert_db_equals(db: &Db, state: &State, what: &str) {
    let mut names = db.keyspace_names();
    names.sort();
    let mut want: Vec<String> = (0..NAMES.len())
        .filter(|&i| state[i].is_some() || i == 0)
        .map(|i| NAMES[i].to_string())
        .collect();
    want.sort();
    assert_eq!(names, want, "{what}: keyspace names");
    for (i, model) in state.iter().enumerate() {
        let empty = Model::new();
        let Some(model) = model.as_ref().or((i == 0).then_some(&empty)) else {
            continue;
        };
        let ks = db.keyspace(NAMES[i]).expect("keyspace");
        assert_eq!(&contents(ks.iter()), model, "{what}: keyspace {}", NAMES[i]);
    }
}

/// Applies a write to the database and the model.
fn apply_write(h: &mut Harness, state: &mut State, entries: &[BatchEntry], sync: bool) {
    let mut batch = WriteBatch::new();
    for (i, k, v) in entries {
        let ks = h.ensure(*i, state);
        let model = state[*i].get_or_insert_with(Model::new);
        match v {
            Some(v) => {
                batch.put_in(&ks, k, v);
                model.insert(k.clone(), v.clone());
            }
            None => {
                batch.delete_in(&ks, k);
                model.remove(k);
            }
        }
    }
    h.db.write_opt(batch, &WriteOptions { sync })
        .expect("write");
}

/// Writes an expiring value (an hour) to keyspace `i` if it exists; returns whether it did.
fn apply_put_ttl(h: &Harness, state: &mut State, i: usize, k: &[u8], v: &[u8]) -> bool {
    let (Some(ks), Some(model)) = (&h.handles[i], state[i].as_mut()) else {
        return false;
    };
    ks.put_with_ttl(k, v, std::time::Duration::from_secs(3600))
        .expect("put_with_ttl");
    model.insert(k.to_vec(), v.to_vec());
    true
}

/// Drops keyspace `i` if it exists (its handle must fail afterwards).
fn apply_drop(h: &mut Harness, state: &mut State, i: usize) {
    let Some(ks) = h.handles[i].take() else {
        return;
    };
    h.db.drop_keyspace(NAMES[i]).expect("drop");
    state[i] = None;
    assert!(matches!(ks.get(b"a"), Err(Error::KeyspaceDropped(_))));
}

fn run(ops: &[Op]) {
    let dir = siftdb_tests::temp_dir();
    let mut h = Harness::open(dir.path(), None);
    let mut state: State = vec![None; NAMES.len()];
    state[0] = Some(Model::new());
    let mut snapshots: Vec<(siftdb::Snapshot, State)> = Vec::new();
    let mut checkpoints = 0;
    // A read-only open kept across ops and caught up with the writer at each later `ReadOnly`,
    // while the keyspaces are those it was opened with (it does not learn of new ones).
    let mut secondary: Option<(Db, Vec<bool>, usize)> = None;
    let mut drops = 0;
    for op in ops {
        match op {
            Op::Write(entries, sync) => apply_write(&mut h, &mut state, entries, *sync),
            Op::PutTtl(i, k, v) => {
                apply_put_ttl(&h, &mut state, *i, k, v);
            }
            Op::Get(i, k) => {
                let ks = h.ensure(*i, &mut state);
                let want = state[*i].as_ref().and_then(|m| m.get(k).cloned());
                assert_eq!(ks.get(k).expect("get"), want, "get {} {k:?}", NAMES[*i]);
            }
            Op::MultiGet(i, keys) => {
                let ks = h.ensure(*i, &mut state);
                let got: Vec<Option<Vec<u8>>> = ks
                    .multi_get(keys)
                    .into_iter()
                    .collect::<Result<_, _>>()
                    .expect("multi_get");
                let want: Vec<Option<Vec<u8>>> = keys
                    .iter()
                    .map(|k| state[*i].as_ref().and_then(|m| m.get(k).cloned()))
                    .collect();
                assert_eq!(got, want, "multi_get {} {keys:?}", NAMES[*i]);
            }
            Op::Iter(i) => {
                let ks = h.ensure(*i, &mut state);
                assert_eq!(Some(contents(ks.iter())), state[*i], "iter {}", NAMES[*i]);
                let mut back: Vec<_> = ks.iter().rev().map(|r| r.expect("rev")).collect();
                back.reverse();
                let want: Vec<_> = state[*i].clone().unwrap_or_default().into_iter().collect();
                assert_eq!(back, want, "reverse iter {}", NAMES[*i]);
            }
            Op::Prefix(i, p) => {
                let ks = h.ensure(*i, &mut state);
                let got = contents(ks.prefix_iter(p));
                let want: Model = state[*i]
                    .iter()
                    .flatten()
                    .filter(|(k, _)| k.starts_with(p))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                assert_eq!(got, want, "prefix {} {p:?}", NAMES[*i]);
            }
            Op::Flush(i) => h.ensure(*i, &mut state).flush().expect("flush"),
            Op::Compact(i) => h
                .ensure(*i, &mut state)
                .compact_range(None, None)
                .expect("compact"),
            Op::Drop(i) => {
                snapshots.clear(); // a snapshot does not keep a dropped keyspace readable
                apply_drop(&mut h, &mut state, *i);
                drops += 1;
            }
            Op::Snapshot => {
                if snapshots.len() < 3 {
                    snapshots.push((h.db.snapshot(), state.clone()));
                }
            }
            Op::CheckSnapshot(s, i, k) => {
                let Some((snap, seen)) = snapshots.get(*s) else {
                    continue;
                };
                let (Some(ks), Some(model)) = (&h.handles[*i], &seen[*i]) else {
                    continue;
                };
                assert_eq!(
                    snap.get_in(ks, k).expect("snapshot get"),
                    model.get(k).cloned(),
                    "snapshot {s} get {} {k:?}",
                    NAMES[*i]
                );
                assert_eq!(&contents(snap.iter_in(ks)), model, "snapshot {s} iter");
            }
            Op::Checkpoint => {
                checkpoints += 1;
                let target = dir.path().with_extension(format!("cp{checkpoints}"));
                h.db.checkpoint(&target).expect("checkpoint");
                let copy = Db::open(&target, options(None)).expect("open checkpoint");
                assert_db_equals(&copy, &state, "checkpoint");
                drop(copy);
                std::fs::remove_dir_all(&target).expect("remove checkpoint");
            }
            Op::ReadOnly => {
                let live: Vec<bool> = state.iter().map(Option::is_some).collect();
                match &secondary {
                    Some((reader, opened_with, at_drops))
                        if *opened_with == live && *at_drops == drops =>
                    {
                        reader.try_catch_up_with_primary().expect("catch up");
                        assert_db_equals(reader, &state, "read-only open caught up");
                    }
                    _ => {
                        let reader =
                            Db::open_read_only(dir.path(), options(None)).expect("read-only");
                        assert_db_equals(&reader, &state, "read-only open");
                        secondary = Some((reader, live, drops));
                    }
                }
            }
            Op::Reopen => {
                snapshots.clear();
                h.reopen();
                assert_db_equals(&h.db, &state, "reopen");
            }
            Op::Crash(_) => unreachable!("power-loss op in the plain model"),
        }
    }
    snapshots.clear();
    assert_db_equals(&h.db, &state, "end");
    h.reopen();
    assert_db_equals(&h.db, &state, "end, reopened");
}

fn run_with_power_loss(ops: &[Op]) {
    let fs = FaultFs::new();
    let mut h = Harness::open(Path::new("/db"), Some(fs.clone()));
    let mut state: State = vec![None; NAMES.len()];
    state[0] = Some(Model::new());
    // States a crash may return to: from the last durable point to now.
    let mut candidates: Vec<State> = vec![state.clone()];
    for op in ops {
        match op {
            Op::Write(entries, sync) => {
                let before = state.clone();
                apply_write(&mut h, &mut state, entries, *sync);
                let created: Vec<usize> = (0..NAMES.len())
                    .filter(|&i| before[i].is_none() && state[i].is_some())
                    .collect();
                if *sync || !created.is_empty() {
                    // A synced write, or the creation of a keyspace (which makes every earlier
                    // write durable first), leaves nothing older to return to.
                    candidates.clear();
                }
                if !created.is_empty() && !*sync {
                    // The keyspaces were created durably; the write itself may be lost.
                    let mut created_only = before;
                    for i in created {
                        created_only[i] = Some(Model::new());
                    }
                    candidates.push(created_only);
                }
                candidates.push(state.clone());
            }
            Op::PutTtl(i, k, v) => {
                if apply_put_ttl(&h, &mut state, *i, k, v) {
                    candidates.push(state.clone()); // unsynced: it may be lost
                }
            }
            Op::Get(i, k) => {
                if let Some(ks) = &h.handles[*i] {
                    let want = state[*i].as_ref().and_then(|m| m.get(k).cloned());
                    assert_eq!(ks.get(k).expect("get"), want);
                }
            }
            Op::Flush(i) | Op::Compact(i) => {
                if let Some(ks) = h.handles[*i].clone() {
                    if matches!(op, Op::Flush(_)) {
                        ks.flush().expect("flush");
                    } else {
                        ks.compact_range(None, None).expect("compact");
                    }
                    // What the keyspace held is durable now, but an empty memtable switches no
                    // WAL: other keyspaces' unsynced writes may still be lost.
                }
            }
            Op::Drop(i) => {
                if h.handles[*i].is_some() {
                    apply_drop(&mut h, &mut state, *i);
                    candidates = vec![state.clone()];
                }
            }
            Op::Crash(torn) => {
                fs.crash();
                h.handles.iter_mut().for_each(|k| *k = None);
                // The machine is off: the close's WAL sync fails (unless a background job met the
                // power cut first and stopped writes).
                let _ = h.db.close();
                fs.restart(*torn);
                h.db = Db::open(Path::new("/db"), options(Some(&fs)))
                    .expect("reopen after power loss");
                h.refresh_handles();
                let now = current_state(&h.db);
                assert!(
                    candidates.iter().any(|c| normalized(c) == now),
                    "state after power loss matches no prefix of the writes since the last durable one ({} candidates)\nnow {now:?}",
                    candidates.len()
                );
                state = now;
                candidates = vec![state.clone()];
            }
            _ => unreachable!("plain-model op in the power-loss model: {op:?}"),
        }
    }
    assert_eq!(current_state(&h.db), normalized(&state));
}

/// The state of every keyspace `db` holds.
fn current_state(db: &Db) -> State {
    let names = db.keyspace_names();
    NAMES
        .iter()
        .map(|name| {
            names
                .iter()
                .any(|n| n == name)
                .then(|| contents(db.keyspace(name).expect("keyspace").iter()))
        })
        .collect()
}

/// `state` as a database shows it ("default" always exists).
fn normalized(state: &State) -> State {
    let mut s = state.clone();
    s[0].get_or_insert_with(Model::new);
    s
}

fn cases(default: u64) -> u32 {
    siftdb_tests::env_count("SIFTDB_MODEL_CASES", default) as u32
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(96), ..ProptestConfig::default() })]

    #[test]
    fn keyspaces_match_their_models(ops in proptest::collection::vec(op(), 1..100)) {
        run(&ops);
    }

    #[test]
    fn keyspaces_match_their_models_across_power_loss(ops in proptest::collection::vec(crash_op(), 1..80)) {
        run_with_power_loss(&ops);
    }
}
