//! Opening a database, in phases: the directory and its lock, `OPTIONS`, the manifest, the live
//! tables, the WALs, and the commit that makes the recovered state one durable manifest; then
//! obsolete-file cleanup. A failure before the commit leaves the database as it was.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

use crate::batch;
use crate::db::{new_cache, DbInner, DbState, ReadView};
use crate::error::{Error, Result};
use crate::fs::names::{self, FileKind};
use crate::fs::{FileLock, FileSystem};
use crate::manifest;
use crate::memtable::Memtable;
use crate::options::Options;
use crate::options_file;
use crate::snapshot::SnapshotList;
use crate::stats::EngineCounters;
use crate::version::Version;
use crate::version_edit::{FileMeta, VersionEdit};
use crate::version_set::VersionSet;
use crate::wal::reader::{read_log, LogEnd};
use crate::wal::writer::LogWriter;
use crate::write::WriteQueue;

/// Opens or creates the database in `dir`.
pub(crate) fn open(dir: &Path, options: Options) -> Result<Arc<DbInner>> {
    options.validate()?;
    let fs = Arc::clone(&options.fs);
    let (entries, exists) = inspect_directory(fs.as_ref(), dir, &options)?;
    // Check the format before taking the lock or touching anything.
    let recorded = if exists {
        Some(options_file::check(fs.as_ref(), dir, &options)?)
    } else {
        None
    };
    let lock = lock_directory(fs.as_ref(), dir)?;
    options_file::update(fs.as_ref(), dir, recorded.as_ref(), &options)?;
    let manifest = if exists {
        replay_manifest(fs.as_ref(), dir)?
    } else {
        VersionEdit::default()
    };
    let inner = new_inner(dir, options, lock, &entries, &manifest);
    let version = Version::empty().apply(&manifest, |level, meta| {
        crate::flush::open_table(&inner, level, meta)
    })?;
    let wal_number = inner.versions.new_file_number();
    let log_number = manifest.log_number.unwrap_or(0);
    let wals = live_wals(&entries, log_number, wal_number);
    // The manifest's log number names the WAL of the oldest memtable not yet in a table; it
    // exists until a later edit moves past it. If it is gone, the manifest lost edits (e.g. it
    // was truncated) and the data they recorded is not where this manifest says.
    if log_number > 0 && exists && !wals.contains(&log_number) {
        return Err(Error::corruption(format!(
            "WAL {log_number:06}.log named by the manifest is missing"
        )));
    }
    let recovered = replay_wals(&inner, &wals, manifest.last_sequence.unwrap_or(0))?;
    commit(&inner, version, manifest.added, recovered, wal_number)?;
    delete_obsolete_files(&inner);
    Ok(inner)
}

/// Lists `dir` (creating it if allowed) and decides whether it holds a database (`CURRENT`), is
/// the leftover of a creation that never committed, or is something else.
fn inspect_directory(
    fs: &dyn FileSystem,
    dir: &Path,
    options: &Options,
) -> Result<(Vec<String>, bool)> {
    if !fs.exists(dir)? {
        if !options.create_if_missing {
            return Err(Error::InvalidArgument(format!(
                "{} does not exist",
                dir.display()
            )));
        }
        fs.create_dir_all(dir)?;
    }
    let entries = fs.list(dir).map_err(|e| Error::NotADatabase {
        path: dir.to_path_buf(),
        reason: format!("cannot list directory: {e}"),
    })?;
    let exists = entries.iter().any(|e| e == names::CURRENT);
    if exists {
        if options.error_if_exists {
            return Err(Error::InvalidArgument(format!(
                "database exists in {}",
                dir.display()
            )));
        }
        return Ok((entries, true));
    }
    // Without CURRENT, data can only exist if it was written after a successful open, which
    // leaves tables or logged writes behind: then CURRENT was lost (corruption). OPTIONS, a
    // manifest and empty logs alone are the leftovers of a creation that failed before its
    // commit point (CURRENT): nothing was ever acknowledged, so creation starts over.
    let holds_data = entries.iter().any(|e| match names::parse(e) {
        FileKind::Table(_) => true,
        FileKind::Wal(_) => fs
            .read(&dir.join(e))
            .map(|bytes| !bytes.is_empty())
            .unwrap_or(true),
        _ => false,
    });
    if holds_data {
        return Err(Error::corruption(format!(
            "{} holds siftdb data but no CURRENT",
            dir.display()
        )));
    }
    let creation_leftover = |e: &String| {
        e == names::OPTIONS
            || e == names::LOCK
            || matches!(
                names::parse(e),
                FileKind::Manifest(_) | FileKind::Wal(_) | FileKind::Temp
            )
    };
    if !entries.iter().all(creation_leftover) {
        return Err(Error::NotADatabase {
            path: dir.to_path_buf(),
            reason: "directory is not empty and holds no CURRENT file".to_string(),
        });
    }
    if !options.create_if_missing {
        return Err(Error::InvalidArgument(format!(
            "no database in {}",
            dir.display()
        )));
    }
    Ok((entries, false))
}

fn lock_directory(fs: &dyn FileSystem, dir: &Path) -> Result<Box<dyn FileLock>> {
    fs.lock(&dir.join(names::LOCK)).map_err(|e| {
        if e.kind() == std::io::ErrorKind::WouldBlock {
            Error::Locked(dir.to_path_buf())
        } else {
            Error::Io(e)
        }
    })
}

/// The manifest's edits folded into one: the live files and the last recorded counters.
fn replay_manifest(fs: &dyn FileSystem, dir: &Path) -> Result<VersionEdit> {
    let (_, edits) = manifest::recover(fs, dir)?;
    let mut merged = VersionEdit::default();
    let mut files: Vec<(usize, FileMeta)> = Vec::new();
    for e in edits {
        merged.log_number = e.log_number.or(merged.log_number);
        merged.next_file_number = e.next_file_number.or(merged.next_file_number);
        merged.last_sequence = e.last_sequence.or(merged.last_sequence);
        for d in &e.deleted {
            files.retain(|(l, f)| !(*l == d.0 && f.number == d.1));
        }
        files.extend(e.added);
    }
    merged.added = files;
    Ok(merged)
}

/// The shared state of the database being opened, with an empty tree and memtable.
fn new_inner(
    dir: &Path,
    options: Options,
    lock: Box<dyn FileLock>,
    entries: &[String],
    manifest: &VersionEdit,
) -> Arc<DbInner> {
    // WALs are created without a manifest edit, so files may exist with numbers at or above the
    // recorded next number: never hand those out again.
    let highest_on_disk = entries
        .iter()
        .filter_map(|e| match names::parse(e) {
            FileKind::Wal(n) | FileKind::Table(n) | FileKind::Manifest(n) => Some(n),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    let next_file_number = manifest
        .next_file_number
        .unwrap_or(1)
        .max(highest_on_disk + 1)
        .max(2);
    let last_sequence = manifest.last_sequence.unwrap_or(0);
    let mem = Arc::new(Memtable::new(0));
    Arc::new(DbInner {
        dir: dir.to_path_buf(),
        fs: Arc::clone(&options.fs),
        cache: new_cache(options.block_cache_capacity),
        counters: EngineCounters::default(),
        view: parking_lot::RwLock::new(Arc::new(ReadView {
            mem: Arc::clone(&mem),
            imm: Vec::new(),
            version: Arc::new(Version::empty()),
        })),
        state: Mutex::new(DbState {
            mem,
            imm: Vec::new(),
            wal: None,
            bg_error: None,
        }),
        versions: VersionSet::new(Version::empty(), next_file_number, last_sequence),
        state_changed: Condvar::new(),
        work_available: Condvar::new(),
        writes: WriteQueue::default(),
        visible_sequence: AtomicU64::new(last_sequence),
        snapshots: SnapshotList::default(),
        shutting_down: AtomicBool::new(false),
        background: Mutex::new(None),
        compaction_threads: Mutex::new(Vec::new()),
        compaction_lock: parking_lot::RwLock::new(()),
        lock: Mutex::new(Some(lock)),
        #[cfg(feature = "test-hooks")]
        sync_points: Default::default(),
        options,
    })
}

/// The WALs that may hold writes not yet in tables: numbered from `log_number` on (but the new
/// one about to be created), oldest first.
fn live_wals(entries: &[String], log_number: u64, new_wal: u64) -> Vec<u64> {
    let mut wals: Vec<u64> = entries
        .iter()
        .filter_map(|e| match names::parse(e) {
            FileKind::Wal(n) if n >= log_number && n != new_wal => Some(n),
            _ => None,
        })
        .collect();
    wals.sort_unstable();
    wals
}

/// What the WALs held: their writes in one memtable, and the last sequence number.
struct Recovered {
    mem: Memtable,
    last_sequence: u64,
}

/// Replays `wals` (oldest first) into one memtable.
///
/// A cut-off or damaged last record of the *newest* log is an unsynced write torn by a crash:
/// dropped (point-in-time recovery). Older logs were synced before the next one started, so
/// any damage there — or damage followed by valid records anywhere — means acknowledged writes
/// are gone, and replaying later logs would leave a hole: [`Error::Corruption`], or with
/// `paranoid_checks = false` recovery up to the damage.
fn replay_wals(db: &DbInner, wals: &[u64], manifest_last_sequence: u64) -> Result<Recovered> {
    let recovered = Recovered {
        mem: Memtable::new(0),
        last_sequence: manifest_last_sequence,
    };
    let mut replay = WalReplay {
        db,
        recovered,
        manifest_last_sequence,
        expected_next: None,
    };
    for (index, number) in wals.iter().enumerate() {
        let bytes = db.fs.read(&names::wal(&db.dir, *number))?;
        let last_log = index + 1 == wals.len();
        if !replay.log(*number, &bytes, last_log)? {
            break; // later logs would leave a hole
        }
    }
    Ok(replay.recovered)
}

/// The state of a WAL replay between logs.
struct WalReplay<'a> {
    db: &'a DbInner,
    recovered: Recovered,
    manifest_last_sequence: u64,
    /// The sequence the next record must start at (`None` before the first record).
    expected_next: Option<u64>,
}

impl WalReplay<'_> {
    /// Replays one log; returns whether the replay may go on to the next one.
    fn log(&mut self, number: u64, bytes: &[u8], last_log: bool) -> Result<bool> {
        let paranoid = self.db.options.paranoid_checks;
        let (records, end) = read_log(bytes);
        let damage = match &end {
            LogEnd::Clean => None,
            LogEnd::TornTail { offset } if last_log => {
                tracing::info!("siftdb: WAL {number:06}.log: torn tail at {offset} dropped");
                None
            }
            LogEnd::DamagedTail { offset, reason } if last_log => {
                tracing::warn!("siftdb: WAL {number:06}.log: damaged last record at {offset} dropped: {reason}");
                None
            }
            LogEnd::TornTail { offset } => Some((*offset, "cut off".to_string())),
            LogEnd::DamagedTail { offset, reason } | LogEnd::Corrupted { offset, reason } => {
                Some((*offset, reason.clone()))
            }
        };
        if let Some((offset, reason)) = &damage {
            if paranoid {
                return Err(Error::Corruption(crate::error::Corruption::at(
                    format!("{number:06}.log"),
                    *offset,
                    format!("WAL damaged before the end of the log: {reason}"),
                )));
            }
            tracing::warn!(
                "siftdb: WAL {number:06}.log damaged at {offset}: {reason}; recovering up to it"
            );
        }
        for record in &records {
            if !self.record(number, record)? {
                return Ok(false);
            }
        }
        Ok(damage.is_none())
    }

    /// Replays one record; returns whether it continued the log (records are missing if not).
    fn record(&mut self, number: u64, record: &[u8]) -> Result<bool> {
        let (seq, ops) = batch::decode(record).ok_or_else(|| {
            Error::corruption(format!("WAL {number:06}.log holds an undecodable batch"))
        })?;
        // Writes reach the logs in sequence order with consecutive numbers, so the records of
        // all logs form one unbroken run continuing the manifest's. A jump means records are
        // missing that no checksum can show (a log cut at a record boundary).
        let continues = match self.expected_next {
            Some(next) => seq == next,
            None => seq <= self.manifest_last_sequence + 1,
        };
        if !continues {
            let msg = format!(
                "WAL {number:06}.log: sequence {seq} does not continue the log (records are missing)"
            );
            if self.db.options.paranoid_checks {
                return Err(Error::corruption(msg));
            }
            tracing::warn!("siftdb: {msg}; recovering up to it");
            return Ok(false);
        }
        self.expected_next = Some(seq + ops.len() as u64);
        let mut s = seq;
        for op in ops {
            self.recovered.mem.insert(op.key, s, op.kind, op.value);
            s += 1;
        }
        self.recovered.last_sequence = self.recovered.last_sequence.max(s.saturating_sub(1));
        Ok(true)
    }
}

/// The commit point of an open: what the WALs held becomes an L0 table, the new WAL is created,
/// and a new manifest holding the whole version is written, synced and named by `CURRENT`. Only
/// then is anything old obsolete.
fn commit(
    db: &DbInner,
    mut version: Version,
    mut files: Vec<(usize, FileMeta)>,
    recovered: Recovered,
    wal_number: u64,
) -> Result<()> {
    if !recovered.mem.is_empty() {
        let number = db.versions.new_output();
        let plan = crate::filter_plan::for_flush(&db.options, &version, &recovered.mem);
        if let Some(file) = crate::flush::write_l0_table(db, &recovered.mem, number, plan)? {
            files.push((0, file.meta.clone()));
            let edit = VersionEdit {
                added: vec![(0, file.meta.clone())],
                ..VersionEdit::default()
            };
            version = version.apply(&edit, |_, _| Ok(Arc::clone(&file)))?;
        }
    }
    db.versions.set_last_sequence(recovered.last_sequence);
    // New WAL first, then the manifest that makes the old WALs obsolete.
    let wal_file = db.fs.create(&names::wal(&db.dir, wal_number))?;
    db.fs.sync_dir(&db.dir)?;
    let snapshot = VersionEdit {
        log_number: Some(wal_number),
        next_file_number: None, // filled in by `create_manifest`
        last_sequence: Some(recovered.last_sequence),
        added: files,
        deleted: Vec::new(),
    };
    db.versions.create_manifest(db, &snapshot)?;
    db.versions.install_recovered(version);
    let mut state = db.state.lock();
    state.wal = Some(LogWriter::new(wal_file));
    state.mem = Arc::new(Memtable::new(wal_number));
    db.publish_view(&state);
    db.visible_sequence.store(
        recovered.last_sequence,
        std::sync::atomic::Ordering::Release,
    );
    Ok(())
}

/// Deletes files no live state needs: WALs older than the oldest live memtable, manifests
/// other than the current one, tables in no version (orphans of an interrupted flush or
/// compaction), and temporary files. Failures are logged, not fatal.
pub(crate) fn delete_obsolete_files(db: &DbInner) {
    // List first, then look at the live state: a file created after the listing is not in it,
    // and every file in it was numbered before the state is read, so it is live, pending (being
    // written by a flush or compaction) or truly obsolete. The other order would delete outputs
    // created between the two steps.
    let Ok(entries) = db.fs.list(&db.dir) else {
        return;
    };
    let min_wal = {
        let state = db.state.lock();
        if state.bg_error.is_some() {
            // After a failed write the files on disk may be needed by a manifest edit whose
            // fate is unknown until the next open: delete nothing.
            return;
        }
        state
            .imm
            .first()
            .map_or(state.mem.wal_number(), |m| m.wal_number())
    };
    // Live tables and pending outputs are read together (`VersionSet::live_files`).
    let (live_tables, manifest) = db.versions.live_files();
    for name in entries {
        let obsolete = match names::parse(&name) {
            FileKind::Wal(n) => n < min_wal,
            FileKind::Table(n) => !live_tables.contains(&n),
            FileKind::Manifest(n) => manifest != 0 && n != manifest,
            // CURRENT and OPTIONS are only switched during open, before any background work.
            FileKind::Temp => true,
            FileKind::Other => false,
        };
        if obsolete {
            if let Err(e) = db.fs.remove(&db.dir.join(&name)) {
                tracing::warn!("siftdb: cannot delete obsolete {name}: {e}");
            }
        }
    }
}
