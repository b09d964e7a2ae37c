//! Looking inside a database and its files without opening it (RocksDB's `ldb` and
//! `sst_dump`, as a library; the `siftdb` command-line tool is built on it): a table file's
//! properties, filters, index and entries ([`table_info`], [`table_entries`]), the manifest's
//! edits and the version they build ([`manifest_edits`], [`current_version`]), what `OPTIONS`
//! records and options that open the database as it was created ([`recorded_options`],
//! [`open_options`], [`read_only_options`]), and a check of every checksum and filter ([`check_db`],
//! [`check_table`]). Everything is read through the real file system and nothing is written.
//! The structs are plain values with public fields.

mod blob;
mod check;
mod check_table;
mod manifest_edits;
mod raw_table;
mod recorded_options;
mod table;

use std::path::Path;

pub use check::{check_db, check_table, CheckReport, CheckedFileKind, FileCheck};
pub use manifest_edits::{
    current_version, manifest_edits, KeyspaceVersion, ManifestBlobFile, ManifestEditInfo,
    ManifestFile, VersionInfo,
};
pub use recorded_options::{
    open_options, read_only_options, recorded_options, RecordedOptionsInfo,
};
pub use table::{
    table_entries, table_info, EntryKind, FilterInfo, IndexEntry, KeyInfo, TableEntry, TableInfo,
};

use crate::base::error::{Error, Result};
use crate::base::fs::{names, FileSystem, RealFs};

/// `Ok` when `dir` is a database directory (it holds `CURRENT`); `NotADatabase` otherwise,
/// saying whether it is missing, a file, or a directory without `CURRENT`.
fn require_database(dir: &Path) -> Result<()> {
    let not = |reason: &str| {
        Err(Error::NotADatabase {
            path: dir.to_path_buf(),
            reason: reason.to_string(),
        })
    };
    if !RealFs.exists(dir)? {
        return not("it does not exist");
    }
    if !dir.is_dir() {
        return not("it is not a directory");
    }
    if !RealFs.exists(&dir.join(names::CURRENT))? {
        return not("it has no CURRENT file");
    }
    Ok(())
}
