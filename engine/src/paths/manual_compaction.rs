//! `compact_range`: a manual compaction of a key range down to the bottom level, run alone (the
//! background compactions wait), after a flush of the memtable.

use std::sync::Arc;

use siftdb_compaction::picker::{self, LevelFile, Pick};

use crate::base::error::{BackgroundJob, Error, Result};
use crate::core::tree::Tree;
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
/// manifest edit alone: the last step rewrites them anyway. Under FIFO compaction only the
/// flush happens.
pub(crate) fn compact_range(
    engine: &Engine,
    tree: &Arc<Tree>,
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
    for level in 0..=deepest {
        tree.check_live()?;
        let version = db.versions().current(tree);
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
        let Some(mut pick) = pick else { continue };
        if level == deepest {
            pick.output_level = level;
        }
        if let Some(job) = CompactionJob::prepare(db, tree, version, &pick, None) {
            job.run()
                .inspect_err(|e| stop_writes_unless_retryable(db, e))?;
        }
    }
    // Returns with the tables it replaced gone (queued for the deleter thread meanwhile).
    db.drain_deletions();
    Ok(())
}
