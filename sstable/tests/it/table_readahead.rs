//! Reading ahead (`TableIterOptions::readahead_bytes`, a compaction's reads): the same entries
//! as block-by-block reads, in one file read per window instead of one per block.

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
