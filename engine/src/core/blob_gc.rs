//! Blob garbage collection's choices: which blob files are old enough for compactions to move
//! their live values out (`blob_garbage_collection_age_cutoff`), and, once those files hold
//! enough garbage (`blob_garbage_collection_force_threshold`), the compaction to run for them
//! when nothing else needs one (RocksDB's integrated BlobDB garbage collection).

use std::collections::{BTreeMap, BTreeSet};

use siftdb_compaction::picker::{self, LevelFile, Pick, Running};

use crate::base::options::Options;
use crate::core::version::Version;

/// The blob files whose live values compactions relocate: of those holding garbage, at least
/// `min_garbage_ratio` of their bytes, the oldest (lowest numbered) `age_cutoff` share, counted
/// in whole files rounded down. RocksDB counts its cutoff over every blob file and relocates
/// files without garbage too; here a file is relocated only when that frees enough for what it
/// moves (fjall's staleness threshold: an overwrite of random keys leaves a little garbage in
/// every old file, and relocating all of them at the first overwritten value moved twice the
/// bytes written), and the cutoff counts only such files, so that a tree of mostly live young
/// files does not make every compaction move the live half of every old one. Empty when
/// garbage collection is off.
pub(crate) fn files_to_collect(version: &Version, options: &Options) -> BTreeSet<u64> {
    if !options.enable_blob_garbage_collection {
        return BTreeSet::new();
    }
    collectable(version, options, &version.blob_live_bytes())
}

/// [`files_to_collect`] given each blob file's referenced bytes (`Version::blob_live_bytes`).
fn collectable(version: &Version, options: &Options, live: &BTreeMap<u64, u64>) -> BTreeSet<u64> {
    let min_ratio = options.blob_garbage_collection_min_garbage_ratio;
    let with_garbage: Vec<u64> = version
        .blob_files()
        .values()
        .filter(|b| {
            let stored = b.meta.stored_bytes;
            let garbage = stored.saturating_sub(live.get(&b.meta.number).copied().unwrap_or(0));
            garbage > 0 && garbage as f64 >= min_ratio * stored as f64
        })
        .map(|b| b.meta.number)
        .collect();
    let cutoff = (with_garbage.len() as f64 * options.blob_garbage_collection_age_cutoff) as usize;
    with_garbage.into_iter().take(cutoff).collect()
}

/// The share of garbage in `files`: their stored bytes no table references, over their stored
/// bytes.
fn garbage_ratio(version: &Version, files: &BTreeSet<u64>, live: &BTreeMap<u64, u64>) -> f64 {
    let (total, referenced) = files
        .iter()
        .filter_map(|n| version.blob_files().get(n))
        .fold((0u64, 0u64), |(t, r), b| {
            let live = live.get(&b.meta.number).copied().unwrap_or(0);
            (t + b.meta.stored_bytes, r + live.min(b.meta.stored_bytes))
        });
    if total == 0 {
        return 0.0;
    }
    (total - referenced) as f64 / total as f64
}

/// A compaction forced by garbage: when the files to collect hold garbage at or above the force
/// threshold, one table referencing them (the deepest that can run beside `running`) is
/// compacted into the next level, which relocates its live values. Tables of the last level
/// cannot be forced (there is no level below them); ordinary compactions still collect them.
pub(crate) fn forced_pick(
    version: &Version,
    options: &Options,
    levels: &[Vec<LevelFile>],
    running: &[Running],
) -> Option<Pick> {
    if options.blob_garbage_collection_force_threshold >= 1.0 {
        return None;
    }
    if !options.enable_blob_garbage_collection {
        return None;
    }
    let live = version.blob_live_bytes();
    let files = collectable(version, options, &live);
    if files.is_empty() {
        return None;
    }
    let ratio = garbage_ratio(version, &files, &live);
    if ratio == 0.0 || ratio < options.blob_garbage_collection_force_threshold {
        return None;
    }
    let last = levels.len().checked_sub(1)?;
    for level in (1..last).rev() {
        let referencing = version
            .level(level)
            .iter()
            .filter(|f| f.meta.blob_refs.iter().any(|r| files.contains(&r.file)));
        for table in referencing {
            let pick = picker::pick_files(levels, level, vec![table.meta.number]);
            if let Some(pick) = pick.filter(|p| picker::fits_beside(p, levels, running)) {
                return Some(pick);
            }
        }
    }
    let l0_references = version
        .level(0)
        .iter()
        .any(|f| f.meta.blob_refs.iter().any(|r| files.contains(&r.file)));
    if !l0_references {
        return None;
    }
    let all_l0 = version.level(0).iter().map(|f| f.meta.number).collect();
    picker::pick_files(levels, 0, all_l0).filter(|p| picker::fits_beside(p, levels, running))
}
