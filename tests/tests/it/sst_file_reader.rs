//! `SstFileReader` reads back what `SstFileWriter` wrote — puts, tombstones and merge operands
//! in key order — and a file with any flipped bit either reads back exactly the same entries
//! or fails with an error: never different entries.

use siftdb::{Options, SstEntry, SstEntryKind, SstFileReader, SstFileWriter};

fn write(path: &std::path::Path) -> Vec<SstEntry> {
    let mut writer = SstFileWriter::create(path, &Options::default()).expect("create");
    let mut want = Vec::new();
    for i in 0..500u32 {
        let key = format!("key{i:05}").into_bytes();
        let (kind, value) = match i % 3 {
            0 => (SstEntryKind::Put, format!("value {i}").into_bytes()),
            1 => (SstEntryKind::Delete, Vec::new()),
            _ => (SstEntryKind::Merge, format!("+{i}").into_bytes()),
        };
        match kind {
            SstEntryKind::Put => writer.put(&key, &value),
            SstEntryKind::Delete => writer.delete(&key),
            _ => writer.merge(&key, &value),
        }
        .expect("write");
        want.push(SstEntry {
            key,
            sequence: 0,
            kind,
            value,
        });
    }
    writer.finish().expect("finish");
    want
}

fn read(path: &std::path::Path) -> siftdb::Result<Vec<SstEntry>> {
    SstFileReader::open(path, &Options::default())?
        .iter()
        .collect()
}

#[test]
fn entries_read_back_as_written() {
    let dir = siftdb_tests::temp_dir();
    let path = dir.path().join("f.sst");
    let want = write(&path);
    let reader = SstFileReader::open(&path, &Options::default()).expect("open");
    assert_eq!(reader.num_entries(), 500);
    reader.verify_checksum().expect("verify");
    assert_eq!(read(&path).expect("read"), want);
}

#[test]
fn a_damaged_file_reads_back_the_same_entries_or_fails() {
    let dir = siftdb_tests::temp_dir();
    let path = dir.path().join("f.sst");
    let want = write(&path);
    let bytes = std::fs::read(&path).expect("read");
    let mut refused = 0;
    for offset in (0..bytes.len()).step_by(37) {
        let mut damaged = bytes.clone();
        damaged[offset] ^= 0x04;
        std::fs::write(&path, &damaged).expect("write");
        match read(&path) {
            Ok(got) => assert_eq!(got, want, "flip at {offset} changed the entries"),
            Err(_) => refused += 1,
        }
    }
    assert!(refused > bytes.len() / 37 / 2, "{refused}");
    std::fs::write(&path, &bytes).expect("write");
    assert!(std::fs::remove_file(&path).is_ok());
    assert!(read(&path).is_err());
}
