//! External file ingestion: files built by `SstFileWriter` join the tree by one edit, at the
//! deepest level nothing above them overlaps, and read as one write newer than everything
//! before (a global seqno, recorded in the manifest and in the WAL) — or, overlapping nothing
//! and with no snapshot to protect, at sequence 0. Refusals leave the database as it was.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use siftdb::{Db, Error, IngestOptions, Options, SstFileWriter};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn key(i: usize) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

/// Writes `puts` (sorted by the caller) and `deletes` into an external file at `path`.
fn external(path: &Path, puts: &[(Vec<u8>, Vec<u8>)], deletes: &[Vec<u8>]) -> PathBuf {
    let mut entries: Vec<(Vec<u8>, Option<Vec<u8>>)> = puts
        .iter()
        .map(|(k, v)| (k.clone(), Some(v.clone())))
        .chain(deletes.iter().map(|k| (k.clone(), None)))
        .collect();
    entries.sort();
    let mut w = SstFileWriter::create(path, &Options::default()).unwrap();
    for (k, v) in entries {
        match v {
            Some(v) => w.put(&k, &v).unwrap(),
            None => w.delete(&k).unwrap(),
        }
    }
    w.finish().unwrap();
    path.to_path_buf()
}

fn check(db: &Db, model: &Model, what: &str) {
    for (k, v) in model {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "{what}: get {k:?}");
    }
    let scanned: Vec<(Vec<u8>, Vec<u8>)> = db.iter().map(|r| r.unwrap()).collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.clone().into_iter().collect();
    assert_eq!(scanned.len(), want.len(), "{what}: scan length");
    assert_eq!(scanned, want, "{what}: scan");
    let mut back: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut it = db.raw_iter();
    it.seek_to_last();
    while it.valid() {
        back.push((it.key().to_vec(), it.value().to_vec()));
        it.prev();
    }
    back.reverse();
    assert_eq!(back, want, "{what}: backward scan");
}

/// The level of each table (`siftdb.sstables`).
fn table_levels(db: &Db) -> Vec<usize> {
    let table = db.property("siftdb.sstables").unwrap();
    table
        .lines()
        .filter(|l| l.starts_with('L'))
        .filter_map(|l| l.split_whitespace().next()?[1..].parse().ok())
        .collect()
}

#[test]
fn sst_file_writer_refuses_keys_out_of_order_repeated_or_none() {
    let dir = siftdb_tests::temp_dir();
    let mut w = SstFileWriter::create(dir.path().join("a.sst"), &Options::default()).unwrap();
    w.put(b"b", b"1").unwrap();
    for bad in [&b"a"[..], b"b"] {
        assert!(matches!(w.put(bad, b"x"), Err(Error::InvalidArgument(_))));
        assert!(matches!(w.delete(bad), Err(Error::InvalidArgument(_))));
    }
    assert!(matches!(
        w.delete_range(b"z", b"c"),
        Err(Error::InvalidArgument(_))
    ));
    w.put(b"c", b"2").unwrap();
    let info = w.finish().unwrap();
    assert_eq!((info.num_entries, info.sequence_number), (2, 0));
    assert_eq!(
        (info.smallest_key, info.largest_key),
        (b"b".to_vec(), b"c".to_vec())
    );
    assert!(
        matches!(w.put(b"d", b"3"), Err(Error::InvalidArgument(_))),
        "after finish"
    );
    let mut empty = SstFileWriter::create(dir.path().join("e.sst"), &Options::default()).unwrap();
    assert!(matches!(empty.finish(), Err(Error::InvalidArgument(_))));
}

#[test]
fn ingest_into_an_empty_database_lands_at_the_bottom() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path().join("db"), Options::default()).unwrap();
    let mut model = Model::new();
    let mut paths = Vec::new();
    for part in 0..3 {
        let puts: Vec<(Vec<u8>, Vec<u8>)> = (part * 1000..part * 1000 + 1000)
            .map(|i| (key(i), format!("v{i}").into_bytes()))
            .collect();
        model.extend(puts.iter().cloned());
        paths.push(external(
            &dir.path().join(format!("p{part}.sst")),
            &puts,
            &[],
        ));
    }
    // Out of order on purpose: the set is sorted by key.
    paths.swap(0, 2);
    db.ingest_external_file(&paths, &IngestOptions::default())
        .unwrap();
    check(&db, &model, "after ingestion");
    let levels = table_levels(&db);
    assert_eq!(levels.len(), 3);
    assert!(
        levels.iter().all(|&l| l == siftdb::MAX_LEVELS - 1),
        "{levels:?}"
    );
    assert_eq!(db.stats().files_ingested, 3);
    assert!(paths.iter().all(|p| p.exists()), "copied, not moved");
    // Writes after it are newer.
    db.put(key(5), b"later").unwrap();
    model.insert(key(5), b"later".to_vec());
    check(&db, &model, "after a later write");
}

#[test]
fn ingested_file_overwrites_older_data_and_snapshots_keep_their_view() {
    let dir = siftdb_tests::temp_dir();
    let path = dir.path().join("db");
    let db = Db::open(&path, Options::default()).unwrap();
    let mut model = Model::new();
    for i in 0..2000 {
        db.put(key(i), b"old").unwrap();
        model.insert(key(i), b"old".to_vec());
        if i == 999 {
            db.flush().unwrap(); // half in a table, half in the memtable
        }
    }
    let before = model.clone();
    let snapshot = db.snapshot();
    let puts: Vec<(Vec<u8>, Vec<u8>)> = (500..1500)
        .step_by(2)
        .map(|i| (key(i), b"new".to_vec()))
        .collect();
    let deletes: Vec<Vec<u8>> = (501..1500).step_by(2).map(key).collect();
    let file = external(&dir.path().join("x.sst"), &puts, &deletes);
    db.ingest_external_file(&[&file], &IngestOptions::default())
        .unwrap();
    model.extend(puts.iter().cloned());
    for k in &deletes {
        model.remove(k);
    }
    check(&db, &model, "after ingestion");
    assert_eq!(
        table_levels(&db)[0],
        0,
        "overlapping L0: the file goes on top"
    );
    for (k, v) in &before {
        assert_eq!(snapshot.get(k).unwrap().as_ref(), Some(v), "snapshot {k:?}");
    }
    drop(snapshot);
    // The global seqno survives a reopen (manifest) and the WAL written after it replays
    // past its marker.
    for i in 1500..1600 {
        db.put(key(i), b"after").unwrap();
        model.insert(key(i), b"after".to_vec());
    }
    db.close().unwrap();
    drop(db);
    let db = Db::open(&path, Options::default()).unwrap();
    check(&db, &model, "after reopen");
    db.compact_range(None, None).unwrap();
    check(&db, &model, "after a full compaction");
}

#[test]
fn a_refused_ingestion_leaves_the_database_and_its_directory_as_they_were() {
    let dir = siftdb_tests::temp_dir();
    let path = dir.path().join("db");
    let db = Db::open(&path, Options::default()).unwrap();
    db.put(b"a", b"1").unwrap();
    let files_before = std::fs::read_dir(&path).unwrap().count();
    let one = |name: &str, keys: std::ops::Range<usize>| {
        let puts: Vec<(Vec<u8>, Vec<u8>)> = keys.map(|i| (key(i), b"v".to_vec())).collect();
        external(&dir.path().join(name), &puts, &[])
    };
    let (a, b) = (one("a.sst", 0..100), one("b.sst", 50..150));
    let got = db.ingest_external_file(&[&a, &b], &IngestOptions::default());
    assert!(matches!(got, Err(Error::InvalidArgument(_))), "{got:?}");
    // A damaged data block.
    let c = one("c.sst", 200..2000);
    let mut bytes = std::fs::read(&c).unwrap();
    bytes[100] ^= 0x10;
    std::fs::write(&c, &bytes).unwrap();
    let got = db.ingest_external_file(&[&c], &IngestOptions::default());
    assert!(got.is_err(), "a damaged file was ingested");
    // Not an external file: a table of another database, written at real sequence numbers.
    let other = Db::open(dir.path().join("other"), Options::default()).unwrap();
    other.put(b"q", b"1").unwrap();
    other.flush().unwrap();
    let table = std::fs::read_dir(dir.path().join("other"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "sst"))
        .unwrap();
    let got = db.ingest_external_file(&[&table], &IngestOptions::default());
    assert!(matches!(got, Err(Error::InvalidArgument(_))), "{got:?}");
    assert_eq!(std::fs::read_dir(&path).unwrap().count(), files_before);
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(db.get(key(60)).unwrap(), None);
    assert_eq!(db.stats().files_ingested, 0);
}

#[test]
fn move_files_links_the_file_in_and_removes_the_original() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path().join("db"), Options::default()).unwrap();
    let puts: Vec<(Vec<u8>, Vec<u8>)> = (0..500).map(|i| (key(i), b"m".to_vec())).collect();
    let file = external(&dir.path().join("m.sst"), &puts, &[]);
    let opts = IngestOptions {
        move_files: true,
        ..IngestOptions::default()
    };
    db.ingest_external_file(&[&file], &opts).unwrap();
    assert!(!file.exists(), "the original stays");
    let stats = db.stats();
    assert!(stats.ingested_bytes_linked > 0 && stats.ingested_bytes_copied == 0);
    let model: Model = puts.into_iter().collect();
    check(&db, &model, "after a moved ingestion");
}

#[test]
fn without_global_seqno_or_blocking_flush_an_overlapping_ingestion_is_refused() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path().join("db"), Options::default()).unwrap();
    db.put(key(10), b"mem").unwrap();
    let puts: Vec<(Vec<u8>, Vec<u8>)> = (0..100).map(|i| (key(i), b"f".to_vec())).collect();
    let file = external(&dir.path().join("f.sst"), &puts, &[]);
    let no_flush = IngestOptions {
        allow_blocking_flush: false,
        ..IngestOptions::default()
    };
    let got = db.ingest_external_file(&[&file], &no_flush);
    assert!(matches!(got, Err(Error::InvalidArgument(_))), "{got:?}");
    db.flush().unwrap();
    let no_seqno = IngestOptions {
        allow_global_seqno: false,
        ..IngestOptions::default()
    };
    let got = db.ingest_external_file(&[&file], &no_seqno);
    assert!(matches!(got, Err(Error::InvalidArgument(_))), "{got:?}");
    assert_eq!(db.get(key(10)).unwrap().as_deref(), Some(&b"mem"[..]));
    assert_eq!(db.get(key(11)).unwrap(), None);
    db.ingest_external_file(&[&file], &IngestOptions::default())
        .unwrap();
    assert_eq!(db.get(key(10)).unwrap().as_deref(), Some(&b"f"[..]));
}

#[test]
fn range_deletions_of_an_external_file_hide_older_data_not_its_own() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path().join("db"), Options::default()).unwrap();
    for i in 0..100 {
        db.put(key(i), b"old").unwrap();
    }
    db.flush().unwrap();
    let path = dir.path().join("r.sst");
    let mut w = SstFileWriter::create(&path, &Options::default()).unwrap();
    w.delete_range(key(10), key(50)).unwrap();
    w.put(key(20), b"kept").unwrap();
    w.finish().unwrap();
    db.ingest_external_file(&[&path], &IngestOptions::default())
        .unwrap();
    let mut model: Model = (0..100).map(|i| (key(i), b"old".to_vec())).collect();
    for i in 10..50 {
        model.remove(&key(i));
    }
    model.insert(key(20), b"kept".to_vec());
    check(&db, &model, "after a range deletion was ingested");
    db.compact_range(None, None).unwrap();
    check(&db, &model, "after compaction");
}

fn shard_key(shard: char, i: usize) -> Vec<u8> {
    format!("{shard}/{i:05}").into_bytes()
}

#[test]
fn excise_replaces_a_range_atomically_in_every_compaction_style() {
    for style in [
        siftdb::CompactionStyle::Level,
        siftdb::CompactionStyle::Universal,
        siftdb::CompactionStyle::Fifo,
    ] {
        let dir = siftdb_tests::temp_dir();
        let path = dir.path().join("db");
        let options = Options {
            write_buffer_size: 64 << 10,
            target_file_size_base: 16 << 10,
            compaction_style: style,
            ..Options::default()
        };
        let db = Db::open(&path, options.clone()).unwrap();
        let mut model = Model::new();
        for shard in ['a', 'b', 'c'] {
            for i in 0..1500 {
                db.put(shard_key(shard, i), b"old").unwrap();
                model.insert(shard_key(shard, i), b"old".to_vec());
            }
        }
        db.compact_range(None, None).unwrap();
        // Some of the range only in the memtable.
        for i in (0..1500).step_by(100) {
            db.put(shard_key('b', i), b"memtable").unwrap();
            model.insert(shard_key('b', i), b"memtable".to_vec());
        }
        let before = model.clone();
        let snapshot = db.snapshot();
        let file = dir.path().join("b.sst");
        let mut w = SstFileWriter::create(&file, &options).unwrap();
        for i in (0..3000).step_by(3) {
            w.put(shard_key('b', i), b"new").unwrap();
        }
        w.finish().unwrap();
        let opts = IngestOptions {
            excise: Some(b"b/".to_vec()..b"c/".to_vec()),
            ..IngestOptions::default()
        };
        db.ingest_external_file(&[&file], &opts).unwrap();
        model.retain(|k, _| !k.starts_with(b"b/"));
        for i in (0..3000).step_by(3) {
            model.insert(shard_key('b', i), b"new".to_vec());
        }
        let what = format!("{style:?}");
        check(&db, &model, &what);
        for (k, v) in before.iter().step_by(37) {
            assert_eq!(
                snapshot.get(k).unwrap().as_ref(),
                Some(v),
                "{what}: snapshot"
            );
        }
        drop(snapshot);
        db.close().unwrap();
        drop(db);
        let db = Db::open(&path, options.clone()).unwrap();
        check(&db, &model, &format!("{what}, reopened"));
        db.compact_range(None, None).unwrap();
        check(&db, &model, &format!("{what}, compacted"));
        // With no file, an excise is an atomic range delete; without a snapshot, the tables
        // wholly inside the range go at once.
        let inside_a = |db: &Db| -> usize {
            let table = db.property("siftdb.sstables").unwrap();
            table
                .lines()
                .filter(|l| l.starts_with('L'))
                .filter_map(|l| l.rsplit(' ').next())
                .filter(|range| {
                    range
                        .split_once("..")
                        .is_some_and(|(s, e)| s.starts_with("a/") && e.starts_with("a/"))
                })
                .count()
        };
        let tables_in_a = inside_a(&db);
        if style == siftdb::CompactionStyle::Level {
            assert!(tables_in_a > 0, "{what}: no table lies inside a/");
        }
        let opts = IngestOptions {
            excise: Some(b"a/".to_vec()..b"b/".to_vec()),
            ..IngestOptions::default()
        };
        db.ingest_external_file::<&Path>(&[], &opts).unwrap();
        model.retain(|k, _| !k.starts_with(b"a/"));
        check(&db, &model, &format!("{what}, a/ excised"));
        assert_eq!(
            inside_a(&db),
            0,
            "{what}: of {tables_in_a} tables inside a/, some stayed"
        );
    }
}

#[test]
fn excise_refuses_files_outside_its_range() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path().join("db"), Options::default()).unwrap();
    db.put(b"b/1", b"kept").unwrap();
    let puts: Vec<(Vec<u8>, Vec<u8>)> = (0..10)
        .map(|i| (shard_key('b', i), b"v".to_vec()))
        .collect();
    let file = external(&dir.path().join("f.sst"), &puts, &[]);
    for range in [
        b"c/".to_vec()..b"d/".to_vec(),
        b"b/00005".to_vec()..b"c/".to_vec(),
        b"c/".to_vec()..b"a/".to_vec(),
    ] {
        let opts = IngestOptions {
            excise: Some(range.clone()),
            ..IngestOptions::default()
        };
        let got = db.ingest_external_file(&[&file], &opts);
        assert!(
            matches!(got, Err(Error::InvalidArgument(_))),
            "{range:?}: {got:?}"
        );
    }
    assert_eq!(db.get(b"b/1").unwrap().as_deref(), Some(&b"kept"[..]));
    assert_eq!(db.get(shard_key('b', 3)).unwrap(), None);
}

/// `SstFileWriter` starts the writeback of its file every `bytes_per_sync` bytes (as a flush
/// does), so the sync at `finish` waits for the last stretch only; with 0, never.
#[test]
fn sst_file_writer_starts_writeback_every_bytes_per_sync() {
    let writebacks = |bytes_per_sync: u64| {
        let fs = siftdb_tests::FaultFs::new();
        let options = Options {
            bytes_per_sync,
            fs: std::sync::Arc::new(fs.clone()),
            ..Options::default()
        };
        let mut w = SstFileWriter::create("/load.sst", &options).expect("create");
        for i in 0..20_000 {
            w.put(key(i), [b'v'; 100]).expect("put");
        }
        let info = w.finish().expect("finish");
        (fs.writebacks(), info.file_size)
    };
    let (started, size) = writebacks(64 << 10);
    assert!(
        started >= size / (64 << 10) / 2,
        "{started} writebacks for {size} bytes"
    );
    assert_eq!(writebacks(0).0, 0);
}
