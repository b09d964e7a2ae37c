//! Checking a blob file: its header and footer, then every record's header and value against
//! their checksums.

use std::path::Path;

use siftdb_sstable::blob::BlobFileReader;
use siftdb_sstable::ReadMode;

use super::check::{CheckedFileKind, FileCheck};
use crate::base::error::{Error, Result};
use crate::base::fs::FileSystem;

/// Checks blob file `number` at `path`.
pub(super) fn check_blob(fs: &dyn FileSystem, path: &Path, number: u64) -> FileCheck {
    let check = FileCheck::new(path, CheckedFileKind::Blob);
    match read_records(fs, path, number) {
        Ok(records) => FileCheck {
            blocks: records,
            entries: records,
            ..check
        },
        Err(e) => check.failed(e),
    }
}

/// Reads every record and its value; returns how many there are.
fn read_records(fs: &dyn FileSystem, path: &Path, number: u64) -> Result<u64> {
    let file = fs.open_random(path, ReadMode::Pread)?;
    let reader = BlobFileReader::open(file, number, path.display().to_string())?;
    let mut count = 0;
    for record in reader.records() {
        let record = record.map_err(Error::from)?;
        reader.get(&record.reference)?;
        count += 1;
    }
    Ok(count)
}
