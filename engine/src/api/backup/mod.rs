//! Incremental backups (RocksDB's `BackupEngine`): a directory of backups of one database,
//! each restorable into a database directory; tables and blob files are shared between the
//! backups that hold them, so a backup copies only the files made since the last one.
//!
//! The directory, and how each step survives a crash:
//!
//! ```text
//! LOCK                       one engine at a time
//! meta/<id>                  a backup's metadata (files, sizes, checksums): it exists iff this does
//! shared/<stem>_<crc>_<size>.sst|.blob   tables and blob files, each copied once
//! private/<id>_<name>        the backup's own files: WALs, OPTIONS, manifest, CURRENT
//! staging/                   the checkpoint a backup in progress is taken into
//! ```
//!
//! A backup is a checkpoint of the database (`Db::checkpoint`'s consistent point) whose tables
//! and blob files are copied into `shared/` (via a `.tmp` name, synced, renamed) unless a
//! file with that name and checksum is there already, and whose other files, written by the
//! database into `staging/`, are copied into `private/`. Its metadata is written last (to `meta/<id>.tmp`, synced,
//! renamed, the directory synced): until then the backup does not exist, and files an
//! interrupted backup left are garbage, removed the next time an engine opens the directory
//! (or makes a backup). Deleting a backup removes its metadata first, then the files no other
//! backup names. So a crash at any point leaves every earlier backup whole.

mod files;
mod meta;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::api::db::Db;
use crate::base::error::{Corruption, Error, Result};
use crate::base::fs::{names, FileLock, FileSystem, RealFs};
use files::{copy_summed, mismatch, parse_shared_name, shared_name, sum_of, Sum};
use meta::{BackupFile, BackupMeta};

/// How a [`BackupEngine`] works.
#[derive(Clone)]
pub struct BackupEngineOptions {
    /// The file system the backup directory is on, and restores write through (the database
    /// being backed up is read through its own).
    pub fs: Arc<dyn FileSystem>,
    /// Keep tables and blob files in `shared/`, copied once for every backup that holds them
    /// (RocksDB's `share_table_files`, on by default). Off, every backup copies all its files.
    pub share_table_files: bool,
}

impl Default for BackupEngineOptions {
    fn default() -> Self {
        BackupEngineOptions {
            fs: Arc::new(RealFs),
            share_table_files: true,
        }
    }
}

impl std::fmt::Debug for BackupEngineOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackupEngineOptions")
            .field("share_table_files", &self.share_table_files)
            .finish_non_exhaustive()
    }
}

/// One backup, as [`BackupEngine::get_backup_info`] describes it (RocksDB's `BackupInfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupInfo {
    /// The backup's id: 1 for the first, counting up.
    pub backup_id: u32,
    /// Seconds since the Unix epoch when it was made.
    pub timestamp: u64,
    /// Bytes of all its files (shared ones counted in full).
    pub size: u64,
    /// Its files.
    pub number_files: u32,
    /// The database's last sequence number at the backup's point.
    pub sequence: u64,
    /// What [`BackupEngine::create_new_backup_with_metadata`] attached.
    pub app_metadata: String,
}

/// A directory of incremental backups of a database (see the module documentation).
///
/// ```
/// use siftdb::backup::BackupEngine;
/// # let dir = tempfile::tempdir()?;
/// let db = siftdb::Db::open(dir.path().join("db"), siftdb::Options::default())?;
/// let mut backups = BackupEngine::open(dir.path().join("backups"))?;
/// db.put("k", "v1")?;
/// let first = backups.create_new_backup(&db)?;
/// db.put("k", "v2")?;
/// backups.create_new_backup(&db)?; // copies only what changed
/// backups.verify_backup(first)?;
/// backups.restore_db_from_backup(first, dir.path().join("restored"))?;
/// let restored = siftdb::Db::open(dir.path().join("restored"), siftdb::Options::default())?;
/// assert_eq!(restored.get("k")?, Some(b"v1".to_vec()));
/// backups.purge_old_backups(1)?; // keeps the newest
/// assert_eq!(backups.get_backup_info().len(), 1);
/// # Ok::<(), siftdb::Error>(())
/// ```
pub struct BackupEngine {
    dir: PathBuf,
    options: BackupEngineOptions,
    /// Every backup whose metadata reads back, by id.
    backups: BTreeMap<u32, BackupMeta>,
    /// Backups whose metadata is damaged: unusable, removed by the next purge.
    corrupt: BTreeMap<u32, Corruption>,
    /// The largest id this engine has seen or given (a deleted backup's id is not given
    /// again while the engine is open).
    last_id: u32,
    _lock: Box<dyn FileLock>,
}

impl std::fmt::Debug for BackupEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackupEngine")
            .field("dir", &self.dir)
            .field("backups", &self.backups.keys().collect::<Vec<_>>())
            .field("corrupt", &self.corrupt.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

const META: &str = "meta";
const SHARED: &str = "shared";
const PRIVATE: &str = "private";
const STAGING: &str = "staging";

impl BackupEngine {
    /// Opens (creating it if needed) the backup directory `dir` on the real file system.
    pub fn open(dir: impl AsRef<Path>) -> Result<BackupEngine> {
        BackupEngine::open_with(dir, BackupEngineOptions::default())
    }

    /// Opens (creating it if needed) the backup directory `dir`. Removes what interrupted
    /// backups and deletions left. `Error::Locked` if another engine has it open.
    pub fn open_with(dir: impl AsRef<Path>, options: BackupEngineOptions) -> Result<BackupEngine> {
        let dir = dir.as_ref().to_path_buf();
        let fs = options.fs.as_ref();
        for sub in [META, SHARED, PRIVATE, STAGING] {
            fs.create_dir_all(&dir.join(sub))?;
        }
        let lock = fs.lock(&dir.join(names::LOCK)).map_err(|e| {
            if e.kind() == std::io::ErrorKind::WouldBlock {
                Error::Locked(dir.clone())
            } else {
                Error::Io(e)
            }
        })?;
        let mut engine = BackupEngine {
            dir,
            options,
            backups: BTreeMap::new(),
            corrupt: BTreeMap::new(),
            last_id: 0,
            _lock: lock,
        };
        engine.load_metas()?;
        engine.last_id = engine.next_id()?.saturating_sub(1);
        engine.collect_garbage()?;
        Ok(engine)
    }

    /// Reads every backup's metadata; a damaged one is set aside as corrupt.
    fn load_metas(&mut self) -> Result<()> {
        let fs = Arc::clone(&self.options.fs);
        for name in fs.list(&self.dir.join(META))? {
            let Ok(id) = name.parse::<u32>() else {
                continue; // a `.tmp` of an interrupted write: garbage
            };
            let what = format!("{META}/{name}");
            let bytes = fs.read(&self.dir.join(&what))?;
            match BackupMeta::decode(&bytes, &what) {
                Ok(meta) if meta.id == id => {
                    self.backups.insert(id, meta);
                }
                Ok(_) => {
                    let c = Corruption::in_file(what, "names another backup id");
                    self.corrupt.insert(id, c);
                }
                Err(Error::Corruption(c)) => {
                    self.corrupt.insert(id, c);
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn fs(&self) -> &dyn FileSystem {
        self.options.fs.as_ref()
    }

    /// Backs up `db` (see [`BackupEngine::create_new_backup_with_metadata`]).
    pub fn create_new_backup(&mut self, db: &Db) -> Result<u32> {
        self.create_new_backup_with_metadata(db, "")
    }

    /// Backs up `db`: every write acknowledged before the call, none after (the point of
    /// `Db::checkpoint`); `app_metadata` is kept with it. Copies the tables and blob files no
    /// earlier backup holds, the WALs, options and a manifest. Returns the new backup's id.
    /// Writers are held up only while the backup's point is chosen.
    pub fn create_new_backup_with_metadata(&mut self, db: &Db, app_metadata: &str) -> Result<u32> {
        self.collect_garbage()?;
        let id = self.next_id()?;
        let staging = self.dir.join(STAGING);
        let mut shared = self.shared_index()?;
        let mut files = Vec::new();
        let sequence = db.engine().checkpoint_with(&staging, &mut |source| {
            files.push(self.store_immutable(db, id, source, &mut shared)?);
            Ok(())
        })?;
        files.extend(self.store_private(db, id)?);
        self.fs().sync_dir(&self.dir.join(SHARED))?;
        self.fs().sync_dir(&self.dir.join(PRIVATE))?;
        let meta = BackupMeta {
            id,
            timestamp: now_secs(),
            sequence,
            app_metadata: app_metadata.to_string(),
            files,
        };
        self.write_meta(&meta)?;
        self.backups.insert(id, meta);
        self.last_id = id;
        Ok(id)
    }

    /// The id after every backup's, corrupt ones included, and after every id this engine
    /// gave (RocksDB's rule: after a reopen, the id after the newest backup there).
    fn next_id(&self) -> Result<u32> {
        let newest = self
            .backups
            .keys()
            .chain(self.corrupt.keys())
            .max()
            .copied()
            .unwrap_or(0);
        newest
            .max(self.last_id)
            .checked_add(1)
            .ok_or_else(|| Error::InvalidArgument("backup ids are exhausted".to_string()))
    }

    /// The shared files, by database name: each with its sum and stored name.
    fn shared_index(&self) -> Result<HashMap<String, Vec<(Sum, String)>>> {
        let mut index: HashMap<String, Vec<(Sum, String)>> = HashMap::new();
        for stored in self.fs().list(&self.dir.join(SHARED))? {
            if let Some((name, sum)) = parse_shared_name(&stored) {
                index.entry(name).or_default().push((sum, stored));
            }
        }
        Ok(index)
    }

    /// Stores one table or blob file of `db` for backup `id`: in `shared/` (once: a file of
    /// that name and sum there already is reused) or, without sharing, in `private/`.
    fn store_immutable(
        &self,
        db: &Db,
        id: u32,
        source: &Path,
        shared: &mut HashMap<String, Vec<(Sum, String)>>,
    ) -> Result<BackupFile> {
        let name = file_name(source)?;
        let db_fs = db.engine().shared().fs().as_ref();
        if !self.options.share_table_files {
            let stored = format!("{PRIVATE}/{id:06}_{name}");
            let sum = self.copy_in(db_fs, source, &stored)?;
            return Ok(backup_file(stored, name, sum));
        }
        if let Some(candidates) = shared.get(&name) {
            // A file of this name is there: the same one only if its sum agrees.
            let sum = sum_of(db_fs, source)?;
            if let Some((_, stored)) = candidates.iter().find(|(s, _)| *s == sum) {
                return Ok(backup_file(format!("{SHARED}/{stored}"), name, sum));
            }
        }
        let tmp = format!("{SHARED}/{name}.tmp");
        let sum = self.copy_in(db_fs, source, &tmp)?;
        let stored = shared_name(&name, sum);
        self.fs()
            .rename(&self.dir.join(&tmp), &self.dir.join(SHARED).join(&stored))?;
        shared
            .entry(name.clone())
            .or_default()
            .push((sum, stored.clone()));
        Ok(backup_file(format!("{SHARED}/{stored}"), name, sum))
    }

    /// Copies `source` (read through `from`, the database's file system) to `stored` in the
    /// backup directory, synced.
    fn copy_in(&self, from: &dyn FileSystem, source: &Path, stored: &str) -> Result<Sum> {
        copy_summed((from, source), (self.fs(), &self.dir.join(stored)), None)
    }

    /// Copies the checkpoint's other files (WALs, options, manifest, `CURRENT`), which the
    /// database wrote into `staging/`, to `private/`, summed; empties `staging/`.
    fn store_private(&self, db: &Db, id: u32) -> Result<Vec<BackupFile>> {
        let db_fs = db.engine().shared().fs().as_ref();
        let staging = self.dir.join(STAGING);
        let mut out = Vec::new();
        for name in db_fs.list(&staging)? {
            let from = staging.join(&name);
            let stored = format!("{PRIVATE}/{id:06}_{name}");
            let sum = self.copy_in(db_fs, &from, &stored)?;
            db_fs.remove(&from)?;
            out.push(backup_file(stored, name, sum));
        }
        Ok(out)
    }

    /// Writes `meta` durably: from this point the backup exists.
    fn write_meta(&self, meta: &BackupMeta) -> Result<()> {
        let fs = self.fs();
        let meta_dir = self.dir.join(META);
        let tmp = meta_dir.join(format!("{}.tmp", meta.id));
        let mut file = fs.create(&tmp)?;
        std::io::Write::write_all(&mut file, &meta.encode())?;
        file.sync()?;
        drop(file);
        fs.rename(&tmp, &meta_dir.join(meta.id.to_string()))?;
        fs.sync_dir(&meta_dir)?;
        Ok(())
    }

    /// Every backup that reads back, oldest first.
    pub fn get_backup_info(&self) -> Vec<BackupInfo> {
        self.backups
            .values()
            .map(|m| BackupInfo {
                backup_id: m.id,
                timestamp: m.timestamp,
                size: m.files.iter().map(|f| f.size).sum(),
                number_files: u32::try_from(m.files.len()).unwrap_or(u32::MAX),
                sequence: m.sequence,
                app_metadata: m.app_metadata.clone(),
            })
            .collect()
    }

    /// The ids of backups whose metadata is damaged (they cannot be restored; the next
    /// [`BackupEngine::purge_old_backups`] removes them).
    pub fn get_corrupted_backups(&self) -> Vec<u32> {
        self.corrupt.keys().copied().collect()
    }

    fn backup(&self, id: u32) -> Result<&BackupMeta> {
        if let Some(c) = self.corrupt.get(&id) {
            return Err(Error::Corruption(c.clone()));
        }
        self.backups.get(&id).ok_or(Error::BackupNotFound(id))
    }

    /// Reads every file of backup `id` and checks its size and checksum against the
    /// metadata: a `Corruption` naming the first file that differs (or is missing).
    pub fn verify_backup(&self, id: u32) -> Result<()> {
        for f in &self.backup(id)?.files {
            let path = self.dir.join(&f.stored);
            let sum = sum_of(self.fs(), &path).map_err(|e| missing_as_corruption(e, &path))?;
            let expected = Sum {
                size: f.size,
                crc: f.crc,
            };
            if sum != expected {
                return Err(mismatch(&path, expected, sum));
            }
        }
        Ok(())
    }

    /// Restores the newest backup into `db_dir` (see [`BackupEngine::restore_db_from_backup`]).
    pub fn restore_db_from_latest_backup(&self, db_dir: impl AsRef<Path>) -> Result<()> {
        let id = *self.backups.keys().next_back().ok_or_else(|| {
            Error::InvalidArgument("the backup directory holds no backup".to_string())
        })?;
        self.restore_db_from_backup(id, db_dir)
    }

    /// Restores backup `id` into `db_dir`, which then opens as the database was at the
    /// backup's point. `db_dir` must not hold a database (a `CURRENT` file); what an
    /// interrupted restore left there is replaced. Every file is checked against its checksum
    /// as it is copied: a damaged backup is a `Corruption`, and what was copied is removed.
    /// `CURRENT` is written last, so an interrupted restore is never a database.
    pub fn restore_db_from_backup(&self, id: u32, db_dir: impl AsRef<Path>) -> Result<()> {
        let meta = self.backup(id)?;
        let db_dir = db_dir.as_ref();
        self.prepare_restore_dir(db_dir)?;
        let result = self.restore_files(meta, db_dir);
        if result.is_err() {
            for f in &meta.files {
                let _ = self.fs().remove(&db_dir.join(&f.name));
            }
        }
        result
    }

    /// Copies the backup's files into `db_dir`, `CURRENT` last (through a temporary name).
    fn restore_files(&self, meta: &BackupMeta, db_dir: &Path) -> Result<()> {
        let fs = self.fs();
        let (current, rest): (Vec<_>, Vec<_>) =
            meta.files.iter().partition(|f| f.name == names::CURRENT);
        for f in rest {
            self.restore_file(f, &db_dir.join(&f.name))?;
        }
        fs.sync_dir(db_dir)?;
        let Some(current) = current.first() else {
            return Err(Error::Corruption(Corruption::in_file(
                format!("{META}/{}", meta.id),
                "the backup names no CURRENT file",
            )));
        };
        let tmp = db_dir.join("CURRENT.tmp");
        self.restore_file(current, &tmp)?;
        fs.rename(&tmp, &db_dir.join(names::CURRENT))?;
        fs.sync_dir(db_dir)?;
        Ok(())
    }

    fn restore_file(&self, f: &BackupFile, to: &Path) -> Result<()> {
        let from = self.dir.join(&f.stored);
        let expected = Sum {
            size: f.size,
            crc: f.crc,
        };
        copy_summed((self.fs(), &from), (self.fs(), to), Some(expected))
            .map(|_| ())
            .map_err(|e| missing_as_corruption(e, &from))
    }

    /// Creates `db_dir` if needed; refuses one that holds a database or files siftdb did not
    /// write; removes the files an interrupted restore left.
    fn prepare_restore_dir(&self, db_dir: &Path) -> Result<()> {
        let fs = self.fs();
        fs.create_dir_all(db_dir)?;
        let entries = fs.list(db_dir)?;
        if entries.iter().any(|n| n == names::CURRENT) {
            return Err(Error::InvalidArgument(format!(
                "{} holds a database: restore into an empty directory",
                db_dir.display()
            )));
        }
        for name in &entries {
            use names::FileKind;
            match names::parse(name) {
                FileKind::Other if name == names::LOCK => {}
                FileKind::Other if name.starts_with(names::OPTIONS) => {
                    fs.remove(&db_dir.join(name))?
                }
                FileKind::Other => {
                    return Err(Error::InvalidArgument(format!(
                        "{} holds {name}, which siftdb did not write: restore into an empty \
                         directory",
                        db_dir.display()
                    )))
                }
                _ => fs.remove(&db_dir.join(name))?,
            }
        }
        Ok(())
    }

    /// Deletes backup `id`: its metadata first (from then on it does not exist), then the
    /// files no other backup names.
    pub fn delete_backup(&mut self, id: u32) -> Result<()> {
        if !self.backups.contains_key(&id) && !self.corrupt.contains_key(&id) {
            return Err(Error::BackupNotFound(id));
        }
        let meta_dir = self.dir.join(META);
        self.fs().remove(&meta_dir.join(id.to_string()))?;
        self.fs().sync_dir(&meta_dir)?;
        self.backups.remove(&id);
        self.corrupt.remove(&id);
        self.collect_garbage()
    }

    /// Deletes every corrupt backup and the oldest ones until `num_backups_to_keep` remain.
    pub fn purge_old_backups(&mut self, num_backups_to_keep: usize) -> Result<()> {
        for id in self.get_corrupted_backups() {
            self.delete_backup(id)?;
        }
        let excess = self.backups.len().saturating_sub(num_backups_to_keep);
        let oldest: Vec<u32> = self.backups.keys().take(excess).copied().collect();
        for id in oldest {
            self.delete_backup(id)?;
        }
        Ok(())
    }

    /// Removes every file no backup names: those of interrupted backups and deletions, and
    /// of deleted backups (RocksDB's `GarbageCollect`). Runs at open, before each backup and
    /// after each deletion. While a backup's metadata is corrupt, its files are kept: its
    /// private ones, and every shared one (which of them it names cannot be read).
    pub fn garbage_collect(&mut self) -> Result<()> {
        self.collect_garbage()
    }

    fn collect_garbage(&self) -> Result<()> {
        let fs = self.fs();
        let named: BTreeSet<&str> = self
            .backups
            .values()
            .flat_map(|m| &m.files)
            .map(|f| f.stored.as_str())
            .collect();
        // Which shared files a corrupt backup names cannot be read from its damaged metadata:
        // while one exists, no shared file is removed (they may be all a repair has).
        let keep_shared = !self.corrupt.is_empty();
        let kept_private = |name: &str| {
            // A corrupt backup's private files stay until it is deleted: its metadata might
            // be read by hand.
            name.split_once('_')
                .and_then(|(id, _)| id.parse::<u32>().ok())
                .is_some_and(|id| self.corrupt.contains_key(&id))
        };
        for sub in [SHARED, PRIVATE] {
            let dir = self.dir.join(sub);
            for name in fs.list(&dir)? {
                let stored = format!("{sub}/{name}");
                // An interrupted copy (`.tmp`) is never a backup's file, corrupt or not.
                let kept = named.contains(stored.as_str())
                    || (sub == SHARED && keep_shared && !name.ends_with(".tmp"))
                    || (sub == PRIVATE && kept_private(&name));
                if !kept {
                    fs.remove(&dir.join(&name))?;
                }
            }
        }
        for sub in [STAGING, META] {
            let dir = self.dir.join(sub);
            for name in fs.list(&dir)? {
                if sub == STAGING || name.parse::<u32>().is_err() {
                    fs.remove(&dir.join(&name))?;
                }
            }
        }
        Ok(())
    }
}

fn backup_file(stored: String, name: String, sum: Sum) -> BackupFile {
    BackupFile {
        stored,
        name,
        size: sum.size,
        crc: sum.crc,
    }
}

fn file_name(path: &Path) -> Result<String> {
    path.file_name()
        .and_then(|n| n.to_str())
        .map(str::to_string)
        .ok_or_else(|| Error::InvalidArgument(format!("{} has no file name", path.display())))
}

/// A backup file that is not there is a damaged backup, not an I/O failure.
fn missing_as_corruption(e: Error, path: &Path) -> Error {
    match e {
        Error::Io(io) if io.kind() == std::io::ErrorKind::NotFound => Error::Corruption(
            Corruption::in_file(path.display().to_string(), "missing from the backup"),
        ),
        e => e,
    }
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
