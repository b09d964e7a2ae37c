//! Tables read at a global sequence number (RocksDB's global seqno of an ingested file): a table
//! written with every entry at sequence 0 and read at 100 must answer exactly as its *twin*, the
//! same entries written at sequence 100 — iteration, seeks both ways, point lookups and range
//! tombstones — whether its index and filter are partitioned or not, pinned or not.

use std::sync::Arc;

use crate::common::*;
use siftdb_sstable::{
    FragmentedRangeTombstones, GetTrace, InternalKey, ParsedKey, RangeTombstone, ReadMode,
    SstError, Table, TableBuildOptions, TableBuilder, TableGet, TableIter, TableReadOptions,
    ValueKind, MAX_SEQUENCE,
};

/// The global seqno the tests read at.
const G: u64 = 100;

/// Entries of the tables.
const KEYS: usize = 300;

/// Every kind a seek target may carry.
const KINDS: [ValueKind; 6] = [
    ValueKind::Delete,
    ValueKind::Put,
    ValueKind::ExpiringPut,
    ValueKind::Merge,
    ValueKind::RangeDelete,
    ValueKind::BlobIndex,
];

fn user_key(i: usize) -> Vec<u8> {
    format!("key-{i:04}").into_bytes()
}

/// Entry `i`: a put, delete, merge operand, expiring put or blob index, with a value.
fn entry(i: usize) -> (ValueKind, Vec<u8>) {
    let value = format!("value-{i}-{}", "x".repeat(i % 23)).into_bytes();
    match i % 6 {
        0 | 5 => (ValueKind::Put, value),
        1 => (ValueKind::Delete, Vec::new()),
        2 => (ValueKind::Merge, value),
        3 => {
            let mut expiring = 1_900_000_000_000u64.to_le_bytes().to_vec();
            expiring.extend_from_slice(&value);
            (ValueKind::ExpiringPut, expiring)
        }
        _ => (ValueKind::BlobIndex, value),
    }
}

fn tombstones(sequence: u64) -> FragmentedRangeTombstones {
    FragmentedRangeTombstones::new([
        RangeTombstone::new(user_key(40), user_key(55), sequence),
        RangeTombstone::new(user_key(200), b"key-0210a".to_vec(), sequence),
    ])
}

/// How the tables of a case are built and opened.
#[derive(Debug, Clone, Copy)]
struct Case {
    partitioned: bool,
    pinned: bool,
}

const CASES: [Case; 3] = [
    Case {
        partitioned: false,
        pinned: false,
    },
    Case {
        partitioned: true,
        pinned: false,
    },
    Case {
        partitioned: true,
        pinned: true,
    },
];

/// The table image: every entry (and the range tombstones) at `sequence`; small blocks, so
/// many data blocks (and, partitioned, several index and filter partitions).
fn build(sequence: u64, partitioned: bool) -> Vec<u8> {
    let options = TableBuildOptions {
        block_size: 256,
        partition_above: partitioned.then_some(64),
        metadata_block_size: 128,
        ..TableBuildOptions::default()
    };
    let mut bytes = Vec::new();
    let mut b = TableBuilder::new(&mut bytes, options);
    b.set_range_tombstones(tombstones(sequence));
    for i in 0..KEYS {
        let (kind, value) = entry(i);
        let key = InternalKey::new(&user_key(i), sequence, kind);
        b.add(key.encoded(), &value).unwrap();
    }
    b.finish().unwrap();
    bytes
}

fn open(
    bytes: &[u8],
    case: Case,
    global_seqno: Option<u64>,
) -> (tempfile::NamedTempFile, siftdb_sstable::Result<Table>) {
    let read = TableReadOptions {
        pin_filter_and_index: case.pinned,
        global_seqno,
        ..TableReadOptions::default()
    };
    open_bytes(bytes, cache(8 << 20), read, ReadMode::Mmap)
}

/// The ingested table (sequence 0, read at `G`) and its twin (written at `G`), with the
/// temporary files that hold them.
struct Pair {
    _files: [tempfile::NamedTempFile; 2],
    ingested: Arc<Table>,
    twin: Arc<Table>,
}

fn pair(case: Case) -> Pair {
    let (f1, ingested) = open(&build(0, case.partitioned), case, Some(G));
    let (f2, twin) = open(&build(G, case.partitioned), case, None);
    let (ingested, twin) = (Arc::new(ingested.unwrap()), Arc::new(twin.unwrap()));
    assert_eq!(ingested.is_partitioned(), case.partitioned);
    assert_eq!(twin.is_partitioned(), case.partitioned);
    assert!(ingested.properties().data_blocks > 8);
    Pair {
        _files: [f1, f2],
        ingested,
        twin,
    }
}

/// Where an iterator is: its key and value, `None` when invalid.
fn at(it: &TableIter) -> Option<(Vec<u8>, Vec<u8>)> {
    assert!(it.status().is_none(), "{:?}", it.status());
    it.valid().then(|| (it.key().to_vec(), it.value().to_vec()))
}

fn all_forward(it: &mut TableIter) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    it.seek_to_first();
    while let Some(e) = at(it) {
        out.push(e);
        it.next();
    }
    out
}

fn all_backward(it: &mut TableIter) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    it.seek_to_last();
    while let Some(e) = at(it) {
        out.push(e);
        it.prev();
    }
    out
}

#[test]
fn global_seqno_iteration_yields_every_key_at_it() {
    for case in CASES {
        let p = pair(case);
        let forward = all_forward(&mut p.ingested.iter());
        assert_eq!(forward.len(), KEYS, "{case:?}");
        for (i, (key, value)) in forward.iter().enumerate() {
            let parsed = ParsedKey::parse(key).unwrap();
            let (kind, want) = entry(i);
            assert_eq!(parsed.user_key, user_key(i).as_slice());
            assert_eq!((parsed.sequence, parsed.kind), (G, kind), "{case:?} #{i}");
            assert_eq!(value, &want);
        }
        assert_eq!(forward, all_forward(&mut p.twin.iter()), "{case:?}");
        let mut backward = all_backward(&mut p.ingested.iter());
        assert_eq!(backward, all_backward(&mut p.twin.iter()), "{case:?}");
        backward.reverse();
        assert_eq!(backward, forward, "{case:?}");
    }
}

/// User keys to seek to: every stored key, the keys between and around them, and keys before
/// and after the table.
fn probe_user_keys() -> Vec<Vec<u8>> {
    let mut keys = vec![Vec::new(), b"a".to_vec(), b"key-".to_vec(), b"zzz".to_vec()];
    for i in (0..=KEYS).step_by(7).chain([1, 2, KEYS - 1]) {
        let k = user_key(i);
        let mut successor = k.clone();
        successor.push(0);
        let mut between = k.clone();
        between.push(b'5');
        keys.extend([k, successor, between]);
    }
    keys
}

/// Seeks both tables to `target` with `seek` (then steps once each way from there) and checks
/// they land on the same entries.
fn check_seek(p: &Pair, target: &InternalKey, seek: fn(&mut TableIter, &[u8]), what: &str) {
    let (mut a, mut b) = (p.ingested.iter(), p.twin.iter());
    seek(&mut a, target.encoded());
    seek(&mut b, target.encoded());
    assert_eq!(at(&a), at(&b), "{what} {target:?}");
    if a.valid() {
        a.next();
        b.next();
        assert_eq!(at(&a), at(&b), "{what} {target:?} then next");
    }
    seek(&mut a, target.encoded());
    seek(&mut b, target.encoded());
    if a.valid() {
        a.prev();
        b.prev();
        assert_eq!(at(&a), at(&b), "{what} {target:?} then prev");
    }
}

#[test]
fn global_seqno_seeks_land_where_the_twin_lands() {
    for case in CASES {
        let p = pair(case);
        for user in probe_user_keys() {
            for snapshot in [0, 1, G - 1, G, G + 1, MAX_SEQUENCE] {
                for kind in KINDS {
                    let target = InternalKey::new(&user, snapshot, kind);
                    check_seek(&p, &target, TableIter::seek, "seek");
                    check_seek(&p, &target, TableIter::seek_for_prev, "seek_for_prev");
                }
            }
        }
    }
}

#[test]
fn global_seqno_seek_at_a_snapshot_below_it_skips_the_key() {
    let p = pair(CASES[0]);
    let mut it = p.ingested.iter();
    // Below the global seqno the key's entry is newer than the target: the next key is first.
    it.seek(InternalKey::for_lookup(&user_key(10), G - 1).encoded());
    let key = it.key().to_vec();
    assert_eq!(ParsedKey::parse(&key).unwrap().user_key, user_key(11));
    it.seek(InternalKey::for_lookup(&user_key(10), G).encoded());
    let key = it.key().to_vec();
    assert_eq!(ParsedKey::parse(&key).unwrap().user_key, user_key(10));
    // A target newer than the global seqno sorts before the key's entry: seek_for_prev lands
    // on the key before.
    it.seek_for_prev(InternalKey::new(&user_key(10), G + 1, ValueKind::MAX).encoded());
    let key = it.key().to_vec();
    assert_eq!(ParsedKey::parse(&key).unwrap().user_key, user_key(9));
}

/// A lookup's answer on `table`, with the sequence its trace reports when the key was found.
fn lookup(table: &Table, key: &[u8], snapshot: u64) -> (TableGet, Option<u64>) {
    let mut trace = GetTrace::default();
    let got = table.get_traced(key, snapshot, &mut trace).unwrap();
    (got, trace.key_found.then_some(trace.sequence))
}

#[test]
fn global_seqno_point_lookups_see_the_table_from_it_on() {
    for case in CASES {
        let p = pair(case);
        for i in 0..KEYS {
            let key = user_key(i);
            for snapshot in [0, G - 1] {
                assert_eq!(p.ingested.get(&key, snapshot).unwrap(), TableGet::NotFound);
            }
            for snapshot in [G, G + 1, MAX_SEQUENCE] {
                let got = lookup(&p.ingested, &key, snapshot);
                assert_eq!(got, lookup(&p.twin, &key, snapshot), "{case:?} #{i}");
                assert_eq!(got.1, Some(G));
                let want = match entry(i) {
                    (ValueKind::Delete, _) => TableGet::Deleted,
                    (ValueKind::BlobIndex, v) => TableGet::FoundBlob(v),
                    (_, v) => TableGet::Found(v),
                };
                assert_eq!(got.0, want, "{case:?} #{i} @ {snapshot}");
            }
        }
        for absent in [&b""[..], b"key-0005a", b"key-0005\0", b"zzz"] {
            for snapshot in [G - 1, G, MAX_SEQUENCE] {
                assert_eq!(
                    p.ingested.get(absent, snapshot).unwrap(),
                    TableGet::NotFound
                );
            }
        }
    }
}

#[test]
fn global_seqno_range_tombstones_carry_it() {
    let p = pair(CASES[1]);
    let ingested = p.ingested.range_tombstones().unwrap();
    assert_eq!(Some(ingested), p.twin.range_tombstones());
    assert_eq!(ingested.sequence_range(), Some((G, G)));
    assert_eq!(
        ingested.tombstone_count() as u64,
        p.ingested.properties().range_deletions
    );
    assert_eq!(ingested.max_covering(&user_key(45), G - 1), None);
    assert_eq!(ingested.max_covering(&user_key(45), G), Some(G));
    assert_eq!(ingested.max_covering(&user_key(55), MAX_SEQUENCE), None);
}

#[test]
fn global_seqno_accessors_report_it() {
    let p = pair(CASES[0]);
    assert_eq!(p.ingested.global_seqno(), Some(G));
    assert_eq!(
        (p.ingested.min_sequence(), p.ingested.max_sequence()),
        (G, G)
    );
    // The properties stay as written.
    let props = p.ingested.properties();
    assert_eq!((props.min_sequence, props.max_sequence), (0, 0));
    assert_eq!(p.twin.global_seqno(), None);
    assert_eq!((p.twin.min_sequence(), p.twin.max_sequence()), (G, G));
}

#[test]
fn global_seqno_of_zero_reads_as_written() {
    let bytes = build(0, false);
    let (_f1, table) = open(&bytes, CASES[0], Some(0));
    let (_f2, plain) = open(&bytes, CASES[0], None);
    let (table, plain) = (Arc::new(table.unwrap()), Arc::new(plain.unwrap()));
    assert_eq!(table.global_seqno(), Some(0));
    assert_eq!(table.max_sequence(), 0);
    assert_eq!(
        all_forward(&mut table.iter()),
        all_forward(&mut plain.iter())
    );
    assert_eq!(table.range_tombstones(), plain.range_tombstones());
    assert_eq!(
        table.get(&user_key(0), 0).unwrap(),
        TableGet::Found(entry(0).1)
    );
}

#[test]
fn global_seqno_refuses_a_table_holding_other_sequences() {
    for case in CASES {
        let (_f, table) = open(&build(G, case.partitioned), case, Some(G + 1));
        assert!(
            matches!(&table, Err(SstError::Corruption { reason, .. }) if reason.contains("global sequence number")),
            "{:?}",
            table.err()
        );
    }
    // A range tombstone above 0 is enough.
    let mut bytes = Vec::new();
    let mut b = TableBuilder::new(&mut bytes, TableBuildOptions::default());
    b.set_range_tombstones(tombstones(3));
    b.add(InternalKey::new(b"k", 0, ValueKind::Put).encoded(), b"v")
        .unwrap();
    b.finish().unwrap();
    let (_f, table) = open(&bytes, CASES[0], Some(G));
    assert!(matches!(table, Err(SstError::Corruption { .. })));
    // Without a global seqno the same table opens.
    let (_f, table) = open(&bytes, CASES[0], None);
    assert!(table.is_ok());
}

#[test]
fn global_seqno_beyond_the_largest_sequence_is_refused() {
    let (_f, table) = open(&build(0, false), CASES[0], Some(MAX_SEQUENCE + 1));
    assert!(matches!(table, Err(SstError::InvalidArgument(_))));
    let (_f, table) = open(&build(0, false), CASES[0], Some(MAX_SEQUENCE));
    assert_eq!(table.unwrap().max_sequence(), MAX_SEQUENCE);
}
