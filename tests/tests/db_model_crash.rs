//! Model test across simulated power loss: random writes (synced or not), flushes, compactions
//! and crashes on the fault-injecting file system. After each crash the database must equal the
//! model as of some point between the last durable write and the last acknowledged one — a
//! prefix of the write sequence, never less than what was synced.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use proptest::prelude::*;
use siftdb::{Db, Options, WriteBatch, WriteOptions};
use siftdb_tests::FaultFs;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

#[derive(Debug, Clone)]
enum Op {
    Write(Vec<(Vec<u8>, Option<Vec<u8>>)>, bool),
    /// Keys above every other, in order (a sequential load: its tables move down unchanged).
    Append(usize),
    Get(Vec<u8>),
    Flush,
    Compact,
    Crash(usize),
}

fn key() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(b'c')], 0..5)
}

fn op() -> impl Strategy<Value = Op> {
    let entry = (
        key(),
        proptest::option::weighted(0.8, proptest::collection::vec(any::<u8>(), 0..200)),
    );
    prop_oneof![
        10 => (proptest::collection::vec(entry, 1..4), proptest::bool::weighted(0.2)).prop_map(|(e, s)| Op::Write(e, s)),
        3 => key().prop_map(Op::Get),
        1 => (10usize..40).prop_map(Op::Append),
        1 => Just(Op::Flush),
        1 => Just(Op::Compact),
        2 => (0usize..40).prop_map(Op::Crash),
    ]
}

fn options(fs: &FaultFs) -> Options {
    Options {
        write_buffer_size: 2048,
        max_write_buffer_number: 3,
        block_size: 256,
        target_file_size_base: 2048,
        max_bytes_for_level_base: 4096,
        max_bytes_for_level_multiplier: 3.0,
        level0_file_num_compaction_trigger: 2,
        level0_stop_writes_trigger: 8,
        // Two compactions side by side: crashes land in either.
        max_background_compactions: 2,
        // Partitioned indexes and filters, and compressed blocks, across power loss too.
        partition_above: Some(256),
        metadata_block_size: 64,
        compression_per_level: vec![siftdb::Compression::Lz4],
        fs: Arc::new(fs.clone()),
        ..Options::default()
    }
}

fn contents(db: &Db) -> Model {
    db.iter().map(|r| r.expect("iterate")).collect()
}

/// The `n`th key of `Op::Append`: above every key of `key()`, in order.
fn appended_key(n: u64) -> Vec<u8> {
    let mut k = b"z".to_vec();
    k.extend_from_slice(&n.to_be_bytes());
    k
}

fn run(ops: &[Op]) {
    let fs = FaultFs::new();
    let dir = Path::new("/db");
    let mut db = Db::open(dir, options(&fs)).unwrap();
    let mut model = Model::new();
    // Model states a crash may return to: from the last durable point to now.
    let mut candidates: Vec<Model> = vec![model.clone()];
    let mut appended = 0u64;
    for op in ops {
        match op {
            Op::Append(n) => {
                for _ in 0..*n {
                    let k = appended_key(appended);
                    appended += 1;
                    db.put(&k, [b'z'; 100]).unwrap();
                    model.insert(k, vec![b'z'; 100]);
                    candidates.push(model.clone());
                }
            }
            Op::Write(entries, sync) => {
                let mut b = WriteBatch::new();
                for (k, v) in entries {
                    match v {
                        Some(v) => {
                            b.put(k, v);
                            model.insert(k.clone(), v.clone());
                        }
                        None => {
                            b.delete(k);
                            model.remove(k);
                        }
                    }
                }
                db.write_opt(b, &WriteOptions { sync: *sync }).unwrap();
                if *sync {
                    candidates.clear();
                }
                candidates.push(model.clone());
            }
            Op::Get(k) => assert_eq!(db.get(k).unwrap(), model.get(k).cloned()),
            Op::Flush => {
                db.flush().unwrap();
                candidates = vec![model.clone()];
            }
            Op::Compact => {
                db.compact_range(None, None).unwrap();
                candidates = vec![model.clone()];
            }
            Op::Crash(torn) => {
                fs.crash();
                drop(db);
                fs.restart(*torn);
                db = Db::open(dir, options(&fs)).expect("reopen after power loss");
                let now = contents(&db);
                let matched = candidates.iter().rposition(|c| *c == now);
                assert!(
                    matched.is_some(),
                    "state after power loss matches no prefix of the writes since the last durable one ({} candidates)",
                    candidates.len()
                );
                model = now;
                candidates = vec![model.clone()];
            }
        }
    }
    assert_eq!(contents(&db), model);
}

fn cases() -> u32 {
    siftdb_tests::env_count("SIFTDB_MODEL_CASES", 128) as u32
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn db_matches_model_across_power_loss(ops in proptest::collection::vec(op(), 1..100)) {
        run(&ops);
    }
}
