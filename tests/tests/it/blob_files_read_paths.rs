//! Key-value separation (issue 37): values of at least `min_blob_size` bytes go to blob files
//! at flush; every read path finds them, and the engine's counters show where they went.

use siftdb::{Db, Options};

fn options() -> Options {
    Options {
        enable_blob_files: true,
        min_blob_size: 64,
        blob_file_size: 16 << 10,
        write_buffer_size: 64 << 10,
        target_file_size_base: 64 << 10,
        max_bytes_for_level_base: 256 << 10,
        level0_file_num_compaction_trigger: 2,
        ..Options::default()
    }
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

/// Large values for even keys (separated), small ones for odd keys (kept inline).
fn value(i: u64, round: u64) -> Vec<u8> {
    let len = if i.is_multiple_of(2) {
        300 + (i % 7) as usize * 50
    } else {
        20
    };
    let mut v = format!("{i}:{round}:").into_bytes();
    v.resize(len, b'a' + (i % 26) as u8);
    v
}

#[test]
fn separated_values_read_back_through_get_multi_get_and_iterators() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), options()).unwrap();
    let n = 2_000;
    for i in 0..n {
        db.put(key(i), value(i, 0)).unwrap();
    }
    db.flush().unwrap();
    let stats = db.stats();
    assert!(stats.blob_files > 0, "{stats:?}");
    assert!(
        stats.blob_bytes_written > 1_000 * 300,
        "{}",
        stats.blob_bytes_written
    );
    // The tables hold references, not the values: far less than the values' bytes.
    assert!(
        stats.flush_bytes < stats.blob_bytes_written / 4,
        "tables {} blobs {}",
        stats.flush_bytes,
        stats.blob_bytes_written
    );
    for i in (0..n).step_by(7) {
        assert_eq!(db.get(key(i)).unwrap(), Some(value(i, 0)), "key {i}");
    }
    let keys: Vec<Vec<u8>> = (0..n).step_by(3).map(key).collect();
    for (k, got) in keys.iter().zip(db.multi_get(&keys)) {
        let i: u64 = std::str::from_utf8(&k[3..]).unwrap().parse().unwrap();
        assert_eq!(got.unwrap(), Some(value(i, 0)));
    }
    let forward: Vec<(Vec<u8>, Vec<u8>)> = db.iter().map(Result::unwrap).collect();
    assert_eq!(forward.len(), n as usize);
    for (i, (k, v)) in forward.iter().enumerate() {
        assert_eq!((k, v), (&key(i as u64), &value(i as u64, 0)));
    }
    let backward: Vec<(Vec<u8>, Vec<u8>)> = db.iter().rev().map(Result::unwrap).collect();
    assert_eq!(backward.len(), n as usize);
    assert_eq!(backward[0], (key(n - 1), value(n - 1, 0)));
    let mut raw = db.raw_iter();
    raw.seek(&key(1_000));
    assert_eq!(raw.value(), value(1_000, 0).as_slice());
    raw.prev();
    assert_eq!(raw.value(), value(999, 0).as_slice());
    raw.status().unwrap();
}

#[test]
fn overwrites_compactions_and_reopens_keep_the_newest_values_and_drop_dead_blob_files() {
    let dir = siftdb_tests::temp_dir();
    let n = 1_500;
    {
        let db = Db::open(dir.path(), options()).unwrap();
        for round in 0..3 {
            for i in 0..n {
                db.put(key(i), value(i, round)).unwrap();
            }
            db.flush().unwrap();
        }
        for i in (0..n).step_by(5) {
            db.delete(key(i)).unwrap();
        }
        db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
        db.wait_for_compaction().unwrap();
        let stats = db.stats();
        // Every table was rewritten into the bottom level: only the newest values' blob files
        // are referenced, and the rounds before left files with nothing live, which went.
        assert!(
            stats.blob_file_bytes < 3 * (stats.blob_file_bytes - stats.blob_garbage_bytes),
            "{} bytes, {} garbage",
            stats.blob_file_bytes,
            stats.blob_garbage_bytes
        );
        for i in 0..n {
            let expected = (!i.is_multiple_of(5)).then(|| value(i, 2));
            assert_eq!(db.get(key(i)).unwrap(), expected, "key {i}");
        }
    }
    let blob_files_on_disk = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension() == Some("blob".as_ref()))
        .count();
    let db = Db::open(dir.path(), options()).unwrap();
    let stats = db.stats();
    assert_eq!(
        stats.blob_files as usize, blob_files_on_disk,
        "obsolete blob files deleted"
    );
    for i in 0..n {
        let expected = (!i.is_multiple_of(5)).then(|| value(i, 2));
        assert_eq!(db.get(key(i)).unwrap(), expected, "key {i} after reopen");
    }
}

/// One of the blob files in `dir`.
fn a_blob_file(dir: &std::path::Path) -> std::path::PathBuf {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension() == Some("blob".as_ref()))
        .unwrap()
}

#[test]
fn a_flipped_bit_in_a_blob_is_corruption_naming_the_file_and_offset() {
    let dir = siftdb_tests::temp_dir();
    let n = 400;
    {
        let db = Db::open(dir.path(), options()).unwrap();
        for i in 0..n {
            db.put(key(i), value(i, 0)).unwrap();
        }
        db.flush().unwrap();
    }
    let blob = a_blob_file(dir.path());
    let mut bytes = std::fs::read(&blob).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x10;
    std::fs::write(&blob, &bytes).unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    let name = blob.file_name().unwrap().to_string_lossy().to_string();
    let mut errors = 0;
    for i in 0..n {
        match db.get(key(i)) {
            Ok(got) => assert_eq!(got, Some(value(i, 0)), "key {i}"),
            Err(e) => {
                assert!(e.is_corruption(), "{e}");
                let message = e.to_string();
                assert!(message.contains(&name), "{message}");
                assert!(message.contains("offset"), "{message}");
                errors += 1;
            }
        }
    }
    assert!(errors >= 1, "the damaged value was read as good");
    // A scan stops at the damaged value with the same error.
    let scanned: Vec<_> = db.iter().collect();
    assert!(scanned
        .iter()
        .any(|r| r.as_ref().is_err_and(|e| e.is_corruption())));
    assert!(scanned
        .iter()
        .filter_map(|r| r.as_ref().ok())
        .all(|(k, v)| {
            let i: u64 = std::str::from_utf8(&k[3..]).unwrap().parse().unwrap();
            *v == value(i, 0)
        }));
}

#[test]
fn a_missing_blob_file_is_corruption_at_open_naming_it() {
    let dir = siftdb_tests::temp_dir();
    {
        let db = Db::open(dir.path(), options()).unwrap();
        for i in 0..200 {
            db.put(key(i), value(i, 0)).unwrap();
        }
        db.flush().unwrap();
    }
    let blob = a_blob_file(dir.path());
    std::fs::remove_file(&blob).unwrap();
    let e = Db::open(dir.path(), options()).unwrap_err();
    let name = blob.file_name().unwrap().to_string_lossy().to_string();
    assert!(e.is_corruption(), "{e}");
    assert!(e.to_string().contains(&name), "{e}");
}
