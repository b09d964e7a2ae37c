//! Opening a database, in phases: the directory and its lock, `OPTIONS`, the manifest (folded in
//! `manifest_state.rs`), every keyspace's live tables, the WALs (`wal_replay.rs`), and the commit
//! that makes the recovered state one durable manifest; then obsolete-file cleanup. A failure
//! before the commit leaves the database as it was, but for the L0 tables of memtables that
//! filled up during the WAL replay: orphans no manifest names, deleted by the next open. A
//! read-only open writes nothing, stops before the commit and keeps what the WALs held in
//! memory.
//!
//! The phases of [`open`], each refusing what it can before the next one writes anything:
//! 1. `Options::validate`, then `inspect_directory`: a non-empty directory without `CURRENT` is
//!    refused without a write (`NotADatabase`, or `Corruption` if it holds siftdb files);
//! 2. `options_file::check`: a newer format (`UnsupportedVersion`) or another filter hasher
//!    (`InvalidArgument`) is refused before anything is locked;
//! 3. `lock_directory`: `Locked` if another instance holds it;
//! 4. `ManifestState::read`: `CURRENT`, then the manifest's edits folded per keyspace. Damage is
//!    `Corruption`, never an empty database; a torn last record (an edit never acknowledged) is
//!    dropped;
//! 5. the live tables opened (`open_versions`); a WAL the manifest's log numbers name that is
//!    gone means lost edits: `Corruption`;
//! 6. `replay_wals`: the WALs from the smallest log number on, oldest first (`wal_replay.rs`);
//! 7. the merge operator checked against the operands the database holds, and only then
//!    `OPTIONS` rewritten (a refused open leaves it as it was);
//! 8. [`commit`]: what the replay left in memtables written as L0 tables, the new WAL created,
//!    a new manifest of every keyspace's version synced and named by `CURRENT` (on a full disk
//!    with nothing recovered, the old manifest stays current: `VersionSet::defer_manifest`);
//! 9. obsolete files deleted: old WALs and manifests, orphan tables, leftover temporary files.
//!
//! File numbers are never reused: the next is above every file on disk, not only above what the
//! manifest recorded (WALs are created without a manifest edit).
//!
//! A read-only open ([`open_read_only`]) takes no lock and writes nothing: manifest, listing,
//! tables and WALs are read into an engine whose memtables keep the WALs' writes. A file a
//! concurrent writer deleted in between (its compactions and flushes move on) makes the read
//! start over, a few times. The tables stay open, so the writer's later compactions do not
//! disturb the open. `catch_up.rs` repeats the same read later, against the same engine.

mod catch_up;
mod wal_replay;

pub(crate) use catch_up::catch_up_with_primary;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use crate::base::block_cache::new_table_cache;
use siftdb_cache::FalsePositiveMemo;

use crate::base::error::{Error, Result};
use crate::base::fs::names::{self, FileKind};
use crate::base::fs::{FileLock, FileSystem};
use crate::base::keyspace_options::parse_options_text;
use crate::base::options::Options;
use crate::base::options_file;
use crate::base::version_edit::VersionEdit;
use crate::base::wal::writer::LogWriter;
use crate::core::events::Events;
use crate::core::keyspace_tree::{KeyspaceMemtables, KeyspaceTree};
pub(crate) use crate::core::manifest_state::ManifestState;
use crate::core::memtable::Memtable;
use crate::core::shared::{Shared, SharedParts};
use crate::core::state::{DbState, StateCell};
use crate::core::version::Version;
use crate::core::version_set::{VersionSet, VersionSetContext};
use crate::jobs::obsolete::{delete_leftover_temp_files, delete_obsolete_files};
use crate::paths::engine::Engine;
use wal_replay::{replay_wals, Recovered};

/// Opens or creates the database in `dir`.
pub(crate) fn open(dir: &Path, options: Options) -> Result<(Engine, Box<dyn FileLock>)> {
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
    let manifest = if exists {
        ManifestState::read(fs.as_ref(), dir)?
    } else {
        ManifestState::new_database()
    };
    let engine = new_engine(dir, options, &entries, &manifest, false)?;
    let inner: &Shared = engine.shared();
    let mut versions = open_versions(inner, &manifest)?;
    let wal_number = inner.versions().new_file_number();
    let log_number = manifest.min_log_number();
    let wals = live_wals(&entries, log_number, wal_number);
    // The manifest's log numbers name the WAL of each keyspace's oldest memtable not yet in a
    // table; WALs from the smallest on exist until a later edit moves past it. If it is gone,
    // the manifest lost edits (e.g. it was truncated) and the data they recorded is not where
    // this manifest says.
    if log_number > 0 && exists && !wals.contains(&log_number) {
        return Err(Error::corruption(format!(
            "WAL {log_number:06}.log named by the manifest is missing"
        )));
    }
    // May write L0 tables (memtables that fill up during the replay): orphans until the commit.
    let recovered = replay_wals(inner, &wals, &manifest, &mut versions)?;
    if let Some(recorded) = &recorded {
        options_file::check_merge_operator(recorded, inner.options(), || {
            holds_merge_operands(&versions, &recovered)
        })?;
    }
    // Rewritten only now: a refused open leaves `OPTIONS` as it was.
    options_file::update(fs.as_ref(), dir, recorded.as_ref(), inner.options())?;
    commit(inner, versions, recovered, wal_number, &manifest)?;
    delete_obsolete_files(inner);
    delete_leftover_temp_files(inner);
    Ok((engine, lock))
}

/// Whether any table or recovered memtable holds a merge operand (the tables the replay
/// flushed are in `versions`).
fn holds_merge_operands(versions: &[(Arc<KeyspaceTree>, Version)], recovered: &Recovered) -> bool {
    recovered.mems.values().any(|m| m.merge_operands() > 0)
        || versions.iter().any(|(_, v)| {
            v.all()
                .any(|(_, f)| f.table.properties().merge_operands > 0)
        })
}

/// How often a read-only open starts over when a file it was about to read went away (a
/// writer compacted or flushed between the manifest and the file).
const READ_ONLY_ATTEMPTS: usize = 8;

/// Opens the database in `dir` read-only (see `Db::open_read_only`).
pub(crate) fn open_read_only(dir: &Path, options: Options) -> Result<Engine> {
    options.validate()?;
    retry_while_writer_moves(dir, || try_open_read_only(dir, &options))
}

/// Runs `attempt` until it succeeds, fails for a reason other than a file a writer replaced
/// meanwhile, or has run `READ_ONLY_ATTEMPTS` times.
fn retry_while_writer_moves<T>(dir: &Path, mut attempt: impl FnMut() -> Result<T>) -> Result<T> {
    let mut attempts = 0;
    loop {
        attempts += 1;
        match attempt() {
            // A file named by what was read first is gone: a writer moved on. Read again.
            Err(e) if attempts < READ_ONLY_ATTEMPTS && may_be_a_moving_writer(&e) => {
                tracing::debug!("siftdb: read-only read of {} retried: {e}", dir.display());
                std::thread::sleep(std::time::Duration::from_millis(5 << attempts.min(6)));
            }
            result => return result,
        }
    }
}

/// Whether `e` may come from reading files while a writer replaces them.
fn may_be_a_moving_writer(e: &Error) -> bool {
    match e {
        Error::Io(io) => io.kind() == std::io::ErrorKind::NotFound,
        // A table, WAL or manifest that the state read first names but that is gone now;
        // damaged bytes are reported at once.
        Error::Corruption(c) => c.reason().contains("missing"),
        _ => false,
    }
}

fn try_open_read_only(dir: &Path, options: &Options) -> Result<Engine> {
    let fs = Arc::clone(&options.fs);
    if !fs.exists(&dir.join(names::CURRENT))? {
        return Err(Error::InvalidArgument(format!(
            "no database in {}",
            dir.display()
        )));
    }
    let recorded = options_file::check(fs.as_ref(), dir, options)?;
    // The manifest first, then the listing: every WAL the manifest's log numbers need is then
    // in the listing, unless a writer deleted it meanwhile (then this attempt fails).
    let manifest = ManifestState::read(fs.as_ref(), dir)?;
    let entries = fs.list(dir)?;
    let engine = new_engine(dir, options.clone(), &entries, &manifest, true)?;
    let read = read_tables_and_wals(engine.shared(), &manifest, &entries)?;
    options_file::check_merge_operator(&recorded, options, || {
        holds_merge_operands(&read.versions, &read.recovered)
    })?;
    install_read_state(engine.shared(), read);
    Ok(engine)
}

/// What a read-only open (or a secondary's catch-up) read: every keyspace's version, the
/// memtables the live WALs fill, and the log number those WALs start at.
struct ReadState {
    versions: Vec<(Arc<KeyspaceTree>, Version)>,
    recovered: Recovered,
    log_number: u64,
}

/// Opens the tables `manifest` names and replays the live WALs of `entries` into memtables,
/// writing nothing (the replay keeps every recovered write in memory).
fn read_tables_and_wals(
    inner: &Shared,
    manifest: &ManifestState,
    entries: &[String],
) -> Result<ReadState> {
    let mut versions = open_versions(inner, manifest)?;
    let log_number = manifest.min_log_number();
    let wals = live_wals(entries, log_number, u64::MAX);
    if log_number > 0 && !wals.contains(&log_number) {
        return Err(Error::corruption(format!(
            "WAL {log_number:06}.log named by the manifest is missing"
        )));
    }
    let recovered = replay_wals(inner, &wals, manifest, &mut versions)?;
    Ok(ReadState {
        versions,
        recovered,
        log_number,
    })
}

/// Makes `read` what readers see. The sequence is published before the views: a reader loads
/// its view first, then the sequence, so it never pairs a new view (whose tables may have lost
/// versions older than the writer's oldest snapshot) with an older sequence.
fn install_read_state(inner: &Shared, read: ReadState) {
    let last = read.recovered.last_sequence;
    inner.versions().set_last_sequence(last);
    inner.versions().publish_sequence(last);
    let mut mems = read.recovered.mems;
    let mut state = inner.state().lock();
    for (tree, version) in read.versions {
        inner
            .versions()
            .install_recovered(&tree, version, read.log_number);
        if let Some(t) = state.trees.get_mut(&tree.id) {
            // A keyspace the writer dropped meanwhile has no memtable left: it reads empty.
            t.mem = Arc::new(mems.remove(&tree.id).unwrap_or_else(|| Memtable::new(0)));
        }
        inner.versions().publish_view(&state, tree.id);
    }
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
        FileKind::Table(_) | FileKind::Blob(_) => true,
        FileKind::Wal(_) => wal_replay::open_if_written(fs, &dir.join(e))
            .map(|input| input.is_some())
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

/// The options keyspace `id` of `manifest` runs with: "default" the tree fields of `options`;
/// another those given in `Options::keyspaces`, else those recorded at its creation.
fn tree_options(options: &Options, id: u32, name: &str, recorded: Option<&str>) -> Result<Options> {
    if id == 0 {
        return Ok(options.clone());
    }
    if let Some((_, given)) = options.keyspaces.iter().find(|(n, _)| n == name) {
        return Ok(given.apply_to(options));
    }
    let damaged =
        |e: String| Error::corruption(format!("recorded options of keyspace {name:?}: {e}"));
    let tree = parse_options_text(recorded.unwrap_or(""))
        .map_err(damaged)?
        .apply_to(options);
    // Recorded options were valid when written: options that cannot work are damage.
    tree.validate().map_err(|e| damaged(e.to_string()))?;
    Ok(tree)
}

/// The engine of the database being opened, with every keyspace of `manifest` as an empty tree.
fn new_engine(
    dir: &Path,
    options: Options,
    entries: &[String],
    manifest: &ManifestState,
    read_only: bool,
) -> Result<Engine> {
    let trees = empty_trees(&options, manifest)?;
    let default = trees
        .get(&0)
        .map(|t| Arc::clone(&t.tree))
        .ok_or_else(|| Error::corruption("the manifest holds no \"default\" keyspace"))?;
    // A read-only open runs no background work: nothing to announce.
    let events = if read_only {
        Events::default()
    } else {
        Events::start(&options.listeners)?
    };
    let mut db_state = DbState::new(trees);
    db_state.events = events.clone();
    let state = Arc::new(StateCell::new(db_state));
    let versions = VersionSet::new(
        VersionSetContext {
            state: Arc::clone(&state),
            fs: Arc::clone(&options.fs),
            dir: dir.to_path_buf(),
            max_manifest_file_size: options.max_manifest_file_size,
            clock: Arc::clone(&options.clock),
        },
        next_file_number(entries, manifest),
        manifest.last_sequence,
        manifest.next_keyspace_id,
    );
    let shared = Shared::new(SharedParts {
        dir: dir.to_path_buf(),
        cache: match &options.block_cache {
            Some(shared) => Arc::clone(shared.table_cache()),
            None => new_table_cache(options.block_cache_capacity, options.block_cache_admission),
        },
        memo: (options.false_positive_memo_bytes > 0)
            .then(|| Arc::new(FalsePositiveMemo::new(options.false_positive_memo_bytes))),
        state,
        versions,
        read_only,
        events,
        options,
    });
    Ok(Engine::new(Arc::new(shared), default))
}

/// The first file number to hand out. WALs are created without a manifest edit, so files may
/// exist with numbers at or above the recorded next number: never hand those out again.
fn next_file_number(entries: &[String], manifest: &ManifestState) -> u64 {
    let highest_on_disk = entries
        .iter()
        .filter_map(|e| match names::parse(e) {
            FileKind::Wal(n) | FileKind::Table(n) | FileKind::Blob(n) | FileKind::Manifest(n) => {
                Some(n)
            }
            _ => None,
        })
        .max()
        .unwrap_or(0);
    manifest
        .next_file_number
        .unwrap_or(1)
        .max(highest_on_disk + 1)
        .max(2)
}

/// Every keyspace of `manifest` as a tree with an empty memtable, with the options it runs with.
fn empty_trees(
    options: &Options,
    manifest: &ManifestState,
) -> Result<BTreeMap<u32, KeyspaceMemtables>> {
    let mut trees = BTreeMap::new();
    for (id, k) in &manifest.keyspaces {
        let opts = tree_options(options, *id, &k.name, k.options_text.as_deref())?;
        let mem = Arc::new(Memtable::new(0));
        let tree = Arc::new(KeyspaceTree::new(*id, &k.name, opts, Arc::clone(&mem)));
        trees.insert(
            *id,
            KeyspaceMemtables {
                tree,
                mem,
                imm: Vec::new(),
            },
        );
    }
    Ok(trees)
}

/// Every keyspace's tree as the manifest describes it, with its tables open.
fn open_versions(
    db: &Shared,
    manifest: &ManifestState,
) -> Result<Vec<(Arc<KeyspaceTree>, Version)>> {
    let trees: Vec<Arc<KeyspaceTree>> = {
        let state = db.state().lock();
        state.trees.values().map(|t| Arc::clone(&t.tree)).collect()
    };
    trees
        .into_iter()
        .map(|tree| {
            let recorded = manifest.keyspaces.get(&tree.id);
            let edit = VersionEdit {
                added: recorded.map(|k| k.files.clone()).unwrap_or_default(),
                blob_files: recorded
                    .map(|k| k.blob_files.values().copied().collect())
                    .unwrap_or_default(),
                ..VersionEdit::default()
            };
            let version = Version::empty().apply(
                &edit,
                |level, meta| crate::jobs::table_io::open_table(db, &tree.options(), level, meta),
                |meta| crate::jobs::blob_io::open_blob_file(db, meta),
            )?;
            Ok((tree, version))
        })
        .collect()
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

/// The commit point of an open: what the WALs held becomes L0 tables (the memtables left by the
/// replay are flushed here, joining the tables it flushed when memtables filled up), the new
/// WAL is created,
/// and a new manifest holding every keyspace's version is written, synced and named by
/// `CURRENT`. Only then is anything old obsolete.
///
/// On a full disk, an open that had nothing to write (the WALs held nothing) still opens: the
/// manifest it read stays current, with its log numbers (so the old, empty WALs stay too), and
/// the first edit starts the new manifest once there is room. Writes fail cleanly meanwhile,
/// and [`Db::resume`](crate::Db::resume) clears that once space is freed.
fn commit(
    db: &Shared,
    versions: Vec<(Arc<KeyspaceTree>, Version)>,
    recovered: Recovered,
    wal_number: u64,
    manifest: &ManifestState,
) -> Result<()> {
    let mut mems = recovered.mems;
    let nothing_recovered = recovered.tables_written == 0 && mems.values().all(Memtable::is_empty);
    let mut trees = Vec::with_capacity(versions.len());
    for (tree, version) in versions {
        let version = match mems.remove(&tree.id) {
            Some(mem) => flush_recovered(db, &tree, version, &mem)?,
            None => version,
        };
        trees.push((tree, version));
    }
    db.versions().set_last_sequence(recovered.last_sequence);
    // New WAL first, then the manifest that makes the old WALs obsolete.
    let wal_file = db.create_wal(wal_number)?;
    db.fs().sync_dir(db.dir())?;
    let first_sequence = recovered.last_sequence + 1;
    let snapshot =
        crate::core::version_set::snapshot_edits(&trees, recovered.last_sequence, |_| {
            (wal_number, Some(first_sequence))
        });
    let deferred = match db.versions().create_manifest(&snapshot) {
        Ok(()) => false,
        Err(e) if nothing_recovered && manifest.number > 0 && is_no_space(&e) => {
            tracing::warn!(
                "siftdb: no space for a new manifest at open ({e}); keeping MANIFEST-{:06} until there is",
                manifest.number
            );
            db.versions().defer_manifest(manifest.number);
            true
        }
        Err(e) => return Err(e),
    };
    let mut state = db.state().lock();
    state.wal = Some(LogWriter::new(wal_file));
    state.wal_number = wal_number;
    state.wal_starts.insert(wal_number, first_sequence);
    if deferred {
        state
            .wal_starts
            .extend(manifest.wal_starts.iter().map(|(n, s)| (*n, *s)));
    }
    for (tree, version) in trees {
        let log_number = match manifest.keyspaces.get(&tree.id) {
            Some(k) if deferred => k.log_number,
            _ => wal_number,
        };
        db.versions().install_recovered(&tree, version, log_number);
        if let Some(t) = state.trees.get_mut(&tree.id) {
            t.mem = Arc::new(Memtable::for_keyspace(wal_number, &tree.options()));
        }
        db.versions().publish_view(&state, tree.id);
    }
    db.versions().publish_sequence(recovered.last_sequence);
    Ok(())
}

fn is_no_space(e: &Error) -> bool {
    e.io_kind() == Some(std::io::ErrorKind::StorageFull)
}

/// `version` of `tree` with what the WALs held for it (`mem`) written as an L0 table.
fn flush_recovered(
    db: &Shared,
    tree: &KeyspaceTree,
    version: Version,
    mem: &Memtable,
) -> Result<Version> {
    if mem.is_empty() {
        return Ok(version);
    }
    let number = db.versions().new_output();
    let plan = crate::core::filter_plan::for_flush(&tree.options(), &version, mem);
    match crate::jobs::table_io::write_l0_table(db, &tree.options(), tree.id, mem, number, plan)? {
        Some(flushed) => {
            let edit = VersionEdit {
                added: vec![(0, flushed.table.meta.clone())],
                blob_files: flushed.blob_metas(),
                ..VersionEdit::default()
            };
            version.apply(
                &edit,
                |_, _| Ok(Arc::clone(&flushed.table)),
                |meta| {
                    let found = flushed.blobs.iter().find(|b| b.meta.number == meta.number);
                    found.cloned().ok_or_else(|| {
                        Error::corruption(format!("unknown blob file {}", meta.number))
                    })
                },
            )
        }
        None => Ok(version),
    }
}
