//! Leveled compaction: the background thread, the job that rewrites tables one level down, and
//! `compact_range`.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use siftdb_compaction::picker::{self, LevelFile, Pick, PickerConfig, Running};
use siftdb_compaction::{merge_into, CompactionSink, GcRules, InternalIterator, MergingIterator};
use siftdb_sstable::{FilterSpec, InternalKey, SstError, TableBuildOptions, TableBuilder};

use crate::db::{DbInner, DbState};
use crate::error::{Error, Result};
use crate::fs::{names, WritableFile};
use crate::version::{TableFile, Version};
use crate::version_edit::{FileMeta, VersionEdit};

/// Starts the background compaction threads (`Options::max_background_compactions`).
pub(crate) fn start_background(inner: &Arc<DbInner>) {
    let count = inner.options.max_background_compactions.max(1);
    let handles: Vec<_> = (0..count)
        .filter_map(|i| {
            crate::flush::spawn_background(inner, &format!("siftdb-compact-{i}"), background_loop)
        })
        .collect();
    *inner.compaction_threads.lock() = handles;
}

fn background_loop(db: &Arc<DbInner>) {
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
                Ok(true) => continue,
                Ok(false) => break,
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

fn picker_config(db: &DbInner) -> PickerConfig {
    PickerConfig {
        l0_trigger: db.options.level0_file_num_compaction_trigger.max(1),
        base_level_bytes: db.options.max_bytes_for_level_base.max(1),
        multiplier: db.options.max_bytes_for_level_multiplier.max(1.0),
    }
}

fn level_files(version: &Version) -> Vec<Vec<LevelFile>> {
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

/// Runs one compaction if the tree needs one and one fits beside those under way; returns
/// whether it did.
pub(crate) fn maybe_compact(db: &Arc<DbInner>) -> Result<bool> {
    let _shared = db.compaction_lock.read();
    let (pick, version, reservation) = {
        let mut state = db.state.lock();
        let Some((pick, reservation)) = next_pick(db, &state) else {
            return Ok(false);
        };
        state.compacting.push(reservation.clone());
        db.counters
            .compactions_peak_concurrency
            .fetch_max(state.compacting.len() as u64, Ordering::Relaxed);
        if let Some(cursor) = state.compact_cursors.get_mut(pick.level) {
            cursor.clone_from(&pick.end_key);
        }
        (pick, Arc::clone(&state.version), reservation)
    };
    // Released however the job ends, so its files are never held forever.
    let _release = Reservation { db, reservation };
    let output_level = pick.level + 1;
    run(db, &version, &pick, output_level)?;
    Ok(true)
}

/// The compaction the tree needs next that fits beside those under way, with the reservation
/// it would hold.
fn next_pick(db: &DbInner, state: &DbState) -> Option<(Pick, Running)> {
    let levels = level_files(&state.version);
    let pick = picker::pick_besides(
        &levels,
        &picker_config(db),
        &state.compact_cursors,
        &state.compacting,
    )?;
    let reservation = Running::of(&pick, &levels, pick.level + 1);
    Some((pick, reservation))
}

/// A background compaction's entry in `DbState::compacting`, removed on drop.
struct Reservation<'a> {
    db: &'a DbInner,
    reservation: Running,
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        let mut state = self.db.state.lock();
        if let Some(i) = state.compacting.iter().position(|r| *r == self.reservation) {
            state.compacting.swap_remove(i);
        }
        self.db.state_changed.notify_all();
        self.db.work_available.notify_all();
    }
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
        if next_pick(db, &state).is_none() && state.compacting.is_empty() {
            return Ok(());
        }
        db.work_available.notify_all();
        db.state_changed
            .wait_for(&mut state, Duration::from_millis(50));
    }
}

/// Compacts every file overlapping `[start, end]` down to the deepest non-empty level (at least
/// L1), then rewrites that level's overlapping files in place, so overwritten and deleted keys
/// in the range are reclaimed.
pub(crate) fn compact_range(
    db: &Arc<DbInner>,
    start: Option<&[u8]>,
    end: Option<&[u8]>,
) -> Result<()> {
    crate::flush::flush_and_wait(db)?;
    let _exclusive = db.compaction_lock.write();
    let in_range = |f: &LevelFile| {
        start.is_none_or(|s| f.largest.as_slice() >= s)
            && end.is_none_or(|e| f.smallest.as_slice() <= e)
    };
    let deepest = {
        let state = db.state.lock();
        (0..state.version.num_levels())
            .rev()
            .find(|&l| !state.version.level(l).is_empty())
            .unwrap_or(0)
            .max(1)
    };
    for level in 0..=deepest {
        let (version, pick) = {
            let state = db.state.lock();
            let levels = level_files(&state.version);
            let inputs: Vec<u64> = if level == 0 && levels[0].iter().any(&in_range) {
                // L0 files overlap each other: moving some of them below an older one that
                // holds the same keys would let the older versions win. All of L0 goes.
                levels[0].iter().map(|f| f.number).collect()
            } else {
                levels[level]
                    .iter()
                    .filter(|f| in_range(f))
                    .map(|f| f.number)
                    .collect()
            };
            let pick = if inputs.is_empty() {
                None
            } else if level == deepest {
                // In place: only the chosen files, nothing from a level below.
                picker::pick_files(&levels, level, inputs).map(|p| Pick {
                    next_inputs: Vec::new(),
                    ..p
                })
            } else {
                picker::pick_files(&levels, level, inputs)
            };
            (Arc::clone(&state.version), pick)
        };
        if let Some(pick) = pick {
            let output = if level == deepest { level } else { level + 1 };
            run(db, &version, &pick, output)?;
        }
    }
    Ok(())
}

/// An output overlapping more than this many target file sizes of the level below it is cut
/// early (LevelDB's grandparent limit): compacting it down later would rewrite that much.
const MAX_GRANDPARENT_OVERLAP_FILES: u64 = 10;

/// Writes surviving entries into output tables of the target size, cut at user-key boundaries,
/// and early where an output would overlap too much of the level below the output level.
struct TableSink<'a> {
    db: &'a DbInner,
    options: TableBuildOptions,
    target_size: u64,
    /// Files of the level below the output level: (largest user key, size), in key order.
    grandparents: Vec<(Vec<u8>, u64)>,
    grandparent_index: usize,
    grandparent_overlap: u64,
    current: Option<(u64, TableBuilder<Box<dyn WritableFile>>)>,
    outputs: Vec<FileMeta>,
    bytes_written: u64,
}

impl TableSink<'_> {
    fn finish_current(&mut self) -> Result<()> {
        let Some((number, builder)) = self.current.take() else {
            return Ok(());
        };
        let (meta, mut file) = builder.finish_into()?;
        file.sync()?;
        self.bytes_written += meta.file_size;
        let props = meta.properties;
        let key = |bytes: Vec<u8>| {
            InternalKey::from_encoded(bytes)
                .ok_or_else(|| Error::Corruption("compaction output without keys".to_string()))
        };
        self.outputs.push(FileMeta {
            number,
            file_size: meta.file_size,
            smallest: key(props.smallest_key)?,
            largest: key(props.largest_key)?,
            entries: props.entries,
            distinct_keys: props.distinct_keys,
        });
        Ok(())
    }
}

impl CompactionSink for TableSink<'_> {
    fn add(
        &mut self,
        key: &[u8],
        value: &[u8],
        boundary: bool,
    ) -> std::result::Result<(), SstError> {
        let to_sst = |e: Error| SstError::InvalidArgument(e.to_string());
        if boundary {
            // Grandparent files entirely before this key are overlapped by the current output.
            let user_key = siftdb_sstable::user_key_of(key);
            while let Some((largest, size)) = self.grandparents.get(self.grandparent_index) {
                if largest.as_slice() >= user_key {
                    break;
                }
                if self.current.is_some() {
                    self.grandparent_overlap += size;
                }
                self.grandparent_index += 1;
            }
            let full = self
                .current
                .as_ref()
                .is_some_and(|c| c.1.estimated_size() >= self.target_size);
            let overlaps_too_much =
                self.grandparent_overlap > MAX_GRANDPARENT_OVERLAP_FILES * self.target_size;
            if self.current.is_some() && (full || overlaps_too_much) {
                self.finish_current().map_err(to_sst)?;
                self.grandparent_overlap = 0;
            }
        }
        if self.current.is_none() {
            let number = {
                let mut state = self.db.state.lock();
                let n = state.new_file_number();
                state.pending_outputs.push(n);
                n
            };
            let file = self
                .db
                .fs
                .create(&names::table(&self.db.dir, number))
                .map_err(|source| SstError::Io {
                    file: format!("{number:06}.sst"),
                    source,
                })?;
            self.current = Some((number, TableBuilder::new(file, self.options.clone())));
        }
        match self.current.as_mut() {
            Some(c) => c.1.add(key, value),
            None => Ok(()),
        }
    }
}

/// Runs one compaction of `pick` (inputs from `pick.level` and `pick.level + 1`) into
/// `output_level`, and installs the result with one manifest edit.
fn run(db: &Arc<DbInner>, version: &Version, pick: &Pick, output_level: usize) -> Result<()> {
    let next_level = pick.level + 1;
    let inputs: Vec<(usize, Arc<TableFile>)> = version
        .level(pick.level)
        .iter()
        .filter(|f| pick.inputs.contains(&f.meta.number))
        .map(|f| (pick.level, Arc::clone(f)))
        .chain(
            version
                .level(next_level)
                .iter()
                .filter(|f| pick.next_inputs.contains(&f.meta.number))
                .map(|f| (next_level, Arc::clone(f))),
        )
        .collect();
    if inputs.is_empty() {
        return Ok(());
    }
    let smallest = inputs
        .iter()
        .map(|(_, f)| f.smallest_user_key())
        .min()
        .unwrap_or(&[])
        .to_vec();
    let largest = inputs
        .iter()
        .map(|(_, f)| f.largest_user_key())
        .max()
        .unwrap_or(&[])
        .to_vec();
    // Bottommost: no level below the output holds any key of the range.
    let bottommost = (output_level + 1..version.num_levels()).all(|l| {
        version.level(l).iter().all(|f| {
            f.largest_user_key() < smallest.as_slice() || f.smallest_user_key() > largest.as_slice()
        })
    });
    let rules = GcRules {
        snapshots: db.snapshots.sequences(),
        bottommost,
    };
    // The output level's filter: kind from the policy, bits/key from the plan of the tree as it
    // will be once the inputs have moved down.
    let mut level_keys = version.level_keys();
    let moved: u64 = inputs.iter().map(|(_, f)| f.meta.distinct_keys).sum();
    for (level, f) in &inputs {
        level_keys[*level] = level_keys[*level].saturating_sub(f.meta.distinct_keys);
    }
    level_keys[output_level] += moved;
    let filter = FilterSpec {
        kind: db.options.filter_policy().kind_for_level(output_level),
        bits_per_key: crate::filter_plan::bits_per_key_for(
            &db.options,
            version,
            output_level,
            &level_keys,
            &inputs
                .iter()
                .map(|(_, f)| f.meta.number)
                .collect::<Vec<_>>(),
        ),
    };
    let options = TableBuildOptions {
        block_size: db.options.block_size,
        block_restart_interval: db.options.block_restart_interval,
        filter: Some(filter),
        key_hasher: db.options.filter_hasher,
        prefix_extractor: db.options.prefix_extractor.clone(),
    };
    let children: Vec<Box<dyn InternalIterator>> = inputs
        .iter()
        .map(|(_, f)| Box::new(f.table.iter()) as Box<dyn InternalIterator>)
        .collect();
    let mut merge = MergingIterator::new(children);
    let grandparents = version
        .level(output_level + 1)
        .iter()
        .map(|f| (f.largest_user_key().to_vec(), f.meta.file_size))
        .collect();
    let mut sink = TableSink {
        db,
        options,
        target_size: db.options.target_file_size_base.max(1),
        grandparents,
        grandparent_index: 0,
        grandparent_overlap: 0,
        current: None,
        outputs: Vec::new(),
        bytes_written: 0,
    };
    let merged = merge_into(&mut merge, &rules, &mut sink).map_err(Error::from);
    let finished = merged.and_then(|_| sink.finish_current());
    let outputs = std::mem::take(&mut sink.outputs);
    let bytes_written = sink.bytes_written;
    let release_pending = |db: &DbInner| {
        let mut state = db.state.lock();
        state
            .pending_outputs
            .retain(|n| !outputs.iter().any(|o| o.number == *n));
        if let Some((n, _)) = &sink.current {
            let n = *n;
            state.pending_outputs.retain(|p| *p != n);
        }
    };
    if let Err(e) = finished {
        release_pending(db);
        crate::recovery::delete_obsolete_files(db);
        return Err(e);
    }
    // The outputs' directory entries must be durable before the manifest names them.
    if !outputs.is_empty() {
        if let Err(e) = db.fs.sync_dir(&db.dir) {
            release_pending(db);
            return Err(e.into());
        }
    }
    // Open the outputs, then install: one edit removes the inputs and adds the outputs.
    let opened: Vec<Arc<TableFile>> = outputs
        .iter()
        .map(|m| crate::flush::open_table(db, output_level, m))
        .collect::<Result<_>>()?;
    let mut edit = VersionEdit::default();
    for (level, f) in &inputs {
        edit.deleted.push((*level, f.meta.number));
    }
    for m in &outputs {
        edit.added.push((output_level, m.clone()));
    }
    {
        let mut state = db.state.lock();
        edit.next_file_number = Some(state.next_file_number);
        edit.last_sequence = Some(state.last_sequence);
        state.log_edit(&edit)?;
        let mut by_number = opened.iter();
        let new_version = state.version.apply(&edit, |_, meta| {
            by_number
                .find(|t| t.meta.number == meta.number)
                .cloned()
                .ok_or_else(|| Error::Corruption("compaction output missing".to_string()))
        })?;
        state.version = Arc::new(new_version);
        db.publish_view(&state);
        state
            .pending_outputs
            .retain(|n| !outputs.iter().any(|o| o.number == *n));
        db.state_changed.notify_all();
    }
    for (_, f) in &inputs {
        // The inputs' blocks are dead weight in the cache; readers still holding the old
        // version keep their own `Arc`s of the blocks they use.
        db.cache.erase_table(f.meta.number);
    }
    let read: u64 = inputs.iter().map(|(_, f)| f.meta.file_size).sum();
    db.counters.compactions.fetch_add(1, Ordering::Relaxed);
    db.counters
        .compaction_bytes_read
        .fetch_add(read, Ordering::Relaxed);
    db.counters
        .compaction_bytes_written
        .fetch_add(bytes_written, Ordering::Relaxed);
    crate::recovery::delete_obsolete_files(db);
    Ok(())
}
