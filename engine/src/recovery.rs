//! Opening a database: creation, recovery from manifest and WALs, obsolete-file cleanup.

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

use crate::batch;
use crate::db::{new_cache, DbInner, DbState, ReadView};
use crate::error::{Error, Result};
use crate::fs::names::{self, FileKind};
use crate::fs::FileSystem;
use crate::manifest::{self, Manifest};
use crate::memtable::Memtable;
use crate::options::Options;
use crate::snapshot::SnapshotList;
use crate::stats::EngineCounters;
use crate::version::Version;
use crate::version_edit::VersionEdit;
use crate::wal::reader::{read_log, LogEnd};
use crate::wal::writer::LogWriter;
use crate::write::WriteQueue;

/// The database format version this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// What `OPTIONS` records: the settings that shape on-disk data.
#[derive(Debug, Clone, PartialEq, Eq)]
struct RecordedOptions {
    format_version: u32,
    filter_hash: String,
    filter_seed_tag: u64,
    prefix_extractor: String,
}

impl RecordedOptions {
    fn of(options: &Options) -> RecordedOptions {
        RecordedOptions {
            format_version: FORMAT_VERSION,
            filter_hash: format!("{:?}", options.filter_hasher.id()),
            filter_seed_tag: options.filter_hasher.seed_tag(),
            prefix_extractor: options
                .prefix_extractor
                .as_ref()
                .map_or_else(|| "none".to_string(), |p| p.name()),
        }
    }

    fn encode(&self) -> String {
        format!(
            "# siftdb options that shape on-disk data\nformat_version={}\nfilter_hash={}\nfilter_seed_tag={}\nprefix_extractor={}\n",
            self.format_version, self.filter_hash, self.filter_seed_tag, self.prefix_extractor
        )
    }

    fn decode(text: &str) -> Option<RecordedOptions> {
        let mut r = RecordedOptions {
            format_version: 0,
            filter_hash: String::new(),
            filter_seed_tag: 0,
            prefix_extractor: String::new(),
        };
        for line in text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
        {
            let (k, v) = line.split_once('=')?;
            match k {
                "format_version" => r.format_version = v.parse().ok()?,
                "filter_hash" => r.filter_hash = v.to_string(),
                "filter_seed_tag" => r.filter_seed_tag = v.parse().ok()?,
                "prefix_extractor" => r.prefix_extractor = v.to_string(),
                _ => {} // written by a newer build; the version check decides
            }
        }
        (r.format_version > 0).then_some(r)
    }
}

fn write_options_file(fs: &dyn FileSystem, dir: &Path, recorded: &RecordedOptions) -> Result<()> {
    use std::io::Write;
    let tmp = dir.join("OPTIONS.tmp");
    let mut f = fs.create(&tmp)?;
    f.write_all(recorded.encode().as_bytes())?;
    f.sync()?;
    drop(f);
    fs.rename(&tmp, &dir.join(names::OPTIONS))?;
    fs.sync_dir(dir)?;
    Ok(())
}

/// Opens or creates the database in `dir`.
pub(crate) fn open(dir: &Path, options: Options) -> Result<Arc<DbInner>> {
    let fs = Arc::clone(&options.fs);
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
    let has = |name: &str| entries.iter().any(|e| e == name);
    let exists = has(names::CURRENT);
    if !exists {
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
        let creation_leftover = |e: &String| {
            e == names::OPTIONS
                || e == names::LOCK
                || matches!(
                    names::parse(e),
                    FileKind::Manifest(_) | FileKind::Wal(_) | FileKind::Temp
                )
        };
        let foreign = entries.iter().any(|e| !creation_leftover(e));
        if holds_data {
            return Err(Error::Corruption(format!(
                "{} holds siftdb data but no CURRENT",
                dir.display()
            )));
        }
        if foreign {
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
    } else if options.error_if_exists {
        return Err(Error::InvalidArgument(format!(
            "database exists in {}",
            dir.display()
        )));
    }
    // Check the format before taking the lock or touching anything.
    let wanted = RecordedOptions::of(&options);
    let recorded = if exists {
        let text = fs
            .read(&dir.join(names::OPTIONS))
            .map_err(|e| Error::Corruption(format!("cannot read OPTIONS: {e}")))?;
        let recorded = RecordedOptions::decode(&String::from_utf8_lossy(&text))
            .ok_or_else(|| Error::Corruption("OPTIONS is unreadable".to_string()))?;
        if recorded.format_version > FORMAT_VERSION {
            return Err(Error::UnsupportedVersion {
                found: recorded.format_version,
                supported: FORMAT_VERSION,
            });
        }
        if recorded.filter_hash != wanted.filter_hash
            || recorded.filter_seed_tag != wanted.filter_seed_tag
        {
            // Every table's filter was built with the recorded hasher; reading them with another
            // would give false negatives.
            return Err(Error::InvalidArgument(format!(
                "filter_hasher differs from the one the database was created with ({} seed tag {:#x})",
                recorded.filter_hash, recorded.filter_seed_tag
            )));
        }
        Some(recorded)
    } else {
        None
    };
    let lock = fs.lock(&dir.join(names::LOCK)).map_err(|e| {
        if e.kind() == std::io::ErrorKind::WouldBlock {
            Error::Locked(dir.to_path_buf())
        } else {
            Error::Io(e)
        }
    })?;
    match &recorded {
        None => write_options_file(fs.as_ref(), dir, &wanted)?,
        Some(r) if r.prefix_extractor != wanted.prefix_extractor => {
            // Safe: each table records its extractor and prefix filters of other extractors are
            // never consulted. Logged, never silently ignored.
            tracing::warn!(
                "siftdb: prefix extractor changed from {} to {}; prefix filters of older tables will not be used",
                r.prefix_extractor,
                wanted.prefix_extractor
            );
            write_options_file(fs.as_ref(), dir, &wanted)?;
        }
        Some(_) => {}
    }

    let cache = new_cache(options.block_cache_capacity);
    let counters = EngineCounters::default();
    let mut snapshot = if exists {
        let (_, edits) = manifest::recover(fs.as_ref(), dir)?;
        let mut merged = VersionEdit::default();
        let mut files: Vec<(usize, crate::version_edit::FileMeta)> = Vec::new();
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
        merged
    } else {
        VersionEdit::default()
    };
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
    let mut next_file_number = snapshot
        .next_file_number
        .unwrap_or(1)
        .max(highest_on_disk + 1)
        .max(2);
    let mut last_sequence = snapshot.last_sequence.unwrap_or(0);
    let log_number = snapshot.log_number.unwrap_or(0);

    // Numbers for the new manifest and WAL; both files are created only once recovery has
    // succeeded, so a failed open leaves the database as it was.
    let new_manifest_number = next_file_number;
    next_file_number += 1;
    let wal_number = next_file_number;
    next_file_number += 1;
    let first_mem = Arc::new(Memtable::new(wal_number));
    let inner = Arc::new(DbInner {
        dir: dir.to_path_buf(),
        fs: Arc::clone(&fs),
        cache,
        counters,
        view: parking_lot::RwLock::new(Arc::new(ReadView {
            mem: Arc::clone(&first_mem),
            imm: Vec::new(),
            version: Arc::new(Version::empty()),
        })),
        state: Mutex::new(DbState {
            mem: first_mem,
            imm: Vec::new(),
            wal: None,
            version: Arc::new(Version::empty()),
            manifest: None,
            next_file_number,
            last_sequence,
            bg_error: None,
            pending_outputs: Vec::new(),
            compact_cursors: vec![Vec::new(); crate::options::MAX_LEVELS],
            compacting: Vec::new(),
        }),
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
    });
    // Open the live tables.
    let version = Version::empty().apply(&snapshot, |level, meta| {
        crate::flush::open_table(&inner, level, meta)
    })?;
    // Replay WALs not yet in tables, oldest first, into one memtable.
    let mut wals: Vec<u64> = entries
        .iter()
        .filter_map(|e| match names::parse(e) {
            FileKind::Wal(n) if n >= log_number && n != wal_number => Some(n),
            _ => None,
        })
        .collect();
    wals.sort_unstable();
    // The manifest's log number names the WAL of the oldest memtable not yet in a table; it
    // exists until a later edit moves past it. If it is gone, the manifest lost edits (e.g. it
    // was truncated) and the data they recorded is not where this manifest says.
    if log_number > 0 && exists && !wals.contains(&log_number) {
        return Err(Error::Corruption(format!(
            "WAL {log_number:06}.log named by the manifest is missing"
        )));
    }
    let recovered = Memtable::new(0);
    let manifest_last_sequence = last_sequence;
    let mut expected_next: Option<u64> = None;
    let mut gap = false;
    for (index, number) in wals.iter().enumerate() {
        let bytes = fs.read(&names::wal(dir, *number))?;
        let (records, end) = read_log(&bytes);
        let last_log = index + 1 == wals.len();
        // A cut-off or damaged last record of the *newest* log is an unsynced write torn by a
        // crash: dropped (point-in-time recovery). Older logs were synced before the next one
        // started, so any damage there — or damage followed by valid records anywhere — means
        // acknowledged writes are gone, and replaying later logs would leave a hole.
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
            if inner.options.paranoid_checks {
                return Err(Error::Corruption(format!(
                    "WAL {number:06}.log damaged at offset {offset} before the end of the log: {reason}"
                )));
            }
            tracing::warn!(
                "siftdb: WAL {number:06}.log damaged at {offset}: {reason}; recovering up to it"
            );
        }
        for record in &records {
            let (seq, ops) = batch::decode(record).ok_or_else(|| {
                Error::Corruption(format!("WAL {number:06}.log holds an undecodable batch"))
            })?;
            // Writes reach the logs in sequence order with consecutive numbers, so the records
            // of all logs form one unbroken run continuing the manifest's. A jump means records
            // are missing that no checksum can show (a log cut at a record boundary).
            let continues = match expected_next {
                Some(next) => seq == next,
                None => seq <= manifest_last_sequence + 1,
            };
            if !continues {
                let msg = format!(
                    "WAL {number:06}.log: sequence {seq} does not continue the log (records are missing)"
                );
                if inner.options.paranoid_checks {
                    return Err(Error::Corruption(msg));
                }
                tracing::warn!("siftdb: {msg}; recovering up to it");
                gap = true;
                break;
            }
            expected_next = Some(seq + ops.len() as u64);
            let mut s = seq;
            for op in ops {
                recovered.insert(op.key, s, op.kind, op.value);
                s += 1;
            }
            last_sequence = last_sequence.max(s.saturating_sub(1));
        }
        if damage.is_some() || gap {
            break; // later logs would leave a hole
        }
    }
    let mut version = version;
    {
        let mut state = inner.state.lock();
        if !recovered.is_empty() {
            let number = state.new_file_number();
            let bits = inner.options.filter_bits_per_key;
            drop(state);
            let file = crate::flush::write_l0_table(&inner, &recovered, number, bits)?;
            state = inner.state.lock();
            if let Some(file) = file {
                snapshot.added.push((0, file.meta.clone()));
                version = version.apply(
                    &VersionEdit {
                        added: vec![(0, file.meta.clone())],
                        ..VersionEdit::default()
                    },
                    |_, _| Ok(Arc::clone(&file)),
                )?;
            }
        }
        state.last_sequence = last_sequence;
        // The recovered state becomes one durable edit in the new manifest; the WALs it came
        // from are obsolete once it is synced.
        let edit = VersionEdit {
            log_number: Some(wal_number),
            next_file_number: Some(state.next_file_number),
            last_sequence: Some(last_sequence),
            added: snapshot.added.clone(),
            deleted: Vec::new(),
        };
        // New WAL first, then the manifest that makes the old WALs obsolete.
        let wal_file = fs.create(&names::wal(dir, wal_number))?;
        fs.sync_dir(dir)?;
        state.wal = Some(LogWriter::new(wal_file));
        state.manifest = Some(Manifest::create(
            fs.as_ref(),
            dir,
            new_manifest_number,
            &edit,
        )?);
        state.version = Arc::new(version);
        inner.publish_view(&state);
        inner
            .visible_sequence
            .store(last_sequence, std::sync::atomic::Ordering::Release);
    }
    delete_obsolete_files(&inner);
    Ok(inner)
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
    let (live_tables, min_wal, manifest, pending) = {
        let state = db.state.lock();
        if state.bg_error.is_some() {
            // After a failed write the files on disk may be needed by a manifest edit whose
            // fate is unknown until the next open: delete nothing.
            return;
        }
        let live: HashSet<u64> = state.version.all().map(|(_, f)| f.meta.number).collect();
        let min_wal = state
            .imm
            .first()
            .map_or(state.mem.wal_number(), |m| m.wal_number());
        let manifest = state.manifest.as_ref().map_or(0, Manifest::number);
        (live, min_wal, manifest, state.pending_outputs.clone())
    };
    for name in entries {
        let obsolete = match names::parse(&name) {
            FileKind::Wal(n) => n < min_wal,
            FileKind::Table(n) => !live_tables.contains(&n) && !pending.contains(&n),
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
