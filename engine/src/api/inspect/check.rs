//! [`check_db`] and [`check_table`]: every checksum of a database's live files, and its
//! tables' filters against their keys (RocksDB's `ldb checkconsistency` and
//! `sst_dump --command=verify`, together).

use std::path::{Path, PathBuf};

use siftdb_filter::KeyHasher;

use super::check_table::{check_table_file, describe, TableContext};
use crate::base::error::{Error, Result};
use crate::base::fs::{names, FileSystem, RealFs};
use crate::base::options_file::RecordedOptions;
use crate::base::version_edit::VersionEdit;
use crate::base::wal::reader::{LogEnd, LogReader};
use crate::core::manifest_state::ManifestState;

/// What kind of file a [`FileCheck`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CheckedFileKind {
    /// `OPTIONS`.
    Options,
    /// The live manifest.
    Manifest,
    /// A write-ahead log.
    Wal,
    /// A table.
    Table,
    /// A blob file.
    Blob,
}

impl CheckedFileKind {
    /// A lower-case name (`options`, `manifest`, `wal`, `table`, `blob`).
    pub fn name(self) -> &'static str {
        match self {
            CheckedFileKind::Options => "options",
            CheckedFileKind::Manifest => "manifest",
            CheckedFileKind::Wal => "wal",
            CheckedFileKind::Table => "table",
            CheckedFileKind::Blob => "blob",
        }
    }
}

/// What checking one file found.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct FileCheck {
    /// The file.
    pub path: PathBuf,
    /// What it is.
    pub kind: CheckedFileKind,
    /// The keyspace it belongs to (tables and blob files of a database).
    pub keyspace: Option<String>,
    /// The level it is in (tables of a database).
    pub level: Option<usize>,
    /// Blocks (table) or records (log, blob file) whose checksums were verified.
    pub blocks: u64,
    /// Entries (table), write-batch operations (WAL) or version edits (manifest) read.
    pub entries: u64,
    /// Distinct user keys looked up through the table's filters (table).
    pub filter_keys_checked: u64,
    /// What is worth knowing and is not damage (e.g. a torn last write of a log).
    pub notes: Vec<String>,
    /// The damage found, if any: the file fails the check.
    pub problem: Option<String>,
}

impl FileCheck {
    pub(super) fn new(path: &Path, kind: CheckedFileKind) -> FileCheck {
        FileCheck {
            path: path.to_path_buf(),
            kind,
            keyspace: None,
            level: None,
            blocks: 0,
            entries: 0,
            filter_keys_checked: 0,
            notes: Vec::new(),
            problem: None,
        }
    }

    pub(super) fn failed(mut self, e: Error) -> FileCheck {
        self.problem = Some(describe(&e));
        self
    }

    /// Whether the file passed.
    pub fn is_ok(&self) -> bool {
        self.problem.is_none()
    }
}

/// What [`check_db`] found: one [`FileCheck`] per file it looked at.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CheckReport {
    /// The database directory.
    pub dir: PathBuf,
    /// `OPTIONS`, the manifest, the live WALs, then each keyspace's tables and blob files.
    pub files: Vec<FileCheck>,
}

impl CheckReport {
    /// Whether every file passed.
    pub fn is_ok(&self) -> bool {
        self.files.iter().all(FileCheck::is_ok)
    }

    /// The files that failed.
    pub fn damaged(&self) -> Vec<&FileCheck> {
        self.files.iter().filter(|f| !f.is_ok()).collect()
    }
}

/// Checks the table file at `path`: the footer, every block against its checksum (index and
/// its partitions, data blocks, filters and their partitions, prefix filter, range tombstones,
/// range filter), keys in order and as many as the properties say, and that neither filter
/// rules out a key (or prefix) the table holds. Damage is reported in the returned
/// [`FileCheck`], not as an error; an error means the file could not be read at all.
pub fn check_table(path: impl AsRef<Path>) -> Result<FileCheck> {
    let path = path.as_ref();
    RealFs.open_random(path, siftdb_sstable::ReadMode::Pread)?;
    Ok(check_table_file(&RealFs, path, TableContext::default()))
}

/// Checks the database in `dir` without opening it (a writer may have it open; no file is
/// written): `OPTIONS`, every record checksum of the live manifest and of the WALs recovery
/// would replay, every live table as [`check_table`] does (with the database's filter hasher
/// and each table's filter cap from the manifest, and its size against the manifest's), and
/// every record of every live blob file. A torn last write of a log is a note, any other
/// damage a problem. Errors only when `dir` is not a database.
pub fn check_db(dir: impl AsRef<Path>) -> Result<CheckReport> {
    let dir = dir.as_ref();
    super::require_database(dir)?;
    let fs = RealFs;
    let mut files = Vec::new();
    let (options, hasher) = check_options(&fs, dir);
    files.push(options);
    let (manifest, state) = check_manifest(&fs, dir);
    files.push(manifest);
    let listing = fs.list(dir)?;
    let min_log = state.as_ref().map_or(0, ManifestState::min_log_number);
    let mut wals: Vec<u64> = listing
        .iter()
        .filter_map(|n| match names::parse(n) {
            names::FileKind::Wal(n) if n >= min_log => Some(n),
            _ => None,
        })
        .collect();
    wals.sort_unstable();
    for n in wals {
        files.push(check_log(&fs, &names::wal(dir, n), CheckedFileKind::Wal));
    }
    match &state {
        Some(state) => check_live_files(&fs, dir, state, hasher, &mut files),
        None => check_listed_tables(&fs, dir, &listing, hasher, &mut files),
    }
    Ok(CheckReport {
        dir: dir.to_path_buf(),
        files,
    })
}

/// `OPTIONS`, and the filter hasher it names when that is XXH3 (its seed is on disk).
fn check_options(fs: &dyn FileSystem, dir: &Path) -> (FileCheck, Option<KeyHasher>) {
    let path = dir.join(names::OPTIONS);
    let mut check = FileCheck::new(&path, CheckedFileKind::Options);
    let recorded = match fs.read(&path) {
        Ok(text) => RecordedOptions::decode(&String::from_utf8_lossy(&text)),
        Err(e) => return (check.failed(Error::Io(e)), None),
    };
    let Some(recorded) = recorded else {
        check.problem = Some("OPTIONS is unreadable".into());
        return (check, None);
    };
    check.entries = 1;
    let hasher =
        (recorded.filter_hash == "Xxh3").then(|| KeyHasher::xxh3(recorded.filter_seed_tag));
    (check, hasher)
}

/// The manifest `CURRENT` names: every record, then the edits folded.
fn check_manifest(fs: &dyn FileSystem, dir: &Path) -> (FileCheck, Option<ManifestState>) {
    let current = dir.join(names::CURRENT);
    let name = fs.read(&current).ok().and_then(|bytes| {
        let text = String::from_utf8(bytes).ok()?;
        match names::parse(text.strip_suffix('\n')?) {
            names::FileKind::Manifest(n) => Some(n),
            _ => None,
        }
    });
    let Some(number) = name else {
        let mut check = FileCheck::new(&current, CheckedFileKind::Manifest);
        check.problem = Some("CURRENT does not name a manifest".into());
        return (check, None);
    };
    let mut check = check_log(fs, &names::manifest(dir, number), CheckedFileKind::Manifest);
    match ManifestState::read(fs, dir) {
        Ok(state) => (check, Some(state)),
        Err(e) => {
            check.problem.get_or_insert_with(|| describe(&e));
            (check, None)
        }
    }
}

/// Every record of a WAL or manifest: its checksum, and that it decodes (as a write batch or a
/// version edit).
pub(super) fn check_log(fs: &dyn FileSystem, path: &Path, kind: CheckedFileKind) -> FileCheck {
    let mut check = FileCheck::new(path, kind);
    let input = match fs.open_sequential(path) {
        Ok(input) => input,
        Err(e) => return check.failed(Error::Io(e)),
    };
    let mut reader = LogReader::new(input);
    loop {
        let record = match reader.next_record() {
            Ok(Some(record)) => record,
            Ok(None) => break,
            Err(e) => return check.failed(Error::Io(e)),
        };
        check.blocks += 1;
        match decoded_entries(record, kind) {
            Some(n) => check.entries += n,
            None => {
                let at = reader.offset();
                check.problem = Some(format!(
                    "record {} (ending at offset {at}) does not decode as a {}",
                    check.blocks,
                    if kind == CheckedFileKind::Wal {
                        "write batch"
                    } else {
                        "version edit"
                    }
                ));
                return check;
            }
        }
    }
    match reader.end() {
        None | Some(LogEnd::Clean) => {}
        Some(LogEnd::TornTail { offset }) => check.notes.push(format!(
            "ends in a torn write at offset {offset} (never acknowledged; recovery drops it)"
        )),
        Some(
            LogEnd::DamagedTail { offset, reason }
            | LogEnd::UnsyncedLoss { offset, reason, .. }
            | LogEnd::Corrupted { offset, reason },
        ) => check.problem = Some(format!("damaged record at offset {offset}: {reason}")),
    }
    check
}

/// The operations (or edits) a record holds, `None` if it does not decode.
fn decoded_entries(record: &[u8], kind: CheckedFileKind) -> Option<u64> {
    if kind == CheckedFileKind::Manifest {
        return VersionEdit::decode(record).map(|_| 1);
    }
    if crate::base::batch::decode_sequence_marker(record).is_some() {
        return Some(0);
    }
    crate::base::batch::decode(record).map(|(_, ops)| ops.len() as u64)
}

/// Every table and blob file the manifest names, by keyspace.
fn check_live_files(
    fs: &dyn FileSystem,
    dir: &Path,
    state: &ManifestState,
    hasher: Option<KeyHasher>,
    files: &mut Vec<FileCheck>,
) {
    for keyspace in state.keyspaces.values() {
        let mut tables = keyspace.files.clone();
        tables.sort_by_key(|(level, meta)| (*level, meta.number));
        for (level, meta) in tables {
            let path = names::table(dir, meta.number);
            let ctx = TableContext {
                hasher,
                filter_bits_cap: meta.filter_bits_cap(),
            };
            let mut check = check_table_file(fs, &path, ctx);
            check.keyspace = Some(keyspace.name.clone());
            check.level = Some(level);
            if let (None, Ok(size)) = (&check.problem, fs.open_random(&path, Default::default())) {
                let size = size.size();
                if size != meta.file_size {
                    check.problem = Some(format!(
                        "{size} bytes, the manifest says {}",
                        meta.file_size
                    ));
                }
            }
            files.push(check);
        }
        for blob in keyspace.blob_files.values() {
            let mut check =
                super::blob::check_blob(fs, &names::blob(dir, blob.number), blob.number);
            check.keyspace = Some(keyspace.name.clone());
            files.push(check);
        }
    }
}

/// Every table file in the directory (when the manifest cannot say which are live).
fn check_listed_tables(
    fs: &dyn FileSystem,
    dir: &Path,
    listing: &[String],
    hasher: Option<KeyHasher>,
    files: &mut Vec<FileCheck>,
) {
    let mut tables: Vec<u64> = listing
        .iter()
        .filter_map(|n| match names::parse(n) {
            names::FileKind::Table(n) => Some(n),
            _ => None,
        })
        .collect();
    tables.sort_unstable();
    for n in tables {
        let ctx = TableContext {
            hasher,
            filter_bits_cap: None,
        };
        files.push(check_table_file(fs, &names::table(dir, n), ctx));
    }
}
