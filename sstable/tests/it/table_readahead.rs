//! Reading ahead (`TableIterOptions::readahead_bytes`: a compaction's reads around the cache, a
//! scan's fixed readahead through it; `auto_readahead`: a scan's own once it reads in order):
//! the same entries as block-by-block reads, in one file read per window instead of one per
//! block, and the blocks read ahead in the cache.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::common::*;
use siftdb_sstable::{
    RandomAccessFile, Table, TableBuildOptions, TableIterOptions, TableReadOptions,
};

/// A table image in memory that counts the reads made of it.
#[derive(Debug)]
struct CountingFile {
    bytes: Vec<u8>,
    reads: Arc<AtomicUsize>,
}

impl RandomAccessFile for CountingFile {
    fn read_at(&self, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        let start = usize::try_from(offset).map_err(|_| io::ErrorKind::InvalidInput)?;
        self.bytes
            .get(start..start + len)
            .map(<[u8]>::to_vec)
            .ok_or_else(|| io::ErrorKind::UnexpectedEof.into())
    }

    fn size(&self) -> u64 {
        self.bytes.len() as u64
    }
}

fn model(n: u32) -> Model {
    (0..n)
        .map(|i| {
            let key = format!("key{i:06}").into_bytes();
            ((key, std::cmp::Reverse(5)), Some(vec![b'v'; 40]))
        })
        .collect()
}

/// The entries of `table` read front to back with `options`, and the reads that took.
fn scan(
    table: &Arc<Table>,
    reads: &AtomicUsize,
    options: TableIterOptions,
) -> (Vec<Vec<u8>>, usize) {
    let before = reads.load(Ordering::Relaxed);
    let mut it = table.iter_with(options);
    it.seek_to_first();
    let mut keys = Vec::new();
    while it.valid() {
        keys.push(it.key().to_vec());
        it.next();
    }
    assert!(it.status().is_none(), "{:?}", it.status());
    (keys, reads.load(Ordering::Relaxed) - before)
}

#[test]
fn readahead_reads_the_same_entries_in_far_fewer_reads() {
    let m = model(3000);
    let options = TableBuildOptions {
        block_size: 512,
        ..TableBuildOptions::default()
    };
    let (bytes, _) = build_bytes(&m, options);
    let reads = Arc::new(AtomicUsize::new(0));
    let file = CountingFile {
        bytes: bytes.clone(),
        reads: Arc::clone(&reads),
    };
    let table = Arc::new(
        Table::open(
            Box::new(file),
            1,
            "t.sst",
            cache(1 << 20),
            TableReadOptions::default(),
        )
        .unwrap(),
    );
    let uncached = TableIterOptions {
        fill_cache: false,
        read_once: true,
        ..TableIterOptions::default()
    };
    let (by_block, block_reads) = scan(&table, &reads, uncached.clone());
    let window = 64 << 10;
    let ahead = TableIterOptions {
        readahead_bytes: window,
        ..uncached
    };
    let (read_ahead, ahead_reads) = scan(&table, &reads, ahead);
    let expected: Vec<Vec<u8>> = sorted_entries(&m)
        .into_iter()
        .map(|(k, _)| k.encoded().to_vec())
        .collect();
    assert_eq!(by_block, expected);
    assert_eq!(read_ahead, expected);
    // A read per data block (and the index's) against one per window.
    assert!(block_reads > 200, "{block_reads} reads block by block");
    let windows = bytes.len().div_ceil(window);
    assert!(
        ahead_reads <= windows + 2,
        "{ahead_reads} reads ahead for {windows} windows ({block_reads} block by block)"
    );
}

/// A table of 3,000 small entries in 512-byte blocks over a counting file, with its own cache.
fn counted_table(m: &Model) -> (Arc<Table>, Arc<AtomicUsize>, usize) {
    let options = TableBuildOptions {
        block_size: 512,
        ..TableBuildOptions::default()
    };
    let (bytes, _) = build_bytes(m, options);
    let len = bytes.len();
    let reads = Arc::new(AtomicUsize::new(0));
    let file = CountingFile {
        bytes,
        reads: Arc::clone(&reads),
    };
    let table = Table::open(
        Box::new(file),
        1,
        "t.sst",
        cache(64 << 20),
        TableReadOptions::default(),
    )
    .unwrap();
    (Arc::new(table), reads, len)
}

#[test]
fn a_scan_that_fills_the_cache_reads_ahead_once_it_reads_in_order() {
    let m = model(3000);
    let expected: Vec<Vec<u8>> = sorted_entries(&m)
        .into_iter()
        .map(|(k, _)| k.encoded().to_vec())
        .collect();
    // Block by block (no readahead): one read per data block.
    let (table, reads, _) = counted_table(&m);
    let plain = TableIterOptions::default();
    let (keys, block_reads) = scan(&table, &reads, plain);
    assert_eq!(keys, expected);
    assert!(block_reads > 200, "{block_reads} reads block by block");
    // Automatic readahead: after two blocks in order, 8 KiB doubling to 256 KiB; every block
    // still enters the cache, so a second scan reads nothing.
    let (table, reads, len) = counted_table(&m);
    let auto = TableIterOptions {
        auto_readahead: true,
        ..TableIterOptions::default()
    };
    let (keys, auto_reads) = scan(&table, &reads, auto.clone());
    assert_eq!(keys, expected);
    assert!(
        auto_reads * 10 < block_reads,
        "{auto_reads} reads with readahead, {block_reads} block by block ({len} bytes)"
    );
    let (keys, again) = scan(&table, &reads, auto);
    assert_eq!(keys, expected);
    assert_eq!(again, 0, "the blocks read ahead were not cached");
    // A fixed readahead (ReadOptions::readahead_size) from the first block.
    let (table, reads, len) = counted_table(&m);
    let fixed = TableIterOptions {
        readahead_bytes: 64 << 10,
        ..TableIterOptions::default()
    };
    let (keys, fixed_reads) = scan(&table, &reads, fixed);
    assert_eq!(keys, expected);
    assert!(
        fixed_reads <= len.div_ceil(64 << 10) + 3,
        "{fixed_reads} reads for {len} bytes in 64 KiB windows"
    );
}

#[test]
fn seeks_that_jump_never_read_ahead() {
    let m = model(3000);
    let (table, reads, _) = counted_table(&m);
    let auto = TableIterOptions {
        auto_readahead: true,
        ..TableIterOptions::default()
    };
    let mut it = table.iter_with(auto);
    let before = reads.load(Ordering::Relaxed);
    // Every 97th key, one entry each: never two blocks in a row.
    let mut seeks = 0;
    for i in (0..3000u32).step_by(97) {
        let key = siftdb_sstable::InternalKey::new(
            format!("key{i:06}").as_bytes(),
            siftdb_sstable::MAX_SEQUENCE,
            siftdb_sstable::ValueKind::Put,
        );
        it.seek(key.encoded());
        assert!(it.valid());
        assert!(it.key().starts_with(format!("key{i:06}").as_bytes()));
        seeks += 1;
    }
    let made = reads.load(Ordering::Relaxed) - before;
    // A read per block sought (and the index's first read): no window read beside them.
    assert!(made <= seeks + 2, "{made} reads for {seeks} seeks");
}
