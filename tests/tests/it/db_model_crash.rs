//! Model test across simulated power loss: random writes (synced or not), flushes, compactions
//! and crashes on the fault-injecting file system. After each crash the database must equal the
//! model as of some point between the last durable write and the last acknowledged one — a
//! prefix of the write sequence, never less than what was synced.
//!
//! Batches mix puts, deletes, range deletes and merge operands (the `Append` operator): a
//! batch holding both a range delete and merges is there entirely after a crash, or not at all.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;

use proptest::prelude::*;
use siftdb::{merge, Db, Error, Options, WriteBatch, WriteOptions};
use siftdb_tests::FaultFs;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// One operation of a batch.
#[derive(Debug, Clone)]
enum Entry {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
    /// `[start, end)`; a reversed range (start > end) refuses the whole batch.
    DeleteRange(Vec<u8>, Vec<u8>),
    Merge(Vec<u8>, Vec<u8>),
}

#[derive(Debug, Clone)]
enum Op {
    Write(Vec<Entry>, bool),
    /// Keys above every other, in order (a sequential load: its tables move down unchanged).
    Append(usize),
    Get(Vec<u8>),
    Flush,
    Compact,
    Crash(usize),
    /// A transaction (pessimistic when the flag says so) that writes the first entries, sets a
    /// savepoint, writes the second ones, rolls back to the savepoint and commits (synced when
    /// the last flag says so): after power loss the first entries are there together or not
    /// at all, the second never.
    Txn(Vec<Entry>, Vec<Entry>, bool, bool),
    /// `set_options` with one of [`LIVE_CHANGES`]: `OPTIONS` rewritten (a temporary file,
    /// synced, renamed) while writes go on; power loss must leave a database that opens.
    SetOptions(usize),
    /// A batch of log data alone (synced when the flag says so): a WAL record of no operation
    /// that replay must read past, torn or not.
    LogData(Vec<u8>, bool),
}

/// The changes `Op::SetOptions` makes (turning automatic compactions off raises the L0 stop
/// trigger with it, or writes would wait for compactions that never come).
const LIVE_CHANGES: [&[(&str, &str)]; 3] = [
    &[
        ("disable_auto_compactions", "true"),
        ("level0_stop_writes_trigger", "1000"),
        ("write_buffer_size", "8192"),
    ],
    &[
        ("disable_auto_compactions", "false"),
        ("level0_stop_writes_trigger", "8"),
        ("write_buffer_size", "4096"),
    ],
    &[
        ("filter_bits_per_key", "4"),
        ("compression_per_level", "zstd"),
    ],
];

/// A transaction's write: transactions have no range deletes (one becomes a delete of its start).
fn txn_entry() -> impl Strategy<Value = Entry> {
    entry().prop_map(|e| match e {
        Entry::DeleteRange(a, _) => Entry::Delete(a),
        e => e,
    })
}

fn key() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(b'c')], 0..5)
}

/// A range bound: a key of `key()`, or one among or above the appended keys.
fn range_key() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        8 => key(),
        1 => Just(b"z".to_vec()),
        1 => (0u64..120).prop_map(appended_key),
    ]
}

fn entry() -> impl Strategy<Value = Entry> {
    prop_oneof![
        8 => (key(), proptest::collection::vec(any::<u8>(), 0..200)).prop_map(|(k, v)| Entry::Put(k, v)),
        2 => key().prop_map(Entry::Delete),
        2 => (range_key(), range_key(), proptest::bool::weighted(0.05)).prop_map(|(a, b, rev)| {
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            if rev { Entry::DeleteRange(hi, lo) } else { Entry::DeleteRange(lo, hi) }
        }),
        4 => (key(), proptest::collection::vec(any::<u8>(), 0..30)).prop_map(|(k, o)| Entry::Merge(k, o)),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => (proptest::collection::vec(entry(), 1..5), proptest::bool::weighted(0.2)).prop_map(|(e, s)| Op::Write(e, s)),
        3 => key().prop_map(Op::Get),
        1 => (10usize..40).prop_map(Op::Append),
        1 => Just(Op::Flush),
        1 => Just(Op::Compact),
        2 => (0usize..40).prop_map(Op::Crash),
        1 => (0..LIVE_CHANGES.len()).prop_map(Op::SetOptions),
        1 => (proptest::collection::vec(any::<u8>(), 0..40), proptest::bool::weighted(0.3)).prop_map(|(b, s)| Op::LogData(b, s)),
        3 => (
            proptest::collection::vec(txn_entry(), 1..5),
            proptest::collection::vec(txn_entry(), 0..3),
            any::<bool>(),
            proptest::bool::weighted(0.2),
        )
            .prop_map(|(kept, undone, p, s)| Op::Txn(kept, undone, p, s)),
    ]
}

fn options(fs: &FaultFs) -> Options {
    options_in(fs, siftdb::CompactionStyle::Level)
}

/// [`options`] compacting in `style`.
fn options_in(fs: &FaultFs, style: siftdb::CompactionStyle) -> Options {
    // Universal waits for four runs, so that merges take L0 tables and level runs together.
    let universal = style == siftdb::CompactionStyle::Universal;
    Options {
        compaction_style: style,
        write_buffer_size: 2048,
        max_write_buffer_number: 3,
        block_size: 256,
        target_file_size_base: 2048,
        max_bytes_for_level_base: 4096,
        max_bytes_for_level_multiplier: 3.0,
        level0_file_num_compaction_trigger: if universal { 4 } else { 2 },
        level0_stop_writes_trigger: 8,
        // Two compactions side by side, each split into up to two key ranges: crashes land in
        // any of them.
        max_background_compactions: 2,
        max_subcompactions: 2,
        // Partitioned indexes and filters, and compressed blocks, across power loss too.
        partition_above: Some(256),
        metadata_block_size: 64,
        compression_per_level: vec![siftdb::Compression::Lz4],
        merge_operator: Some(Arc::new(merge::Append::new(b","))),
        // Power lost while tables are reopened by a four-file table cache and while manifests
        // roll over every few edits.
        max_open_files: 4,
        max_manifest_file_size: 4 << 10,
        // Table writes paced by a rate limiter (at a rate these small trees rarely wait for):
        // power is lost inside paced writes too.
        rate_limiter: Some(Arc::new(siftdb::RateLimiter::new(16 << 20))),
        // Binary fuse filters below L1 sized by adaptive allocation, range filter blocks in
        // every table and a small false-positive memo: their tables go through power loss like
        // the others.
        bloom_before_level: 1,
        filter_allocation: siftdb::FilterAllocation::Adaptive,
        deep_filter_kind: siftdb::FilterKind::BinaryFuse,
        range_filter_bits_per_key: 6.0,
        false_positive_memo_bytes: 16 * 200,
        // A memtable bloom over whole keys (no prefix extractor): the memtables WAL replay
        // rebuilds after power loss must fill theirs, or a `get` would miss a recovered key.
        // No filter on the bottom level: unfiltered tables go through power loss too.
        memtable_prefix_bloom_size_ratio: 0.25,
        optimize_filters_for_hits: true,
        // Leveled trees keep values of 40 bytes and more in tiny blob files, collected by
        // compactions (forced at a third of garbage): power is lost while blob files are
        // written, synced, relocated and deleted too.
        enable_blob_files: !universal,
        min_blob_size: 40,
        blob_file_size: 1024,
        enable_blob_garbage_collection: !universal,
        blob_garbage_collection_age_cutoff: 0.5,
        blob_garbage_collection_force_threshold: 0.3,
        // Writeback started every 512 bytes of every file: power is lost between those starts
        // and the syncs after them.
        bytes_per_sync: 512,
        wal_bytes_per_sync: 512,
        fs: Arc::new(fs.clone()),
        ..Options::default()
    }
}

/// The whole contents, by a full scan; each key is also read back through a bounded scan of
/// just that key (which asks the tables' range filters) and must be found there too.
fn contents(db: &Db) -> Model {
    let model: Model = db.iter().map(|r| r.expect("iterate")).collect();
    for (k, v) in &model {
        let one: Vec<_> = db
            .range(k.clone()..=k.clone())
            .map(|r| r.expect("bounded scan"))
            .collect();
        assert_eq!(
            one,
            vec![(k.clone(), v.clone())],
            "a bounded scan missed {k:?}"
        );
    }
    model
}

/// The `n`th key of `Op::Append`: above every key of `key()`, in order.
fn appended_key(n: u64) -> Vec<u8> {
    let mut k = b"z".to_vec();
    k.extend_from_slice(&n.to_be_bytes());
    k
}

/// Applies a batch to the model (`Append` merges joined by ","); `false`, and the model
/// untouched, when the database must refuse it (a range whose start is after its end).
fn model_batch(model: &mut Model, entries: &[Entry]) -> bool {
    if entries
        .iter()
        .any(|e| matches!(e, Entry::DeleteRange(a, b) if a > b))
    {
        return false;
    }
    for e in entries {
        match e {
            Entry::Put(k, v) => {
                model.insert(k.clone(), v.clone());
            }
            Entry::Delete(k) => {
                model.remove(k);
            }
            Entry::DeleteRange(a, b) => {
                let doomed: Vec<Vec<u8>> = model
                    .range::<[u8], _>((
                        Bound::Included(a.as_slice()),
                        Bound::Excluded(b.as_slice()),
                    ))
                    .map(|(k, _)| k.clone())
                    .collect();
                for k in doomed {
                    model.remove(&k);
                }
            }
            Entry::Merge(k, o) => {
                let v = match model.get(k) {
                    Some(v) => [v.as_slice(), b",", o].concat(),
                    None => o.clone(),
                };
                model.insert(k.clone(), v);
            }
        }
    }
    true
}

fn run(style: siftdb::CompactionStyle, ops: &[Op]) {
    let fs = FaultFs::new();
    let dir = Path::new("/db");
    let options = |fs: &FaultFs| options_in(fs, style);
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
                for e in entries {
                    match e {
                        Entry::Put(k, v) => b.put(k, v),
                        Entry::Delete(k) => b.delete(k),
                        Entry::DeleteRange(s, e) => b.delete_range(s, e),
                        Entry::Merge(k, o) => b.merge(k, o),
                    };
                }
                let got = db.write_opt(b, &WriteOptions { sync: *sync });
                if !model_batch(&mut model, entries) {
                    assert!(
                        matches!(got, Err(Error::InvalidArgument(_))),
                        "a batch with a reversed range: {got:?}"
                    );
                    continue;
                }
                got.unwrap();
                // Synced, even a batch of empty ranges only (an empty batch) makes every earlier
                // write durable.
                if *sync {
                    candidates.clear();
                }
                candidates.push(model.clone());
            }
            Op::Txn(kept, undone, pessimistic, sync) => {
                let mode = if *pessimistic {
                    siftdb::TransactionMode::Pessimistic
                } else {
                    siftdb::TransactionMode::Optimistic
                };
                let mut txn = db.transaction_opt(&siftdb::TransactionOptions {
                    mode,
                    ..Default::default()
                });
                let write = |txn: &mut siftdb::Transaction, e: &Entry| match e {
                    Entry::Put(k, v) => txn.put(k, v),
                    Entry::Delete(k) => txn.delete(k),
                    Entry::Merge(k, o) => txn.merge(k, o),
                    Entry::DeleteRange(..) => unreachable!("no range deletes in transactions"),
                };
                for e in kept {
                    write(&mut txn, e).unwrap();
                }
                txn.set_savepoint().unwrap();
                for e in undone {
                    write(&mut txn, e).unwrap();
                }
                txn.rollback_to_savepoint().unwrap();
                txn.commit_opt(&WriteOptions { sync: *sync }).unwrap();
                assert!(model_batch(&mut model, kept));
                if *sync {
                    candidates.clear();
                }
                candidates.push(model.clone());
            }
            Op::SetOptions(i) => db.set_options(LIVE_CHANGES[*i]).unwrap(),
            Op::LogData(blob, sync) => {
                let mut b = WriteBatch::new();
                b.put_log_data(blob);
                db.write_opt(b, &WriteOptions { sync: *sync }).unwrap();
                // Synced, it makes every earlier write durable, as any synced write does.
                if *sync {
                    candidates = vec![model.clone()];
                }
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
                // Odd: unsynced pages scrambled (unordered writeback); even: a torn prefix.
                if torn % 2 == 1 {
                    fs.restart_scrambled(*torn as u64 + model.len() as u64 * 64);
                } else {
                    fs.restart(*torn);
                }
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
        run(siftdb::CompactionStyle::Level, &ops);
    }

    /// Universal compaction: power lost inside merges of several runs into one level.
    #[test]
    fn db_with_universal_compaction_matches_model_across_power_loss(
        ops in proptest::collection::vec(op(), 1..100)
    ) {
        run(siftdb::CompactionStyle::Universal, &ops);
    }

    /// FIFO under its (default, never reached) size limit: every table stays in L0, and power
    /// is lost among flushes only.
    #[test]
    fn db_with_fifo_compaction_matches_model_across_power_loss(
        ops in proptest::collection::vec(op(), 1..100)
    ) {
        run(siftdb::CompactionStyle::Fifo, &ops);
    }
}

/// A synced batch that writes nothing — empty, or holding only empty ranges — still makes the
/// unsynced writes before it durable.
#[test]
fn a_synced_empty_batch_makes_earlier_writes_durable() {
    for empty_range in [false, true] {
        let fs = FaultFs::new();
        let dir = Path::new("/db");
        let db = Db::open(dir, options(&fs)).unwrap();
        db.put(b"k", b"unsynced").unwrap();
        db.merge(b"m", b"operand").unwrap();
        let mut b = WriteBatch::new();
        if empty_range {
            b.delete_range(b"a", b"a");
        }
        assert!(b.is_empty());
        db.write_opt(b, &WriteOptions { sync: true }).unwrap();
        fs.crash();
        drop(db);
        fs.restart(0);
        let db = Db::open(dir, options(&fs)).expect("reopen after power loss");
        assert_eq!(
            contents(&db),
            Model::from([
                (b"k".to_vec(), b"unsynced".to_vec()),
                (b"m".to_vec(), b"operand".to_vec()),
            ]),
            "empty range: {empty_range}"
        );
    }
}
