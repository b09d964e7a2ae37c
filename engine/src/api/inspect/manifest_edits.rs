//! The manifest as a list of edits ([`manifest_edits`]) and as the version they build
//! ([`current_version`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use siftdb_sstable::compare_internal;

use super::table::KeyInfo;
use crate::base::error::Result;
use crate::base::fs::{names, RealFs};
use crate::base::version_edit::{FileMeta, VersionEdit};
use crate::core::manifest_state::ManifestState;

/// A table as the manifest records it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ManifestFile {
    /// Its level.
    pub level: usize,
    /// Its file number (`NNNNNN.sst`).
    pub number: u64,
    /// Its file name.
    pub file_name: String,
    /// Its size in bytes.
    pub file_size: u64,
    /// Smallest internal key.
    pub smallest: KeyInfo,
    /// Largest internal key.
    pub largest: KeyInfo,
    /// Entries.
    pub entries: u64,
    /// Distinct user keys.
    pub distinct_keys: u64,
    /// The level its filter was planned for (differs from `level` after a trivial move).
    pub filter_level: usize,
    /// The bits per key its ribbon filter is read thinned to (`None`: as built).
    pub filter_bits_cap: Option<f64>,
    /// The sequence number an ingested table's entries read at (`None`: their own).
    pub global_seqno: Option<u64>,
    /// Blob files its blob indexes point into: (blob file, values, stored bytes).
    pub blob_refs: Vec<(u64, u64, u64)>,
}

impl ManifestFile {
    fn of(level: usize, meta: &FileMeta) -> ManifestFile {
        let key = |k: &siftdb_sstable::InternalKey| {
            KeyInfo::parse(k.encoded()).unwrap_or(KeyInfo {
                user_key: k.user_key().to_vec(),
                sequence: 0,
                kind: super::EntryKind::Put,
            })
        };
        ManifestFile {
            level,
            number: meta.number,
            file_name: format!("{:06}.sst", meta.number),
            file_size: meta.file_size,
            smallest: key(&meta.smallest),
            largest: key(&meta.largest),
            entries: meta.entries,
            distinct_keys: meta.distinct_keys,
            filter_level: meta.filter_level,
            filter_bits_cap: meta.filter_bits_cap(),
            global_seqno: meta.global_seqno,
            blob_refs: meta
                .blob_refs
                .iter()
                .map(|r| (r.file, r.count, r.bytes))
                .collect(),
        }
    }
}

/// A blob file as the manifest records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ManifestBlobFile {
    /// Its file number (`NNNNNN.blob`).
    pub number: u64,
    /// Values written to it.
    pub records: u64,
    /// Their stored bytes.
    pub stored_bytes: u64,
    /// Its size.
    pub file_size: u64,
}

/// One record of the manifest: a version edit, decoded.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ManifestEditInfo {
    /// Its position in the manifest (0: the first).
    pub index: usize,
    /// The keyspace its log number and files belong to.
    pub keyspace_id: u32,
    /// That keyspace's name, as the edits before it (or this one) made it.
    pub keyspace_name: Option<String>,
    /// The keyspace's new log number.
    pub log_number: Option<u64>,
    /// The next file number.
    pub next_file_number: Option<u64>,
    /// The last sequence number.
    pub last_sequence: Option<u64>,
    /// The next keyspace id.
    pub next_keyspace_id: Option<u32>,
    /// The keyspace is created: its name and its recorded options (`key=value` lines).
    pub created: Option<(String, String)>,
    /// The keyspace is dropped.
    pub dropped: bool,
    /// Tables added.
    pub added: Vec<ManifestFile>,
    /// Tables deleted: (level, file number).
    pub deleted: Vec<(usize, u64)>,
    /// Other keyspaces' log numbers: (keyspace id, log number).
    pub other_log_numbers: Vec<(u32, u64)>,
    /// Where WALs start: (WAL number, its first sequence number).
    pub wal_starts: Vec<(u64, u64)>,
    /// Blob files added.
    pub blob_files: Vec<ManifestBlobFile>,
}

/// One keyspace of the current version.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct KeyspaceVersion {
    /// Its id.
    pub id: u32,
    /// Its name.
    pub name: String,
    /// WALs below this number hold nothing of it that its tables do not.
    pub log_number: u64,
    /// Its tables per level (index = level, up to the deepest level that holds one): L0 newest
    /// first, deeper levels in key order.
    pub levels: Vec<Vec<ManifestFile>>,
    /// Its blob files.
    pub blob_files: Vec<ManifestBlobFile>,
}

/// The version the manifest's edits build.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct VersionInfo {
    /// The live manifest (the file `CURRENT` names).
    pub manifest: PathBuf,
    /// The next file number.
    pub next_file_number: Option<u64>,
    /// The last sequence number.
    pub last_sequence: u64,
    /// The next keyspace id.
    pub next_keyspace_id: u32,
    /// The keyspaces, by id ("default" first).
    pub keyspaces: Vec<KeyspaceVersion>,
}

/// The edits of the live manifest of the database in `dir`, in order (a torn last record,
/// an edit whose append never returned, is not among them). A damaged manifest is a
/// `Corruption`; a directory that is not a database, `NotADatabase`.
pub fn manifest_edits(dir: impl AsRef<Path>) -> Result<Vec<ManifestEditInfo>> {
    let dir = dir.as_ref();
    super::require_database(dir)?;
    let (_, edits) = crate::core::manifest::recover(&RealFs, dir)?;
    let mut names: BTreeMap<u32, String> = BTreeMap::new();
    names.insert(
        0,
        crate::base::keyspace_options::DEFAULT_KEYSPACE.to_string(),
    );
    Ok(edits
        .into_iter()
        .enumerate()
        .map(|(index, edit)| edit_info(index, edit, &mut names))
        .collect())
}

fn edit_info(index: usize, e: VersionEdit, names: &mut BTreeMap<u32, String>) -> ManifestEditInfo {
    if let Some((name, _)) = &e.created {
        names.insert(e.keyspace, name.clone());
    }
    ManifestEditInfo {
        index,
        keyspace_id: e.keyspace,
        keyspace_name: names.get(&e.keyspace).cloned(),
        log_number: e.log_number,
        next_file_number: e.next_file_number,
        last_sequence: e.last_sequence,
        next_keyspace_id: e.next_keyspace_id,
        created: e.created,
        dropped: e.dropped,
        added: e
            .added
            .iter()
            .map(|(level, meta)| ManifestFile::of(*level, meta))
            .collect(),
        deleted: e.deleted,
        other_log_numbers: e.other_log_numbers,
        wal_starts: e.wal_starts,
        blob_files: e.blob_files.iter().map(blob_of).collect(),
    }
}

fn blob_of(b: &crate::base::version_edit::BlobMeta) -> ManifestBlobFile {
    ManifestBlobFile {
        number: b.number,
        records: b.records,
        stored_bytes: b.stored_bytes,
        file_size: b.file_size,
    }
}

/// The version the live manifest of the database in `dir` describes: per keyspace, its
/// tables by level with their key ranges.
pub fn current_version(dir: impl AsRef<Path>) -> Result<VersionInfo> {
    let dir = dir.as_ref();
    super::require_database(dir)?;
    let state = ManifestState::read(&RealFs, dir)?;
    let keyspaces = state
        .keyspaces
        .iter()
        .map(|(id, k)| {
            let depth = k.files.iter().map(|(l, _)| l + 1).max().unwrap_or(0);
            let mut levels: Vec<Vec<(usize, &FileMeta)>> = vec![Vec::new(); depth];
            for (level, meta) in &k.files {
                levels[*level].push((*level, meta));
            }
            for (level, files) in levels.iter_mut().enumerate() {
                if level == 0 {
                    files.sort_by_key(|f| std::cmp::Reverse(f.1.number));
                } else {
                    files.sort_by(|a, b| {
                        compare_internal(a.1.smallest.encoded(), b.1.smallest.encoded())
                    });
                }
            }
            KeyspaceVersion {
                id: *id,
                name: k.name.clone(),
                log_number: k.log_number,
                levels: levels
                    .into_iter()
                    .map(|files| {
                        files
                            .into_iter()
                            .map(|(l, m)| ManifestFile::of(l, m))
                            .collect()
                    })
                    .collect(),
                blob_files: k.blob_files.values().map(blob_of).collect(),
            }
        })
        .collect();
    Ok(VersionInfo {
        manifest: names::manifest(dir, state.number),
        next_file_number: state.next_file_number,
        last_sequence: state.last_sequence,
        next_keyspace_id: state.next_keyspace_id,
        keyspaces,
    })
}
