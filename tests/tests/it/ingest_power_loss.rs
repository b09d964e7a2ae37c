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

/// Whether the file's keys are in the database (all or none of them, else it fails). With
/// an excise from `EXCISED` on, the old keys from there to the file's first go with it.
fn check(db: &Db, excise: bool, what: &str) -> bool {
    let kept_below = if excise { EXCISED } else { 200 };
    for i in 0..kept_below {
        let got = db.get(key(i)).unwrap();
        assert_eq!(got.as_deref(), Some(&b"old"[..]), "{what}: {i}");
    }
    let ingested = db.get(key(599)).unwrap().is_some();
    for i in kept_below..600 {
        let want: Option<&[u8]> = match (ingested, i) {
            (true, i) if i < 200 => None,
            (true, _) => Some(b"new"),
            (false, i) if i < 400 => Some(b"old"),
            (false, _) => None,
        };
        assert_eq!(db.get(key(i)).unwrap().as_deref(), want, "{what}: key {i}");
    }
    let want = match (ingested, excise) {
        (false, _) => 400,
        (true, false) => 600,
        (true, true) => EXCISED + 400,
    };
    assert_eq!(db.iter().count(), want, "{what}: scan");
    ingested
}

/// Where the excise variant's range starts: its old keys from here to 200 go with the file.
const EXCISED: usize = 150;

fn ingest_options(excise: bool, moved: bool) -> IngestOptions {
    IngestOptions {
        excise: excise.then(|| key(EXCISED)..key(600)),
        move_files: moved,
        ..IngestOptions::default()
    }
}

#[test]
fn power_loss_at_every_step_of_an_ingestion_keeps_it_whole_or_absent() {
    power_loss_at_every_step(false, false);
}

/// The same with the file moved in (`IngestOptions::move_files`: hard-linked into the
/// database, the original removed): the link is durable before the manifest names it.
#[test]
fn power_loss_at_every_step_of_a_moved_ingestion_keeps_it_whole_or_absent() {
    power_loss_at_every_step(false, true);
}

/// The same for a range replace (`IngestOptions::excise`): the range's old keys go with the
/// file's arrival, never before it and never without it.
#[test]
fn power_loss_at_every_step_of_a_range_replace_keeps_it_whole_or_absent() {
    power_loss_at_every_step(true, false);
}

fn power_loss_at_every_step(excise: bool, moved: bool) {
    let mut k = 0u64;
    let (mut kept, mut lost) = (0, 0);
    loop {
        let fs = FaultFs::new();
        let dir = Path::new("/db");
        let file = setup(&fs, dir);
        let db = Db::open(dir, options(&fs)).expect("open");
        let before = fs.calls();
        fs.crash_call_in(k);
        let result = db.ingest_external_file(&[&file], &ingest_options(excise, moved));
        // The cut never came: the ingestion (and whatever ran beside it) made at most k calls.
        let ran_through = result.is_ok() && fs.calls() - before <= k;
        if moved && result.is_ok() {
            let stats = db.stats();
            assert!(stats.ingested_bytes_linked > 0 && stats.ingested_bytes_copied == 0);
        }
        fs.crash();
        drop(db);
        if k % 2 == 1 {
            fs.restart_scrambled(k);
        } else {
            fs.restart((k / 2 % 5) as usize * 7);
        }
        let db = Db::open(dir, options(&fs)).expect("open after the power loss");
        let what = format!("power cut at call {k}");
        let ingested = check(&db, excise, &what);
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
            db.ingest_external_file(&[&file], &ingest_options(excise, moved))
                .expect("ingest again");
            assert!(check(&db, excise, &format!("{what}, retried")));
        }
        db.close().expect("close");
        drop(db);
        let db = Db::open(dir, options(&fs)).expect("reopen");
        assert!(check(&db, excise, &format!("{what}, reopened")));
        if ran_through {
            break;
        }
        k += 1;
        assert!(k < 500, "the ingestion never ran through");
    }
    println!(
        "ingestion power-loss points (excise: {excise}, moved: {moved}): {k} ({kept} kept it, {lost} lost it)"
    );
    assert!(kept > 0 && lost > 0);
}
