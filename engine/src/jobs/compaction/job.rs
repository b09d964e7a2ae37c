//! One compaction job, in named steps: [`CompactionJob::prepare`] fixes the inputs;
//! [`CompactionJob::run`] either moves them down by a manifest edit alone (a trivial move) or
//! writes their merge into new tables and installs those. The job owns its reservation and the
//! outputs it has numbered but not installed; dropping it — however the job ends — releases both.
//!
//! * **Drop** (FIFO): the picked tables leave the version by one edit; nothing is written.
//! * **Move** (LevelDB's `IsTrivialMove`, for several files as RocksDB allows): inputs all of one
//!   level, overlapping neither each other nor the output level, nor too much of the level below
//!   it, go down by one edit: no byte written, their cached blocks still valid. Their filters
//!   must suit the new level (`filters_fit_output_level`); under Monkey a ribbon filter richer
//!   than the level's plan moves too, read thinned to the plan (its cap recorded in the
//!   manifest). A table whose values blob garbage collection relocates is rewritten instead.
//! * **Write**: the garbage-collection rules (`GcRules`: live snapshots, bottommost, the inputs'
//!   range tombstones collapsed per snapshot stripe) are fixed only now, after the inputs were
//!   chosen (see `SnapshotList::acquire_current`). The inputs are read through one cursor per
//!   L0 table and one level iterator per sorted level, with `fill_cache = false` (cached blocks
//!   used without being promoted or counted, others read and not cached), merged, filtered by
//!   the `JobFilter` (expired values, the user's compaction filter) and written by the
//!   `TableSink` into outputs of about `target_file_size_base`, each with the filter planned for
//!   its level (`core/filter_plan.rs`; under adaptive allocation scaled by the heat of its key
//!   range, `heat_map.rs`). Outputs are synced, their directory synced, then opened.
//! * **Subcompactions** (`Options::max_subcompactions`): a job with at least a target table's
//!   bytes per range is split into key ranges bounded by first user keys of sorted-level inputs;
//!   each is merged on a scoped thread into a `TableSink` bounded to it (every version of a user
//!   key falls in one range), so the ranges' outputs never overlap and one edit installs them.
//!   A failing range fails the job, which gives back every range's output numbers.
//! * **Install**: one edit deletes the inputs and adds the outputs; the inputs' blocks leave the
//!   cache and their files become obsolete (readers holding them keep reading).
//!
//! When the user's compaction filter changed a value, a snapshot taken during the merge would
//! see the change: the job then installs under the snapshot gate only if the live snapshots are
//! those its merge respected, and otherwise merges again (the last attempt without the filter).

use std::ops::Range;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use siftdb_compaction::picker::Pick;
use siftdb_compaction::{merge_into, BoundedIterator, GcRules};
use siftdb_filter::FilterAllocation;
use siftdb_sstable::{FragmentedRangeTombstones, TableIterOptions};
use siftdb_sstable::{InternalIterator, MergingIterator};

use super::cuts::MAX_GRANDPARENT_OVERLAP_FILES;
use super::heat_map::HeatMap;
use super::sink::TableSink;
use crate::base::compaction_filter::JobFilter;
use crate::base::error::{CompactionFilterError, Error, Result};
use crate::base::event_listener::{
    CompactionJobInfo, CompactionReason, TableFileCreationInfo, TableFileCreationReason,
    TableFileInfo,
};
use crate::base::version_edit::VersionEdit;
use crate::core::events::{table_info, Event};
use crate::core::keyspace_tree::KeyspaceTree;
use crate::core::level_iter::LevelIterator;
use crate::core::range_skip::RangeProbe;
use crate::core::shared::Shared;
use crate::core::version::{TableFile, Version};
use crate::core::version_set::Reservation;

/// See the module documentation.
pub(crate) struct CompactionJob<'a> {
    db: &'a Arc<Shared>,
    tree: Arc<KeyspaceTree>,
    /// The version the inputs were picked from.
    version: Arc<Version>,
    level: usize,
    output_level: usize,
    /// Input tables with their levels.
    inputs: Vec<(usize, Arc<TableFile>)>,
    /// Where the inputs of each sorted level (≥ 1) sit in it: a contiguous run of its tables.
    sorted_runs: Vec<(usize, Range<usize>)>,
    /// The inputs are dropped, not merged (FIFO).
    drop: bool,
    /// Output numbers taken but not installed: given back (they become orphans to delete) if
    /// the job ends any other way.
    uninstalled: Vec<u64>,
    /// The tables the job installed (written, or moved), for its events.
    installed: Vec<TableFileInfo>,
    /// Whether the job was a trivial move.
    moved: bool,
    /// Keeps other background jobs off the inputs and the output range (`None` for
    /// `compact_range`, which runs alone).
    _reservation: Option<Reservation<'a>>,
}

impl Drop for CompactionJob<'_> {
    fn drop(&mut self) {
        if !self.uninstalled.is_empty() {
            self.db.versions().release_outputs(&self.uninstalled);
            crate::jobs::obsolete::delete_obsolete_files(self.db);
        }
    }
}

/// How often a job merges with the user's compaction filter when snapshots keep appearing
/// during the merge (see [`CompactionJob::run`]); the last merge then runs without it.
const FILTERED_MERGE_ATTEMPTS: u32 = 3;

/// One part of a split compaction: the user keys of `[lower, upper)` (`None`: unbounded).
type KeyRange = (Option<Vec<u8>>, Option<Vec<u8>>);

/// What every part of a job's merge shares.
struct PartInputs<'r> {
    rules: &'r GcRules,
    filter: &'r Arc<JobFilter>,
    /// The range tombstones the outputs keep (each part writes those of its range).
    tombstones: Option<FragmentedRangeTombstones>,
    options: siftdb_sstable::TableBuildOptions,
}

/// One part's merge: the output numbers it took (installed or given back with the job's), and
/// its outputs, their heats and bytes — or why it failed.
struct PartOutput {
    numbers: Vec<u64>,
    written: Result<super::sink::SinkOutputs>,
}

/// What one merge of a job wrote.
struct Written {
    outputs: Vec<Arc<TableFile>>,
    /// Blob files of the values blob garbage collection relocated.
    blobs: Vec<Arc<crate::core::blob_file::BlobFile>>,
    /// The live snapshots the merge's garbage collection respected.
    snapshots: Vec<u64>,
    /// Whether the user's compaction filter removed or changed any value.
    user_acted: bool,
}

/// Under Uniform allocation, how much richer (in bits/key) than its new level's plan a filter
/// planned for another level may be for its table to move down unchanged (plans drift with the
/// budget correction).
const MAX_MOVED_FILTER_EXCESS: f64 = 1.1;

/// Where the tables `numbers` sit in `level` of `version`: the run from the first to the last
/// (empty if none). A pick's tables of a sorted level are contiguous.
fn run_of(version: &Version, level: usize, numbers: &[u64]) -> Range<usize> {
    let files = version.level(level);
    let first = files.iter().position(|f| numbers.contains(&f.meta.number));
    let last = files.iter().rposition(|f| numbers.contains(&f.meta.number));
    match (first, last) {
        (Some(first), Some(last)) => first..last + 1,
        _ => 0..0,
    }
}

impl<'a> CompactionJob<'a> {
    /// The job compacting `pick` (files of `pick.level`, of the level below and, for universal
    /// compaction, of deeper levels) into `pick.output_level`, or dropping them (FIFO); `None`
    /// if none of the picked files is in `version`.
    pub(crate) fn prepare(
        db: &'a Arc<Shared>,
        tree: &Arc<KeyspaceTree>,
        version: Arc<Version>,
        pick: &Pick,
        reservation: Option<Reservation<'a>>,
    ) -> Option<CompactionJob<'a>> {
        let by_level = pick.inputs_by_level();
        let inputs: Vec<(usize, Arc<TableFile>)> = by_level
            .iter()
            .flat_map(|(level, numbers)| {
                version
                    .level(*level)
                    .iter()
                    .filter(|f| numbers.contains(&f.meta.number))
                    .map(|f| (*level, Arc::clone(f)))
            })
            .collect();
        if inputs.is_empty() {
            return None;
        }
        let sorted_runs = by_level
            .iter()
            .filter(|(level, _)| *level > 0)
            .map(|(level, numbers)| (*level, run_of(&version, *level, numbers)))
            .collect();
        Some(CompactionJob {
            db,
            tree: Arc::clone(tree),
            version,
            level: pick.level,
            output_level: pick.output_level,
            inputs,
            sorted_runs,
            drop: pick.drop,
            uninstalled: Vec::new(),
            installed: Vec::new(),
            moved: false,
            _reservation: reservation,
        })
    }

    /// Runs the job to its end: moved or written, and installed.
    ///
    /// A value the user's compaction filter removed or changed must stay invisible to every
    /// snapshot, but the filter was told of the snapshots of when the merge began: one taken
    /// during the merge reads at a sequence number that sees the filtered values. So when the
    /// filter acted, new snapshots wait at a gate while the job checks that none appeared and
    /// installs; if one did, the merge runs again with it known (at most
    /// [`FILTERED_MERGE_ATTEMPTS`] times, then once without the user's filter).
    pub(crate) fn run(mut self) -> Result<()> {
        let announced = self.announce_begin();
        let ran = self.run_to_end();
        self.announce_completed(announced, &ran);
        ran
    }

    /// [`CompactionJob::run`] without its events.
    fn run_to_end(&mut self) -> Result<()> {
        if self.drop {
            return self.install_drop();
        }
        if self.is_trivial_move() {
            return self.install_move();
        }
        for attempt in 1.. {
            let written = self.write(attempt <= FILTERED_MERGE_ATTEMPTS)?;
            if !written.user_acted {
                return self.install(written.outputs, &written.blobs);
            }
            let gate = self.db.snapshots().hold_new_snapshots();
            let current = self.db.snapshots().sequences();
            if current.iter().all(|s| written.snapshots.contains(s)) {
                let installed = self.install(written.outputs, &written.blobs);
                drop(gate);
                return installed;
            }
            drop(gate);
            // Give this merge's outputs back (they become orphans) and merge again.
            self.db.versions().release_outputs(&self.uninstalled);
            self.uninstalled.clear();
        }
        Ok(())
    }

    /// Why the job runs.
    fn reason(&self) -> CompactionReason {
        if self._reservation.is_none() {
            CompactionReason::Manual
        } else if self.drop {
            CompactionReason::Fifo
        } else if self.sorted_runs.iter().any(|(l, _)| *l > self.level + 1) {
            CompactionReason::Universal
        } else if self.level == 0 && self.output_level == 0 {
            CompactionReason::IntraL0
        } else if self.level == 0 {
            CompactionReason::LevelL0FilesNum
        } else {
            CompactionReason::LevelMaxLevelSize
        }
    }

    /// Announces the job beginning (`on_compaction_begin`), if anyone listens.
    fn announce_begin(&self) -> Option<(CompactionJobInfo, std::time::Instant)> {
        let events = self.db.events();
        if !events.listening() {
            return None;
        }
        let info = CompactionJobInfo {
            keyspace: self.tree.name.to_string(),
            job_id: events.next_job_id(),
            reason: self.reason(),
            base_level: self.level,
            output_level: self.output_level,
            inputs: (self.inputs.iter())
                .map(|(level, f)| table_info(self.db.dir(), *level, &f.meta))
                .collect(),
            outputs: Vec::new(),
            trivial_move: false,
            bytes_read: 0,
            bytes_written: 0,
            duration: std::time::Duration::ZERO,
            error: None,
        };
        events.emit(|| Event::CompactionBegin(info.clone()));
        Some((info, std::time::Instant::now()))
    }

    /// Announces how the job ended (`on_compaction_completed`, and `on_table_file_created` for
    /// each table it wrote).
    fn announce_completed(
        &self,
        announced: Option<(CompactionJobInfo, std::time::Instant)>,
        ran: &Result<()>,
    ) {
        let Some((mut info, start)) = announced else {
            return;
        };
        info.duration = start.elapsed();
        info.outputs = self.installed.clone();
        info.trivial_move = self.moved;
        if let Err(e) = ran {
            info.error = Some(e.to_string());
        } else if !self.moved && !self.drop {
            info.bytes_read = info.inputs.iter().map(|f| f.size).sum();
            info.bytes_written = info.outputs.iter().map(|f| f.size).sum();
            for file in &info.outputs {
                let created = TableFileCreationInfo {
                    keyspace: info.keyspace.clone(),
                    job_id: info.job_id,
                    reason: TableFileCreationReason::Compaction,
                    file: file.clone(),
                };
                self.db.events().emit(|| Event::TableFileCreated(created));
            }
        }
        self.db.events().emit(|| Event::CompactionCompleted(info));
    }

    /// The smallest and largest user keys of the inputs.
    fn key_range(&self) -> (Vec<u8>, Vec<u8>) {
        let keys = || self.inputs.iter().map(|(_, f)| f);
        let smallest = keys().map(|f| f.smallest_user_key()).min().unwrap_or(&[]);
        let largest = keys().map(|f| f.largest_user_key()).max().unwrap_or(&[]);
        (smallest.to_vec(), largest.to_vec())
    }

    /// Whether the inputs can move to the output level unchanged (LevelDB's `IsTrivialMove`,
    /// for several files as RocksDB allows): all from one level, no file of the output level in
    /// their range, no two of them overlapping each other (L0 files may), and none overlapping
    /// more of the level below the output than a compaction output may.
    fn is_trivial_move(&self) -> bool {
        if self.output_level == self.level || self.inputs.iter().any(|(l, _)| *l != self.level) {
            return false;
        }
        // A table holding values blob garbage collection moves is rewritten, not moved (a
        // forced collection picks such tables for that).
        let collect = crate::core::blob_gc::files_to_collect(&self.version, &self.tree.options());
        let collects = |f: &TableFile| f.meta.blob_refs.iter().any(|r| collect.contains(&r.file));
        if self.inputs.iter().any(|(_, f)| collects(f)) {
            return false;
        }
        let mut ranges: Vec<(&[u8], &[u8])> = self
            .inputs
            .iter()
            .map(|(_, f)| (f.smallest_user_key(), f.largest_user_key()))
            .collect();
        ranges.sort_unstable();
        if ranges.windows(2).any(|w| w[0].1 >= w[1].0) {
            return false;
        }
        // No table of the output level in their range (every pick today makes those inputs,
        // but a sorted level must never receive an overlapping table by a move).
        let output = self.version.level(self.output_level);
        if ranges.iter().any(|(smallest, largest)| {
            output
                .iter()
                .any(|f| f.largest_user_key() >= *smallest && f.smallest_user_key() <= *largest)
        }) {
            return false;
        }
        let limit = MAX_GRANDPARENT_OVERLAP_FILES * self.tree.options().target_file_size_base;
        let grandparents = self.version.level(self.output_level + 1);
        let small_overlap = ranges.iter().all(|(smallest, largest)| {
            let overlap: u64 = grandparents
                .iter()
                .filter(|g| g.largest_user_key() >= *smallest && g.smallest_user_key() <= *largest)
                .map(|g| g.meta.file_size)
                .sum();
            overlap <= limit
        });
        small_overlap && self.filters_fit_output_level()
    }

    /// Whether the inputs' filters suit the output level, so that moving them keeps the tree's
    /// filters where the policy's plan put them:
    /// * a filter planned for the output level or a deeper one fits (a flush of a sequential
    ///   load is planned for the bottom, so its table moves down to it unchanged);
    /// * under Uniform allocation, where every level plans the same bits/key, so does a filter
    ///   of the output level's kind with at most [`MAX_MOVED_FILTER_EXCESS`] times its plan;
    /// * so does one of the output level's kind within that factor of its plan either way (no
    ///   excess taken from the budget, no filter far looser than planned) when the output level
    ///   is a bottom level being born (see [`Self::output_is_newborn_bottom`]; unbounded below,
    ///   such moves left `compaction_monkey.rs`'s tree 3.2–3.3 % under Uniform's memory in 2
    ///   runs of 12; bounded, within 1.7 % in 12 of 12);
    /// * otherwise it does not: under Monkey a filter planned for an upper level holds more bits
    ///   than a larger level needs, and carried down it blurs the levels' order and takes its
    ///   excess from the budget of the tables planned after it (with such moves the test tree of
    ///   `compaction_monkey.rs` ended 2.6–3.5 % under Uniform's filter memory in 3 runs of 10).
    ///   Such a table is rewritten with a filter planned for its new level, as without trivial
    ///   moves.
    ///
    /// Under `optimize_filters_for_hits` only tables without a filter fit the bottom level:
    /// moved there, a table would keep the filter the option exists to drop (a new bottom level
    /// is born by moving the whole overflow of the level above, so nearly every bottom table
    /// kept one in a growing tree until this rule).
    fn filters_fit_output_level(&self) -> bool {
        let options = &self.tree.options();
        let uniform = options.filter_allocation == FilterAllocation::Uniform;
        let filter = self.filter_spec();
        if filter.omitted == crate::core::filter_plan::BOTTOM_FOR_HITS {
            return self
                .inputs
                .iter()
                .all(|(_, f)| f.table.properties().filter_kind == "none");
        }
        let spec = filter.spec;
        let newborn = self.output_is_newborn_bottom();
        self.inputs.iter().all(|(_, f)| {
            let props = f.table.properties();
            let bits = f.table.filter_bits_per_key();
            f.meta.filter_level >= self.output_level
                || self.thinned_filter_cap(f, spec).is_some()
                || spec.is_some_and(|spec| {
                    (uniform || newborn)
                        && props.filter_kind == spec.kind.name()
                        && bits <= MAX_MOVED_FILTER_EXCESS * spec.bits_per_key
                        && (uniform || bits * MAX_MOVED_FILTER_EXCESS >= spec.bits_per_key)
                })
        })
    }

    /// Under Monkey, the bits per key a table's ribbon filter is to be read with once moved
    /// into the output level, whose plan (`spec`) gives a ribbon filter fewer bits than it
    /// holds: the filter is thinned to the plan as it is read
    /// ([`siftdb_sstable::Table::set_filter_bits_cap`]), so the table moves instead of being
    /// rewritten for its filter. `None` when the filter fits as it is or cannot be thinned to
    /// the plan (another kind on either side: a blocked bloom filter cannot shed bits). The
    /// prefix filter keeps what it was built with.
    fn thinned_filter_cap(
        &self,
        f: &TableFile,
        spec: Option<siftdb_sstable::FilterSpec>,
    ) -> Option<f64> {
        let spec = spec?;
        let ribbon = siftdb_filter::FilterKind::Ribbon;
        let thinnable = self.tree.options().filter_allocation == FilterAllocation::Monkey
            && spec.kind == ribbon
            && f.table.properties().filter_kind == ribbon.name()
            && f.table.filter_bits_per_key() > spec.bits_per_key;
        thinnable.then_some(spec.bits_per_key)
    }

    /// Whether the output level is a bottom level being born: no table below it, and fewer
    /// bytes in it than in the input level. While it is, Monkey plans it about the bits/key of
    /// the level above or more (the smaller level gets the richer filters), so a table moved
    /// from there carries little or no excess into it (checked against the plan): RocksDB's
    /// moves of a level's overflow into a new level, which a growing tree otherwise pays for by
    /// rewriting the level's overflow.
    fn output_is_newborn_bottom(&self) -> bool {
        let v = &self.version;
        let below_empty = (self.output_level + 1..v.num_levels()).all(|l| v.level(l).is_empty());
        let bytes = |level: usize| -> u64 { v.level(level).iter().map(|f| f.meta.file_size).sum() };
        self.level > 0 && below_empty && bytes(self.output_level) < bytes(self.level)
    }

    /// A trivial move: one manifest edit takes the inputs out of their level and puts the same
    /// tables into the output level. No byte is written, and their cached blocks stay valid
    /// (same table numbers). Each table keeps the filter it was built with; its `filter_level`
    /// still names the level that filter was planned for (see `docs/TUNING.md`).
    ///
    /// A table whose ribbon filter holds more bits than the output level's plan gives it
    /// ([`Self::thinned_filter_cap`]) moves with its filter capped to the plan: recorded in its
    /// manifest entry (as planned for the output level), set on the table once the edit is
    /// durable, and its cached filter blocks dropped so that they are read again thinned.
    fn install_move(&mut self) -> Result<()> {
        let db = self.db;
        let spec = self
            .inputs
            .iter()
            .any(|(_, f)| f.meta.filter_level < self.output_level)
            .then(|| self.filter_spec().spec)
            .flatten();
        let mut edit = VersionEdit::default();
        let mut capped: Vec<(Arc<TableFile>, f64)> = Vec::new();
        let mut moved: Vec<Arc<TableFile>> = Vec::new();
        for (level, f) in &self.inputs {
            edit.deleted.push((*level, f.meta.number));
            let mut meta = f.meta.clone();
            let cap = (f.meta.filter_level < self.output_level)
                .then(|| self.thinned_filter_cap(f, spec))
                .flatten();
            if let Some(cap) = cap {
                meta.filter_level = self.output_level;
                meta.filter_cap_millibits = Some((cap * 1000.0).round() as u32);
                // The version holds the table under its new entry (a manifest rolled over
                // later records the cap); the open table and its file are the same.
                let file = TableFile::new(meta.clone(), Arc::clone(&f.table))
                    .kept_alive_by(db.live_tables().register(meta.number));
                file.mark_covered(f.index_gen());
                moved.push(Arc::new(file));
                capped.push((Arc::clone(f), meta.filter_bits_cap().unwrap_or(cap)));
            }
            edit.added.push((self.output_level, meta));
        }
        let installed = self.installed_infos(&edit);
        db.versions()
            .log_and_apply(&self.tree, edit, &moved, |_| {})?;
        (self.installed, self.moved) = (installed, true);
        for (f, cap) in &capped {
            f.table.set_filter_bits_cap(Some(*cap));
            db.uncache_table(f.meta.number);
        }
        let counters = db.counters();
        counters
            .trivial_moves
            .fetch_add(self.inputs.len() as u64, Ordering::Relaxed);
        counters
            .filters_thinned_by_moves
            .fetch_add(capped.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// How the events name the tables `edit` adds (none when nobody listens).
    fn installed_infos(&self, edit: &VersionEdit) -> Vec<TableFileInfo> {
        if !self.db.events().listening() {
            return Vec::new();
        }
        (edit.added.iter())
            .map(|(level, meta)| table_info(self.db.dir(), *level, meta))
            .collect()
    }

    /// A FIFO compaction: one manifest edit removes the inputs (the oldest tables); their
    /// cached blocks and files go after it.
    fn install_drop(&mut self) -> Result<()> {
        let db = self.db;
        let mut edit = VersionEdit::default();
        for (level, f) in &self.inputs {
            edit.deleted.push((*level, f.meta.number));
        }
        db.versions().log_and_apply(&self.tree, edit, &[], |_| {})?;
        for (_, f) in &self.inputs {
            db.uncache_table(f.meta.number);
        }
        db.counters()
            .fifo_tables_dropped
            .fetch_add(self.inputs.len() as u64, Ordering::Relaxed);
        crate::jobs::obsolete::delete_obsolete_files(db);
        Ok(())
    }

    /// What garbage collection may drop. The live snapshots are asked for only now, after the
    /// inputs were fixed: a snapshot registered later reads at a sequence at least as new as
    /// every input (see `SnapshotList::acquire_current`).
    fn gc_rules(&self, filter: Arc<JobFilter>) -> GcRules {
        let (smallest, largest) = self.key_range();
        // Bottommost: no level below the output holds any key of the range.
        let bottommost = (self.output_level + 1..self.version.num_levels()).all(|l| {
            self.version.level(l).iter().all(|f| {
                f.largest_user_key() < smallest.as_slice()
                    || f.smallest_user_key() > largest.as_slice()
            })
        });
        GcRules {
            snapshots: self.db.snapshots().sequences(),
            bottommost,
            filter: Some(filter),
            merger: self.tree.options().merge_operator.clone().map(|op| {
                Arc::new(crate::base::merge::CompactionMerger(op))
                    as Arc<dyn siftdb_compaction::OperandMerger>
            }),
            range_tombstones: self.input_range_tombstones(),
        }
    }

    /// The range tombstones of the inputs, fragmented together (`None` if none has any).
    fn input_range_tombstones(&self) -> Option<Arc<FragmentedRangeTombstones>> {
        let lists: Vec<&Arc<FragmentedRangeTombstones>> = self
            .inputs
            .iter()
            .filter_map(|(_, f)| f.table.range_tombstones())
            .collect();
        match lists.as_slice() {
            [] => None,
            [one] => Some(Arc::clone(one)),
            lists => Some(Arc::new(FragmentedRangeTombstones::new(
                lists.iter().flat_map(|l| l.tombstones()),
            ))),
        }
    }

    /// The outputs' filter: kind from the policy, bits/key from the plan of the tree as it will
    /// be once the inputs have moved down; none if the options or the plan leave it out.
    fn filter_spec(&self) -> crate::core::filter_plan::TableFilter {
        let (level_keys, replaced) = self.keys_after();
        crate::core::filter_plan::filter_for(
            &self.tree.options(),
            &self.version,
            self.output_level,
            self.output_level,
            &level_keys,
            &replaced,
        )
    }

    /// The key counts per level once the inputs have moved down, and the inputs' numbers.
    fn keys_after(&self) -> (Vec<u64>, Vec<u64>) {
        let mut level_keys = self.version.level_keys();
        let moved: u64 = self.inputs.iter().map(|(_, f)| f.meta.distinct_keys).sum();
        for (level, f) in &self.inputs {
            level_keys[*level] = level_keys[*level].saturating_sub(f.meta.distinct_keys);
        }
        level_keys[self.output_level] += moved;
        let replaced: Vec<u64> = self.inputs.iter().map(|(_, f)| f.meta.number).collect();
        (level_keys, replaced)
    }

    /// Under adaptive allocation, what sizes each output's filter from the reads its key range
    /// saw (see `heat_map.rs`); `None` otherwise.
    fn heat_map(&self) -> Option<HeatMap> {
        if !self.tree.counts_heat {
            return None;
        }
        let (level_keys, replaced) = self.keys_after();
        let basis = crate::core::filter_plan::adaptive_basis(
            &self.tree.options(),
            &self.version,
            self.output_level,
            &level_keys,
            &replaced,
        );
        Some(HeatMap::new(
            &self.inputs,
            self.output_level,
            self.version.level(self.output_level),
            basis,
            self.tree.lookups.now(),
        ))
    }

    /// A cursor per L0 input (L0 tables overlap each other); the inputs of a sorted level are
    /// one level iterator, which opens one table at a time.
    fn input_cursors(&self, read_options: &TableIterOptions) -> Vec<Box<dyn InternalIterator>> {
        let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
        let mut levels: Vec<usize> = self.inputs.iter().map(|(l, _)| *l).collect();
        levels.dedup();
        for level in levels {
            let range = self
                .sorted_runs
                .iter()
                .find(|(l, _)| *l == level)
                .map_or(0..0, |(_, r)| r.clone());
            let tables = self.inputs.iter().filter(|(l, _)| *l == level);
            // A run holding exactly the inputs (never a table the edit does not delete).
            if level > 0 && range.len() == tables.clone().count() {
                if !range.is_empty() {
                    children.push(Box::new(LevelIterator::new(
                        Arc::clone(&self.version),
                        level,
                        range.clone(),
                        Vec::new(),
                        read_options.clone(),
                        // Compaction reads every entry: nothing to skip.
                        Arc::new(RangeProbe::default()),
                    )));
                }
            } else {
                for (_, f) in tables {
                    children.push(Box::new(f.table.iter_with(read_options.clone())));
                }
            }
        }
        children
    }

    /// Opens the tables a merge wrote (after making their directory entries durable), with
    /// the heat they inherit, and counts their bytes.
    fn open_outputs(
        &self,
        metas: &[crate::base::version_edit::FileMeta],
        heats: Vec<f64>,
        bytes_written: u64,
        wrote_blobs: bool,
    ) -> Result<Vec<Arc<TableFile>>> {
        let db = self.db;
        if !metas.is_empty() || wrote_blobs {
            // The outputs' directory entries must be durable before the manifest names them.
            db.fs().sync_dir(db.dir())?;
        }
        db.counters()
            .compaction_bytes_written
            .fetch_add(bytes_written, Ordering::Relaxed);
        let outputs = metas
            .iter()
            .map(|m| {
                crate::jobs::table_io::open_table(db, &self.tree.options(), self.output_level, m)
            })
            .collect::<Result<Vec<_>>>()?;
        for (output, heat) in outputs.iter().zip(heats) {
            output.heat.start(self.tree.lookups.now(), heat);
        }
        Ok(outputs)
    }

    /// Blob garbage collection for this job, if on: the live values the inputs reference in
    /// the oldest `blob_garbage_collection_age_cutoff` of the blob files move to new ones, so
    /// those files become all garbage and go (RocksDB's integrated BlobDB garbage collection).
    fn relocation(&self) -> Option<super::sink::Relocation<'a>> {
        let options = &self.tree.options();
        let oldest = crate::core::blob_gc::files_to_collect(&self.version, options);
        if oldest.is_empty() {
            return None;
        }
        Some(super::sink::Relocation {
            files: oldest,
            reads: self.blob_reads(),
            sink: crate::jobs::blob_io::BlobSink::new(self.db, options, self.tree.id),
        })
    }

    /// How the compaction reads blob values: the input version's blob files, without filling
    /// the block cache (a compaction reads each value once).
    fn blob_reads(&self) -> crate::core::blob_file::BlobReads {
        crate::core::blob_file::BlobReads {
            files: Arc::clone(self.version.blob_files()),
            cache: Arc::clone(self.db.cache()),
            fill_cache: false,
        }
    }

    /// How the compaction filter reads blob values: from the input version's blob files,
    /// without filling the block cache (a compaction reads each value once).
    fn blob_fetch(&self) -> crate::base::compaction_filter::BlobFetch {
        let reads = self.blob_reads();
        Box::new(move |key, stored| reads.fetch(key, stored))
    }

    /// Merges the inputs into new tables (synced, their directory entries durable) and opens
    /// them. Input blocks are read without filling the block cache and counted apart from user
    /// reads (`Stats::compaction_blocks_read`). A large job is split into key ranges merged on
    /// threads of their own (`Options::max_subcompactions`), whose outputs install together.
    /// With `ask_user`, the user's compaction filter is consulted.
    fn write(&mut self, ask_user: bool) -> Result<Written> {
        let db = self.db;
        // Always there: expired values go even without a user's filter.
        let filter = Arc::new(
            JobFilter::new(
                self.tree
                    .options()
                    .compaction_filter
                    .clone()
                    .filter(|_| ask_user),
                self.output_level,
                crate::base::ttl::millis(self.tree.options().clock.now()),
            )
            .reading_blobs_with(self.blob_fetch()),
        );
        let rules = self.gc_rules(Arc::clone(&filter));
        let snapshots = rules.snapshots.clone();
        // The tombstones the outputs keep: the newest per snapshot stripe, and at the bottom
        // none that every snapshot sees (what they deleted is dropped from the inputs).
        let kept_tombstones = rules.range_tombstones.as_ref().map(|t| {
            let (kept, dropped) = t.collapsed(&snapshots, rules.bottommost);
            db.counters()
                .range_tombstones_dropped
                .fetch_add(dropped, Ordering::Relaxed);
            kept
        });
        let shared = PartInputs {
            rules: &rules,
            filter: &filter,
            tombstones: kept_tombstones.filter(|t| !t.is_empty()),
            options: self
                .tree
                .options()
                .table_build_options(self.output_level, self.filter_spec()),
        };
        let parts = self.parts();
        let merged: Vec<PartOutput> = if parts.len() == 1 {
            vec![self.merge_part(&shared, None, None)]
        } else {
            db.counters()
                .subcompactions
                .fetch_add(parts.len() as u64, Ordering::Relaxed);
            self.merge_parts_in_parallel(&shared, &parts)
        };
        let mut metas = Vec::new();
        let mut heats = Vec::new();
        let mut blob_metas = Vec::new();
        let mut bytes_written = 0;
        let mut failure = None;
        for part in merged {
            // Numbered outputs are the job's to give back, whichever part failed.
            self.uninstalled.extend_from_slice(&part.numbers);
            match part.written {
                Ok(out) => {
                    metas.extend(out.tables);
                    heats.extend(out.heats);
                    blob_metas.extend(out.blobs);
                    bytes_written += out.bytes_written;
                }
                Err(e) => failure = failure.or(Some(e)),
            }
        }
        if let Some(e) = failure {
            return Err(e);
        }
        let outputs = self.open_outputs(&metas, heats, bytes_written, !blob_metas.is_empty())?;
        let blobs = blob_metas
            .iter()
            .map(|b| crate::jobs::blob_io::open_blob_file(db, b))
            .collect::<Result<Vec<_>>>()?;
        Ok(Written {
            outputs,
            blobs,
            snapshots,
            user_acted: filter.user_acted(),
        })
    }

    /// The key ranges the job is merged in: one, unless `Options::max_subcompactions` allows
    /// more and the inputs hold at least a target table's bytes per range. Bounds are the
    /// first user keys of input tables of sorted levels (which partition the key space),
    /// spaced by their bytes; every version of a user key falls in one range.
    fn parts(&self) -> Vec<KeyRange> {
        let total: u64 = self.inputs.iter().map(|(_, f)| f.meta.file_size).sum();
        let target = self.tree.options().target_file_size_base.max(1);
        let wanted = self
            .db
            .options()
            .max_subcompactions
            .min(usize::try_from(total / target).unwrap_or(usize::MAX));
        let mut sorted: Vec<(&[u8], u64)> = self
            .inputs
            .iter()
            .filter(|(level, _)| *level > 0)
            .map(|(_, f)| (f.smallest_user_key(), f.meta.file_size))
            .collect();
        sorted.sort_by(|a, b| a.0.cmp(b.0));
        let sorted_bytes: u64 = sorted.iter().map(|(_, size)| size).sum();
        let mut bounds: Vec<Vec<u8>> = Vec::new();
        let mut before = 0u64;
        for (i, (key, size)) in sorted.iter().enumerate() {
            let next = bounds.len() as u64 + 1;
            if next as usize >= wanted {
                break;
            }
            if i > 0
                && before * wanted as u64 >= sorted_bytes * next
                && bounds.last().is_none_or(|b| b.as_slice() < *key)
            {
                bounds.push(key.to_vec());
            }
            before += size;
        }
        let lowers = std::iter::once(None).chain(bounds.iter().cloned().map(Some));
        let uppers = bounds
            .iter()
            .cloned()
            .map(Some)
            .chain(std::iter::once(None));
        lowers.zip(uppers).collect()
    }

    /// Each of `parts` merged on a thread of its own, results in key order (a part whose
    /// thread cannot be started is merged on this one, in its turn). A part that panicked
    /// makes the job panic, as a single merge would, after the others finished.
    fn merge_parts_in_parallel(
        &self,
        shared: &PartInputs<'_>,
        parts: &[KeyRange],
    ) -> Vec<PartOutput> {
        std::thread::scope(|scope| {
            let spawned: Vec<_> = parts
                .iter()
                .map(|(lower, upper)| {
                    std::thread::Builder::new()
                        .name("siftdb-subcompact".to_string())
                        .spawn_scoped(scope, move || {
                            self.merge_part(shared, lower.clone(), upper.clone())
                        })
                })
                .collect();
            let joined: Vec<_> = spawned
                .into_iter()
                .zip(parts)
                .map(|(thread, (lower, upper))| match thread {
                    Ok(handle) => handle.join(),
                    Err(_) => Ok(self.merge_part(shared, lower.clone(), upper.clone())),
                })
                .collect();
            joined
                .into_iter()
                .map(|j| j.unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
                .collect()
        })
    }

    /// Merges the inputs' entries of `[lower, upper)` into tables of their own.
    fn merge_part(
        &self,
        shared: &PartInputs<'_>,
        lower: Option<Vec<u8>>,
        upper: Option<Vec<u8>>,
    ) -> PartOutput {
        let db = self.db;
        // Inputs are read once and deleted after: around a table's memory map, so the pages
        // a compaction reads do not stay resident in the process (docs/TUNING.md, memory).
        let read_options = TableIterOptions {
            fill_cache: false,
            stats: Some(Arc::clone(&db.counters().compaction_reads)),
            read_once: true,
            readahead_bytes: db.options().compaction_readahead_size,
            auto_readahead: false,
        };
        let merge = MergingIterator::new(self.input_cursors(&read_options));
        let mut input = BoundedIterator::new(Box::new(merge), lower.clone(), upper.clone());
        let grandparents = self.grandparents();
        let mut sink = TableSink::new(
            db,
            shared.options.clone(),
            self.tree.options().target_file_size_base,
            self.output_level,
            grandparents,
        );
        sink.set_range_tombstones(shared.tombstones.clone());
        sink.set_relocation(self.relocation());
        sink.set_bounds(lower, upper);
        sink.set_heat_map(self.heat_map());
        let filter_failure = || shared.filter.failure();
        let merged = merge_into(&mut input, shared.rules, &mut sink)
            .map_err(|e| match filter_failure() {
                Some(why) => Error::CompactionFilter(CompactionFilterError::new(
                    &self.tree.name,
                    self.output_level,
                    why,
                )),
                None => sink.take_error().unwrap_or_else(|| Error::from(e)),
            })
            .and_then(|stats| {
                count_merge(db, &stats);
                sink.finish()
            });
        let numbers = sink.numbers().to_vec();
        PartOutput {
            numbers,
            written: merged.map(|()| sink.into_outputs()),
        }
    }

    /// The tables of the level below the output, by largest key and size, at which an output is
    /// cut early so that no output overlaps too much of it (leveled compaction into L1 or
    /// deeper only: universal runs merge whole, so such cuts would only make more, smaller
    /// tables).
    fn grandparents(&self) -> Vec<(Vec<u8>, u64)> {
        // An intra-L0 compaction writes one table: more would only add L0 files.
        if self.output_level == 0
            || self.tree.options().compaction_style
                != crate::base::compaction_style::CompactionStyle::Level
        {
            return Vec::new();
        }
        self.version
            .level(self.output_level + 1)
            .iter()
            .map(|f| (f.largest_user_key().to_vec(), f.meta.file_size))
            .collect()
    }

    /// One manifest edit removes the inputs and adds the outputs; then the inputs' cached blocks
    /// are dropped and their files deleted (readers still holding the old version keep their
    /// open files).
    fn install(
        &mut self,
        outputs: Vec<Arc<TableFile>>,
        blobs: &[Arc<crate::core::blob_file::BlobFile>],
    ) -> Result<()> {
        let db = self.db;
        let mut edit = VersionEdit {
            blob_files: blobs.iter().map(|b| b.meta).collect(),
            ..VersionEdit::default()
        };
        for (level, f) in &self.inputs {
            edit.deleted.push((*level, f.meta.number));
        }
        for t in &outputs {
            edit.added.push((self.output_level, t.meta.clone()));
        }
        // The outputs hold no user key the inputs did not: a filter index that covers the
        // inputs covers them.
        let inputs: Vec<&TableFile> = self.inputs.iter().map(|(_, f)| &**f).collect();
        self.tree.filter_index.inherit(&inputs, &outputs);
        let installed = self.installed_infos(&edit);
        db.versions()
            .log_and_apply_with_blobs(&self.tree, edit, &outputs, blobs, |_| {})?;
        self.installed = installed;
        // Again once installed: a filter index rebuild that began in between scanned the
        // inputs, not the outputs.
        self.tree.filter_index.inherit(&inputs, &outputs);
        self.uninstalled.clear();
        for (_, f) in &self.inputs {
            db.uncache_table(f.meta.number);
        }
        let read: u64 = self.inputs.iter().map(|(_, f)| f.meta.file_size).sum();
        db.counters().compactions.fetch_add(1, Ordering::Relaxed);
        db.counters()
            .compaction_bytes_read
            .fetch_add(read, Ordering::Relaxed);
        crate::jobs::obsolete::delete_obsolete_files(db);
        Ok(())
    }
}

/// Adds what one merge did to the engine's counters.
fn count_merge(db: &Shared, stats: &siftdb_compaction::MergeStats) {
    let counters = db.counters();
    counters
        .compaction_filter_removed
        .fetch_add(stats.filter_removed, Ordering::Relaxed);
    counters
        .compaction_filter_changed
        .fetch_add(stats.filter_changed, Ordering::Relaxed);
    counters
        .range_deleted_dropped
        .fetch_add(stats.range_deleted, Ordering::Relaxed);
    counters
        .merges_in_compaction
        .fetch_add(stats.merges_full + stats.merges_partial, Ordering::Relaxed);
}
