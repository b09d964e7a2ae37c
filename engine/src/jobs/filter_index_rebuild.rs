//! Rebuilding each tree's filter index (`core::filter_index`) on a background thread: a scan of
//! every user key of the tree's current tables into a fresh filter sized from their exact
//! entry count, which then replaces the old one.
//!
//! A rebuild that fails (a table read fails, the database shuts down, the keyspace is dropped)
//! changes nothing: the old filter, or none, stays, and lookups probe the tables it does not
//! cover by their own filters. The index is derived data, so its failure never stops writes;
//! a damaged table reports itself to the reads and compactions that touch it.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use siftdb_sstable::{user_key_of, TableIterOptions};

use crate::base::error::{Error, Result};
use crate::core::filter_index::RebuildNeed;
use crate::core::keyspace_tree::KeyspaceTree;
use crate::core::shared::Shared;
use crate::core::version::Version;

/// How often the thread looks at every tree's index: a usage window (10,000 lookups) fills in
/// well under a second, and a retirement or a return should follow it closely; a look is a few
/// counter sums per tree.
const TICK: Duration = Duration::from_millis(100);

/// Starts the background thread that rebuilds filter indexes.
pub(crate) fn start_background(shared: &Arc<Shared>) -> Option<std::thread::JoinHandle<()>> {
    crate::jobs::background::spawn(shared, "siftdb-filter-index", background_loop)
}

fn background_loop(db: &Arc<Shared>) {
    loop {
        {
            let mut state = db.state().lock();
            if db.is_shutting_down() {
                return;
            }
            db.state().wait_work_for(&mut state, TICK);
        }
        if db.is_shutting_down() {
            return;
        }
        let rebuilt =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| rebuild_due(db, false)));
        match rebuilt {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => tracing::warn!("siftdb: filter index rebuild failed: {e}"),
            Err(_) => tracing::error!("siftdb: filter index rebuild panicked"),
        }
    }
}

/// Rebuilds the filter index of every tree that needs it (`force`: every tree with tables,
/// whatever the state of its index); returns how many were rebuilt.
pub(crate) fn rebuild_due(db: &Shared, force: bool) -> Result<usize> {
    let mut rebuilt = 0;
    for (tree, version) in db.versions().all_current() {
        if !tree.filter_index.enabled() || tree.dropped.load(Ordering::Acquire) {
            continue;
        }
        let seen = tree.filter_index.rebuilds.load(Ordering::Relaxed);
        let need = match tree.filter_index.need(&version) {
            RebuildNeed::No | RebuildNeed::Retire { .. }
                if force && version.all().next().is_some() =>
            {
                RebuildNeed::Now {
                    room: forced_room(&version),
                }
            }
            need => need,
        };
        match need {
            RebuildNeed::Now { room } => {
                if rebuild(db, &tree, room, force, seen)? {
                    rebuilt += 1;
                }
            }
            RebuildNeed::Retire { r#gen } => retire(db, &tree, r#gen),
            RebuildNeed::No => {}
        }
    }
    Ok(rebuilt)
}

/// The room a forced rebuild sizes for (what a due one would).
fn forced_room(version: &Version) -> u64 {
    let entries: u64 = version.all().map(|(_, f)| f.meta.entries).sum();
    ((entries as f64 * crate::core::filter_index::ROOM) as u64).max(1024)
}

/// Rebuilds `tree`'s filter index with room for `room` keys (unless `force`, only if it is
/// still due once this thread has the turn: no rebuild finished since the decision, taken when
/// `seen` rebuilds had); whether it did.
fn rebuild(
    db: &Shared,
    tree: &Arc<KeyspaceTree>,
    room: u64,
    force: bool,
    seen: u64,
) -> Result<bool> {
    let index = &tree.filter_index;
    let _turn = index.rebuild_turn();
    // Decided before the turn: a rebuild that finished meanwhile (`Db::build_filter_index`, or
    // this thread's own) may have made this one needless — a second scan of every table, and a
    // swap window for the tables written during it.
    if !force && index.rebuilds.load(Ordering::Relaxed) != seen {
        return Ok(false);
    }
    let Some(filter) = index.begin_rebuild(room, db.cache()) else {
        return Ok(false);
    };
    // Captured after the rebuild registered: every flush from here on adds to its filter.
    let version = db.versions().current(tree);
    index.plan_cover(version.all().map(|(_, f)| f));
    let scanned = scan_into(db, tree, &version, &|hash| filter.add(hash));
    let keys = match scanned {
        Ok(keys) => keys,
        Err(e) => {
            index.abandon_rebuild();
            return Err(e);
        }
    };
    filter.count_added(keys);
    index.finish_rebuild(&filter);
    // The views published from now on carry the new filter; republish the current one too.
    let state = db.state().lock();
    db.versions().publish_view(&state, tree.id);
    drop(state);
    tracing::debug!(
        "siftdb: keyspace {:?} filter index rebuilt: {keys} keys, {} bytes",
        tree.name,
        filter.size_bytes()
    );
    Ok(true)
}

/// Drops `tree`'s filter index while its lookups find their keys (`FilterIndex::retire`).
fn retire(db: &Shared, tree: &Arc<KeyspaceTree>, r#gen: u64) {
    let _turn = tree.filter_index.rebuild_turn();
    tree.filter_index.retire(r#gen);
    let state = db.state().lock();
    db.versions().publish_view(&state, tree.id);
    drop(state);
    tracing::debug!(
        "siftdb: keyspace {:?} filter index retired: its lookups find their keys",
        tree.name
    );
}

/// Adds every distinct user key of each table of `version` to `add` (by its per-table filter
/// hash); returns how many keys were added. Blocks are read without filling the cache.
fn scan_into(
    db: &Shared,
    tree: &KeyspaceTree,
    version: &Version,
    add: &dyn Fn(u64),
) -> Result<u64> {
    let hasher = db.options().filter_hasher;
    let mut keys = 0u64;
    for (_, file) in version.all() {
        if file.meta.entries == 0 {
            continue;
        }
        let mut iter = file.table.iter_with(TableIterOptions {
            fill_cache: false,
            read_once: true,
            readahead_bytes: db.options().compaction_readahead_size,
            ..TableIterOptions::default()
        });
        iter.seek_to_first();
        // The table's previous user key (none before its first: the empty key is a key too).
        let mut last: Option<Vec<u8>> = None;
        while iter.valid() {
            let user_key = user_key_of(iter.key());
            if last.as_deref() != Some(user_key) {
                add(hasher.hash(user_key));
                keys += 1;
                let last = last.get_or_insert_with(Vec::new);
                last.clear();
                last.extend_from_slice(user_key);
                if keys.is_multiple_of(4096) && stopped(db, tree) {
                    return Err(Error::Closed);
                }
            }
            iter.next();
        }
        if let Some(e) = iter.take_error() {
            return Err(Error::from(e));
        }
    }
    Ok(keys)
}

/// Whether a rebuild should stop: the database is closing or the keyspace went.
fn stopped(db: &Shared, tree: &KeyspaceTree) -> bool {
    db.is_shutting_down() || tree.dropped.load(Ordering::Acquire)
}
