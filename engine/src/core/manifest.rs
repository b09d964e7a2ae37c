//! The manifest (a log of version edits) and `CURRENT`, which names the live manifest.
//!
//! A new manifest starts with edits describing the whole database (a header edit with the
//! counters, then one edit per keyspace: created, its log number, its tables); later edits are
//! appended and synced before they take effect. `CURRENT` is replaced atomically: written to
//! `CURRENT.tmp`, synced, renamed over `CURRENT`, and the directory synced.

use std::io::Write;
use std::path::Path;

use crate::base::error::{Error, Result};
use crate::base::fs::{names, FileSystem};
use crate::base::version_edit::VersionEdit;
use crate::base::wal::reader::{read_log, LogContents, LogEnd};
use crate::base::wal::writer::LogWriter;

/// An open manifest being appended to.
#[derive(Debug)]
pub struct Manifest {
    writer: LogWriter,
    number: u64,
}

impl Manifest {
    /// Creates manifest `number` holding `snapshot`, synced, and points `CURRENT` at it.
    pub fn create(
        fs: &dyn FileSystem,
        dir: &Path,
        number: u64,
        snapshot: &[VersionEdit],
    ) -> Result<Manifest> {
        let path = names::manifest(dir, number);
        let mut writer = LogWriter::new(fs.create(&path)?);
        let written = snapshot
            .iter()
            .try_for_each(|edit| writer.add_record(&edit.encode()))
            .and_then(|()| writer.sync_marked());
        if let Err(e) = written {
            // Not named by `CURRENT`: a partial manifest is only wasted space (a full disk's).
            let _ = fs.remove(&path);
            return Err(e.into());
        }
        set_current(fs, dir, number)?;
        Ok(Manifest { writer, number })
    }

    /// This manifest's file number.
    pub fn number(&self) -> u64 {
        self.number
    }

    /// Bytes written to it so far.
    pub fn size(&self) -> u64 {
        self.writer.size()
    }

    /// Appends an edit and syncs it: once this returns, the edit survives a crash, and so does
    /// the sync mark after it that tells recovery the edit was acknowledged.
    pub fn append(&mut self, edit: &VersionEdit) -> Result<()> {
        self.writer.add_record(&edit.encode())?;
        self.writer.sync_marked()?;
        Ok(())
    }
}

pub(crate) fn set_current(fs: &dyn FileSystem, dir: &Path, number: u64) -> Result<()> {
    let tmp = dir.join("CURRENT.tmp");
    let mut f = fs.create(&tmp)?;
    f.write_all(format!("MANIFEST-{number:06}\n").as_bytes())?;
    f.sync()?;
    drop(f);
    fs.rename(&tmp, &dir.join(names::CURRENT))?;
    fs.sync_dir(dir)?;
    Ok(())
}

/// Reads `CURRENT` and the manifest it names; returns the manifest number and its edits.
///
/// Every append of a manifest of database format 7 or newer returns only once a sync mark after
/// its edit is durable. So damage with no sync mark after it lies in an append that never
/// returned (cut off, or its pages lost in a power loss): it and everything after it are
/// dropped. Damage before a sync mark is [`Error::Corruption`], never an older database. A
/// manifest of format 6 or older has no marks: there only a cut-off last record is dropped.
pub fn recover(fs: &dyn FileSystem, dir: &Path) -> Result<(u64, Vec<VersionEdit>)> {
    let current = fs.read(&dir.join(names::CURRENT))?;
    let name = std::str::from_utf8(&current)
        .ok()
        .and_then(|s| s.strip_suffix('\n'))
        .ok_or_else(|| Error::corruption("CURRENT is not a manifest name".to_string()))?;
    let number = match names::parse(name) {
        names::FileKind::Manifest(n) => n,
        _ => return Err(Error::corruption(format!("CURRENT names {name:?}"))),
    };
    let bytes = fs.read(&names::manifest(dir, number)).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Error::corruption(format!("manifest {name} named by CURRENT is missing"))
        } else {
            Error::Io(e)
        }
    })?;
    let contents = read_log(&bytes);
    check_manifest_end(name, &contents)?;
    if contents.records.is_empty() {
        return Err(Error::corruption(format!(
            "manifest {name} holds no version"
        )));
    }
    let edits = contents
        .records
        .iter()
        .enumerate()
        .map(|(i, r)| {
            VersionEdit::decode(r)
                .ok_or_else(|| Error::corruption(format!("manifest {name}: edit {i} undecodable")))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((number, edits))
}

/// Whether the way manifest `name` ends leaves its records the acknowledged edits.
fn check_manifest_end(name: &str, contents: &LogContents) -> Result<()> {
    let marked = contents.sync_marks > 0;
    let (offset, reason) = match &contents.end {
        LogEnd::Clean | LogEnd::TornTail { .. } => return Ok(()),
        LogEnd::DamagedTail { offset, reason } | LogEnd::UnsyncedLoss { offset, reason, .. }
            if marked =>
        {
            tracing::warn!(
                "siftdb: manifest {name}: an append that never returned dropped at {offset}: \
                 {reason}"
            );
            return Ok(());
        }
        LogEnd::DamagedTail { offset, reason }
        | LogEnd::UnsyncedLoss { offset, reason, .. }
        | LogEnd::Corrupted { offset, reason } => (offset, reason),
    };
    Err(Error::corruption(format!(
        "manifest {name} at offset {offset}: {reason}"
    )))
}
