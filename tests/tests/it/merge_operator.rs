//! Merge operators (`Options::merge_operator`, `Db::merge`): counters and appends through the
//! memtable, flushes, compactions, reopens and snapshots; merges on deleted keys and on expiring
//! values; an operator that fails or panics is an error on read that loses nothing; the
//! operator's name recorded in `OPTIONS` guards the operands; bad input is refused.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use siftdb::merge::{Append, U64Add};
use siftdb::{Clock, Db, Error, MergeOperator, Options, WriteBatch};

fn with_operator(op: Option<Arc<dyn MergeOperator>>) -> Options {
    Options {
        write_buffer_size: 16 << 10,
        target_file_size_base: 16 << 10,
        max_bytes_for_level_base: 64 << 10,
        level0_file_num_compaction_trigger: 2,
        merge_operator: op,
        ..Options::default()
    }
}

fn open(dir: &Path, op: Option<Arc<dyn MergeOperator>>) -> Db {
    Db::open(dir, with_operator(op)).unwrap_or_else(|e| panic!("open {}: {e}", dir.display()))
}

fn u64add() -> Option<Arc<dyn MergeOperator>> {
    Some(Arc::new(U64Add))
}

fn append(sep: &[u8]) -> Option<Arc<dyn MergeOperator>> {
    Some(Arc::new(Append::new(sep)))
}

fn le(n: u64) -> Vec<u8> {
    n.to_le_bytes().to_vec()
}

fn counter(i: u32) -> Vec<u8> {
    format!("counter{i:04}").into_bytes()
}

fn options_file(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("OPTIONS")).expect("read OPTIONS")
}

/// Checks every counter by get, multi_get and iteration both ways (the model: counter → sum).
fn check_counters(db: &Db, model: &BTreeMap<Vec<u8>, u64>, n: u32, ctx: &str) {
    let keys: Vec<Vec<u8>> = (0..n).map(counter).collect();
    for k in &keys {
        assert_eq!(
            db.get(k).unwrap(),
            model.get(k).map(|&v| le(v)),
            "{ctx}: get {}",
            String::from_utf8_lossy(k)
        );
    }
    let got: Vec<_> = db
        .multi_get(&keys)
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    let want: Vec<_> = keys.iter().map(|k| model.get(k).map(|&v| le(v))).collect();
    assert_eq!(got, want, "{ctx}: multi_get");
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(k, &v)| (k.clone(), le(v))).collect();
    let fwd: Vec<_> = db.iter().map(|r| r.unwrap()).collect();
    assert_eq!(fwd, want, "{ctx}: iteration");
    let mut back: Vec<_> = db.iter().rev().map(|r| r.unwrap()).collect();
    back.reverse();
    assert_eq!(back, want, "{ctx}: reverse iteration");
}

/// Counters of `U64Add` merged in rounds, each round ending somewhere else — memtable, L0 table,
/// compacted tables, a reopen — with plain puts and deletes among the merges, and snapshots
/// keeping the sums of their time through compactions.
#[test]
fn u64add_counters_add_up_through_flush_compaction_reopen_and_snapshots() {
    const N: u32 = 300;
    let dir = siftdb_tests::temp_dir();
    let mut db = open(dir.path(), u64add());
    let mut model: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
    let mut snapshots: Vec<(siftdb::Snapshot, BTreeMap<Vec<u8>, u64>)> = Vec::new();
    for round in 0..6u64 {
        for i in 0..N {
            let k = counter(i);
            match (i + round as u32) % 11 {
                // A plain put resets the counter, a delete removes it (the next merge starts
                // from zero).
                0 => {
                    db.put(&k, le(1000 + round)).unwrap();
                    model.insert(k, 1000 + round);
                }
                5 if round > 0 => {
                    db.delete(&k).unwrap();
                    model.remove(&k);
                }
                _ => {
                    // Big increments wrap around.
                    let inc = if i % 17 == 0 {
                        u64::MAX - round
                    } else {
                        u64::from(i) + round
                    };
                    db.merge(&k, le(inc)).unwrap();
                    let e = model.entry(k).or_insert(0);
                    *e = e.wrapping_add(inc);
                }
            }
        }
        check_counters(&db, &model, N, &format!("round {round}, before it lands"));
        match round {
            0 => db.flush().unwrap(),
            1 => snapshots.push((db.snapshot(), model.clone())),
            2 => db.compact_range(None, None).unwrap(),
            3 => {
                snapshots.clear();
                drop(db);
                db = open(dir.path(), u64add());
            }
            4 => {
                snapshots.push((db.snapshot(), model.clone()));
                db.flush().unwrap();
                db.compact_range(Some(&counter(0)), Some(&counter(N / 2)))
                    .unwrap();
            }
            _ => {}
        }
        check_counters(&db, &model, N, &format!("round {round}"));
        for (s, seen) in &snapshots {
            let got: BTreeMap<Vec<u8>, u64> = s
                .iter()
                .map(|r| {
                    let (k, v) = r.unwrap();
                    (k, u64::from_le_bytes(v.try_into().unwrap()))
                })
                .collect();
            assert_eq!(&got, seen, "round {round}: a snapshot's counters changed");
        }
    }
    snapshots.clear();
    db.wait_for_compaction().unwrap();
    db.compact_range(None, None).unwrap();
    check_counters(&db, &model, N, "after the full compaction");
    assert!(db.stats().merges_in_compaction > 0, "no compaction merged");
    drop(db);
    let db = open(dir.path(), u64add());
    check_counters(&db, &model, N, "after the last reopen");
}

/// `Append`: the value, then each operand in the order written, joined by the separator —
/// operands spread over L1, L0 and the memtable; prefix and reverse iteration agree.
#[test]
fn append_joins_operands_in_write_order_across_levels() {
    let dir = siftdb_tests::temp_dir();
    let db = open(dir.path(), append(b", "));
    db.put(b"tags:1", b"red").unwrap();
    db.merge(b"tags:1", b"green").unwrap();
    db.merge(b"tags:2", b"alone").unwrap();
    db.compact_range(None, None).unwrap();
    db.merge(b"tags:1", b"blue").unwrap();
    db.merge(b"tags:2", b"again").unwrap();
    db.flush().unwrap();
    db.merge(b"tags:1", b"").unwrap();
    db.merge(b"tags:1", b"cyan").unwrap();
    db.put(b"tags:3", b"plain").unwrap();
    let want = vec![
        (b"tags:1".to_vec(), b"red, green, blue, , cyan".to_vec()),
        (b"tags:2".to_vec(), b"alone, again".to_vec()),
        (b"tags:3".to_vec(), b"plain".to_vec()),
    ];
    for round in 0..3 {
        for (k, v) in &want {
            assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "round {round}");
        }
        let fwd: Vec<_> = db.prefix_iter(b"tags:").map(|r| r.unwrap()).collect();
        assert_eq!(fwd, want, "round {round}");
        let mut back: Vec<_> = db.iter().rev().map(|r| r.unwrap()).collect();
        back.reverse();
        assert_eq!(back, want, "round {round}");
        let mut it = db.iter();
        it.seek_for_prev(b"tags:1~");
        assert_eq!(it.next_back().unwrap().unwrap(), want[0].clone());
        let mut raw = db.raw_iter();
        raw.seek(b"tags:2");
        assert_eq!(raw.value(), want[1].1.as_slice());
        raw.prev();
        assert_eq!(raw.value(), want[0].1.as_slice());
        raw.status().unwrap();
        db.compact_range(None, None).unwrap();
    }
}

/// A merge on a deleted (or range-deleted) key starts from no value, wherever the delete and the
/// older value are; snapshots from before the delete still see the old value merged.
#[test]
fn merge_on_a_deleted_key_applies_to_no_value() {
    let dir = siftdb_tests::temp_dir();
    let db = open(dir.path(), append(b","));
    db.put(b"a", b"old").unwrap();
    db.put(b"r1", b"old").unwrap();
    db.put(b"r2", b"old").unwrap();
    db.merge(b"r2", b"m0").unwrap();
    db.compact_range(None, None).unwrap();
    let before = db.snapshot();
    db.delete(b"a").unwrap();
    db.flush().unwrap();
    db.merge(b"a", b"x").unwrap();
    // The range tombstone in an L0 table of its own, between the old values (L1) and the
    // operands (another L0 table, the memtable).
    db.delete_range(b"r", b"s").unwrap();
    db.flush().unwrap();
    db.merge(b"r1", b"y").unwrap();
    db.flush().unwrap();
    db.merge(b"r2", b"z").unwrap();
    let want = [
        (b"a".as_slice(), b"x".as_slice()),
        (b"r1", b"y"),
        (b"r2", b"z"),
    ];
    for stage in ["memtable and L0", "compacted"] {
        for (k, v) in want {
            assert_eq!(db.get(k).unwrap().as_deref(), Some(v), "{stage}");
        }
        let all: Vec<_> = db.iter().map(|r| r.unwrap()).collect();
        let expect: Vec<_> = want.iter().map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
        assert_eq!(all, expect, "{stage}");
        if stage == "memtable and L0" {
            assert_eq!(before.get(b"a").unwrap().as_deref(), Some(&b"old"[..]));
            assert_eq!(before.get(b"r2").unwrap().as_deref(), Some(&b"old,m0"[..]));
            db.compact_range(None, None).unwrap();
            assert_eq!(before.get(b"r1").unwrap().as_deref(), Some(&b"old"[..]));
            assert_eq!(before.iter().count(), 3);
        }
    }
    drop(before);
    drop(db);
    let db = open(dir.path(), append(b","));
    for (k, v) in want {
        assert_eq!(db.get(k).unwrap().as_deref(), Some(v), "reopened");
    }
}

fn assert_invalid<T: std::fmt::Debug>(got: siftdb::Result<T>, ctx: &str) {
    match got {
        Err(Error::InvalidArgument(_)) => {}
        other => panic!("{ctx}: expected InvalidArgument, got {other:?}"),
    }
}

/// Without a merge operator, `merge` is `InvalidArgument` through `Db`, `Keyspace` and
/// batches, and a batch holding a merge writes none of its other operations.
#[test]
fn merge_without_an_operator_is_invalid_argument_and_writes_nothing() {
    let dir = siftdb_tests::temp_dir();
    let db = open(dir.path(), None);
    let ks = db.keyspace("ks").unwrap();
    db.put(b"k", b"v").unwrap();
    let wal = db.stats().wal_bytes;
    assert_invalid(db.merge(b"k", b"x"), "Db::merge");
    assert_invalid(ks.merge(b"k", b"x"), "Keyspace::merge");
    let mut b = WriteBatch::new();
    b.put(b"p", b"1").merge(b"k", b"x").delete(b"k");
    assert_invalid(db.write(b), "batch with merge");
    let mut b = WriteBatch::new();
    b.put_in(&ks, b"p", b"1").merge_in(&ks, b"k", b"x");
    assert_invalid(db.write(b), "batch with merge_in");
    assert_eq!(db.stats().wal_bytes, wal, "a refused merge reached the WAL");
    assert_eq!(db.get(b"k").unwrap(), Some(b"v".to_vec()));
    assert_eq!(db.get(b"p").unwrap(), None);
    assert_eq!(ks.iter().count(), 0);
    drop((ks, db));
    let db = open(dir.path(), None);
    assert_eq!(
        db.iter().map(|r| r.unwrap()).collect::<Vec<_>>(),
        vec![(b"k".to_vec(), b"v".to_vec())]
    );
}

/// Keys over `MAX_KEY_SIZE` are refused by `merge` as by `put`.
#[test]
fn merge_with_an_over_long_key_is_invalid_argument() {
    let dir = siftdb_tests::temp_dir();
    let db = open(dir.path(), u64add());
    let long = vec![b'k'; siftdb::MAX_KEY_SIZE + 1];
    assert_invalid(db.merge(&long, le(1)), "Db::merge");
    let mut b = WriteBatch::new();
    b.merge(b"ok", le(1)).merge(&long, le(1));
    assert_invalid(db.write(b), "batch");
    assert_eq!(db.get(b"ok").unwrap(), None);
    let at_limit = vec![b'k'; siftdb::MAX_KEY_SIZE];
    db.merge(&at_limit, le(2)).unwrap();
    assert_eq!(db.get(&at_limit).unwrap(), Some(le(2)));
}

/// A merge operator whose behaviour the test chooses: joins with "+", or fails (`None`), or
/// panics. Its name is fixed, so a reopen with a working instance is "the same operator".
struct Switchable {
    mode: Mode,
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Works,
    Fails,
    Panics,
}

impl MergeOperator for Switchable {
    fn name(&self) -> &str {
        "test.switchable"
    }

    fn full_merge(
        &self,
        _key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Option<Vec<u8>> {
        match self.mode {
            Mode::Works => Some(
                existing
                    .into_iter()
                    .chain(operands.iter().copied())
                    .collect::<Vec<_>>()
                    .join(&b'+'),
            ),
            Mode::Fails => None,
            Mode::Panics => panic!("the merge operator was told to panic"),
        }
    }

    fn partial_merge(&self, _key: &[u8], operands: &[&[u8]]) -> Option<Vec<u8>> {
        match self.mode {
            Mode::Works => Some(operands.join(&b'+')),
            Mode::Fails => None,
            Mode::Panics => panic!("the merge operator was told to panic"),
        }
    }
}

fn switchable(mode: Mode) -> Option<Arc<dyn MergeOperator>> {
    Some(Arc::new(Switchable { mode }))
}

/// The key the broken operator cannot merge (a byte that must be escaped in messages).
const BAD: &[u8] = b"bad\x01key";
/// How the message names it: escaped, in quotes.
const BAD_IN_MESSAGE: &str = "\"bad\\x01key\"";

/// Reads of `BAD` fail with a corruption naming it; other keys read fine.
fn check_broken_reads(db: &Db, ctx: &str) {
    let is_bad = |e: &Error| e.is_corruption() && e.to_string().contains(BAD_IN_MESSAGE);
    match db.get(BAD) {
        Err(e) if is_bad(&e) => {}
        other => panic!("{ctx}: get of the unmergeable key: {other:?}"),
    }
    assert_eq!(db.get(b"good").unwrap(), Some(b"fine".to_vec()), "{ctx}");
    assert_eq!(db.get(b"zzz").unwrap(), Some(b"last".to_vec()), "{ctx}");
    let got = db.multi_get(&[b"good".as_slice(), BAD, b"zzz"]);
    assert_eq!(got[0].as_ref().unwrap(), &Some(b"fine".to_vec()), "{ctx}");
    assert!(
        matches!(&got[1], Err(e) if is_bad(e)),
        "{ctx}: multi_get: {:?}",
        got[1]
    );
    assert_eq!(got[2].as_ref().unwrap(), &Some(b"last".to_vec()), "{ctx}");
    // Iteration reaches the key and reports the error there, in both directions.
    let items: Vec<_> = db.iter().collect();
    assert!(
        items.iter().any(|r| matches!(r, Err(e) if is_bad(e))),
        "{ctx}: forward iteration gave no error naming the key: {items:?}"
    );
    assert!(
        items
            .iter()
            .all(|r| r.as_ref().map_or(true, |(k, _)| k != BAD)),
        "{ctx}: iteration yielded a value for the unmergeable key"
    );
    let items: Vec<_> = db.iter().rev().collect();
    assert!(
        items.iter().any(|r| matches!(r, Err(e) if is_bad(e))),
        "{ctx}: backward iteration gave no error naming the key: {items:?}"
    );
    let items: Vec<_> = db.prefix_iter(b"bad").collect();
    assert!(
        matches!(items.first(), Some(Err(e)) if is_bad(e)),
        "{ctx}: prefix iteration: {items:?}"
    );
    let mut raw = db.raw_iter();
    raw.seek(b"bad");
    assert!(
        !raw.valid() || raw.key() != BAD,
        "{ctx}: the raw iterator stands on the unmergeable key"
    );
    assert!(
        matches!(raw.status(), Err(e) if is_bad(&e)),
        "{ctx}: raw iterator status"
    );
}

/// Writes the key the operator will fail on — a value and operands on three levels — and keys
/// around it.
fn write_unmergeable(db: &Db) {
    db.put(b"good", b"fine").unwrap();
    db.put(BAD, b"base").unwrap();
    db.merge(BAD, b"m1").unwrap();
    db.compact_range(None, None).unwrap();
    db.merge(BAD, b"m2").unwrap();
    db.flush().unwrap();
    db.merge(BAD, b"m3").unwrap();
    db.put(b"zzz", b"last").unwrap();
}

fn a_broken_operator_loses_nothing(mode: Mode) {
    let dir = siftdb_tests::temp_dir();
    let db = open(dir.path(), switchable(mode));
    write_unmergeable(&db);
    check_broken_reads(&db, "in memtable, L0 and L1");
    // Compactions cannot merge the key either: they keep its operands (and the database works).
    db.compact_range(None, None).unwrap();
    check_broken_reads(&db, "after a full compaction");
    // Background compactions meet it too.
    for i in 0..2_000u32 {
        db.put(format!("fill{i:05}"), [b'f'; 64]).unwrap();
        if i % 500 == 0 {
            db.merge(BAD, format!("n{i}").as_bytes()).unwrap();
        }
    }
    db.wait_for_compaction().unwrap();
    db.compact_range(None, None).unwrap();
    check_broken_reads(&db, "after background compactions");
    db.put(b"still", b"writable").unwrap();
    drop(db);
    // The same operator, working now: every operand is still there, in order.
    let db = open(dir.path(), switchable(Mode::Works));
    let want = b"base+m1+m2+m3+n0+n500+n1000+n1500".to_vec();
    assert_eq!(db.get(BAD).unwrap(), Some(want.clone()));
    assert_eq!(db.get(b"still").unwrap(), Some(b"writable".to_vec()));
    let stats_before = db.stats().merges_in_compaction;
    db.compact_range(None, None).unwrap();
    assert!(db.stats().merges_in_compaction > stats_before);
    assert_eq!(db.get(BAD).unwrap(), Some(want.clone()));
    assert_eq!(db.iter().count(), 2_000 + 4);
}

/// An operator that returns `None`: reads of that key are `Corruption` naming the key (escaped,
/// in quotes) — get, multi_get, iterators — other keys read fine, compactions keep the operands,
/// and reopening with a working operator of the same name gives the right value.
#[test]
fn a_failing_operator_is_corruption_naming_the_key_and_loses_nothing() {
    a_broken_operator_loses_nothing(Mode::Fails);
}

/// An operator that panics: the same as one that fails — an error on read, no crash of the
/// database, operands kept by compactions.
#[test]
fn a_panicking_operator_is_an_error_on_read_and_loses_nothing() {
    a_broken_operator_loses_nothing(Mode::Panics);
}

/// Operands in tables and in the WAL: reopening under another operator name, or none, is
/// `InvalidArgument` and leaves `OPTIONS` as it was; the right name opens and reads them.
#[test]
fn reopening_under_another_operator_name_while_operands_exist_is_refused() {
    for operands_in in ["tables", "wal"] {
        let dir = siftdb_tests::temp_dir();
        let db = open(dir.path(), append(b","));
        db.put(b"k", b"a").unwrap();
        if operands_in == "tables" {
            // One L0 table holding the value and the operand (a flush merges nothing).
            db.merge(b"k", b"b").unwrap();
            db.flush().unwrap();
        } else {
            db.flush().unwrap();
            db.merge(b"k", b"b").unwrap();
        }
        drop(db);
        let recorded = options_file(dir.path());
        assert!(
            recorded.contains(Append::new(b",").name()),
            "OPTIONS does not name the operator:\n{recorded}"
        );
        let others: [(&str, Option<Arc<dyn MergeOperator>>); 4] = [
            ("another separator", append(b";")),
            ("U64Add", u64add()),
            ("a custom operator", switchable(Mode::Works)),
            ("no operator", None),
        ];
        for (what, op) in others {
            let ctx = format!("{what}, operands in the {operands_in}");
            assert_invalid(Db::open(dir.path(), with_operator(op.clone())), &ctx);
            assert_eq!(options_file(dir.path()), recorded, "{ctx}: OPTIONS changed");
            assert_invalid(
                Db::open_read_only(dir.path(), with_operator(op)),
                &format!("{ctx}, read-only"),
            );
        }
        let db = open(dir.path(), append(b","));
        assert_eq!(
            db.get(b"k").unwrap(),
            Some(b"a,b".to_vec()),
            "{operands_in}"
        );
        db.merge(b"k", b"c").unwrap();
        assert_eq!(
            db.get(b"k").unwrap(),
            Some(b"a,b,c".to_vec()),
            "{operands_in}"
        );
    }
}

/// Once a full compaction has merged every operand into a value, the database holds no operand:
/// it opens under another operator name (or none), which `OPTIONS` then records, and the values
/// read as they were.
#[test]
fn reopening_under_another_name_after_every_operand_was_merged_opens() {
    let dir = siftdb_tests::temp_dir();
    let db = open(dir.path(), append(b","));
    db.put(b"k", b"a").unwrap();
    db.merge(b"k", b"b").unwrap();
    db.merge(b"lone", b"x").unwrap();
    db.flush().unwrap();
    db.merge(b"k", b"c").unwrap();
    db.compact_range(None, None).unwrap();
    assert!(db.stats().merges_in_compaction >= 2);
    drop(db);
    let db = open(dir.path(), append(b";"));
    assert!(
        options_file(dir.path()).contains(Append::new(b";").name()),
        "OPTIONS records the new operator:\n{}",
        options_file(dir.path())
    );
    assert_eq!(db.get(b"k").unwrap(), Some(b"a,b,c".to_vec()));
    assert_eq!(db.get(b"lone").unwrap(), Some(b"x".to_vec()));
    db.merge(b"k", b"d").unwrap();
    assert_eq!(db.get(b"k").unwrap(), Some(b"a,b,c;d".to_vec()));
    db.compact_range(None, None).unwrap();
    drop(db);
    let db = open(dir.path(), None);
    assert_eq!(db.get(b"k").unwrap(), Some(b"a,b,c;d".to_vec()));
}

/// A clock that moves only when told to.
#[derive(Debug)]
struct ManualClock(AtomicU64);

impl Clock for ManualClock {
    fn now(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.0.load(Ordering::SeqCst))
    }
}

/// Operands on a value written with `put_with_ttl`: merged with it while it lives, with nothing
/// once it has expired — judged when read, whether the operands and the value are in the
/// memtable, in tables, or compacted together before the expiry.
#[test]
fn merge_onto_an_expiring_value_judges_its_expiry_at_read_time() {
    let dir = siftdb_tests::temp_dir();
    let clock = Arc::new(ManualClock(AtomicU64::new(1_700_000_000_000)));
    let options = |op: Option<Arc<dyn MergeOperator>>| Options {
        clock: clock.clone(),
        ..with_operator(op)
    };
    let db = Db::open(dir.path(), options(append(b","))).unwrap();
    let ttl = Duration::from_millis(100);
    // mem: everything in the memtable; l0: the value in a table, operands above; compacted: the
    // value and its operands compacted together before the expiry.
    db.put_with_ttl(b"compacted", b"base", ttl).unwrap();
    db.merge(b"compacted", b"x").unwrap();
    db.merge(b"compacted", b"y").unwrap();
    db.compact_range(None, None).unwrap();
    db.put_with_ttl(b"l0", b"base", ttl).unwrap();
    db.flush().unwrap();
    db.merge(b"l0", b"x").unwrap();
    db.merge(b"l0", b"y").unwrap();
    db.put_with_ttl(b"mem", b"base", ttl).unwrap();
    db.merge(b"mem", b"x").unwrap();
    db.merge(b"mem", b"y").unwrap();
    let keys = [b"compacted".as_slice(), b"l0", b"mem"];
    let check = |db: &Db, want: &[u8], ctx: &str| {
        for k in keys {
            assert_eq!(
                db.get(k).unwrap().as_deref(),
                Some(want),
                "{ctx}: get {}",
                String::from_utf8_lossy(k)
            );
        }
        let got: Vec<_> = db
            .multi_get(&keys)
            .into_iter()
            .map(|r| r.unwrap())
            .collect();
        assert!(
            got.iter().all(|v| v.as_deref() == Some(want)),
            "{ctx}: {got:?}"
        );
        let all: Vec<_> = db.iter().map(|r| r.unwrap().1).collect();
        assert_eq!(all, vec![want.to_vec(); 3], "{ctx}: iteration");
        let back: Vec<_> = db.iter().rev().map(|r| r.unwrap().1).collect();
        assert_eq!(back, vec![want.to_vec(); 3], "{ctx}: reverse iteration");
    };
    check(&db, b"base,x,y", "live");
    db.compact_range(None, None).unwrap();
    check(&db, b"base,x,y", "live, compacted");
    clock.0.fetch_add(99, Ordering::SeqCst);
    check(&db, b"base,x,y", "1 ms before the expiry");
    clock.0.fetch_add(1, Ordering::SeqCst);
    check(&db, b"x,y", "expired");
    drop(db);
    let db = Db::open(dir.path(), options(append(b","))).unwrap();
    check(&db, b"x,y", "expired, reopened");
    db.compact_range(None, None).unwrap();
    check(&db, b"x,y", "expired, compacted");
    db.merge(b"mem", b"z").unwrap();
    assert_eq!(db.get(b"mem").unwrap(), Some(b"x,y,z".to_vec()));
}

/// The same with counters: an expiring base of 5 plus 1 reads 6, then 1 once the base expires.
#[test]
fn u64add_onto_an_expiring_counter_drops_the_base_at_expiry() {
    let dir = siftdb_tests::temp_dir();
    let clock = Arc::new(ManualClock(AtomicU64::new(1_000_000)));
    let db = Db::open(
        dir.path(),
        Options {
            clock: clock.clone(),
            ..with_operator(u64add())
        },
    )
    .unwrap();
    db.put_with_ttl(b"c", le(5), Duration::from_millis(10))
        .unwrap();
    db.merge(b"c", le(1)).unwrap();
    db.compact_range(None, None).unwrap();
    db.merge(b"c", le(1)).unwrap();
    assert_eq!(db.get(b"c").unwrap(), Some(le(7)));
    clock.0.fetch_add(10, Ordering::SeqCst);
    assert_eq!(db.get(b"c").unwrap(), Some(le(2)));
    db.compact_range(None, None).unwrap();
    assert_eq!(db.get(b"c").unwrap(), Some(le(2)));
}

/// Merges in a keyspace (its handle or `merge_in`) apply to that keyspace's keys only; a
/// snapshot reads each keyspace's merged value as of its time.
#[test]
fn merges_stay_in_their_keyspace() {
    let dir = siftdb_tests::temp_dir();
    let db = open(dir.path(), u64add());
    let ks = db.keyspace("ks").unwrap();
    db.put(b"n", le(100)).unwrap();
    ks.put(b"n", le(200)).unwrap();
    ks.merge(b"n", le(1)).unwrap();
    ks.flush().unwrap();
    let snap = db.snapshot();
    let mut b = WriteBatch::new();
    b.merge_in(&ks, b"n", le(2))
        .merge(b"n", le(3))
        .merge_in(&ks, b"only", le(4));
    db.write(b).unwrap();
    assert_eq!(db.get(b"n").unwrap(), Some(le(103)));
    assert_eq!(ks.get(b"n").unwrap(), Some(le(203)));
    assert_eq!(ks.get(b"only").unwrap(), Some(le(4)));
    assert_eq!(db.get(b"only").unwrap(), None);
    assert_eq!(snap.get_in(&ks, b"n").unwrap(), Some(le(201)));
    assert_eq!(snap.get(b"n").unwrap(), Some(le(100)));
    ks.compact_range(None, None).unwrap();
    drop((snap, ks, db));
    let db = open(dir.path(), u64add());
    let ks = db.keyspace("ks").unwrap();
    assert_eq!(ks.get(b"n").unwrap(), Some(le(203)));
    assert_eq!(db.get(b"n").unwrap(), Some(le(103)));
}

/// A read-only open and a checkpoint read operands as the writer does — from its tables and
/// from its WAL — and a read-only database refuses merges.
#[test]
fn read_only_open_and_checkpoint_read_merges() {
    let dir = siftdb_tests::temp_dir();
    let path = dir.path().join("db");
    let db = open(&path, append(b","));
    db.put(b"k", b"a").unwrap();
    db.merge(b"k", b"b").unwrap();
    db.flush().unwrap();
    db.merge(b"k", b"c").unwrap();
    db.merge(b"wal-only", b"w").unwrap();
    db.checkpoint(dir.path().join("cp")).unwrap();
    for (what, other) in [
        (
            "read-only",
            Db::open_read_only(&path, with_operator(append(b","))).unwrap(),
        ),
        ("checkpoint", open(&dir.path().join("cp"), append(b","))),
    ] {
        assert_eq!(other.get(b"k").unwrap(), Some(b"a,b,c".to_vec()), "{what}");
        assert_eq!(
            other.get(b"wal-only").unwrap(),
            Some(b"w".to_vec()),
            "{what}"
        );
        assert_eq!(other.iter().count(), 2, "{what}");
    }
    let ro = Db::open_read_only(&path, with_operator(append(b","))).unwrap();
    assert!(matches!(ro.merge(b"k", b"d"), Err(Error::ReadOnly)));
    assert_invalid(
        Db::open_read_only(dir.path().join("cp"), with_operator(append(b";"))),
        "checkpoint under another operator",
    );
}

/// A snapshot taken between a value and the operands on it keeps reading the bare value after
/// a compaction merges the operands (by get and by iteration), and the current state reads the
/// merged value.
#[test]
fn a_snapshot_from_before_a_merge_keeps_the_value_through_compaction() {
    let dir = siftdb_tests::temp_dir();
    let db = open(dir.path(), u64add());
    db.put(b"b", le(0)).unwrap();
    let snap = db.snapshot();
    db.merge(b"b", le(5)).unwrap();
    for stage in ["memtable", "compacted", "compacted twice"] {
        assert_eq!(
            snap.get(b"b").unwrap(),
            Some(le(0)),
            "{stage}: snapshot get"
        );
        let seen: Vec<_> = snap.iter().map(|r| r.unwrap()).collect();
        assert_eq!(
            seen,
            vec![(b"b".to_vec(), le(0))],
            "{stage}: snapshot iteration"
        );
        let back: Vec<_> = snap.iter().rev().map(|r| r.unwrap()).collect();
        assert_eq!(
            back,
            vec![(b"b".to_vec(), le(0))],
            "{stage}: snapshot reverse iteration"
        );
        assert_eq!(db.get(b"b").unwrap(), Some(le(5)), "{stage}: get");
        assert_eq!(db.iter().count(), 1, "{stage}");
        db.compact_range(None, None).unwrap();
    }
    drop(snap);
    db.compact_range(None, None).unwrap();
    assert_eq!(db.get(b"b").unwrap(), Some(le(5)));
}
