//! Leveled compaction: the background threads, `wait_for_compaction` and `compact_range`. What
//! one job does — prepare, write (or move), install — is in `job.rs`; its output tables are cut
//! in `sink.rs`.

mod heat_map;
mod job;
mod sink;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use siftdb_compaction::picker::{self, LevelFile, Pick, PickerConfig};

use crate::api::db::DbInner;
use crate::base::error::{Error, Result};
use crate::base::options::Options;
use crate::core::tree::Tree;
use crate::core::version_set::level_files;
use job::CompactionJob;

/// Starts the background compaction threads (`Options::max_background_compactions`).
pub(crate) fn start_background(inner: &Arc<DbInner>) {
    let count = inner.options.max_background_compactions;
    let handles: Vec<_> = (0..count)
        .filter_map(|i| {
            crate::jobs::flush::spawn_background(inner, &format!("siftdb-compact-{i}"), background_loop)
        })
        .collect();
    *inner.compaction_threads.lock() = handles;
}

/// The longest pause between retries of a compaction whose filter keeps failing.
const MAX_FILTER_RETRY_PAUSE: Duration = Duration::from_secs(10);

fn background_loop(db: &Arc<DbInner>) {
    let mut filter_failures = 0u32;
    loop {
        {
            let mut state = db.state.lock();
            if db.shutting_down.load(Ordering::Acquire) {
                return;
            }
            db.work_available
                .wait_for(&mut state, Duration::from_millis(200));
            if db.shutting_down.load(Ordering::Acquire) {
                return;
            }
            if state.bg_error.is_some() {
                continue;
            }
        }
        // Run compactions until the tree is in shape.
        loop {
            if db.shutting_down.load(Ordering::Acquire) {
                return;
            }
            match maybe_compact(db) {
                Ok(true) => {
                    filter_failures = 0;
                    db.compaction_filter_failure.lock().take();
                    continue;
                }
                Ok(false) => break,
                // The keyspace went while its compaction ran: the outputs are orphans now.
                Err(Error::KeyspaceDropped(_)) => continue,
                // The user's filter failed: nothing was lost and writes go on; try again after
                // a pause that grows while it keeps failing.
                Err(Error::CompactionFilter(why)) => {
                    tracing::warn!("siftdb: compaction abandoned, will retry: {why}");
                    db.counters
                        .compaction_filter_failures
                        .fetch_add(1, Ordering::Relaxed);
                    *db.compaction_filter_failure.lock() = Some(why);
                    filter_failures = filter_failures.saturating_add(1);
                    let pause = Duration::from_millis(100)
                        .saturating_mul(1 << filter_failures.min(7))
                        .min(MAX_FILTER_RETRY_PAUSE);
                    pause_unless_shutting_down(db, pause);
                    break;
                }
                Err(e) => {
                    let mut state = db.state.lock();
                    state
                        .bg_error
                        .get_or_insert(format!("compaction failed: {e}"));
                    tracing::error!("siftdb: compaction failed, writes stopped: {e}");
                    db.state_changed.notify_all();
                    break;
                }
            }
        }
    }
}

/// Sleeps for `pause`, waking early only to shut down.
fn pause_unless_shutting_down(db: &DbInner, pause: Duration) {
    let deadline = std::time::Instant::now() + pause;
    let mut state = db.state.lock();
    while !db.shutting_down.load(Ordering::Acquire) {
        let now = std::time::Instant::now();
        if now >= deadline {
            return;
        }
        db.state_changed.wait_for(&mut state, deadline - now);
    }
}

/// The picker's settings for a tree with `options`.
pub(crate) fn picker_config(options: &Options) -> PickerConfig {
    PickerConfig {
        l0_trigger: options.level0_file_num_compaction_trigger,
        base_level_bytes: options.max_bytes_for_level_base,
        multiplier: options.max_bytes_for_level_multiplier,
        compaction_pri: options.compaction_pri,
    }
}

/// Runs one compaction if some keyspace's tree needs one and one fits beside those under way;
/// returns whether it did.
pub(crate) fn maybe_compact(db: &Arc<DbInner>) -> Result<bool> {
    let _shared = db.compaction_lock.read();
    let Some(picked) = db.versions.pick_compaction(db) else {
        return Ok(false);
    };
    let output_level = picked.pick.level + 1;
    let job = CompactionJob::prepare(
        db,
        &picked.tree,
        picked.version,
        &picked.pick,
        output_level,
        Some(picked.reservation),
    );
    if let Some(job) = job {
        job.run()?;
    }
    Ok(true)
}

/// Waits until the tree needs no compaction and none is under way. The background threads do
/// the work (so at most `max_background_compactions` ever run); the caller only wakes them and
/// waits.
pub(crate) fn wait_for_compaction(db: &Arc<DbInner>) -> Result<()> {
    let mut state = db.state.lock();
    loop {
        if let Some(e) = &state.bg_error {
            return Err(Error::Background(e.clone()));
        }
        if db.shutting_down.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        if db.versions.is_settled() {
            return Ok(());
        }
        // A compaction the tree needs keeps failing in the user's filter: waiting would never
        // end.
        if let Some(why) = db.compaction_filter_failure.lock().clone() {
            return Err(Error::CompactionFilter(why));
        }
        db.work_available.notify_all();
        db.state_changed
            .wait_for(&mut state, Duration::from_millis(50));
    }
}

/// Compacts every file overlapping `[start, end]` down to the deepest non-empty level (at least
/// L1), then rewrites that level's overlapping files in place, so overwritten and deleted keys
/// in the range are reclaimed. On the way down, files that overlap nothing below move by a
/// manifest edit alone: the last step rewrites them anyway.
pub(crate) fn compact_range(
    db: &Arc<DbInner>,
    tree: &Arc<Tree>,
    start: Option<&[u8]>,
    end: Option<&[u8]>,
) -> Result<()> {
    crate::jobs::flush::flush_and_wait(db, tree)?;
    let _exclusive = db.compaction_lock.write();
    let in_range = |f: &LevelFile| {
        start.is_none_or(|s| f.largest.as_slice() >= s)
            && end.is_none_or(|e| f.smallest.as_slice() <= e)
    };
    let deepest = {
        let version = db.versions.current(tree);
        (0..version.num_levels())
            .rev()
            .find(|&l| !version.level(l).is_empty())
            .unwrap_or(0)
            .max(1)
    };
    for level in 0..=deepest {
        tree.check_live()?;
        let version = db.versions.current(tree);
        let levels = level_files(&version);
        let inputs: Vec<u64> = if level == 0 && levels[0].iter().any(in_range) {
            // L0 files overlap each other: moving some of them below an older one that holds
            // the same keys would let the older versions win. All of L0 goes.
            levels[0].iter().map(|f| f.number).collect()
        } else {
            levels[level]
                .iter()
                .filter(|f| in_range(f))
                .map(|f| f.number)
                .collect()
        };
        if inputs.is_empty() {
            continue;
        }
        let pick = if level == deepest {
            // In place: only the chosen files, nothing from a level below.
            picker::pick_files(&levels, level, inputs).map(|p| Pick {
                next_inputs: Vec::new(),
                ..p
            })
        } else {
            picker::pick_files(&levels, level, inputs)
        };
        let Some(pick) = pick else { continue };
        let output = if level == deepest { level } else { level + 1 };
        if let Some(job) = CompactionJob::prepare(db, tree, version, &pick, output, None) {
            job.run()?;
        }
    }
    Ok(())
}
