//! A damaged external file is refused, or — where the flipped bit lies in bytes ingestion does
//! not read (a filter block, say) — ingested and then never answers wrongly: every read gives
//! the right value or an error, never another value or a key that is not there.

use std::path::Path;
use std::sync::Arc;

use siftdb::{Db, IngestOptions, Options, SstFileWriter};
use siftdb_tests::FaultFs;

fn options(fs: &FaultFs) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        partition_above: Some(1024),
        metadata_block_size: 512,
        compression: siftdb::Compression::Lz4,
        ..Options::default()
    }
}

fn key(i: usize) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn value(i: usize) -> Vec<u8> {
    format!("value-{i}-").repeat(3).into_bytes()
}

const KEYS: usize = 1500;

/// The external file: keys 0..KEYS (every fifth deleted instead, over older values) and a
/// range deletion.
fn write_file(fs: &FaultFs, path: &Path) -> usize {
    let mut w = SstFileWriter::create(path, &options(fs)).unwrap();
    for i in 0..KEYS {
        if i % 5 == 4 {
            w.delete(key(i)).unwrap();
        } else {
            w.put(key(i), value(i)).unwrap();
        }
    }
    w.delete_range(key(KEYS), key(KEYS + 100)).unwrap();
    w.finish().unwrap();
    fs.file_len(path).unwrap()
}

/// Reads every key of a database the file was ingested into: the right answer or an error.
/// Returns whether any read failed.
fn reads_right(db: &Db, what: &str) -> bool {
    let mut failed = false;
    for i in 0..KEYS + 100 {
        let want = (i < KEYS && i % 5 != 4).then(|| value(i));
        match db.get(key(i)) {
            Ok(got) => assert_eq!(got, want, "{what}: wrong answer for key {i}"),
            Err(_) => failed = true,
        }
    }
    for item in db.iter() {
        match item {
            Ok((k, v)) => {
                let i: usize = std::str::from_utf8(&k[3..]).unwrap().parse().unwrap();
                assert_eq!(
                    Some(v),
                    (i % 5 != 4).then(|| value(i)),
                    "{what}: scan at {i}"
                );
            }
            Err(_) => {
                failed = true;
                break;
            }
        }
    }
    failed
}

/// A database on `fs` holding every third key with an older value (flushed).
fn with_older_data(fs: &FaultFs) -> Db {
    let db = Db::open("/db", options(fs)).unwrap();
    for i in (0..KEYS + 100).step_by(3) {
        db.put(key(i), b"older").unwrap();
    }
    db.flush().unwrap();
    db
}

#[test]
fn a_damaged_external_file_is_refused_or_never_read_wrong() {
    let flips = siftdb_tests::env_count("SIFTDB_INGEST_CORRUPTION_FLIPS", 400) as usize;
    let pristine = FaultFs::new();
    let file = Path::new("/external/load.sst");
    let len = write_file(&pristine, file);
    // Undamaged, it goes in and reads right (so a refusal below is the flip's doing).
    let db = with_older_data(&pristine.deep_clone());
    db.ingest_external_file(&[file], &IngestOptions::default())
        .unwrap();
    assert!(!reads_right(&db, "undamaged"));
    let (mut refused, mut read_errors, mut clean) = (0, 0, 0);
    for n in 0..flips {
        let fs = pristine.deep_clone();
        let offset = (n * 7919) % len;
        assert!(fs.flip_bit(file, offset, (n % 8) as u8));
        let db = with_older_data(&fs);
        let what = format!("bit {} of byte {offset}", n % 8);
        match db.ingest_external_file(&[file], &IngestOptions::default()) {
            Err(_) => {
                refused += 1;
                // Nothing of the file is visible.
                for i in (0..KEYS).step_by(3) {
                    assert_eq!(
                        db.get(key(i)).unwrap().as_deref(),
                        Some(&b"older"[..]),
                        "{what}"
                    );
                }
            }
            Ok(()) => {
                if reads_right(&db, &what) {
                    read_errors += 1;
                } else {
                    clean += 1;
                }
            }
        }
    }
    println!(
        "external-file bit flips: {flips}, refused: {refused}, ingested then read errors: \
         {read_errors}, clean (bit not read): {clean}, wrong values: 0"
    );
    assert!(refused > flips / 2, "most flips land in checked bytes");
}
