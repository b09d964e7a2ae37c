//! What `Db::publish_metrics` publishes (cargo feature `metrics`): the database's [`Stats`]
//! and, per keyspace, its levels' filter tickers and tables, its memtables, its filter index and
//! its compaction debt. Read from counters and published views: no lock is held longer than
//! [`Engine::stats`] holds one, and no I/O is done.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use crate::core::keyspace_tree::KeyspaceTree;
use crate::core::stats::{LevelFilterStats, Stats};
use crate::core::version::Version;
use crate::paths::engine::Engine;

/// The figures of the whole database and of each keyspace, at one moment.
pub(crate) struct MetricsSnapshot {
    /// The database's statistics (every keyspace together).
    pub stats: Stats,
    /// Whether background work failed and writes are stopped (`Error::Background`).
    pub background_error: bool,
    /// Every keyspace's bytes in memtables, active and frozen (what `db_write_buffer_size`
    /// bounds).
    pub memtable_bytes_all: u64,
    /// Per keyspace, in id order.
    pub keyspaces: Vec<KeyspaceFigures>,
}

/// One keyspace's figures.
pub(crate) struct KeyspaceFigures {
    /// The keyspace's name (the `keyspace` label).
    pub name: Arc<str>,
    /// Per level of its current version (index = level).
    pub levels: Vec<LevelFigures>,
    /// Bytes of the active memtable.
    pub active_memtable_bytes: u64,
    /// Bytes of the frozen memtables waiting for their flush.
    pub immutable_memtable_bytes: u64,
    /// Frozen memtables waiting for their flush.
    pub immutable_memtables: u64,
    /// Entries in the memtables, active and frozen.
    pub memtable_entries: u64,
    /// Bytes compaction owes the tree (`siftdb.estimate-pending-compaction-bytes`).
    pub pending_compaction_bytes: u64,
    /// Lookups that probed the filter index.
    pub filter_index_checked: u64,
    /// Keys it ruled out of every table it covers.
    pub filter_index_useful: u64,
    /// Keys it let through that no table held (while it covered every table).
    pub filter_index_false_positives: u64,
    /// Its bytes now (0 without one).
    pub filter_index_bytes: u64,
    /// Its rebuilds since open.
    pub filter_index_rebuilds: u64,
    /// Its retirements since open.
    pub filter_index_retirements: u64,
    /// Blob files live in the current version.
    pub blob_files: u64,
    /// Their stored value bytes.
    pub blob_file_bytes: u64,
    /// Of those, the bytes no live table references.
    pub blob_garbage_bytes: u64,
}

/// One level of one keyspace.
pub(crate) struct LevelFigures {
    /// Point lookups' filter and data-block tickers on this level since open.
    pub filter: LevelFilterStats,
    /// Tables in the level now.
    pub files: u64,
    /// Bytes of their files.
    pub bytes: u64,
    /// Distinct keys in them (what their filters were sized from).
    pub keys: u64,
}

/// The figures now.
pub(crate) fn snapshot(engine: &Engine) -> MetricsSnapshot {
    let shared = engine.shared();
    let (background_error, (active, frozen)) = {
        let state = shared.state().lock();
        (state.check_background().is_err(), state.memtable_bytes())
    };
    MetricsSnapshot {
        stats: engine.stats(),
        background_error,
        memtable_bytes_all: (active + frozen) as u64,
        keyspaces: shared
            .versions()
            .all_current()
            .iter()
            .map(|(tree, version)| keyspace_figures(engine, tree, version))
            .collect(),
    }
}

fn keyspace_figures(engine: &Engine, tree: &KeyspaceTree, version: &Version) -> KeyspaceFigures {
    let view = tree.read_view();
    let index = &tree.filter_index;
    let (blob_files, blob_file_bytes, blob_garbage_bytes) = version.blob_totals();
    KeyspaceFigures {
        name: Arc::clone(&tree.name),
        levels: level_figures(tree, version),
        active_memtable_bytes: view.mem.approximate_size() as u64,
        immutable_memtable_bytes: view.imm.iter().map(|m| m.approximate_size() as u64).sum(),
        immutable_memtables: view.imm.len() as u64,
        memtable_entries: std::iter::once(&view.mem)
            .chain(&view.imm)
            .map(|m| m.len() as u64)
            .sum(),
        pending_compaction_bytes: crate::paths::properties::property(
            engine,
            tree,
            "siftdb.estimate-pending-compaction-bytes",
        )
        .and_then(|bytes| bytes.parse().ok())
        .unwrap_or(0),
        filter_index_checked: index.tickers.checked.load(Relaxed),
        filter_index_useful: index.tickers.negative.load(Relaxed),
        filter_index_false_positives: index.tickers.false_positive.load(Relaxed),
        filter_index_bytes: index.current().map_or(0, |c| c.size_bytes() as u64),
        filter_index_rebuilds: index.rebuilds.load(Relaxed),
        filter_index_retirements: index.retirements.load(Relaxed),
        blob_files,
        blob_file_bytes,
        blob_garbage_bytes,
    }
}

/// Every level of `version` with `tree`'s tickers for it.
fn level_figures(tree: &KeyspaceTree, version: &Version) -> Vec<LevelFigures> {
    let tickers = crate::core::stats::level_filter_stats(std::iter::once(&tree.levels));
    (0..version.num_levels())
        .map(|level| {
            let files = version.level(level);
            LevelFigures {
                filter: tickers.get(level).copied().unwrap_or_default(),
                files: files.len() as u64,
                bytes: files.iter().map(|f| f.meta.file_size).sum(),
                keys: files.iter().map(|f| f.meta.distinct_keys).sum(),
            }
        })
        .collect()
}
