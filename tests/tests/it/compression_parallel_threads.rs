//! `compression_parallel_threads`: flushes and compactions compress data blocks on worker
//! threads; everything reads back, across reopen, in about the bytes one thread writes (a
//! table is cut a little earlier: blocks still being compressed count uncompressed; that the
//! blocks themselves are the same is `sstable/tests/table_parallel_compression.rs`). 0 and too
//! many threads are refused.

use siftdb::{Compression, Db, Error, Options};

fn options(threads: usize) -> Options {
    Options {
        write_buffer_size: 64 << 10,
        target_file_size_base: 64 << 10,
        compression: Compression::Lz4,
        compression_per_level: Vec::new(),
        compression_parallel_threads: threads,
        ..Options::default()
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn value(i: u32) -> Vec<u8> {
    format!("value-{}-", i % 17).repeat(6).into_bytes()
}

/// Writes 20,000 keys, compacts, and returns the sum of the table sizes.
fn fill(dir: &std::path::Path, threads: usize) -> u64 {
    let db = Db::open(dir, options(threads)).unwrap();
    for i in 0..20_000 {
        db.put(key(i), value(i)).unwrap();
    }
    db.compact_range(None, None).unwrap();
    for i in (0..20_000).step_by(7) {
        assert_eq!(db.get(key(i)).unwrap(), Some(value(i)));
    }
    assert_eq!(db.iter().count(), 20_000);
    db.close().unwrap();
    drop(db);
    let db = Db::open(dir, options(threads)).unwrap();
    assert_eq!(db.get(key(19_999)).unwrap(), Some(value(19_999)));
    db.level_info().iter().map(|l| l.bytes).sum()
}

#[test]
fn tables_compressed_on_worker_threads_read_back() {
    let (one, three) = (siftdb_tests::temp_dir(), siftdb_tests::temp_dir());
    let bytes_one = fill(one.path(), 1);
    let bytes_three = fill(three.path(), 3);
    assert!(bytes_one > 0);
    let ratio = bytes_three as f64 / bytes_one as f64;
    assert!(
        (0.9..1.1).contains(&ratio),
        "{bytes_three} bytes against {bytes_one}"
    );
}

#[test]
fn compression_parallel_threads_out_of_range_are_refused() {
    let dir = siftdb_tests::temp_dir();
    for threads in [0, 65] {
        let got = Db::open(dir.path(), options(threads));
        assert!(matches!(got, Err(Error::InvalidArgument(_))), "{threads}");
    }
}
