//! Engine statistics: RocksDB-style tickers, per level where it matters.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use siftdb_cache::{BlockKind, CacheStats, MemoStats};
use siftdb_sstable::{ReadStatistics, Ticker};

use crate::base::options::MAX_LEVELS;

/// Live counters (shared by the engine's threads). Those every lookup bumps are [`Ticker`]s,
/// striped so that reading threads do not bounce one cache line between them.
#[derive(Debug, Default)]
pub(crate) struct EngineCounters {
    /// Block reads from table files (all levels) for users: lookups and iterators.
    pub reads: std::sync::Arc<ReadStatistics>,
    /// Block reads from table files by compactions (kept apart from users' reads).
    pub compaction_reads: std::sync::Arc<ReadStatistics>,
    pub trivial_moves: AtomicU64,
    /// Tables moved with their ribbon filter thinned to the new level's plan.
    pub filters_thinned_by_moves: AtomicU64,
    /// Key ranges merged by split compactions (`Options::max_subcompactions`).
    pub subcompactions: AtomicU64,
    /// Tables FIFO compaction dropped.
    pub fifo_tables_dropped: AtomicU64,
    pub table_bytes_uncompressed: AtomicU64,
    pub gets: Ticker,
    pub gets_found: Ticker,
    pub memtable_hits: Ticker,
    pub memtable_bloom_checked: Ticker,
    pub memtable_bloom_useful: Ticker,
    pub keys_written: AtomicU64,
    pub bytes_written_user: AtomicU64,
    pub wal_bytes: AtomicU64,
    pub wal_syncs: AtomicU64,
    pub write_groups: AtomicU64,
    pub flushes: AtomicU64,
    pub flush_bytes: AtomicU64,
    pub blob_bytes_written: AtomicU64,
    pub blob_bytes_relocated: AtomicU64,
    pub compactions: AtomicU64,
    pub compactions_peak_concurrency: AtomicU64,
    pub compaction_bytes_read: AtomicU64,
    pub compaction_bytes_written: AtomicU64,
    pub stall_micros: AtomicU64,
    pub stall_micros_l0_files: AtomicU64,
    pub stall_micros_memtables: AtomicU64,
    pub stall_micros_memory_budget: AtomicU64,
    pub stall_micros_l0_slowdown: AtomicU64,
    pub checkpoints: AtomicU64,
    pub checkpoint_files_linked: AtomicU64,
    pub checkpoint_bytes_copied: AtomicU64,
    pub files_ingested: AtomicU64,
    pub files_deleted_in_range: AtomicU64,
    pub ingested_bytes_linked: AtomicU64,
    pub ingested_bytes_copied: AtomicU64,
    pub recovery_dropped_wal_fragments: AtomicU64,
    pub recovery_dropped_wal_bytes: AtomicU64,
    pub recovery_dropped_wals: AtomicU64,
    pub compaction_filter_removed: AtomicU64,
    pub compaction_filter_changed: AtomicU64,
    pub compaction_filter_failures: AtomicU64,
    pub range_deleted_dropped: AtomicU64,
    pub range_tombstones_dropped: AtomicU64,
    pub merges_in_compaction: AtomicU64,
}

/// Filter tickers of one level.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LevelFilterStats {
    /// Lookups that consulted a filter on this level.
    pub checked: u64,
    /// Filter said "no" (`bloom.filter.useful`).
    pub useful: u64,
    /// Filter said "maybe" (`bloom.filter.full.positive`).
    pub positive: u64,
    /// Filter said "maybe" and the key was there (`bloom.filter.full.true.positive`).
    pub true_positive: u64,
    /// Data blocks point lookups used on this level (cache or file).
    pub data_block_accesses: u64,
    /// Lookups on this level the false-positive memo answered (an index and a data block
    /// saved each).
    pub memo_hits: u64,
    /// False positives on this level the memo remembered.
    pub memo_inserts: u64,
    /// The false positives the asked filters' expected FPRs predict, in billionths (see
    /// [`LevelFilterStats::expected_false_positives`]).
    pub expected_false_positives_ppb: u64,
}

impl LevelFilterStats {
    /// The tickers of `self` less those of `before` (an earlier reading).
    pub fn since(&self, before: &LevelFilterStats) -> LevelFilterStats {
        siftdb_cache::stats_since!(LevelFilterStats, self, before,
            counters [checked, useful, positive, true_positive, data_block_accesses, memo_hits,
                memo_inserts, expected_false_positives_ppb],
            gauges [])
    }

    /// False positives: "maybe" for a key that was not there.
    pub fn false_positives(&self) -> u64 {
        self.positive.saturating_sub(self.true_positive)
    }

    /// The false positives the filters' sizes predict: each filter asked about a key it does
    /// not hold adds its expected FPR. Unlike [`LevelFilterStats::false_positives`] it does not
    /// hang on whether a few hot keys happen to be false positives, so it compares filter
    /// allocations on a skewed workload with little noise.
    pub fn expected_false_positives(&self) -> f64 {
        self.expected_false_positives_ppb as f64 / 1e9
    }

    /// Measured FPR = false positives / (false positives + true negatives); 0 with no sample.
    pub fn measured_fpr(&self) -> f64 {
        let negatives = self.false_positives() + self.useful;
        if negatives == 0 {
            0.0
        } else {
            self.false_positives() as f64 / negatives as f64
        }
    }
}

/// A snapshot of the engine's statistics ([`Db::stats`](crate::Db::stats)). The fields are
/// public plain counters (RocksDB's tickers of the same names where one exists), read directly.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    /// Filter tickers per level (index = level).
    pub levels: Vec<LevelFilterStats>,
    /// Point lookups.
    pub gets: u64,
    /// Point lookups that found a value.
    pub gets_found: u64,
    /// Lookups answered by a memtable.
    pub memtable_hits: u64,
    /// Memtable searches that asked the memtable's bloom first
    /// (`Options::memtable_prefix_bloom_size_ratio`).
    pub memtable_bloom_checked: u64,
    /// Of those, the ones the bloom answered "no" (the skiplist search skipped; RocksDB's
    /// `bloom.memtable.miss`).
    pub memtable_bloom_useful: u64,
    /// Point lookups that probed a keyspace's filter index (`Options::filter_index_bits_per_key`).
    pub filter_index_checked: u64,
    /// Of those, the keys it ruled out of every table it covers.
    pub filter_index_useful: u64,
    /// Keys it did not rule out that no table held, while it covered every table.
    pub filter_index_false_positives: u64,
    /// Bytes of the keyspaces' filter indexes now (charged to the block cache).
    pub filter_index_bytes: u64,
    /// Filter index rebuilds completed since open.
    pub filter_index_rebuilds: u64,
    /// Times a keyspace's filter index was dropped because its lookups found their keys (it
    /// returns when they miss again; see `docs/TUNING.md`).
    pub filter_index_retirements: u64,
    /// Data blocks read from table files.
    pub data_block_reads: u64,
    /// Index blocks read from table files.
    pub index_block_reads: u64,
    /// Filter blocks read from table files.
    pub filter_block_reads: u64,
    /// Bytes read from table files.
    pub bytes_read: u64,
    /// Prefix filter checks.
    pub prefix_checked: u64,
    /// Prefix filter "no" answers (tables skipped by prefix seeks).
    pub prefix_useful: u64,
    /// Range filters consulted by range scans (`Options::range_filter_bits_per_key`).
    pub range_checked: u64,
    /// Range filters that ruled their table out of a scan (its blocks never read).
    pub range_useful: u64,
    /// Keys written by the user (puts and deletes).
    pub keys_written: u64,
    /// Bytes of keys and values written by the user.
    pub bytes_written_user: u64,
    /// Bytes appended to the WAL.
    pub wal_bytes: u64,
    /// WAL syncs.
    pub wal_syncs: u64,
    /// Write groups committed (several concurrent writers share one group).
    pub write_groups: u64,
    /// Memtable flushes.
    pub flushes: u64,
    /// Bytes of tables written by flushes.
    pub flush_bytes: u64,
    /// Bytes of blob files written (by flushes that separate values, and by blob garbage
    /// collection): counted in [`Stats::write_amplification`] with the tables.
    pub blob_bytes_written: u64,
    /// Value bytes blob garbage collection moved out of the oldest blob files into new ones
    /// (`Options::enable_blob_garbage_collection`).
    pub blob_bytes_relocated: u64,
    /// Blob files live in the current versions of all keyspaces.
    pub blob_files: u64,
    /// Their stored value bytes (what their records hold, compressed where that paid).
    pub blob_file_bytes: u64,
    /// Of `blob_file_bytes`, the values no live table references any more (overwritten,
    /// deleted or relocated): reclaimed when a file's last reference goes, or by garbage
    /// collection.
    pub blob_garbage_bytes: u64,
    /// Compactions.
    pub compactions: u64,
    /// Most background compactions seen running at once (at most
    /// `Options::compaction_threads()`).
    pub compactions_peak_concurrency: u64,
    /// Bytes read by compactions.
    pub compaction_bytes_read: u64,
    /// Bytes written by compactions.
    pub compaction_bytes_written: u64,
    /// Blocks compactions read from table files (not in `data_block_reads` and friends, and
    /// never inserted into the block cache).
    pub compaction_blocks_read: u64,
    /// Tables moved one level down by a manifest edit alone, without being rewritten.
    pub trivial_moves: u64,
    /// Of [`Stats::trivial_moves`], the tables whose ribbon filter held more bits than their
    /// new level's plan under Monkey: they moved with the filter read thinned to the plan
    /// instead of being rewritten for it.
    pub filters_thinned_by_moves: u64,
    /// Key ranges merged on threads of their own by compactions split into several
    /// (`Options::max_subcompactions`; 0 when none was split).
    pub subcompactions: u64,
    /// Tables FIFO compaction dropped, oldest first, past its size limit or TTL.
    pub fifo_tables_dropped: u64,
    /// What the tables written by flushes and compactions (`flush_bytes +
    /// compaction_bytes_written` on disk) would have taken uncompressed.
    pub table_bytes_uncompressed: u64,
    /// Microseconds writers spent stalled or slowed down (the four causes below together).
    pub stall_micros: u64,
    /// Of `stall_micros`, the stalls on too many L0 tables (`level0_stop_writes_trigger`): the
    /// compactions out of L0 are behind.
    pub stall_micros_l0_files: u64,
    /// Of `stall_micros`, the stalls on a keyspace's memtables (`max_write_buffer_number` of
    /// them full): the flushes are behind.
    pub stall_micros_memtables: u64,
    /// Of `stall_micros`, the stalls on the shared memtable budget (`db_write_buffer_size` with
    /// `allow_stall`): the flushes that free it are behind.
    pub stall_micros_memory_budget: u64,
    /// Of `stall_micros`, the time write groups waited while slowed down by a keyspace's L0
    /// (`level0_slowdown_writes_trigger`, at `Options::delayed_write_rate`).
    pub stall_micros_l0_slowdown: u64,
    /// Checkpoints written.
    pub checkpoints: u64,
    /// Table files checkpoints hard-linked (no bytes copied).
    pub checkpoint_files_linked: u64,
    /// Bytes checkpoints copied: WALs, and tables where a hard link was not possible (another
    /// file system).
    pub checkpoint_bytes_copied: u64,
    /// External table files ingested (`Db::ingest_external_file`).
    pub files_ingested: u64,
    /// Tables `Db::delete_files_in_range` deleted.
    pub files_deleted_in_range: u64,
    /// Bytes of ingested files hard-linked into the database (`IngestOptions::move_files`).
    pub ingested_bytes_linked: u64,
    /// Bytes of ingested files copied into the database.
    pub ingested_bytes_copied: u64,
    /// Valid WAL fragments that the last open found after damage in a WAL and dropped,
    /// because no sync mark proved the damaged bytes synced: non-zero means a power loss wrote
    /// back a later page of unsynced writes but lost an earlier one (see `docs/RELIABILITY.md`).
    pub recovery_dropped_wal_fragments: u64,
    /// Bytes of the newest WAL past the point where the last open stopped replaying it (a torn
    /// tail, lost unsynced pages, or with `paranoid_checks = false` damage): 0 after a clean
    /// close.
    pub recovery_dropped_wal_bytes: u64,
    /// WALs the last open dropped whole after it stopped replaying (and the log that stopped it
    /// when that log's first record already did): an older log ended in writes a power loss
    /// took before they were synced (a WAL switch leaves the old
    /// log unsynced until a synced write or a flush needs it), and the database is as it was
    /// at that point. Non-zero only after such a loss (or with `paranoid_checks = false`).
    pub recovery_dropped_wals: u64,
    /// Values the compaction filter removed, expired values (`put_with_ttl`) included.
    pub compaction_filter_removed: u64,
    /// Values the compaction filter changed.
    pub compaction_filter_changed: u64,
    /// Compactions abandoned because the compaction filter panicked (each retried later).
    pub compaction_filter_failures: u64,
    /// Entries compactions dropped because a range tombstone deleted them.
    pub range_deleted_dropped: u64,
    /// Range tombstone pieces compactions dropped (superseded within a snapshot stripe, or at
    /// the bottom once nothing is left for them to delete).
    pub range_tombstones_dropped: u64,
    /// Runs of merge operands compactions combined (into a value or one operand).
    pub merges_in_compaction: u64,
    /// Reads from table files that found the file open in the table cache
    /// (`Options::max_open_files`; 0 when it is `-1`: nothing is asked then).
    pub table_cache_hits: u64,
    /// Reads from table files that found the file closed by the table cache and opened it
    /// again (two reads finding it closed at once open it once: see `table_cache_opens`).
    pub table_cache_misses: u64,
    /// Table files opened: every table's first open, and each reopen after the table cache
    /// closed it.
    pub table_cache_opens: u64,
    /// Table files the table cache closed to stay within `max_open_files`.
    pub table_cache_evictions: u64,
    /// Table files open through the table cache now (at most about `max_open_files`; 0 when it
    /// is `-1`).
    pub open_table_files: u64,
    /// Manifests started afresh since open because the last one passed
    /// `Options::max_manifest_file_size`.
    pub manifest_rollovers: u64,
    /// Bytes of the manifest being appended to.
    pub manifest_file_size: u64,
    /// Calls of an [`EventListener`](crate::EventListener) that panicked (contained: logged and
    /// counted, later events still delivered).
    pub event_listener_panics: u64,
    /// The block cache's counters.
    pub cache: CacheStats,
    /// The false-positive memo's counters and size (all zero when it is off).
    pub memo: MemoStats,
}

impl Stats {
    /// What happened between `before` (an earlier reading of the same database) and `self`:
    /// every counter less its earlier value; the figures that describe the database now (sizes,
    /// open files, the last open's recovery, peaks) as `self` has them.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// let db = siftdb::Db::open(dir.path(), siftdb::Options::default())?;
    /// let before = db.stats();
    /// db.put(b"k", b"v")?;
    /// assert_eq!(db.stats().since(&before).keys_written, 1);
    /// # Ok::<(), siftdb::Error>(())
    /// ```
    pub fn since(&self, before: &Stats) -> Stats {
        siftdb_cache::stats_since!(Stats, self, before,
        counters [gets, gets_found, memtable_hits, memtable_bloom_checked,
            memtable_bloom_useful, filter_index_checked, filter_index_useful,
            filter_index_false_positives, filter_index_rebuilds, filter_index_retirements,
            data_block_reads, index_block_reads, filter_block_reads, bytes_read,
            prefix_checked, prefix_useful, range_checked, range_useful, keys_written,
            bytes_written_user, wal_bytes, wal_syncs, write_groups, flushes, flush_bytes,
            blob_bytes_written, blob_bytes_relocated, compactions, compaction_bytes_read,
            compaction_bytes_written, compaction_blocks_read, trivial_moves,
            filters_thinned_by_moves, subcompactions, fifo_tables_dropped,
            table_bytes_uncompressed, stall_micros, stall_micros_l0_files,
            stall_micros_memtables, stall_micros_memory_budget, stall_micros_l0_slowdown, checkpoints,
            checkpoint_files_linked, checkpoint_bytes_copied, files_ingested,
            files_deleted_in_range, ingested_bytes_linked, ingested_bytes_copied,
            compaction_filter_removed, compaction_filter_changed,
            compaction_filter_failures, range_deleted_dropped, range_tombstones_dropped,
            merges_in_compaction, table_cache_hits, table_cache_misses, table_cache_opens,
            table_cache_evictions, manifest_rollovers, event_listener_panics],
        gauges [filter_index_bytes, blob_files, blob_file_bytes, blob_garbage_bytes,
            compactions_peak_concurrency, recovery_dropped_wal_fragments,
            recovery_dropped_wal_bytes, recovery_dropped_wals, open_table_files,
            manifest_file_size],
        nested [
            levels => levels.iter().enumerate().map(|(i, level)| {
                level.since(&before.levels.get(i).copied().unwrap_or_default())
            }).collect(),
            cache => cache.since(&before.cache),
            memo => memo.since(&before.memo),
        ])
    }

    /// All levels' filter tickers added up.
    pub fn filter_total(&self) -> LevelFilterStats {
        self.levels
            .iter()
            .fold(LevelFilterStats::default(), |a, l| LevelFilterStats {
                checked: a.checked + l.checked,
                useful: a.useful + l.useful,
                positive: a.positive + l.positive,
                true_positive: a.true_positive + l.true_positive,
                data_block_accesses: a.data_block_accesses + l.data_block_accesses,
                memo_hits: a.memo_hits + l.memo_hits,
                memo_inserts: a.memo_inserts + l.memo_inserts,
                expected_false_positives_ppb: a.expected_false_positives_ppb
                    + l.expected_false_positives_ppb,
            })
    }

    /// Write amplification: bytes written to disk (WAL, flushes, compactions) / user bytes.
    pub fn write_amplification(&self) -> f64 {
        if self.bytes_written_user == 0 {
            return 0.0;
        }
        (self.wal_bytes
            + self.flush_bytes
            + self.compaction_bytes_written
            + self.blob_bytes_written) as f64
            / self.bytes_written_user as f64
    }

    /// Write amplification without the WAL: bytes flushes and compactions wrote to tables and
    /// blob files / user bytes. RocksDB's compaction statistics count their `W-Amp` so: the WAL
    /// is written once per user byte whatever shape the tree has, so this is what the tree's
    /// shape (levels, compaction style, blob files) changes.
    pub fn write_amplification_without_wal(&self) -> f64 {
        if self.bytes_written_user == 0 {
            return 0.0;
        }
        (self.flush_bytes + self.compaction_bytes_written + self.blob_bytes_written) as f64
            / self.bytes_written_user as f64
    }

    /// Table bytes written / what they would have taken uncompressed (1.0 when nothing was
    /// compressed or nothing written).
    pub fn compression_ratio(&self) -> f64 {
        if self.table_bytes_uncompressed == 0 {
            return 1.0;
        }
        (self.flush_bytes + self.compaction_bytes_written) as f64
            / self.table_bytes_uncompressed as f64
    }

    /// Block cache hit ratio for one block kind.
    pub fn cache_hit_ratio(&self, kind: BlockKind) -> f64 {
        self.cache.kind(kind).hit_ratio()
    }
}

/// Filter tickers per level, added up over the trees whose per-level counters are given.
pub(crate) fn level_filter_stats<'a>(
    trees: impl Iterator<Item = &'a [ReadStatistics; MAX_LEVELS]>,
) -> Vec<LevelFilterStats> {
    let mut sum = vec![LevelFilterStats::default(); MAX_LEVELS];
    for levels in trees {
        for (total, s) in sum.iter_mut().zip(levels) {
            total.checked += s.filter_checked.load(Relaxed);
            total.useful += s.filter_useful.load(Relaxed);
            total.positive += s.filter_positive.load(Relaxed);
            total.true_positive += s.filter_true_positive.load(Relaxed);
            total.data_block_accesses += s.data_block_accesses.load(Relaxed);
            total.memo_hits += s.memo_hits.load(Relaxed);
            total.memo_inserts += s.memo_inserts.load(Relaxed);
            total.expected_false_positives_ppb += s.filter_expected_fp_ppb.load(Relaxed);
        }
    }
    sum
}

impl EngineCounters {
    /// The counters as [`Stats`], with no per-level filter tickers (those are per tree:
    /// [`level_filter_stats`]).
    pub(crate) fn snapshot(&self, cache: CacheStats) -> Stats {
        Stats {
            levels: Vec::new(),
            gets: self.gets.load(Relaxed),
            gets_found: self.gets_found.load(Relaxed),
            memtable_hits: self.memtable_hits.load(Relaxed),
            memtable_bloom_checked: self.memtable_bloom_checked.load(Relaxed),
            memtable_bloom_useful: self.memtable_bloom_useful.load(Relaxed),
            // Per tree: filled in by `Engine::stats`.
            filter_index_checked: 0,
            filter_index_useful: 0,
            filter_index_false_positives: 0,
            filter_index_bytes: 0,
            filter_index_rebuilds: 0,
            filter_index_retirements: 0,
            data_block_reads: self.reads.data_block_reads.load(Relaxed),
            index_block_reads: self.reads.index_block_reads.load(Relaxed),
            filter_block_reads: self.reads.filter_block_reads.load(Relaxed),
            bytes_read: self.reads.bytes_read.load(Relaxed),
            prefix_checked: self.reads.prefix_checked.load(Relaxed),
            prefix_useful: self.reads.prefix_useful.load(Relaxed),
            range_checked: self.reads.range_checked.load(Relaxed),
            range_useful: self.reads.range_useful.load(Relaxed),
            keys_written: self.keys_written.load(Relaxed),
            bytes_written_user: self.bytes_written_user.load(Relaxed),
            wal_bytes: self.wal_bytes.load(Relaxed),
            wal_syncs: self.wal_syncs.load(Relaxed),
            write_groups: self.write_groups.load(Relaxed),
            flushes: self.flushes.load(Relaxed),
            flush_bytes: self.flush_bytes.load(Relaxed),
            blob_bytes_written: self.blob_bytes_written.load(Relaxed),
            blob_bytes_relocated: self.blob_bytes_relocated.load(Relaxed),
            // Gauges of the live versions, filled in by `Engine::stats`.
            blob_files: 0,
            blob_file_bytes: 0,
            blob_garbage_bytes: 0,
            compactions: self.compactions.load(Relaxed),
            compactions_peak_concurrency: self.compactions_peak_concurrency.load(Relaxed),
            compaction_bytes_read: self.compaction_bytes_read.load(Relaxed),
            compaction_bytes_written: self.compaction_bytes_written.load(Relaxed),
            compaction_blocks_read: {
                let r = &self.compaction_reads;
                r.data_block_reads.load(Relaxed)
                    + r.index_block_reads.load(Relaxed)
                    + r.filter_block_reads.load(Relaxed)
            },
            trivial_moves: self.trivial_moves.load(Relaxed),
            filters_thinned_by_moves: self.filters_thinned_by_moves.load(Relaxed),
            subcompactions: self.subcompactions.load(Relaxed),
            fifo_tables_dropped: self.fifo_tables_dropped.load(Relaxed),
            table_bytes_uncompressed: self.table_bytes_uncompressed.load(Relaxed),
            stall_micros: self.stall_micros.load(Relaxed),
            stall_micros_l0_files: self.stall_micros_l0_files.load(Relaxed),
            stall_micros_memtables: self.stall_micros_memtables.load(Relaxed),
            stall_micros_memory_budget: self.stall_micros_memory_budget.load(Relaxed),
            stall_micros_l0_slowdown: self.stall_micros_l0_slowdown.load(Relaxed),
            checkpoints: self.checkpoints.load(Relaxed),
            checkpoint_files_linked: self.checkpoint_files_linked.load(Relaxed),
            checkpoint_bytes_copied: self.checkpoint_bytes_copied.load(Relaxed),
            files_ingested: self.files_ingested.load(Relaxed),
            files_deleted_in_range: self.files_deleted_in_range.load(Relaxed),
            ingested_bytes_linked: self.ingested_bytes_linked.load(Relaxed),
            ingested_bytes_copied: self.ingested_bytes_copied.load(Relaxed),
            recovery_dropped_wal_fragments: self.recovery_dropped_wal_fragments.load(Relaxed),
            recovery_dropped_wal_bytes: self.recovery_dropped_wal_bytes.load(Relaxed),
            recovery_dropped_wals: self.recovery_dropped_wals.load(Relaxed),
            compaction_filter_removed: self.compaction_filter_removed.load(Relaxed),
            compaction_filter_changed: self.compaction_filter_changed.load(Relaxed),
            compaction_filter_failures: self.compaction_filter_failures.load(Relaxed),
            range_deleted_dropped: self.range_deleted_dropped.load(Relaxed),
            range_tombstones_dropped: self.range_tombstones_dropped.load(Relaxed),
            merges_in_compaction: self.merges_in_compaction.load(Relaxed),
            table_cache_hits: 0,
            table_cache_misses: 0,
            table_cache_opens: 0,
            table_cache_evictions: 0,
            open_table_files: 0,
            manifest_rollovers: 0,
            manifest_file_size: 0,
            event_listener_panics: 0,
            cache,
            memo: MemoStats::default(),
        }
    }
}
