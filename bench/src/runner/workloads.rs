//! The workloads: what each one does per step, and the phase around it (statistics before and
//! after, the untimed flush after writes).
//!
//! Every key is read and written in the keyspace its index maps to ([`KeyFormat::keyspace`]),
//! so a run with `--keyspaces=N` finds exactly what a one-keyspace run finds.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use siftdb::Stats;
use std::sync::{Mutex, PoisonError};

use super::args::{Benchmark, Config};
use super::engine::{BatchOp, Engine};
use super::error::{Error, Result};
use super::keys::{KeyFormat, KeyModel, Permutation, Rng, ValueSource, Variant};
use super::measure::{drive, Measured, Outcome, ThreadCtx};
use super::progress::Progress;

mod bulk_load;
mod floor;
mod sustained;
mod transactions;

pub use sustained::{trial_text, SustainedReport, Trial};
mod ycsb;

/// The result of one workload.
#[derive(Debug, Clone)]
pub struct PhaseResult {
    /// The workload.
    pub benchmark: Benchmark,
    /// Timings and outcomes (`None` for `stats` and skipped workloads).
    pub measured: Option<Measured>,
    /// Puts of readwhilewriting's writer; full compactions of readwhilecompacting's compactor.
    pub writer_ops: Option<u64>,
    /// Time of the untimed flush after a write workload.
    pub flush_time: Option<Duration>,
    /// Statistics of the phase (after minus before); cumulative for `stats`.
    pub stats: Option<Stats>,
    /// The tree shape (`stats` only).
    pub shape: Option<String>,
    /// Bytes of every file in the database directory (`stats` only).
    pub disk_bytes: Option<u64>,
    /// readhotscan's hot-read data-block cache hit rates: alone, and beside the scan.
    pub hot_hit_rates: Option<(f64, f64)>,
    /// Whether `expected` counts are exact (a database this run created).
    pub expected_known: bool,
    /// Keys that exist now according to the key model.
    pub live_keys: u64,
    /// Why the workload did not run.
    pub skipped: Option<String>,
    /// Whether `stats.levels` has one row per level (`false`: one row for the whole tree).
    pub filter_stats_by_level: bool,
    /// What the checkpoint held and cost (`checkpoint` only).
    pub checkpoint: Option<CheckpointReport>,
    /// The trials and the rate found (`fillsustained` only).
    pub sustained: Option<SustainedReport>,
    /// The process's resident set at the workload's start and its peak during it (Linux);
    /// set by the caller of [`Workbench::run`], which owns the process-wide measurement.
    pub rss: Option<super::memory::Rss>,
    /// The process's storage I/O over the workload and its untimed flush (Linux); set by the
    /// caller of [`Workbench::run`], as `rss` is.
    pub disk_io: Option<super::disk_io::DiskIo>,
}

/// What the `checkpoint` workload found besides its timing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CheckpointReport {
    /// Table files hard-linked (the phase's `Stats::checkpoint_files_linked`); `None`: the engine
    /// does not count them.
    pub files_linked: Option<u64>,
    /// Bytes copied: WALs, and tables that could not be linked (`Stats::checkpoint_bytes_copied`);
    /// `None` as above.
    pub bytes_copied: Option<u64>,
    /// Bytes of every file in the checkpoint directory, hard-linked ones in full.
    pub dir_bytes: u64,
    /// Keys of the checkpoint, opened as a database and counted by iterating every keyspace.
    pub keys: u64,
    /// Keys of the source database, counted the same way right after.
    pub source_keys: u64,
}

/// How many times `--num` missing keys readhot's `--hot_false_positives` probes at most.
const FALSE_POSITIVE_PROBES: u64 = 32;

impl PhaseResult {
    fn new(benchmark: Benchmark, model: &KeyModel) -> PhaseResult {
        PhaseResult {
            benchmark,
            measured: None,
            writer_ops: None,
            flush_time: None,
            stats: None,
            shape: None,
            disk_bytes: None,
            hot_hit_rates: None,
            expected_known: model.known(),
            live_keys: model.live_count(),
            skipped: None,
            filter_stats_by_level: true,
            checkpoint: None,
            sustained: None,
            rss: None,
            disk_io: None,
        }
    }
}

/// Everything a workload needs: the engine, the key layout, the key model and the values.
pub struct Workbench<'a> {
    config: &'a Config,
    engine: &'a dyn Engine,
    /// The database directory (its size is reported by `stats`).
    dir: &'a Path,
    keys: KeyFormat,
    model: KeyModel,
    values: ValueSource,
    /// The index the next YCSB insert writes (`--num` at first: records are appended after the
    /// loaded ones, YCSB's `insertorder=ordered`).
    next_insert: AtomicU64,
    /// Every index below it is written (see `ycsb::acknowledged_inserts`).
    acknowledged: AtomicU64,
}

impl std::fmt::Debug for Workbench<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workbench")
            .field("engine", &self.engine.name())
            .field("keys", &self.keys)
            .finish_non_exhaustive()
    }
}

/// Stream numbers that keep the random choices of workloads apart.
const STREAM_FILL: u64 = 0xF111;
const STREAM_DELETE: u64 = 0xDE1E;
const STREAM_HOT: u64 = 0x4075;
const STREAM_WRITER: u64 = 0x3717;
const STREAM_ZIPF: u64 = 0x21BF;
const STREAM_YCSB: u64 = 0x7C5B;
const STREAM_TRANSACTION: u64 = 0x7A11;

impl<'a> Workbench<'a> {
    /// A workbench for `engine`. With `--use_existing_db` every key is assumed to exist.
    pub fn new(config: &'a Config, engine: &'a dyn Engine, dir: &'a Path) -> Result<Workbench<'a>> {
        let keys = KeyFormat::new(&config.key_shape())?;
        let model = KeyModel::new(config.num, keys.capacity(), !config.use_existing_db);
        Ok(Workbench {
            config,
            engine,
            dir,
            keys,
            model,
            next_insert: AtomicU64::new(config.num),
            acknowledged: AtomicU64::new(config.num),
            values: ValueSource::new(config.value_size, config.seed, config.compression_ratio),
        })
    }

    /// Runs workload `benchmark`, the `phase`-th of the run (phases draw different random
    /// numbers).
    pub fn run(&self, benchmark: Benchmark, phase: u64) -> Result<PhaseResult> {
        let mut result = PhaseResult::new(benchmark, &self.model);
        result.filter_stats_by_level = self.engine.filter_stats_by_level();
        if benchmark.looks_up_missing_keys() {
            self.engine.prepare_for_misses()?;
        }
        if let Some(reason) = self.skip_reason(benchmark) {
            result.skipped = Some(reason);
            return Ok(result);
        }
        if benchmark == Benchmark::Stats {
            result.stats = self.engine.stats();
            result.shape = self.engine.shape();
            result.disk_bytes = Some(directory_bytes(self.dir));
            return Ok(result);
        }
        let stream = phase.wrapping_add(1).wrapping_mul(0x1_0000) ^ benchmark as u64;
        if benchmark == Benchmark::Checkpoint {
            return self.checkpoint(result, stream);
        }
        // readhot's set of false positives is found before the phase's statistics start.
        let hot_set = match benchmark {
            Benchmark::ReadHot => Some(self.hot_set(phase)?),
            _ => None,
        };
        let before = self.engine.stats();
        let measured = self.measure(benchmark, stream, phase, hot_set, &mut result)?;
        if benchmark.writes() && self.config.flush_after_write {
            let started = Instant::now();
            self.engine.flush()?;
            result.flush_time = Some(started.elapsed());
        }
        let after = self.engine.stats();
        result.stats = match (&after, &before) {
            (Some(a), Some(b)) => Some(a.since(b)),
            _ => None,
        };
        result.measured = Some(measured);
        result.live_keys = self.model.live_count();
        Ok(result)
    }

    /// readrandom: lookups of random written keys.
    fn read_random(&self, stream: u64) -> Result<Measured> {
        self.reads(Benchmark::ReadRandom, stream, |w, ctx| {
            let index = ctx.rng.below(w.config.num);
            w.read_written(ctx, index)
        })
    }

    /// readmissing: lookups of random never-written keys of the same prefixes and range.
    fn read_missing(&self, stream: u64) -> Result<Measured> {
        self.reads(Benchmark::ReadMissing, stream, |w, ctx| {
            let index = ctx.rng.below(w.config.num);
            w.keys.encode(index, Variant::Missing, &mut ctx.key);
            let found = w
                .engine
                .get(w.keys.keyspace(index), &ctx.key, &mut ctx.buf)?;
            Ok(Outcome {
                ops: 1,
                found: u64::from(found),
                ..Outcome::default()
            })
        })
    }

    /// seekrandom: seeks to random written keys, each reading `--seek_nexts` entries on.
    fn seek_random(&self, stream: u64) -> Result<Measured> {
        self.reads(Benchmark::SeekRandom, stream, |w, ctx| {
            let index = ctx.rng.below(w.config.num);
            w.keys.encode(index, Variant::Written, &mut ctx.key);
            let ks = w.keys.keyspace(index);
            let seek = w.engine.seek_read(ks, &ctx.key, w.config.seek_nexts)?;
            Ok(Outcome {
                ops: 1,
                found: u64::from(seek.found),
                expected: u64::from(w.model.is_live(index)),
                entries: seek.entries,
                ..Outcome::default()
            })
        })
    }

    /// seekmissing: bounded scans of random empty ranges.
    fn seek_missing(&self, stream: u64) -> Result<Measured> {
        self.reads(Benchmark::SeekMissing, stream, |w, ctx| {
            // `[written + 1, written + spacing)`: the positions up to the next index's
            // written key, never written.
            let index = ctx.rng.below(w.config.num);
            let mut end = w.keys.key_buffer();
            w.keys.encode_after(index, 1, &mut ctx.key);
            w.keys.encode_after(index, w.keys.spacing(), &mut end);
            let entries = w
                .engine
                .range_count(w.keys.keyspace(index), &ctx.key, &end)?;
            Ok(Outcome {
                ops: 1,
                found: u64::from(entries > 0),
                entries,
                ..Outcome::default()
            })
        })
    }

    /// prefixscan: scans of random existing prefixes, over every keyspace.
    fn prefix_scan(&self, stream: u64) -> Result<Measured> {
        self.reads(Benchmark::PrefixScan, stream, |w, ctx| {
            let prefix = ctx.rng.below(w.keys.num_prefixes());
            w.keys.encode_prefix(prefix, &mut ctx.key);
            // A prefix's keys are spread over every keyspace: the engine scans them all.
            let entries = w.engine.prefix_scan(&ctx.key[..w.keys.prefix_size()])?;
            let expected_entries = w
                .keys
                .indexes_of_prefix(prefix)
                .filter(|&i| w.model.is_live(i))
                .count() as u64;
            Ok(Outcome {
                ops: 1,
                found: u64::from(entries > 0),
                expected: u64::from(expected_entries > 0),
                entries,
                expected_entries,
                ..Outcome::default()
            })
        })
    }

    /// compact: one full compaction.
    fn compact(&self, stream: u64) -> Result<Measured> {
        self.timed(Benchmark::Compact, 1, 1, 1, stream, |_, _| {
            self.engine.compact()?;
            Ok(Outcome {
                ops: 1,
                ..Outcome::default()
            })
        })
    }

    /// readseq / readreverse (`reverse`): one full scan per thread, counted against the keys
    /// that exist.
    fn read_all(&self, benchmark: Benchmark, stream: u64) -> Result<Measured> {
        let reverse = benchmark == Benchmark::ReadReverse;
        let live = self.model.live_count();
        let threads = self.config.threads;
        self.timed(
            benchmark,
            threads,
            threads as u64,
            live * threads as u64,
            stream,
            |_, _| {
                let entries = self.engine.scan(reverse)?;
                Ok(Outcome {
                    ops: entries,
                    found: entries,
                    expected: live,
                    entries,
                    expected_entries: live,
                    ..Outcome::default()
                })
            },
        )
    }

    /// Why `benchmark` does not run here, if it does not: a fill on an existing database, or a
    /// workload the engine has no operation for (checkpoints are checked by [`Self::checkpoint`]).
    fn skip_reason(&self, benchmark: Benchmark) -> Option<String> {
        let supported = match benchmark {
            Benchmark::DeleteRange => self.engine.can_delete_range(),
            Benchmark::MergeRandom => self.engine.can_merge(),
            Benchmark::BulkLoad => self.engine.can_bulk_load(),
            _ => true,
        };
        if benchmark == Benchmark::MissFloor
            && self
                .engine
                .stats()
                .is_none_or(|s| s.filter_index_bytes == 0)
        {
            // Its buffer is sized from a filter index, which only siftdb keeps.
            Some(format!(
                "skipped (no filter index in {})",
                self.engine.name()
            ))
        } else if benchmark.is_fill() && self.config.use_existing_db {
            Some("skipped (--use_existing_db is true)".to_string())
        } else if !supported {
            Some(format!("not supported by {}", self.engine.name()))
        } else {
            None
        }
    }

    /// The timed steps of `benchmark` (every workload but `stats` and `checkpoint`), dispatched
    /// to its own function; what a workload reports besides its measurement goes into `result`.
    fn measure(
        &self,
        benchmark: Benchmark,
        stream: u64,
        phase: u64,
        hot_set: Option<Vec<(u64, Variant)>>,
        result: &mut PhaseResult,
    ) -> Result<Measured> {
        Ok(match benchmark {
            Benchmark::FillSeq => self.fill(benchmark, stream, |_, i| i)?,
            Benchmark::BulkLoad => self.bulk_load(stream)?,
            Benchmark::FillRandom => {
                let order = Permutation::new(self.config.num, self.config.seed ^ STREAM_FILL);
                self.fill(benchmark, stream, |_, i| order.get(i))?
            }
            Benchmark::Overwrite => self.overwrite(stream)?,
            Benchmark::DeleteRandom => self.delete_random(stream, phase)?,
            Benchmark::DeleteRange => self.delete_ranges(stream)?,
            Benchmark::MergeRandom => self.merge_random(stream)?,
            Benchmark::ReadRandom => self.read_random(stream)?,
            Benchmark::ReadMissing => self.read_missing(stream)?,
            Benchmark::MultiReadRandom => self.multi_reads(benchmark, stream, Variant::Written)?,
            Benchmark::MultiReadMissing => self.multi_reads(benchmark, stream, Variant::Missing)?,
            Benchmark::MissFloor => self.miss_floor(stream)?,
            Benchmark::ReadHot => self.read_hot(stream, hot_set.unwrap_or_default())?,
            Benchmark::ReadHotScan => {
                let (measured, rates) = self.read_hot_scan(stream)?;
                result.hot_hit_rates = rates;
                measured
            }
            Benchmark::ReadZipf => self.read_zipf(stream)?,
            Benchmark::SeekRandom => self.seek_random(stream)?,
            Benchmark::SeekMissing => self.seek_missing(stream)?,
            Benchmark::ReadSeq | Benchmark::ReadReverse => self.read_all(benchmark, stream)?,
            Benchmark::PrefixScan => self.prefix_scan(stream)?,
            Benchmark::ReadWhileWriting => {
                let (measured, writer_ops) = self.read_while_writing(stream)?;
                result.writer_ops = Some(writer_ops);
                measured
            }
            Benchmark::ReadWhileCompacting => {
                let (measured, compactions) = self.read_while_compacting(stream)?;
                result.writer_ops = Some(compactions);
                measured
            }
            Benchmark::Compact => self.compact(stream)?,
            Benchmark::FillSustained => {
                let (measured, report) = self.fill_sustained(stream)?;
                result.sustained = Some(report);
                measured
            }
            Benchmark::YcsbA
            | Benchmark::YcsbB
            | Benchmark::YcsbC
            | Benchmark::YcsbD
            | Benchmark::YcsbE
            | Benchmark::YcsbF => self.ycsb(benchmark, stream)?,
            Benchmark::RandomTransaction => self.random_transaction(stream)?,
            Benchmark::Checkpoint | Benchmark::Stats => unreachable_untimed(benchmark)?,
        })
    }

    /// checkpoint: one timed checkpoint into a fresh directory beside the database; then, untimed,
    /// the directory's size, its keys (opened as a database and iterated) against the source's,
    /// and its removal. The phase's statistics are those of the checkpoint call alone, not of
    /// the counting after it.
    fn checkpoint(&self, mut result: PhaseResult, stream: u64) -> Result<PhaseResult> {
        if !self.engine.can_checkpoint() {
            result.skipped = Some(format!("not supported by {}", self.engine.name()));
            return Ok(result);
        }
        let temp = checkpoint_parent(self.dir)?;
        // Engines want a checkpoint directory that does not exist yet (RocksDB refuses one).
        let target = temp.path().join("checkpoint");
        let before = self.engine.stats();
        let mut measured = self.timed(Benchmark::Checkpoint, 1, 1, 1, stream, |_, _| {
            self.engine.checkpoint(&target)?;
            Ok(Outcome {
                ops: 1,
                ..Outcome::default()
            })
        })?;
        let after = self.engine.stats();
        let dir_bytes = directory_bytes(&target);
        let keys = self.engine.checkpoint_keys(&target)?;
        let source_keys = self.engine.count_keys()?;
        let path = temp.path().to_path_buf();
        temp.close().map_err(|e| {
            Error::from(e).context(format!(
                "cannot remove the checkpoint in {}",
                path.display()
            ))
        })?;
        measured.totals.found = keys;
        measured.totals.expected = source_keys;
        let delta = match (&after, &before) {
            (Some(a), Some(b)) => Some(a.since(b)),
            _ => None,
        };
        // Only an engine that counts its checkpoints (siftdb) says what it linked and copied.
        let counted = delta.as_ref().filter(|d| d.checkpoints > 0);
        result.checkpoint = Some(CheckpointReport {
            files_linked: counted.map(|d| d.checkpoint_files_linked),
            bytes_copied: counted.map(|d| d.checkpoint_bytes_copied),
            dir_bytes,
            keys,
            source_keys,
        });
        result.stats = delta;
        result.measured = Some(measured);
        result.live_keys = self.model.live_count();
        Ok(result)
    }

    /// Runs `steps` timed steps of `benchmark` with a progress bar.
    fn timed<F>(
        &self,
        benchmark: Benchmark,
        threads: usize,
        steps: u64,
        ops: u64,
        stream: u64,
        step: F,
    ) -> Result<Measured>
    where
        F: Fn(&mut ThreadCtx, u64) -> Result<Outcome> + Sync,
    {
        let progress = if self.config.json {
            Progress::hidden()
        } else {
            Progress::for_phase(benchmark.name(), ops)
        };
        let measured = drive(
            threads,
            steps,
            self.config.seed,
            stream,
            self.keys.key_size(),
            &progress,
            step,
        );
        progress.finish();
        measured
    }

    /// Writes entries `first..first + count` of a write workload as one step: a put, or one
    /// batch of puts. `index_of` maps an entry number to a key index.
    fn put_entries(
        &self,
        ctx: &mut ThreadCtx,
        first: u64,
        count: u64,
        index_of: &(dyn Fn(&mut Rng, u64) -> u64 + Sync),
    ) -> Result<Outcome> {
        if count == 1 {
            let index = index_of(&mut ctx.rng, first);
            self.keys.encode(index, Variant::Written, &mut ctx.key);
            let value = self.values.value(&mut ctx.rng);
            self.engine
                .put(self.keys.keyspace(index), &ctx.key, value)?;
            self.model.set_live(index);
            return Ok(Outcome {
                ops: 1,
                ..Outcome::default()
            });
        }
        let ks = self.keys.key_size();
        let n = count as usize;
        ctx.buf.resize(n * ks, 0);
        let mut indexes = Vec::with_capacity(n);
        let mut values = Vec::with_capacity(n);
        for (j, key) in ctx.buf.chunks_exact_mut(ks).enumerate() {
            let index = index_of(&mut ctx.rng, first + j as u64);
            self.keys.encode(index, Variant::Written, key);
            indexes.push(index);
            values.push(self.values.value(&mut ctx.rng));
        }
        let ops: Vec<BatchOp<'_>> = ctx
            .buf
            .chunks_exact(ks)
            .zip(&indexes)
            .zip(&values)
            .map(|((key, &index), value)| BatchOp::Put(self.keys.keyspace(index), key, value))
            .collect();
        self.engine.write_batch(&ops)?;
        for index in indexes {
            self.model.set_live(index);
        }
        Ok(Outcome {
            ops: count,
            ..Outcome::default()
        })
    }

    /// Number of batches covering `entries` entries, and the entries of batch `step`.
    fn batches(&self, entries: u64) -> (u64, impl Fn(u64) -> (u64, u64) + use<>) {
        let bs = self.config.batch_size as u64;
        (entries.div_ceil(bs), move |step: u64| {
            let first = step * bs;
            (first, bs.min(entries - first))
        })
    }

    /// fillseq / fillrandom: every key once, on one thread, in the order `index_of` gives.
    fn fill(
        &self,
        benchmark: Benchmark,
        stream: u64,
        index_of: impl Fn(&mut Rng, u64) -> u64 + Sync,
    ) -> Result<Measured> {
        let (steps, batch) = self.batches(self.config.num);
        self.timed(benchmark, 1, steps, self.config.num, stream, |ctx, step| {
            let (first, count) = batch(step);
            self.put_entries(ctx, first, count, &index_of)
        })
    }

    /// overwrite: `--num` puts of random keys of the range, on `--threads` threads.
    fn overwrite(&self, stream: u64) -> Result<Measured> {
        let (steps, batch) = self.batches(self.config.num);
        let num = self.config.num;
        let random = move |rng: &mut Rng, _| rng.below(num);
        self.timed(
            Benchmark::Overwrite,
            self.config.threads,
            steps,
            num,
            stream,
            |ctx, step| {
                let (first, count) = batch(step);
                self.put_entries(ctx, first, count, &random)
            },
        )
    }

    /// deleterandom: `--deletes` distinct random keys, on one thread.
    fn delete_random(&self, stream: u64, phase: u64) -> Result<Measured> {
        let order = Permutation::new(self.config.num, self.config.seed ^ STREAM_DELETE ^ phase);
        let (steps, batch) = self.batches(self.config.deletes);
        let ks = self.keys.key_size();
        self.timed(
            Benchmark::DeleteRandom,
            1,
            steps,
            self.config.deletes,
            stream,
            |ctx, step| {
                let (first, count) = batch(step);
                let indexes: Vec<u64> = (first..first + count).map(|i| order.get(i)).collect();
                if count == 1 {
                    self.keys.encode(indexes[0], Variant::Written, &mut ctx.key);
                    self.engine
                        .delete(self.keys.keyspace(indexes[0]), &ctx.key)?;
                } else {
                    ctx.buf.resize(indexes.len() * ks, 0);
                    for (key, &index) in ctx.buf.chunks_exact_mut(ks).zip(&indexes) {
                        self.keys.encode(index, Variant::Written, key);
                    }
                    let ops: Vec<BatchOp<'_>> = ctx
                        .buf
                        .chunks_exact(ks)
                        .zip(&indexes)
                        .map(|(key, &index)| BatchOp::Delete(self.keys.keyspace(index), key))
                        .collect();
                    self.engine.write_batch(&ops)?;
                }
                let removed = indexes.iter().filter(|&&i| self.model.set_dead(i)).count();
                Ok(Outcome {
                    ops: count,
                    entries: removed as u64,
                    ..Outcome::default()
                })
            },
        )
    }

    /// deleterange: `--max_num_range_tombstones` range deletes on one thread, the `j`th over
    /// the `--range_tombstone_width` key indexes from `j · num / tombstones` (so they are spread
    /// evenly over the key range, in the keyspace of their first key).
    fn delete_ranges(&self, stream: u64) -> Result<Measured> {
        let tombstones = self.config.range_tombstones;
        let num = self.config.num;
        let width = self.config.range_tombstone_width;
        let spacing = (num / tombstones.max(1)).max(1);
        self.timed(
            Benchmark::DeleteRange,
            1,
            tombstones,
            tombstones,
            stream,
            |ctx, step| {
                let first = step * spacing;
                let last = (first + width).min(num);
                let ks = self.keys.keyspace(first);
                self.keys.encode(first, Variant::Written, &mut ctx.key);
                // The end: the key of the index past the range (above every key at the top).
                ctx.buf.resize(self.keys.key_size(), 0);
                if last < num {
                    self.keys.encode(last, Variant::Written, &mut ctx.buf);
                } else {
                    ctx.buf.fill(0xff);
                }
                self.engine.delete_range(ks, &ctx.key, &ctx.buf)?;
                let removed = (first..last)
                    .filter(|&i| self.keys.keyspace(i) == ks && self.model.set_dead(i))
                    .count();
                Ok(Outcome {
                    ops: 1,
                    entries: removed as u64,
                    ..Outcome::default()
                })
            },
        )
    }

    /// mergerandom: `--num` merges of the counter 1 onto random keys (with repeats), on
    /// `--threads` threads.
    fn merge_random(&self, stream: u64) -> Result<Measured> {
        let num = self.config.num;
        let operand = 1u64.to_le_bytes();
        self.timed(
            Benchmark::MergeRandom,
            self.config.threads,
            num,
            num,
            stream,
            |ctx, _| {
                let index = ctx.rng.below(num);
                self.keys.encode(index, Variant::Written, &mut ctx.key);
                self.engine
                    .merge(self.keys.keyspace(index), &ctx.key, &operand)?;
                self.model.set_live(index);
                Ok(Outcome {
                    ops: 1,
                    ..Outcome::default()
                })
            },
        )
    }

    /// A read workload: `--reads` steps of `read` on `--threads` threads.
    fn reads<F>(&self, benchmark: Benchmark, stream: u64, read: F) -> Result<Measured>
    where
        F: Fn(&Self, &mut ThreadCtx) -> Result<Outcome> + Sync,
    {
        let reads = self.config.reads;
        self.timed(
            benchmark,
            self.config.threads,
            reads,
            reads,
            stream,
            |ctx, _| read(self, ctx),
        )
    }

    /// One lookup of the written key of `index`.
    fn read_written(&self, ctx: &mut ThreadCtx, index: u64) -> Result<Outcome> {
        self.keys.encode(index, Variant::Written, &mut ctx.key);
        let found = self
            .engine
            .get(self.keys.keyspace(index), &ctx.key, &mut ctx.buf)?;
        Ok(Outcome {
            ops: 1,
            found: u64::from(found),
            expected: u64::from(self.model.is_live(index)),
            ..Outcome::default()
        })
    }

    /// multireadrandom / multireadmissing: `--reads` random keys of `variant` on `--threads`
    /// threads, `--batch_size` per step, each step one batched lookup (`db_bench`'s
    /// multireadrandom). Operations are keys, as `db_bench` counts them, so micros/op is per
    /// key and compares with readrandom's per lookup.
    fn multi_reads(&self, benchmark: Benchmark, stream: u64, variant: Variant) -> Result<Measured> {
        let reads = self.config.reads;
        let (steps, batch) = self.batches(reads);
        self.timed(
            benchmark,
            self.config.threads,
            steps,
            reads,
            stream,
            |ctx, step| {
                let (_, count) = batch(step);
                self.multi_read(ctx, count as usize, variant)
            },
        )
    }

    /// One batched lookup of `count` random keys of `variant`. An engine's `multi_get` reads one
    /// keyspace, so with `--keyspaces` above 1 the batch is grouped by keyspace and each group
    /// is one call (a batch of 64 keys over 4 keyspaces: 4 calls of about 16); with one
    /// keyspace the whole batch is one call, its keys in the order drawn. The key bytes and
    /// indexes live in the thread's buffers; only the list of key slices is new per batch.
    fn multi_read(&self, ctx: &mut ThreadCtx, count: usize, variant: Variant) -> Result<Outcome> {
        let (num, keys) = (self.config.num, &self.keys);
        let rng = &mut ctx.rng;
        ctx.indexes.clear();
        ctx.indexes.extend((0..count).map(|_| rng.below(num)));
        if self.config.keyspaces > 1 {
            // Keys of one keyspace together; their order within the group is the engine's
            // business (siftdb's multi_get sorts its keys itself).
            ctx.indexes.sort_unstable_by_key(|&i| keys.keyspace(i));
        }
        let width = keys.key_size();
        ctx.buf.resize(count * width, 0);
        for (key, &index) in ctx.buf.chunks_exact_mut(width).zip(&ctx.indexes) {
            keys.encode(index, variant, key);
        }
        let slices: Vec<&[u8]> = ctx.buf.chunks_exact(width).collect();
        let mut outcome = Outcome {
            ops: count as u64,
            batches: 1,
            ..Outcome::default()
        };
        let mut start = 0;
        for group in ctx
            .indexes
            .chunk_by(|&a, &b| keys.keyspace(a) == keys.keyspace(b))
        {
            let end = start + group.len();
            outcome.found += self
                .engine
                .multi_get(keys.keyspace(group[0]), &slices[start..end])?;
            outcome.calls += 1;
            start = end;
        }
        if variant == Variant::Written {
            let live = ctx.indexes.iter().filter(|&&i| self.model.is_live(i));
            outcome.expected = live.count() as u64;
        }
        Ok(outcome)
    }

    /// readhot's hot set: `--hot_keys` keys, half written and half never written; or with
    /// `--hot_false_positives`, never-written keys that are false positives of the tree.
    fn hot_set(&self, phase: u64) -> Result<Vec<(u64, Variant)>> {
        let num = self.config.num;
        let written = Permutation::new(num, self.config.seed ^ STREAM_HOT ^ phase);
        let missing = Permutation::new(num, self.config.seed ^ STREAM_HOT ^ !phase);
        if self.config.hot_false_positives {
            return self.false_positive_set(&missing);
        }
        let hot = self.config.hot_keys.min(2 * num);
        let half = hot / 2;
        Ok((0..half)
            .map(|j| (written.get(j), Variant::Written))
            .chain((0..hot - half).map(|j| (missing.get(j), Variant::Missing)))
            .collect())
    }

    /// Never-written keys whose lookup read a data block: each is a false positive of some
    /// table's filter. Untimed; with siftdb's memo on, these first lookups are what warms it.
    ///
    /// The missing keys of the written range come first (in `missing`'s order), then missing
    /// keys past it (indexes from `--num` on, under prefixes no fill writes), up to
    /// [`FALSE_POSITIVE_PROBES`] times `--num` keys in all: with the tree's filter index in
    /// effect a key must pass it and a table's filter, a few in a million, which the written
    /// range alone may not hold.
    fn false_positive_set(&self, missing: &Permutation) -> Result<Vec<(u64, Variant)>> {
        let want = self.config.hot_keys as usize;
        let num = self.config.num;
        let data_blocks = || -> Result<u64> {
            let stats = self.engine.stats().ok_or_else(|| {
                Error::new(format!(
                    "--hot_false_positives: {} reports no block statistics",
                    self.engine.name()
                ))
            })?;
            Ok(stats.filter_total().data_block_accesses)
        };
        let mut key = self.keys.key_buffer();
        let mut buf = Vec::new();
        let mut set = Vec::with_capacity(want);
        let candidates = (0..num).map(|j| missing.get(j)).chain(
            num..num
                .saturating_mul(FALSE_POSITIVE_PROBES)
                .min(self.keys.encodable()),
        );
        let mut probed = 0u64;
        let mut before = data_blocks()?;
        for index in candidates {
            if set.len() == want {
                break;
            }
            self.keys.encode(index, Variant::Missing, &mut key);
            self.engine.get(self.keys.keyspace(index), &key, &mut buf)?;
            probed += 1;
            let after = data_blocks()?;
            if after > before {
                set.push((index, Variant::Missing));
            }
            before = after;
        }
        eprintln!(
            "readhot: {} false positives of the tree's filters among {probed} missing keys probed",
            set.len()
        );
        if set.is_empty() {
            return Err(Error::new(format!(
                "--hot_false_positives: none of {probed} missing keys was a false positive"
            )));
        }
        Ok(set)
    }

    /// One lookup of the key of `index` and `variant` (expected found when written and live).
    fn read_key(&self, ctx: &mut ThreadCtx, index: u64, variant: Variant) -> Result<Outcome> {
        self.keys.encode(index, variant, &mut ctx.key);
        let found = self
            .engine
            .get(self.keys.keyspace(index), &ctx.key, &mut ctx.buf)?;
        Ok(Outcome {
            ops: 1,
            found: u64::from(found),
            expected: u64::from(variant == Variant::Written && self.model.is_live(index)),
            ..Outcome::default()
        })
    }

    /// readhot: lookups drawn from the hot set ([`Workload::hot_set`]).
    fn read_hot(&self, stream: u64, set: Vec<(u64, Variant)>) -> Result<Measured> {
        self.reads(Benchmark::ReadHot, stream, |w, ctx| {
            let (index, variant) = set[ctx.rng.below(set.len() as u64) as usize];
            w.read_key(ctx, index, variant)
        })
    }

    /// readhotscan (see [`Benchmark::ReadHotScan`]): returns the measurement of every hot read
    /// (scan chunks run inside the reads that start them, so they weigh on the latency tail)
    /// and the hot reads' data-block hit rates, alone and beside the scan (`None` for an engine
    /// without cache counters).
    fn read_hot_scan(&self, stream: u64) -> Result<(Measured, Option<(f64, f64)>)> {
        const CHUNKS: u64 = 20;
        let num = self.config.num;
        let hot = ((num as f64 * self.config.hot_fraction) as u64).clamp(1, num.max(1));
        let reads = self.config.reads.max(2 * CHUNKS);
        let half = reads / 2;
        let per_chunk = half / CHUNKS;
        let chunk_keys = num.div_ceil(CHUNKS);
        // Data-block (hits, misses) at the start of the current hot batch, and the sums over
        // the batches of each half.
        let counted = Mutex::new((self.data_block_counts(), [(0u64, 0u64); 2]));
        let measured = self.timed(Benchmark::ReadHotScan, 1, reads, reads, stream, |ctx, i| {
            let beside = i >= half;
            let boundary = i == half || (beside && (i - half).is_multiple_of(per_chunk));
            if boundary {
                let mut c = counted.lock().unwrap_or_else(PoisonError::into_inner);
                let now = self.data_block_counts();
                let half_index = usize::from(i > half);
                let start = c.0;
                add_delta(&mut c.1[half_index], now, start);
                let chunk = ((i - half) / per_chunk).min(CHUNKS);
                if chunk < CHUNKS {
                    let start = chunk * chunk_keys;
                    self.keys
                        .encode(start.min(num - 1), Variant::Written, &mut ctx.key);
                    self.engine.seek_read(0, &ctx.key, chunk_keys as usize)?;
                }
                c.0 = self.data_block_counts();
            }
            let index = ctx.rng.below(hot);
            self.read_written(ctx, index)
        })?;
        let mut c = counted.lock().unwrap_or_else(PoisonError::into_inner);
        let now = self.data_block_counts();
        let last = c.0;
        add_delta(&mut c.1[1], now, last);
        let rate = |(h, m): (u64, u64)| h as f64 / (h + m).max(1) as f64;
        let rates = self.engine.stats().map(|_| (rate(c.1[0]), rate(c.1[1])));
        Ok((measured, rates))
    }

    /// The engine's data-block cache (hits, misses) so far ((0, 0) without statistics).
    fn data_block_counts(&self) -> (u64, u64) {
        self.engine.stats().map_or((0, 0), |s| {
            let data = s.cache.kind(siftdb::BlockKind::Data);
            (data.hits, data.misses)
        })
    }

    /// readzipf: lookups whose key positions follow a Zipf law; the same ranks map to the same
    /// positions in every readzipf phase of a run (the permutation depends on `--seed` only), so
    /// a later phase reads the hot keys an earlier one did.
    fn read_zipf(&self, stream: u64) -> Result<Measured> {
        let zipf = crate::runner::zipf::Zipf::new(self.config.num, self.config.zipf_theta);
        let scatter = self
            .config
            .zipf_scramble
            .then(|| Permutation::new(self.config.num, self.config.seed ^ STREAM_ZIPF));
        // The missing share as a threshold on 64 random bits.
        let missing_below = (self.config.zipf_missing_fraction * u64::MAX as f64) as u64;
        self.reads(Benchmark::ReadZipf, stream, |w, ctx| {
            let rank = zipf.sample(&mut ctx.rng);
            let index = scatter.as_ref().map_or(rank, |p| p.get(rank));
            let variant = if ctx.rng.next_u64() < missing_below {
                Variant::Missing
            } else {
                Variant::Written
            };
            w.read_key(ctx, index, variant)
        })
    }

    /// readwhilewriting: `--threads` readers do readrandom while one writer overwrites existing
    /// keys (so the set of existing keys, and the expected counts, stay the same).
    fn read_while_writing(&self, stream: u64) -> Result<(Measured, u64)> {
        let mut rng = Rng::new(self.config.seed, stream ^ STREAM_WRITER);
        let mut key = self.keys.key_buffer();
        self.readrandom_beside(Benchmark::ReadWhileWriting, stream, "writer", || {
            let index = rng.below(self.config.num);
            if !self.model.is_live(index) {
                return Ok(false);
            }
            self.keys.encode(index, Variant::Written, &mut key);
            let value = self.values.value(&mut rng);
            self.engine.put(self.keys.keyspace(index), &key, value)?;
            Ok(true)
        })
    }

    /// readwhilecompacting: `--threads` readers do readrandom while one thread compacts the
    /// whole database, again and again until they are done. Every full compaction reads and
    /// rewrites every table: its block reads must not push the readers' blocks out of the cache.
    fn read_while_compacting(&self, stream: u64) -> Result<(Measured, u64)> {
        self.readrandom_beside(Benchmark::ReadWhileCompacting, stream, "compactor", || {
            self.engine.compact().map(|()| true)
        })
    }

    /// `--threads` readers do readrandom (as `benchmark`) while one more thread repeats `step`
    /// until they are done. Returns the readers' measurement and how many steps counted (returned
    /// `true`).
    fn readrandom_beside(
        &self,
        benchmark: Benchmark,
        stream: u64,
        what: &str,
        mut step: impl FnMut() -> Result<bool> + Send,
    ) -> Result<(Measured, u64)> {
        let stop = AtomicBool::new(false);
        let steps = AtomicU64::new(0);
        std::thread::scope(|scope| {
            let background = scope.spawn(|| -> Result<()> {
                while !stop.load(Ordering::Relaxed) {
                    if step()? {
                        steps.fetch_add(1, Ordering::Relaxed);
                    }
                }
                Ok(())
            });
            let readers = self.reads(benchmark, stream, |w, ctx| {
                let index = ctx.rng.below(w.config.num);
                w.read_written(ctx, index)
            });
            stop.store(true, Ordering::Relaxed);
            let background = background
                .join()
                .unwrap_or_else(|_| Err(Error::new(format!("the {what} thread panicked"))));
            let measured = readers?;
            background.map_err(|e| e.context(what))?;
            Ok((measured, steps.load(Ordering::Relaxed)))
        })
    }
}

/// Adds the counts between `before` and `now` to `sum`.
fn add_delta(sum: &mut (u64, u64), now: (u64, u64), before: (u64, u64)) {
    sum.0 += now.0.saturating_sub(before.0);
    sum.1 += now.1.saturating_sub(before.1);
}

/// A fresh directory for a checkpoint, beside the database in `db_dir`: on its file system, so
/// that table files are hard-linked as checkpoints are meant to be taken (the system's temporary
/// directory may be another file system, where every table would be copied). Not inside the
/// database directory, which belongs to the engine.
fn checkpoint_parent(db_dir: &Path) -> Result<tempfile::TempDir> {
    sibling_dir(db_dir, "siftdb-bench-checkpoint-")
}

/// A fresh directory named `prefix...` beside the database in `db_dir` (on its file system),
/// removed when dropped.
fn sibling_dir(db_dir: &Path, prefix: &str) -> Result<tempfile::TempDir> {
    let parent = db_dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(parent)
        .map_err(|e| {
            Error::from(e).context(format!("cannot create a directory in {}", parent.display()))
        })
}

/// Bytes of every file below `dir` (what the engine keeps on disk: tables, logs, metadata).
fn directory_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => directory_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

fn unreachable_untimed(benchmark: Benchmark) -> Result<Measured> {
    Err(Error::new(format!(
        "internal error: {} is not a workload of timed steps",
        benchmark.name()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use siftdb::LevelFilterStats;

    #[test]
    fn delta_subtracts_counters() {
        let mut before = Stats {
            gets: 10,
            levels: vec![LevelFilterStats {
                checked: 5,
                useful: 4,
                ..LevelFilterStats::default()
            }],
            ..Stats::default()
        };
        before.cache.per_kind[0].hits = 3;
        let mut after = Stats {
            gets: 25,
            stall_micros: 7,
            stall_micros_memtables: 5,
            levels: vec![
                LevelFilterStats {
                    checked: 9,
                    useful: 6,
                    ..LevelFilterStats::default()
                },
                LevelFilterStats {
                    checked: 2,
                    ..LevelFilterStats::default()
                },
            ],
            ..Stats::default()
        };
        after.cache.per_kind[0].hits = 10;
        let d = after.since(&before);
        assert_eq!(d.gets, 15);
        assert_eq!(d.stall_micros, 7);
        assert_eq!(d.stall_micros_memtables, 5);
        assert_eq!(d.levels[0].checked, 4);
        assert_eq!(d.levels[0].useful, 2);
        assert_eq!(d.levels[1].checked, 2);
        assert_eq!(d.cache.per_kind[0].hits, 7);
    }

    /// Every read finds what a one-keyspace run finds, with the keys spread over three
    /// keyspaces and written in batches that cross them; the checkpoint holds them all.
    #[test]
    fn keyspaced_runs_find_every_key_where_it_was_written() {
        use clap::Parser;
        let args = crate::runner::Args::try_parse_from([
            "siftdb-bench",
            "--num=3000",
            "--keyspaces=3",
            "--batch_size=7",
            "--json",
        ])
        .unwrap();
        let config = Config::from_args(&args).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("db");
        let engine = crate::runner::SiftEngine::open(&db, &config).unwrap();
        let bench = Workbench::new(&config, &engine, &db).unwrap();
        let benchmarks = [
            Benchmark::FillRandom,
            Benchmark::ReadRandom,
            Benchmark::ReadMissing,
            Benchmark::MultiReadRandom,
            Benchmark::SeekRandom,
            Benchmark::PrefixScan,
            Benchmark::ReadSeq,
            Benchmark::DeleteRandom,
            Benchmark::ReadHot,
            Benchmark::ReadZipf,
            Benchmark::MultiReadRandom,
            Benchmark::MultiReadMissing,
            Benchmark::Checkpoint,
        ];
        for (phase, benchmark) in benchmarks.into_iter().enumerate() {
            let result = bench.run(benchmark, phase as u64).unwrap();
            let t = result.measured.unwrap().totals;
            assert_eq!(t.found, t.expected, "{}", benchmark.name());
            if matches!(benchmark, Benchmark::PrefixScan | Benchmark::ReadSeq) {
                assert_eq!(t.entries, t.expected_entries, "{}", benchmark.name());
            }
            if benchmark == Benchmark::ReadRandom {
                assert_eq!(t.found, 3000);
            }
            if benchmark.is_multi_read() {
                // 3000 keys in batches of 7 (the last 4); each batch's keys grouped per keyspace,
                // one multi_get per group: more calls than batches, at most 3 per batch.
                assert_eq!((t.ops, t.batches), (3000, 429), "{}", benchmark.name());
                assert!(t.calls > t.batches && t.calls <= 3 * t.batches);
                if benchmark == Benchmark::MultiReadMissing {
                    assert_eq!(t.found, 0);
                } else if phase == 3 {
                    assert_eq!(t.found, 3000, "before deleterandom every key exists");
                } else {
                    assert!(t.found < 3000, "after deleterandom some keys are gone");
                }
            }
            if let Some(c) = result.checkpoint {
                assert_eq!((c.keys, c.source_keys), (2700, 2700));
                assert!(
                    c.files_linked.unwrap() >= 3,
                    "a table per keyspace at least"
                );
                assert!(c.dir_bytes > 0);
            }
        }
        engine.close().unwrap();
        // The checkpoint went beside the database, and is gone.
        let beside: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(beside, ["db"]);
    }

    /// bulkload into three keyspaces, files cut small: every key readable, the staging directory
    /// gone, and a later overwrite reads back newer than the loaded values.
    #[test]
    fn bulkload_loads_every_key_through_ingested_files() {
        use clap::Parser;
        let args = crate::runner::Args::try_parse_from([
            "siftdb-bench",
            "--num=5000",
            "--keyspaces=3",
            "--target_file_size_base=16384",
            "--json",
        ])
        .unwrap();
        let config = Config::from_args(&args).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("db");
        let engine = crate::runner::SiftEngine::open(&db, &config).unwrap();
        let bench = Workbench::new(&config, &engine, &db).unwrap();
        let benchmarks = [
            Benchmark::BulkLoad,
            Benchmark::ReadRandom,
            Benchmark::ReadSeq,
            Benchmark::Overwrite,
            Benchmark::ReadRandom,
        ];
        for (phase, benchmark) in benchmarks.into_iter().enumerate() {
            let result = bench.run(benchmark, phase as u64).unwrap();
            let t = result.measured.unwrap().totals;
            assert_eq!(t.found, t.expected, "{}", benchmark.name());
            if benchmark == Benchmark::ReadRandom {
                assert_eq!(t.found, 5000);
            }
        }
        let stats = engine.stats().unwrap();
        assert!(stats.files_ingested >= 6, "{} files", stats.files_ingested);
        engine.close().unwrap();
        let beside: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(beside, ["db"], "the staging directory is gone");
    }

    /// YCSB's six workloads on two threads and two keyspaces, after deletes: every record a
    /// read or scan should find is found, inserts land after the loaded records and are read
    /// back (workload D reads the newest), each operation type has its histogram.
    #[test]
    fn ycsb_workloads_find_every_record_and_count_each_operation_type() {
        use crate::runner::measure::OpKind;
        use clap::Parser;
        let args = crate::runner::Args::try_parse_from([
            "siftdb-bench",
            "--num=2000",
            "--reads=3000",
            "--threads=2",
            "--keyspaces=2",
            "--deletes=200",
            "--benchmarks=fillrandom,deleterandom,ycsba,ycsbb,ycsbc,ycsbd,ycsbe,ycsbf",
            "--json",
        ])
        .unwrap();
        let config = Config::from_args(&args).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let engine = crate::runner::SiftEngine::open(dir.path(), &config).unwrap();
        let bench = Workbench::new(&config, &engine, dir.path()).unwrap();
        assert_eq!(
            bench.keys.capacity(),
            2000 + 2 * 3000,
            "room for D's and E's inserts"
        );
        for (phase, &benchmark) in config.benchmarks.iter().enumerate() {
            let result = bench.run(benchmark, phase as u64).unwrap();
            let m = result.measured.unwrap();
            let t = m.totals;
            assert_eq!(t.found, t.expected, "{}", benchmark.name());
            if !benchmark.is_ycsb() {
                continue;
            }
            assert_eq!(t.ops, 3000);
            let kinds: Vec<OpKind> = m.by_kind.iter().map(|(k, _)| *k).collect();
            let sum: u64 = m.by_kind.iter().map(|(_, h)| h.len()).sum();
            assert_eq!(sum, 3000, "{}", benchmark.name());
            let want: &[OpKind] = match benchmark {
                Benchmark::YcsbA | Benchmark::YcsbB => &[OpKind::Read, OpKind::Update],
                Benchmark::YcsbC => &[OpKind::Read],
                Benchmark::YcsbD => &[OpKind::Read, OpKind::Insert],
                Benchmark::YcsbE => &[OpKind::Insert, OpKind::Scan],
                _ => &[OpKind::Read, OpKind::ReadModifyWrite],
            };
            assert_eq!(kinds, want, "{}", benchmark.name());
            if benchmark == Benchmark::YcsbE {
                assert!(
                    t.entries > t.ops * 20,
                    "scans of 1..=100 records read about 50 each"
                );
            }
        }
        // D's and E's inserts (about 5 % of 3000 each) exist and a scan finds exactly the
        // model's records (updates may have rewritten deleted ones, as YCSB's do).
        let inserted = bench.next_insert.load(Ordering::Relaxed) - 2000;
        assert!((150..=450).contains(&inserted), "{inserted}");
        assert_eq!(bench.acknowledged.load(Ordering::Relaxed), 2000 + inserted);
        assert!((2000..2000 + inserted).all(|i| bench.model.is_live(i)));
        assert_eq!(engine.scan(false).unwrap(), bench.model.live_count());
        assert!(bench.model.live_count() >= 1800 + inserted);
        engine.close().unwrap();
    }
}
