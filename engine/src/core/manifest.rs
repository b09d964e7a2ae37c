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
use crate::base::wal::reader::{read_log, LogEnd};
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
        for edit in snapshot {
            writer.add_record(&edit.encode())?;
        }
        writer.sync()?;
        set_current(fs, dir, number)?;
        Ok(Manifest { writer, number })
    }

    /// This manifest's file number.
    pub fn number(&self) -> u64 {
        self.number
    }

    /// Appends an edit and syncs it: once this returns, the edit survives a crash.
    pub fn append(&mut self, edit: &VersionEdit) -> Result<()> {
        self.writer.add_record(&edit.encode())?;
        self.writer.sync()?;
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
/// A cut-off last record (a crash while appending an edit that was therefore never
/// acknowledged) is dropped; any other damage, a bad checksum in the last record included, is
/// [`Error::Corruption`] — never an empty database.
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
    let (records, end) = read_log(&bytes);
    // Manifest records are synced before they count, so only a cut-off last record (a crash
    // during an append that was never acknowledged) may be dropped; altered bytes anywhere,
    // the last record included, are corruption.
    if let LogEnd::Corrupted { offset, reason } | LogEnd::DamagedTail { offset, reason } = end {
        return Err(Error::corruption(format!(
            "manifest {name} at offset {offset}: {reason}"
        )));
    }
    if records.is_empty() {
        return Err(Error::corruption(format!(
            "manifest {name} holds no version"
        )));
    }
    let edits = records
        .iter()
        .enumerate()
        .map(|(i, r)| {
            VersionEdit::decode(r)
                .ok_or_else(|| Error::corruption(format!("manifest {name}: edit {i} undecodable")))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((number, edits))
}
