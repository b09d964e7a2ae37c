//! `compact_range`: a manual compaction of a key range down to the bottom level, run alone (the
//! background compactions wait), after a flush of the memtable.

use std::collections::HashSet;
use std::sync::Arc;

use siftdb_compaction::picker::{self, LevelFile, Pick};

use crate::base::error::{BackgroundJob, Error, Result};
use crate::core::keyspace_tree::KeyspaceTree;
use crate::core::version_set::level_files;
use crate::jobs::compaction::CompactionJob;
use crate::paths::engine::Engine;

/// A manual compaction's failure stops writes as a background one's would (a failed output sync
/// may have dropped pages the engine must not trust again: never "retry and carry on"), except
/// a compaction filter's failure (nothing was lost, a later compaction retries) and a keyspace
/// dropped meanwhile.
fn stop_writes_unless_retryable(db: &crate::core::shared::Shared, e: &Error) {
    if !matches!(e, Error::CompactionFilter(_) | Error::KeyspaceDropped(_)) {
        crate::jobs::background::record_failure(db, BackgroundJob::Compaction, e);
    }
}

/// Compacts every file overlapping `[start, end]` down to the deepest non-empty level (at least
/// L1), then rewrites that level's overlapping files in place, so overwritten and deleted keys
/// in the range are reclaimed. On the way down, files that overlap nothing below move by a
/// manifest edit alone: the last step rewrites them anyway. Tables the merge into the deepest
/// level wrote are not rewritten again: that merge was already a compaction into the bottom
/// level (RocksDB's compact_range merges L0 straight into one bottom table the
/// same way). Under FIFO compaction only the flush happens.
pub(crate) fn compact_range(
    engine: &Engine,
    tree: &Arc<KeyspaceTree>,
    start: Option<&[u8]>,
    end: Option<&[u8]>,
) -> Result<()> {
    engine.flush(tree)?;
    if tree.options().compaction_style == crate::base::compaction_style::CompactionStyle::Fifo {
        // FIFO never merges: a merged table would take the age of its newest input, and old
        // data would outlive its TTL. Dropping what is past the limits is the background's.
        return Ok(());
    }
    let _exclusive = engine.compactions().exclusive();
    let db = engine.shared();
    let in_range = |f: &LevelFile| {
        start.is_none_or(|s| f.largest.as_slice() >= s)
            && end.is_none_or(|e| f.smallest.as_slice() <= e)
    };
    let deepest = {
        let version = db.versions().current(tree);
        (0..version.num_levels())
            .rev()
            .find(|&l| !version.level(l).is_empty())
            .unwrap_or(0)
            .max(1)
    };
    // The tables that exist before the last step down (into the deepest level): the tables
    // that step writes are new, and only they come from a merge into the bottom. A table
    // written by an earlier step and then moved down (a manifest edit, its number kept) may
    // still hold tombstones and operands: it is in this set, and is rewritten like the rest.
    let mut before_last_step: HashSet<u64> = HashSet::new();
    for level in 0..deepest {
        tree.check_live()?;
        let version = db.versions().current(tree);
        if level + 1 == deepest {
            before_last_step = version.all().map(|(_, f)| f.meta.number).collect();
        }
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
        if !inputs.is_empty() {
            run_pick(
                db,
                tree,
                version,
                picker::pick_files(&levels, level, inputs),
            )?;
        }
    }
    // The deepest level in place, but for the tables this call wrote there, unless they hold
    // values of blob files garbage collection relocates: the merge chose those files before it
    // ran, and the garbage it made (the values it dropped) is only counted now. Each run of
    // neighbouring tables is a job of its own: one job over tables with others between them
    // would write outputs spanning those others, and overlap them within the level.
    let runs = {
        let version = db.versions().current(tree);
        let levels = level_files(&version);
        let relocating = tables_holding_collectable_blobs(&version, &tree.options(), deepest);
        runs_of(&levels[deepest], |f| {
            in_range(f) && (before_last_step.contains(&f.number) || relocating.contains(&f.number))
        })
    };
    for run in runs {
        tree.check_live()?;
        let version = db.versions().current(tree);
        let levels = level_files(&version);
        // In place: only the chosen files, nothing from a level below.
        let pick = picker::pick_files(&levels, deepest, run).map(|p| Pick {
            next_inputs: Vec::new(),
            output_level: deepest,
            ..p
        });
        run_pick(db, tree, version, pick)?;
    }
    // Returns with the tables it replaced gone (queued for the deleter thread meanwhile).
    db.drain_deletions();
    Ok(())
}

/// The tables of `level` that reference a blob file garbage collection would relocate now.
fn tables_holding_collectable_blobs(
    version: &crate::core::version::Version,
    options: &crate::base::options::Options,
    level: usize,
) -> HashSet<u64> {
    let collectable = crate::core::blob_gc::files_to_collect(version, options);
    if collectable.is_empty() {
        return HashSet::new();
    }
    version
        .level(level)
        .iter()
        .filter(|t| {
            t.meta
                .blob_refs
                .iter()
                .any(|r| collectable.contains(&r.file))
        })
        .map(|t| t.meta.number)
        .collect()
}

/// Runs the compaction `pick` describes, if any, on `version`.
fn run_pick(
    db: &Arc<crate::core::shared::Shared>,
    tree: &Arc<KeyspaceTree>,
    version: Arc<crate::core::version::Version>,
    pick: Option<Pick>,
) -> Result<()> {
    let Some(pick) = pick else { return Ok(()) };
    if let Some(job) = CompactionJob::prepare(db, tree, version, &pick, None) {
        job.run()
            .inspect_err(|e| stop_writes_unless_retryable(db, e))?;
    }
    Ok(())
}

/// The numbers of `files` (one level, in key order) that are `wanted`, in runs of neighbours.
fn runs_of(files: &[LevelFile], wanted: impl Fn(&LevelFile) -> bool) -> Vec<Vec<u64>> {
    let mut runs = Vec::new();
    let mut run = Vec::new();
    for f in files {
        if wanted(f) {
            run.push(f.number);
        } else if !run.is_empty() {
            runs.push(std::mem::take(&mut run));
        }
    }
    if !run.is_empty() {
        runs.push(run);
    }
    runs
}
