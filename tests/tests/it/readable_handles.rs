//! `Readable`: the four handles answer the same read calls through one trait — `Db` and
//! `Keyspace` the newest data, `Snapshot` the data as of it, `Transaction` its own writes over
//! its snapshot — and every call honours `ReadOptions`' bounds, a transaction's own writes
//! included.

use siftdb::{Db, Options, ReadOptions, Readable};

/// Every read of `source`, as (what was read, the answer), in one list to compare.
fn reads(source: &impl Readable) -> Vec<String> {
    let keys = |it: &mut dyn Iterator<Item = siftdb::Result<(Vec<u8>, Vec<u8>)>>| {
        it.map(|kv| String::from_utf8(kv.unwrap().0).unwrap())
            .collect::<Vec<_>>()
            .join(",")
    };
    let bounded = ReadOptions {
        iterate_lower_bound: Some(b"b".to_vec()),
        iterate_upper_bound: Some(b"d".to_vec()),
        ..ReadOptions::default()
    };
    let mut buf = b"junk".to_vec();
    let found = source.get_into("a", &mut buf).unwrap();
    vec![
        format!("get a {:?}", source.get("a").unwrap()),
        format!("get_opt z {:?}", source.get_opt("z", &bounded).unwrap()),
        format!("get_into a {found} {buf:?}"),
        format!(
            "pinned c {:?}",
            source.get_pinned("c").unwrap().map(|v| v.to_vec())
        ),
        format!("contains b {}", source.contains_key("b").unwrap()),
        format!(
            "multi {:?}",
            source
                .multi_get(&["c", "x", "a"])
                .into_iter()
                .map(Result::unwrap)
                .collect::<Vec<_>>()
        ),
        format!("iter {}", keys(&mut source.iter())),
        format!("rev {}", keys(&mut source.iter().rev())),
        format!("bounded {}", keys(&mut source.iter_opt(&bounded))),
        format!("range {}", keys(&mut source.range("b".."z"))),
        format!("prefix {}", keys(&mut source.prefix_iter("c"))),
    ]
}

#[test]
fn the_four_handles_answer_alike_through_readable() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let ks = db.keyspace("other").unwrap();
    for (k, v) in [("a", "1"), ("b", "2"), ("c", "3"), ("c2", "4"), ("e", "5")] {
        db.put(k, v).unwrap();
        ks.put(k, v).unwrap();
    }
    let snapshot = db.snapshot();
    db.flush().unwrap(); // the snapshot reads tables too
    let expected = reads(&db);
    assert_eq!(reads(&ks), expected);
    assert_eq!(reads(&snapshot), expected);
    // Newer writes: the snapshot does not see them; a transaction sees its own.
    db.put("a", "new").unwrap();
    db.delete("e").unwrap();
    assert_eq!(reads(&snapshot), expected);
    let mut txn = db.transaction();
    txn.put("a", "1").unwrap();
    txn.put("e", "5").unwrap();
    // Its writes put back what the newer ones changed: the same answers.
    assert_eq!(reads(&txn), expected);
}

#[test]
fn read_options_bounds_hold_for_a_transactions_own_writes() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.put("b", "db").unwrap();
    let mut txn = db.transaction();
    txn.put("a", "own").unwrap();
    txn.put("c", "own").unwrap();
    txn.put("z", "own").unwrap();
    let opts = ReadOptions {
        iterate_lower_bound: Some(b"b".to_vec()),
        iterate_upper_bound: Some(b"m".to_vec()),
        ..ReadOptions::default()
    };
    let keys: Vec<Vec<u8>> = txn.iter_opt(&opts).map(|kv| kv.unwrap().0).collect();
    assert_eq!(keys, [b"b".to_vec(), b"c".to_vec()]);
    let back: Vec<Vec<u8>> = txn.iter_opt(&opts).rev().map(|kv| kv.unwrap().0).collect();
    assert_eq!(back, [b"c".to_vec(), b"b".to_vec()]);
}
