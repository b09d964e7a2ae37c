//! Model test of `WriteBatchWithIndex`: random puts, deletes and merge operands go either to
//! the database (in two keyspaces) or to an indexed batch, with flushes, compactions, commits
//! and savepoints (set, rolled back to) in between; every read through the batch
//! (`get_from_batch_and_db`, and `iterator_with_base` over random ranges, both ways and mixed)
//! must equal the model — the
//! batch's ops applied in order over the database's `BTreeMap`s — and a commit must leave the
//! database equal to it.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use proptest::prelude::*;
use siftdb::{merge, Db, Keyspace, KeyspaceOptions, Options, WriteBatchWithIndex};

/// (keyspace index: 0 "default", 1 "other"; key) → value.
type Model = BTreeMap<(usize, Vec<u8>), Vec<u8>>;

#[derive(Debug, Clone)]
enum Write {
    Put(Vec<u8>),
    Delete,
    /// A `U64Add` operand.
    Merge(u64),
}

#[derive(Debug, Clone)]
enum Op {
    /// Straight to the database.
    Db(usize, Vec<u8>, Write),
    /// Into the batch.
    Batch(usize, Vec<u8>, Write),
    Get(usize, Vec<u8>),
    /// A range of one keyspace, walked from the front (`true`) or the back at each step.
    Iter(usize, Bound<Vec<u8>>, Bound<Vec<u8>>, Vec<bool>),
    Flush,
    Compact,
    /// The batch is written; a new one starts.
    Commit,
    /// `set_savepoint`.
    Savepoint,
    /// `rollback_to_savepoint`: the batch's ops since the last savepoint go (an error, and no
    /// change, without one).
    Rollback,
}

fn key() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(b'c')], 0..3)
}

fn write() -> impl Strategy<Value = Write> {
    prop_oneof![
        3 => (0u64..1000).prop_map(|n| Write::Put(n.to_le_bytes().to_vec())),
        2 => Just(Write::Delete),
        3 => (1u64..5).prop_map(Write::Merge),
    ]
}

fn bound() -> impl Strategy<Value = Bound<Vec<u8>>> {
    prop_oneof![
        Just(Bound::Unbounded),
        key().prop_map(Bound::Included),
        key().prop_map(Bound::Excluded),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let ks = 0usize..2;
    prop_oneof![
        4 => (ks.clone(), key(), write()).prop_map(|(s, k, w)| Op::Db(s, k, w)),
        6 => (ks.clone(), key(), write()).prop_map(|(s, k, w)| Op::Batch(s, k, w)),
        4 => (ks.clone(), key()).prop_map(|(s, k)| Op::Get(s, k)),
        3 => (ks, bound(), bound(), proptest::collection::vec(any::<bool>(), 0..12))
            .prop_map(|(s, l, u, w)| Op::Iter(s, l, u, w)),
        1 => Just(Op::Flush),
        1 => Just(Op::Compact),
        1 => Just(Op::Commit),
        1 => Just(Op::Savepoint),
        1 => Just(Op::Rollback),
    ]
}

fn counter(bytes: &[u8]) -> u64 {
    bytes.try_into().map_or(0, u64::from_le_bytes)
}

/// `w` applied to the model's `(ks, key)`.
fn apply(model: &mut Model, ks: usize, key: &[u8], w: &Write) {
    let slot = (ks, key.to_vec());
    match w {
        Write::Put(v) => {
            model.insert(slot, v.clone());
        }
        Write::Delete => {
            model.remove(&slot);
        }
        Write::Merge(n) => {
            let base = model.get(&slot).map_or(0, |v| counter(v));
            model.insert(slot, base.wrapping_add(*n).to_le_bytes().to_vec());
        }
    }
}

fn in_bounds(k: &[u8], lower: &Bound<Vec<u8>>, upper: &Bound<Vec<u8>>) -> bool {
    let above = match lower {
        Bound::Included(l) => k >= l.as_slice(),
        Bound::Excluded(l) => k > l.as_slice(),
        Bound::Unbounded => true,
    };
    let below = match upper {
        Bound::Included(u) => k <= u.as_slice(),
        Bound::Excluded(u) => k < u.as_slice(),
        Bound::Unbounded => true,
    };
    above && below
}

struct Case {
    db: Db,
    other: Keyspace,
    batch: WriteBatchWithIndex,
    /// The database's contents.
    stored: Model,
    /// The batch's ops, in order.
    pending: Vec<(usize, Vec<u8>, Write)>,
    /// The number of pending ops at each savepoint of the batch.
    savepoints: Vec<usize>,
}

impl Case {
    /// What reads through the batch must see.
    fn seen(&self) -> Model {
        let mut model = self.stored.clone();
        for (ks, k, w) in &self.pending {
            apply(&mut model, *ks, k, w);
        }
        model
    }

    fn write_db(&mut self, ks: usize, key: &[u8], w: &Write) {
        let result = match (ks, w) {
            (0, Write::Put(v)) => self.db.put(key, v),
            (0, Write::Delete) => self.db.delete(key),
            (0, Write::Merge(n)) => self.db.merge(key, n.to_le_bytes()),
            (_, Write::Put(v)) => self.other.put(key, v),
            (_, Write::Delete) => self.other.delete(key),
            (_, Write::Merge(n)) => self.other.merge(key, n.to_le_bytes()),
        };
        result.unwrap();
        apply(&mut self.stored, ks, key, w);
    }

    fn write_batch(&mut self, ks: usize, key: &[u8], w: &Write) {
        let b = &mut self.batch;
        match (ks, w) {
            (0, Write::Put(v)) => b.put(key, v),
            (0, Write::Delete) => b.delete(key),
            (0, Write::Merge(n)) => b.merge(key, n.to_le_bytes()),
            (_, Write::Put(v)) => b.put_in(&self.other, key, v),
            (_, Write::Delete) => b.delete_in(&self.other, key),
            (_, Write::Merge(n)) => b.merge_in(&self.other, key, n.to_le_bytes()),
        };
        self.pending.push((ks, key.to_vec(), w.clone()));
    }

    fn check_get(&self, ks: usize, key: &[u8]) {
        let got = match ks {
            0 => self.batch.get_from_batch_and_db(&self.db, key),
            _ => self.batch.get_from_batch_and_db_in(&self.other, key),
        }
        .unwrap();
        assert_eq!(
            got,
            self.seen().get(&(ks, key.to_vec())).cloned(),
            "get {ks} {key:?}"
        );
    }

    fn check_iter(&self, ks: usize, lower: &Bound<Vec<u8>>, upper: &Bound<Vec<u8>>, walk: &[bool]) {
        let want: Vec<(Vec<u8>, Vec<u8>)> = self
            .seen()
            .into_iter()
            .filter(|((s, k), _)| *s == ks && in_bounds(k, lower, upper))
            .map(|((_, k), v)| (k, v))
            .collect();
        let range = (lower.clone(), upper.clone());
        let it = match ks {
            0 => self.batch.iterator_with_base(&self.db, range),
            _ => self.batch.iterator_with_base_in(&self.other, range),
        };
        siftdb_tests::check_walk(it, want, walk, &format!("walk {ks} {lower:?}..{upper:?}"));
    }
}

fn options() -> Options {
    Options {
        merge_operator: Some(Arc::new(merge::U64Add)),
        write_buffer_size: 1024,
        ..Options::default()
    }
}

fn run(ops: &[Op]) {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), options()).unwrap();
    let other = db
        .create_keyspace("other", KeyspaceOptions::default())
        .unwrap();
    let mut case = Case {
        db,
        other,
        batch: WriteBatchWithIndex::new(),
        stored: Model::new(),
        pending: Vec::new(),
        savepoints: Vec::new(),
    };
    for op in ops {
        match op {
            Op::Db(ks, k, w) => case.write_db(*ks, k, w),
            Op::Batch(ks, k, w) => case.write_batch(*ks, k, w),
            Op::Get(ks, k) => case.check_get(*ks, k),
            Op::Iter(ks, l, u, walk) => case.check_iter(*ks, l, u, walk),
            Op::Flush => {
                case.db.flush().unwrap();
                case.other.flush().unwrap();
            }
            Op::Compact => case.db.compact_range(None, None).unwrap(),
            Op::Commit => {
                let batch = std::mem::take(&mut case.batch);
                case.db.write(batch).unwrap();
                case.stored = case.seen();
                case.pending.clear();
                case.savepoints.clear();
            }
            Op::Savepoint => {
                case.batch.set_savepoint();
                case.savepoints.push(case.pending.len());
            }
            Op::Rollback => {
                let got = case.batch.rollback_to_savepoint();
                match case.savepoints.pop() {
                    Some(len) => {
                        got.unwrap();
                        case.pending.truncate(len);
                    }
                    None => assert!(got.is_err(), "a rollback without a savepoint"),
                }
                assert_eq!(
                    case.batch.len(),
                    case.pending.len(),
                    "ops left in the batch"
                );
            }
        }
    }
    // Every key through the batch, then the batch written: the database equals the model.
    for ks in 0..2 {
        case.check_iter(ks, &Bound::Unbounded, &Bound::Unbounded, &[]);
    }
    let want = case.seen();
    case.db.write(std::mem::take(&mut case.batch)).unwrap();
    let mut got = Model::new();
    for kv in case.db.iter() {
        let (k, v) = kv.unwrap();
        got.insert((0, k), v);
    }
    for kv in case.other.iter() {
        let (k, v) = kv.unwrap();
        got.insert((1, k), v);
    }
    assert_eq!(got, want, "after the last commit");
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: siftdb_tests::env_count("SIFTDB_MODEL_CASES", 256) as u32,
        ..ProptestConfig::default()
    })]

    #[test]
    fn batch_with_index_reads_match_btreemap_model(ops in proptest::collection::vec(op(), 1..80)) {
        run(&ops);
    }
}

#[test]
fn batch_with_index_merges_over_a_database_value_flushed_to_a_table() {
    run(&[
        Op::Db(0, b"a".to_vec(), Write::Put(5u64.to_le_bytes().to_vec())),
        Op::Flush,
        Op::Batch(0, b"a".to_vec(), Write::Merge(2)),
        Op::Get(0, b"a".to_vec()),
        Op::Db(0, b"a".to_vec(), Write::Merge(10)),
        Op::Get(0, b"a".to_vec()),
        Op::Iter(0, Bound::Unbounded, Bound::Unbounded, vec![false]),
        Op::Batch(0, b"a".to_vec(), Write::Delete),
        Op::Batch(0, b"a".to_vec(), Write::Merge(1)),
        Op::Get(0, b"a".to_vec()),
        Op::Commit,
        Op::Get(0, b"a".to_vec()),
    ]);
}
