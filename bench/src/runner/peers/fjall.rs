//! fjall (crate `fjall` 3) behind [`Engine`], with siftdb's settings mapped as closely as fjall
//! allows.
//!
//! Mapping (also printed in the run's header and written down in `docs/BENCHMARKS.md`):
//! - one keyspace: `--keyspaces` above 1 is refused for fjall
//!   ([`check_keyspaces`](super::super::engine::check_keyspaces)), so every keyspace number is 0.
//! - no `checkpoint` (fjall has none: the workload prints "not supported by fjall").
//! - bloom filters of `--bloom_bits` bits/key on every level (fjall's default spends 0.0001 FPR
//!   on L0: replaced so that every engine spends the same bits/key). fjall has bloom filters
//!   only: `--filter_policy` and `--filter_allocation` have no equivalent.
//! - fjall has no prefix extractor: `prefixscan` is `Keyspace::prefix`, which has no prefix
//!   filter to skip tables with.
//! - one block cache of `--cache_size` (fjall keeps filter and index blocks in it, L0 filter and
//!   L0/L1 index blocks pinned by default: left as is); no compression; 4 KiB blocks.
//! - memtable `max_memtable_size` = siftdb's write buffer size; fjall keeps up to four sealed
//!   memtables waiting for their flush besides the one written (five in all, not settable:
//!   its `max_write_buffer_size` is unused in 3.1), where siftdb and RocksDB keep
//!   `max_write_buffer_number` in all (2 by default; `--max_write_buffer_number=5` evens it);
//!   leveled compaction with siftdb's
//!   L0 trigger, target file size and multiplier. fjall derives L1's size from them
//!   (`target_size × l0_threshold`) and has no separate `max_bytes_for_level_base`.
//! - worker threads: one plus siftdb's compaction threads (`Options::compaction_threads`;
//!   siftdb runs one flush thread beside them). fjall has no subcompactions and no rate
//!   limiter: `--subcompactions` and `--rate_limiter_bytes_per_sec` are printed as not mapped.
//! - writes go to the OS with every write batch (fjall's default, as siftdb's `sync=false`);
//!   `--sync` syncs the journal's data after each write (`PersistMode::SyncData`: `fdatasync`,
//!   as siftdb and RocksDB sync their WALs; `SyncAll` would also sync the file's metadata).
//! - reads: fjall reads table files with `pread` (it has no `mmap` mode): `--mmap_read=true`
//!   cannot be mapped, and the run's settings say so; compare with `--mmap_read=false`.
//! - transactions: `--optimistic_transaction_db` opens an `OptimisticTxDatabase` (fjall's
//!   `TxKeyspace`: serializable snapshot isolation, every read of a write transaction in its
//!   conflict set, so randomtransaction's reads are its `get_for_update`s); every other
//!   workload goes through the plain database and keyspace inside it. fjall has no pessimistic
//!   transactions (its `SingleWriterTxDatabase` runs one write transaction at a time):
//!   `--transaction_db` is refused for fjall.
//! - fjall 3.1 has no multi-get: a batch of `multireadrandom` / `multireadmissing` is a loop of
//!   `Keyspace::get`, one after the other and each in its own view (not one batched call).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use fjall::config::{BloomConstructionPolicy, FilterPolicy, FilterPolicyEntry};
use fjall::{
    AbstractTree, CompressionType, Database, Keyspace, KeyspaceCreateOptions, OptimisticTxDatabase,
    PersistMode, Readable,
};
use siftdb::{LevelFilterStats, Stats};
use siftdb_cache::BlockKind;

use super::super::args::{Config, TransactionConfig};
use super::super::engine::{bumped, BatchOp, BulkLoader, Engine, SeekOutcome, WritePressure};
use super::super::error::{Error, Result};
use super::super::settings::{self, siftdb_options, SettingRows};
use super::super::text::{compression_text, human_bytes, peer_db_write_buffer_text};

/// How many levels the shape table lists (fjall's default level count).
const LEVELS: usize = 7;

fn fjall_error(e: fjall::Error) -> Error {
    Error::new(format!("fjall: {e}"))
}

/// `$builder` (of a plain or a transactional database: fjall's builder is generic over a
/// trait it does not export, hence a macro) with siftdb's shared memtable budget, block cache
/// and worker threads.
macro_rules! configured {
    ($builder:expr, $sift:expr) => {{
        let sift: &siftdb::Options = $sift;
        // fjall's counterpart of `db_write_buffer_size` is hidden and marked deprecated
        // ("todo") in 3.1, and refuses budgets under 1 MiB; it is the only way to give fjall
        // the setting.
        #[allow(deprecated)]
        let builder = $builder.max_write_buffer_size(
            (sift.db_write_buffer_size > 0)
                .then(|| (sift.db_write_buffer_size as u64).max(1 << 20)),
        );
        // fjall bounds its open files always (at least 10; `None`, every file open, is
        // refused): `--open_files=-1` leaves fjall's default bound, and the run's settings
        // say so.
        let builder = match usize::try_from(sift.max_open_files) {
            Ok(n) => builder.max_cached_files(Some(n.max(10))),
            Err(_) => builder,
        };
        // The journal uncompressed, as siftdb's and RocksDB's WALs are: fjall compresses
        // entries of 4 KiB and more with LZ4 by default, which halves its log writes of large
        // compressible values where the others write them whole.
        builder
            .cache_size(sift.block_cache_capacity as u64)
            .worker_threads(1 + sift.compaction_threads())
            .journal_compression(CompressionType::None)
    }};
}

/// fjall behind [`Engine`].
pub struct FjallEngine {
    db: Database,
    keyspace: Keyspace,
    /// The optimistic transaction database `db` is the inside of (`--optimistic_transaction_db`).
    transactions: Option<OptimisticTxDatabase>,
    sync: bool,
    /// `--pin_slice`: lookups leave the value (a shared slice) uncopied.
    pin_slice: bool,
    settings: String,
    /// The settings table's rows ([`super::super::settings`]).
    rows: SettingRows,
}

impl FjallEngine {
    /// Opens (or creates) a fjall database in `dir` with the settings of `config`.
    pub fn open(dir: &Path, config: &Config) -> Result<FjallEngine> {
        let sift = siftdb_options(config);
        let given = Given::new(config, &sift);
        let (db, transactions) =
            match config.transactions {
                None => (configured!(Database::builder(dir), &sift).open(), None),
                Some(txn) if txn.pessimistic => return Err(Error::new(
                    "fjall has no pessimistic transactions (its SingleWriterTxDatabase runs one \
                     write transaction at a time): --transaction_db is not mapped for fjall",
                )),
                Some(_) => {
                    let tx = configured!(OptimisticTxDatabase::builder(dir), &sift).open();
                    match tx {
                        Ok(tx) => (Ok(tx.inner().clone()), Some(tx)),
                        Err(e) => (Err(e), None),
                    }
                }
            };
        let db = db.map_err(fjall_error)?;
        let keyspace = open_keyspace(&db, config, &sift, &given)?;
        Ok(FjallEngine {
            db,
            keyspace,
            transactions,
            sync: config.sync,
            pin_slice: config.pin_slice,
            settings: settings_line(config, &sift, &given),
            rows: settings_rows(config, &sift, &given),
        })
    }

    fn persist(&self) -> Result<()> {
        if self.sync {
            self.db
                .persist(PersistMode::SyncData)
                .map_err(fjall_error)?;
        }
        Ok(())
    }

    /// Waits until no flush or compaction runs, and none has started for a while (fjall has no
    /// "wait for compaction": background work is polled).
    fn wait_for_background(&self) {
        let mut quiet = 0;
        while quiet < 5 {
            std::thread::sleep(Duration::from_millis(20));
            if self.db.outstanding_flushes() == 0 && self.db.active_compactions() == 0 {
                quiet += 1;
            } else {
                quiet = 0;
            }
        }
    }
}

/// The values fjall is given where they differ in type or wording from siftdb's options.
struct Given {
    /// Bloom filter bits per key (`--bloom_bits`).
    bits: f32,
    /// L0 files that start a compaction (fjall takes a `u8`).
    l0_trigger: u8,
    /// Bytes of one memtable.
    write_buffer: u64,
    /// The codec per level, in words (with fjall's stand-in for Zstd).
    compression: String,
}

impl Given {
    /// What `config` (and `sift`, the siftdb options it describes) gives fjall.
    fn new(config: &Config, sift: &siftdb::Options) -> Given {
        let mut compression = compression_text(&config.compression);
        if config.compression.contains(&siftdb::Compression::Zstd) {
            compression.push_str(" (fjall has no zstd: lz4 there)");
        }
        Given {
            bits: config.filter.bits_per_key as f32,
            l0_trigger: sift.level0_file_num_compaction_trigger.clamp(1, 255) as u8,
            write_buffer: sift.write_buffer_size as u64,
            compression,
        }
    }
}

/// Opens (or creates) the keyspace every key goes in, with the filter, memtable, codecs and
/// compaction of `given`.
fn open_keyspace(
    db: &Database,
    config: &Config,
    sift: &siftdb::Options,
    given: &Given,
) -> Result<Keyspace> {
    let Given {
        bits,
        l0_trigger,
        write_buffer,
        ..
    } = *given;
    let policy = compression_policy(config);
    db.keyspace("bench", || {
        let options = KeyspaceCreateOptions::default()
            .max_memtable_size(write_buffer)
            .filter_policy(FilterPolicy::all(FilterPolicyEntry::Bloom(
                BloomConstructionPolicy::BitsPerKey(bits),
            )))
            .data_block_compression_policy(fjall::config::CompressionPolicy::new(policy.clone()))
            .index_block_compression_policy(fjall::config::CompressionPolicy::new(policy))
            .with_kv_separation(kv_separation(config));
        with_compaction_strategy(options, sift, l0_trigger)
    })
    .map_err(fjall_error)
}

/// fjall's key-value separation with the run's blob settings: its separation threshold is
/// `--min_blob_size`, its age cutoff the collection's (0 without collection: no file is
/// rewritten), and its staleness threshold `--blob_garbage_collection_min_garbage_ratio`, as
/// siftdb's. fjall has no force threshold, and rewrites a file only when no table outside the
/// compaction references it (the settings row says so).
fn kv_separation(config: &Config) -> Option<fjall::KvSeparationOptions> {
    let b = &config.blob;
    b.enabled.then(|| {
        fjall::KvSeparationOptions::default()
            .compression(match b.compression {
                siftdb::Compression::None => CompressionType::None,
                _ => CompressionType::Lz4,
            })
            .file_target_size(b.blob_file_size)
            .separation_threshold(u32::try_from(b.min_blob_size).unwrap_or(u32::MAX))
            .staleness_threshold(b.gc_min_garbage_ratio as f32)
            .age_cutoff(if b.gc { b.gc_age_cutoff as f32 } else { 0.0 })
    })
}

/// The "blob files" row: fjall's KV separation as the run set it.
fn blob_row(config: &Config) -> String {
    let gc = if config.blob.gc {
        format!(
            "compactions rewrite the oldest {:.0} % of the blob files they reference that are at \
             least {:.0} % garbage (staleness threshold), if no other table references them; \
             fjall has no force threshold",
            config.blob.gc_age_cutoff * 100.0,
            config.blob.gc_min_garbage_ratio * 100.0
        )
    } else {
        "age cutoff 0: no blob file rewritten".to_string()
    };
    settings::blob_text(config, &gc)
}

/// `options` with siftdb's compaction style as fjall has it: leveled, or FIFO with the same
/// limit and TTL. fjall 3 has no size-tiered strategy, so universal runs leveled (printed).
fn with_compaction_strategy(
    options: KeyspaceCreateOptions,
    sift: &siftdb::Options,
    l0_trigger: u8,
) -> KeyspaceCreateOptions {
    if sift.compaction_style == siftdb::CompactionStyle::Fifo {
        let f = &sift.compaction_options_fifo;
        return options.compaction_strategy(Arc::new(fjall::compaction::Fifo::new(
            f.max_table_files_size,
            f.ttl.map(|t| t.as_secs()),
        )));
    }
    options.compaction_strategy(Arc::new(
        fjall::compaction::Leveled::default()
            .with_l0_threshold(l0_trigger)
            .with_table_target_size(sift.target_file_size_base)
            .with_level_ratio_policy(vec![sift.max_bytes_for_level_multiplier as f32]),
    ))
}

/// fjall's compaction style as the settings table shows it.
fn compaction_style_text(sift: &siftdb::Options) -> String {
    match sift.compaction_style {
        siftdb::CompactionStyle::Universal => {
            "leveled (fjall 3 has no size-tiered strategy; --compaction_style=universal not mapped)"
                .to_string()
        }
        _ => settings::compaction_style_text(sift),
    }
}

/// The codec of each level.
fn compression_policy(config: &Config) -> Vec<CompressionType> {
    // The same codec per level as siftdb; fjall has no Zstd, so Zstd levels get its LZ4 (a
    // difference printed in the mapping).
    let codec = |c: &siftdb::Compression| match c {
        siftdb::Compression::None => CompressionType::None,
        // Zstd, and any codec a later siftdb adds that fjall lacks: its LZ4.
        _ => CompressionType::Lz4,
    };
    let policy: Vec<CompressionType> = config.compression.iter().map(codec).collect();
    if policy.is_empty() {
        vec![CompressionType::None]
    } else {
        policy
    }
}

/// The header's `Mapped as` line.
fn settings_line(config: &Config, sift: &siftdb::Options, given: &Given) -> String {
    let Given {
        bits,
        l0_trigger,
        write_buffer,
        ref compression,
    } = *given;
    let mmap_note = if config.mmap_read {
        " (fjall has no mmap: siftdb reads through mmap in this run; use --mmap_read=false \
         for equal reads)"
    } else {
        ", as siftdb and RocksDB in this run"
    };
    let open_files = match sift.max_open_files {
        -1 => "table files: fjall's default descriptor-table bound (fjall cannot keep every \
               file open; siftdb and RocksDB do in this run); max_manifest_file_size not \
               mapped (fjall has no such setting)"
            .to_string(),
        n => format!(
            "at most {} table files open (max_cached_files{}); max_manifest_file_size not \
             mapped (fjall has no such setting)",
            n.max(10),
            if n < 10 {
                ", fjall's minimum of 10"
            } else {
                ""
            }
        ),
    };
    format!(
        "bloom {bits} bits/key on every level (no ribbon, no Monkey); no prefix extractor; \
         {} block cache (fjall pins L0 filters, L0/L1 indexes); memtable {} ({}); leveled: L0 \
         trigger {l0_trigger}, target file {}, multiplier {}, L1 = target x trigger = {}; \
         {compression} (index blocks too); fjall's own index and filter partitioning \
         (--partition_index_and_filters not mapped); {} worker threads; multiread \
         workloads: a loop of gets per batch (fjall 3.1 has no multi-get: not a batched \
         call); reads with pread{mmap_note}; journal uncompressed (fjall's default compresses entries of \
         4 KiB and more); --sync: fdatasync of the journal (SyncData); \
         {open_files}",
        human_bytes(sift.block_cache_capacity as u64),
        human_bytes(write_buffer),
        peer_db_write_buffer_text(sift.db_write_buffer_size, sift.allow_stall),
        human_bytes(sift.target_file_size_base),
        sift.max_bytes_for_level_multiplier,
        human_bytes(sift.target_file_size_base * u64::from(l0_trigger)),
        1 + sift.compaction_threads(),
    )
}

/// The settings table's rows ([`super::super::settings::ROWS`]).
/// The "memtable" row: fjall's memtable size, and the four sealed memtables it keeps.
fn memtable_row(config: &Config, write_buffer: u64) -> String {
    format!(
        "{} (max_memtable_size) x5: fjall's own, writes halt at 4 sealed memtables (not \
         settable){}",
        human_bytes(write_buffer),
        if config.memtable_bloom_size_ratio > 0.0 {
            "; fjall has no memtable bloom"
        } else {
            ""
        }
    )
}

/// The "background work" row.
fn background_row(sift: &siftdb::Options) -> String {
    format!(
        "{} worker threads{}; compaction readahead: fjall's own (not mapped); outputs \
         cut at the target size (fjall has no grandparent alignment)",
        1 + sift.compaction_threads(),
        if sift.max_subcompactions > 1 {
            " (fjall has no subcompactions; --subcompactions not mapped)"
        } else {
            ""
        }
    )
}

fn settings_rows(config: &Config, sift: &siftdb::Options, given: &Given) -> SettingRows {
    let Given {
        bits,
        l0_trigger,
        write_buffer,
        ref compression,
    } = *given;
    vec![
        (
            "filters",
            format!(
                "bloom {bits} bits/key on every level (no ribbon, no Monkey{})",
                if config.optimize_filters_for_hits {
                    "; fjall cannot leave the bottom level unfiltered"
                } else {
                    ""
                }
            ),
        ),
        (
            "block cache",
            format!(
                "{}; fjall pins L0 filters, L0/L1 indexes",
                human_bytes(sift.block_cache_capacity as u64)
            ),
        ),
        ("prefix filter", "none (no prefix extractor)".to_string()),
        ("memtable", memtable_row(config, write_buffer)),
        (
            "tree shape",
            format!(
                "L0 trigger {l0_trigger}, target file {}, L1 = target x trigger = {}, \
                 multiplier {}, file order fjall's own",
                human_bytes(sift.target_file_size_base),
                human_bytes(sift.target_file_size_base * u64::from(l0_trigger)),
                sift.max_bytes_for_level_multiplier
            ),
        ),
        (
            "compression",
            format!(
                "{compression} (index blocks too){}",
                if sift.compression_parallel_threads > 1 {
                    "; blocks compressed where they are cut (fjall has no parallel compression: not mapped)"
                } else {
                    ""
                }
            ),
        ),
        ("blob files", blob_row(config)),
        ("table reads", "pread (fjall has no mmap)".to_string()),
        (
            "point lookups",
            settings::pin_slice_text(config, "get (a shared slice)", "get, copied"),
        ),
        (
            "sync (--sync)",
            settings::sync_text(config, "fdatasync of the journal (SyncData)"),
        ),
        (
            "writeback",
            "left to the OS (fjall has no bytes_per_sync: not mapped)".to_string(),
        ),
        ("L0 slowdown", "fjall's own write stalls".to_string()),
        ("statistics", "metrics feature counters".to_string()),
        ("background work", background_row(sift)),
        (
            "rate limiter",
            match sift.rate_limiter {
                Some(_) => {
                    "none (fjall has no rate limiter; --rate_limiter_bytes_per_sec not mapped)"
                }
                None => "none",
            }
            .to_string(),
        ),
        ("compaction style", compaction_style_text(sift)),
        (
            "transactions",
            settings::transactions_text(
                config,
                || {
                    "OptimisticTxDatabase: every read of a write transaction in its conflict \
                     set (serializable snapshot isolation)"
                        .to_string()
                },
                |_| "none (fjall has no pessimistic transactions: refused)".to_string(),
            ),
        ),
    ]
}

impl FjallEngine {
    /// One randomtransaction transaction in fjall's optimistic `WriteTransaction`: a read of
    /// each key (in its conflict set) and a write, then a commit (`Ok(false)`: a conflict).
    fn optimistic_transaction(
        &self,
        tx: &OptimisticTxDatabase,
        keys: &[(usize, &[u8])],
        fresh: &[u8],
    ) -> Result<bool> {
        let mode = self.sync.then_some(PersistMode::SyncData);
        let mut txn = tx.write_tx().map_err(fjall_error)?.durability(mode);
        for &(_, key) in keys {
            let old = txn.get(&self.keyspace, key).map_err(fjall_error)?;
            txn.insert(&self.keyspace, key, bumped(old.as_deref(), fresh));
        }
        Ok(txn.commit().map_err(fjall_error)?.is_ok())
    }
}

impl Engine for FjallEngine {
    fn read_modify_write_txn(
        &self,
        _txn: &TransactionConfig,
        keys: &[(usize, &[u8])],
        fresh: &[u8],
    ) -> Result<bool> {
        match &self.transactions {
            Some(tx) => self.optimistic_transaction(tx, keys, fresh),
            None => Err(Error::new(
                "fjall was not opened as a transaction database (--optimistic_transaction_db)",
            )),
        }
    }

    fn name(&self) -> &'static str {
        "fjall"
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
        self.keyspace.insert(key, value).map_err(fjall_error)?;
        self.persist()
    }

    fn can_bulk_load(&self) -> bool {
        true
    }

    fn bulk_loader<'a>(
        &'a self,
        _ks: usize,
        _staging: &Path,
        _file_bytes: u64,
    ) -> Result<Option<Box<dyn BulkLoader + 'a>>> {
        // fjall writes the tables of an ingestion itself (64 MiB each), into the tree.
        let ingestion = self.keyspace.start_ingestion().map_err(fjall_error)?;
        Ok(Some(Box::new(FjallLoader {
            ingestion,
            write: |i, key, value| i.write(key, value),
            finish: |i| i.finish(),
        })))
    }

    fn get(&self, _ks: usize, key: &[u8], buf: &mut Vec<u8>) -> Result<bool> {
        let value = self.keyspace.get(key).map_err(fjall_error)?;
        if self.pin_slice {
            return Ok(value.is_some());
        }
        match value {
            Some(value) => {
                buf.clear();
                buf.extend_from_slice(&value);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn multi_get(&self, _ks: usize, keys: &[&[u8]]) -> Result<u64> {
        // No batched lookup in fjall 3.1: one `get` per key (the header's mapping says so). The
        // values are reference-counted slices, dropped without a copy.
        let mut found = 0;
        for &key in keys {
            found += u64::from(self.keyspace.get(key).map_err(fjall_error)?.is_some());
        }
        Ok(found)
    }

    fn delete(&self, _ks: usize, key: &[u8]) -> Result<()> {
        self.keyspace.remove(key).map_err(fjall_error)?;
        self.persist()
    }

    fn write_batch(&self, ops: &[BatchOp<'_>]) -> Result<()> {
        let mut batch = self.db.batch();
        for op in ops {
            match *op {
                BatchOp::Put(_, key, value) => batch.insert(&self.keyspace, key, value),
                BatchOp::Delete(_, key) => batch.remove(&self.keyspace, key),
            }
        }
        batch.commit().map_err(fjall_error)?;
        self.persist()
    }

    fn seek_read(&self, _ks: usize, key: &[u8], nexts: usize) -> Result<SeekOutcome> {
        let mut outcome = SeekOutcome::default();
        for guard in self.keyspace.range(key..).take(nexts + 1) {
            let (k, _) = guard.into_inner().map_err(fjall_error)?;
            if outcome.entries == 0 {
                outcome.found = &*k == key;
            }
            outcome.entries += 1;
        }
        Ok(outcome)
    }

    fn range_count(&self, _ks: usize, start: &[u8], end: &[u8]) -> Result<u64> {
        let mut entries = 0;
        for guard in self.keyspace.range(start..end) {
            let kv = guard.into_inner().map_err(fjall_error)?;
            std::hint::black_box(&kv);
            entries += 1;
        }
        Ok(entries)
    }

    fn scan(&self, reverse: bool) -> Result<u64> {
        let mut entries = 0;
        let mut read = |guard: fjall::Guard| -> Result<()> {
            let kv = guard.into_inner().map_err(fjall_error)?;
            std::hint::black_box(&kv);
            entries += 1;
            Ok(())
        };
        if reverse {
            for guard in self.keyspace.iter().rev() {
                read(guard)?;
            }
        } else {
            for guard in self.keyspace.iter() {
                read(guard)?;
            }
        }
        Ok(entries)
    }

    fn prefix_scan(&self, prefix: &[u8]) -> Result<u64> {
        let mut entries = 0;
        for guard in self.keyspace.prefix(prefix) {
            guard.into_inner().map_err(fjall_error)?;
            entries += 1;
        }
        Ok(entries)
    }

    fn flush(&self) -> Result<()> {
        self.keyspace
            .rotate_memtable_and_wait()
            .map_err(fjall_error)?;
        self.wait_for_background();
        Ok(())
    }

    fn compact(&self) -> Result<()> {
        self.keyspace
            .rotate_memtable_and_wait()
            .map_err(fjall_error)?;
        self.keyspace.major_compact().map_err(fjall_error)?;
        self.wait_for_background();
        Ok(())
    }

    fn write_pressure(&self) -> WritePressure {
        // fjall does not estimate the bytes its compactions owe.
        WritePressure {
            l0_files: Some(self.keyspace.l0_table_count() as u64),
            pending_compaction_bytes: None,
        }
    }

    fn stats(&self) -> Option<Stats> {
        let m = self.keyspace.metrics();
        let queries = m.filter_queries() as u64;
        let skipped = m.io_skipped_by_filter() as u64;
        let data_loads = m.data_block_load_count() as u64;
        let data_cached = m.data_block_load_cached_count() as u64;
        let index_loads = m.index_block_load_count() as u64;
        let index_cached = m.index_block_load_cached_count() as u64;
        let filter_loads = m.filter_block_load_count() as u64;
        let filter_cached = m.filter_block_load_cached_count() as u64;
        let mut stats = Stats {
            // fjall counts filter queries and skipped reads for the whole tree: one row, and no
            // "true positive" counter (left 0, so the measured FPR is an upper bound).
            levels: vec![LevelFilterStats {
                checked: queries,
                useful: skipped,
                positive: queries.saturating_sub(skipped),
                true_positive: 0,
                data_block_accesses: data_loads,
                ..LevelFilterStats::default()
            }],
            data_block_reads: data_loads.saturating_sub(data_cached),
            index_block_reads: index_loads.saturating_sub(index_cached),
            filter_block_reads: filter_loads.saturating_sub(filter_cached),
            bytes_read: m.block_io(),
            ..Stats::default()
        };
        let kinds = [
            (BlockKind::Data, data_cached, data_loads),
            (BlockKind::Index, index_cached, index_loads),
            (BlockKind::Filter, filter_cached, filter_loads),
        ];
        for (kind, hits, loads) in kinds {
            let k = &mut stats.cache.per_kind[kind.index()];
            k.hits = hits;
            k.misses = loads.saturating_sub(hits);
        }
        Some(stats)
    }

    fn shape(&self) -> Option<String> {
        let mut out = String::from("level  files\n");
        for level in 0..LEVELS {
            let n = self.keyspace.tree.level_table_count(level).unwrap_or(0);
            if n > 0 {
                out.push_str(&format!("L{level:<5} {n:>5}\n"));
            }
        }
        out.push_str(&format!(
            "disk space {}\n",
            human_bytes(self.keyspace.disk_space())
        ));
        Some(out)
    }

    fn close(&self) -> Result<()> {
        self.db.persist(PersistMode::SyncAll).map_err(fjall_error)
    }
}

/// A bulk load into fjall: its ingestion API (sorted keys written straight into tables). The
/// crate does not export its ingestion type, so the loader is generic over it and calls it
/// through the two functions given.
struct FjallLoader<I> {
    ingestion: I,
    write: fn(&mut I, &[u8], &[u8]) -> fjall::Result<()>,
    finish: fn(I) -> fjall::Result<()>,
}

impl<I> BulkLoader for FjallLoader<I> {
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        (self.write)(&mut self.ingestion, key, value).map_err(fjall_error)
    }

    fn finish(self: Box<Self>) -> Result<()> {
        (self.finish)(self.ingestion).map_err(fjall_error)
    }
}
