//! Power loss at every step of an ingestion (the fault-injecting file system cuts the power at
//! its k-th call, for every k until an ingestion runs through): after restart — unsynced pages
//! torn or scrambled — the database opens, everything written before is there, and the file's
//! keys are there all or not at all (all of them if the ingestion returned). A crash in the
//! middle leaves no table the next open trips over, and the WAL marker of a global seqno that
//! never reached the manifest replays harmlessly.

use std::path::Path;
use std::sync::Arc;

use siftdb::{Db, IngestOptions, Options, SstFileWriter, WriteOptions};
use siftdb_tests::FaultFs;

fn options(fs: &FaultFs) -> Options {
    Options {
        write_buffer_size: 8 << 10,
        fs: Arc::new(fs.clone()),
        ..Options::default()
    }
}

fn key(i: usize) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

/// A database holding keys 0..400 = "old" (half in a table, all synced) and an external file
/// of keys 200..600 = "new"; returns the file's path.
fn setup(fs: &FaultFs, dir: &Path) -> std::path::PathBuf {
    let db = Db::open(dir, options(fs)).expect("open");
    for i in 0..400 {
        db.put(key(i), b"old").expect("put");
        if i == 199 {
            db.flush().expect("flush");
        }
    }
    db.write_opt(siftdb::WriteBatch::new(), &WriteOptions { sync: true })
        .expect("sync");
    db.close().expect("close");
    let file = Path::new("/external/load.sst").to_path_buf();
    let mut w = SstFileWriter::create(&file, &options(fs)).expect("create");
    for i in 200..600 {
        w.put(key(i), b"new").expect("put");
    }
    w.finish().expect("finish");
    file
}

/// Whether the file's keys are in the database (all or none of them, else it fails).
fn check(db: &Db, what: &str) -> bool {
    for i in 0..200 {
        assert_eq!(
            db.get(key(i)).unwrap().as_deref(),
            Some(&b"old"[..]),
            "{what}: {i}"
        );
    }
    let ingested = db.get(key(599)).unwrap().is_some();
    for i in 200..600 {
        let want: Option<&[u8]> = match (ingested, i < 400) {
            (true, _) => Some(b"new"),
            (false, true) => Some(b"old"),
            (false, false) => None,
        };
        assert_eq!(db.get(key(i)).unwrap().as_deref(), want, "{what}: key {i}");
    }
    let scanned = db.iter().count();
    assert_eq!(scanned, if ingested { 600 } else { 400 }, "{what}: scan");
    ingested
}

#[test]
fn power_loss_at_every_step_of_an_ingestion_keeps_it_whole_or_absent() {
    let mut k = 0u64;
    let (mut kept, mut lost) = (0, 0);
    loop {
        let fs = FaultFs::new();
        let dir = Path::new("/db");
        let file = setup(&fs, dir);
        let db = Db::open(dir, options(&fs)).expect("open");
        let before = fs.calls();
        fs.crash_call_in(k);
        let result = db.ingest_external_file(&[&file], &IngestOptions::default());
        // The cut never came: the ingestion (and whatever ran beside it) made at most k calls.
        let ran_through = result.is_ok() && fs.calls() - before <= k;
        fs.crash();
        drop(db);
        if k % 2 == 1 {
            fs.restart_scrambled(k);
        } else {
            fs.restart((k / 2 % 5) as usize * 7);
        }
        let db = Db::open(dir, options(&fs)).expect("open after the power loss");
        let what = format!("power cut at call {k}");
        let ingested = check(&db, &what);
        if result.is_ok() {
            assert!(ingested, "{what}: an acknowledged ingestion was lost");
        }
        if ingested {
            kept += 1;
        } else {
            lost += 1;
        }
        // The database works on: the ingestion can be retried.
        if !ingested {
            db.ingest_external_file(&[&file], &IngestOptions::default())
                .expect("ingest again");
            assert!(check(&db, &format!("{what}, retried")));
        }
        db.close().expect("close");
        drop(db);
        let db = Db::open(dir, options(&fs)).expect("reopen");
        assert!(check(&db, &format!("{what}, reopened")));
        if ran_through {
            break;
        }
        k += 1;
        assert!(k < 500, "the ingestion never ran through");
    }
    println!("ingestion power-loss points: {k} ({kept} kept it, {lost} lost it)");
    assert!(kept > 0 && lost > 0);
}
