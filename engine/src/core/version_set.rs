//! The one owner of the trees' metadata, after LevelDB's `VersionSet`: per keyspace the current
//! version, its recorded log number and the compaction picker's bookkeeping (round-robin cursors,
//! running jobs); and for the database the manifest writer, file numbers, keyspace ids, the last
//! sequence number and the outputs being written.
//!
//! Every change of a tree goes through [`VersionSet::log_and_apply`], and every creation or drop
//! of a keyspace through [`VersionSet::create_keyspace_tree`] / [`VersionSet::drop_keyspace_tree`]; each appends its
//! edit to the manifest and syncs it **without** holding the state mutex (writers, readers and
//! `get` never wait behind a manifest `fsync`), then installs the change and republishes the read
//! view under it. Keyspace changes also run with write groups held off (`WriteQueue::exclusive`).
//! Manifest writers go one at a time (the manifest lock is held for the whole call), so the
//! version an edit is applied to is still current when it is installed. A failed append marks
//! the manifest failed: nothing more is appended (and `delete_obsolete_files` deletes nothing)
//! until `Db::resume` rolls over to a new manifest (`roll_failed_manifest`) or the database is
//! reopened. A manifest past `max_manifest_file_size` is replaced the same way, by one that
//! starts with `snapshot_edits` (every keyspace's whole version), `CURRENT` renamed to name it.
//!
//! File numbers are never reused. A table about to be written takes its number with
//! [`VersionSet::new_output`], which registers it as pending in the lock that also holds the
//! current versions; installing a version releases its tables from pending in the same critical
//! section, and a job that gives up releases them (`release_outputs`: they become orphans).
//! `delete_obsolete_files` lists the directory first, then reads the live and pending sets
//! together ([`VersionSet::live_files`]), so it can never delete an output being written.
//! [`VersionSet::pick_compaction`] picks and reserves in one critical section; the reservation it
//! returns releases the files and the output range on drop.
//!
//! The set is built with what it needs from the rest of the engine ([`VersionSetContext`]: the
//! state cell it installs into, the file system and directory of the manifest), not with the
//! database. Lock order (the engine's whole order is in `core/lock_order.rs`): `manifest` →
//! the state lock → `files`. `files` is only ever held briefly and never while taking another
//! lock.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};
use siftdb_compaction::picker::{self, LevelFile, Pick, Running};
use siftdb_compaction::{fifo, universal};

use std::path::PathBuf;

use crate::base::compaction_style::{self, CompactionStyle};
use crate::base::error::{BackgroundError, BackgroundJob, Error, Result};
use crate::base::fs::FileSystem;
use crate::base::options::{Options, MAX_LEVELS};
use crate::base::version_edit::VersionEdit;
use crate::core::blob_file::BlobFile;
use crate::core::keyspace_tree::{KeyspaceMemtables, KeyspaceTree, ReadView};
use crate::core::lock_order::{Rank, Ranked};
use crate::core::manifest::Manifest;
use crate::core::state::{DbState, StateCell};
use crate::core::version::{TableFile, Version};

/// One keyspace's tree as the set knows it.
struct TreeFiles {
    tree: Arc<KeyspaceTree>,
    current: Arc<Version>,
    /// Per level, the largest key of the last compaction out of it (round-robin cursor).
    compact_cursors: Vec<Vec<u8>>,
    /// Background compactions under way (their inputs and output ranges are off limits).
    compacting: Vec<Running>,
}

impl TreeFiles {
    fn new(tree: Arc<KeyspaceTree>, current: Version) -> TreeFiles {
        tree.l0_files
            .store(current.level(0).len(), Ordering::Release);
        TreeFiles {
            tree,
            current: Arc::new(current),
            compact_cursors: vec![Vec::new(); MAX_LEVELS],
            compacting: Vec::new(),
        }
    }
}

/// What the set knows about the files of every tree, under one lock: a file is live (in a
/// tree's `current`), pending (being written, `pending_outputs`) or neither — and only then may
/// `delete_obsolete_files` remove it. Installing a version and releasing its outputs from
/// `pending_outputs` happen in the same critical section, so no reader of this struct ever sees
/// an output in neither place.
struct Files {
    trees: BTreeMap<u32, TreeFiles>,
    /// Per tree, the log number the manifest holds: WALs below it hold nothing of the tree that
    /// is not in its tables. WALs below the smallest are obsolete.
    log_numbers: BTreeMap<u32, u64>,
    pending_outputs: BTreeSet<u64>,
    manifest_number: u64,
    /// The tree the next compaction pick looks at first (round robin over keyspaces).
    pick_start: u32,
}

/// The manifest and whether an append to it failed (after which nothing more is appended:
/// the file may end in a partial record, and appending after it would turn a torn tail into
/// corruption).
struct ManifestWriter {
    manifest: Option<Manifest>,
    failed: bool,
}

/// What a [`VersionSet`] is handed when it is built.
pub(crate) struct VersionSetContext {
    /// The state it installs versions into and republishes read views in.
    pub state: Arc<StateCell>,
    pub fs: Arc<dyn FileSystem>,
    /// The database directory, where the manifest lives.
    pub dir: PathBuf,
    /// A manifest past this size is started afresh at the next edit
    /// (`Options::max_manifest_file_size`).
    pub max_manifest_file_size: u64,
    /// The database's clock (FIFO compaction's TTL), read before the files lock is taken: a
    /// user's clock may be slow or panic, and flushes and installs wait on that lock.
    pub clock: Arc<dyn crate::base::ttl::Clock>,
}

/// See the module documentation.
pub(crate) struct VersionSet {
    ctx: VersionSetContext,
    manifest: Mutex<ManifestWriter>,
    files: Mutex<Files>,
    next_file_number: AtomicU64,
    /// Manifests started because the one being appended to grew past
    /// `max_manifest_file_size` (`Stats::manifest_rollovers`).
    manifest_rollovers: AtomicU64,
    /// Bytes of the manifest being appended to, as of its last append (read by `Db::stats`
    /// without the manifest lock, which an edit holds across its `fsync`).
    manifest_size: AtomicU64,
    /// The last sequence number handed to a write (assigned by the write leader under the state
    /// lock; may be ahead of what reads see until the group is in the memtable).
    last_sequence: AtomicU64,
    /// The id the next keyspace created gets (ids are never reused).
    next_keyspace_id: AtomicU32,
    /// Sequence number of the newest write visible to reads (RocksDB's last published
    /// sequence): at most `last_sequence`, which the write leader assigns ahead of it.
    visible_sequence: AtomicU64,
}

/// The files a picked compaction reserved, released on drop however the job ends.
pub(crate) struct Reservation<'a> {
    versions: &'a VersionSet,
    tree: u32,
    running: Running,
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        {
            let mut files = self.versions.files();
            if let Some(t) = files.trees.get_mut(&self.tree)
                && let Some(i) = t.compacting.iter().position(|r| *r == self.running)
            {
                t.compacting.swap_remove(i);
            }
        }
        // Waiters (`wait_for_compaction`, stalled writers) sleep on the state lock's condvars.
        let state = &self.versions.ctx.state;
        let _state = state.lock();
        state.notify_all();
    }
}

/// A picked compaction: the tree, what to compact, the version it was picked from, and the
/// reservation that keeps other picks off its files.
pub(crate) struct PickedCompaction<'a> {
    pub tree: Arc<KeyspaceTree>,
    pub pick: Pick,
    pub version: Arc<Version>,
    pub reservation: Reservation<'a>,
    /// Compactions running with this one, in every tree (for the peak-concurrency counter).
    pub running_now: u64,
}

impl VersionSet {
    /// An empty set numbering new files from `next_file_number` on.
    pub(crate) fn new(
        ctx: VersionSetContext,
        next_file_number: u64,
        last_sequence: u64,
        next_keyspace_id: u32,
    ) -> VersionSet {
        VersionSet {
            ctx,
            manifest: Mutex::new(ManifestWriter {
                manifest: None,
                failed: false,
            }),
            files: Mutex::new(Files {
                trees: BTreeMap::new(),
                log_numbers: BTreeMap::new(),
                pending_outputs: BTreeSet::new(),
                manifest_number: 0,
                pick_start: 0,
            }),
            next_file_number: AtomicU64::new(next_file_number),
            manifest_rollovers: AtomicU64::new(0),
            manifest_size: AtomicU64::new(0),
            last_sequence: AtomicU64::new(last_sequence),
            next_keyspace_id: AtomicU32::new(next_keyspace_id),
            visible_sequence: AtomicU64::new(last_sequence),
        }
    }

    /// The sequence number of the newest write reads may see.
    pub(crate) fn visible_sequence(&self) -> u64 {
        self.visible_sequence.load(Ordering::Acquire)
    }

    /// Makes writes up to `sequence` visible to reads (the write leader, once its group is in
    /// the memtables; recovery).
    pub(crate) fn publish_sequence(&self, sequence: u64) {
        self.visible_sequence.store(sequence, Ordering::Release);
    }

    /// Publishes the view of tree `id` in `state` for readers. Called, with the state lock
    /// held, by every change of the tree's active memtable, immutable memtables or version, so
    /// that a reader that sees a write's sequence number also sees the memtable or table holding
    /// it (the write is made visible after the switch that created its memtable published it).
    pub(crate) fn publish_view(&self, state: &DbState, id: u32) {
        let Some(t) = state.trees.get(&id) else {
            return;
        };
        let view = Arc::new(ReadView::new(
            Arc::clone(&t.mem),
            t.imm.iter().rev().cloned().collect(),
            self.current(&t.tree),
            &t.tree.filter_index,
        ));
        t.tree.view.store(view);
    }

    /// The manifest writer's lock (ranked: see `core/lock_order.rs`).
    fn manifest(&self) -> Ranked<MutexGuard<'_, ManifestWriter>> {
        Ranked::take(Rank::Manifest, || self.manifest.lock())
    }

    /// The files' lock (ranked: see `core/lock_order.rs`).
    fn files(&self) -> Ranked<MutexGuard<'_, Files>> {
        Ranked::take(Rank::Files, || self.files.lock())
    }

    /// The current version of `tree` (empty once the tree is dropped).
    pub(crate) fn current(&self, tree: &KeyspaceTree) -> Arc<Version> {
        self.files
            .lock()
            .trees
            .get(&tree.id)
            .map_or_else(|| Arc::new(Version::empty()), |t| Arc::clone(&t.current))
    }

    /// A fresh file number (for a WAL or a manifest; table outputs use [`VersionSet::new_output`]).
    pub(crate) fn new_file_number(&self) -> u64 {
        self.next_file_number.fetch_add(1, Ordering::Relaxed)
    }

    /// The next file number to be handed out.
    pub(crate) fn next_file_number(&self) -> u64 {
        self.next_file_number.load(Ordering::Relaxed)
    }

    /// The id the next keyspace gets.
    pub(crate) fn next_keyspace_id(&self) -> u32 {
        self.next_keyspace_id.load(Ordering::Relaxed)
    }

    /// A fresh number for a table about to be written, registered as pending until the version
    /// naming it is installed (or [`VersionSet::release_outputs`] gives up on it).
    pub(crate) fn new_output(&self) -> u64 {
        let number = self.new_file_number();
        self.files().pending_outputs.insert(number);
        number
    }

    /// Forgets pending outputs that will never be installed (a failed job): they become
    /// orphans for `delete_obsolete_files`.
    pub(crate) fn release_outputs(&self, numbers: &[u64]) {
        let mut files = self.files();
        for n in numbers {
            files.pending_outputs.remove(n);
        }
    }

    pub(crate) fn last_sequence(&self) -> u64 {
        self.last_sequence.load(Ordering::Acquire)
    }

    /// Sets the last assigned sequence number (the write leader, under the state lock).
    pub(crate) fn set_last_sequence(&self, sequence: u64) {
        self.last_sequence.store(sequence, Ordering::Release);
    }

    /// Live tables of every tree, pending outputs and the live manifest's number, read together.
    pub(crate) fn live_files(&self) -> (BTreeSet<u64>, u64) {
        let files = self.files();
        let mut live: BTreeSet<u64> = files
            .trees
            .values()
            .flat_map(|t| {
                let tables = t.current.all().map(|(_, f)| f.meta.number);
                tables.chain(t.current.blob_files().keys().copied())
            })
            .collect();
        live.extend(files.pending_outputs.iter().copied());
        (live, files.manifest_number)
    }

    /// The smallest log number the manifest holds for any tree: every older WAL is obsolete
    /// (`None` before recovery has installed the trees).
    pub(crate) fn min_log_number(&self) -> Option<u64> {
        self.files().log_numbers.values().copied().min()
    }

    /// Every tree's current version, read together.
    pub(crate) fn all_current(&self) -> Vec<(Arc<KeyspaceTree>, Arc<Version>)> {
        let files = self.files();
        files
            .trees
            .values()
            .map(|t| (Arc::clone(&t.tree), Arc::clone(&t.current)))
            .collect()
    }

    /// Starts the manifest with `snapshot` (the whole database: a header edit, then one edit per
    /// keyspace) and points `CURRENT` at it (recovery, before any background work runs).
    pub(crate) fn create_manifest(&self, snapshot: &[VersionEdit]) -> Result<()> {
        let mut writer = self.manifest();
        self.start_manifest(&mut writer, snapshot.to_vec())
    }

    /// Writes a new manifest holding `edits` (the header gets the file and keyspace numbers),
    /// points `CURRENT` at it and appends to it from now on.
    fn start_manifest(
        &self,
        writer: &mut ManifestWriter,
        mut edits: Vec<VersionEdit>,
    ) -> Result<()> {
        let number = self.new_file_number();
        if let Some(first) = edits.first_mut() {
            first.next_file_number = Some(self.next_file_number());
            first.next_keyspace_id = Some(self.next_keyspace_id());
        }
        let manifest = Manifest::create(self.ctx.fs.as_ref(), &self.ctx.dir, number, &edits)?;
        crate::base::sync_point::sync_point!(
            self.ctx.state,
            crate::base::sync_point::MANIFEST_CREATED
        );
        self.files().manifest_number = manifest.number();
        self.manifest_size.store(manifest.size(), Ordering::Relaxed);
        writer.manifest = Some(manifest);
        writer.failed = false;
        Ok(())
    }

    /// Starts a new manifest holding every keyspace's current version, if an append to the
    /// old one failed (its tail is unknown: nothing may be appended after it), and points
    /// `CURRENT` at it; returns whether it did. `wal_start` names where each log number's WAL
    /// starts. `Db::resume` runs it with the write path held, so no edit races it.
    pub(crate) fn roll_failed_manifest(
        &self,
        wal_start: impl Fn(u64) -> Option<u64>,
    ) -> Result<bool> {
        let mut writer = self.manifest();
        if !writer.failed {
            return Ok(false);
        }
        self.roll_manifest(&mut writer, wal_start)?;
        Ok(true)
    }

    fn roll_manifest(
        &self,
        writer: &mut ManifestWriter,
        wal_start: impl Fn(u64) -> Option<u64>,
    ) -> Result<()> {
        let (trees, log_numbers) = {
            let files = self.files();
            let trees: Vec<(Arc<KeyspaceTree>, Version)> = files
                .trees
                .values()
                .map(|t| (Arc::clone(&t.tree), (*t.current).clone()))
                .collect();
            (trees, files.log_numbers.clone())
        };
        let edits = snapshot_edits(&trees, self.last_sequence(), |tree| {
            let log = log_numbers.get(&tree.id).copied().unwrap_or(0);
            (log, wal_start(log))
        });
        self.start_manifest(writer, edits)
    }

    /// Keeps manifest `current` (read at open) as the live one without appending to it: the
    /// next edit starts a new manifest first (see `manifest_writer`). An open on a full disk.
    pub(crate) fn defer_manifest(&self, current: u64) {
        let mut writer = self.manifest();
        writer.manifest = None;
        writer.failed = true;
        self.files().manifest_number = current;
    }

    /// Makes `version` (the tree recovery built) current for `tree`, before any background
    /// work runs.
    pub(crate) fn install_recovered(
        &self,
        tree: &Arc<KeyspaceTree>,
        version: Version,
        log_number: u64,
    ) {
        let mut files = self.files();
        files.log_numbers.insert(tree.id, log_number);
        for (_, f) in version.all() {
            files.pending_outputs.remove(&f.meta.number);
        }
        files
            .trees
            .insert(tree.id, TreeFiles::new(Arc::clone(tree), version));
    }

    /// Takes the manifest for one edit: fails if writes have stopped or an earlier append failed.
    fn manifest_writer(&self) -> Result<Ranked<MutexGuard<'_, ManifestWriter>>> {
        let mut writer = self.manifest();
        let starts = {
            let state = self.ctx.state.lock();
            state.check_background()?;
            writer.failed.then(|| state.wal_starts.clone())
        };
        // No background error, yet no manifest to append to: the open deferred it (a full
        // disk) and this edit starts it. After a failed append the background error stands
        // until `Db::resume`, which starts the new manifest itself.
        if let Some(starts) = starts {
            self.roll_manifest(&mut writer, |log| starts.get(&log).copied())?;
        }
        if writer.failed {
            return Err(Error::Background(BackgroundError::described(
                BackgroundJob::ManifestWrite,
                "an earlier manifest write failed",
            )));
        }
        self.roll_full_manifest(&mut writer)?;
        Ok(writer)
    }

    /// Starts a new manifest holding every keyspace's current version if the one being
    /// appended to has passed `max_manifest_file_size` (RocksDB rolls over the same way). No
    /// edit can come between: the caller holds the manifest lock for its whole edit. Once the
    /// new one is named by `CURRENT`, the old one is obsolete (`delete_obsolete_files`).
    ///
    /// A failure stops writes as a failed append does: `CURRENT` may name either manifest
    /// (the rename may have happened, its directory sync not), so neither may be appended to
    /// until the next open or [`Db::resume`](crate::Db::resume) writes a fresh one.
    fn roll_full_manifest(&self, writer: &mut ManifestWriter) -> Result<()> {
        let full = writer
            .manifest
            .as_ref()
            .is_some_and(|m| m.size() > self.ctx.max_manifest_file_size);
        if !full {
            return Ok(());
        }
        let starts = self.ctx.state.lock().wal_starts.clone();
        writer.failed = true;
        let _on_panic = self.ctx.state.fail_on_panic(
            BackgroundJob::ManifestWrite,
            "panicked while starting a new manifest",
        );
        if let Err(e) = self.roll_manifest(writer, |log| starts.get(&log).copied()) {
            self.ctx
                .state
                .fail(|| BackgroundError::new(BackgroundJob::ManifestWrite, &e));
            return Err(e);
        }
        self.manifest_rollovers.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Manifests started by rollover since open, and the size of the one being appended to.
    pub(crate) fn manifest_report(&self) -> (u64, u64) {
        (
            self.manifest_rollovers.load(Ordering::Relaxed),
            self.manifest_size.load(Ordering::Relaxed),
        )
    }

    /// Appends `edit` to the manifest (synced). A failure stops writes: the manifest on disk may
    /// or may not hold the edit, so nothing is installed or deleted until the next open reads it
    /// back and decides.
    fn append(&self, writer: &mut ManifestWriter, edit: &VersionEdit) -> Result<()> {
        // Failed until the append returns: after a panic inside it (the file system's) the
        // manifest may end in a partial record, and nothing may be appended after that.
        writer.failed = true;
        let _on_panic = self.ctx.state.fail_on_panic(
            BackgroundJob::ManifestWrite,
            "panicked while appending to the manifest",
        );
        let appended = match writer.manifest.as_mut() {
            Some(m) => m.append(edit),
            None => Err(Error::Background(BackgroundError::described(
                BackgroundJob::ManifestWrite,
                "no manifest",
            ))),
        };
        if let Err(e) = appended {
            writer.failed = true;
            self.ctx
                .state
                .fail(|| BackgroundError::new(BackgroundJob::ManifestWrite, &e));
            return Err(e);
        }
        writer.failed = false;
        if let Some(m) = writer.manifest.as_ref() {
            self.manifest_size.store(m.size(), Ordering::Relaxed);
        }
        Ok(())
    }

    /// Logs `edit` of `tree` to the manifest (synced, without the state lock), then installs the
    /// version it makes: under the state lock, the new version becomes current, `on_install`
    /// updates the rest of the state (say, drops the flushed memtable), and the tree's read view
    /// is republished. Fails with [`Error::KeyspaceDropped`] if the tree was dropped meanwhile.
    ///
    /// Added tables are taken from `outputs` (opened by the caller) or, for a trivial move, from
    /// the current version.
    pub(crate) fn log_and_apply(
        &self,
        tree: &KeyspaceTree,
        edit: VersionEdit,
        outputs: &[Arc<TableFile>],
        on_install: impl FnOnce(&mut DbState),
    ) -> Result<()> {
        self.log_and_apply_with_blobs(tree, edit, outputs, &[], on_install)
    }

    /// [`VersionSet::log_and_apply`] for an edit that also adds blob files: those of
    /// `edit.blob_files` are taken from `blob_outputs` (opened by the caller).
    pub(crate) fn log_and_apply_with_blobs(
        &self,
        tree: &KeyspaceTree,
        mut edit: VersionEdit,
        outputs: &[Arc<TableFile>],
        blob_outputs: &[Arc<BlobFile>],
        on_install: impl FnOnce(&mut DbState),
    ) -> Result<()> {
        let mut writer = self.manifest_writer()?;
        // Stable while the manifest lock is held: only manifest writers replace it.
        let base = {
            let files = self.files();
            let t = files
                .trees
                .get(&tree.id)
                .ok_or_else(|| tree.dropped_error())?;
            Arc::clone(&t.current)
        };
        edit.keyspace = tree.id;
        edit.next_file_number = Some(self.next_file_number());
        edit.last_sequence = Some(self.last_sequence());
        let version = base.apply(
            &edit,
            |_, meta| {
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
            },
            |meta| {
                blob_outputs
                    .iter()
                    .find(|b| b.meta.number == meta.number)
                    .cloned()
                    .ok_or_else(|| {
                        Error::corruption(format!("edit adds unknown blob file {}", meta.number))
                    })
            },
        )?;
        self.append(&mut writer, &edit)?;
        crate::base::sync_point::sync_point!(
            self.ctx.state,
            crate::base::sync_point::MANIFEST_APPENDED
        );
        let version = Arc::new(version);
        let mut state = self.ctx.state.lock();
        {
            let mut files = self.files();
            if let Some(t) = files.trees.get_mut(&tree.id) {
                t.current = Arc::clone(&version);
            }
            let logged = edit
                .log_number
                .map(|n| (tree.id, n))
                .into_iter()
                .chain(edit.other_log_numbers.iter().copied());
            for (id, n) in logged {
                if let Some(recorded) = files.log_numbers.get_mut(&id) {
                    *recorded = (*recorded).max(n);
                }
            }
            tree.l0_files
                .store(version.level(0).len(), Ordering::Release);
            for (_, meta) in &edit.added {
                files.pending_outputs.remove(&meta.number);
            }
            for blob in &edit.blob_files {
                files.pending_outputs.remove(&blob.number);
            }
        }
        on_install(&mut state);
        self.publish_view(&state, tree.id);
        self.ctx.state.notify_all(); // the new shape may need a compaction
        drop(state);
        drop(writer);
        unpin_moved_tables(&version, &edit);
        Ok(())
    }

    /// Creates keyspace `name` with `options` (recorded as `options_text`): one manifest record,
    /// then the empty tree joins the state. If the name exists: that tree when `exists_ok`,
    /// [`Error::AlreadyExists`] otherwise.
    pub(crate) fn create_keyspace_tree(
        &self,
        name: &str,
        options: Options,
        options_text: &str,
        exists_ok: bool,
    ) -> Result<Arc<KeyspaceTree>> {
        let mut writer = self.manifest_writer()?;
        let existing = self.ctx.state.lock().tree_named(name);
        if let Some(existing) = existing {
            return if exists_ok {
                Ok(existing)
            } else {
                Err(Error::AlreadyExists(name.to_string()))
            };
        }
        let id = self.next_keyspace_id.load(Ordering::Relaxed);
        let next = id
            .checked_add(1)
            .ok_or_else(|| Error::InvalidArgument("keyspace ids exhausted".to_string()))?;
        let mut edit = VersionEdit::create_keyspace(id, name, options_text.to_string());
        edit.next_keyspace_id = Some(next);
        edit.next_file_number = Some(self.next_file_number());
        // The tree holds nothing yet: no WAL before the current one can hold its writes.
        let (log_number, wal_starts) = {
            let state = self.ctx.state.lock();
            (state.wal_number, state.wal_starts_of([state.wal_number]))
        };
        edit.log_number = Some(log_number);
        edit.wal_starts = wal_starts;
        self.append(&mut writer, &edit)?;
        self.next_keyspace_id.store(next, Ordering::Relaxed);
        self.files().log_numbers.insert(id, log_number);
        let mut state = self.ctx.state.lock();
        let tree = KeyspaceTree::new_in_wal(id, name, options, state.wal_number);
        self.files
            .lock()
            .trees
            .insert(id, TreeFiles::new(Arc::clone(&tree), Version::empty()));
        let memtables = KeyspaceMemtables::of_new_keyspace(Arc::clone(&tree), state.wal_number);
        state.trees.insert(id, memtables);
        self.publish_view(&state, id);
        Ok(tree)
    }

    /// Drops `tree`: one manifest record, then it leaves the state (its memtables go) and the
    /// set (its tables become obsolete). Returns its last version. The caller keeps write groups
    /// out meanwhile.
    pub(crate) fn drop_keyspace_tree(&self, tree: &Arc<KeyspaceTree>) -> Result<Arc<Version>> {
        let mut writer = self.manifest_writer()?;
        if tree.check_live().is_err() {
            return Err(tree.dropped_error());
        }
        let edit = VersionEdit {
            keyspace: tree.id,
            dropped: true,
            ..VersionEdit::default()
        };
        self.append(&mut writer, &edit)?;
        let mut state = self.ctx.state.lock();
        state.trees.remove(&tree.id);
        let removed = {
            let mut files = self.files();
            files.log_numbers.remove(&tree.id);
            files.trees.remove(&tree.id)
        };
        tree.mark_dropped();
        self.ctx.state.changed().notify_all();
        Ok(removed.map_or_else(|| Arc::new(Version::empty()), |t| t.current))
    }

    /// The compaction some tree needs next that fits beside those under way, reserved (its files
    /// off limits to other picks until the reservation drops). Trees take turns being looked at
    /// first, so one busy keyspace does not starve the others.
    pub(crate) fn pick_compaction(&self) -> Option<PickedCompaction<'_>> {
        let now = self.now_secs();
        let mut files = self.files();
        let start = files.pick_start;
        let order: Vec<u32> = files
            .trees
            .range(start..)
            .chain(files.trees.range(..start))
            .map(|(id, _)| *id)
            .collect();
        for id in order {
            let t = files.trees.get_mut(&id)?;
            let Some((pick, running)) = next_pick(t, now) else {
                continue;
            };
            t.compacting.push(running.clone());
            let concurrency = t.compacting.len() as u64;
            if let Some(cursor) = t.compact_cursors.get_mut(pick.level) {
                cursor.clone_from(&pick.end_key);
            }
            let (tree, version) = (Arc::clone(&t.tree), Arc::clone(&t.current));
            files.pick_start = id.wrapping_add(1);
            let running_now: u64 = files
                .trees
                .values()
                .map(|t| t.compacting.len() as u64)
                .sum();
            return Some(PickedCompaction {
                tree,
                pick,
                version,
                reservation: Reservation {
                    versions: self,
                    tree: id,
                    running,
                },
                running_now: running_now.max(concurrency),
            });
        }
        None
    }

    /// The clock's Unix time in seconds, read outside every lock.
    fn now_secs(&self) -> u64 {
        crate::base::ttl::millis(self.ctx.clock.now()) / 1000
    }

    /// Whether no tree needs a compaction and none is running.
    pub(crate) fn is_settled(&self) -> bool {
        let now = self.now_secs();
        let files = self.files();
        files
            .trees
            .values()
            .all(|t| t.compacting.is_empty() && next_pick(t, now).is_none())
    }
}

/// The edits a fresh manifest starts with: a header with the counters (`create_manifest` adds
/// the file and keyspace numbers), then per keyspace its creation (with the options it runs
/// with), its log number with where that WAL starts, and its tables.
pub(crate) fn snapshot_edits(
    trees: &[(Arc<KeyspaceTree>, Version)],
    last_sequence: u64,
    log_number: impl Fn(&KeyspaceTree) -> (u64, Option<u64>),
) -> Vec<VersionEdit> {
    let header = VersionEdit {
        last_sequence: Some(last_sequence),
        ..VersionEdit::default()
    };
    let per_tree = trees.iter().map(|(tree, version)| {
        let (log, first_sequence) = log_number(tree);
        VersionEdit {
            keyspace: tree.id,
            created: (tree.id != 0)
                .then(|| (tree.name.to_string(), tree.opened_with().to_string())),
            log_number: Some(log),
            wal_starts: first_sequence.map(|s| (log, s)).into_iter().collect(),
            added: version
                .all()
                .map(|(level, f)| (level, f.meta.clone()))
                .collect(),
            blob_files: version.blob_files().values().map(|b| b.meta).collect(),
            ..VersionEdit::default()
        }
    });
    std::iter::once(header).chain(per_tree).collect()
}

/// A table that left L0 by a trivial move gives its pinned blocks back to the LRU.
fn unpin_moved_tables(version: &Version, edit: &VersionEdit) {
    for (level, meta) in &edit.added {
        if *level > 0
            && let Some(f) = version
                .level(*level)
                .iter()
                .find(|f| f.meta.number == meta.number)
            && f.table.is_pinned()
        {
            f.table.unpin();
        }
    }
}

/// The next compaction of `tree` in its style that fits beside those under way, with what it
/// holds while it runs (none while its automatic compactions are disabled); `now_secs` is the
/// Unix time FIFO's TTL is judged at.
fn next_pick(tree: &TreeFiles, now_secs: u64) -> Option<(Pick, Running)> {
    let options = &tree.tree.options();
    if options.disable_auto_compactions {
        return None; // only `compact_range` compacts it
    }
    let levels = level_files(&tree.current);
    let pick = match options.compaction_style {
        CompactionStyle::Level => picker::pick_besides(
            &levels,
            &options.picker_config(),
            &tree.compact_cursors,
            &tree.compacting,
        ),
        CompactionStyle::Universal => {
            let config = compaction_style::universal_config(
                &options.compaction_options_universal,
                options.level0_file_num_compaction_trigger,
            );
            universal::pick(&levels, &config, &tree.compacting)
        }
        CompactionStyle::Fifo => {
            let config = compaction_style::fifo_config(&options.compaction_options_fifo);
            fifo::pick(&levels, &config, now_secs, &tree.compacting)
        }
    };
    let pick = pick.or_else(|| {
        let leveled = options.compaction_style == CompactionStyle::Level;
        let forced =
            || crate::core::blob_gc::forced_pick(&tree.current, options, &levels, &tree.compacting);
        leveled.then(forced).flatten()
    })?;
    let running = Running::of(&pick, &levels, pick.output_level);
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
                    created: f.table.properties().creation_time,
                })
                .collect()
        })
        .collect()
}
