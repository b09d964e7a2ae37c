//! Options of a database, of reads and of writes, and the table, cache and compaction option
//! types that go into them.
//!
//! A setter whose RocksDB option has a siftdb counterpart sets that counterpart exactly. A
//! tuning setter with none is accepted and has no effect (each says so). A setter siftdb cannot
//! honour (a custom comparator, cuckoo tables, ...) is remembered, and opening a database with
//! those options fails with an [`Error`] of kind `NotSupported` naming it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::compaction_filter::{CompactionFilterFn, FilterAdapter};
use crate::env::Env;
use crate::merge_operator::{MergeAdapter, MergeFn};
use crate::slice_transform::SliceTransform;
use crate::snapshot::SnapshotInner;
use crate::Error;

/// Declares setters accepted with no effect in siftdb.
macro_rules! no_effect {
    ($($(#[$m:meta])* $name:ident($($arg:ident: $ty:ty),*);)*) => {
        $(
            $(#[$m])*
            #[doc = ""]
            #[doc = "Accepted; siftdb has no counterpart, so it has no effect (see the crate README)."]
            pub fn $name(&mut self, $($arg: $ty),*) {
                $(let _ = $arg;)*
            }
        )*
    };
}
pub(crate) use no_effect;

/// Options of a database or of one column family (RocksDB's `Options`): a `siftdb::Options`
/// underneath, plus what the compatibility layer itself needs.
#[derive(Clone)]
pub struct Options {
    pub(crate) inner: siftdb::Options,
    pub(crate) create_missing_cfs: bool,
    pub(crate) prefix: Option<SliceTransform>,
    /// The first setter siftdb cannot honour: opening with these options fails with it.
    pub(crate) refused: Option<Error>,
    pub(crate) statistics: Option<Arc<crate::statistics::Statistics>>,
}

impl Default for Options {
    fn default() -> Options {
        let inner = siftdb::Options {
            // RocksDB's defaults where they differ from siftdb's.
            create_if_missing: false,
            ..siftdb::Options::default()
        };
        Options {
            inner,
            create_missing_cfs: false,
            prefix: None,
            refused: None,
            statistics: None,
        }
    }
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("inner", &self.inner)
            .field("create_missing_column_families", &self.create_missing_cfs)
            .finish_non_exhaustive()
    }
}

fn count(n: i32) -> usize {
    usize::try_from(n).unwrap_or(0)
}

impl Options {
    /// Remembers a setter siftdb cannot honour; opening fails with it.
    fn refuse(&mut self, what: &str) {
        if self.refused.is_none() {
            self.refused = Some(Error::not_supported(what));
        }
    }

    /// The siftdb options these map to.
    pub fn as_siftdb(&self) -> &siftdb::Options {
        &self.inner
    }

    /// Options that open the database with exactly `options` underneath (an extension: for
    /// siftdb settings no rust-rocksdb setter reaches, such as the filter allocation).
    pub fn from_siftdb(options: siftdb::Options) -> Options {
        Options {
            inner: options,
            ..Options::default()
        }
    }

    /// The keyspace options these map to (for a column family).
    pub(crate) fn keyspace_options(&self) -> siftdb::KeyspaceOptions {
        siftdb::KeyspaceOptions::from(&self.inner)
    }

    /// Create the database if it is missing (siftdb's `create_if_missing`).
    pub fn create_if_missing(&mut self, create_if_missing: bool) {
        self.inner.create_if_missing = create_if_missing;
    }

    /// Create the column families named at open that do not exist yet.
    pub fn create_missing_column_families(&mut self, create: bool) {
        self.create_missing_cfs = create;
    }

    /// Fail to open a database that exists (siftdb's `error_if_exists`).
    pub fn set_error_if_exists(&mut self, enabled: bool) {
        self.inner.error_if_exists = enabled;
    }

    /// Memtable bytes before a flush (siftdb's `write_buffer_size`).
    pub fn set_write_buffer_size(&mut self, size: usize) {
        self.inner.write_buffer_size = size;
    }

    /// Memtable memory of all column families (siftdb's `db_write_buffer_size`).
    pub fn set_db_write_buffer_size(&mut self, size: usize) {
        self.inner.db_write_buffer_size = size;
    }

    /// Memtables kept at most (siftdb's `max_write_buffer_number`).
    pub fn set_max_write_buffer_number(&mut self, nbuf: i32) {
        self.inner.max_write_buffer_number = count(nbuf);
    }

    /// L0 tables that start a compaction (siftdb's `level0_file_num_compaction_trigger`).
    pub fn set_level_zero_file_num_compaction_trigger(&mut self, n: i32) {
        self.inner.level0_file_num_compaction_trigger = count(n);
    }

    /// L0 tables from which writes slow down (siftdb's `level0_slowdown_writes_trigger`).
    pub fn set_level_zero_slowdown_writes_trigger(&mut self, n: i32) {
        self.inner.level0_slowdown_writes_trigger = count(n);
    }

    /// Bytes per second of slowed-down writes (siftdb's `delayed_write_rate`; 0, RocksDB's
    /// "derive it", is its default of 16 MiB/s).
    pub fn set_delayed_write_rate(&mut self, rate: u64) {
        self.inner.delayed_write_rate = if rate == 0 { 16 << 20 } else { rate };
    }

    /// L0 tables at which writes stop (siftdb's `level0_stop_writes_trigger`).
    pub fn set_level_zero_stop_writes_trigger(&mut self, n: i32) {
        self.inner.level0_stop_writes_trigger = count(n);
    }

    /// No background compactions (siftdb's `disable_auto_compactions`).
    pub fn set_disable_auto_compactions(&mut self, disable: bool) {
        self.inner.disable_auto_compactions = disable;
    }

    /// Background jobs (siftdb's `max_background_jobs`); 0 means one, as RocksDB, which keeps
    /// at least one flush and one compaction, treats it.
    pub fn set_max_background_jobs(&mut self, jobs: i32) {
        self.inner.max_background_jobs = count(jobs).max(1);
    }

    /// Compaction threads (siftdb's `max_background_compactions`; 0 or less: derived).
    pub fn set_max_background_compactions(&mut self, n: i32) {
        self.inner.max_background_compactions = count(n);
    }

    /// Ranges a compaction is split into (siftdb's `max_subcompactions`).
    pub fn set_max_subcompactions(&mut self, num: u32) {
        self.inner.max_subcompactions = (num as usize).max(1);
    }

    /// Bytes a compaction reads at once (siftdb's `compaction_readahead_size`).
    pub fn set_compaction_readahead_size(&mut self, size: usize) {
        self.inner.compaction_readahead_size = size;
    }

    /// Target size of compaction outputs (siftdb's `target_file_size_base`).
    pub fn set_target_file_size_base(&mut self, size: u64) {
        self.inner.target_file_size_base = size;
    }

    /// Target size of L1 (siftdb's `max_bytes_for_level_base`).
    pub fn set_max_bytes_for_level_base(&mut self, size: u64) {
        self.inner.max_bytes_for_level_base = size;
    }

    /// Growth of level targets (siftdb's `max_bytes_for_level_multiplier`).
    pub fn set_max_bytes_for_level_multiplier(&mut self, mul: f64) {
        self.inner.max_bytes_for_level_multiplier = mul;
    }

    /// Leveled, universal or FIFO compaction (siftdb's `compaction_style`).
    pub fn set_compaction_style(&mut self, style: DBCompactionStyle) {
        self.inner.compaction_style = match style {
            DBCompactionStyle::Level => siftdb::CompactionStyle::Level,
            DBCompactionStyle::Universal => siftdb::CompactionStyle::Universal,
            DBCompactionStyle::Fifo => siftdb::CompactionStyle::Fifo,
            DBCompactionStyle::None => {
                self.inner.disable_auto_compactions = true;
                self.inner.compaction_style
            }
        };
    }

    /// Which file compacts first (siftdb's `compaction_pri`; the priorities siftdb lacks are
    /// refused).
    pub fn set_compaction_pri(&mut self, pri: crate::CompactionPri) {
        match pri {
            crate::CompactionPri::MinOverlappingRatio => {
                self.inner.compaction_pri = siftdb::CompactionPri::MinOverlappingRatio
            }
            crate::CompactionPri::RoundRobin => {
                self.inner.compaction_pri = siftdb::CompactionPri::RoundRobin
            }
            other => self.refuse(&format!("compaction priority {other:?}")),
        }
    }

    /// Universal compaction settings (siftdb's `compaction_options_universal`).
    pub fn set_universal_compaction_options(&mut self, uco: &UniversalCompactOptions) {
        self.inner.compaction_options_universal = uco.inner;
    }

    /// FIFO compaction settings (siftdb's `compaction_options_fifo`).
    pub fn set_fifo_compaction_options(&mut self, fco: &FifoCompactOptions) {
        let ttl = self.inner.compaction_options_fifo.ttl;
        self.inner.compaction_options_fifo = fco.inner;
        self.inner.compaction_options_fifo.ttl = ttl;
    }

    /// Age after which FIFO compaction drops tables (siftdb's FIFO `ttl`; 0: none). Other
    /// compaction styles have no such age in siftdb: there it has no effect.
    pub fn set_ttl(&mut self, secs: u64) {
        self.inner.compaction_options_fifo.ttl = (secs > 0).then(|| Duration::from_secs(secs));
    }

    /// The codec of every level (siftdb's `compression`, with `compression_per_level` cleared).
    /// Codecs siftdb lacks are refused.
    pub fn set_compression_type(&mut self, t: DBCompressionType) {
        match t.to_siftdb() {
            Some(c) => {
                self.inner.compression = c;
                self.inner.compression_per_level.clear();
            }
            None => self.refuse(&format!("compression {t:?}")),
        }
    }

    /// A codec per level (siftdb's `compression_per_level`).
    pub fn set_compression_per_level(&mut self, level_types: &[DBCompressionType]) {
        let mut codecs = Vec::with_capacity(level_types.len());
        for t in level_types {
            match t.to_siftdb() {
                Some(c) => codecs.push(c),
                None => return self.refuse(&format!("compression {t:?}")),
            }
        }
        self.inner.compression_per_level = codecs;
    }

    /// The codec of values in blob files (siftdb's `blob_compression_type`).
    pub fn set_blob_compression_type(&mut self, t: DBCompressionType) {
        match t.to_siftdb() {
            Some(c) => self.inner.blob_compression_type = c,
            None => self.refuse(&format!("compression {t:?}")),
        }
    }

    /// Table options: block size, block cache, bloom bits (see [`BlockBasedOptions`]).
    pub fn set_block_based_table_factory(&mut self, factory: &BlockBasedOptions) {
        factory.apply(&mut self.inner);
        if let Some(e) = &factory.refused {
            self.refused.get_or_insert_with(|| e.clone());
        }
    }

    /// Cuckoo tables: siftdb has one table format (block-based, whose lookups go through
    /// filters first); accepted, no effect: the data is the same, only the file layout
    /// differs.
    pub fn set_cuckoo_table_factory(&mut self, factory: &CuckooTableOptions) {
        let _ = factory;
    }

    /// Plain tables: siftdb has none; opening with them fails (`NotSupported`).
    pub fn set_plain_table_factory(&mut self, options: &PlainTableFactoryOptions) {
        let _ = options;
        self.refuse("plain tables");
    }

    /// The prefix extractor (siftdb's `prefix_extractor`).
    pub fn set_prefix_extractor(&mut self, prefix_extractor: SliceTransform) {
        self.inner.prefix_extractor = Some(prefix_extractor.extractor());
        self.prefix = Some(prefix_extractor);
    }

    /// The memtable's prefix bloom (siftdb's `memtable_prefix_bloom_size_ratio`).
    pub fn set_memtable_prefix_bloom_ratio(&mut self, ratio: f64) {
        self.inner.memtable_prefix_bloom_size_ratio = ratio;
    }

    /// Whole keys in the memtable bloom (siftdb's `memtable_whole_key_filtering`).
    pub fn set_memtable_whole_key_filtering(&mut self, whole_key_filter: bool) {
        self.inner.memtable_whole_key_filtering = whole_key_filter;
    }

    /// No filter on the bottom level (siftdb's `optimize_filters_for_hits`).
    pub fn set_optimize_filters_for_hits(&mut self, optimize_for_hits: bool) {
        self.inner.optimize_filters_for_hits = optimize_for_hits;
    }

    /// Refuse a damaged WAL instead of recovering up to the damage (siftdb's `paranoid_checks`).
    pub fn set_paranoid_checks(&mut self, enabled: bool) {
        self.inner.paranoid_checks = enabled;
    }

    /// Read tables through a memory map (siftdb's `read_mode`).
    pub fn set_allow_mmap_reads(&mut self, is_enabled: bool) {
        self.inner.read_mode = if is_enabled {
            siftdb::ReadMode::Mmap
        } else {
            siftdb::ReadMode::Pread
        };
    }

    /// Table files open at once (siftdb's `max_open_files`; -1: all).
    pub fn set_max_open_files(&mut self, nfiles: i32) {
        self.inner.max_open_files = nfiles;
    }

    /// WAL bytes kept before old memtables are flushed (siftdb's `max_total_wal_size`).
    pub fn set_max_total_wal_size(&mut self, size: u64) {
        self.inner.max_total_wal_size = size;
    }

    /// Manifest size before it starts afresh (siftdb's `max_manifest_file_size`).
    pub fn set_max_manifest_file_size(&mut self, size: usize) {
        self.inner.max_manifest_file_size = size as u64;
    }

    /// Writeback of table files every this many bytes (siftdb's `bytes_per_sync`).
    pub fn set_bytes_per_sync(&mut self, nbytes: u64) {
        self.inner.bytes_per_sync = nbytes;
    }

    /// Writeback of the WAL every this many bytes (siftdb's `wal_bytes_per_sync`).
    pub fn set_wal_bytes_per_sync(&mut self, nbytes: u64) {
        self.inner.wal_bytes_per_sync = nbytes;
    }

    /// Key-value separation (siftdb's `enable_blob_files`).
    pub fn set_enable_blob_files(&mut self, val: bool) {
        self.inner.enable_blob_files = val;
    }

    /// Values of at least this size go to blob files (siftdb's `min_blob_size`).
    pub fn set_min_blob_size(&mut self, val: u64) {
        self.inner.min_blob_size = usize::try_from(val).unwrap_or(usize::MAX);
    }

    /// Size of a blob file (siftdb's `blob_file_size`).
    pub fn set_blob_file_size(&mut self, val: u64) {
        self.inner.blob_file_size = val;
    }

    /// Blob garbage collection (siftdb's `enable_blob_garbage_collection`).
    pub fn set_enable_blob_gc(&mut self, val: bool) {
        self.inner.enable_blob_garbage_collection = val;
    }

    /// Share of oldest blob files collected (siftdb's `blob_garbage_collection_age_cutoff`).
    pub fn set_blob_gc_age_cutoff(&mut self, val: f64) {
        self.inner.blob_garbage_collection_age_cutoff = val;
    }

    /// Garbage share forcing a collection (siftdb's `blob_garbage_collection_force_threshold`).
    pub fn set_blob_gc_force_threshold(&mut self, val: f64) {
        self.inner.blob_garbage_collection_force_threshold = val;
    }

    /// Paces flush and compaction writes (siftdb's `rate_limiter`).
    pub fn set_ratelimiter(
        &mut self,
        rate_bytes_per_sec: i64,
        refill_period_us: i64,
        fairness: i32,
    ) {
        let rate = u64::try_from(rate_bytes_per_sec).unwrap_or(0);
        let period = Duration::from_micros(u64::try_from(refill_period_us).unwrap_or(100_000));
        let fairness = u32::try_from(fairness).unwrap_or(10);
        let limiter = siftdb::RateLimiter::with_options(rate, period, fairness);
        self.inner.rate_limiter = Some(Arc::new(limiter));
    }

    /// An associative merge operator: `full_merge_fn` also combines operands alone (siftdb's
    /// `merge_operator`).
    pub fn set_merge_operator_associative<F: MergeFn + Clone>(
        &mut self,
        name: impl Into<String>,
        full_merge_fn: F,
    ) {
        let op = MergeAdapter::new(
            name.into(),
            full_merge_fn.clone(),
            Some(Box::new(full_merge_fn)),
        );
        self.inner.merge_operator = Some(Arc::new(op));
    }

    /// A merge operator with its full and partial merges (siftdb's `merge_operator`).
    pub fn set_merge_operator<F: MergeFn, PF: MergeFn>(
        &mut self,
        name: impl Into<String>,
        full_merge_fn: F,
        partial_merge_fn: PF,
    ) {
        let op = MergeAdapter::new(name.into(), full_merge_fn, Some(Box::new(partial_merge_fn)));
        self.inner.merge_operator = Some(Arc::new(op));
    }

    /// A compaction filter (siftdb's `compaction_filter`).
    pub fn set_compaction_filter<F: CompactionFilterFn + Send + 'static>(
        &mut self,
        name: impl Into<String>,
        filter_fn: F,
    ) {
        let filter = FilterAdapter::new(name.into(), filter_fn);
        self.inner.compaction_filter = Some(Arc::new(filter));
    }

    /// A custom key order: siftdb orders keys bytewise only; opening fails (`NotSupported`).
    pub fn set_comparator(
        &mut self,
        name: impl Into<String>,
        compare_fn: Box<crate::comparator::CompareFn>,
    ) {
        let _ = (name.into(), compare_fn);
        self.refuse("a custom comparator");
    }

    /// User-defined timestamps: siftdb has none; opening fails (`NotSupported`).
    pub fn set_comparator_with_ts(
        &mut self,
        name: impl Into<String>,
        timestamp_size: usize,
        compare_fn: Box<crate::comparator::CompareFn>,
        compare_ts_fn: Box<crate::comparator::CompareTsFn>,
        compare_without_ts_fn: Box<crate::comparator::CompareWithoutTsFn>,
    ) {
        let _ = (
            name.into(),
            timestamp_size,
            compare_fn,
            compare_ts_fn,
            compare_without_ts_fn,
        );
        self.refuse("user-defined timestamps (a comparator with timestamps)");
    }

    /// Statistics: databases opened with these options (and their clones) count the bytes and
    /// keys written and read through this layer, and time its writes, where
    /// [`Options::get_ticker_count`] and [`Options::get_histogram_data`] read them.
    pub fn enable_statistics(&mut self) {
        if self.statistics.is_none() {
            self.statistics = Some(Arc::new(crate::statistics::Statistics::default()));
        }
    }

    /// The statistics level: every level counts the same here.
    pub fn set_statistics_level(&self, level: crate::statistics::StatsLevel) {
        let _ = level;
    }

    /// A counter (0 without [`Options::enable_statistics`], and for tickers not kept).
    pub fn get_ticker_count(&self, ticker: crate::statistics::Ticker) -> u64 {
        self.statistics.as_ref().map_or(0, |s| s.ticker(ticker))
    }

    /// A histogram (empty without [`Options::enable_statistics`], and for histograms not kept).
    pub fn get_histogram_data(
        &self,
        histogram: crate::statistics::Histogram,
    ) -> crate::statistics::HistogramData {
        self.statistics
            .as_ref()
            .map(|s| s.histogram(histogram))
            .unwrap_or_default()
    }

    /// The statistics as text.
    pub fn get_statistics(&self) -> Option<String> {
        self.statistics.as_ref().map(|s| s.to_string())
    }

    /// The environment: siftdb's threads are its own; accepted, no effect.
    pub fn set_env(&mut self, env: &Env) {
        let _ = env;
    }

    /// Extra data paths: siftdb keeps every file in the database's directory; accepted, no
    /// effect.
    pub fn set_db_paths(&mut self, paths: &[DBPath]) {
        let _ = paths;
    }

    /// The info log's directory: siftdb writes no info log; accepted, no effect.
    pub fn set_db_log_dir<P: AsRef<Path>>(&mut self, path: P) {
        let _ = path.as_ref();
    }

    /// The WAL's directory: siftdb keeps its WAL in the database's directory; refused.
    pub fn set_wal_dir<P: AsRef<Path>>(&mut self, path: P) {
        let _ = path.as_ref();
        self.refuse("a separate WAL directory");
    }

    /// Memtable kind: siftdb's memtable is a skiplist; accepted, no effect.
    pub fn set_memtable_factory(&mut self, factory: MemtableFactory) {
        let _ = factory;
    }

    /// Tunes for point lookups: sets a block cache of `block_cache_size_mb` MiB (siftdb's
    /// `block_cache_capacity`).
    pub fn optimize_for_point_lookup(&mut self, block_cache_size_mb: u64) {
        self.inner.block_cache_capacity = (block_cache_size_mb as usize) << 20;
    }

    /// Levels: siftdb has 7, always; any other number is refused.
    pub fn set_num_levels(&mut self, n: i32) {
        if n != 7 {
            self.refuse(&format!("{n} levels (siftdb has 7)"));
        }
    }

    /// fsync instead of fdatasync: siftdb's syncs already make a write durable; accepted, no
    /// effect.
    pub fn set_use_fsync(&mut self, useit: bool) {
        let _ = useit;
    }

    /// Writes that reach the WAL only at `flush_wal`: siftdb writes the WAL on each write (never
    /// weaker); `true` is refused, since a caller would count on writes staying in memory.
    pub fn set_manual_wal_flush(&mut self, is_enabled: bool) {
        if is_enabled {
            self.refuse("manual WAL flush");
        }
    }

    no_effect! {
        /// Bytes written before a file is synced.
        set_writable_file_max_buffer_size(nbytes: u64);
        /// Adaptive yield of the write thread.
        set_enable_write_thread_adaptive_yield(enabled: bool);
        /// Unordered writes (siftdb's writes stay ordered, which is never weaker).
        set_unordered_write(unordered: bool);
        /// An adaptive mutex.
        set_use_adaptive_mutex(enabled: bool);
        /// Dumping malloc statistics.
        set_dump_malloc_stats(enabled: bool);
        /// Dynamic level sizes.
        set_level_compaction_dynamic_level_bytes(v: bool);
        /// Memtables merged before a flush.
        set_min_write_buffer_number_to_merge(to_merge: i32);
        /// Memtables merged before a flush (older name).
        set_min_write_buffer_number(nbuf: i32);
        /// Statistics dump period.
        set_stats_dump_period_sec(period: u32);
        /// Statistics persist period.
        set_stats_persist_period_sec(period: u32);
        /// Concurrent memtable writes (siftdb's memtable takes them anyway).
        set_allow_concurrent_memtable_write(allow: bool);
        /// Atomic flush of several column families (siftdb's WAL is always written, so a
        /// crash loses no column family's writes either way).
        set_atomic_flush(atomic_flush: bool);
        /// Parallelism (siftdb sizes its threads from `max_background_jobs`).
        increase_parallelism(parallelism: i32);
        /// Level-style compaction tuning by memtable budget.
        optimize_level_style_compaction(memtable_memory_budget: usize);
        /// Universal-style compaction tuning by memtable budget.
        optimize_universal_style_compaction(memtable_memory_budget: usize);
        /// Direct reads.
        set_use_direct_reads(enabled: bool);
        /// Direct I/O for flushes and compactions.
        set_use_direct_io_for_flush_and_compaction(enabled: bool);
        /// Memory-mapped writes.
        set_allow_mmap_writes(is_enabled: bool);
        /// The info log's level.
        set_log_level(level: LogLevel);
        /// Info log files kept.
        set_keep_log_file_num(nfiles: usize);
        /// Info log size.
        set_max_log_file_size(size: usize);
        /// Recycled log files.
        set_recycle_log_file_num(num: usize);
        /// Bytes at which writes slow down.
        set_soft_pending_compaction_bytes_limit(limit: usize);
        /// Bytes at which writes stop.
        set_hard_pending_compaction_bytes_limit(limit: usize);
        /// Target size growth per level of files.
        set_target_file_size_multiplier(multiplier: i32);
        /// Periodic compaction seconds.
        set_periodic_compaction_seconds(secs: u64);
        /// Paranoid file checks.
        set_paranoid_file_checks(enabled: bool);
        /// Reporting background I/O statistics.
        set_report_bg_io_stats(enable: bool);
        /// Skipping statistics updates on open.
        set_skip_stats_update_on_db_open(skip: bool);
        /// Skipping the size check on open.
        set_skip_checking_sst_file_sizes_on_db_open(value: bool);
        /// Advising random access on open.
        set_advise_random_on_open(advise: bool);
        /// WAL recovery mode (siftdb recovers up to a damaged tail, or refuses with
        /// `paranoid_checks`).
        set_wal_recovery_mode(mode: DBRecoveryMode);
        /// WAL time to live.
        set_wal_ttl_seconds(secs: u64);
        /// WAL size limit.
        set_wal_size_limit_mb(size: u64);
        /// Huge pages for memtables.
        set_memtable_huge_page_size(size: usize);
        /// Maximum sequential skips in iterations.
        set_max_sequential_skip_in_iterations(num: u64);
        /// Inplace updates.
        set_inplace_update_support(enabled: bool);
        /// Row cache.
        set_row_cache(cache: &Cache);
        /// Write buffer manager.
        set_write_buffer_manager(manager: &WriteBufferManager);
        /// Compression options.
        set_compression_options(w_bits: i32, level: i32, strategy: i32, max_dict_bytes: i32);
        /// Bottommost compression.
        set_bottommost_compression_type(t: DBCompressionType);
        /// Bottommost compression options.
        set_bottommost_compression_options(w_bits: i32, level: i32, strategy: i32, max_dict_bytes: i32, enabled: bool);
        /// Zstd dictionary training bytes.
        set_zstd_max_train_bytes(value: i32);
        /// Background flush threads.
        set_max_background_flushes(n: i32);
        /// Open files on open.
        set_max_file_opening_threads(nthreads: i32);
        /// Table cache shards.
        set_table_cache_num_shard_bits(nbits: i32);
        /// Arena block size.
        set_arena_block_size(size: usize);
        /// Memtable history kept for transactions.
        set_max_write_buffer_size_to_maintain(size: i64);
        /// Pipelined writes.
        set_enable_pipelined_write(value: bool);
        /// Avoiding flushes during recovery.
        set_avoid_flush_during_recovery(avoid_flush: bool);
        /// Avoiding flushes during shutdown.
        set_avoid_flush_during_shutdown(avoid_flush: bool);
        /// Delete-obsolete-files period.
        set_delete_obsolete_files_period_micros(micros: u64);
        /// Prepare-for-bulk-load tuning.
        prepare_for_bulk_load();
        /// Write-ahead log compression.
        set_wal_compression_type(t: DBCompressionType);
        /// Two write queues.
        set_two_write_queues(value: bool);
        /// Two-phase commit.
        set_allow_2pc(value: bool);
    }
}

/// Options of a read (RocksDB's `ReadOptions`): siftdb's bounds and cache fill, plus a
/// snapshot and the prefix mode of iterators.
#[derive(Default)]
pub struct ReadOptions {
    pub(crate) inner: siftdb::ReadOptions,
    pub(crate) snapshot: Option<Arc<SnapshotInner>>,
    pub(crate) prefix_same_as_start: bool,
    pub(crate) total_order_seek: bool,
    pub(crate) tailing: bool,
}

impl ReadOptions {
    /// Whether blocks read enter the block cache (siftdb's `fill_cache`).
    pub fn fill_cache(&mut self, v: bool) {
        self.inner.fill_cache = v;
    }

    /// Read at a snapshot.
    pub fn set_snapshot<D: crate::DBAccess>(
        &mut self,
        snapshot: &crate::SnapshotWithThreadMode<D>,
    ) {
        self.snapshot = Some(snapshot.inner.clone());
    }

    /// Iterators stop before this key (siftdb's `iterate_upper_bound`).
    pub fn set_iterate_upper_bound<K: Into<Vec<u8>>>(&mut self, key: K) {
        self.inner.iterate_upper_bound = Some(key.into());
    }

    /// Iterators start at this key (siftdb's `iterate_lower_bound`).
    pub fn set_iterate_lower_bound<K: Into<Vec<u8>>>(&mut self, key: K) {
        self.inner.iterate_lower_bound = Some(key.into());
    }

    /// Both bounds from a range (`..`, `a..b`, `a..`, [`PrefixRange`](crate::PrefixRange), ...).
    pub fn set_iterate_range(&mut self, range: impl crate::IterateBounds) {
        let (lower, upper) = range.into_bounds();
        self.inner.iterate_lower_bound = lower;
        self.inner.iterate_upper_bound = upper;
    }

    /// Iterators stop where the key's prefix (by the column family's prefix extractor) stops
    /// being the first key's.
    pub fn set_prefix_same_as_start(&mut self, v: bool) {
        self.prefix_same_as_start = v;
    }

    /// Iterators ignore the prefix extractor (siftdb's iterators always see every key in
    /// order unless told to keep to a prefix, so this only clears `prefix_same_as_start`'s
    /// effect).
    pub fn set_total_order_seek(&mut self, v: bool) {
        self.total_order_seek = v;
    }

    /// A tailing iterator: once a forward iterator has passed the last entry, it reads the
    /// database again and goes on with entries written since (siftdb's iterators read one
    /// view, which the layer renews at the end).
    pub fn set_tailing(&mut self, v: bool) {
        self.tailing = v;
    }

    /// Bytes iterators read at once from a table file (siftdb's `readahead_size`; 0: automatic
    /// readahead, as RocksDB's default).
    pub fn set_readahead_size(&mut self, v: usize) {
        self.inner.readahead_size = v;
    }

    /// The read tier: only `All` is honoured; others have no effect.
    pub fn set_read_tier(&mut self, tier: ReadTier) {
        let _ = tier;
    }

    no_effect! {
        /// Pinning data blocks while an iterator lives (siftdb pins what it reads anyway).
        set_pin_data(v: bool);
        /// Checksum verification (siftdb always verifies).
        set_verify_checksums(v: bool);
        /// Async I/O.
        set_async_io(v: bool);
        /// Auto readahead.
        set_adaptive_readahead(v: bool);
        /// Ignoring range deletions (siftdb always honours them).
        set_ignore_range_deletions(v: bool);
        /// Skipped deleted keys before an iterator gives up.
        set_max_skippable_internal_keys(num: u64);
        /// Background purge on iterator cleanup.
        set_background_purge_on_iterator_cleanup(v: bool);
        /// Auto prefix mode.
        set_auto_prefix_mode(v: bool);
        /// Deadline (microseconds).
        set_deadline(micros: u64);
        /// I/O timeout (microseconds).
        set_io_timeout(micros: u64);
    }

    /// A read timestamp: siftdb has no user-defined timestamps; reads ignore it.
    pub fn set_timestamp<S: Into<Vec<u8>>>(&mut self, ts: S) {
        let _ = ts.into();
    }

    /// Same as [`ReadOptions::set_timestamp`].
    pub fn set_iter_start_ts<S: Into<Vec<u8>>>(&mut self, ts: S) {
        let _ = ts.into();
    }
}

/// Options of a write (RocksDB's `WriteOptions`).
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteOptions {
    pub(crate) inner: siftdb::WriteOptions,
}

impl WriteOptions {
    /// Default write options.
    pub fn new() -> WriteOptions {
        WriteOptions::default()
    }

    /// Sync the WAL before the write returns (siftdb's `sync`).
    pub fn set_sync(&mut self, sync: bool) {
        self.inner.sync = sync;
    }

    /// Skip the WAL: siftdb always writes it (never weaker); accepted, no effect.
    pub fn disable_wal(&mut self, disable: bool) {
        let _ = disable;
    }

    no_effect! {
        /// Ignore writes to dropped column families.
        set_ignore_missing_column_families(ignore: bool);
        /// Fail instead of waiting on a stall.
        set_no_slowdown(no_slowdown: bool);
        /// Low-priority writes.
        set_low_pri(v: bool);
        /// Memtable insert hints.
        set_memtable_insert_hint_per_batch(v: bool);
    }
}

/// RocksDB's read tiers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadTier {
    /// Everything.
    All,
    /// The block cache only.
    BlockCache,
    /// Persisted data only.
    Persisted,
    /// Memtables only.
    Memtable,
}

/// Compaction styles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DBCompactionStyle {
    /// Leveled.
    Level,
    /// Universal (size-tiered).
    Universal,
    /// FIFO.
    Fifo,
    /// No automatic compaction.
    None,
}

/// Block codecs. siftdb has none, LZ4 and Zstandard; the others are refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DBCompressionType {
    /// No compression.
    None,
    /// Snappy (refused).
    Snappy,
    /// Zlib (refused).
    Zlib,
    /// Bzip2 (refused).
    Bz2,
    /// LZ4.
    Lz4,
    /// LZ4 high compression (siftdb's LZ4).
    Lz4hc,
    /// Zstandard.
    Zstd,
}

impl DBCompressionType {
    fn to_siftdb(self) -> Option<siftdb::Compression> {
        match self {
            DBCompressionType::None => Some(siftdb::Compression::None),
            DBCompressionType::Lz4 | DBCompressionType::Lz4hc => Some(siftdb::Compression::Lz4),
            DBCompressionType::Zstd => Some(siftdb::Compression::Zstd),
            _ => None,
        }
    }
}

/// The info log's levels (siftdb writes no info log).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLevel {
    /// Debug.
    Debug,
    /// Info.
    Info,
    /// Warn.
    Warn,
    /// Error.
    Error,
    /// Fatal.
    Fatal,
    /// Header.
    Header,
}

/// WAL recovery modes (see [`Options::set_wal_recovery_mode`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DBRecoveryMode {
    /// Tolerate a corrupted tail.
    TolerateCorruptedTailRecords,
    /// Fail on any corruption.
    AbsoluteConsistency,
    /// Recover to the last consistent point.
    PointInTime,
    /// Skip any corrupted records.
    SkipAnyCorruptedRecord,
}

/// Memtable kinds (siftdb's memtable is always a skiplist).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemtableFactory {
    /// A vector.
    Vector,
    /// A hash of skiplists.
    HashSkipList {
        /// Buckets.
        bucket_count: usize,
        /// Skiplist height.
        height: i32,
        /// Branching factor.
        branching_factor: i32,
    },
    /// A hash of linked lists.
    HashLinkList {
        /// Buckets.
        bucket_count: usize,
    },
}

/// A block cache (RocksDB's `Cache`): siftdb's [`BlockCache`](siftdb::BlockCache), shared
/// by every database whose [`BlockBasedOptions`] name it (`Options::block_cache`), one memory
/// budget for all of them. Clones are handles to the same cache.
#[derive(Clone)]
pub struct Cache {
    pub(crate) shared: Arc<parking_lot::Mutex<siftdb::BlockCache>>,
}

impl Cache {
    /// An LRU cache of `capacity` bytes: every block read enters it, as in RocksDB's
    /// (siftdb's own default waits for a data block's second read once the cache is full).
    pub fn new_lru_cache(capacity: usize) -> Cache {
        Cache {
            shared: Arc::new(parking_lot::Mutex::new(lru_cache(capacity))),
        }
    }

    /// A HyperClock cache: siftdb's cache is an LRU of the same capacity.
    pub fn new_hyper_clock_cache(capacity: usize, estimated_entry_charge: usize) -> Cache {
        let _ = estimated_entry_charge;
        Cache::new_lru_cache(capacity)
    }

    /// Bytes in use, by every database using the cache.
    pub fn get_usage(&self) -> usize {
        self.shared.lock().usage()
    }

    /// Bytes of pinned blocks.
    pub fn get_pinned_usage(&self) -> usize {
        self.shared.lock().pinned_usage()
    }

    /// The capacity. siftdb's cache has a fixed capacity: a new capacity is a new cache, used
    /// by the databases opened after this call (those open keep the one they have).
    pub fn set_capacity(&mut self, capacity: usize) {
        *self.shared.lock() = lru_cache(capacity);
    }

    /// The cache databases opened now use.
    pub(crate) fn block_cache(&self) -> siftdb::BlockCache {
        self.shared.lock().clone()
    }
}

fn lru_cache(capacity: usize) -> siftdb::BlockCache {
    siftdb::BlockCache::with_admission(capacity, siftdb::CacheAdmission::All)
}

/// A write buffer manager (RocksDB's `WriteBufferManager`): siftdb's budget is
/// `Options::set_db_write_buffer_size`.
#[derive(Clone)]
pub struct WriteBufferManager {
    size: usize,
}

impl WriteBufferManager {
    /// A manager of `buffer_size` bytes.
    pub fn new_write_buffer_manager(buffer_size: usize, allow_stall: bool) -> WriteBufferManager {
        let _ = allow_stall;
        WriteBufferManager { size: buffer_size }
    }

    /// The budget.
    pub fn get_buffer_size(&self) -> usize {
        self.size
    }
}

/// Options of the block-based table (RocksDB's `BlockBasedOptions`), siftdb's only table
/// format.
#[derive(Default, Clone)]
pub struct BlockBasedOptions {
    block_size: Option<usize>,
    restart_interval: Option<usize>,
    cache: Option<Cache>,
    no_cache: bool,
    bloom_bits: Option<f64>,
    whole_key_filtering: Option<bool>,
    partition: Option<bool>,
    metadata_block_size: Option<usize>,
    pin_l0: Option<bool>,
    refused: Option<Error>,
}

impl BlockBasedOptions {
    fn apply(&self, o: &mut siftdb::Options) {
        if let Some(v) = self.block_size {
            o.block_size = v;
        }
        if let Some(v) = self.restart_interval {
            o.block_restart_interval = v;
        }
        if let Some(c) = &self.cache {
            let cache = c.block_cache();
            o.block_cache_capacity = cache.capacity();
            o.block_cache = Some(cache);
        }
        if self.no_cache {
            o.block_cache = None;
            o.block_cache_capacity = 0;
        }
        if let Some(v) = self.bloom_bits {
            o.filter_bits_per_key = v;
        }
        if self.whole_key_filtering == Some(false) && o.prefix_extractor.is_some() {
            o.filter_bits_per_key = 0.0;
        }
        if let Some(p) = self.partition {
            o.partition_above = if p { Some(0) } else { None };
        }
        if let Some(v) = self.metadata_block_size {
            o.metadata_block_size = v;
        }
        if let Some(v) = self.pin_l0 {
            o.pin_l0_filter_and_index_blocks_in_cache = v;
        }
    }

    /// Target data block size (siftdb's `block_size`).
    pub fn set_block_size(&mut self, size: usize) {
        self.block_size = Some(size);
    }

    /// Keys between restart points (siftdb's `block_restart_interval`).
    pub fn set_block_restart_interval(&mut self, interval: i32) {
        self.restart_interval = Some(count(interval));
    }

    /// The block cache, shared with every database naming it (siftdb's `block_cache`).
    pub fn set_block_cache(&mut self, cache: &Cache) {
        self.cache = Some(cache.clone());
    }

    /// No block cache (siftdb's `block_cache_capacity = 0`).
    pub fn disable_cache(&mut self) {
        self.no_cache = true;
    }

    /// Bloom filters of `bits_per_key` (siftdb's `filter_bits_per_key`; siftdb chooses the
    /// filter kind per level, so `block_based` has no effect).
    pub fn set_bloom_filter(&mut self, bits_per_key: f64, block_based: bool) {
        let _ = block_based;
        self.bloom_bits = Some(bits_per_key);
    }

    /// Ribbon filters of about the same false-positive rate as a bloom of `bloom_equivalent_bits_per_key`
    /// (siftdb's `filter_bits_per_key`: its deep levels are ribbon already).
    pub fn set_ribbon_filter(&mut self, bloom_equivalent_bits_per_key: f64) {
        self.bloom_bits = Some(bloom_equivalent_bits_per_key);
    }

    /// Whole keys in the filter: `false` with a prefix extractor leaves prefix filters only.
    pub fn set_whole_key_filtering(&mut self, v: bool) {
        self.whole_key_filtering = Some(v);
    }

    /// Partitioned filters (siftdb partitions index and filter together).
    pub fn set_partition_filters(&mut self, size: bool) {
        self.partition = Some(size);
    }

    /// Index partition size (siftdb's `metadata_block_size`).
    pub fn set_metadata_block_size(&mut self, size: usize) {
        self.metadata_block_size = Some(size);
    }

    /// Pin L0 filter and index blocks (siftdb's `pin_l0_filter_and_index_blocks_in_cache`).
    pub fn set_pin_l0_filter_and_index_blocks_in_cache(&mut self, v: bool) {
        self.pin_l0 = Some(v);
    }

    /// Table format version: siftdb writes its own format; accepted, no effect.
    pub fn set_format_version(&mut self, version: i32) {
        let _ = version;
    }

    no_effect! {
        /// Index and filter blocks in the cache (siftdb always caches them).
        set_cache_index_and_filter_blocks(v: bool);
        /// Pinning top-level index and filter.
        set_pin_top_level_index_and_filter(v: bool);
        /// Index kind.
        set_index_type(index_type: BlockBasedIndexType);
        /// Data block index kind.
        set_data_block_index_type(index_type: DataBlockIndexType);
        /// Hash ratio of data block indexes.
        set_data_block_hash_ratio(ratio: f64);
        /// Checksum kind (siftdb's is fixed).
        set_checksum_type(checksum_type: ChecksumType);
        /// Optimizing filters for memory.
        set_optimize_filters_for_memory(v: bool);
        /// Caching with high priority.
        set_cache_index_and_filter_blocks_with_high_priority(v: bool);
        /// Block alignment.
        set_block_align(v: bool);
    }
}

/// Index kinds of the block-based table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockBasedIndexType {
    /// Binary search.
    BinarySearch,
    /// Hash search.
    HashSearch,
    /// Two-level.
    TwoLevelIndexSearch,
}

/// Data block index kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataBlockIndexType {
    /// Binary search.
    BinarySearch,
    /// Binary and hash.
    BinaryAndHash,
}

/// Checksum kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChecksumType {
    /// None.
    NoChecksum,
    /// CRC32c.
    CRC32c,
    /// xxHash.
    XXHash,
    /// xxHash64.
    XXHash64,
    /// XXH3.
    XXH3,
}

/// Options of cuckoo tables, which siftdb does not have (accepted, no effect: see
/// [`Options::set_cuckoo_table_factory`]).
#[derive(Debug, Default, Clone)]
pub struct CuckooTableOptions {
    _private: (),
}

impl CuckooTableOptions {
    no_effect! {
        /// Hash table ratio.
        set_hash_ratio(ratio: f64);
        /// Search depth.
        set_max_search_depth(depth: u32);
        /// Block size.
        set_cuckoo_block_size(size: u32);
        /// Identity first hash.
        set_identity_as_first_hash(flag: bool);
        /// Module hash.
        set_use_module_hash(flag: bool);
    }
}

/// Options of plain tables, which siftdb does not have: opening a database with them fails.
#[derive(Debug, Clone)]
pub struct PlainTableFactoryOptions {
    /// Key length.
    pub user_key_length: u32,
    /// Bloom bits per key.
    pub bloom_bits_per_key: i32,
    /// Hash ratio.
    pub hash_table_ratio: f64,
    /// Index sparseness.
    pub index_sparseness: usize,
    /// Huge page size.
    pub huge_page_tlb_size: usize,
    /// Key encoding.
    pub encoding_type: KeyEncodingType,
    /// Full scan mode.
    pub full_scan_mode: bool,
    /// Store index in file.
    pub store_index_in_file: bool,
}

/// Plain table key encodings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyEncodingType {
    /// Plain.
    Plain,
    /// Prefix.
    Prefix,
}

/// Stop styles of universal compaction (siftdb's universal compaction always compares
/// against the total of the smaller runs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UniversalCompactionStopStyle {
    /// Similar sizes.
    Similar,
    /// Total size.
    Total,
}

/// Universal compaction settings (siftdb's `UniversalCompactionOptions`).
#[derive(Debug, Clone, Default)]
pub struct UniversalCompactOptions {
    inner: siftdb::UniversalCompactionOptions,
}

impl UniversalCompactOptions {
    /// Size ratio, percent (siftdb's `size_ratio`).
    pub fn set_size_ratio(&mut self, ratio: i32) {
        self.inner.size_ratio = u32::try_from(ratio).unwrap_or(0);
    }

    /// Runs merged at least (siftdb's `min_merge_width`).
    pub fn set_min_merge_width(&mut self, num: i32) {
        self.inner.min_merge_width = count(num);
    }

    /// Runs merged at most (siftdb's `max_merge_width`).
    pub fn set_max_merge_width(&mut self, num: i32) {
        self.inner.max_merge_width = count(num);
    }

    /// Space amplification bound, percent (siftdb's `max_size_amplification_percent`).
    pub fn set_max_size_amplification_percent(&mut self, v: i32) {
        self.inner.max_size_amplification_percent = u64::try_from(v).unwrap_or(0);
    }

    no_effect! {
        /// Compression size percent.
        set_compression_size_percent(v: i32);
        /// Stop style.
        set_stop_style(style: UniversalCompactionStopStyle);
    }
}

/// FIFO compaction settings (siftdb's `FifoCompactionOptions`).
#[derive(Debug, Clone, Default)]
pub struct FifoCompactOptions {
    inner: siftdb::FifoCompactionOptions,
}

impl FifoCompactOptions {
    /// Table bytes kept (siftdb's `max_table_files_size`).
    pub fn set_max_table_files_size(&mut self, nbytes: u64) {
        self.inner.max_table_files_size = nbytes;
    }
}

/// Bottommost-level behaviour of a manual compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BottommostLevelCompaction {
    /// Skip.
    Skip,
    /// If a compaction filter is set.
    IfHaveCompactionFilter,
    /// Force.
    Force,
    /// Force, optimized.
    ForceOptimized,
}

/// Options of a manual compaction (siftdb's `compact_range` compacts the range through every
/// level; these are accepted with no effect).
#[derive(Debug, Default, Clone)]
pub struct CompactOptions {
    _private: (),
}

impl CompactOptions {
    no_effect! {
        /// Exclusive manual compaction (siftdb's always is).
        set_exclusive_manual_compaction(v: bool);
        /// Bottommost level behaviour.
        set_bottommost_level_compaction(lvl: BottommostLevelCompaction);
        /// Changing the output level.
        set_change_level(v: bool);
        /// Target level.
        set_target_level(lvl: i32);
        /// Subcompactions.
        set_max_subcompactions(v: u32);
    }
}

/// Options of `wait_for_compact`.
#[derive(Debug, Default, Clone)]
pub struct WaitForCompactOptions {
    pub(crate) flush: bool,
}

impl WaitForCompactOptions {
    /// Flush memtables first.
    pub fn set_flush(&mut self, v: bool) {
        self.flush = v;
    }

    no_effect! {
        /// Abort when background work is paused.
        set_abort_on_pause(v: bool);
        /// Close the database after waiting.
        set_close_db(v: bool);
        /// Timeout (microseconds).
        set_timeout(microseconds: u64);
    }
}

/// Options of a flush (siftdb's flushes always wait).
#[derive(Debug, Default, Clone)]
pub struct FlushOptions {
    _private: (),
}

impl FlushOptions {
    /// Default flush options.
    pub fn new() -> FlushOptions {
        FlushOptions::default()
    }

    no_effect! {
        /// Waiting for the flush (siftdb's flush always waits).
        set_wait(wait: bool);
    }
}

/// Options of ingesting table files.
#[derive(Debug, Default, Clone)]
pub struct IngestExternalFileOptions {
    pub(crate) move_files: bool,
}

impl IngestExternalFileOptions {
    /// Move (link) the files instead of copying them.
    pub fn set_move_files(&mut self, v: bool) {
        self.move_files = v;
    }

    no_effect! {
        /// Snapshot consistency.
        set_snapshot_consistency(v: bool);
        /// Global seqno.
        set_allow_global_seqno(v: bool);
        /// Blocking flush.
        set_allow_blocking_flush(v: bool);
        /// Ingest behind.
        set_ingest_behind(v: bool);
    }
}

/// A data path with a target size (siftdb keeps every file in the database's directory).
#[derive(Debug, Clone)]
pub struct DBPath {
    path: PathBuf,
    target_size: u64,
}

impl DBPath {
    /// A path and its target size.
    pub fn new<P: AsRef<Path>>(path: P, target_size: u64) -> Result<DBPath, Error> {
        Ok(DBPath {
            path: path.as_ref().to_path_buf(),
            target_size,
        })
    }

    /// The path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The target size.
    pub fn target_size(&self) -> u64 {
        self.target_size
    }
}

/// Compaction priorities.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactionPri {
    /// By compensated size (refused).
    ByCompensatedSize,
    /// Oldest largest sequence first (refused).
    OldestLargestSeqFirst,
    /// Oldest smallest sequence first (refused).
    OldestSmallestSeqFirst,
    /// Least overlap with the next level (siftdb's default).
    MinOverlappingRatio,
    /// Round robin.
    RoundRobin,
}
