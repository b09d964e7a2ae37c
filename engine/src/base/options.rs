//! Database options, named after RocksDB's where one exists.

use std::sync::Arc;

use siftdb_compaction::picker::CompactionPri;
use siftdb_filter::{FilterAllocation, FilterPolicy, KeyHasher};
use siftdb_sstable::{Compression, FixedPrefix, PrefixExtractor, ReadMode, TableBuildOptions};

use crate::base::compaction_style::{
    CompactionStyle, FifoCompactionOptions, UniversalCompactionOptions,
};
use crate::base::error::{Error, Result};
use crate::base::fs::{FileSystem, RealFs};
use crate::base::option_table::define_options;

/// Number of levels (L0..L6).
pub const MAX_LEVELS: usize = 7;

/// The largest [`Options::memtable_prefix_bloom_size_ratio`] accepted (RocksDB's bound).
pub const MAX_MEMTABLE_BLOOM_RATIO: f64 = 0.25;

/// The largest [`Options::filter_bits_per_key`] accepted (an FPR far below anything measurable;
/// more only costs memory).
pub const MAX_FILTER_BITS_PER_KEY: f64 = 64.0;

// The one declaration of every option: its documentation, whether `set_options` may change it
// on an open database (`live`) or not (`fixed`), its name, type and default. The keyspace part
// makes `KeyspaceOptions` and its text form too (`base::option_table` says what is generated).
define_options! {
    /// Options of a database. `Options::default()` is a sensible start. The fields are public and
    /// named after RocksDB's options of the same meaning (`write_buffer_size`,
    /// `level0_file_num_compaction_trigger`, `compression_per_level`, ...), so a RocksDB
    /// configuration maps field by field; set them with struct-update syntax or one by one.
    ///
    /// ```
    /// let mut options = siftdb::Options::default();
    /// options.write_buffer_size = 16 << 20;
    /// options.filter_bits_per_key = 12.0;
    /// options.prefix_extractor = Some(siftdb::FixedPrefix::shared(8));
    /// ```
    pub struct Options;
    /// Options of one keyspace's LSM tree: everything [`Options`] holds that shapes a tree (memtable,
    /// levels, filters, blocks, compression). The database-wide settings (block cache, file system,
    /// WAL, threads, filter hasher) stay in [`Options`], whose tree fields are the `"default"`
    /// keyspace's. `KeyspaceOptions::default()` equals the tree fields of `Options::default()`.
    ///
    /// ```
    /// use siftdb::{Compression, KeyspaceOptions};
    /// // A queue that is scanned more than probed: lean filters, small memtables, Zstd below L0.
    /// let queue = KeyspaceOptions {
    ///     filter_bits_per_key: 4.0,
    ///     write_buffer_size: 4 << 20,
    ///     compression_per_level: vec![Compression::None, Compression::Zstd],
    ///     ..KeyspaceOptions::default()
    /// };
    /// # let _ = queue;
    /// ```
    pub struct KeyspaceOptions;
    database {
        /// Create the database if the directory holds none.
        fixed create_if_missing: bool = true,
        /// Fail if a database already exists.
        fixed error_if_exists: bool = false,
        /// Background jobs, flushes and compactions together (RocksDB's name): one flush thread
        /// (memtables are flushed and installed oldest first, so flushes are never queued behind a
        /// compaction) and `max_background_jobs - 1` compaction threads, at least one. Default: the
        /// machine's cores, between 2 and 8 (see [`default_background_jobs`]).
        live max_background_jobs: usize = default_background_jobs(),
        /// Bytes per second writes go at while a keyspace they write is slowed down
        /// (`level0_slowdown_writes_trigger`; RocksDB's `delayed_write_rate`, 16 MiB/s by
        /// default as there): each write group waits its bytes' time at this rate before it is
        /// written, the writers queued behind it with it. 0: no slowdown.
        fixed delayed_write_rate: u64 = 16 << 20,
        /// Background compaction threads; 0 (the default) derives them from
        /// [`Options::max_background_jobs`], another value overrides it (as RocksDB's option of this
        /// name still does). Compactions run side by side when they share no input file and write
        /// disjoint key ranges; `compact_range` runs alone. [`Options::compaction_threads`] is the
        /// count in effect.
        live max_background_compactions: usize = 0,
        /// Key ranges one compaction may be split into, each merged on a thread of its own and
        /// all installed by one edit (RocksDB's name; default 1: no split). A job is split only
        /// into ranges of at least `target_file_size_base` input bytes. More ranges shorten a
        /// large compaction (an L0 → L1 one blocks the next flushes' compaction) on idle cores.
        fixed max_subcompactions: usize = 1,
        /// Bytes a compaction reads from an input table at once (RocksDB's name and default,
        /// 2 MiB): one `pread` per this many bytes instead of one per data block. Each block read
        /// ahead is still checked by its own checksum. 0: a read per block. A rebuild of the filter
        /// index reads the tables this way too.
        fixed compaction_readahead_size: usize = 2 << 20,
        /// A leveled compaction's output past three quarters of `target_file_size_base` ends where
        /// a table of the level below the output level ends, growing to five quarters of the
        /// target to reach one (RocksDB's name, on by default as there): compacted down later, an
        /// output cut so overlaps no table it holds no keys of (see `docs/TUNING.md`). `false`:
        /// outputs end at the target size.
        fixed level_compaction_dynamic_file_size: bool = true,
        /// Block cache capacity in bytes (of the database's own cache: unused when
        /// [`block_cache`](Options::block_cache) names a shared one).
        fixed block_cache_capacity: usize = 64 << 20,
        /// A block cache this database shares with others ([`BlockCache`](crate::BlockCache)):
        /// `None` (the default) gives the database a cache of its own, of `block_cache_capacity`
        /// bytes and `block_cache_admission`. With one, [`Db::stats`](crate::Db::stats)' cache
        /// figures are the shared cache's, every database's blocks counted.
        fixed block_cache: Option<crate::base::block_cache::BlockCache> = None,
        /// Which data blocks the block cache lets in once full ([`CacheAdmission`]): with
        /// `SecondSighting` (the default) a data block enters on its second read within a window
        /// of recent misses, so a scan larger than the cache does not push out what lookups keep
        /// reading; `All` is a plain LRU. Filter and index blocks always enter. See
        /// `docs/TUNING.md`.
        ///
        /// [`CacheAdmission`]: crate::CacheAdmission
        fixed block_cache_admission: siftdb_cache::Admission = siftdb_cache::Admission::SecondSighting,
        /// Bytes of the memo of hot false positives, shared by all keyspaces (0: off). A lookup
        /// whose filter says "maybe" for a table that then turns out not to hold the key remembers
        /// (table, key), so the next lookup of that key skips the table's index and data blocks;
        /// entries leave with their table and under memory pressure (LRU). Only filter "maybe"s
        /// consult it, so lookups the filters answer pay nothing. See `docs/TUNING.md`.
        fixed false_positive_memo_bytes: usize = DEFAULT_FALSE_POSITIVE_MEMO_BYTES,
        /// Bits per key of the tree-wide filter index: one blocked bloom filter over the keys of all
        /// of a keyspace's tables, probed before any table's own filter, so a key no table holds
        /// costs one cache line whatever the depth. Sized for twice the tree's entries when it is
        /// (re)built in the background, so it takes about `2 × this` bits per entry; charged to the
        /// block cache. `0` keeps no index. See `docs/TUNING.md`.
        fixed filter_index_bits_per_key: f64 = 10.0,
        /// Hash of keys for filters (seeded xxh3 by default; keyed SipHash for adversarial keys).
        /// Recorded in every filter block; a reader with another hasher refuses the block.
        fixed filter_hasher: KeyHasher = KeyHasher::default(),
        /// Refuse to open a database whose WAL is damaged before its tail (instead of recovering
        /// up to the damage).
        fixed paranoid_checks: bool = true,
        /// How table files are read: `pread` per block-cache miss (the default, as RocksDB's
        /// `allow_mmap_reads = false`), or through a memory map (`ReadMode::Mmap`: no system call
        /// per miss, ~10-15 % faster point reads that miss the cache on a large tree, but every
        /// page a read touches stays in the process's resident set while its table lives; a tree
        /// read at random ends up resident whole). Compactions read around the map either way.
        /// `docs/TUNING.md` ("Reading tables: pread or mmap") has the measurements.
        fixed read_mode: ReadMode = ReadMode::Pread,
        /// Threads compressing a table's data blocks beside the thread that builds it (RocksDB's
        /// `CompressionOptions::parallel_threads`): flushes, compactions and `SstFileWriter` hand
        /// each block to one of that many workers and go on with the next keys, and (above 1) one
        /// more worker builds a partitioned filter's partitions as their blocks are cut; the
        /// tables' bytes are the same. 1 (the default) does both where the table is built. Worth it where
        /// compression is most of a table build's time (a bulk load of LZ4 or Zstandard tables)
        /// and a core is free. See `docs/TUNING.md`.
        fixed compression_parallel_threads: usize = 1,
        /// The file system all I/O goes through.
        fixed fs: Arc<dyn FileSystem> = Arc::new(RealFs),
        /// Options for named keyspaces at open, overriding what was recorded when each was created
        /// (RocksDB's column family descriptors). A keyspace not named here opens with its recorded
        /// options; name one here to change its tuning or to give it a prefix extractor that cannot
        /// be rebuilt from its name. `"default"` takes the tree fields of these `Options` instead.
        fixed keyspaces: Vec<(String, crate::KeyspaceOptions)> = Vec::new(),
        /// With several keyspaces, the WAL bytes kept before the memtables that hold the oldest WAL
        /// are flushed so that it can be deleted (RocksDB's `max_total_wal_size`): a keyspace written
        /// rarely would otherwise keep every WAL since its last flush. 0: four times the memtable
        /// memory of all keyspaces (`write_buffer_size · max_write_buffer_number` each).
        fixed max_total_wal_size: u64 = 0,
        /// Memtable memory of all keyspaces together (RocksDB's `db_write_buffer_size`): above it,
        /// the largest active memtable is switched and flushed, so that several keyspaces, each
        /// allowed `write_buffer_size`, stay within one budget. 0: no shared budget (each keyspace
        /// is bounded by its own `write_buffer_size · max_write_buffer_number`).
        fixed db_write_buffer_size: usize = 0,
        /// Writers wait while the memtables of all keyspaces together — frozen ones waiting for
        /// flush included — hold `db_write_buffer_size`, until flushes free memory (RocksDB's
        /// `WriteBufferManager` with `allow_stall`; counted in `Stats::stall_micros`). `true` by
        /// default, so that the budget bounds memory; RocksDB's default is `false`, where the
        /// budget only triggers flushes and memory can pass it while they fall behind.
        fixed allow_stall: bool = true,
        /// Table files open at once, database-wide (RocksDB's and LevelDB's `max_open_files`): a
        /// table cache keeps the most recently read ones open and closes others to stay within
        /// it, opening a table again when a read needs a block the block cache does not hold.
        /// Filters, indexes and data blocks stay in the block cache either way, so a lookup whose
        /// blocks are cached costs the same. `-1`: every live table stays open (one descriptor —
        /// and in `ReadMode::Mmap` one mapping — per table). Counted in `Stats::table_cache_*`.
        fixed max_open_files: i32 = 1000,
        /// The manifest is started afresh, with a snapshot of every keyspace's version, once it
        /// grows past this many bytes (RocksDB's `max_manifest_file_size`): a database that is
        /// never reopened would otherwise keep every edit it ever made, and its next open replay
        /// them all.
        fixed max_manifest_file_size: u64 = 64 << 20,
        /// Asked about values as compactions rewrite them: keep, remove or change (see
        /// [`CompactionFilter`](crate::CompactionFilter)). Applies to every keyspace.
        fixed compaction_filter: Option<Arc<dyn crate::CompactionFilter>> = None,
        /// Combines the operands [`Db::merge`](crate::Db::merge) stores with the values they apply
        /// to (see [`MergeOperator`](crate::MergeOperator); ready ones in [`crate::base::merge`]). Applies
        /// to every keyspace; `merge` without one is [`Error::InvalidArgument`]. Its name is
        /// recorded in `OPTIONS`: a database holding operands refuses to open under another.
        fixed merge_operator: Option<Arc<dyn crate::MergeOperator>> = None,
        /// Told of flushes, compactions, table files, background errors, write stalls and sealed
        /// memtables (see [`EventListener`](crate::EventListener)), on a thread of their own, in
        /// order. Empty by default.
        fixed listeners: Vec<Arc<dyn crate::EventListener>> = Vec::new(),
        /// The clock expiring values (`Db::put_with_ttl`) are written and judged by
        /// ([`SystemClock`](crate::SystemClock) by default; tests move one by hand).
        fixed clock: Arc<dyn crate::Clock> = Arc::new(crate::SystemClock),
        /// Paces the bytes flushes and compactions write (RocksDB's `rate_limiter`; see
        /// [`RateLimiter`](crate::RateLimiter)): flushes first, compactions one refill in
        /// `fairness`. `None` (the default): background writes go as fast as the disk takes them.
        /// Share one limiter between databases to cap them together. WAL and manifest writes are
        /// never paced (a user's write waits on them).
        fixed rate_limiter: Option<Arc<crate::RateLimiter>> = None,
        /// Every this many bytes a flush or compaction writes to a table or blob file, the OS is
        /// asked to start writing them to storage (RocksDB's `bytes_per_sync`, with
        /// `sync_file_range` on Linux; a hint elsewhere ignored). The sync that ends each file then
        /// waits for its last stretch only, and the disk is not left idle until it: with 4 KiB
        /// values in blob files, a fill's stalls on memtables waiting for their flush fell from
        /// 10 s to 1 s (`docs/TUNING.md`). Durability does not change: it comes from that sync. 0:
        /// writeback is left to the OS. Default 1 MiB.
        fixed bytes_per_sync: u64 = 1 << 20,
        /// As `bytes_per_sync`, for the WAL (RocksDB's `wal_bytes_per_sync`), started by the
        /// writer that appends to it. Without it, the WAL's pages wait for the OS's own writeback,
        /// which then competes with the flush's sync in bursts (a fill of 4 KiB values: 85,000
        /// ops/s without, 120,000 with). 0: left to the OS. Default 1 MiB.
        fixed wal_bytes_per_sync: u64 = 1 << 20,
        /// How often the publisher thread records the database's statistics through the `metrics`
        /// crate (cargo feature `metrics`; see [`Db::publish_metrics`](crate::Db) and
        /// `docs/METRICS.md`). `None`: no thread, figures are published only when the application
        /// calls `publish_metrics`. Default: every second with the feature, `None` without it (the
        /// field is ignored then). Read-only opens start no publisher.
        fixed metrics_interval: Option<std::time::Duration> = if cfg!(feature = "metrics") {
                    Some(std::time::Duration::from_secs(1))
                } else {
                    None
                },
    }
    keyspace {
        /// Bytes of memtable before it is frozen and flushed to L0.
        live write_buffer_size: usize = 64 << 20,
        /// Memtables in memory at most (the active one plus immutable ones waiting for flush);
        /// writers stall beyond that.
        live max_write_buffer_number: usize = 2,
        /// L0 file count that triggers an L0 → L1 compaction.
        live level0_file_num_compaction_trigger: usize = 4,
        /// L0 file count from which writes are slowed down to `delayed_write_rate` (RocksDB's
        /// option of this name and default), so that compactions out of L0 catch up before
        /// writes must stop at `level0_stop_writes_trigger` (at or above it: no slowdown stage).
        /// Below `level0_file_num_compaction_trigger` it counts as that (no write is slowed
        /// before a compaction can end it). Not applied with `disable_auto_compactions` or FIFO
        /// compaction. Counted in `Stats::stall_micros_l0_slowdown`.
        live level0_slowdown_writes_trigger: usize = 20,
        /// L0 file count at which writes stop until compaction catches up.
        live level0_stop_writes_trigger: usize = 36,
        /// No background compaction of the keyspace's tree (RocksDB's option of this name; usually
        /// set for a bulk load and cleared after it with [`Db::set_options`](crate::Db::set_options)).
        /// `compact_range` still compacts. Writes still stop at `level0_stop_writes_trigger` L0
        /// tables. Default `false`.
        live disable_auto_compactions: bool = false,
        /// Target size of a compaction output table.
        live target_file_size_base: u64 = 64 << 20,
        /// Target size of L1.
        live max_bytes_for_level_base: u64 = 256 << 20,
        /// Growth factor of level target sizes.
        live max_bytes_for_level_multiplier: f64 = 10.0,
        /// Which file of an oversized level a compaction moves down first (RocksDB's option of
        /// this name): the one that rewrites the fewest bytes of the next level per byte moved
        /// (the default, as RocksDB's), or round robin over the key space.
        fixed compaction_pri: CompactionPri = CompactionPri::MinOverlappingRatio,
        /// How the tree compacts (RocksDB's option of this name): leveled (the default), universal
        /// (size-tiered) or FIFO. See [`CompactionStyle`] and `docs/TUNING.md`.
        fixed compaction_style: CompactionStyle = CompactionStyle::Level,
        /// Settings of universal compaction (RocksDB's option of this name).
        fixed compaction_options_universal: UniversalCompactionOptions = UniversalCompactionOptions::default(),
        /// Settings of FIFO compaction (RocksDB's option of this name, with its `ttl`).
        fixed compaction_options_fifo: FifoCompactionOptions = FifoCompactionOptions::default(),
        /// Target size of a data block.
        fixed block_size: usize = 4096,
        /// Entries between restart points in data blocks.
        fixed block_restart_interval: usize = 16,
        /// Keep L0 tables' filter and index blocks pinned in the cache.
        fixed pin_l0_filter_and_index_blocks_in_cache: bool = true,
        /// Average filter bits per key over the tree. `0` writes no whole-key filter at all (the
        /// articles' advice for tables that are only scanned): lookups go straight to a table's
        /// index, and each table records why it has none (`filter_omitted`).
        live filter_bits_per_key: f64 = 10.0,
        /// Write no whole-key filter on the bottom level (RocksDB's option of the same name): for
        /// workloads whose lookups almost always find their key, where the bottom filter (about
        /// 90 % of filter memory) only costs, since a present key's lookup reaches the bottom level
        /// anyway. Monkey then splits the budget (bits per key of the levels that keep filters)
        /// over the upper levels only. Flushes to L0 keep their filters (except a sequential
        /// load's, headed for the bottom unchanged); a table with a filter is rewritten, not moved,
        /// into the bottom level. The bottom is the deepest level that holds tables: when the tree
        /// grows a level, the old bottom's unfiltered tables stay so until compacted down. Tables
        /// written without a filter record why (`filter_omitted`), shown in `siftdb.levels`.
        live optimize_filters_for_hits: bool = false,
        /// A bloom filter in each memtable over its keys' prefixes (RocksDB's option of the same
        /// name), asked by `get` and `prefix_iter` before the skiplist: a lookup of a key the
        /// memtable lacks skips the skiplist search. The ratio (0 to 0.25; 0, the default, is off)
        /// caps the filter's memory as a fraction of `write_buffer_size`; the filter is a scalable
        /// bloom (it grows with the memtable's keys, FPR under 1 %, until the cap) and its memory
        /// is charged to the memtable. Holds prefixes by `prefix_extractor`, and whole keys with
        /// `memtable_whole_key_filtering` or without an extractor. See `docs/TUNING.md`.
        fixed memtable_prefix_bloom_size_ratio: f64 = 0.0,
        /// Put whole keys in the memtable bloom too (RocksDB's option of the same name), for
        /// point lookups; implied without a prefix extractor.
        fixed memtable_whole_key_filtering: bool = false,
        /// Levels below this use blocked bloom filters; this level and deeper use ribbon.
        live bloom_before_level: usize = 2,
        /// How filter memory is split across levels.
        fixed filter_allocation: FilterAllocation = FilterAllocation::Monkey,
        /// The filter kind of the levels from `bloom_before_level` on: [`FilterKind::Ribbon`]
        /// (default; ~30 % smaller than a bloom filter at equal FPR) or [`FilterKind::BinaryFuse`]
        /// (faster queries and builds; 8- or 16-bit fingerprints, so about 9 or 18 bits/key, which
        /// Monkey plans in those steps). `BlockedBloom` is allowed too.
        ///
        /// [`FilterKind::Ribbon`]: crate::FilterKind::Ribbon
        /// [`FilterKind::BinaryFuse`]: crate::FilterKind::BinaryFuse
        fixed deep_filter_kind: siftdb_filter::FilterKind = siftdb_filter::FilterKind::Ribbon,
        /// Bits per key of each table's range filter (0: none, the default). A range filter
        /// (Grafite, over an order-preserving image of the table's keys) answers "does this table
        /// hold any key in `[a, b)`?", so a range scan over an empty stretch of keys can skip the
        /// table's index and data blocks. FPR for a range of `w` key positions ≈ `w / 2^(bits-2)`.
        /// Tables keep the range filter they were written with. See `docs/TUNING.md`.
        fixed range_filter_bits_per_key: f64 = 0.0,
        /// With an extractor, every table carries a prefix filter consulted by `prefix_iter`.
        /// A keyspace records it by name: a `fixed:N` extractor is rebuilt at the next open;
        /// another kind must be given again through `Options::keyspaces`.
        fixed prefix_extractor: Option<Arc<dyn PrefixExtractor>> = None,
        /// Codec of the data blocks of every level `compression_per_level` does not name (RocksDB's
        /// `compression`). A block is stored compressed only where that saves an eighth of it;
        /// the block cache holds blocks uncompressed.
        live compression: Compression = Compression::Lz4,
        /// Codec per level (index = level; the last entry holds for every deeper level), RocksDB's
        /// `compression_per_level`; empty: `compression` everywhere. The default leaves L0 and L1
        /// uncompressed and compresses from L2 on with LZ4 (see `docs/TUNING.md`).
        live compression_per_level: Vec<Compression> = vec![Compression::None, Compression::None, Compression::Lz4],
        /// Compress index blocks too (RocksDB's `enable_index_compression`). Filter blocks never are.
        fixed compress_index: bool = true,
        /// A table whose index or whole-key filter would be larger than this (bytes) gets both
        /// partitioned (RocksDB's partitioned index + `partition_filters`): small top levels the
        /// table holds, and partitions of about `metadata_block_size` that go through the block
        /// cache, so a lookup reads one filter partition and one index partition instead of loading
        /// the whole filter and index. `None`: never.
        fixed partition_above: Option<usize> = Some(siftdb_sstable::DEFAULT_PARTITION_ABOVE),
        /// Target size of an index partition (RocksDB's `metadata_block_size`).
        fixed metadata_block_size: usize = 4096,
        /// Key-value separation (RocksDB's integrated BlobDB `enable_blob_files`): flushes write
        /// values of at least `min_blob_size` bytes to blob files, and tables keep a small blob
        /// index in their place, so compactions move keys and references instead of the values.
        /// Reads fetch a value from its blob file (through the block cache) only once its key is
        /// found. See `docs/TUNING.md` ("Blob files").
        live enable_blob_files: bool = false,
        /// Values of at least this many bytes go to blob files when `enable_blob_files` is on
        /// (RocksDB's `min_blob_size`; 0: every value).
        live min_blob_size: usize = 0,
        /// A blob file is cut once it holds about this many bytes (RocksDB's `blob_file_size`).
        live blob_file_size: u64 = 256 << 20,
        /// Codec of the values in blob files (RocksDB's `blob_compression_type`), each value
        /// compressed alone and stored compressed only where that saves bytes.
        live blob_compression_type: Compression = Compression::None,
        /// Compactions relocate the live values of the oldest blob files into new ones, so that
        /// files holding mostly overwritten values can go (RocksDB's
        /// `enable_blob_garbage_collection`).
        live enable_blob_garbage_collection: bool = false,
        /// The share of blob files, oldest first, whose values compactions relocate when garbage
        /// collection is on (RocksDB's `blob_garbage_collection_age_cutoff`, 0 to 1).
        live blob_garbage_collection_age_cutoff: f64 = 0.25,
        /// A blob file is collected only once at least this share of its bytes is garbage
        /// (fjall's `staleness_threshold`, Titan's `blob_file_discardable_ratio`; RocksDB has no
        /// such bound and collects every file within the age cutoff). Relocating a file moves its
        /// live bytes to free all of it: at 0.5 (the default, Titan's), collection never moves
        /// more bytes than it frees; at 0, a file with one overwritten value has all its others
        /// moved. A file below the ratio holds at most twice its live bytes at 0.5. 0 to 1; the age
        /// cutoff counts only the files at or above it.
        fixed blob_garbage_collection_min_garbage_ratio: f64 = 0.5,
        /// Among those oldest files, once the ones a compaction could rewrite hold at least this
        /// share of garbage, a compaction is scheduled for them (RocksDB's
        /// `blob_garbage_collection_force_threshold`, 0 to 1; 1: never forced).
        live blob_garbage_collection_force_threshold: f64 = 1.0,
    }
}

/// The most threads [`Options::compression_parallel_threads`] may ask for.
const MAX_COMPRESSION_THREADS: usize = 64;

/// The default of [`Options::false_positive_memo_bytes`]: 256 KiB, about 2,500 remembered false
/// positives of 24-byte keys.
pub const DEFAULT_FALSE_POSITIVE_MEMO_BYTES: usize = 256 << 10;

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("write_buffer_size", &self.write_buffer_size)
            .field("max_write_buffer_number", &self.max_write_buffer_number)
            .field("block_cache_capacity", &self.block_cache_capacity)
            .field("block_cache_admission", &self.block_cache_admission)
            .field("block_cache", &self.block_cache)
            .field("false_positive_memo_bytes", &self.false_positive_memo_bytes)
            .field("filter_bits_per_key", &self.filter_bits_per_key)
            .field("optimize_filters_for_hits", &self.optimize_filters_for_hits)
            .field(
                "memtable_prefix_bloom_size_ratio",
                &self.memtable_prefix_bloom_size_ratio,
            )
            .field(
                "memtable_whole_key_filtering",
                &self.memtable_whole_key_filtering,
            )
            .field("bloom_before_level", &self.bloom_before_level)
            .field(
                "compression_parallel_threads",
                &self.compression_parallel_threads,
            )
            .field("filter_allocation", &self.filter_allocation)
            .field(
                "prefix_extractor",
                &self.prefix_extractor.as_ref().map(|p| p.name()),
            )
            .field(
                "compaction_filter",
                &self
                    .compaction_filter
                    .as_ref()
                    .map(|f| f.name().to_string()),
            )
            .field(
                "merge_operator",
                &self.merge_operator.as_ref().map(|m| m.name().to_string()),
            )
            .field("listeners", &self.listeners.len())
            .field(
                "rate_limiter",
                &self.rate_limiter.as_ref().map(|r| r.bytes_per_second()),
            )
            .field("bytes_per_sync", &self.bytes_per_sync)
            .field("wal_bytes_per_sync", &self.wal_bytes_per_sync)
            .finish_non_exhaustive()
    }
}

/// The default of [`Options::max_background_jobs`]: the cores this process may use
/// (`std::thread::available_parallelism`), at least 2 (a flush thread and a compaction
/// thread) and at most 8 (beyond that, compactions mostly wait on the disk).
pub fn default_background_jobs() -> usize {
    std::thread::available_parallelism()
        .map_or(2, std::num::NonZeroUsize::get)
        .clamp(2, 8)
}

impl Options {
    /// Background compaction threads in effect: [`Options::max_background_compactions`] if set,
    /// else `max_background_jobs - 1`, at least one.
    ///
    /// ```
    /// let options = siftdb::Options { max_background_jobs: 4, ..Default::default() };
    /// assert_eq!(options.compaction_threads(), 3);
    /// let options = siftdb::Options { max_background_compactions: 2, ..options };
    /// assert_eq!(options.compaction_threads(), 2);
    /// ```
    pub fn compaction_threads(&self) -> usize {
        match self.max_background_compactions {
            0 => self.max_background_jobs.saturating_sub(1).max(1),
            n => n,
        }
    }

    /// The filter policy these options describe.
    pub(crate) fn filter_policy(&self) -> FilterPolicy {
        FilterPolicy {
            bits_per_key: self.filter_bits_per_key,
            bloom_before_level: self.bloom_before_level,
            allocation: self.filter_allocation,
            deep_kind: self.deep_filter_kind,
        }
    }

    /// Checks that every setting can work; [`Db::open`](crate::Db::open) calls it first. A value
    /// that cannot is an [`Error::InvalidArgument`] naming the field (instead of being clamped
    /// silently to something that can).
    ///
    /// ```
    /// let mut options = siftdb::Options::default();
    /// options.max_write_buffer_number = 1; // no room to write while a memtable is flushed
    /// let err = options.validate().unwrap_err();
    /// assert!(err.to_string().contains("max_write_buffer_number"), "{err}");
    /// ```
    pub fn validate(&self) -> Result<()> {
        let invalid =
            |field: &str, why: &str| Err(Error::InvalidArgument(format!("Options::{field} {why}")));
        if self.max_open_files == 0 || self.max_open_files < -1 {
            return invalid(
                "max_open_files",
                "must be at least 1, or -1 to keep every table open",
            );
        }
        if self.max_manifest_file_size == 0 {
            return invalid("max_manifest_file_size", "must be at least 1 byte");
        }
        if !(1..=MAX_COMPRESSION_THREADS).contains(&self.compression_parallel_threads) {
            return invalid("compression_parallel_threads", "must be from 1 to 64");
        }
        if self.write_buffer_size == 0 {
            return invalid("write_buffer_size", "must be at least 1 byte");
        }
        if self.max_write_buffer_number < 2 {
            return invalid(
                "max_write_buffer_number",
                "must be at least 2 (the active memtable and one being flushed)",
            );
        }
        if self.level0_file_num_compaction_trigger == 0 {
            return invalid("level0_file_num_compaction_trigger", "must be at least 1");
        }
        if self.level0_stop_writes_trigger < self.level0_file_num_compaction_trigger {
            return invalid(
                "level0_stop_writes_trigger",
                "must be at least level0_file_num_compaction_trigger (writes would stop before any compaction starts)",
            );
        }
        if self.max_background_jobs == 0 {
            return invalid("max_background_jobs", "must be at least 1");
        }
        if self.max_subcompactions == 0 {
            return invalid("max_subcompactions", "must be at least 1 (1: no split)");
        }
        if self.target_file_size_base == 0 {
            return invalid("target_file_size_base", "must be at least 1 byte");
        }
        if self.max_bytes_for_level_base == 0 {
            return invalid("max_bytes_for_level_base", "must be at least 1 byte");
        }
        let multiplier = self.max_bytes_for_level_multiplier;
        if !multiplier.is_finite() || multiplier <= 1.0 {
            return invalid(
                "max_bytes_for_level_multiplier",
                "must be a finite number above 1 (levels must grow)",
            );
        }
        crate::base::compaction_style::validate(
            &self.compaction_options_universal,
            &self.compaction_options_fifo,
        )?;
        if self.block_size == 0 {
            return invalid("block_size", "must be at least 1 byte");
        }
        if self.block_restart_interval == 0 {
            return invalid("block_restart_interval", "must be at least 1");
        }
        if self.metadata_block_size == 0 {
            return invalid("metadata_block_size", "must be at least 1 byte");
        }
        self.validate_blob_files()?;
        self.validate_filters()?;
        for (name, ks) in &self.keyspaces {
            crate::base::keyspace_options::validate_name(name)?;
            if name == crate::base::keyspace_options::DEFAULT_KEYSPACE {
                return invalid(
                    "keyspaces",
                    "must not name \"default\" (its options are the tree fields of Options)",
                );
            }
            ks.apply_to(self).validate().map_err(|e| {
                Error::InvalidArgument(format!("options of keyspace {name:?}: {e}"))
            })?;
        }
        Ok(())
    }

    /// [`Options::validate`] for the blob files' settings.
    fn validate_blob_files(&self) -> Result<()> {
        let invalid =
            |field: &str, why: &str| Err(Error::InvalidArgument(format!("Options::{field} {why}")));
        if self.blob_file_size == 0 {
            return invalid("blob_file_size", "must be at least 1 byte");
        }
        let shares = [
            (
                "blob_garbage_collection_age_cutoff",
                self.blob_garbage_collection_age_cutoff,
            ),
            (
                "blob_garbage_collection_min_garbage_ratio",
                self.blob_garbage_collection_min_garbage_ratio,
            ),
            (
                "blob_garbage_collection_force_threshold",
                self.blob_garbage_collection_force_threshold,
            ),
        ];
        for (name, share) in shares {
            if !(0.0..=1.0).contains(&share) {
                return invalid(name, "must be between 0 and 1");
            }
        }
        Ok(())
    }

    /// [`Options::validate`] for the filters' and the memtable bloom's settings.
    fn validate_filters(&self) -> Result<()> {
        let invalid =
            |field: &str, why: &str| Err(Error::InvalidArgument(format!("Options::{field} {why}")));
        let bits = self.filter_bits_per_key;
        if !bits.is_finite() || !(0.0..=MAX_FILTER_BITS_PER_KEY).contains(&bits) {
            return invalid(
                "filter_bits_per_key",
                &format!("must be a number from 0 to {MAX_FILTER_BITS_PER_KEY}"),
            );
        }
        let ratio = self.memtable_prefix_bloom_size_ratio;
        if !ratio.is_finite() || !(0.0..=MAX_MEMTABLE_BLOOM_RATIO).contains(&ratio) {
            return invalid(
                "memtable_prefix_bloom_size_ratio",
                &format!("must be a number from 0 (off) to {MAX_MEMTABLE_BLOOM_RATIO}"),
            );
        }
        let bits = self.range_filter_bits_per_key;
        if !bits.is_finite() || !(bits == 0.0 || (3.0..=64.0).contains(&bits)) {
            return invalid(
                "range_filter_bits_per_key",
                "must be 0 (no range filter) or a number from 3 to 64",
            );
        }
        let bits = self.filter_index_bits_per_key;
        if !bits.is_finite() || !(bits == 0.0 || (1.0..=32.0).contains(&bits)) {
            return invalid(
                "filter_index_bits_per_key",
                "must be 0 (no filter index) or a number from 1 to 32",
            );
        }
        Ok(())
    }

    /// The compaction picker's settings for a tree with these options.
    pub(crate) fn picker_config(&self) -> siftdb_compaction::picker::PickerConfig {
        siftdb_compaction::picker::PickerConfig {
            l0_trigger: self.level0_file_num_compaction_trigger,
            base_level_bytes: self.max_bytes_for_level_base,
            multiplier: self.max_bytes_for_level_multiplier,
            compaction_pri: self.compaction_pri,
            // One target table's worth: an L0 table larger than that is better merged down.
            intra_l0_max_bytes: self.target_file_size_base,
        }
    }

    /// The codec of data blocks written to `level`.
    pub fn compression_for_level(&self, level: usize) -> Compression {
        match self.compression_per_level.as_slice() {
            [] => self.compression,
            per_level => per_level[level.min(per_level.len() - 1)],
        }
    }

    /// How a table headed for `level` (the level its filter and codec are planned for) is
    /// written, with the whole-key filter `filter`.
    pub(crate) fn table_build_options(
        &self,
        level: usize,
        filter: TableFilter,
    ) -> TableBuildOptions {
        TableBuildOptions {
            block_size: self.block_size,
            block_restart_interval: self.block_restart_interval,
            filter: filter.spec,
            filter_omitted: filter.omitted,
            key_hasher: self.filter_hasher,
            prefix_extractor: self.prefix_extractor.clone(),
            compression: self.compression_for_level(level),
            compress_index: self.compress_index,
            compression_threads: self.compression_parallel_threads,
            partition_above: self.partition_above,
            metadata_block_size: self.metadata_block_size,
            // L0 tables are pinned: a pinned whole filter answers without choosing a partition
            // (their index is still partitioned when large).
            partition_filters: level > 0 || !self.pin_l0_filter_and_index_blocks_in_cache,
            range_filter_bits_per_key: self.range_filter_bits_per_key,
            creation_time: crate::base::ttl::millis(self.clock.now()) / 1000,
        }
    }

    /// Shorthand for a fixed-length prefix extractor.
    pub fn with_fixed_prefix(mut self, len: usize) -> Self {
        self.prefix_extractor = Some(FixedPrefix::shared(len));
        self
    }
}

/// Options of one read ([`Readable::get_opt`](crate::Readable::get_opt),
/// [`Readable::iter_opt`](crate::Readable::iter_opt)).
/// More fields may come; build it with `..ReadOptions::default()`.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let db = siftdb::Db::open(dir.path(), siftdb::Options::default())?;
/// // A one-off full scan that must not push the service's working set out of the cache.
/// let scan = siftdb::ReadOptions { fill_cache: false, ..Default::default() };
/// let entries = db.iter_opt(&scan).count();
/// # assert_eq!(entries, 0);
/// # Ok::<(), siftdb::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct ReadOptions {
    /// Insert the blocks read from table files into the block cache (default `true`). With
    /// `false`, blocks already cached are used (without counting a lookup or making them more
    /// recent) and others are read and dropped: the path compactions read through.
    pub fill_cache: bool,
    /// Iterators keep to keys `≥` this (RocksDB's `iterate_lower_bound`; default none). With
    /// [`ReadOptions::iterate_upper_bound`], a seek asks each table's range filter whether it
    /// holds a key between the seek target and the bound, and reads no block of one that does
    /// not.
    pub iterate_lower_bound: Option<Vec<u8>>,
    /// Iterators keep to keys `<` this (RocksDB's `iterate_upper_bound`; default none): a
    /// forward walk stops at it without reading further, and a forward seek skips tables whose
    /// range filter rules out the keys between the target and the bound.
    pub iterate_upper_bound: Option<Vec<u8>>,
    /// Bytes an iterator reads from a table file at once when a data block it needs is not
    /// cached (RocksDB's `readahead_size`); the blocks read ahead enter the block cache as the
    /// iterator reaches them, each checked by itself. 0 (the default): automatic, as RocksDB's
    /// iterators — after two data blocks read in a row from one table, it reads ahead 8 KiB,
    /// doubling with each read up to 256 KiB, until it seeks elsewhere. Point lookups never
    /// read ahead. With `fill_cache: false` iterators read block by block.
    pub readahead_size: usize,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            fill_cache: true,
            iterate_lower_bound: None,
            iterate_upper_bound: None,
            readahead_size: 0,
        }
    }
}

/// Options of one write.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// Sync the WAL before acknowledging (survives power loss). Without it a write survives a
    /// process crash (it is in the operating system's page cache) but not power loss.
    pub sync: bool,
}

/// The whole-key filter a new table gets: a spec, or none and why.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct TableFilter {
    /// `None`: no filter (see `filter_plan::filter_for`).
    pub spec: Option<siftdb_sstable::FilterSpec>,
    /// Why `spec` is `None` when the options chose so (`filter_plan::DISABLED` or `BOTTOM_FOR_HITS`),
    /// recorded as the table's `filter_omitted` property; empty otherwise.
    pub omitted: &'static str,
}
