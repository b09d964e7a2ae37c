//! Blob files: every value read back by its reference, the records walked in order, each
//! compression; every flipped bit and every cut is an error or the right value, never a wrong
//! value or a panic.

use std::io;

use siftdb_sstable::blob::{BlobFileReader, BlobFileWriter, BlobReference};
use siftdb_sstable::{Compression, RandomAccessFile};

/// A file in memory.
#[derive(Debug)]
struct Mem(Vec<u8>);

impl RandomAccessFile for Mem {
    fn read_at(&self, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        let start = usize::try_from(offset).map_err(|_| io::ErrorKind::UnexpectedEof)?;
        self.0
            .get(start..start.saturating_add(len))
            .map(<[u8]>::to_vec)
            .ok_or_else(|| io::ErrorKind::UnexpectedEof.into())
    }
    fn size(&self) -> u64 {
        self.0.len() as u64
    }
}

fn key(i: usize) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

/// Values of many sizes (none empty but the first), some compressible, some not.
fn value(i: usize) -> Vec<u8> {
    let len = (i * 37) % 3000;
    (0..len)
        .map(|j| {
            if i.is_multiple_of(2) {
                b'a' + (j % 7) as u8
            } else {
                (j * 131 + i * 7) as u8 ^ (j >> 3) as u8
            }
        })
        .collect()
}

fn write(n: usize, compression: Compression) -> (Vec<u8>, Vec<BlobReference>) {
    let mut w = BlobFileWriter::new(Vec::new(), "000042.blob", 42, 3, compression).unwrap();
    let refs: Vec<BlobReference> = (0..n).map(|i| w.add(&key(i), &value(i)).unwrap()).collect();
    let (meta, bytes) = w.finish().unwrap();
    assert_eq!(meta.records, n as u64);
    assert_eq!(meta.file_size, bytes.len() as u64);
    (bytes, refs)
}

#[test]
fn every_value_reads_back_by_its_reference_and_the_walk_finds_every_record() {
    for compression in [Compression::None, Compression::Lz4, Compression::Zstd] {
        let n = 500;
        let (bytes, refs) = write(n, compression);
        let file_size = bytes.len();
        let reader = BlobFileReader::open(Box::new(Mem(bytes)), 42, "000042.blob").unwrap();
        assert_eq!(reader.keyspace(), 3);
        assert_eq!(reader.record_count(), n as u64);
        let total: usize = (0..n).map(|i| value(i).len()).sum();
        assert_eq!(reader.value_bytes(), total as u64);
        for (i, r) in refs.iter().enumerate() {
            assert_eq!(
                reader.get(r).unwrap(),
                value(i),
                "{compression:?} value {i}"
            );
            assert_eq!(BlobReference::decode(&r.encode()), Some(*r));
        }
        let walked: Vec<_> = reader.records().map(Result::unwrap).collect();
        assert_eq!(walked.len(), n);
        for (i, record) in walked.iter().enumerate() {
            assert_eq!(record.key, key(i));
            assert_eq!(record.reference, refs[i]);
        }
        if compression != Compression::None {
            // The compressible values were stored compressed.
            assert!(refs.iter().any(|r| r.compression == compression));
            assert!(file_size < total);
        }
    }
}

#[test]
fn a_reference_to_another_file_or_outside_the_records_is_refused() {
    let (bytes, refs) = write(10, Compression::None);
    let len = bytes.len() as u64;
    let reader = BlobFileReader::open(Box::new(Mem(bytes)), 42, "000042.blob").unwrap();
    let other = BlobReference {
        file_number: 43,
        ..refs[3]
    };
    assert!(reader.get(&other).is_err());
    for outside in [
        BlobReference {
            offset: 0,
            ..refs[3]
        },
        BlobReference {
            offset: len - 2,
            ..refs[3]
        },
        BlobReference {
            size: u64::MAX,
            ..refs[3]
        },
    ] {
        assert!(reader.get(&outside).unwrap_err().is_corruption());
    }
}

/// Opens `bytes` and reads every reference and walks every record: each answer is an error
/// or the right one.
fn never_wrong(bytes: Vec<u8>, refs: &[BlobReference]) {
    let Ok(reader) = BlobFileReader::open(Box::new(Mem(bytes)), 42, "000042.blob") else {
        return;
    };
    for (i, r) in refs.iter().enumerate() {
        if let Ok(v) = reader.get(r) {
            assert_eq!(v, value(i), "a wrong value for {i}");
        }
    }
    for (i, record) in reader.records().enumerate() {
        match record {
            Ok(record) => {
                assert_eq!(record.key, key(i), "a wrong key at record {i}");
                assert_eq!(record.reference, refs[i], "a wrong reference at record {i}");
            }
            Err(e) => assert!(e.is_corruption(), "{e}"),
        }
    }
}

#[test]
fn every_flipped_bit_is_an_error_or_the_right_answer() {
    for compression in [Compression::None, Compression::Lz4] {
        let (bytes, refs) = write(12, compression);
        for at in 0..bytes.len() {
            for bit in 0..8 {
                let mut damaged = bytes.clone();
                damaged[at] ^= 1 << bit;
                never_wrong(damaged, &refs);
            }
        }
    }
}

#[test]
fn every_cut_is_an_error_or_the_right_answer() {
    let (bytes, refs) = write(12, Compression::Lz4);
    for len in 0..bytes.len() {
        never_wrong(bytes[..len].to_vec(), &refs);
    }
}

#[test]
fn arbitrary_bytes_never_decode_into_a_panic() {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..20_000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let len = (state % 40) as usize;
        let bytes: Vec<u8> = (0..len).map(|i| (state >> (i % 8 * 8)) as u8).collect();
        if let Some(r) = BlobReference::decode(&bytes) {
            assert_eq!(BlobReference::decode(&r.encode()), Some(r));
        }
    }
}
