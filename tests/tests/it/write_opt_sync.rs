//! The single-key writes with options (`put_opt`, `delete_opt`, `merge_opt`,
//! `delete_range_opt`, on `Db` and on `Keyspace`) honour `WriteOptions::sync`: a synced one
//! survives a power cut with every write before it, where the same writes unsynced are lost.

use std::path::Path;
use std::sync::Arc;

use siftdb::{Db, Keyspace, KeyspaceOptions, Options, WriteOptions};
use siftdb_tests::FaultFs;

fn options(fs: &FaultFs) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        merge_operator: Some(Arc::new(siftdb::merge::U64Add)),
        ..Options::default()
    }
}

fn count(n: u64) -> [u8; 8] {
    n.to_le_bytes()
}

/// One way to make the last write: which call, on the database or on a keyspace.
#[derive(Debug, Clone, Copy)]
enum Last {
    Put,
    Delete,
    Merge,
    DeleteRange,
}

const LASTS: [Last; 4] = [Last::Put, Last::Delete, Last::Merge, Last::DeleteRange];

/// Unsynced puts of `a`, `b`, `c` (8-byte counts), then `last` with `opts`, on `ks` when
/// given, else on the default keyspace.
fn write(db: &Db, ks: Option<&Keyspace>, last: Last, opts: &WriteOptions) {
    for key in [b"a", b"b", b"c"] {
        match ks {
            Some(ks) => ks.put(key, count(1)).unwrap(),
            None => db.put(key, count(1)).unwrap(),
        }
    }
    let result = match (ks, last) {
        (Some(ks), Last::Put) => ks.put_opt(b"d", count(4), opts),
        (Some(ks), Last::Delete) => ks.delete_opt(b"a", opts),
        (Some(ks), Last::Merge) => ks.merge_opt(b"b", count(5), opts),
        (Some(ks), Last::DeleteRange) => ks.delete_range_opt(b"b", b"c", opts),
        (None, Last::Put) => db.put_opt(b"d", count(4), opts),
        (None, Last::Delete) => db.delete_opt(b"a", opts),
        (None, Last::Merge) => db.merge_opt(b"b", count(5), opts),
        (None, Last::DeleteRange) => db.delete_range_opt(b"b", b"c", opts),
    };
    result.unwrap();
}

/// What the keys read after all of `write`, `None` for absent: (a, b, c, d).
fn expected(last: Last) -> [Option<u64>; 4] {
    match last {
        Last::Put => [Some(1), Some(1), Some(1), Some(4)],
        Last::Delete => [None, Some(1), Some(1), None],
        Last::Merge => [Some(1), Some(6), Some(1), None],
        Last::DeleteRange => [Some(1), None, Some(1), None],
    }
}

fn read(db: &Db, ks: Option<&Keyspace>) -> [Option<u64>; 4] {
    [b"a", b"b", b"c", b"d"].map(|key| {
        let value = match ks {
            Some(ks) => ks.get(key).unwrap(),
            None => db.get(key).unwrap(),
        };
        value.map(|v| u64::from_le_bytes(v.try_into().expect("an 8-byte count")))
    })
}

/// Writes as `write` says in a fresh database under `dir`, cuts the power, reopens and reads.
fn after_power_cut(dir: &Path, on_keyspace: bool, last: Last, sync: bool) -> [Option<u64>; 4] {
    let fs = FaultFs::new();
    {
        let db = Db::open(dir, options(&fs)).unwrap();
        let ks = on_keyspace.then(|| {
            db.create_keyspace("ks", KeyspaceOptions::default())
                .unwrap()
        });
        let opts = WriteOptions { sync };
        write(&db, ks.as_ref(), last, &opts);
        assert_eq!(read(&db, ks.as_ref()), expected(last), "before the cut");
        fs.crash();
    }
    fs.restart(0);
    let db = Db::open(dir, options(&fs)).unwrap();
    let ks = on_keyspace.then(|| db.keyspace("ks").unwrap());
    read(&db, ks.as_ref())
}

#[test]
fn a_synced_single_write_survives_power_loss_with_the_writes_before_it() {
    for on_keyspace in [false, true] {
        for last in LASTS {
            let dir = siftdb_tests::temp_dir();
            assert_eq!(
                after_power_cut(dir.path(), on_keyspace, last, true),
                expected(last),
                "{last:?} synced, on a keyspace: {on_keyspace}"
            );
        }
    }
}

#[test]
fn the_same_writes_unsynced_are_lost_to_power_loss() {
    for on_keyspace in [false, true] {
        for last in LASTS {
            let dir = siftdb_tests::temp_dir();
            assert_eq!(
                after_power_cut(dir.path(), on_keyspace, last, false),
                [None; 4],
                "{last:?} unsynced, on a keyspace: {on_keyspace}"
            );
        }
    }
}
