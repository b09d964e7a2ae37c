//! `Options::max_subcompactions`: a large compaction is merged in key ranges on threads of
//! their own and installed by one edit, and the tree it leaves reads exactly as the model —
//! across overwrites, deletes, range deletes that span the ranges' bounds, a snapshot that keeps
//! old versions, and a reopen.

use std::collections::BTreeMap;

use siftdb::{Db, Options};

fn options(subcompactions: usize) -> Options {
    Options {
        write_buffer_size: 64 << 10,
        target_file_size_base: 16 << 10,
        max_bytes_for_level_base: 64 << 10,
        max_bytes_for_level_multiplier: 4.0,
        max_subcompactions: subcompactions,
        ..Options::default()
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("k{:08}", i.wrapping_mul(2_654_435_761) % 100_000).into_bytes()
}

/// `got` equals `want`, or the first key where they differ is named (not both maps).
fn assert_same(got: &BTreeMap<Vec<u8>, Vec<u8>>, want: &BTreeMap<Vec<u8>, Vec<u8>>, what: &str) {
    let first_difference = got
        .iter()
        .zip(want.iter())
        .find(|(g, w)| g != w)
        .map(|(g, w)| {
            (
                String::from_utf8_lossy(g.0).into_owned(),
                String::from_utf8_lossy(w.0).into_owned(),
            )
        });
    assert!(
        got == want,
        "{what}: {} keys read, {} expected; first difference (read, expected): {first_difference:?}",
        got.len(),
        want.len()
    );
}

fn contents(iter: siftdb::DbIterator) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut previous: Option<Vec<u8>> = None;
    for item in iter {
        let (k, v) = item.unwrap();
        if let Some(p) = &previous {
            assert!(p < &k, "scan out of order or repeated: {p:?} then {k:?}");
        }
        previous = Some(k.clone());
        out.insert(k, v);
    }
    out
}

#[test]
fn subcompactions_split_a_large_compaction_and_lose_nothing() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), options(4)).unwrap();
    let mut model = BTreeMap::new();
    for i in 0..20_000u32 {
        let v = format!("first-{i}").into_bytes();
        db.put(key(i), &v).unwrap();
        model.insert(key(i), v);
    }
    let snapshot = db.snapshot();
    let at_snapshot = model.clone();
    for i in (0..20_000u32).step_by(3) {
        let v = format!("second-{i}").into_bytes();
        db.put(key(i), &v).unwrap();
        model.insert(key(i), v);
    }
    for i in (0..20_000u32).step_by(7) {
        db.delete(key(i)).unwrap();
        model.remove(&key(i));
    }
    // Range deletes spread over the key space: some cross the parts' bounds.
    for start in (0..100_000u32).step_by(9_000) {
        let (lo, hi) = (format!("k{start:08}"), format!("k{:08}", start + 700));
        db.delete_range(lo.as_bytes(), hi.as_bytes()).unwrap();
        let doomed: Vec<Vec<u8>> = model
            .range(lo.clone().into_bytes()..hi.clone().into_bytes())
            .map(|(k, _)| k.clone())
            .collect();
        for k in doomed {
            model.remove(&k);
        }
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let stats = db.stats();
    assert!(
        stats.subcompactions >= 2,
        "no compaction was split: {stats:?}"
    );
    assert_same(&contents(db.iter()), &model, "after the split compaction");
    assert_same(&contents(snapshot.iter()), &at_snapshot, "the snapshot");
    for (k, v) in model.iter().step_by(13) {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
    }
    drop(snapshot);
    drop(db);
    // The manifest alone: a reopen without splits reads the same, in order.
    let db = Db::open(dir.path(), options(1)).unwrap();
    assert_same(&contents(db.iter()), &model, "after reopen");
}

#[test]
fn max_subcompactions_zero_is_refused() {
    let dir = siftdb_tests::temp_dir();
    match Db::open(dir.path(), options(0)) {
        Err(siftdb::Error::InvalidArgument(msg)) => assert!(msg.contains("max_subcompactions")),
        other => panic!("{other:?}"),
    }
}
