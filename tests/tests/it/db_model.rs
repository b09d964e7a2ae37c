//! Model test: random operations against the database and a `BTreeMap`, with a tiny memtable so
//! flushes happen constantly, and reopens in between. Every read must agree with the model.
//!
//! The operations include range deletes and merge operands; the model runs twice, once with the
//! `Append` merge operator (values of any length) and once with `U64Add` (every value and
//! operand 8 bytes, so no merge fails). Snapshots must keep seeing the range deletes and merges
//! of their time.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use proptest::prelude::*;
use siftdb::backup::BackupEngine;
use siftdb::{
    merge, CompactionStyle, Db, Error, IngestOptions, Options, SstFileWriter, WriteBatch,
};

/// Which merge operator the database runs with (and how the model merges).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Variant {
    /// `merge::Append::new(b",")`: existing, then each operand, joined by ",".
    Append,
    /// `merge::U64Add`: 8-byte little-endian counters, wrapping add, missing = 0.
    U64Add,
}

/// One operation of a batch.
#[derive(Debug, Clone)]
enum Entry {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
    DeleteRange(Vec<u8>, Vec<u8>),
    Merge(Vec<u8>, Vec<u8>),
}

#[derive(Debug, Clone)]
enum Op {
    Put(Vec<u8>, Vec<u8>),
    /// Keys above every other, in order (a sequential load: its tables move down unchanged).
    Append(usize),
    Delete(Vec<u8>),
    /// `delete_range(a, b)`: removes `[a, b)`; `a == b` removes nothing, `a > b` is refused.
    DeleteRange(Vec<u8>, Vec<u8>),
    /// `merge(key, operand)`.
    Merge(Vec<u8>, Vec<u8>),
    /// A batch of puts, deletes, range deletes and merges, applied in order (all or nothing: a
    /// range with `start > end` refuses the whole batch).
    Batch(Vec<Entry>),
    /// The entries as one external file, ingested (`SstFileWriter`, `ingest_external_file`);
    /// with a range, replacing it (`IngestOptions::excise`: the file keeps what lies inside).
    Ingest(Vec<Entry>, Option<(Vec<u8>, Vec<u8>)>),
    /// `BackupEngine::create_new_backup` (keeping the newest three backups).
    Backup,
    /// Backup `i` (of those kept, oldest first) verified, restored into a fresh directory and
    /// opened: it holds what the model held when the backup was made.
    Restore(usize),
    Get(Vec<u8>),
    /// `get_pinned`, checked against the model; the handle is kept until the next `GetPinned`
    /// (across flushes and compactions that may drop its block from the cache and its table).
    GetPinned(Vec<u8>),
    /// `multi_get` of these keys (repeats allowed), checked against the model and single gets.
    MultiGet(Vec<Vec<u8>>),
    Iter,
    Seek(Vec<u8>),
    Prefix(Vec<u8>),
    Flush,
    /// `build_filter_index`: later lookups meet a filter index over every table.
    BuildFilterIndex,
    Reopen,
    Compact(Option<Vec<u8>>, Option<Vec<u8>>),
    Snapshot,
    CheckSnapshot(usize, Vec<u8>),
    DropSnapshot(usize),
    /// Full iteration backward.
    IterRev,
    /// `range` with these bounds (and `snapshot` = the index of a snapshot to read through),
    /// forward then backward.
    Range(Bound<Vec<u8>>, Bound<Vec<u8>>, Option<usize>),
    /// `seek_for_prev` then `next_back` to the start.
    SeekForPrev(Vec<u8>),
    /// A walk that mixes `next` (true) and `next_back` (false) over a range.
    Mixed(Bound<Vec<u8>>, Bound<Vec<u8>>, Vec<bool>),
    /// A raw iterator within optional `iterate_lower_bound` / `iterate_upper_bound`: a seek
    /// kind, then steps (next, prev, or another seek of the same iterator).
    Raw(Option<Vec<u8>>, Option<Vec<u8>>, RawStart, Vec<RawStep>),
    /// A prefix iterator walked backward.
    PrefixRev(Vec<u8>),
    /// Creates an iterator and keeps it (at most 2) for `DrainIter`, however the database
    /// changes meanwhile.
    HoldIter,
    /// Walks a held iterator to its end (forward, or backward when false): it must yield the
    /// state of its creation.
    DrainIter(usize, bool),
    /// A transaction (see [`Txn`]).
    Txn(Txn),
    /// `set_options` with one of [`LIVE_CHANGES`]: automatic compactions off and on, other
    /// memtable sizes, filters, codecs and level shapes for the tables written from then on.
    SetOptions(usize),
}

/// The changes `Op::SetOptions` makes. Turning automatic compactions off raises the L0 stop
/// trigger with it: writes would otherwise wait for compactions that never come.
const LIVE_CHANGES: [&[(&str, &str)]; 4] = [
    &[
        ("disable_auto_compactions", "true"),
        ("level0_stop_writes_trigger", "1000"),
        ("write_buffer_size", "8192"),
    ],
    &[
        ("disable_auto_compactions", "false"),
        ("level0_stop_writes_trigger", "8"),
        ("write_buffer_size", "2048"),
    ],
    &[
        ("filter_bits_per_key", "3"),
        ("compression", "none"),
        ("level0_file_num_compaction_trigger", "3"),
    ],
    &[
        ("filter_bits_per_key", "10"),
        ("compression_per_level", "lz4,zstd"),
        ("max_bytes_for_level_multiplier", "4"),
    ],
];

/// A transaction of the model test: its steps, a plain write by someone else after step
/// `outside.0` (a conflict for an optimistic transaction that wrote or read the key for
/// update), and whether it commits or rolls back.
#[derive(Debug, Clone)]
struct Txn {
    pessimistic: bool,
    steps: Vec<TxStep>,
    outside: Option<(usize, Vec<u8>, Vec<u8>)>,
    commit: bool,
}

#[derive(Debug, Clone)]
enum TxStep {
    Write(Entry),
    Get(Vec<u8>),
    GetForUpdate(Vec<u8>),
    Savepoint,
    RollbackToSavepoint,
    /// `range` forward and backward.
    Range(Bound<Vec<u8>>, Bound<Vec<u8>>),
    /// `prefix_iter` walked backward.
    PrefixRev(Vec<u8>),
    /// A flush of the database's memtable (the commit's validation then reads tables).
    Flush,
}

fn tx_step(variant: Variant) -> impl Strategy<Value = TxStep> {
    prop_oneof![
        3 => (key(), value(variant)).prop_map(|(k, v)| TxStep::Write(Entry::Put(k, v))),
        1 => key().prop_map(|k| TxStep::Write(Entry::Delete(k))),
        2 => (key(), operand(variant)).prop_map(|(k, o)| TxStep::Write(Entry::Merge(k, o))),
        2 => key().prop_map(TxStep::Get),
        2 => key().prop_map(TxStep::GetForUpdate),
        1 => Just(TxStep::Savepoint),
        1 => Just(TxStep::RollbackToSavepoint),
        1 => (bound(), bound()).prop_map(|(a, b)| TxStep::Range(a, b)),
        1 => proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b')], 0..3).prop_map(TxStep::PrefixRev),
        1 => Just(TxStep::Flush),
    ]
}

fn txn(variant: Variant) -> impl Strategy<Value = Txn> {
    (
        any::<bool>(),
        proptest::collection::vec(tx_step(variant), 0..12),
        proptest::option::weighted(0.5, (0usize..12, key(), value(variant))),
        proptest::bool::weighted(0.8),
    )
        .prop_map(|(pessimistic, steps, outside, commit)| Txn {
            pessimistic,
            steps,
            outside,
            commit,
        })
}

#[derive(Debug, Clone)]
enum RawStart {
    First,
    Last,
    Seek(Vec<u8>),
    SeekForPrev(Vec<u8>),
}

fn bound() -> impl Strategy<Value = Bound<Vec<u8>>> {
    prop_oneof![
        key().prop_map(Bound::Included),
        key().prop_map(Bound::Excluded),
        Just(Bound::Unbounded),
    ]
}

fn key() -> impl Strategy<Value = Vec<u8>> {
    // A small alphabet so keys collide, share prefixes, and get overwritten.
    proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(b'c')], 0..5)
}

fn value(variant: Variant) -> BoxedStrategy<Vec<u8>> {
    match variant {
        Variant::Append => proptest::collection::vec(any::<u8>(), 0..300).boxed(),
        Variant::U64Add => counter().boxed(),
    }
}

fn operand(variant: Variant) -> BoxedStrategy<Vec<u8>> {
    match variant {
        // The separator may appear inside an operand: the model does not care.
        Variant::Append => {
            proptest::collection::vec(prop_oneof![Just(b','), Just(b'x'), any::<u8>()], 0..24)
                .boxed()
        }
        Variant::U64Add => counter().boxed(),
    }
}

/// An 8-byte counter value or operand: small numbers, and huge ones that make the sum wrap.
fn counter() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![0u64..1000, any::<u64>()].prop_map(|n| n.to_le_bytes().to_vec())
}

/// A bound of a range delete: mostly a key of `key()`, sometimes one among or above the
/// appended keys (so ranges also reach the sequential tail that moved down the tree unchanged).
fn range_key() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        8 => key(),
        1 => Just(b"z".to_vec()),
        1 => (0u64..120).prop_map(appended_key),
        1 => Just(b"zz".to_vec()),
    ]
}

fn entry(variant: Variant) -> impl Strategy<Value = Entry> {
    prop_oneof![
        4 => (key(), value(variant)).prop_map(|(k, v)| Entry::Put(k, v)),
        2 => key().prop_map(Entry::Delete),
        // Mostly in order; now and then reversed (the whole batch is refused then).
        2 => (range_key(), range_key(), proptest::bool::weighted(0.1)).prop_map(|(a, b, rev)| {
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            if rev { Entry::DeleteRange(hi, lo) } else { Entry::DeleteRange(lo, hi) }
        }),
        4 => (key(), operand(variant)).prop_map(|(k, o)| Entry::Merge(k, o)),
    ]
}

fn op(variant: Variant) -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (key(), value(variant)).prop_map(|(k, v)| Op::Put(k, v)),
        1 => (10usize..40).prop_map(Op::Append),
        3 => key().prop_map(Op::Delete),
        2 => (range_key(), range_key()).prop_map(|(a, b)| Op::DeleteRange(a, b)),
        6 => (key(), operand(variant)).prop_map(|(k, o)| Op::Merge(k, o)),
        2 => proptest::collection::vec(entry(variant), 0..6).prop_map(Op::Batch),
        2 => (
            proptest::collection::vec(entry(variant), 0..12),
            proptest::option::weighted(0.3, (range_key(), range_key())),
        )
            .prop_map(|(e, x)| Op::Ingest(e, x)),
        1 => Just(Op::Backup),
        1 => (0usize..3).prop_map(Op::Restore),
        5 => key().prop_map(Op::Get),
        2 => key().prop_map(Op::GetPinned),
        2 => proptest::collection::vec(key(), 0..16).prop_map(Op::MultiGet),
        1 => Just(Op::Iter),
        1 => key().prop_map(Op::Seek),
        2 => proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b')], 0..3).prop_map(Op::Prefix),
        1 => Just(Op::Flush),
        1 => (0..LIVE_CHANGES.len()).prop_map(Op::SetOptions),
        1 => Just(Op::BuildFilterIndex),
        1 => Just(Op::Reopen),
        1 => (proptest::option::of(key()), proptest::option::of(key())).prop_map(|(a, b)| Op::Compact(a, b)),
        1 => Just(Op::Snapshot),
        2 => (0usize..4, key()).prop_map(|(i, k)| Op::CheckSnapshot(i, k)),
        1 => (0usize..4).prop_map(Op::DropSnapshot),
        1 => Just(Op::IterRev),
        2 => (bound(), bound(), proptest::option::weighted(0.3, 0usize..4)).prop_map(|(a, b, s)| Op::Range(a, b, s)),
        1 => key().prop_map(Op::SeekForPrev),
        1 => (bound(), bound(), proptest::collection::vec(any::<bool>(), 0..20)).prop_map(|(a, b, w)| Op::Mixed(a, b, w)),
        2 => (
            proptest::option::weighted(0.5, key()),
            proptest::option::weighted(0.5, key()),
            raw_start(),
            proptest::collection::vec(raw_step(), 0..30),
        )
            .prop_map(|(l, u, s, w)| Op::Raw(l, u, s, w)),
        1 => proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b')], 0..3).prop_map(Op::PrefixRev),
        1 => Just(Op::HoldIter),
        1 => (0usize..2, any::<bool>()).prop_map(|(i, f)| Op::DrainIter(i, f)),
        3 => txn(variant).prop_map(Op::Txn),
    ]
}

#[derive(Debug, Clone)]
enum RawStep {
    Next,
    Prev,
    Reseek(RawStart),
}

fn raw_step() -> impl Strategy<Value = RawStep> {
    prop_oneof![
        10 => Just(RawStep::Next),
        10 => Just(RawStep::Prev),
        2 => raw_start().prop_map(RawStep::Reseek),
    ]
}

/// Positions `it` as `start` says; returns where the model says it is (an index into `keys`,
/// `None` when not valid).
fn raw_seek(it: &mut siftdb::RawIterator, keys: &[&Vec<u8>], start: &RawStart) -> Option<usize> {
    match start {
        RawStart::First => {
            it.seek_to_first();
            (!keys.is_empty()).then_some(0)
        }
        RawStart::Last => {
            it.seek_to_last();
            keys.len().checked_sub(1)
        }
        RawStart::Seek(k) => {
            it.seek(k);
            let i = keys.partition_point(|x| *x < k);
            (i < keys.len()).then_some(i)
        }
        RawStart::SeekForPrev(k) => {
            it.seek_for_prev(k);
            keys.partition_point(|x| *x <= k).checked_sub(1)
        }
    }
}

fn raw_start() -> impl Strategy<Value = RawStart> {
    prop_oneof![
        Just(RawStart::First),
        Just(RawStart::Last),
        key().prop_map(RawStart::Seek),
        key().prop_map(RawStart::SeekForPrev),
    ]
}

/// The model's entries within the bounds, ascending.
fn model_range(
    model: &Model,
    lower: &Bound<Vec<u8>>,
    upper: &Bound<Vec<u8>>,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    model
        .iter()
        .filter(|(k, _)| {
            let above = match lower {
                Bound::Included(l) => *k >= l,
                Bound::Excluded(l) => *k > l,
                Bound::Unbounded => true,
            };
            let below = match upper {
                Bound::Included(u) => *k <= u,
                Bound::Excluded(u) => *k < u,
                Bound::Unbounded => true,
            };
            above && below
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Checks every new way to iterate against the model (`model` as seen by `db`, or by the
/// snapshot `snap` when given).
fn check_iteration(db: &Db, snapshots: &[(siftdb::Snapshot, Model)], model: &Model, op: &Op) {
    match op {
        Op::IterRev => {
            let got: Vec<_> = db.iter().rev().map(|r| r.unwrap()).collect();
            let want: Vec<_> = model
                .iter()
                .rev()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            assert_eq!(got, want, "reverse iteration");
        }
        Op::Range(lower, upper, snap) => {
            let (it, rev, seen) = match snap.and_then(|i| snapshots.get(i)) {
                Some((s, seen)) => (
                    s.range((lower.clone(), upper.clone())),
                    s.range((lower.clone(), upper.clone())),
                    seen,
                ),
                None => (
                    db.range((lower.clone(), upper.clone())),
                    db.range((lower.clone(), upper.clone())),
                    model,
                ),
            };
            let want = model_range(seen, lower, upper);
            let got: Vec<_> = it.map(|r| r.unwrap()).collect();
            assert_eq!(got, want, "range {lower:?}..{upper:?}");
            let mut back: Vec<_> = rev.rev().map(|r| r.unwrap()).collect();
            back.reverse();
            assert_eq!(back, want, "reverse range {lower:?}..{upper:?}");
        }
        Op::SeekForPrev(k) => {
            let mut it = db.iter();
            it.seek_for_prev(k);
            let got: Vec<_> = it.rev().map(|r| r.unwrap()).collect();
            let want: Vec<_> = model
                .range(..=k.clone())
                .rev()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            assert_eq!(got, want, "seek_for_prev {k:?}");
        }
        Op::Mixed(lower, upper, walk) => siftdb_tests::check_walk(
            db.range((lower.clone(), upper.clone())),
            model_range(model, lower, upper),
            walk,
            &format!("mixed walk {lower:?}..{upper:?}"),
        ),
        Op::Raw(lower, upper, start, walk) => {
            // Within the bounds the cursor behaves as over the model's keys in them.
            let keys: Vec<&Vec<u8>> = model
                .keys()
                .filter(|k| lower.as_ref().is_none_or(|l| *k >= l))
                .filter(|k| upper.as_ref().is_none_or(|u| *k < u))
                .collect();
            let opts = siftdb::ReadOptions {
                iterate_lower_bound: lower.clone(),
                iterate_upper_bound: upper.clone(),
                ..Default::default()
            };
            let mut it = db.raw_iter_opt(&opts);
            // The model's position: an index into `keys`, or None when not valid.
            let mut pos = raw_seek(&mut it, &keys, start);
            for (step, s) in walk.iter().enumerate() {
                assert_eq!(it.valid(), pos.is_some(), "raw {start:?} step {step}");
                if let Some(i) = pos {
                    assert_eq!(it.key(), keys[i].as_slice(), "raw {start:?} step {step}");
                    assert_eq!(it.value(), model[keys[i]].as_slice());
                }
                match (s, pos) {
                    (RawStep::Reseek(to), _) => pos = raw_seek(&mut it, &keys, to),
                    (RawStep::Next, Some(i)) => {
                        it.next();
                        pos = (i + 1 < keys.len()).then_some(i + 1);
                    }
                    (RawStep::Prev, Some(i)) => {
                        it.prev();
                        pos = i.checked_sub(1);
                    }
                    // Stepping an invalid iterator is not defined: wait for a re-seek.
                    (RawStep::Next | RawStep::Prev, None) => {}
                }
            }
            assert_eq!(it.valid(), pos.is_some(), "raw {start:?} after {walk:?}");
            if let Some(i) = pos {
                assert_eq!(it.key(), keys[i].as_slice(), "raw {start:?} after {walk:?}");
            }
            it.status().unwrap();
        }
        Op::PrefixRev(p) => {
            let got: Vec<_> = db.prefix_iter(p).rev().map(|r| r.unwrap()).collect();
            let want: Vec<_> = model
                .iter()
                .rev()
                .filter(|(k, _)| k.starts_with(p))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            assert_eq!(got, want, "reverse prefix {p:?}");
        }
        _ => unreachable!("not an iteration op: {op:?}"),
    }
}

/// The model: key → value.
type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn options(variant: Variant, style: CompactionStyle) -> Options {
    let mut o = Options::default().with_fixed_prefix(2);
    // Leveled, universal (tiny runs: merges of two to the whole tree at every few flushes) or
    // FIFO without a size limit (every table stays in L0: lookups and scans over many
    // overlapping tables; FIFO's drops have a model of their own in `compaction_fifo.rs`).
    o.compaction_style = style;
    o.compaction_options_universal
        .max_size_amplification_percent = 150;
    o.merge_operator = Some(match variant {
        Variant::Append => Arc::new(merge::Append::new(b",")) as Arc<dyn siftdb::MergeOperator>,
        Variant::U64Add => Arc::new(merge::U64Add),
    });
    o.write_buffer_size = 2048;
    o.max_write_buffer_number = 3;
    o.block_size = 256;
    o.block_cache_capacity = 1 << 20;
    // Tiny levels so compactions run constantly and the tree grows several levels deep.
    o.level0_file_num_compaction_trigger = 2;
    o.level0_stop_writes_trigger = 8;
    o.target_file_size_base = 2048;
    o.max_bytes_for_level_base = 4096;
    o.max_bytes_for_level_multiplier = 3.0;
    o.compaction_options_fifo.max_table_files_size = u64::MAX;
    if style == CompactionStyle::Universal {
        // Four runs before a merge: the tree holds L0 tables and runs on several levels.
        o.level0_file_num_compaction_trigger = 4;
    }
    // Compactions side by side, as a service with spare cores would run them, and each split
    // into up to three key ranges merged on threads of their own (any job of three target
    // tables or more).
    o.max_background_compactions = 3;
    o.max_subcompactions = 3;
    // Tables with more than a few blocks get partitioned indexes and filters (tiny partitions),
    // and every level compresses: the model covers both table shapes and compressed blocks.
    o.partition_above = Some(256);
    o.metadata_block_size = 64;
    o.compression_per_level = vec![siftdb::Compression::Lz4, siftdb::Compression::None];
    // Room for four open table files, and a manifest started afresh at every few edits: reads
    // reopen evicted tables (through maps in the `Append` variant), compactions delete tables
    // old iterators still read, and reopens replay rolled-over manifests.
    o.max_open_files = 4;
    o.max_manifest_file_size = 4 << 10;
    // The false-positive memo: tiny for one variant (one entry per shard: constant eviction),
    // roomy with loose filters (many false positives to remember) for the other. A memo entry
    // that answered for a key a table holds would show here as a missing value.
    // Range filters on every table: a loose one (many false positives, 3 bits/key) and a
    // tight one; a bounded scan that skipped a table holding a key would show here.
    // Adaptive filter allocation in one variant: a filter sized too small for its keys would
    // show here as a missing value.
    // Leveled trees keep values in blob files (issue 37): with `Append`, values of 50 bytes
    // and more (most of them; shorter ones stay inline), with garbage collection relocating
    // the older half of the blob files a tenth garbage or more, and forced at a third of
    // garbage; with `U64Add`, every value (merges then stack on bases read from blob files).
    // Tiny blob files, so a flush writes several.
    if style == CompactionStyle::Level {
        o.enable_blob_files = true;
        o.blob_file_size = 1024;
        match variant {
            Variant::Append => {
                o.min_blob_size = 50;
                o.enable_blob_garbage_collection = true;
                o.blob_garbage_collection_age_cutoff = 0.5;
                o.blob_garbage_collection_min_garbage_ratio = 0.1;
                o.blob_garbage_collection_force_threshold = 0.3;
                o.blob_compression_type = siftdb::Compression::Lz4;
            }
            Variant::U64Add => o.min_blob_size = 0,
        }
    }
    match variant {
        Variant::Append => {
            o.false_positive_memo_bytes = 16 * 100;
            o.range_filter_bits_per_key = 3.0;
            // Tables read through memory maps (compactions around them, with `pread`), and
            // compactions picking files round robin (the other variant: the default order).
            o.read_mode = siftdb::ReadMode::Mmap;
            o.compaction_pri = siftdb::CompactionPri::RoundRobin;
            // A memtable bloom over the 2-byte prefixes (capped far below its first filter:
            // one filter taking every key), and no filter on the bottom level.
            o.memtable_prefix_bloom_size_ratio = 0.25;
            o.optimize_filters_for_hits = true;
        }
        Variant::U64Add => {
            o.false_positive_memo_bytes = 64 << 10;
            o.filter_bits_per_key = 3.0;
            // Filters sized per table from the lookups the model makes.
            o.filter_allocation = siftdb::FilterAllocation::Adaptive;
            o.range_filter_bits_per_key = 14.0;
            // A memtable bloom over prefixes and whole keys: a lookup or prefix scan it
            // wrongly ruled out would show here as a missing value.
            o.memtable_prefix_bloom_size_ratio = 0.1;
            o.memtable_whole_key_filtering = true;
        }
    }
    o
}

/// The `n`th key of `Op::Append`: above every key of `key()`, in order.
fn appended_key(n: u64) -> Vec<u8> {
    let mut k = b"z".to_vec();
    k.extend_from_slice(&n.to_be_bytes());
    k
}

/// The value of `Op::Append`'s keys.
fn filler(variant: Variant) -> Vec<u8> {
    match variant {
        Variant::Append => vec![b'z'; 100],
        Variant::U64Add => 7u64.to_le_bytes().to_vec(),
    }
}

/// What the merge operator makes of `operand` on `existing`.
fn merged(variant: Variant, existing: Option<&Vec<u8>>, operand: &[u8]) -> Vec<u8> {
    match variant {
        Variant::Append => match existing {
            Some(v) => [v.as_slice(), b",", operand].concat(),
            None => operand.to_vec(),
        },
        Variant::U64Add => {
            let n = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8-byte counter"));
            let base = existing.map_or(0, |v| n(v));
            base.wrapping_add(n(operand)).to_le_bytes().to_vec()
        }
    }
}

/// Removes `[start, end)` from the model (nothing when `start >= end`).
fn model_delete_range(model: &mut Model, start: &[u8], end: &[u8]) {
    if start >= end {
        return;
    }
    let doomed: Vec<Vec<u8>> = model
        .range::<[u8], _>((Bound::Included(start), Bound::Excluded(end)))
        .map(|(k, _)| k.clone())
        .collect();
    for k in doomed {
        model.remove(&k);
    }
}

/// Applies a batch to the model; `false` (and the model untouched) when the database must refuse
/// it (a range whose start is after its end).
fn model_batch(variant: Variant, model: &mut Model, entries: &[Entry]) -> bool {
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
            Entry::DeleteRange(a, b) => model_delete_range(model, a, b),
            Entry::Merge(k, o) => {
                let v = merged(variant, model.get(k), o);
                model.insert(k.clone(), v);
            }
        }
    }
    true
}

/// Ingests `entries` as one external file: its range deletions and, per key, the last point
/// entry (a file holds a key once), all at one sequence number. The model applies the range
/// deletions first (at one sequence they hide only older data, not the file's own entries),
/// then the points.
/// An `Op::Ingest`: where its file goes, its entries, and the range it replaces.
struct ExternalFile<'a> {
    path: &'a std::path::Path,
    entries: &'a [Entry],
    excise: Option<&'a (Vec<u8>, Vec<u8>)>,
}

/// The file's entries: per key the last point entry and the range deletions, all within the
/// excise range if there is one (range deletions clipped to it).
fn file_entries(file: &ExternalFile<'_>) -> (BTreeMap<Vec<u8>, Entry>, Vec<Entry>) {
    let inside = |k: &[u8]| {
        file.excise
            .is_none_or(|(a, b)| a.as_slice() <= k && k < b.as_slice())
    };
    let mut points: BTreeMap<Vec<u8>, Entry> = BTreeMap::new();
    let mut ranges = Vec::new();
    for e in file.entries {
        match e {
            Entry::DeleteRange(a, b) => {
                let (mut a, mut b) = (a.clone(), b.clone());
                if let Some((lo, hi)) = file.excise {
                    a = a.max(lo.clone());
                    b = b.min(hi.clone());
                }
                if a < b {
                    ranges.push(Entry::DeleteRange(a, b));
                }
            }
            Entry::Put(k, _) | Entry::Delete(k) | Entry::Merge(k, _) if inside(k) => {
                points.insert(k.clone(), e.clone());
            }
            _ => {}
        }
    }
    (points, ranges)
}

fn ingest(
    variant: Variant,
    style: CompactionStyle,
    db: &Db,
    model: &mut Model,
    file: ExternalFile<'_>,
) {
    let (points, ranges) = file_entries(&file);
    let path = file.path;
    if let Some((a, b)) = file.excise {
        return ingest_excise(variant, style, db, model, &file, (a, b), (points, ranges));
    }
    let mut w = SstFileWriter::create(path, &options(variant, style)).unwrap();
    for e in ranges.iter().chain(points.values()) {
        match e {
            Entry::Put(k, v) => w.put(k, v),
            Entry::Delete(k) => w.delete(k),
            Entry::Merge(k, o) => w.merge(k, o),
            Entry::DeleteRange(a, b) => w.delete_range(a, b),
        }
        .unwrap();
    }
    if points.is_empty() && ranges.is_empty() {
        assert!(matches!(w.finish(), Err(Error::InvalidArgument(_))));
        return;
    }
    w.finish().unwrap();
    db.ingest_external_file(&[path], &IngestOptions::default())
        .unwrap();
    let ordered: Vec<Entry> = ranges.into_iter().chain(points.into_values()).collect();
    assert!(model_batch(variant, model, &ordered));
}

/// `ingest` of a file replacing `[a, b)`: refused for an empty range; else the model loses
/// the range and takes the file (empty: an atomic range delete).
fn ingest_excise(
    variant: Variant,
    style: CompactionStyle,
    db: &Db,
    model: &mut Model,
    file: &ExternalFile<'_>,
    (a, b): (&Vec<u8>, &Vec<u8>),
    (points, ranges): (BTreeMap<Vec<u8>, Entry>, Vec<Entry>),
) {
    let opts = IngestOptions {
        excise: Some(a.clone()..b.clone()),
        ..IngestOptions::default()
    };
    let paths: Vec<&std::path::Path> = if points.is_empty() && ranges.is_empty() {
        Vec::new()
    } else {
        let mut w = SstFileWriter::create(file.path, &options(variant, style)).unwrap();
        for e in ranges.iter().chain(points.values()) {
            match e {
                Entry::Put(k, v) => w.put(k, v),
                Entry::Delete(k) => w.delete(k),
                Entry::Merge(k, o) => w.merge(k, o),
                Entry::DeleteRange(s, e) => w.delete_range(s, e),
            }
            .unwrap();
        }
        w.finish().unwrap();
        vec![file.path]
    };
    let got = db.ingest_external_file(&paths, &opts);
    if a >= b {
        assert!(
            matches!(got, Err(Error::InvalidArgument(_))),
            "excise {a:?}..{b:?}: {got:?}"
        );
        return;
    }
    got.unwrap();
    model_delete_range(model, a, b);
    let ordered: Vec<Entry> = ranges.into_iter().chain(points.into_values()).collect();
    assert!(model_batch(variant, model, &ordered));
}

/// The model's backups: a backup directory, and per backup kept the model at its point.
struct Backups {
    dir: tempfile::TempDir,
    engine: BackupEngine,
    models: Vec<(u32, Model)>,
}

impl Backups {
    fn new() -> Backups {
        let dir = siftdb_tests::temp_dir();
        let engine = BackupEngine::open(dir.path().join("backups")).unwrap();
        Backups {
            dir,
            engine,
            models: Vec::new(),
        }
    }

    fn create(&mut self, db: &Db, model: &Model) {
        let id = self.engine.create_new_backup(db).unwrap();
        self.models.push((id, model.clone()));
        self.engine.purge_old_backups(3).unwrap();
        if self.models.len() > 3 {
            self.models.remove(0);
        }
        let kept: Vec<u32> = self
            .engine
            .get_backup_info()
            .iter()
            .map(|b| b.backup_id)
            .collect();
        assert_eq!(
            kept,
            self.models.iter().map(|(id, _)| *id).collect::<Vec<_>>()
        );
    }

    fn restore(&mut self, i: usize, variant: Variant, style: CompactionStyle) {
        let Some((id, model)) = self.models.get(i) else {
            return;
        };
        self.engine.verify_backup(*id).unwrap();
        let target = self.dir.path().join(format!("restored-{id}-{i}"));
        self.engine.restore_db_from_backup(*id, &target).unwrap();
        let restored = Db::open(&target, options(variant, style)).unwrap();
        let got: Vec<_> = restored.iter().map(|r| r.unwrap()).collect();
        let want: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        assert_eq!(got, want, "backup {id} restored");
        drop(restored);
        std::fs::remove_dir_all(&target).unwrap();
    }
}

fn run(variant: Variant, style: CompactionStyle, ops: &[Op]) {
    let dir = siftdb_tests::temp_dir();
    let external = siftdb_tests::temp_dir();
    let mut ingested = 0usize;
    let mut backups = Backups::new();
    let mut db = Db::open(dir.path(), options(variant, style)).unwrap();
    let mut model: Model = BTreeMap::new();
    let mut snapshots: Vec<(siftdb::Snapshot, Model)> = Vec::new();
    let mut pinned: Option<(siftdb::PinnedValue, Vec<u8>)> = None;
    let mut held: Vec<(siftdb::DbIterator, Model)> = Vec::new();
    let mut appended = 0u64;
    for op in ops {
        match op {
            Op::Append(n) => {
                for _ in 0..*n {
                    let k = appended_key(appended);
                    appended += 1;
                    db.put(&k, filler(variant)).unwrap();
                    model.insert(k, filler(variant));
                }
            }
            Op::Put(k, v) => {
                db.put(k, v).unwrap();
                model.insert(k.clone(), v.clone());
            }
            Op::Delete(k) => {
                db.delete(k).unwrap();
                model.remove(k);
            }
            Op::DeleteRange(a, b) => {
                let got = db.delete_range(a, b);
                if a > b {
                    assert!(
                        matches!(got, Err(Error::InvalidArgument(_))),
                        "delete_range({a:?}, {b:?}) with start > end: {got:?}"
                    );
                } else {
                    got.unwrap();
                    model_delete_range(&mut model, a, b);
                }
            }
            Op::Merge(k, o) => {
                db.merge(k, o).unwrap();
                let v = merged(variant, model.get(k), o);
                model.insert(k.clone(), v);
            }
            Op::Batch(entries) => {
                let mut b = WriteBatch::new();
                for e in entries {
                    match e {
                        Entry::Put(k, v) => b.put(k, v),
                        Entry::Delete(k) => b.delete(k),
                        Entry::DeleteRange(s, e) => b.delete_range(s, e),
                        Entry::Merge(k, o) => b.merge(k, o),
                    };
                }
                let got = db.write(b);
                if model_batch(variant, &mut model, entries) {
                    got.unwrap();
                } else {
                    assert!(
                        matches!(got, Err(Error::InvalidArgument(_))),
                        "a batch with a reversed range: {got:?}"
                    );
                }
            }
            Op::Ingest(entries, excise) => {
                ingested += 1;
                let path = external.path().join(format!("ingest-{ingested}.sst"));
                let file = ExternalFile {
                    path: &path,
                    entries,
                    excise: excise.as_ref(),
                };
                ingest(variant, style, &db, &mut model, file);
            }
            Op::Backup => backups.create(&db, &model),
            Op::Restore(i) => backups.restore(*i, variant, style),
            Op::Get(k) => assert_eq!(db.get(k).unwrap(), model.get(k).cloned(), "get {k:?}"),
            Op::GetPinned(k) => {
                if let Some((held, want)) = &pinned {
                    assert_eq!(held.to_vec(), *want, "a pinned value kept its bytes");
                }
                let got = db.get_pinned(k).unwrap();
                assert_eq!(
                    got.as_deref(),
                    model.get(k).map(Vec::as_slice),
                    "get_pinned {k:?}"
                );
                pinned = got.map(|v| (v, model.get(k).cloned().unwrap_or_default()));
            }
            Op::MultiGet(keys) => {
                let got: Vec<Option<Vec<u8>>> =
                    db.multi_get(keys).into_iter().map(|r| r.unwrap()).collect();
                let want: Vec<Option<Vec<u8>>> =
                    keys.iter().map(|k| model.get(k).cloned()).collect();
                assert_eq!(got, want, "multi_get {keys:?}");
            }
            Op::Iter => {
                let got: Vec<_> = db.iter().map(|r| r.unwrap()).collect();
                let want: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                assert_eq!(got, want, "full iteration");
            }
            Op::Seek(k) => {
                let mut it = db.iter();
                it.seek(k);
                let got: Vec<_> = it.map(|r| r.unwrap()).collect();
                let want: Vec<_> = model
                    .range(k.clone()..)
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                if got != want {
                    let g: Vec<_> = got.iter().map(|(k, _)| k.clone()).collect();
                    let w: Vec<_> = want.iter().map(|(k, _)| k.clone()).collect();
                    panic!(
                        "seek {k:?}: got keys {g:?}\nwant {w:?}\n{}",
                        db.property("siftdb.levels").unwrap_or_default()
                    );
                }
            }
            Op::Prefix(p) => {
                let got: Vec<_> = db.prefix_iter(p).map(|r| r.unwrap()).collect();
                let want: Vec<_> = model
                    .iter()
                    .filter(|(k, _)| k.starts_with(p))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                assert_eq!(got, want, "prefix {p:?}");
            }
            Op::Flush => db.flush().unwrap(),
            Op::SetOptions(i) => db.set_options(LIVE_CHANGES[*i]).unwrap(),
            Op::BuildFilterIndex => {
                db.build_filter_index().unwrap();
            }
            Op::Compact(a, b) => db.compact_range(a.as_deref(), b.as_deref()).unwrap(),
            Op::Snapshot => {
                if snapshots.len() < 4 {
                    snapshots.push((db.snapshot(), model.clone()));
                }
            }
            Op::CheckSnapshot(i, k) => {
                if let Some((snap, seen)) = snapshots.get(*i) {
                    assert_eq!(
                        snap.get(k).unwrap(),
                        seen.get(k).cloned(),
                        "snapshot {i} get {k:?}"
                    );
                    assert_eq!(
                        snap.get_pinned(k).unwrap().as_deref(),
                        seen.get(k).map(Vec::as_slice),
                        "snapshot {i} get_pinned {k:?}"
                    );
                    let got: Vec<_> = snap.iter().map(|r| r.unwrap()).collect();
                    let want: Vec<_> = seen.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                    assert_eq!(got, want, "snapshot {i} iteration");
                }
            }
            Op::DropSnapshot(i) => {
                if *i < snapshots.len() {
                    snapshots.remove(*i);
                }
            }
            Op::HoldIter => {
                if held.len() < 2 {
                    held.push((db.iter(), model.clone()));
                }
            }
            Op::DrainIter(i, forward) => {
                if *i < held.len() {
                    let (it, seen) = held.remove(*i);
                    let want: Vec<_> = seen.into_iter().collect();
                    let got: Vec<_> = if *forward {
                        it.map(|r| r.unwrap()).collect()
                    } else {
                        let mut back: Vec<_> = it.rev().map(|r| r.unwrap()).collect();
                        back.reverse();
                        back
                    };
                    assert_eq!(got, want, "held iterator {i} (forward: {forward})");
                }
            }
            Op::Reopen => {
                snapshots.clear();
                held.clear();
                drop(db);
                db = Db::open(dir.path(), options(variant, style)).unwrap();
            }
            Op::Txn(t) => run_txn(variant, &db, &mut model, t),
            Op::IterRev
            | Op::Range(..)
            | Op::SeekForPrev(_)
            | Op::Mixed(..)
            | Op::Raw(..)
            | Op::PrefixRev(_) => check_iteration(&db, &snapshots, &model, op),
        }
    }
    // Final check after a full compaction and one more reopen.
    snapshots.clear();
    held.clear();
    db.compact_range(None, None).unwrap();
    let all: Vec<_> = db.iter().map(|r| r.unwrap()).collect();
    assert_eq!(
        all,
        model
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect::<Vec<_>>()
    );
    drop(db);
    let db = Db::open(dir.path(), options(variant, style)).unwrap();
    let got: Vec<_> = db.iter().map(|r| r.unwrap()).collect();
    let want: Vec<_> = model.into_iter().collect();
    if got != want {
        let g: std::collections::BTreeMap<_, _> = got.iter().cloned().collect();
        let w: std::collections::BTreeMap<_, _> = want.iter().cloned().collect();
        let mut diffs = Vec::new();
        for k in g.keys().chain(w.keys()) {
            if g.get(k) != w.get(k) {
                diffs.push(format!(
                    "{k:?}: got {:?} want {:?}",
                    g.get(k).map(|v| v.len()),
                    w.get(k).map(|v| v.len())
                ));
            }
        }
        panic!(
            "after final reopen: {diffs:?}\n{}",
            db.property("siftdb.levels").unwrap_or_default()
        );
    }
}

/// The model's side of a transaction: its writes in order, the keys it read for update, and
/// its savepoints (lengths of the two then).
#[derive(Default)]
struct TxModel {
    writes: Vec<Entry>,
    for_update: Vec<Vec<u8>>,
    savepoints: Vec<(usize, usize)>,
}

impl TxModel {
    /// What the transaction sees: `base` with its writes applied.
    fn view(&self, variant: Variant, base: &Model) -> Model {
        let mut view = base.clone();
        assert!(model_batch(variant, &mut view, &self.writes));
        view
    }

    /// Whether a write of `key` by someone else after the snapshot fails the commit.
    fn depends_on(&self, key: &[u8]) -> bool {
        self.for_update.iter().any(|k| k == key)
            || self.writes.iter().any(|e| match e {
                Entry::Put(k, _) | Entry::Delete(k) | Entry::Merge(k, _) => k == key,
                Entry::DeleteRange(a, b) => a.as_slice() <= key && key < b.as_slice(),
            })
    }
}

/// Runs transaction `t` against `db` and the model: every read must see the transaction's
/// writes over its snapshot (optimistic) or over the newest state (pessimistic, without a
/// snapshot); the commit applies all of them or, on a conflict, none.
fn run_txn(variant: Variant, db: &Db, model: &mut Model, t: &Txn) {
    let opts = siftdb::TransactionOptions {
        mode: if t.pessimistic {
            siftdb::TransactionMode::Pessimistic
        } else {
            siftdb::TransactionMode::Optimistic
        },
        ..Default::default()
    };
    let mut txn = db.transaction_opt(&opts);
    let at_begin = model.clone();
    let mut tx = TxModel::default();
    let mut outside_key = None;
    for (i, step) in t.steps.iter().enumerate() {
        // What the transaction reads under: its snapshot, or the newest state.
        let base = if t.pessimistic { &*model } else { &at_begin };
        let view = tx.view(variant, base);
        match step {
            TxStep::Write(e) => {
                match e {
                    Entry::Put(k, v) => txn.put(k, v),
                    Entry::Delete(k) => txn.delete(k),
                    Entry::Merge(k, o) => txn.merge(k, o),
                    Entry::DeleteRange(..) => unreachable!("transactions have no range deletes"),
                }
                .unwrap();
                tx.writes.push(e.clone());
            }
            TxStep::Get(k) => {
                assert_eq!(txn.get(k).unwrap(), view.get(k).cloned(), "txn get {k:?}")
            }
            TxStep::GetForUpdate(k) => {
                let got = txn.get_for_update(k).unwrap();
                assert_eq!(got, view.get(k).cloned(), "txn get_for_update {k:?}");
                tx.for_update.push(k.clone());
            }
            TxStep::Savepoint => {
                txn.set_savepoint().unwrap();
                tx.savepoints.push((tx.writes.len(), tx.for_update.len()));
            }
            TxStep::RollbackToSavepoint => {
                let got = txn.rollback_to_savepoint();
                match tx.savepoints.pop() {
                    Some((w, f)) => {
                        got.unwrap();
                        tx.writes.truncate(w);
                        tx.for_update.truncate(f);
                    }
                    None => assert!(matches!(got, Err(Error::InvalidArgument(_))), "{got:?}"),
                }
            }
            TxStep::Range(lower, upper) => {
                let want = model_range(&view, lower, upper);
                let got: Vec<_> = txn
                    .range((lower.clone(), upper.clone()))
                    .map(|r| r.unwrap())
                    .collect();
                assert_eq!(got, want, "txn range {lower:?}..{upper:?}");
                let mut back: Vec<_> = txn
                    .range((lower.clone(), upper.clone()))
                    .rev()
                    .map(|r| r.unwrap())
                    .collect();
                back.reverse();
                assert_eq!(back, want, "txn reverse range {lower:?}..{upper:?}");
            }
            TxStep::PrefixRev(p) => {
                let got: Vec<_> = txn.prefix_iter(p).rev().map(|r| r.unwrap()).collect();
                let want: Vec<_> = view
                    .iter()
                    .rev()
                    .filter(|(k, _)| k.starts_with(p))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                assert_eq!(got, want, "txn reverse prefix {p:?}");
            }
            TxStep::Flush => db.flush().unwrap(),
        }
        if let Some((at, k, v)) = &t.outside
            && *at == i
        {
            db.put(k, v).unwrap();
            model.insert(k.clone(), v.clone());
            outside_key = Some(k.clone());
        }
    }
    if !t.commit {
        txn.rollback().unwrap();
        return;
    }
    let conflict = !t.pessimistic && outside_key.is_some_and(|k| tx.depends_on(&k));
    let got = txn.commit();
    if conflict {
        assert!(
            matches!(got, Err(Error::Conflict)),
            "expected a conflict: {got:?}"
        );
    } else {
        got.unwrap();
        assert!(model_batch(variant, model, &tx.writes));
    }
}

/// Cases of each of the two variants.
fn cases() -> u32 {
    siftdb_tests::env_count("SIFTDB_MODEL_CASES", 512) as u32
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn db_with_append_merges_and_range_deletes_matches_btreemap_model(
        ops in proptest::collection::vec(op(Variant::Append), 1..120)
    ) {
        run(Variant::Append, CompactionStyle::Level, &ops);
    }

    #[test]
    fn db_with_u64add_merges_and_range_deletes_matches_btreemap_model(
        ops in proptest::collection::vec(op(Variant::U64Add), 1..120)
    ) {
        run(Variant::U64Add, CompactionStyle::Level, &ops);
    }

    #[test]
    fn db_with_universal_compaction_matches_btreemap_model(
        ops in proptest::collection::vec(op(Variant::Append), 1..120)
    ) {
        run(Variant::Append, CompactionStyle::Universal, &ops);
    }

    #[test]
    fn db_with_fifo_compaction_under_its_limit_matches_btreemap_model(
        ops in proptest::collection::vec(op(Variant::U64Add), 1..120)
    ) {
        run(Variant::U64Add, CompactionStyle::Fifo, &ops);
    }
}
