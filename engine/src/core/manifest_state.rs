//! The manifest's edits folded into the state they describe: the counters, and per keyspace its
//! name, recorded options, log number and live tables.

use std::collections::BTreeMap;
use std::path::Path;

use crate::base::error::{Error, Result};
use crate::base::fs::FileSystem;
use crate::base::keyspace_options::DEFAULT_KEYSPACE;
use crate::base::version_edit::{BlobMeta, FileMeta, VersionEdit};
use crate::core::manifest;

/// One keyspace as the manifest describes it.
#[derive(Debug, Clone)]
pub(crate) struct RecoveredKeyspace {
    pub name: String,
    /// Its options as recorded at creation (`None` for "default", whose options are `Options`).
    pub options_text: Option<String>,
    /// WALs below this hold nothing of the keyspace that is not in its tables.
    pub log_number: u64,
    pub files: Vec<(usize, FileMeta)>,
    /// Its blob files, by number: those its tables reference (`Version::apply` drops the rest).
    pub blob_files: BTreeMap<u64, BlobMeta>,
}

/// See the module documentation.
#[derive(Debug, Clone)]
pub(crate) struct ManifestState {
    pub next_file_number: Option<u64>,
    pub last_sequence: u64,
    pub next_keyspace_id: u32,
    /// By keyspace id; "default" (0) is always there.
    pub keyspaces: BTreeMap<u32, RecoveredKeyspace>,
    /// By WAL number, the sequence number its first record has (format 6 on; absent for WALs
    /// an older build named).
    pub wal_starts: BTreeMap<u64, u64>,
    /// The number of the manifest these edits were read from (0: a new database).
    pub number: u64,
}

impl ManifestState {
    /// The state of a database being created: the "default" keyspace alone, empty.
    pub(crate) fn new_database() -> ManifestState {
        let mut keyspaces = BTreeMap::new();
        keyspaces.insert(
            0,
            RecoveredKeyspace {
                name: DEFAULT_KEYSPACE.to_string(),
                options_text: None,
                log_number: 0,
                files: Vec::new(),
                blob_files: BTreeMap::new(),
            },
        );
        ManifestState {
            next_file_number: None,
            last_sequence: 0,
            next_keyspace_id: 1,
            keyspaces,
            wal_starts: BTreeMap::new(),
            number: 0,
        }
    }

    /// Reads `CURRENT` and the manifest it names, and folds its edits.
    pub(crate) fn read(fs: &dyn FileSystem, dir: &Path) -> Result<ManifestState> {
        let (number, edits) = manifest::recover(fs, dir)?;
        let mut state = ManifestState::new_database();
        state.number = number;
        for edit in edits {
            state.apply(edit)?;
        }
        Ok(state)
    }

    /// The smallest log number of any keyspace: older WALs hold nothing needed.
    pub(crate) fn min_log_number(&self) -> u64 {
        self.keyspaces
            .values()
            .map(|k| k.log_number)
            .min()
            .unwrap_or(0)
    }

    /// The sequence number the first record of the oldest WAL recovery replays must have, if
    /// the manifest says (databases written by format 5 or older do not).
    pub(crate) fn first_wal_sequence(&self) -> Option<u64> {
        self.wal_starts.get(&self.min_log_number()).copied()
    }

    fn apply(&mut self, e: VersionEdit) -> Result<()> {
        self.next_file_number = e.next_file_number.or(self.next_file_number);
        self.wal_starts.extend(e.wal_starts.iter().copied());
        self.last_sequence = e.last_sequence.unwrap_or(self.last_sequence);
        if let Some(next) = e.next_keyspace_id {
            self.next_keyspace_id = self.next_keyspace_id.max(next);
        }
        if let Some((name, options_text)) = e.created {
            if self.keyspaces.contains_key(&e.keyspace)
                || self.keyspaces.values().any(|k| k.name == name)
            {
                return Err(Error::corruption(format!(
                    "manifest creates keyspace {name:?} (id {}) twice",
                    e.keyspace
                )));
            }
            self.keyspaces.insert(
                e.keyspace,
                RecoveredKeyspace {
                    name,
                    options_text: Some(options_text),
                    log_number: 0,
                    files: Vec::new(),
                    blob_files: BTreeMap::new(),
                },
            );
            self.next_keyspace_id = self.next_keyspace_id.max(e.keyspace.saturating_add(1));
        }
        // Another keyspace's flush names the idle ones; one dropped meanwhile is skipped.
        for (id, log_number) in &e.other_log_numbers {
            if let Some(k) = self.keyspaces.get_mut(id) {
                k.log_number = k.log_number.max(*log_number);
            }
        }
        if e.dropped {
            if e.keyspace == 0 || self.keyspaces.remove(&e.keyspace).is_none() {
                return Err(Error::corruption(format!(
                    "manifest drops keyspace id {} that does not exist",
                    e.keyspace
                )));
            }
            return Ok(());
        }
        let touches_tree = e.log_number.is_some()
            || !e.added.is_empty()
            || !e.deleted.is_empty()
            || !e.blob_files.is_empty();
        if !touches_tree {
            return Ok(());
        }
        let k = self.keyspaces.get_mut(&e.keyspace).ok_or_else(|| {
            Error::corruption(format!(
                "manifest edit names keyspace id {} that does not exist",
                e.keyspace
            ))
        })?;
        if let Some(n) = e.log_number {
            k.log_number = n;
        }
        for d in &e.deleted {
            k.files.retain(|(l, f)| !(*l == d.0 && f.number == d.1));
        }
        k.files.extend(e.added);
        k.blob_files
            .extend(e.blob_files.iter().map(|b| (b.number, *b)));
        if k.blob_files.is_empty() {
            return Ok(());
        }
        // A blob file leaves with the last table that references it.
        let referenced: std::collections::BTreeSet<u64> = k
            .files
            .iter()
            .flat_map(|(_, f)| f.blob_refs.iter().map(|r| r.file))
            .collect();
        k.blob_files.retain(|n, _| referenced.contains(n));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyspaces_are_created_and_dropped_by_their_edits() {
        let mut s = ManifestState::new_database();
        s.apply(VersionEdit {
            keyspace: 1,
            created: Some(("a".into(), String::new())),
            next_keyspace_id: Some(2),
            log_number: Some(5),
            ..VersionEdit::default()
        })
        .unwrap();
        assert_eq!(s.keyspaces[&1].log_number, 5);
        assert_eq!(s.min_log_number(), 0);
        s.apply(VersionEdit {
            log_number: Some(7),
            other_log_numbers: vec![(1, 7), (9, 7)],
            ..VersionEdit::default()
        })
        .unwrap();
        assert_eq!(s.min_log_number(), 7);
        s.apply(VersionEdit {
            keyspace: 1,
            dropped: true,
            ..VersionEdit::default()
        })
        .unwrap();
        assert!(!s.keyspaces.contains_key(&1));
        assert_eq!(s.next_keyspace_id, 2, "ids are not reused");
        // An edit of a keyspace that is gone, or a second drop, is corruption.
        assert!(s
            .apply(VersionEdit {
                keyspace: 1,
                log_number: Some(8),
                ..VersionEdit::default()
            })
            .is_err());
        assert!(s
            .apply(VersionEdit {
                keyspace: 0,
                dropped: true,
                ..VersionEdit::default()
            })
            .is_err());
    }
}
