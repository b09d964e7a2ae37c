//! Command-line flags, named after RocksDB's `db_bench` (`--key_size`, `--bloom_bits`, ...), and
//! their resolution into a checked [`Config`].

use std::path::PathBuf;

use clap::builder::BoolishValueParser;
use clap::{ArgAction, Parser, ValueEnum};

use super::error::{Error, Result};
use super::keys::{KeyFormat, KeyShape};

/// The workloads, named as in `db_bench`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Benchmark {
    /// Write `--num` keys in key order.
    FillSeq,
    /// Write `--num` keys in a random order (each key exactly once).
    FillRandom,
    /// Load `--num` keys in key order through external table files, ingested at the end
    /// (siftdb's `SstFileWriter` and `ingest_external_file`, RocksDB's the same; fjall's
    /// ingestion API): files cut at `target_file_size_base`, moved in.
    BulkLoad,
    /// Overwrite `--num` random keys (with repeats, as `db_bench`).
    Overwrite,
    /// Read `--reads` random keys of the written range.
    ReadRandom,
    /// Read `--reads` keys of the same range and shape that were never written.
    ReadMissing,
    /// Read `--reads` random keys of the written range, `--batch_size` per batched lookup
    /// (`multi_get`, RocksDB's `MultiGet`): `db_bench`'s `multireadrandom`.
    MultiReadRandom,
    /// `multireadrandom` with never-written keys: the batched counterpart of `readmissing`
    /// (siftdb's own; `db_bench` has no such workload).
    MultiReadMissing,
    /// `--reads` steps of one dependent memory load over a buffer the size of the tree's filter
    /// index, chained to one lookup of a missing key in an empty database: the least a missing
    /// key can cost here (siftdb only; its own workload).
    MissFloor,
    /// Read `--reads` keys drawn from a hot set of `--hot_keys` keys, half of them missing.
    ReadHot,
    /// Read `--reads` keys of a hot key range (the first `--hot_fraction` of the keys) on one
    /// thread: the first half alone, the second half interleaved with a full `readseq` scan in
    /// 20 chunks. Reports the hot reads' data-block cache hit rate in both halves (the scan's
    /// own block reads are not counted): what a scan does to the blocks lookups keep reading.
    ReadHotScan,
    /// Read `--reads` keys whose positions follow a Zipf law (`--zipf_theta`), a fraction
    /// `--zipf_missing_fraction` of them never written; ranks in key order (a hot key range)
    /// or scattered (`--zipf_scramble`, as YCSB's scrambled Zipfian).
    ReadZipf,
    /// Seek to `--reads` random keys and read `--seek_nexts` entries after each.
    SeekRandom,
    /// Scan `--reads` random ranges of `--range_width` key positions that hold no key (the keys
    /// are written `--range_width + 1` positions apart when this workload is asked for): what a
    /// range filter (`--range_filter_bits_per_key`) answers without reading a block.
    SeekMissing,
    /// Read every entry in key order from the first (one full scan per thread).
    ReadSeq,
    /// Read every entry in descending key order from the last (one full scan per thread).
    ReadReverse,
    /// Scan `--reads` random existing prefixes with a prefix iterator.
    PrefixScan,
    /// Delete `--deletes` distinct random keys.
    DeleteRandom,
    /// Write `--max_num_range_tombstones` range deletes, each over `--range_tombstone_width`
    /// consecutive keys, spread evenly over the key range (`db_bench`'s range tombstones, all
    /// in one phase; RocksDB's `DeleteRange`).
    DeleteRange,
    /// `--num` merges of the 8-byte little-endian counter 1 onto random keys (with repeats, as
    /// overwrite), with the `U64Add` merge operator (`db_bench`'s mergerandom with
    /// `uint64add`). Run it on its own key set: the operator fails on other values.
    MergeRandom,
    /// `--threads` readers doing `readrandom` while one writer overwrites keys.
    ReadWhileWriting,
    /// `--threads` readers doing `readrandom` while one thread compacts the whole database over
    /// and over (`compact` in a loop): what compaction does to the readers' block cache.
    ReadWhileCompacting,
    /// Compact the whole database down to the bottom level (`Db::compact_range(None, None)`).
    Compact,
    /// The highest write rate the engine sustains (in the spirit of Pebble's `bench write`):
    /// random puts over the key range, first as fast as one writer goes, then paced at rates
    /// bisected between 0 and that, each trial `--sustained_seconds` long from a settled tree.
    /// A trial passes when the writer kept within 5 % of its rate, writes never stalled, and L0
    /// and the bytes compaction owes stayed under `--sustained_max_l0_files` and
    /// `--sustained_max_pending_bytes`. `db_bench` has no such workload.
    FillSustained,
    /// Take a checkpoint (an openable copy: tables hard-linked, the WAL copied) into a fresh
    /// directory beside the database, then open it, count its keys against the source's and
    /// remove it. `db_bench` has no such workload.
    Checkpoint,
    /// YCSB core workload A (update heavy): 50 % reads, 50 % updates, keys Zipfian
    /// (`--zipf_theta`, scrambled) over the records; `--reads` operations on `--threads` threads.
    YcsbA,
    /// YCSB B (read mostly): 95 % reads, 5 % updates.
    YcsbB,
    /// YCSB C (read only): 100 % reads.
    YcsbC,
    /// YCSB D (read latest): 95 % reads of recently inserted records, 5 % inserts of new ones.
    YcsbD,
    /// YCSB E (short ranges): 95 % scans of 1 to 100 records from a Zipfian start, 5 % inserts.
    YcsbE,
    /// YCSB F (read-modify-write): 50 % reads, 50 % read-modify-writes.
    YcsbF,
    /// `db_bench`'s randomtransaction: `--reads` transactions on `--threads` threads, each a
    /// read-modify-write of `--transaction_sets` keys drawn Zipfian (`--zipf_theta`, scrambled)
    /// over the records, optimistic (`--optimistic_transaction_db`) or pessimistic
    /// (`--transaction_db`); committed transactions per second and the abort rate.
    RandomTransaction,
    /// Print every statistic and the tree shape.
    Stats,
}

impl Benchmark {
    /// Every workload, in documentation order.
    pub const ALL: [Benchmark; 33] = [
        Benchmark::FillSeq,
        Benchmark::FillRandom,
        Benchmark::BulkLoad,
        Benchmark::Overwrite,
        Benchmark::ReadRandom,
        Benchmark::ReadMissing,
        Benchmark::MultiReadRandom,
        Benchmark::MultiReadMissing,
        Benchmark::MissFloor,
        Benchmark::ReadHot,
        Benchmark::ReadHotScan,
        Benchmark::ReadZipf,
        Benchmark::SeekRandom,
        Benchmark::SeekMissing,
        Benchmark::ReadSeq,
        Benchmark::ReadReverse,
        Benchmark::PrefixScan,
        Benchmark::DeleteRandom,
        Benchmark::DeleteRange,
        Benchmark::MergeRandom,
        Benchmark::ReadWhileWriting,
        Benchmark::ReadWhileCompacting,
        Benchmark::Compact,
        Benchmark::FillSustained,
        Benchmark::Checkpoint,
        Benchmark::YcsbA,
        Benchmark::YcsbB,
        Benchmark::YcsbC,
        Benchmark::YcsbD,
        Benchmark::YcsbE,
        Benchmark::YcsbF,
        Benchmark::RandomTransaction,
        Benchmark::Stats,
    ];

    /// The `db_bench` name.
    pub fn name(self) -> &'static str {
        match self {
            Benchmark::FillSeq => "fillseq",
            Benchmark::FillRandom => "fillrandom",
            Benchmark::BulkLoad => "bulkload",
            Benchmark::Overwrite => "overwrite",
            Benchmark::ReadRandom => "readrandom",
            Benchmark::ReadMissing => "readmissing",
            Benchmark::MultiReadRandom => "multireadrandom",
            Benchmark::MultiReadMissing => "multireadmissing",
            Benchmark::MissFloor => "missfloor",
            Benchmark::ReadHot => "readhot",
            Benchmark::ReadHotScan => "readhotscan",
            Benchmark::ReadZipf => "readzipf",
            Benchmark::SeekRandom => "seekrandom",
            Benchmark::SeekMissing => "seekmissing",
            Benchmark::ReadSeq => "readseq",
            Benchmark::ReadReverse => "readreverse",
            Benchmark::PrefixScan => "prefixscan",
            Benchmark::DeleteRandom => "deleterandom",
            Benchmark::DeleteRange => "deleterange",
            Benchmark::MergeRandom => "mergerandom",
            Benchmark::ReadWhileWriting => "readwhilewriting",
            Benchmark::ReadWhileCompacting => "readwhilecompacting",
            Benchmark::Compact => "compact",
            Benchmark::FillSustained => "fillsustained",
            Benchmark::Checkpoint => "checkpoint",
            Benchmark::YcsbA => "ycsba",
            Benchmark::YcsbB => "ycsbb",
            Benchmark::YcsbC => "ycsbc",
            Benchmark::YcsbD => "ycsbd",
            Benchmark::YcsbE => "ycsbe",
            Benchmark::YcsbF => "ycsbf",
            Benchmark::RandomTransaction => "randomtransaction",
            Benchmark::Stats => "stats",
        }
    }

    /// Parses a `db_bench` name.
    pub fn from_name(name: &str) -> Result<Benchmark> {
        let name = name.trim();
        if let Some(b) = Benchmark::ALL.iter().find(|b| b.name() == name) {
            return Ok(*b);
        }
        let known: Vec<&str> = Benchmark::ALL.iter().map(|b| b.name()).collect();
        Err(Error::new(format!(
            "unknown benchmark '{name}' (known: {})",
            known.join(",")
        )))
    }

    /// Whether the workload writes (and so is skipped with `--use_existing_db` if it is a fill).
    pub fn writes(self) -> bool {
        matches!(
            self,
            Benchmark::FillSeq
                | Benchmark::FillRandom
                | Benchmark::BulkLoad
                | Benchmark::Overwrite
                | Benchmark::DeleteRandom
                | Benchmark::DeleteRange
                | Benchmark::MergeRandom
                | Benchmark::FillSustained
                | Benchmark::ReadWhileWriting
                | Benchmark::YcsbA
                | Benchmark::YcsbB
                | Benchmark::YcsbD
                | Benchmark::YcsbE
                | Benchmark::YcsbF
                | Benchmark::RandomTransaction
        )
    }

    /// Whether the workload is one of YCSB's core workloads (`ycsba`..`ycsbf`).
    pub fn is_ycsb(self) -> bool {
        matches!(
            self,
            Benchmark::YcsbA
                | Benchmark::YcsbB
                | Benchmark::YcsbC
                | Benchmark::YcsbD
                | Benchmark::YcsbE
                | Benchmark::YcsbF
        )
    }

    /// Whether the workload inserts new records beyond `--num` (YCSB D and E).
    pub fn inserts(self) -> bool {
        matches!(self, Benchmark::YcsbD | Benchmark::YcsbE)
    }

    /// Whether the workload looks its keys up `--batch_size` at a time, one batched call each
    /// (`multireadrandom`, `multireadmissing`).
    pub fn is_multi_read(self) -> bool {
        matches!(
            self,
            Benchmark::MultiReadRandom | Benchmark::MultiReadMissing
        )
    }

    /// Whether the workload looks up only keys that were never written (`readmissing`,
    /// `multireadmissing`, `missfloor`).
    pub fn looks_up_missing_keys(self) -> bool {
        matches!(
            self,
            Benchmark::ReadMissing | Benchmark::MultiReadMissing | Benchmark::MissFloor
        )
    }

    /// Whether the workload creates the data set (`fillseq`, `fillrandom`).
    pub fn is_fill(self) -> bool {
        matches!(
            self,
            Benchmark::FillSeq | Benchmark::FillRandom | Benchmark::BulkLoad
        )
    }
}

fn parse_compression(name: &str) -> std::result::Result<siftdb::Compression, String> {
    siftdb::Compression::from_name(name)
        .ok_or_else(|| format!("unknown compression type '{name}' (known: none, lz4, zstd)"))
}

fn parse_benchmark(name: &str) -> std::result::Result<Benchmark, String> {
    Benchmark::from_name(name).map_err(|e| e.to_string())
}

/// `--filter_policy`: which filter kind each level gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FilterPolicyArg {
    /// Blocked bloom on every level.
    Bloom,
    /// Ribbon on every level.
    Ribbon,
    /// Blocked bloom above `--bloom_before_level`, ribbon from there on (siftdb's default).
    Hybrid,
    /// Blocked bloom above `--bloom_before_level`, binary fuse from there on
    /// (`Options::deep_filter_kind`). RocksDB and fjall have no binary fuse filter.
    Fuse,
}

/// `--filter_allocation`: how filter memory is split across levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AllocationArg {
    /// Monkey: lower FPRs on the small upper levels at the same total memory.
    Monkey,
    /// The same bits/key on every level.
    Uniform,
    /// Monkey per level, then per table by the probe rates compactions measure (siftdb only).
    Adaptive,
}

/// `--cache_admission`: which data blocks siftdb's block cache lets in once full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AdmissionArg {
    /// Every block (plain LRU, as the peers').
    All,
    /// A data block on its second sighting within a window (siftdb's default).
    #[value(name = "second_sighting")]
    SecondSighting,
    /// A data block more frequent than its victim in a TinyLFU sketch.
    #[value(name = "tiny_lfu")]
    TinyLfu,
}

/// `--compaction_pri`: which file of a level a compaction takes first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum CompactionPriArg {
    /// The least overlap in the next level per byte (RocksDB's `kMinOverlappingRatio`).
    #[default]
    #[value(name = "min_overlapping_ratio")]
    MinOverlappingRatio,
    /// Round robin over the key space (RocksDB's `kRoundRobin`, LevelDB's way).
    #[value(name = "round_robin")]
    RoundRobin,
}

/// `--compaction_style`: how the tree compacts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum CompactionStyleArg {
    /// Leveled (every engine's default).
    #[default]
    #[value(name = "level")]
    Level,
    /// Universal, size-tiered (RocksDB's `kCompactionStyleUniversal`).
    #[value(name = "universal")]
    Universal,
    /// FIFO: the oldest tables dropped past a size limit or TTL.
    #[value(name = "fifo")]
    Fifo,
}

/// siftdb-bench: a `db_bench`-style workload runner for siftdb.
///
/// Runs the workloads of `--benchmarks` in order on one database (a fresh temporary directory
/// unless `--db` is given) and prints one `db_bench`-style line per workload followed by the
/// engine statistics that matter for it.
#[derive(Debug, Clone, Parser)]
#[command(name = "siftdb-bench", version)]
pub struct Args {
    /// Workloads to run, in order (comma separated): fillseq, fillrandom, overwrite, readrandom,
    /// readmissing, multireadrandom, multireadmissing, missfloor, readhot, readzipf, seekrandom, seekmissing,
    /// readseq, readreverse, prefixscan, deleterandom, deleterange, mergerandom, readwhilewriting,
    /// readwhilecompacting, compact, checkpoint, stats.
    #[arg(
        long = "benchmarks",
        value_delimiter = ',',
        value_parser = parse_benchmark,
        default_value = "fillrandom,readrandom,readmissing,prefixscan,stats"
    )]
    pub benchmarks: Vec<Benchmark>,
    /// Number of keys (the key range of every workload; writes per fill/overwrite).
    #[arg(long = "num", default_value_t = 1_000_000)]
    pub num: u64,
    /// Operations of the read workloads; of multireadrandom and multireadmissing, keys looked up
    /// in all (`reads / batch_size` batched calls) [default: min(num, 200000)].
    #[arg(long = "reads")]
    pub reads: Option<u64>,
    /// Keys removed by deleterandom (distinct keys) [default: num / 10].
    #[arg(long = "deletes")]
    pub deletes: Option<u64>,
    /// Range deletes written by deleterange.
    #[arg(long = "max_num_range_tombstones", default_value_t = 1000)]
    pub max_num_range_tombstones: u64,
    /// Keys each range delete of deleterange covers.
    #[arg(long = "range_tombstone_width", default_value_t = 100)]
    pub range_tombstone_width: u64,
    /// Bytes per key.
    #[arg(long = "key_size", default_value_t = 16)]
    pub key_size: usize,
    /// Bytes per value.
    #[arg(long = "value_size", default_value_t = 100)]
    pub value_size: usize,
    /// Bytes of the key prefix (the prefix extractor's length); `--keys_per_prefix` keys share one.
    #[arg(long = "prefix_size", default_value_t = 8)]
    pub prefix_size: usize,
    /// Keys sharing one prefix.
    #[arg(long = "keys_per_prefix", default_value_t = 100)]
    pub keys_per_prefix: u64,
    /// Keys of readhot's hot set (half of them written, half never written).
    #[arg(long = "hot_keys", default_value_t = 1000)]
    pub hot_keys: u64,
    /// Share of the keys (the first ones, a key range) readhotscan reads.
    #[arg(long = "hot_fraction", default_value_t = 0.2)]
    pub hot_fraction: f64,
    /// Which data blocks siftdb's block cache lets in once full (`Options::block_cache_admission`;
    /// the peers have plain LRU caches).
    #[arg(long = "cache_admission", value_enum, default_value_t = AdmissionArg::SecondSighting)]
    pub cache_admission: AdmissionArg,
    /// Key positions per seekmissing range.
    #[arg(long = "range_width", default_value_t = 16)]
    pub range_width: u64,

    /// readzipf: the Zipf law's skew θ, in (0, 1).
    #[arg(long = "zipf_theta", default_value_t = 0.99)]
    pub zipf_theta: f64,

    /// readzipf: the fraction of lookups for never-written keys, in [0, 1].
    #[arg(long = "zipf_missing_fraction", default_value_t = 0.8)]
    pub zipf_missing_fraction: f64,

    /// readzipf: scatter the ranks over the key range through a fixed permutation (YCSB's
    /// scrambled Zipfian: hot keys everywhere); `false` keeps rank = key position (a hot key
    /// range at the start).
    #[arg(long = "zipf_scramble", default_value_t = true, action = ArgAction::Set, value_parser = BoolishValueParser::new())]
    pub zipf_scramble: bool,
    /// Bits per key of siftdb's range filters (0: none) [default: the engine's, 0].
    #[arg(long = "range_filter_bits_per_key")]
    pub range_filter_bits_per_key: Option<f64>,
    /// Bits per key of siftdb's tree-wide filter index (0: none) [default: the engine's, 10].
    #[arg(long = "filter_index_bits_per_key")]
    pub filter_index_bits_per_key: Option<f64>,
    /// readhot's hot set is `--hot_keys` never-written keys that are false positives of the
    /// tree's filters, found (untimed) by probing missing keys until each of them made a
    /// lookup read a data block. Needs an engine that counts data blocks per lookup.
    #[arg(long = "hot_false_positives")]
    pub hot_false_positives: bool,
    /// Bytes of siftdb's false-positive memo (0: off) [default: the engine's, 256 KiB].
    #[arg(long = "false_positive_memo_bytes")]
    pub false_positive_memo_bytes: Option<usize>,
    /// Entries read after each seek of seekrandom.
    #[arg(long = "seek_nexts", default_value_t = 10)]
    pub seek_nexts: usize,
    /// Concurrent threads of the read workloads and overwrite (readwhilewriting: readers, plus
    /// one writer). Fills and deleterandom use one thread.
    #[arg(long = "threads", default_value_t = 1)]
    pub threads: usize,
    /// Entries per write batch of the write workloads; keys per batched lookup of
    /// multireadrandom and multireadmissing (as `db_bench`'s MultiGet).
    #[arg(long = "batch_size", default_value_t = 1)]
    pub batch_size: usize,
    /// Keyspaces the keys are spread over (siftdb): key index i lives in keyspace i % N
    /// ("default", then "ks1".."ksN-1", all with the same options), and every workload reads it
    /// there. The peers run one keyspace: above 1 they are refused.
    #[arg(long = "keyspaces", default_value_t = 1)]
    pub keyspaces: usize,
    /// Average filter bits per key over the tree (Options::filter_bits_per_key).
    #[arg(long = "bloom_bits", default_value_t = 10.0)]
    pub bloom_bits: f64,
    /// No whole-key filter on the bottom level (siftdb `Options::optimize_filters_for_hits`,
    /// RocksDB's option of the same name; fjall has none).
    #[arg(long = "optimize_filters_for_hits", num_args = 0..=1, default_value = "false",
          default_missing_value = "true", action = ArgAction::Set,
          value_parser = BoolishValueParser::new())]
    pub optimize_filters_for_hits: bool,
    /// Memtable bloom memory as a fraction of the write buffer, 0 = none (db_bench's flag;
    /// siftdb and RocksDB `memtable_prefix_bloom_size_ratio`; fjall has none).
    #[arg(long = "memtable_bloom_size_ratio", default_value_t = 0.0)]
    pub memtable_bloom_size_ratio: f64,
    /// Whole keys in the memtable bloom too, not only prefixes (db_bench's flag).
    #[arg(long = "memtable_whole_key_filtering", num_args = 0..=1, default_value = "false",
          default_missing_value = "true", action = ArgAction::Set,
          value_parser = BoolishValueParser::new())]
    pub memtable_whole_key_filtering: bool,
    /// Filter kind per level.
    #[arg(long = "filter_policy", value_enum, default_value_t = FilterPolicyArg::Hybrid)]
    pub filter_policy: FilterPolicyArg,
    /// First ribbon level with --filter_policy=hybrid.
    #[arg(long = "bloom_before_level", default_value_t = 2)]
    pub bloom_before_level: usize,
    /// How filter memory is split across levels.
    #[arg(long = "filter_allocation", value_enum, default_value_t = AllocationArg::Monkey)]
    pub filter_allocation: AllocationArg,
    /// Block cache capacity in bytes [default: the engine's, 64 MiB].
    #[arg(long = "cache_size")]
    pub cache_size: Option<usize>,
    /// Memtable bytes before a flush [default: the engine's, 64 MiB].
    #[arg(long = "write_buffer_size")]
    pub write_buffer_size: Option<usize>,
    /// Every this many bytes of a table or blob file written, its writeback is started
    /// (db_bench's `bytes_per_sync`; 0: left to the OS) [default: the engine's, 1 MiB].
    #[arg(long = "bytes_per_sync")]
    pub bytes_per_sync: Option<u64>,
    /// As `--bytes_per_sync`, for the WAL (db_bench's `wal_bytes_per_sync`) [default: the
    /// engine's, 1 MiB].
    #[arg(long = "wal_bytes_per_sync")]
    pub wal_bytes_per_sync: Option<u64>,
    /// Threads compressing a table's data blocks beside the one building it (db_bench's
    /// `compression_parallel_threads`, RocksDB's `CompressionOptions::parallel_threads`) [default:
    /// 1, none beside it].
    #[arg(long = "compression_parallel_threads", value_parser = clap::value_parser!(u32).range(1..=64))]
    pub compression_parallel_threads: Option<u32>,
    /// Memtables of a keyspace, the one being written and those waiting for their flush,
    /// before writes stall (RocksDB's `max_write_buffer_number`) [default: the engine's, 2].
    #[arg(long = "max_write_buffer_number", value_parser = clap::value_parser!(u32).range(2..))]
    pub max_write_buffer_number: Option<u32>,
    /// Memtable bytes of all keyspaces together (RocksDB's `db_write_buffer_size`) [default:
    /// 0, no shared budget].
    #[arg(long = "db_write_buffer_size", default_value_t = 0)]
    pub db_write_buffer_size: usize,
    /// Writers stall while all memtables together hold `--db_write_buffer_size` (siftdb's
    /// `allow_stall`; RocksDB's write buffer manager with `allow_stall`) [default: false, as
    /// RocksDB's `db_write_buffer_size`].
    #[arg(long = "allow_stall", num_args = 0..=1, default_value = "false", default_missing_value = "true",
          action = clap::ArgAction::Set)]
    pub allow_stall: bool,
    /// Table files open at once (db_bench's `--open_files`, RocksDB's `max_open_files`; -1:
    /// every table stays open) [default: the engine's, 1000].
    #[arg(long = "open_files", allow_hyphen_values = true)]
    pub open_files: Option<i32>,
    /// Manifest bytes before a new manifest is started (RocksDB's `max_manifest_file_size`)
    /// [default: the engine's, 64 MiB].
    #[arg(long = "max_manifest_file_size")]
    pub max_manifest_file_size: Option<u64>,
    /// Target size of compaction output tables [default: the engine's, 64 MiB].
    #[arg(long = "target_file_size_base")]
    pub target_file_size_base: Option<u64>,
    /// Target size of L1 [default: the engine's, 256 MiB].
    #[arg(long = "max_bytes_for_level_base")]
    pub max_bytes_for_level_base: Option<u64>,
    /// Growth factor of level targets [default: the engine's, 10].
    #[arg(long = "max_bytes_for_level_multiplier")]
    pub max_bytes_for_level_multiplier: Option<f64>,
    /// L0 file count that triggers compaction [default: the engine's, 4].
    #[arg(long = "level0_file_num_compaction_trigger")]
    pub level0_file_num_compaction_trigger: Option<usize>,
    /// Background jobs, flushes and compactions together (RocksDB's name) [default: the
    /// engine's, the cores between 2 and 8]; siftdb runs one flush thread and the rest
    /// compacting; peers get the same total.
    #[arg(long = "max_background_jobs")]
    pub max_background_jobs: Option<usize>,
    /// Background compaction threads, overriding `--max_background_jobs` (RocksDB's older name)
    /// [default: derived from it].
    #[arg(long = "max_background_compactions")]
    pub max_background_compactions: Option<usize>,
    /// Key ranges one compaction may be split into, each on a thread of its own (db_bench's
    /// name; `Options::max_subcompactions`, RocksDB's `max_subcompactions`; fjall has none,
    /// printed) [default: the engine's, 1].
    #[arg(long = "subcompactions")]
    pub subcompactions: Option<usize>,
    /// Bytes a compaction reads from an input table at once (db_bench's and RocksDB's name;
    /// 0: one read per block; fjall reads its inputs its own way, printed) [default: the
    /// engine's, 2 MiB, as RocksDB's].
    #[arg(long = "compaction_readahead_size")]
    pub compaction_readahead_size: Option<usize>,
    /// Compaction outputs end where a table of the level below them ends, between 3/4 and 5/4
    /// of the target size (RocksDB's former option of this name; RocksDB 11 always does, fjall
    /// does not; both printed) [default: the engine's, true].
    #[arg(long = "level_compaction_dynamic_file_size", num_args = 0..=1,
          default_missing_value = "true", action = clap::ArgAction::Set)]
    pub level_compaction_dynamic_file_size: Option<bool>,
    /// Bytes per second flushes and compactions may write (db_bench's name; 0: no limit).
    /// siftdb and RocksDB: a generic rate limiter refilled every 100 ms, fairness 10; fjall has
    /// none (printed).
    #[arg(long = "rate_limiter_bytes_per_sec", default_value_t = 0)]
    pub rate_limiter_bytes_per_sec: u64,
    /// Which file of an oversized level is compacted first (RocksDB's `compaction_pri`):
    /// `min_overlapping_ratio` (siftdb's and RocksDB's default) or `round_robin`; fjall picks
    /// its own way.
    #[arg(long = "compaction_pri", value_enum, default_value_t = CompactionPriArg::MinOverlappingRatio)]
    pub compaction_pri: CompactionPriArg,
    /// How the tree compacts (db_bench's flag, by name): `level` (leveled, the default),
    /// `universal` (size-tiered; RocksDB's universal, fjall has none: printed) or `fifo`
    /// (oldest tables dropped; RocksDB's and fjall's FIFO).
    #[arg(long = "compaction_style", value_enum, default_value_t = CompactionStyleArg::Level)]
    pub compaction_style: CompactionStyleArg,
    /// Universal compaction's `size_ratio` (percent) [default: the engine's, 1].
    #[arg(long = "universal_size_ratio")]
    pub universal_size_ratio: Option<u32>,
    /// Universal compaction's `min_merge_width` [default: 2].
    #[arg(long = "universal_min_merge_width")]
    pub universal_min_merge_width: Option<usize>,
    /// Universal compaction's `max_merge_width` [default: no limit].
    #[arg(long = "universal_max_merge_width")]
    pub universal_max_merge_width: Option<usize>,
    /// Universal compaction's `max_size_amplification_percent` [default: 200].
    #[arg(long = "universal_max_size_amplification_percent")]
    pub universal_max_size_amplification_percent: Option<u64>,
    /// FIFO compaction's size limit in MiB (db_bench's name) [default: 1024].
    #[arg(long = "fifo_compaction_max_table_files_size_mb")]
    pub fifo_compaction_max_table_files_size_mb: Option<u64>,
    /// FIFO compaction's TTL in seconds (db_bench's name; 0: none) [default: 0].
    #[arg(long = "fifo_compaction_ttl", default_value_t = 0)]
    pub fifo_compaction_ttl: u64,
    /// Codec of the data blocks on every level: none, lz4 or zstd [default: the engine's
    /// per-level default — L0 and L1 uncompressed, LZ4 below — given to every engine].
    #[arg(long = "compression_type", value_parser = parse_compression)]
    pub compression_type: Option<siftdb::Compression>,
    /// How compressible the generated values are (db_bench's flag): each 100-byte piece of a
    /// value is this fraction of random bytes repeated to fill it.
    #[arg(long = "compression_ratio", default_value_t = 0.5)]
    pub compression_ratio: f64,
    /// Key-value separation (db_bench's name): values of at least `--min_blob_size` bytes in
    /// blob files (RocksDB's integrated BlobDB; fjall's KV separation).
    #[arg(long = "enable_blob_files", num_args = 0..=1, default_value = "false",
          default_missing_value = "true", action = ArgAction::Set,
          value_parser = BoolishValueParser::new())]
    pub enable_blob_files: bool,
    /// Values of at least this many bytes go to blob files (db_bench's name).
    #[arg(long = "min_blob_size", default_value_t = 0)]
    pub min_blob_size: usize,
    /// Blob file size in bytes (db_bench's name) [default: 256 MiB, RocksDB's].
    #[arg(long = "blob_file_size", default_value_t = 256 << 20)]
    pub blob_file_size: u64,
    /// Codec of blob values: none, lz4 or zstd (db_bench's `blob_compression_type`).
    #[arg(long = "blob_compression_type", value_parser = parse_compression, default_value = "none")]
    pub blob_compression_type: siftdb::Compression,
    /// Compactions relocate the live values of the oldest blob files (db_bench's name).
    #[arg(long = "enable_blob_garbage_collection", num_args = 0..=1, default_value = "false",
          default_missing_value = "true", action = ArgAction::Set,
          value_parser = BoolishValueParser::new())]
    pub enable_blob_garbage_collection: bool,
    /// The oldest share of blob files garbage collection relocates (db_bench's name).
    #[arg(long = "blob_garbage_collection_age_cutoff", default_value_t = 0.25)]
    pub blob_garbage_collection_age_cutoff: f64,
    /// A blob file is collected only once this share of it is garbage (siftdb's
    /// `blob_garbage_collection_min_garbage_ratio`, fjall's staleness threshold; RocksDB has
    /// none: it is printed as a difference).
    #[arg(
        long = "blob_garbage_collection_min_garbage_ratio",
        default_value_t = 0.5
    )]
    pub blob_garbage_collection_min_garbage_ratio: f64,
    /// Garbage share of those files that forces compactions for them (db_bench's name; 1:
    /// never).
    #[arg(
        long = "blob_garbage_collection_force_threshold",
        default_value_t = 1.0
    )]
    pub blob_garbage_collection_force_threshold: f64,
    /// Open every engine as a pessimistic transaction database (RocksDB's `TransactionDB`;
    /// siftdb's `TransactionMode::Pessimistic`): randomtransaction locks its keys.
    #[arg(long = "transaction_db", num_args = 0..=1, default_value = "false",
          default_missing_value = "true", action = ArgAction::Set,
          value_parser = BoolishValueParser::new())]
    pub transaction_db: bool,
    /// Open every engine as an optimistic transaction database (RocksDB's
    /// `OptimisticTransactionDB`, fjall's `OptimisticTxDatabase`; siftdb's
    /// `TransactionMode::Optimistic`): randomtransaction validates at commit.
    #[arg(long = "optimistic_transaction_db", num_args = 0..=1, default_value = "false",
          default_missing_value = "true", action = ArgAction::Set,
          value_parser = BoolishValueParser::new())]
    pub optimistic_transaction_db: bool,
    /// randomtransaction: keys read and written per transaction (`db_bench`'s name).
    #[arg(long = "transaction_sets", default_value_t = 2)]
    pub transaction_sets: usize,
    /// randomtransaction, pessimistic: milliseconds a lock is waited for (`db_bench`'s
    /// default, 100).
    #[arg(long = "transaction_lock_timeout", default_value_t = 100)]
    pub transaction_lock_timeout: u64,
    /// Sync the WAL on every write.
    #[arg(long = "sync", num_args = 0..=1, default_value = "false", default_missing_value = "true",
          action = ArgAction::Set, value_parser = BoolishValueParser::new())]
    pub sync: bool,
    /// Partition every table's index and filter (`true`), none (`false`); unset: each engine's
    /// default (siftdb partitions tables whose index or filter exceeds 64 KiB; RocksDB none).
    #[arg(long = "partition_index_and_filters", num_args = 0..=1, default_missing_value = "true",
          value_parser = BoolishValueParser::new())]
    pub partition_index_and_filters: Option<bool>,
    /// Read table files through `mmap` (`--mmap_read=true`: siftdb `ReadMode::Mmap`, RocksDB
    /// `allow_mmap_reads`) or with `pread` (the default of siftdb and RocksDB; fjall's only mode).
    #[arg(long = "mmap_read", num_args = 0..=1, default_value = "false", default_missing_value = "true",
          value_parser = BoolishValueParser::new())]
    pub mmap_read: bool,
    /// Point lookups without copying the value (`db_bench`'s `--pin_slice`): siftdb's
    /// `get_pinned`, RocksDB's `get_pinned`, fjall's `get` (a shared slice), each value dropped
    /// uncopied; `false`: every engine copies each value into the runner's buffer.
    #[arg(long = "pin_slice", num_args = 0..=1, default_value = "false", default_missing_value = "true",
          value_parser = BoolishValueParser::new())]
    pub pin_slice: bool,
    /// The peers' statistics (`db_bench`'s `--statistics`): RocksDB's tickers at `ExceptTimers`
    /// (`false`: no statistics object, so no filter or block figures for RocksDB, and none of
    /// their cost). siftdb's counters are always on; fjall's are compiled in (`metrics`).
    #[arg(long = "statistics", num_args = 0..=1, default_value = "true", default_missing_value = "true",
          action = ArgAction::Set, value_parser = BoolishValueParser::new())]
    pub statistics: bool,
    /// Flush the memtable after each write workload (not timed), so reads meet tables.
    #[arg(long = "flush_after_write", num_args = 0..=1, default_value = "true",
          default_missing_value = "true", action = ArgAction::Set,
          value_parser = BoolishValueParser::new())]
    pub flush_after_write: bool,
    /// Seed of every random choice (keys, orders, hot set).
    #[arg(long = "seed", default_value_t = 42)]
    pub seed: u64,
    /// Seconds of each fillsustained trial.
    #[arg(long = "sustained_seconds", default_value_t = 20.0)]
    pub sustained_seconds: f64,
    /// Paced trials of fillsustained after its first, unpaced one (each halves the interval
    /// the sustained rate is known to lie in).
    #[arg(long = "sustained_trials", default_value_t = 5)]
    pub sustained_trials: usize,
    /// L0 tables a fillsustained trial must stay under [default: the L0 stop trigger, where
    /// writes stop].
    #[arg(long = "sustained_max_l0_files")]
    pub sustained_max_l0_files: Option<u64>,
    /// Bytes compaction may owe during a fillsustained trial [default: 64 GiB, RocksDB's
    /// `soft_pending_compaction_bytes_limit`].
    #[arg(long = "sustained_max_pending_bytes", default_value_t = 64 << 30)]
    pub sustained_max_pending_bytes: u64,
    /// Database directory [default: a fresh temporary directory, removed afterwards].
    #[arg(long = "db")]
    pub db: Option<PathBuf>,
    /// Keep the temporary database directory (its path is printed).
    #[arg(long = "keep", num_args = 0..=1, default_value = "false", default_missing_value = "true",
          action = ArgAction::Set, value_parser = BoolishValueParser::new())]
    pub keep: bool,
    /// Open the database in --db as it is; fills are skipped (it must hold the keys of an
    /// earlier run with the same --num, --key_size, --prefix_size, --keys_per_prefix and
    /// --keyspaces).
    #[arg(long = "use_existing_db", num_args = 0..=1, default_value = "false",
          default_missing_value = "true", action = ArgAction::Set,
          value_parser = BoolishValueParser::new())]
    pub use_existing_db: bool,
    /// Print latency percentiles (P50/P95/P99/P99.9/max) of each workload.
    #[arg(long = "histogram", num_args = 0..=1, default_value = "false",
          default_missing_value = "true", action = ArgAction::Set,
          value_parser = BoolishValueParser::new())]
    pub histogram: bool,
    /// Print one JSON object per workload (one line each) instead of text.
    #[arg(long = "json", num_args = 0..=1, default_value = "false",
          default_missing_value = "true", action = ArgAction::Set,
          value_parser = BoolishValueParser::new())]
    pub json: bool,
    /// Write SVG charts of the run into this directory (created if missing): a latency CDF per
    /// workload (one line per engine), throughput per second over each write workload, and
    /// measured against expected FPR per level for each point-read workload.
    #[arg(long = "plot")]
    pub plot: Option<PathBuf>,
    /// Engines to run (comma separated). Only `siftdb` now; `rocksdb` and `fjall` arrive with
    /// the `peers` feature.
    #[arg(long = "engine", value_delimiter = ',', default_value = "siftdb")]
    pub engine: Vec<String>,
}

/// How transactions run: an engine opened as a transaction database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransactionConfig {
    /// Pessimistic (`--transaction_db`) or optimistic (`--optimistic_transaction_db`).
    pub pessimistic: bool,
    /// Keys per randomtransaction transaction.
    pub sets: usize,
    /// Pessimistic lock timeout.
    pub lock_timeout: std::time::Duration,
}

impl TransactionConfig {
    fn from_args(args: &Args) -> Option<TransactionConfig> {
        (args.transaction_db || args.optimistic_transaction_db).then(|| TransactionConfig {
            pessimistic: args.transaction_db,
            sets: args.transaction_sets,
            lock_timeout: std::time::Duration::from_millis(args.transaction_lock_timeout),
        })
    }

    /// The mode in words, as the report prints it.
    pub fn mode(&self) -> &'static str {
        if self.pessimistic {
            "pessimistic"
        } else {
            "optimistic"
        }
    }
}

/// The filter layout the flags describe.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FilterConfig {
    /// Average bits per key.
    pub bits_per_key: f64,
    /// Levels below this use blocked bloom, this one and deeper use ribbon.
    pub bloom_before_level: usize,
    /// Monkey or uniform.
    pub allocation: AllocationArg,
    /// The policy flag as given (for the header).
    pub policy: FilterPolicyArg,
}

/// Checked, resolved settings of a run.
#[derive(Debug, Clone)]
pub struct Config {
    /// Workloads in order.
    pub benchmarks: Vec<Benchmark>,
    /// Key range.
    pub num: u64,
    /// Operations of read workloads (keys, for the multiread workloads).
    pub reads: u64,
    /// Keys deleted by deleterandom.
    pub deletes: u64,
    /// Range deletes of deleterange.
    pub range_tombstones: u64,
    /// Keys per range delete of deleterange.
    pub range_tombstone_width: u64,
    /// Bytes per key.
    pub key_size: usize,
    /// Bytes per value.
    pub value_size: usize,
    /// Bytes of key prefix.
    pub prefix_size: usize,
    /// Keys per prefix.
    pub keys_per_prefix: u64,
    /// Size of readhot's hot set.
    pub hot_keys: u64,
    /// readhotscan's share of the keys.
    pub hot_fraction: f64,
    /// siftdb's block cache admission.
    pub cache_admission: AdmissionArg,
    /// Key positions per seekmissing range (`--range_width`).
    pub range_width: u64,
    /// readzipf's skew.
    pub zipf_theta: f64,
    /// readzipf's share of never-written keys.
    pub zipf_missing_fraction: f64,
    /// readzipf scatters its ranks over the key range (else rank = key position).
    pub zipf_scramble: bool,
    /// siftdb's range filter bits/key (`None`: the engine's default).
    pub range_filter_bits_per_key: Option<f64>,
    /// siftdb's filter index bits/key (`None`: the engine's default).
    pub filter_index_bits_per_key: Option<f64>,
    /// readhot reads false positives of the tree only (`--hot_false_positives`).
    pub hot_false_positives: bool,
    /// siftdb's false-positive memo bytes (`None`: the engine's default).
    pub false_positive_memo_bytes: Option<usize>,
    /// Entries read per seek.
    pub seek_nexts: usize,
    /// Threads of read workloads.
    pub threads: usize,
    /// Entries per write batch; keys per batched lookup.
    pub batch_size: usize,
    /// Keyspaces the keys are spread over (key index `i` in keyspace `i % keyspaces`).
    pub keyspaces: usize,
    /// Filters.
    pub filter: FilterConfig,
    /// No whole-key filter on the bottom level.
    pub optimize_filters_for_hits: bool,
    /// Memtable bloom memory over the write buffer (0: none).
    pub memtable_bloom_size_ratio: f64,
    /// Whole keys in the memtable bloom too.
    pub memtable_whole_key_filtering: bool,
    /// Block cache bytes (`None`: the engine's default).
    pub cache_size: Option<usize>,
    /// Memtable bytes (`None`: the engine's default).
    pub write_buffer_size: Option<usize>,
    /// Writeback started every so many bytes of tables and blob files (`None`: the engine's
    /// default).
    pub bytes_per_sync: Option<u64>,
    /// Writeback started every so many WAL bytes (`None`: the engine's default).
    pub wal_bytes_per_sync: Option<u64>,
    /// Threads compressing data blocks beside the table builder's (`None`: the engine's
    /// default, 1).
    pub compression_parallel_threads: Option<u32>,
    /// Memtables per keyspace before writes stall (`None`: the engine's default).
    pub max_write_buffer_number: Option<u32>,
    /// Memtable bytes of all keyspaces together (0: no shared budget).
    pub db_write_buffer_size: usize,
    /// Writers stall on the shared memtable budget.
    pub allow_stall: bool,
    /// Table files open at once (`None`: the engine's default; -1: all).
    pub open_files: Option<i32>,
    /// Manifest rollover size (`None`: the engine's default).
    pub max_manifest_file_size: Option<u64>,
    /// Tree shape overrides (`None`: the engine's defaults).
    pub tree: TreeShape,
    /// Codec per level (index = level, the last entry for deeper levels), as every engine gets
    /// it.
    pub compression: Vec<siftdb::Compression>,
    /// How compressible values are (fraction of random bytes).
    pub compression_ratio: f64,
    /// Key-value separation, as every engine gets it.
    pub blob: BlobShape,
    /// Partitioned index and filters: every table, none, or the engine's default.
    pub partition_index_and_filters: Option<bool>,
    /// Transactions (`--transaction_db`, `--optimistic_transaction_db`; `None`: neither).
    pub transactions: Option<TransactionConfig>,
    /// Sync every write.
    pub sync: bool,
    /// Read table files through `mmap`.
    pub mmap_read: bool,
    /// Point lookups leave values uncopied.
    pub pin_slice: bool,
    /// The peers' statistics.
    pub statistics: bool,
    /// Flush after write workloads.
    pub flush_after_write: bool,
    /// Seed.
    pub seed: u64,
    /// fillsustained's trials and limits.
    pub sustained: Sustained,
    /// Database directory given by the user.
    pub db: Option<PathBuf>,
    /// Keep a temporary database.
    pub keep: bool,
    /// Reuse the database in `db`.
    pub use_existing_db: bool,
    /// Print latency percentiles.
    pub histogram: bool,
    /// JSON output.
    pub json: bool,
    /// Where to write the charts (`--plot`).
    pub plot: Option<PathBuf>,
    /// Engines to run.
    pub engines: Vec<String>,
}

impl Config {
    /// Checks the flags and resolves defaults.
    pub fn from_args(args: &Args) -> Result<Config> {
        check_flags(args)?;
        let config = Config {
            benchmarks: args.benchmarks.clone(),
            num: args.num,
            reads: args.reads.unwrap_or(args.num.min(200_000)),
            deletes: args.deletes.unwrap_or(args.num / 10).min(args.num),
            range_tombstones: args.max_num_range_tombstones.min(args.num),
            range_tombstone_width: args.range_tombstone_width.max(1),
            key_size: args.key_size,
            value_size: args.value_size,
            prefix_size: args.prefix_size,
            keys_per_prefix: args.keys_per_prefix,
            hot_keys: args.hot_keys.max(2),
            hot_fraction: args.hot_fraction,
            cache_admission: args.cache_admission,
            hot_false_positives: args.hot_false_positives,
            range_width: args.range_width.max(1),
            zipf_theta: args.zipf_theta,
            zipf_missing_fraction: args.zipf_missing_fraction,
            zipf_scramble: args.zipf_scramble,
            range_filter_bits_per_key: args.range_filter_bits_per_key,
            filter_index_bits_per_key: args.filter_index_bits_per_key,
            false_positive_memo_bytes: args.false_positive_memo_bytes,
            seek_nexts: args.seek_nexts,
            threads: args.threads,
            batch_size: args.batch_size,
            keyspaces: args.keyspaces,
            filter: FilterConfig::from_args(args),
            optimize_filters_for_hits: args.optimize_filters_for_hits,
            memtable_bloom_size_ratio: args.memtable_bloom_size_ratio,
            memtable_whole_key_filtering: args.memtable_whole_key_filtering,
            cache_size: args.cache_size,
            write_buffer_size: args.write_buffer_size,
            max_write_buffer_number: args.max_write_buffer_number,
            bytes_per_sync: args.bytes_per_sync,
            wal_bytes_per_sync: args.wal_bytes_per_sync,
            compression_parallel_threads: args.compression_parallel_threads,
            db_write_buffer_size: args.db_write_buffer_size,
            allow_stall: args.allow_stall,
            open_files: args.open_files,
            max_manifest_file_size: args.max_manifest_file_size,
            tree: TreeShape {
                target_file_size_base: args.target_file_size_base,
                max_bytes_for_level_base: args.max_bytes_for_level_base,
                max_bytes_for_level_multiplier: args.max_bytes_for_level_multiplier,
                level0_file_num_compaction_trigger: args.level0_file_num_compaction_trigger,
                max_background_jobs: args.max_background_jobs,
                max_background_compactions: args.max_background_compactions,
                subcompactions: args.subcompactions,
                compaction_readahead_size: args.compaction_readahead_size,
                dynamic_file_size: args.level_compaction_dynamic_file_size,
                compaction_pri: args.compaction_pri,
                rate_limiter_bytes_per_sec: args.rate_limiter_bytes_per_sec,
                style: StyleShape {
                    style: args.compaction_style,
                    universal_size_ratio: args.universal_size_ratio,
                    universal_min_merge_width: args.universal_min_merge_width,
                    universal_max_merge_width: args.universal_max_merge_width,
                    universal_max_size_amplification_percent: args
                        .universal_max_size_amplification_percent,
                    fifo_max_table_files_size_mb: args.fifo_compaction_max_table_files_size_mb,
                    fifo_ttl_secs: args.fifo_compaction_ttl,
                },
            },
            compression: match args.compression_type {
                Some(codec) => vec![codec],
                None => siftdb::Options::default().compression_per_level,
            },
            compression_ratio: args.compression_ratio,
            blob: BlobShape::from_args(args),
            partition_index_and_filters: args.partition_index_and_filters,
            transactions: TransactionConfig::from_args(args),
            sync: args.sync,
            mmap_read: args.mmap_read,
            pin_slice: args.pin_slice,
            statistics: args.statistics,
            flush_after_write: args.flush_after_write,
            seed: args.seed,
            sustained: Sustained::from_args(args),
            db: args.db.clone(),
            keep: args.keep,
            use_existing_db: args.use_existing_db,
            histogram: args.histogram,
            json: args.json,
            plot: args.plot.clone(),
            engines: args
                .engine
                .iter()
                .map(|e| e.trim().to_string())
                .filter(|e| !e.is_empty())
                .collect(),
        };
        // The key layout must be able to hold the key range.
        KeyFormat::new(&config.key_shape())?;
        Ok(config)
    }

    /// The numbers the run's key layout is made from ([`KeyFormat::new`]).
    pub fn key_shape(&self) -> KeyShape {
        let inserting = self.benchmarks.iter().filter(|b| b.inserts()).count() as u64;
        KeyShape {
            key_size: self.key_size,
            prefix_size: self.prefix_size,
            keys_per_prefix: self.keys_per_prefix,
            num: self.num,
            insert_room: self.reads.saturating_mul(inserting),
            range_width: self
                .benchmarks
                .contains(&Benchmark::SeekMissing)
                .then_some(self.range_width),
            keyspaces: self.keyspaces,
        }
    }
}

/// Key-value separation as every engine gets it (`--enable_blob_files` and friends).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BlobShape {
    /// Values in blob files (`--enable_blob_files`).
    pub enabled: bool,
    /// Smallest value kept apart (`--min_blob_size`).
    pub min_blob_size: usize,
    /// Blob file size (`--blob_file_size`).
    pub blob_file_size: u64,
    /// Codec of blob values (`--blob_compression_type`).
    pub compression: siftdb::Compression,
    /// Garbage collection (`--enable_blob_garbage_collection`).
    pub gc: bool,
    /// Oldest share of blob files collected (`--blob_garbage_collection_age_cutoff`).
    pub gc_age_cutoff: f64,
    /// Garbage share below which a file is not collected
    /// (`--blob_garbage_collection_min_garbage_ratio`).
    pub gc_min_garbage_ratio: f64,
    /// Garbage share forcing a collection (`--blob_garbage_collection_force_threshold`).
    pub gc_force_threshold: f64,
}

impl BlobShape {
    /// The blob settings `args` give.
    fn from_args(args: &Args) -> BlobShape {
        BlobShape {
            enabled: args.enable_blob_files,
            min_blob_size: args.min_blob_size,
            blob_file_size: args.blob_file_size,
            compression: args.blob_compression_type,
            gc: args.enable_blob_garbage_collection,
            gc_age_cutoff: args.blob_garbage_collection_age_cutoff,
            gc_min_garbage_ratio: args.blob_garbage_collection_min_garbage_ratio,
            gc_force_threshold: args.blob_garbage_collection_force_threshold,
        }
    }
}

/// Refuses flags no run can use: zero counts, fractions out of range, sizes above the engine's
/// limits, and flags that need another.
fn check_flags(args: &Args) -> Result<()> {
    if args.num == 0 {
        return Err(Error::new("--num must be at least 1"));
    }
    if args.benchmarks.is_empty() {
        return Err(Error::new("--benchmarks is empty"));
    }
    if args.threads == 0 {
        return Err(Error::new("--threads must be at least 1"));
    }
    if args.batch_size == 0 {
        return Err(Error::new("--batch_size must be at least 1"));
    }
    if args.transaction_db && args.optimistic_transaction_db {
        return Err(Error::new(
            "--transaction_db and --optimistic_transaction_db exclude each other: pick one",
        ));
    }
    let blob_shares = [
        args.blob_garbage_collection_age_cutoff,
        args.blob_garbage_collection_min_garbage_ratio,
        args.blob_garbage_collection_force_threshold,
    ];
    if blob_shares.iter().any(|s| !(0.0..=1.0).contains(s)) {
        return Err(Error::new(
            "--blob_garbage_collection_age_cutoff, --blob_garbage_collection_min_garbage_ratio \
             and --blob_garbage_collection_force_threshold must be between 0 and 1",
        ));
    }
    if args.blob_file_size == 0 {
        return Err(Error::new("--blob_file_size must be at least 1"));
    }
    if args.transaction_sets == 0 {
        return Err(Error::new("--transaction_sets must be at least 1"));
    }
    let transactional = args.transaction_db || args.optimistic_transaction_db;
    if args.benchmarks.contains(&Benchmark::RandomTransaction) && !transactional {
        return Err(Error::new(
            "randomtransaction needs --optimistic_transaction_db or --transaction_db",
        ));
    }
    if args.keyspaces == 0 {
        return Err(Error::new("--keyspaces must be at least 1"));
    }
    if args.keys_per_prefix == 0 {
        return Err(Error::new("--keys_per_prefix must be at least 1"));
    }
    if args.prefix_size == 0 {
        return Err(Error::new("--prefix_size must be at least 1"));
    }
    if !(args.hot_fraction > 0.0 && args.hot_fraction <= 1.0) {
        return Err(Error::new("--hot_fraction must be in (0, 1]"));
    }
    if !(0.0..=0.25).contains(&args.memtable_bloom_size_ratio) {
        return Err(Error::new(
            "--memtable_bloom_size_ratio must be a number from 0 to 0.25",
        ));
    }
    if args.open_files.is_some_and(|n| n == 0 || n < -1) {
        return Err(Error::new(
            "--open_files must be at least 1, or -1 (every table open)",
        ));
    }
    if args.max_manifest_file_size == Some(0) {
        return Err(Error::new("--max_manifest_file_size must be at least 1"));
    }
    if !(args.bloom_bits.is_finite() && args.bloom_bits >= 0.0) {
        return Err(Error::new("--bloom_bits must be a number >= 0"));
    }
    if args.key_size > siftdb::MAX_KEY_SIZE {
        return Err(Error::new(format!(
            "--key_size {} is above the engine's limit {}",
            args.key_size,
            siftdb::MAX_KEY_SIZE
        )));
    }
    if args.value_size > siftdb::MAX_VALUE_SIZE {
        return Err(Error::new(format!(
            "--value_size {} is above the engine's limit {}",
            args.value_size,
            siftdb::MAX_VALUE_SIZE
        )));
    }
    if !(args.compression_ratio > 0.0 && args.compression_ratio <= 1.0) {
        return Err(Error::new("--compression_ratio must be in (0, 1]"));
    }
    if !(args.zipf_theta > 0.0 && args.zipf_theta < 1.0) {
        return Err(Error::new("--zipf_theta must be in (0, 1)"));
    }
    if !(0.0..=1.0).contains(&args.zipf_missing_fraction) {
        return Err(Error::new("--zipf_missing_fraction must be in [0, 1]"));
    }
    if args.use_existing_db && args.db.is_none() {
        return Err(Error::new("--use_existing_db needs --db=PATH"));
    }
    if args.engine.is_empty() {
        return Err(Error::new("--engine is empty"));
    }
    Ok(())
}

impl FilterConfig {
    /// The filter layout of `--bloom_bits`, `--filter_policy`, `--bloom_before_level` and
    /// `--filter_allocation`.
    fn from_args(args: &Args) -> FilterConfig {
        let bloom_before_level = match args.filter_policy {
            FilterPolicyArg::Bloom => usize::MAX,
            FilterPolicyArg::Ribbon => 0,
            FilterPolicyArg::Hybrid | FilterPolicyArg::Fuse => args.bloom_before_level,
        };
        FilterConfig {
            bits_per_key: args.bloom_bits,
            bloom_before_level,
            allocation: args.filter_allocation,
            policy: args.filter_policy,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(flags: &[&str]) -> std::result::Result<Args, clap::Error> {
        Args::try_parse_from(std::iter::once("siftdb-bench").chain(flags.iter().copied()))
    }

    #[test]
    fn defaults_match_the_contract() {
        let args = parse(&[]).unwrap();
        let config = Config::from_args(&args).unwrap();
        assert_eq!(config.num, 1_000_000);
        assert_eq!(config.reads, 200_000);
        assert_eq!(config.key_size, 16);
        assert_eq!(config.value_size, 100);
        assert_eq!(config.prefix_size, 8);
        assert_eq!(config.seek_nexts, 10);
        assert_eq!(config.filter.bloom_before_level, 2);
        assert_eq!(config.keyspaces, 1);
        let names: Vec<&str> = config.benchmarks.iter().map(|b| b.name()).collect();
        assert_eq!(
            names,
            [
                "fillrandom",
                "readrandom",
                "readmissing",
                "prefixscan",
                "stats"
            ]
        );
    }

    #[test]
    fn db_bench_style_flags_parse() {
        let args = parse(&[
            "--benchmarks=fillseq,readhot,checkpoint",
            "--num=5000",
            "--keyspaces=4",
            "--key_size=20",
            "--filter_policy=ribbon",
            "--filter_allocation=uniform",
            "--sync",
            "--histogram=1",
            "--json=false",
        ])
        .unwrap();
        let config = Config::from_args(&args).unwrap();
        assert_eq!(
            config.benchmarks,
            [
                Benchmark::FillSeq,
                Benchmark::ReadHot,
                Benchmark::Checkpoint
            ]
        );
        assert_eq!(config.keyspaces, 4);
        assert_eq!(config.filter.bloom_before_level, 0);
        assert!(config.sync && config.histogram && !config.json);
        assert_eq!(config.reads, 5000);
    }

    #[test]
    fn bad_input_is_an_error() {
        assert!(parse(&["--benchmarks=fillsequential"]).is_err());
        assert!(parse(&["--benchmarks=compact"]).is_ok());
        let args = parse(&["--use_existing_db"]).unwrap();
        assert!(Config::from_args(&args).is_err());
        let args = parse(&["--keyspaces=0"]).unwrap();
        assert!(Config::from_args(&args).is_err());
        let args = parse(&["--key_size=9", "--prefix_size=8"]).unwrap();
        assert!(Config::from_args(&args).is_err());
        let args = parse(&["--num=100000000000", "--prefix_size=4"]).unwrap();
        assert!(Config::from_args(&args).is_err());
    }

    #[test]
    fn key_shape_follows_the_flags() {
        let shape = |flags: &[&str]| {
            Config::from_args(&parse(flags).unwrap())
                .unwrap()
                .key_shape()
        };
        // The shape the keys tests build their layouts from.
        assert_eq!(
            shape(&["--num=1000", "--keyspaces=4"]),
            super::super::keys::tests::default_shape(1000, 4)
        );
        let ycsb = shape(&[
            "--num=1000",
            "--reads=300",
            "--benchmarks=ycsbd,ycsbe,seekmissing",
        ]);
        assert_eq!((ycsb.insert_room, ycsb.range_width), (600, Some(16)));
    }

    #[test]
    fn bloom_policy_means_bloom_everywhere() {
        let args = parse(&["--filter_policy=bloom"]).unwrap();
        assert_eq!(
            Config::from_args(&args).unwrap().filter.bloom_before_level,
            usize::MAX
        );
    }
}

/// fillsustained's trials and limits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sustained {
    /// Seconds per trial.
    pub seconds: f64,
    /// Paced trials after the unpaced one.
    pub trials: usize,
    /// L0 tables to stay under (`None`: the L0 stop trigger).
    pub max_l0_files: Option<u64>,
    /// Bytes compaction may owe.
    pub max_pending_bytes: u64,
}

impl Sustained {
    /// The `--sustained_*` flags.
    fn from_args(args: &Args) -> Sustained {
        Sustained {
            seconds: args.sustained_seconds,
            trials: args.sustained_trials,
            max_l0_files: args.sustained_max_l0_files,
            max_pending_bytes: args.sustained_max_pending_bytes,
        }
    }
}

/// Overrides of the engine's tree-shape options (db_bench names).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TreeShape {
    /// `target_file_size_base`.
    pub target_file_size_base: Option<u64>,
    /// `max_bytes_for_level_base`.
    pub max_bytes_for_level_base: Option<u64>,
    /// `max_bytes_for_level_multiplier`.
    pub max_bytes_for_level_multiplier: Option<f64>,
    /// `level0_file_num_compaction_trigger`.
    pub level0_file_num_compaction_trigger: Option<usize>,
    /// `max_background_jobs`.
    pub max_background_jobs: Option<usize>,
    /// `max_background_compactions`.
    pub max_background_compactions: Option<usize>,
    /// `subcompactions`.
    pub subcompactions: Option<usize>,
    /// `compaction_readahead_size`.
    pub compaction_readahead_size: Option<usize>,
    /// `level_compaction_dynamic_file_size`.
    pub dynamic_file_size: Option<bool>,
    /// `compaction_pri`.
    pub compaction_pri: CompactionPriArg,
    /// `rate_limiter_bytes_per_sec` (0: none).
    pub rate_limiter_bytes_per_sec: u64,
    /// `compaction_style` and its settings.
    pub style: StyleShape,
}

/// `--compaction_style` and the overrides of its settings (db_bench names).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StyleShape {
    /// `compaction_style`.
    pub style: CompactionStyleArg,
    /// `universal_size_ratio`.
    pub universal_size_ratio: Option<u32>,
    /// `universal_min_merge_width`.
    pub universal_min_merge_width: Option<usize>,
    /// `universal_max_merge_width`.
    pub universal_max_merge_width: Option<usize>,
    /// `universal_max_size_amplification_percent`.
    pub universal_max_size_amplification_percent: Option<u64>,
    /// `fifo_compaction_max_table_files_size_mb`.
    pub fifo_max_table_files_size_mb: Option<u64>,
    /// `fifo_compaction_ttl` in seconds (0: none).
    pub fifo_ttl_secs: u64,
}
