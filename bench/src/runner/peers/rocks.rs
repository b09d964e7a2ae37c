//! RocksDB (crate `rocksdb` 0.25) behind [`Engine`], with siftdb's settings mapped as closely as
//! RocksDB allows.
//!
//! Mapping (also printed in the run's header and written down in `docs/BENCHMARKS.md`):
//! - filters: `--filter_policy=bloom` → `set_bloom_filter(bits, false)` (RocksDB's cache-local
//!   "fast" bloom), `ribbon` → `set_ribbon_filter(bits)`, `hybrid` →
//!   `set_hybrid_ribbon_filter(bits, bloom_before_level)` (the same split siftdb makes). RocksDB
//!   spends the same bits/key on every level (it has no Monkey allocation).
//! - filter and index blocks in the block cache, L0's pinned (`cache_index_and_filter_blocks`,
//!   `pin_l0_filter_and_index_blocks_in_cache`), as siftdb does; one LRU cache of `--cache_size`.
//! - the fixed prefix extractor of `--prefix_size` (prefix bloom in every table), whole-key
//!   filtering on; no compression; 4 KiB blocks, restart interval 16.
//! - memtable `write_buffer_size` and `max_write_buffer_number` as siftdb's; the tree shape
//!   (`target_file_size_base`, `max_bytes_for_level_base`, multiplier, L0 trigger) as siftdb's,
//!   with `level_compaction_dynamic_level_bytes` off because siftdb's level targets are static.
//! - background jobs: one flush plus siftdb's compaction threads (`Options::compaction_threads`;
//!   RocksDB takes a quarter of `max_background_jobs`, at least one, for flushes, so from 8
//!   jobs up it runs one compaction thread fewer than siftdb); `max_subcompactions` and the
//!   generic rate limiter (100 ms refills, fairness 10) as siftdb's.
//! - reads: `--mmap_read` → `allow_mmap_reads` (siftdb's default is mmap; `false`: both `pread`).
//! - statistics at `ExceptTimers`: the block and filter tickers the report needs, without the
//!   two clock reads and histogram update per `Get` of the default level (siftdb times nothing).
//! - L0: both engines slow writes down from `level0_slowdown_writes_trigger` L0 files and stop
//!   them at `level0_stop_writes_trigger` (siftdb's values); RocksDB's `delayed_write_rate`
//!   stays its default, 16 MiB/s (rust-rocksdb cannot set it), which is siftdb's default too:
//!   the settings table shows both.
//! - one column family: `--keyspaces` above 1 is refused for RocksDB
//!   ([`check_keyspaces`](super::super::engine::check_keyspaces)), so every keyspace number is 0.
//! - `checkpoint`: `Checkpoint::create_checkpoint` (which flushes the memtables first, then
//!   hard-links the tables), verified by a read-only open that counts the keys.
//! - transactions (`--optimistic_transaction_db`, `--transaction_db`): the database opens as
//!   an `OptimisticTransactionDB` (each transaction with `set_snapshot`, validated against the
//!   snapshot it began with, as siftdb's) or a `TransactionDB` (each transaction with
//!   `--transaction_lock_timeout` and `deadlock_detect`, reads of the newest committed values,
//!   as siftdb's pessimistic ones); randomtransaction reads each key with
//!   `get_for_update(exclusive)`. A `TransactionDB` has no `CompactRange`, `WaitForCompact`,
//!   checkpoints or batched `MultiGet` in the crate: `compact` is refused, the untimed
//!   settle polls the compaction properties, and the multiread workloads loop over `Get`.
//! - `multireadrandom` / `multireadmissing`: the batched `MultiGet` (`batched_multi_get_cf` on
//!   the default column family), keys in the order drawn with `sorted_input` false, as
//!   `db_bench`'s multireadrandom calls it (RocksDB sorts a copy itself); values stay pinned.
//!   Its lookups count in `rocksdb.number.multiget.keys.read`, not `number.keys.read`: the
//!   lookups line adds both.

use std::path::Path;

use rocksdb::checkpoint::Checkpoint;
use rocksdb::statistics::{StatsLevel, Ticker};
use rocksdb::{
    BlockBasedOptions, BottommostLevelCompaction, Cache, ColumnFamily, ColumnFamilyDescriptor,
    CompactOptions, DBCompressionType, IteratorMode, OptimisticTransactionDB,
    OptimisticTransactionOptions, Options, ReadOptions, SliceTransform, TransactionDB,
    TransactionDBOptions, TransactionOptions, WaitForCompactOptions, WriteBatchWithTransaction,
    WriteOptions, DB, DEFAULT_COLUMN_FAMILY_NAME,
};
use siftdb::{LevelFilterStats, Stats};
use siftdb_cache::BlockKind;

use super::super::args::{CompactionPriArg, Config, FilterPolicyArg, TransactionConfig};
use super::super::engine::{bumped, BatchOp, BulkLoader, Engine, SeekOutcome, WritePressure};
use super::super::error::{Error, Result};
use super::super::settings::{self, siftdb_options, SettingRows};
use super::super::text::{
    compression_text, human_bytes, open_files_text, peer_db_write_buffer_text,
};

/// How many levels the shape table lists (RocksDB's default `num_levels`).
const LEVELS: usize = 7;

fn rocks_error(e: rocksdb::Error) -> Error {
    Error::new(format!("rocksdb: {e}"))
}

/// The database RocksDB opened: plain, or a transaction database.
enum Handle {
    Plain(DB),
    Optimistic(OptimisticTransactionDB),
    /// Multi-threaded: the crate has the property getters for that mode only.
    Pessimistic(TransactionDB<rocksdb::MultiThreaded>),
}

/// Runs `$body` with `$db` bound to whichever database `$handle` holds (the three share the
/// names of the methods used this way).
macro_rules! with_db {
    ($handle:expr, $db:ident => $body:expr) => {
        match $handle {
            Handle::Plain($db) => $body,
            Handle::Optimistic($db) => $body,
            Handle::Pessimistic($db) => $body,
        }
    };
}

/// `ops` as a RocksDB batch (of a plain database, `TXN = false`, or a transaction database).
fn batch_of<const TXN: bool>(ops: &[BatchOp<'_>]) -> WriteBatchWithTransaction<TXN> {
    let mut batch = WriteBatchWithTransaction::<TXN>::default();
    for op in ops {
        match *op {
            BatchOp::Put(_, key, value) => batch.put(key, value),
            BatchOp::Delete(_, key) => batch.delete(key),
        }
    }
    batch
}

/// Whether `e` is RocksDB aborting a transaction: a conflict (`Busy`, or `TryAgain` when its
/// memtables no longer reach back to the snapshot), a lock timeout (`TimedOut`) or a deadlock
/// (`Busy`).
fn is_abort(e: &rocksdb::Error) -> bool {
    matches!(
        e.kind(),
        rocksdb::ErrorKind::Busy | rocksdb::ErrorKind::TryAgain | rocksdb::ErrorKind::TimedOut
    )
}

/// The reads for update and writes of one randomtransaction transaction.
fn transaction_body<D>(
    txn: &rocksdb::Transaction<'_, D>,
    keys: &[(usize, &[u8])],
    fresh: &[u8],
) -> std::result::Result<(), rocksdb::Error> {
    for &(_, key) in keys {
        let old = txn.get_for_update(key, true)?;
        txn.put(key, bumped(old.as_deref(), fresh))?;
    }
    Ok(())
}

/// A transaction's fate: committed (`true`), aborted (`false`) or failed.
fn transaction_outcome(result: std::result::Result<(), rocksdb::Error>) -> Result<bool> {
    match result {
        Ok(()) => Ok(true),
        Err(e) if is_abort(&e) => Ok(false),
        Err(e) => Err(rocks_error(e)),
    }
}

/// RocksDB behind [`Engine`].
pub struct RocksEngine {
    db: Handle,
    /// Kept for its statistics object (the tickers live in the options RocksDB was opened with).
    options: Options,
    write_options: WriteOptions,
    settings: String,
    /// The settings table's rows ([`super::super::settings`]).
    rows: SettingRows,
    /// Whether RocksDB keeps statistics (`--statistics`).
    statistics: bool,
    /// `--pin_slice`: lookups leave the pinned value uncopied.
    pin_slice: bool,
}

impl RocksEngine {
    /// Opens (or creates) a RocksDB database in `dir` with the settings of `config`.
    pub fn open(dir: &Path, config: &Config) -> Result<RocksEngine> {
        let sift = siftdb_options(config);
        let cache = Cache::new_lru_cache(sift.block_cache_capacity);
        let (table, mapped) = table_options(config, &sift, &cache);
        let options = db_options(config, &sift, &table);
        let db = open_db(dir, &options, config.transactions.as_ref())?;
        let mut write_options = WriteOptions::default();
        write_options.set_sync(config.sync);
        Ok(RocksEngine {
            db,
            options,
            write_options,
            settings: settings_line(config, &sift, &mapped),
            rows: settings_rows(config, &sift, &mapped),
            statistics: config.statistics,
            pin_slice: config.pin_slice,
        })
    }

    /// The handle of the default column family (the one every key is in).
    fn default_cf(&self) -> Result<&ColumnFamily> {
        match &self.db {
            Handle::Plain(db) => db.cf_handle(DEFAULT_COLUMN_FAMILY_NAME),
            Handle::Optimistic(db) => db.cf_handle(DEFAULT_COLUMN_FAMILY_NAME),
            // Not asked for: the callers have a path of their own for a `TransactionDB`.
            Handle::Pessimistic(_) => None,
        }
        .ok_or_else(|| Error::new("rocksdb: the default column family has no handle"))
    }

    /// Waits for background compactions to end: `WaitForCompact` where the crate has it, else
    /// (a `TransactionDB`) polling until no compaction runs or is due.
    fn wait_for_compactions(&self) -> Result<()> {
        match &self.db {
            Handle::Plain(db) => db.wait_for_compact(&WaitForCompactOptions::default()),
            Handle::Optimistic(db) => db.wait_for_compact(&WaitForCompactOptions::default()),
            Handle::Pessimistic(db) => {
                let busy = |name: &str| {
                    db.property_int_value(name)
                        .ok()
                        .flatten()
                        .is_some_and(|n| n > 0)
                };
                while busy("rocksdb.compaction-pending") || busy("rocksdb.num-running-compactions")
                {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                Ok(())
            }
        }
        .map_err(rocks_error)
    }

    fn ticker(&self, t: Ticker) -> u64 {
        self.options.get_ticker_count(t)
    }

    fn level_files(&self) -> Vec<u64> {
        (0..LEVELS)
            .map(|l| {
                with_db!(&self.db, db => db.property_int_value(&format!("rocksdb.num-files-at-level{l}")))
                    .ok()
                    .flatten()
                    .unwrap_or(0)
            })
            .collect()
    }
}

/// How the run's settings were mapped onto RocksDB, in words: the pieces the header's mapping
/// line and the settings table both print.
struct Mapped {
    /// The filter policy (with `--optimize_filters_for_hits`).
    filter: String,
    /// Whether index and filters are partitioned.
    partitioning: &'static str,
    /// The codec per level.
    compression: String,
    /// What RocksDB's statistics count.
    statistics: &'static str,
}

/// The block-based table options for `config` (block cache, blocks, partitioning, filter) and
/// what they map to.
fn table_options(
    config: &Config,
    sift: &siftdb::Options,
    cache: &Cache,
) -> (BlockBasedOptions, Mapped) {
    let mut table = BlockBasedOptions::default();
    table.set_block_cache(cache);
    table.set_block_size(sift.block_size);
    table.set_block_restart_interval(sift.block_restart_interval as i32);
    table.set_cache_index_and_filter_blocks(true);
    table.set_pin_l0_filter_and_index_blocks_in_cache(sift.pin_l0_filter_and_index_blocks_in_cache);
    table.set_whole_key_filtering(true);
    let partitioning = set_partitioning(&mut table, config, sift);
    let filter = set_filter(&mut table, config);
    let mapped = Mapped {
        filter: format!("{filter}{}", settings::hits_text(config)),
        partitioning,
        compression: compression_text(&config.compression),
        statistics: if config.statistics {
            "tickers, StatsLevel::ExceptTimers"
        } else {
            "off (--statistics=false)"
        },
    };
    (table, mapped)
}

/// Partitioned index and filters when `--partition_index_and_filters=true`; returns what was set.
fn set_partitioning(
    table: &mut BlockBasedOptions,
    config: &Config,
    sift: &siftdb::Options,
) -> &'static str {
    // siftdb partitions by size (above 64 KiB of index or filter); RocksDB cannot, so it
    // partitions only when the run asks every engine to.
    if config.partition_index_and_filters == Some(true) {
        table.set_index_type(rocksdb::BlockBasedIndexType::TwoLevelIndexSearch);
        table.set_partition_filters(true);
        table.set_metadata_block_size(sift.metadata_block_size);
        table.set_pin_top_level_index_and_filter(true);
        "partitioned index and filters (4 KiB partitions, top level pinned)"
    } else {
        "one index and one filter block per table"
    }
}

/// The filter of `--filter_policy` at `--bloom_bits`; returns what was set.
fn set_filter(table: &mut BlockBasedOptions, config: &Config) -> String {
    let bits = config.filter.bits_per_key;
    match config.filter.policy {
        FilterPolicyArg::Bloom => {
            table.set_bloom_filter(bits, false);
            format!("bloom {bits} bits/key on every level")
        }
        FilterPolicyArg::Ribbon => {
            table.set_ribbon_filter(bits);
            format!("ribbon (bloom-equivalent {bits} bits/key) on every level")
        }
        FilterPolicyArg::Hybrid => {
            let bbl = config.filter.bloom_before_level;
            table.set_hybrid_ribbon_filter(bits, bbl as i32);
            format!("hybrid ribbon: bloom before L{bbl}, ribbon from there, {bits} bits/key each")
        }
        // RocksDB has no binary fuse filter: its nearest, ribbon, on the same levels.
        FilterPolicyArg::Fuse => {
            let bbl = config.filter.bloom_before_level;
            table.set_hybrid_ribbon_filter(bits, bbl as i32);
            format!(
                "hybrid ribbon (RocksDB has no binary fuse filter; siftdb runs fuse from \
                 L{bbl}): bloom before L{bbl}, ribbon from there, {bits} bits/key each"
            )
        }
    }
}

/// The database options for `config`, with `table` as the table factory.
fn db_options(config: &Config, sift: &siftdb::Options, table: &BlockBasedOptions) -> Options {
    let mut options = Options::default();
    options.create_if_missing(!config.use_existing_db);
    options.set_block_based_table_factory(table);
    set_compression(&mut options, config);
    set_blob_files(&mut options, config);
    options.set_prefix_extractor(SliceTransform::create_fixed_prefix(config.prefix_size));
    options.set_optimize_filters_for_hits(config.optimize_filters_for_hits);
    options.set_memtable_prefix_bloom_ratio(config.memtable_bloom_size_ratio);
    options.set_memtable_whole_key_filtering(config.memtable_whole_key_filtering);
    options.set_write_buffer_size(sift.write_buffer_size);
    options.set_db_write_buffer_size(sift.db_write_buffer_size);
    options.set_max_open_files(rocks_open_files(sift));
    options.set_max_manifest_file_size(
        usize::try_from(sift.max_manifest_file_size).unwrap_or(usize::MAX),
    );
    options.set_max_write_buffer_number(sift.max_write_buffer_number as i32);
    options.set_bytes_per_sync(sift.bytes_per_sync);
    if sift.compression_parallel_threads > 1 {
        options.set_compression_options_parallel_threads(sift.compression_parallel_threads as i32);
    }
    options.set_wal_bytes_per_sync(sift.wal_bytes_per_sync);
    options
        .set_level_zero_file_num_compaction_trigger(sift.level0_file_num_compaction_trigger as i32);
    options.set_level_zero_stop_writes_trigger(sift.level0_stop_writes_trigger as i32);
    options.set_level_zero_slowdown_writes_trigger(sift.level0_slowdown_writes_trigger as i32);
    options.set_allow_mmap_reads(config.mmap_read);
    options.set_target_file_size_base(sift.target_file_size_base);
    options.set_max_bytes_for_level_base(sift.max_bytes_for_level_base);
    options.set_max_bytes_for_level_multiplier(sift.max_bytes_for_level_multiplier);
    options.set_level_compaction_dynamic_level_bytes(false);
    options.set_compaction_pri(match config.tree.compaction_pri {
        CompactionPriArg::MinOverlappingRatio => rocksdb::CompactionPri::MinOverlappingRatio,
        CompactionPriArg::RoundRobin => rocksdb::CompactionPri::RoundRobin,
    });
    set_compaction_style(&mut options, sift);
    options.set_max_background_jobs(1 + sift.compaction_threads() as i32);
    options.set_max_subcompactions(u32::try_from(sift.max_subcompactions).unwrap_or(u32::MAX));
    options.set_compaction_readahead_size(sift.compaction_readahead_size);
    if let Some(limiter) = &sift.rate_limiter {
        // RocksDB's NewGenericRateLimiter with siftdb's defaults: 100 ms refills, fairness 10.
        let rate = i64::try_from(limiter.bytes_per_second()).unwrap_or(i64::MAX);
        options.set_ratelimiter(rate, 100_000, 10);
    }
    if config.statistics {
        options.enable_statistics();
        options.set_statistics_level(StatsLevel::ExceptTimers);
    }
    // mergerandom's counters, as siftdb's `U64Add` (same name, same arithmetic).
    options.set_merge_operator_associative("siftdb.u64add", u64_add);
    options
}

/// The same codec per level as siftdb (the last entry for every deeper level).
/// RocksDB's `max_open_files`: siftdb's, except under FIFO compaction, which RocksDB runs only
/// with every table open (`-1`; it refuses to open otherwise; the settings table shows it).
fn rocks_open_files(sift: &siftdb::Options) -> i32 {
    if sift.compaction_style == siftdb::CompactionStyle::Fifo {
        -1
    } else {
        sift.max_open_files
    }
}

/// siftdb's compaction style and its settings, field by field (RocksDB's names).
fn set_compaction_style(options: &mut Options, sift: &siftdb::Options) {
    let int = |v: u64| i32::try_from(v).unwrap_or(i32::MAX);
    match sift.compaction_style {
        siftdb::CompactionStyle::Universal => {
            let u = &sift.compaction_options_universal;
            let mut universal = rocksdb::UniversalCompactOptions::default();
            universal.set_size_ratio(int(u64::from(u.size_ratio)));
            universal.set_min_merge_width(int(u.min_merge_width as u64));
            universal.set_max_merge_width(int(u.max_merge_width as u64));
            universal.set_max_size_amplification_percent(int(u.max_size_amplification_percent));
            options.set_compaction_style(rocksdb::DBCompactionStyle::Universal);
            options.set_universal_compaction_options(&universal);
        }
        siftdb::CompactionStyle::Fifo => {
            let f = &sift.compaction_options_fifo;
            let mut fifo = rocksdb::FifoCompactOptions::default();
            fifo.set_max_table_files_size(f.max_table_files_size);
            options.set_compaction_style(rocksdb::DBCompactionStyle::Fifo);
            options.set_fifo_compaction_options(&fifo);
            if let Some(ttl) = f.ttl {
                options.set_ttl(ttl.as_secs());
            }
        }
        _ => {}
    }
}

fn set_compression(options: &mut Options, config: &Config) {
    let codec = |c: &siftdb::Compression| match c {
        siftdb::Compression::None => DBCompressionType::None,
        siftdb::Compression::Lz4 => DBCompressionType::Lz4,
        siftdb::Compression::Zstd => DBCompressionType::Zstd,
        // A codec a later siftdb adds: RocksDB's LZ4 until the mapping learns it.
        _ => DBCompressionType::Lz4,
    };
    let last = config
        .compression
        .last()
        .map_or(DBCompressionType::None, codec);
    let per_level: Vec<DBCompressionType> = (0..7)
        .map(|l| config.compression.get(l).map_or(last, codec))
        .collect();
    options.set_compression_type(last);
    options.set_compression_per_level(&per_level);
}

/// Integrated BlobDB with the run's blob settings (`--enable_blob_files` and friends).
fn set_blob_files(options: &mut Options, config: &Config) {
    let b = &config.blob;
    options.set_enable_blob_files(b.enabled);
    options.set_min_blob_size(b.min_blob_size as u64);
    options.set_blob_file_size(b.blob_file_size);
    options.set_blob_compression_type(match b.compression {
        siftdb::Compression::None => DBCompressionType::None,
        siftdb::Compression::Zstd => DBCompressionType::Zstd,
        _ => DBCompressionType::Lz4,
    });
    options.set_enable_blob_gc(b.gc);
    options.set_blob_gc_age_cutoff(b.gc_age_cutoff);
    options.set_blob_gc_force_threshold(b.gc_force_threshold);
}

/// The "blob files" row: RocksDB's integrated BlobDB as the run set it.
fn blob_row(config: &Config) -> String {
    let gc = if config.blob.gc {
        format!(
            "blob GC age cutoff {}, force threshold {}; every file within the cutoff is \
             relocated, whatever its garbage (RocksDB has no minimum garbage ratio)",
            config.blob.gc_age_cutoff, config.blob.gc_force_threshold
        )
    } else {
        "no blob GC".to_string()
    };
    settings::blob_text(config, &gc)
}

/// Opens the database in `dir` with `options`: a plain one, or the transaction database
/// `transactions` asks for.
fn open_db(
    dir: &Path,
    options: &Options,
    transactions: Option<&TransactionConfig>,
) -> Result<Handle> {
    // The default column family named at open, with the same options, so that the
    // database keeps a handle of it: `batched_multi_get_cf` takes one, and `DB::open` keeps
    // none (it opens the default column family unnamed).
    let default_cf = ColumnFamilyDescriptor::new(DEFAULT_COLUMN_FAMILY_NAME, options.clone());
    match transactions {
        None => DB::open_cf_descriptors(options, dir, [default_cf]).map(Handle::Plain),
        Some(txn) if txn.pessimistic => {
            let mut txn_db = TransactionDBOptions::default();
            let timeout = i64::try_from(txn.lock_timeout.as_millis()).unwrap_or(i64::MAX);
            txn_db.set_txn_lock_timeout(timeout);
            TransactionDB::<rocksdb::MultiThreaded>::open_cf_descriptors(
                options,
                &txn_db,
                dir,
                [default_cf],
            )
            .map(Handle::Pessimistic)
        }
        Some(_) => OptimisticTransactionDB::open_cf_descriptors(options, dir, [default_cf])
            .map(Handle::Optimistic),
    }
    .map_err(rocks_error)
}

/// The header's `Mapped as` line.
fn settings_line(config: &Config, sift: &siftdb::Options, mapped: &Mapped) -> String {
    let Mapped {
        filter,
        partitioning,
        compression,
        statistics,
    } = mapped;
    let open_files = format!(
        "{} (max_open_files), manifest rolled over at {} (max_manifest_file_size)",
        open_files_text(rocks_open_files(sift)),
        human_bytes(sift.max_manifest_file_size)
    );
    format!(
        "{filter}; filter+index blocks in a {} LRU block cache (L0 pinned); fixed:{} prefix \
         extractor; write buffer {} x{} ({}); target file {}, L1 {}, multiplier {}, L0 trigger {}, \
         dynamic level bytes off; {compression} (index blocks too); {partitioning}; \
         {open_files}; {} background jobs; multiread workloads: batched MultiGet, keys unsorted \
         (sorted_input=false, as db_bench); reads {}; statistics {statistics}; L0 slowdown \
         {}",
        human_bytes(sift.block_cache_capacity as u64),
        config.prefix_size,
        human_bytes(sift.write_buffer_size as u64),
        sift.max_write_buffer_number,
        peer_db_write_buffer_text(sift.db_write_buffer_size, sift.allow_stall),
        human_bytes(sift.target_file_size_base),
        human_bytes(sift.max_bytes_for_level_base),
        sift.max_bytes_for_level_multiplier,
        sift.level0_file_num_compaction_trigger,
        1 + sift.compaction_threads(),
        if config.mmap_read {
            "through mmap (allow_mmap_reads)"
        } else {
            "with pread"
        },
        rocks_slowdown_text(sift),
    )
}

/// The "L0 slowdown" row of RocksDB: siftdb's triggers, RocksDB's default delayed write rate.
fn rocks_slowdown_text(sift: &siftdb::Options) -> String {
    format!(
        "slowed to 16 MiB/s (its default delayed_write_rate) from {} L0 files, stopped at {}",
        sift.level0_slowdown_writes_trigger, sift.level0_stop_writes_trigger
    )
}

/// The settings table's rows ([`super::super::settings::ROWS`]).
/// The "compression" row: the codecs, and the threads beside the table builder.
fn compression_row(compression: &str, sift: &siftdb::Options) -> String {
    format!(
        "{compression} (index blocks too){}",
        settings::compression_threads_text(sift.compression_parallel_threads)
    )
}

fn settings_rows(config: &Config, sift: &siftdb::Options, mapped: &Mapped) -> SettingRows {
    let Mapped {
        filter,
        compression,
        statistics,
        ..
    } = mapped;
    vec![
        ("filters", filter.clone()),
        (
            "block cache",
            format!(
                "{} LRU; filter+index blocks in it, L0's pinned",
                human_bytes(sift.block_cache_capacity as u64)
            ),
        ),
        ("prefix filter", format!("fixed:{}", config.prefix_size)),
        (
            "memtable",
            format!(
                "{} x{}{}",
                human_bytes(sift.write_buffer_size as u64),
                sift.max_write_buffer_number,
                settings::memtable_bloom_text(config)
            ),
        ),
        (
            "tree shape",
            format!("{}; dynamic level bytes off", settings::tree_shape(config)),
        ),
        ("compression", compression_row(compression, sift)),
        ("blob files", blob_row(config)),
        (
            "table reads",
            if config.mmap_read {
                "mmap (allow_mmap_reads)"
            } else {
                "pread"
            }
            .to_string(),
        ),
        (
            "point lookups",
            settings::pin_slice_text(config, "get_pinned", "get_pinned, copied"),
        ),
        (
            "sync (--sync)",
            settings::sync_text(config, "fdatasync of the WAL"),
        ),
        (
            "writeback",
            format!(
                "{} (bytes_per_sync, wal_bytes_per_sync)",
                settings::writeback_text(sift)
            ),
        ),
        ("L0 slowdown", rocks_slowdown_text(sift)),
        ("statistics", statistics.to_string()),
        (
            "background work",
            format!(
                "max_background_jobs {}, max_subcompactions {}, compaction_readahead_size {}, \
                 outputs cut at grandparent boundaries (always, in RocksDB 11{})",
                1 + sift.compaction_threads(),
                sift.max_subcompactions,
                super::super::text::human_bytes(sift.compaction_readahead_size as u64),
                if sift.level_compaction_dynamic_file_size {
                    ""
                } else {
                    "; --level_compaction_dynamic_file_size=false not mapped"
                }
            ),
        ),
        ("rate limiter", settings::rate_limiter_text(sift)),
        (
            "transactions",
            settings::transactions_text(
                config,
                || {
                    "OptimisticTransactionDB: set_snapshot (validated against the snapshot at \
                     begin); get_for_update(exclusive)"
                        .to_string()
                },
                |ms| {
                    format!(
                        "TransactionDB: lock timeout {ms} ms, deadlock_detect; \
                         get_for_update(exclusive), no snapshot"
                    )
                },
            ),
        ),
        ("compaction style", settings::compaction_style_text(sift)),
    ]
}

impl Engine for RocksEngine {
    fn name(&self) -> &'static str {
        "rocksdb"
    }

    fn setting_rows(&self, _config: &Config) -> SettingRows {
        self.rows.clone()
    }

    fn settings(&self) -> Option<String> {
        Some(self.settings.clone())
    }

    fn filter_stats_by_level(&self) -> bool {
        false
    }

    fn put(&self, _ks: usize, key: &[u8], value: &[u8]) -> Result<()> {
        with_db!(&self.db, db => db.put_opt(key, value, &self.write_options)).map_err(rocks_error)
    }

    fn can_bulk_load(&self) -> bool {
        // The crate's `TransactionDB` has no ingestion.
        !matches!(self.db, Handle::Pessimistic(_))
    }

    fn bulk_loader<'a>(
        &'a self,
        _ks: usize,
        staging: &Path,
        file_bytes: u64,
    ) -> Result<Option<Box<dyn BulkLoader + 'a>>> {
        Ok(Some(Box::new(RocksLoader {
            engine: self,
            staging: staging.to_path_buf(),
            file_bytes,
            writer: None,
            files: Vec::new(),
        })))
    }

    fn get(&self, _ks: usize, key: &[u8], buf: &mut Vec<u8>) -> Result<bool> {
        let pinned = with_db!(&self.db, db => db.get_pinned(key)).map_err(rocks_error)?;
        if self.pin_slice {
            return Ok(pinned.is_some());
        }
        match pinned {
            Some(value) => {
                buf.clear();
                buf.extend_from_slice(&value);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn multi_get(&self, _ks: usize, keys: &[&[u8]]) -> Result<u64> {
        // `sorted_input` false with the keys as drawn: what db_bench's multireadrandom does
        // (`--multiread_batched`; its default vector MultiGet goes the same way). The found
        // values stay pinned in RocksDB's blocks, uncopied, until the answers are dropped.
        let mut found = 0;
        let answers = match &self.db {
            Handle::Plain(db) => db.batched_multi_get_cf(self.default_cf()?, keys, false),
            Handle::Optimistic(db) => db.batched_multi_get_cf(self.default_cf()?, keys, false),
            // No batched MultiGet on a `TransactionDB` in the crate: one `Get` per key.
            Handle::Pessimistic(db) => {
                for key in keys {
                    found += u64::from(db.get_pinned(key).map_err(rocks_error)?.is_some());
                }
                return Ok(found);
            }
        };
        for answer in answers {
            found += u64::from(answer.map_err(rocks_error)?.is_some());
        }
        Ok(found)
    }

    fn delete(&self, _ks: usize, key: &[u8]) -> Result<()> {
        with_db!(&self.db, db => db.delete_opt(key, &self.write_options)).map_err(rocks_error)
    }

    fn write_batch(&self, ops: &[BatchOp<'_>]) -> Result<()> {
        let options = &self.write_options;
        match &self.db {
            Handle::Plain(db) => db.write_opt(batch_of::<false>(ops), options),
            Handle::Optimistic(db) => db.write_opt(batch_of::<true>(ops), options),
            Handle::Pessimistic(db) => db.write_opt(batch_of::<true>(ops), options),
        }
        .map_err(rocks_error)
    }

    fn can_delete_range(&self) -> bool {
        !matches!(self.db, Handle::Pessimistic(_))
    }

    fn delete_range(&self, _ks: usize, start: &[u8], end: &[u8]) -> Result<()> {
        let (cf, options) = (self.default_cf()?, &self.write_options);
        match &self.db {
            Handle::Plain(db) => db.delete_range_cf_opt(cf, start, end, options),
            Handle::Optimistic(db) => db.delete_range_cf_opt(cf, start, end, options),
            Handle::Pessimistic(_) => {
                return Err(Error::new(
                    "rocksdb: a TransactionDB has no range deletes here",
                ))
            }
        }
        .map_err(rocks_error)
    }

    fn can_merge(&self) -> bool {
        true
    }

    fn merge(&self, _ks: usize, key: &[u8], operand: &[u8]) -> Result<()> {
        with_db!(&self.db, db => db.merge_opt(key, operand, &self.write_options))
            .map_err(rocks_error)
    }

    fn seek_read(&self, _ks: usize, key: &[u8], nexts: usize) -> Result<SeekOutcome> {
        // A seek may cross prefixes: total order, or RocksDB's prefix bloom would cut it short.
        let mut read = ReadOptions::default();
        read.set_total_order_seek(true);
        with_db!(&self.db, db => seek_with(db.raw_iterator_opt(read), key, nexts))
    }

    fn range_count(&self, _ks: usize, start: &[u8], end: &[u8]) -> Result<u64> {
        // A bounded iterator: RocksDB's `iterate_upper_bound` (its own way to stop a scan early;
        // it has no range filter), total order as for every scan.
        let mut read = ReadOptions::default();
        read.set_total_order_seek(true);
        read.set_iterate_upper_bound(end.to_vec());
        with_db!(&self.db, db => count_from(db.raw_iterator_opt(read), start))
    }

    fn scan(&self, reverse: bool) -> Result<u64> {
        let mut read = ReadOptions::default();
        read.set_total_order_seek(true);
        with_db!(&self.db, db => scan_with(db.raw_iterator_opt(read), reverse))
    }

    fn prefix_scan(&self, prefix: &[u8]) -> Result<u64> {
        let mut read = ReadOptions::default();
        read.set_prefix_same_as_start(true);
        let mode = IteratorMode::From(prefix, rocksdb::Direction::Forward);
        with_db!(&self.db, db => count_prefix(db.iterator_opt(mode, read), prefix))
    }

    fn flush(&self) -> Result<()> {
        with_db!(&self.db, db => db.flush()).map_err(rocks_error)?;
        self.wait_for_compactions()
    }

    fn compact(&self) -> Result<()> {
        let mut compact = CompactOptions::default();
        compact.set_bottommost_level_compaction(BottommostLevelCompaction::Force);
        let (none, all) = (None::<&[u8]>, None::<&[u8]>);
        match &self.db {
            Handle::Plain(db) => db.compact_range_opt(none, all, &compact),
            Handle::Optimistic(db) => db.compact_range_opt(none, all, &compact),
            Handle::Pessimistic(_) => {
                return Err(Error::new(
                    "rocksdb: a TransactionDB has no CompactRange in the rocksdb crate",
                ))
            }
        }
        self.wait_for_compactions()
    }

    fn can_checkpoint(&self) -> bool {
        !matches!(self.db, Handle::Pessimistic(_))
    }

    fn checkpoint(&self, dir: &Path) -> Result<()> {
        match &self.db {
            Handle::Plain(db) => Checkpoint::new(db),
            Handle::Optimistic(db) => Checkpoint::new(db),
            Handle::Pessimistic(_) => {
                return Err(Error::new(
                    "rocksdb: no checkpoints of a TransactionDB here",
                ))
            }
        }
        .and_then(|checkpoint| checkpoint.create_checkpoint(dir))
        .map_err(rocks_error)
    }

    fn read_modify_write_txn(
        &self,
        txn: &TransactionConfig,
        keys: &[(usize, &[u8])],
        fresh: &[u8],
    ) -> Result<bool> {
        match &self.db {
            Handle::Plain(_) => Err(Error::new(
                "rocksdb was not opened as a transaction database \
                 (--optimistic_transaction_db or --transaction_db)",
            )),
            Handle::Optimistic(db) => {
                let mut options = OptimisticTransactionOptions::default();
                options.set_snapshot(true);
                let t = db.transaction_opt(&self.write_options, &options);
                transaction_outcome(transaction_body(&t, keys, fresh).and_then(|()| t.commit()))
            }
            Handle::Pessimistic(db) => {
                let mut options = TransactionOptions::default();
                let timeout = i64::try_from(txn.lock_timeout.as_millis()).unwrap_or(i64::MAX);
                options.set_lock_timeout(timeout);
                options.set_deadlock_detect(true);
                let t = db.transaction_opt(&self.write_options, &options);
                let result = transaction_body(&t, keys, fresh);
                let result = match result {
                    Ok(()) => t.commit(),
                    Err(e) => t.rollback().and(Err(e)),
                };
                transaction_outcome(result)
            }
        }
    }

    fn checkpoint_keys(&self, dir: &Path) -> Result<u64> {
        // Read-only with default options: counting needs no filter or prefix extractor.
        let copy = DB::open_for_read_only(&Options::default(), dir, false).map_err(rocks_error)?;
        let mut iter = copy.raw_iterator();
        iter.seek_to_first();
        let mut keys = 0;
        while iter.valid() {
            keys += 1;
            iter.next();
        }
        iter.status().map_err(rocks_error)?;
        Ok(keys)
    }

    fn write_pressure(&self) -> WritePressure {
        let int = |name: &str| {
            with_db!(&self.db, db => db.property_int_value(name))
                .ok()
                .flatten()
        };
        WritePressure {
            l0_files: int("rocksdb.num-files-at-level0"),
            pending_compaction_bytes: int("rocksdb.estimate-pending-compaction-bytes"),
        }
    }

    fn stats(&self) -> Option<Stats> {
        if !self.statistics {
            return None;
        }
        let t = |ticker| self.ticker(ticker);
        let mut stats = Stats {
            // RocksDB counts filter outcomes for the whole tree, not per level: one row.
            levels: vec![LevelFilterStats {
                checked: t(Ticker::BloomFilterUseful) + t(Ticker::BloomFilterFullPositive),
                useful: t(Ticker::BloomFilterUseful),
                positive: t(Ticker::BloomFilterFullPositive),
                true_positive: t(Ticker::BloomFilterFullTruePositive),
                data_block_accesses: t(Ticker::BlockCacheDataHit) + t(Ticker::BlockCacheDataMiss),
                ..LevelFilterStats::default()
            }],
            // A batched MultiGet counts its keys apart from gets.
            gets: t(Ticker::NumberKeysRead) + t(Ticker::NumberMultigetKeysRead),
            memtable_hits: t(Ticker::MemtableHit),
            data_block_reads: t(Ticker::BlockCacheDataMiss),
            index_block_reads: t(Ticker::BlockCacheIndexMiss),
            filter_block_reads: t(Ticker::BlockCacheFilterMiss),
            prefix_checked: t(Ticker::BloomFilterPrefixChecked),
            prefix_useful: t(Ticker::BloomFilterPrefixUseful),
            keys_written: t(Ticker::NumberKeysWritten),
            bytes_written_user: t(Ticker::BytesWritten),
            wal_bytes: t(Ticker::WalFileBytes),
            wal_syncs: t(Ticker::WalFileSynced),
            flush_bytes: t(Ticker::FlushWriteBytes),
            compaction_bytes_read: t(Ticker::CompactReadBytes),
            compaction_bytes_written: t(Ticker::CompactWriteBytes),
            stall_micros: t(Ticker::StallMicros),
            ..Stats::default()
        };
        let kinds = [
            (
                BlockKind::Data,
                Ticker::BlockCacheDataHit,
                Ticker::BlockCacheDataMiss,
            ),
            (
                BlockKind::Index,
                Ticker::BlockCacheIndexHit,
                Ticker::BlockCacheIndexMiss,
            ),
            (
                BlockKind::Filter,
                Ticker::BlockCacheFilterHit,
                Ticker::BlockCacheFilterMiss,
            ),
        ];
        for (kind, hit, miss) in kinds {
            let k = &mut stats.cache.per_kind[kind.index()];
            k.hits = t(hit);
            k.misses = t(miss);
        }
        Some(stats)
    }

    fn shape(&self) -> Option<String> {
        let files = self.level_files();
        let mut out = String::from("level  files\n");
        for (level, n) in files.iter().enumerate().filter(|(_, &n)| n > 0) {
            out.push_str(&format!("L{level:<5} {n:>5}\n"));
        }
        if let Ok(Some(stats)) = with_db!(&self.db, db => db.property_value("rocksdb.levelstats")) {
            out.push_str(&stats);
        }
        Some(out)
    }

    fn close(&self) -> Result<()> {
        match &self.db {
            Handle::Plain(db) => db.cancel_all_background_work(true),
            Handle::Optimistic(db) => db.cancel_all_background_work(true),
            // The crate's `TransactionDB` has no CancelAllBackgroundWork: its drop waits.
            Handle::Pessimistic(_) => {}
        }
        Ok(())
    }
}

/// Reads from `key` up to `nexts` entries past the first (see [`Engine::seek_read`]).
fn seek_with<D: rocksdb::DBAccess>(
    mut iter: rocksdb::DBRawIteratorWithThreadMode<'_, D>,
    key: &[u8],
    nexts: usize,
) -> Result<SeekOutcome> {
    iter.seek(key);
    let mut outcome = SeekOutcome::default();
    while iter.valid() && outcome.entries <= nexts as u64 {
        if outcome.entries == 0 {
            outcome.found = iter.key() == Some(key);
        }
        outcome.entries += 1;
        iter.next();
    }
    iter.status().map_err(rocks_error)?;
    Ok(outcome)
}

/// Counts the entries from `start` to the iterator's upper bound, reading each value.
fn count_from<D: rocksdb::DBAccess>(
    mut iter: rocksdb::DBRawIteratorWithThreadMode<'_, D>,
    start: &[u8],
) -> Result<u64> {
    iter.seek(start);
    let mut entries = 0;
    while iter.valid() {
        std::hint::black_box(iter.value());
        entries += 1;
        iter.next();
    }
    iter.status().map_err(rocks_error)?;
    Ok(entries)
}

/// Reads every entry, ascending or (`reverse`) descending; returns how many.
fn scan_with<D: rocksdb::DBAccess>(
    mut iter: rocksdb::DBRawIteratorWithThreadMode<'_, D>,
    reverse: bool,
) -> Result<u64> {
    if reverse {
        iter.seek_to_last();
    } else {
        iter.seek_to_first();
    }
    let mut entries = 0;
    while iter.valid() {
        std::hint::black_box((iter.key(), iter.value()));
        entries += 1;
        if reverse {
            iter.prev();
        } else {
            iter.next();
        }
    }
    iter.status().map_err(rocks_error)?;
    Ok(entries)
}

/// Counts the entries of `iter` (positioned at `prefix`) that start with `prefix`.
fn count_prefix<D: rocksdb::DBAccess>(
    iter: rocksdb::DBIteratorWithThreadMode<'_, D>,
    prefix: &[u8],
) -> Result<u64> {
    let mut entries = 0;
    for item in iter {
        let (k, _) = item.map_err(rocks_error)?;
        if !k.starts_with(prefix) {
            break;
        }
        entries += 1;
    }
    Ok(entries)
}

/// siftdb's `U64Add` for RocksDB: little-endian u64s added (wrapping); a value or operand of
/// another width fails the merge, as in siftdb.
fn u64_add(
    _key: &[u8],
    existing: Option<&[u8]>,
    operands: &rocksdb::MergeOperands,
) -> Option<Vec<u8>> {
    let read = |bytes: &[u8]| -> Option<u64> { bytes.try_into().ok().map(u64::from_le_bytes) };
    let mut sum = existing.map_or(Some(0), read)?;
    for operand in operands {
        sum = sum.wrapping_add(read(operand)?);
    }
    Some(sum.to_le_bytes().to_vec())
}

/// A bulk load into RocksDB: `SstFileWriter` files of about `file_bytes` (with the options the
/// database was opened with), then one `IngestExternalFile` of them all, moved in.
struct RocksLoader<'a> {
    engine: &'a RocksEngine,
    staging: std::path::PathBuf,
    file_bytes: u64,
    writer: Option<rocksdb::SstFileWriter<'a>>,
    files: Vec<std::path::PathBuf>,
}

impl RocksLoader<'_> {
    fn finish_file(&mut self) -> Result<()> {
        if let Some(mut writer) = self.writer.take() {
            writer.finish().map_err(rocks_error)?;
        }
        Ok(())
    }
}

impl BulkLoader for RocksLoader<'_> {
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        if self.writer.is_none() {
            let path = self.staging.join(format!("{}.sst", self.files.len()));
            let writer = rocksdb::SstFileWriter::create(&self.engine.options);
            writer.open(&path).map_err(rocks_error)?;
            self.writer = Some(writer);
            self.files.push(path);
        }
        if let Some(writer) = self.writer.as_mut() {
            writer.put(key, value).map_err(rocks_error)?;
            if writer.file_size() >= self.file_bytes {
                self.finish_file()?;
            }
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<()> {
        self.finish_file()?;
        let mut opts = rocksdb::IngestExternalFileOptions::default();
        opts.set_move_files(true);
        let files = std::mem::take(&mut self.files);
        match &self.engine.db {
            Handle::Plain(db) => db.ingest_external_file_opts(&opts, files),
            Handle::Optimistic(db) => db.ingest_external_file_opts(&opts, files),
            Handle::Pessimistic(_) => return Err(Error::new("no ingestion in a TransactionDB")),
        }
        .map_err(rocks_error)
    }
}
