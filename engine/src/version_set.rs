//! The one owner of the tree's metadata, after LevelDB's `VersionSet`: the current version, the
//! manifest writer, file numbers, the last sequence number, the outputs being written, and the
//! compaction picker's bookkeeping (round-robin cursors, running jobs).
//!
//! Every change of the tree goes through [`VersionSet::log_and_apply`], which appends the edit to
//! the manifest and syncs it **without** holding the state mutex (writers, readers and `get`
//! never wait behind a manifest `fsync`), then installs the new version and republishes the read
//! view under it. Manifest writers go one at a time (the manifest lock is held for the whole
//! call), so the version an edit is applied to is still current when it is installed.
//!
//! Lock order: `manifest` → `DbInner::state` → `files`. `files` is only ever held briefly and
//! never while taking another lock.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use siftdb_compaction::picker::{self, LevelFile, Pick, PickerConfig, Running};

use crate::db::{DbInner, DbState};
use crate::error::{Error, Result};
use crate::manifest::Manifest;
use crate::options::MAX_LEVELS;
use crate::version::{TableFile, Version};
use crate::version_edit::VersionEdit;

/// What the set knows about the files of the tree, under one lock: a file is live (in
/// `current`), pending (being written, `pending_outputs`) or neither — and only then may
/// `delete_obsolete_files` remove it. Installing a version and releasing its outputs from
/// `pending_outputs` happen in the same critical section, so no reader of this struct ever sees
/// an output in neither place.
struct Files {
    current: Arc<Version>,
    pending_outputs: BTreeSet<u64>,
    /// Per level, the largest key of the last compaction out of it (round-robin cursor).
    compact_cursors: Vec<Vec<u8>>,
    /// Background compactions under way (their inputs and output ranges are off limits).
    compacting: Vec<Running>,
    manifest_number: u64,
}

/// The manifest and whether an append to it failed (after which nothing more is appended:
/// the file may end in a partial record, and appending after it would turn a torn tail into
/// corruption).
struct ManifestWriter {
    manifest: Option<Manifest>,
    failed: bool,
}

/// See the module documentation.
pub(crate) struct VersionSet {
    manifest: Mutex<ManifestWriter>,
    files: Mutex<Files>,
    next_file_number: AtomicU64,
    /// The last sequence number handed to a write (assigned by the write leader under the state
    /// lock; may be ahead of what reads see until the group is in the memtable).
    last_sequence: AtomicU64,
    /// L0 tables in the current version (the write path's stall check reads it per group).
    l0_files: AtomicUsize,
}

/// The files a picked compaction reserved, released on drop however the job ends.
pub(crate) struct Reservation<'a> {
    db: &'a DbInner,
    running: Running,
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        {
            let mut files = self.db.versions.files.lock();
            if let Some(i) = files.compacting.iter().position(|r| *r == self.running) {
                files.compacting.swap_remove(i);
            }
        }
        // Waiters (`wait_for_compaction`, stalled writers) sleep on the state lock's condvars.
        let _state = self.db.state.lock();
        self.db.state_changed.notify_all();
        self.db.work_available.notify_all();
    }
}

impl VersionSet {
    /// A set over `current`, numbering new files from `next_file_number` on.
    pub(crate) fn new(current: Version, next_file_number: u64, last_sequence: u64) -> VersionSet {
        let l0_files = current.level(0).len();
        VersionSet {
            manifest: Mutex::new(ManifestWriter {
                manifest: None,
                failed: false,
            }),
            files: Mutex::new(Files {
                current: Arc::new(current),
                pending_outputs: BTreeSet::new(),
                compact_cursors: vec![Vec::new(); MAX_LEVELS],
                compacting: Vec::new(),
                manifest_number: 0,
            }),
            l0_files: AtomicUsize::new(l0_files),
            next_file_number: AtomicU64::new(next_file_number),
            last_sequence: AtomicU64::new(last_sequence),
        }
    }

    /// The current version.
    pub(crate) fn current(&self) -> Arc<Version> {
        Arc::clone(&self.files.lock().current)
    }

    /// A fresh file number (for a WAL or a manifest; table outputs use [`VersionSet::new_output`]).
    pub(crate) fn new_file_number(&self) -> u64 {
        self.next_file_number.fetch_add(1, Ordering::Relaxed)
    }

    /// A fresh number for a table about to be written, registered as pending until the version
    /// naming it is installed (or [`VersionSet::release_outputs`] gives up on it).
    pub(crate) fn new_output(&self) -> u64 {
        let number = self.new_file_number();
        self.files.lock().pending_outputs.insert(number);
        number
    }

    /// Forgets pending outputs that will never be installed (a failed job): they become
    /// orphans for `delete_obsolete_files`.
    pub(crate) fn release_outputs(&self, numbers: &[u64]) {
        let mut files = self.files.lock();
        for n in numbers {
            files.pending_outputs.remove(n);
        }
    }

    /// Tables in L0 of the current version.
    pub(crate) fn l0_files(&self) -> usize {
        self.l0_files.load(Ordering::Acquire)
    }

    pub(crate) fn last_sequence(&self) -> u64 {
        self.last_sequence.load(Ordering::Acquire)
    }

    /// Sets the last assigned sequence number (the write leader, under the state lock).
    pub(crate) fn set_last_sequence(&self, sequence: u64) {
        self.last_sequence.store(sequence, Ordering::Release);
    }

    /// Live tables, pending outputs and the live manifest's number, read together.
    pub(crate) fn live_files(&self) -> (BTreeSet<u64>, u64) {
        let files = self.files.lock();
        let mut live: BTreeSet<u64> = files.current.all().map(|(_, f)| f.meta.number).collect();
        live.extend(files.pending_outputs.iter().copied());
        (live, files.manifest_number)
    }

    /// Starts the manifest with `snapshot` (the whole version) and points `CURRENT` at it
    /// (recovery, before any background work runs).
    pub(crate) fn create_manifest(&self, db: &DbInner, snapshot: &VersionEdit) -> Result<()> {
        let mut writer = self.manifest.lock();
        let number = self.new_file_number();
        let mut edit = snapshot.clone();
        edit.next_file_number = Some(self.next_file_number.load(Ordering::Relaxed));
        let manifest = Manifest::create(db.fs.as_ref(), &db.dir, number, &edit)?;
        self.files.lock().manifest_number = manifest.number();
        writer.manifest = Some(manifest);
        Ok(())
    }

    /// Makes `version` (the tree recovery built) current, before any background work runs.
    pub(crate) fn install_recovered(&self, version: Version) {
        let mut files = self.files.lock();
        for (_, f) in version.all() {
            files.pending_outputs.remove(&f.meta.number);
        }
        self.l0_files
            .store(version.level(0).len(), Ordering::Release);
        files.current = Arc::new(version);
    }

    /// Logs `edit` to the manifest (synced, without the state lock), then installs the version it
    /// makes: under the state lock, the new version becomes current, `on_install` updates the
    /// rest of the state (say, drops the flushed memtable), and the read view is republished.
    ///
    /// Added tables are taken from `outputs` (opened by the caller) or, for a trivial move, from
    /// the current version. A failed manifest write stops writes (background error): the
    /// manifest on disk may or may not hold the edit, so nothing is installed or deleted until
    /// the next open reads it back and decides.
    pub(crate) fn log_and_apply(
        &self,
        db: &DbInner,
        mut edit: VersionEdit,
        outputs: &[Arc<TableFile>],
        on_install: impl FnOnce(&mut DbState),
    ) -> Result<()> {
        let mut writer = self.manifest.lock();
        if let Some(e) = db.state.lock().bg_error.clone() {
            return Err(Error::Background(e));
        }
        if writer.failed {
            return Err(Error::Background("an earlier manifest write failed".into()));
        }
        // Stable while the manifest lock is held: only `log_and_apply` replaces it.
        let base = self.current();
        edit.next_file_number = Some(self.next_file_number.load(Ordering::Relaxed));
        edit.last_sequence = Some(self.last_sequence());
        let version = base.apply(&edit, |_, meta| {
            outputs
                .iter()
                .find(|t| t.meta.number == meta.number)
                .or_else(|| {
                    base.all()
                        .map(|(_, f)| f)
                        .find(|f| f.meta.number == meta.number)
                })
                .cloned()
                .ok_or_else(|| {
                    Error::corruption(format!("edit adds unknown table {}", meta.number))
                })
        })?;
        let appended = match writer.manifest.as_mut() {
            Some(m) => m.append(&edit),
            None => Err(Error::Background("no manifest".to_string())),
        };
        if let Err(e) = appended {
            writer.failed = true;
            let mut state = db.state.lock();
            state
                .bg_error
                .get_or_insert_with(|| format!("manifest write failed: {e}"));
            db.state_changed.notify_all();
            return Err(e);
        }
        let version = Arc::new(version);
        let mut state = db.state.lock();
        {
            let mut files = self.files.lock();
            files.current = Arc::clone(&version);
            self.l0_files
                .store(version.level(0).len(), Ordering::Release);
            for (_, meta) in &edit.added {
                files.pending_outputs.remove(&meta.number);
            }
        }
        on_install(&mut state);
        db.publish_view(&state);
        db.state_changed.notify_all();
        db.work_available.notify_all(); // the new shape may need a compaction
        drop(state);
        drop(writer);
        // A table that left L0 by a trivial move gives its pinned blocks back to the LRU.
        for (level, meta) in &edit.added {
            if *level > 0 {
                if let Some(f) = version
                    .level(*level)
                    .iter()
                    .find(|f| f.meta.number == meta.number)
                {
                    if f.table.is_pinned() {
                        f.table.unpin();
                    }
                }
            }
        }
        Ok(())
    }

    /// The compaction the tree needs next that fits beside those under way, reserved (its files
    /// off limits to other picks until the reservation drops), with the version it was picked
    /// from.
    pub(crate) fn pick_compaction<'a>(
        &self,
        db: &'a DbInner,
        config: &PickerConfig,
    ) -> Option<(Pick, Arc<Version>, Reservation<'a>)> {
        let mut files = self.files.lock();
        let (pick, running) = next_pick(&files, config)?;
        files.compacting.push(running.clone());
        db.counters.compactions_peak_concurrency.fetch_max(
            files.compacting.len() as u64,
            std::sync::atomic::Ordering::Relaxed,
        );
        if let Some(cursor) = files.compact_cursors.get_mut(pick.level) {
            cursor.clone_from(&pick.end_key);
        }
        let version = Arc::clone(&files.current);
        Some((pick, version, Reservation { db, running }))
    }

    /// Whether the tree needs no compaction and none is running.
    pub(crate) fn is_settled(&self, config: &PickerConfig) -> bool {
        let files = self.files.lock();
        files.compacting.is_empty() && next_pick(&files, config).is_none()
    }
}

fn next_pick(files: &Files, config: &PickerConfig) -> Option<(Pick, Running)> {
    let levels = level_files(&files.current);
    let pick = picker::pick_besides(&levels, config, &files.compact_cursors, &files.compacting)?;
    let running = Running::of(&pick, &levels, pick.level + 1);
    Some((pick, running))
}

/// The picker's view of a version's levels.
pub(crate) fn level_files(version: &Version) -> Vec<Vec<LevelFile>> {
    (0..version.num_levels())
        .map(|l| {
            version
                .level(l)
                .iter()
                .map(|f| LevelFile {
                    number: f.meta.number,
                    size: f.meta.file_size,
                    smallest: f.smallest_user_key().to_vec(),
                    largest: f.largest_user_key().to_vec(),
                })
                .collect()
        })
        .collect()
}
