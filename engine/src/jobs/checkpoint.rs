//! Online checkpoints (RocksDB's `Checkpoint::CreateCheckpoint`): a consistent copy of the
//! database in another directory, which opens as an ordinary database.
//!
//! 1. File deletions are paused, so nothing the checkpoint names can go before it is copied.
//! 2. With write groups held off (no I/O meanwhile, so no writer waits longer than a memtable
//!    switch would make it), the checkpoint's point is chosen under the state lock: the visible
//!    sequence number, the WAL being appended and its length, and per keyspace its version and
//!    the oldest WAL its memtables need. Nothing after that point is in any of them: every
//!    table holds only writes of frozen memtables, and the WAL is cut at the last group.
//! 3. Outside every lock: table files are hard-linked (copied where the target is on another
//!    file system); the WALs from the oldest needed one are copied, the active one up to the
//!    recorded length; `OPTIONS` is written, then a fresh manifest naming it all, then `CURRENT`.
//!
//! Opening the checkpoint replays its WALs as after a crash: it holds every write acknowledged
//! before the call and none acknowledged after it.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::base::error::{BackgroundError, BackgroundJob, Error, Result};
use crate::base::fs::names;
use crate::base::options_file::{write_options_file, RecordedOptions};
use crate::core::keyspace_tree::KeyspaceTree;
use crate::core::manifest::Manifest;
use crate::core::shared::Shared;
use crate::core::version::Version;
use crate::core::write_queue::WriteQueue;

/// What the checkpoint holds, chosen at one point.
struct Point {
    sequence: u64,
    /// The WAL being appended and its length at the point.
    wal: (u64, u64),
    /// Every WAL the keyspaces need, oldest first (the active one last).
    wals: Vec<u64>,
    /// Per keyspace: its version and the oldest WAL its memtables need.
    trees: Vec<(Arc<KeyspaceTree>, Arc<Version>, u64)>,
    /// Where those WALs start (see `DbState::wal_starts`).
    wal_starts: std::collections::BTreeMap<u64, u64>,
}

/// Pauses file deletions while it lives; then deletes what became obsolete meanwhile.
struct DeletionsPaused<'a>(&'a Shared);

impl<'a> DeletionsPaused<'a> {
    fn new(db: &'a Shared) -> Self {
        // A cleanup that passed its pause check before this finishes first.
        db.deletions().pause();
        DeletionsPaused(db)
    }
}

impl Drop for DeletionsPaused<'_> {
    fn drop(&mut self) {
        self.0.deletions().resume();
        crate::jobs::obsolete::delete_obsolete_files(self.0);
    }
}

/// Writes the checkpoint of `db` into `target` (see the module documentation).
pub(crate) fn checkpoint(db: &Shared, writes: &WriteQueue, target: &Path) -> Result<()> {
    checkpoint_with(db, writes, target, &mut |source| {
        link_or_copy(db, source, target)
    })?;
    Ok(())
}

/// A checkpoint whose immutable files (tables and blob files) go where `place` puts them,
/// each named by its path in the database (`place` runs while deletions are paused, so the
/// file is there); the rest (WALs, `OPTIONS`, manifest, `CURRENT`) is written into `target`.
/// A backup keeps the immutable files apart, shared between backups (RocksDB's custom
/// checkpoint). Returns the checkpoint's sequence number.
pub(crate) fn checkpoint_with(
    db: &Shared,
    writes: &WriteQueue,
    target: &Path,
    place: &mut dyn FnMut(&Path) -> Result<()>,
) -> Result<u64> {
    prepare_target(db, target)?;
    let _paused = DeletionsPaused::new(db);
    let point = writes.exclusive(|| choose_point(db))?;
    crate::base::sync_point::sync_point!(db, crate::base::sync_point::CHECKPOINT_POINT_CHOSEN);
    for (_, version, _) in &point.trees {
        for number in version.blob_files().keys() {
            place(&names::blob(db.dir(), *number))?;
        }
        for (_, f) in version.all() {
            place(&names::table(db.dir(), f.meta.number))?;
        }
    }
    copy_wals(db, &point, target)?;
    write_options_file(db.fs().as_ref(), target, &RecordedOptions::of(db.options()))?;
    write_manifest(db, &point, target)?;
    db.counters().checkpoints.fetch_add(1, Ordering::Relaxed);
    Ok(point.sequence)
}

/// `target` must be new or an empty directory; it is created with its parents.
fn prepare_target(db: &Shared, target: &Path) -> Result<()> {
    let fs = db.fs().as_ref();
    if fs.exists(target)? {
        if !fs.list(target)?.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "checkpoint directory {} is not empty",
                target.display()
            )));
        }
    } else {
        fs.create_dir_all(target)?;
    }
    Ok(())
}

/// The checkpoint's point, chosen while no write group runs (see the module documentation).
fn choose_point(db: &Shared) -> Result<Point> {
    let state = db.state().lock();
    state.check_background()?;
    let wal_size = state.wal.as_ref().map(|w| w.size()).ok_or_else(|| {
        Error::Background(BackgroundError::described(
            BackgroundJob::WalWrite,
            "WAL unavailable after an earlier failure",
        ))
    })?;
    // No group is in flight, so every assigned sequence number is visible.
    let sequence = db.versions().visible_sequence();
    let trees = state
        .trees
        .values()
        .map(|t| {
            (
                Arc::clone(&t.tree),
                db.versions().current(&t.tree),
                t.oldest_wal(),
            )
        })
        .collect();
    let oldest = state.min_live_wal();
    let wals = state
        .closed_wal_sizes
        .range(oldest..)
        .map(|(n, _)| *n)
        .chain(std::iter::once(state.wal_number))
        .collect();
    Ok(Point {
        sequence,
        wal: (state.wal_number, wal_size),
        wals,
        trees,
        wal_starts: state.wal_starts.clone(),
    })
}

/// Hard-links `source` into `target` (same name), or copies it where linking fails (another
/// file system, a file system without links).
fn link_or_copy(db: &Shared, source: &Path, target: &Path) -> Result<()> {
    let name = source
        .file_name()
        .ok_or_else(|| Error::InvalidArgument(format!("{} has no file name", source.display())))?;
    let dest = target.join(name);
    match db.fs().hard_link(source, &dest) {
        Ok(()) => {
            db.counters()
                .checkpoint_files_linked
                .fetch_add(1, Ordering::Relaxed);
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Error::Io(e)),
        Err(_) => copy_prefix(db, source, &dest, None),
    }
}

/// Copies `source` to `dest` (its first `len` bytes if given), synced.
fn copy_prefix(db: &Shared, source: &Path, dest: &Path, len: Option<u64>) -> Result<()> {
    let mut bytes = db.fs().read(source)?;
    if let Some(len) = len {
        bytes.truncate(usize::try_from(len).unwrap_or(usize::MAX));
    }
    let mut file = db.fs().create(dest)?;
    std::io::Write::write_all(&mut file, &bytes)?;
    file.sync()?;
    db.counters()
        .checkpoint_bytes_copied
        .fetch_add(bytes.len() as u64, Ordering::Relaxed);
    Ok(())
}

/// Copies the WALs the checkpoint's keyspaces need: from the oldest one on, the active one cut
/// at the point's length.
/// A WAL that is missing fails the checkpoint (deletions are paused, so it never should be).
fn copy_wals(db: &Shared, point: &Point, target: &Path) -> Result<()> {
    let (active, active_len) = point.wal;
    for &n in &point.wals {
        let len = (n == active).then_some(active_len);
        copy_prefix(db, &names::wal(db.dir(), n), &names::wal(target, n), len)?;
    }
    Ok(())
}

/// Writes the checkpoint's manifest (numbered above every file it names) and `CURRENT`.
fn write_manifest(db: &Shared, point: &Point, target: &Path) -> Result<()> {
    let trees: Vec<(Arc<KeyspaceTree>, Version)> = point
        .trees
        .iter()
        .map(|(tree, version, _)| (Arc::clone(tree), Version::clone(version)))
        .collect();
    let oldest = |tree: &KeyspaceTree| {
        let wal = point
            .trees
            .iter()
            .find(|(t, _, _)| t.id == tree.id)
            .map_or(point.wal.0, |(_, _, wal)| *wal);
        (wal, point.wal_starts.get(&wal).copied())
    };
    let mut edits = crate::core::version_set::snapshot_edits(&trees, point.sequence, oldest);
    let number = db.versions().new_file_number();
    if let Some(header) = edits.first_mut() {
        header.next_file_number = Some(number + 1);
        header.next_keyspace_id = Some(db.versions().next_keyspace_id());
    }
    Manifest::create(db.fs().as_ref(), target, number, &edits)?;
    Ok(())
}
