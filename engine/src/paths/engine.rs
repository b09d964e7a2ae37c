//! The engine behind a `Db` handle: the shared state its readers and jobs see, the write queue,
//! the compaction controls, the "default" keyspace, the instance id and, for read-only opens, the
//! catch-up gate (`recovery/catch_up.rs`). The read path (`read.rs`), the write path (`write.rs`)
//! and keyspace changes (`keyspaces.rs`) are its methods; the background threads and the
//! directory lock belong to the handle (`api/db.rs`).

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use crate::base::error::Result;
use crate::core::keyspace_tree::{KeyspaceTree, ReadView};
use crate::core::lock_table::LockTable;
use crate::core::shared::Shared;
use crate::core::stats::Stats;
use crate::core::write_queue::WriteQueue;
use crate::jobs::compaction::Compactions;

/// See the module documentation.
pub(crate) struct Engine {
    pub(in crate::paths) shared: Arc<Shared>,
    pub(in crate::paths) writes: WriteQueue,
    pub(in crate::paths) compactions: Arc<Compactions>,
    /// The keyspace "default", which `Db`'s own methods act on.
    pub(in crate::paths) default: Arc<KeyspaceTree>,
    /// Tells this open instance apart from others (a batch may only name its keyspaces).
    pub(in crate::paths) instance: u64,
    /// The point locks of pessimistic transactions.
    locks: LockTable,
    /// The next transaction's id (never reused: the lock table's wait-for graph relies on it).
    next_transaction: AtomicU64,
    /// What `set_options` changed (one call at a time holds it).
    pub(in crate::paths) live_changes: parking_lot::Mutex<crate::paths::set_options::LiveChanges>,
    /// A read-only open's readers take it shared while they load a view and a sequence; a
    /// catch-up with the writer (`recovery/catch_up.rs`) takes it exclusively while it installs
    /// every keyspace's view and the sequence, so a reader sees all of one state or all of the
    /// other (a batch across keyspaces is never half there). Nothing else is locked under it.
    pub(in crate::paths) catch_up_gate: parking_lot::RwLock<()>,
}

/// A process-wide count that tells open instances apart.
static NEXT_INSTANCE: AtomicU64 = AtomicU64::new(1);

impl Engine {
    /// The engine of a database whose shared state recovery built.
    pub(in crate::paths) fn new(shared: Arc<Shared>, default: Arc<KeyspaceTree>) -> Engine {
        Engine {
            shared,
            writes: WriteQueue::default(),
            compactions: Arc::new(Compactions::default()),
            default,
            instance: NEXT_INSTANCE.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            locks: LockTable::default(),
            next_transaction: AtomicU64::new(1),
            live_changes: Default::default(),
            catch_up_gate: parking_lot::RwLock::new(()),
        }
    }

    /// The point locks of pessimistic transactions.
    pub(crate) fn locks(&self) -> &LockTable {
        &self.locks
    }

    /// A new transaction's id.
    pub(crate) fn next_transaction_id(&self) -> u64 {
        self.next_transaction
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// What readers and background jobs share.
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// The compaction controls the background compaction threads share with this engine.
    pub(crate) fn compactions(&self) -> &Arc<Compactions> {
        &self.compactions
    }

    /// The keyspace "default".
    pub(crate) fn default_keyspace(&self) -> &Arc<KeyspaceTree> {
        &self.default
    }

    /// This open instance's id.
    pub(crate) fn instance(&self) -> u64 {
        self.instance
    }

    /// Fails with `Error::Closed` once the database is closing.
    pub(crate) fn check_open(&self) -> Result<()> {
        self.shared.check_open()
    }

    /// Fails with `Error::ReadOnly` for a read-only open.
    pub(crate) fn check_writable(&self) -> Result<()> {
        self.shared.check_writable()
    }

    /// What a read of `tree` uses: its published view, then the visible sequence number — in
    /// this order.
    ///
    /// Why the order: a compaction drops an old version of a key once a newer one exists and no
    /// registered snapshot needs the old one, and every table of a published view holds only
    /// sequence numbers that were visible before the view was published. A sequence loaded
    /// *after* the view is therefore at least as new as everything in its tables, so the newest
    /// version the view kept of any key is visible to the read. Loaded *before* the view, the
    /// sequence could predate an overwrite whose compaction removed the version the read should
    /// see (issue 11's race: the key seemed absent).
    pub(crate) fn read_point(&self, tree: &KeyspaceTree) -> (Arc<ReadView>, u64) {
        self.read_point_by(tree, KeyspaceTree::read_view)
    }

    /// [`Engine::read_point`] with the view borrowed for one lookup (`KeyspaceTree::read_view_guard`).
    pub(crate) fn read_point_borrowed(
        &self,
        tree: &KeyspaceTree,
    ) -> (arc_swap::Guard<Arc<ReadView>>, u64) {
        self.read_point_by(tree, KeyspaceTree::read_view_guard)
    }

    /// The view as `load` reads it, then the sequence (in that order: see `read_point`).
    fn read_point_by<V>(
        &self,
        tree: &KeyspaceTree,
        load: impl FnOnce(&KeyspaceTree) -> V,
    ) -> (V, u64) {
        // Only a read-only open is ever caught up (a writable one pays this check alone).
        let _not_mid_catch_up = self.shared.read_only().then(|| self.catch_up_gate.read());
        let view = load(tree);
        crate::base::sync_point::sync_point!(
            self.shared,
            crate::base::sync_point::READ_SEQUENCE_AND_VIEW
        );
        let seq = self.shared.versions().visible_sequence();
        (view, seq)
    }

    /// The sequence number of the newest write readers see.
    pub(crate) fn latest_sequence(&self) -> u64 {
        self.shared.versions().visible_sequence()
    }

    /// The statistics of every keyspace together.
    pub(crate) fn stats(&self) -> Stats {
        let shared = &self.shared;
        let trees = shared.state().lock().all_trees();
        let mut stats = shared.counters().snapshot(shared.cache().stats());
        stats.memo = shared.memo().map(|m| m.stats()).unwrap_or_default();
        shared.files().report(&mut stats);
        (stats.manifest_rollovers, stats.manifest_file_size) = shared.versions().manifest_report();
        stats.event_listener_panics = shared.events().panics();
        stats.levels = crate::core::stats::level_filter_stats(trees.iter().map(|t| &t.levels));
        for tree in &trees {
            use std::sync::atomic::Ordering::Relaxed;
            let index = &tree.filter_index;
            stats.filter_index_checked += index.tickers.checked.load(Relaxed);
            stats.filter_index_useful += index.tickers.negative.load(Relaxed);
            stats.filter_index_false_positives += index.tickers.false_positive.load(Relaxed);
            stats.filter_index_rebuilds += index.rebuilds.load(Relaxed);
            stats.filter_index_retirements += index.retirements.load(Relaxed);
            stats.filter_index_bytes += index.current().map_or(0, |c| c.size_bytes() as u64);
        }
        for (_, version) in shared.versions().all_current() {
            let (files, bytes, garbage) = version.blob_totals();
            stats.blob_files += files;
            stats.blob_file_bytes += bytes;
            stats.blob_garbage_bytes += garbage;
        }
        stats
    }

    /// Switches `tree`'s memtable (if it holds anything) and waits until every memtable of the
    /// tree frozen so far is in a table.
    pub(crate) fn flush(&self, tree: &KeyspaceTree) -> Result<()> {
        crate::paths::write::flush_and_wait(self, tree)
    }

    /// Compacts `[start, end]` of `tree` down to its bottom level (see `Db::compact_range`).
    pub(crate) fn compact_range(
        &self,
        tree: &Arc<KeyspaceTree>,
        start: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Result<()> {
        self.check_open()?;
        self.check_writable()?;
        crate::paths::manual_compaction::compact_range(self, tree, start, end)
    }

    /// Waits until every tree is in shape and no compaction runs (see `Db::wait_for_compaction`).
    pub(crate) fn wait_for_compaction(&self) -> Result<()> {
        self.check_open()?;
        if self.shared.read_only() {
            return Ok(()); // no background work: nothing to wait for
        }
        crate::jobs::compaction::wait_for_compaction(&self.shared, &self.compactions)
    }

    /// Rebuilds every tree's filter index now (see `Db::build_filter_index`).
    pub(crate) fn build_filter_index(&self) -> Result<usize> {
        self.check_open()?;
        crate::jobs::filter_index_rebuild::rebuild_due(&self.shared, true)
    }

    /// Flushes the oldest immutable memtable of any keyspace, if one (see `Db::step_flush`).
    #[cfg(feature = "test-hooks")]
    pub(crate) fn step_flush(&self) -> Result<bool> {
        self.check_open()?;
        self.check_writable()?;
        crate::jobs::flush::flush_next(&self.shared)
    }

    /// Picks and runs one compaction, if one is due (see `Db::step_compaction`).
    #[cfg(feature = "test-hooks")]
    pub(crate) fn step_compaction(&self) -> Result<bool> {
        self.check_open()?;
        self.check_writable()?;
        self.shared.state().lock().check_background()?;
        match crate::jobs::compaction::compact_next(&self.shared, &self.compactions) {
            // It ran, and its keyspace went meanwhile: the outputs are orphans, as in a thread.
            Err(crate::base::error::Error::KeyspaceDropped(_)) => Ok(true),
            ran => ran,
        }
    }

    /// Deletes the files no live state needs (see `Db::step_obsolete_files`).
    #[cfg(feature = "test-hooks")]
    pub(crate) fn step_obsolete_files(&self) -> Result<()> {
        self.check_open()?;
        self.check_writable()?;
        crate::jobs::obsolete::delete_obsolete_files(&self.shared);
        Ok(())
    }

    /// Writes a checkpoint of the database into `dir` (see `Db::checkpoint`).
    pub(crate) fn checkpoint(&self, dir: &std::path::Path) -> Result<()> {
        self.check_open()?;
        self.check_writable()?;
        crate::jobs::checkpoint::checkpoint(&self.shared, &self.writes, dir)
    }

    /// A checkpoint into `dir` whose tables and blob files go where `place` puts them (see
    /// `jobs::checkpoint::checkpoint_with`); returns its sequence number.
    pub(crate) fn checkpoint_with(
        &self,
        dir: &std::path::Path,
        place: &mut dyn FnMut(&std::path::Path) -> Result<()>,
    ) -> Result<u64> {
        self.check_open()?;
        self.check_writable()?;
        crate::jobs::checkpoint::checkpoint_with(&self.shared, &self.writes, dir, place)
    }
}
