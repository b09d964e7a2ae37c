//! The command line: run shape, modes, and one weight per kind of operation.

use std::path::PathBuf;

use clap::{Args as ClapArgs, Parser, ValueEnum};

/// siftdb's db_stress: threads run every operation of the public API at random on a shared key
/// space and check every read against an expected state.
#[derive(Parser, Debug, Clone)]
#[command(name = "siftdb-stress", rename_all = "snake_case")]
pub struct Args {
    /// The database directory (default: a fresh temporary directory, removed at the end).
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// Worker threads.
    #[arg(long, default_value_t = 8)]
    pub threads: usize,
    /// Seconds to run (the run stops at whichever of this and `--ops_per_thread` comes first).
    #[arg(long, default_value_t = 60)]
    pub duration: u64,
    /// Seed of every random choice (default: from the time; always printed).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Operations per thread (default: unlimited).
    #[arg(long)]
    pub ops_per_thread: Option<u64>,
    /// Compaction style; `all` changes it at every open.
    #[arg(long, value_enum, default_value_t = StyleArg::Leveled)]
    pub compaction_style: StyleArg,
    /// Keys per keyspace (default 10000; 2000 with `--faults`).
    #[arg(long)]
    pub keys: Option<u32>,
    /// The largest value written (rare: about one write in 5000 is between 64 KiB and this).
    /// `--faults` caps it at 64 KiB (its file system is in memory).
    #[arg(long, default_value_t = 4 << 20)]
    pub max_value_size: usize,
    /// One write in this many is synced (0: none).
    #[arg(long, default_value_t = 100)]
    pub sync_one_in: u32,
    /// One ingestion in this many replaces its run (`IngestOptions::excise`; 0: none).
    #[arg(long, default_value_t = 3)]
    pub excise_one_in: u32,
    /// Crash test: run worker processes over `--db` and SIGKILL them `--kills` times, verifying
    /// the database after each.
    #[arg(long)]
    pub crash_test: bool,
    /// Crash test: how many workers to kill.
    #[arg(long, default_value_t = 20)]
    pub kills: u32,
    /// Crash test: fewest milliseconds a worker runs before it is killed.
    #[arg(long, default_value_t = 300)]
    pub kill_min_ms: u64,
    /// Crash test: most milliseconds a worker runs before it is killed.
    #[arg(long, default_value_t = 3000)]
    pub kill_max_ms: u64,
    /// Run on the fault-injecting in-memory file system, failing calls, syncs and space.
    #[arg(long)]
    pub faults: bool,
    /// Internal: a crash test's worker process (runs until killed, keeps the expected state in
    /// the file beside `--db`).
    #[arg(long, hide = true)]
    pub worker: bool,
    /// Internal: how many opens came before this process's (the crash test's worker number),
    /// for `--compaction_style all`.
    #[arg(long, hide = true, default_value_t = 0)]
    pub open_index: usize,
    /// Operation weights.
    #[command(flatten)]
    pub weights: Weights,
}

impl Args {
    /// Keys per keyspace.
    pub fn keys(&self) -> u32 {
        self.keys
            .unwrap_or(if self.faults { 2000 } else { 10_000 })
            .max(64)
    }

    /// The largest value this run writes.
    pub fn max_value(&self) -> usize {
        let max = self.max_value_size.max(crate::values::MIN_LEN);
        if self.faults {
            max.min(64 << 10)
        } else {
            max
        }
    }
}

/// `--compaction_style`.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum StyleArg {
    /// Leveled compaction.
    Leveled,
    /// Universal compaction.
    Universal,
    /// FIFO compaction (with a size limit no run reaches: nothing is dropped).
    Fifo,
    /// Leveled, universal, FIFO in turn, one per open of the database.
    All,
}

macro_rules! op_kinds {
    ($( $kind:ident, $field:ident, $default:expr, $doc:literal; )*) => {
        /// A kind of operation.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum OpKind {
            $( #[doc = $doc] $kind, )*
        }

        impl OpKind {
            /// Every kind, in the order of their weights.
            pub const ALL: &'static [OpKind] = &[$( OpKind::$kind, )*];

            /// The name of the kind (its weight flag without `_weight`).
            pub fn name(self) -> &'static str {
                match self {
                    $( OpKind::$kind => stringify!($field), )*
                }
            }
        }

        /// One weight per kind of operation (0 disables it); an operation is drawn with
        /// probability weight / sum of weights.
        #[derive(ClapArgs, Debug, Clone)]
        #[command(rename_all = "snake_case")]
        pub struct Weights {
            $(
                #[doc = $doc]
                #[arg(long = concat!(stringify!($field), "_weight"), default_value_t = $default)]
                pub $field: u32,
            )*
        }

        impl Weights {
            /// The weight of `kind`.
            pub fn of(&self, kind: OpKind) -> u32 {
                match kind {
                    $( OpKind::$kind => self.$field, )*
                }
            }
        }
    };
}

op_kinds! {
    Put, put, 2000, "put of a value (a few bytes to several MiB)";
    TtlPut, ttl_put, 200, "put_with_ttl with a TTL no run reaches";
    Delete, delete, 400, "delete";
    Merge, merge, 500, "U64Add merge on the counters keyspace";
    DeleteRange, delete_range, 100, "delete_range over a run of locked keys";
    Batch, batch, 400, "WriteBatch across keyspaces";
    Get, get, 2000, "get (and get_into / get_opt)";
    GetPinned, get_pinned, 400, "get_pinned";
    MultiGet, multi_get, 400, "multi_get";
    Iterate, iterate, 500, "bounded and prefix iterators, both directions, seeks";
    Seek, seek, 500, "raw iterator: seek, seek_for_prev, next, prev within bounds";
    Snapshot, snapshot, 150, "reads of a snapshot after later writes";
    OptimisticTxn, optimistic_txn, 200, "optimistic transaction (read-modify-write)";
    PessimisticTxn, pessimistic_txn, 200, "pessimistic transaction (read-modify-write)";
    Ingest, ingest, 30, "SstFileWriter + ingest_external_file, with and without excise";
    DeleteFilesInRange, delete_files_in_range, 5, "delete_files_in_range then delete_range";
    Flush, flush, 10, "flush of a keyspace";
    CompactRange, compact_range, 5, "compact_range of a run or a whole keyspace";
    SetOptions, set_options, 5, "set_options on a keyspace";
    Keyspace, keyspace, 5, "create or drop the scratch keyspace";
    Checkpoint, checkpoint, 5, "checkpoint, opened and compared on a run of keys";
    Backup, backup, 2, "backup, restore, open and compare a run of keys";
    Secondary, secondary, 20, "read-only open beside the writer and try_catch_up_with_primary";
    BankTransfer, bank_transfer, 100, "bank: a transfer by an optimistic or pessimistic transaction";
    BankIngest, bank_ingest, 5, "bank: an ingestion moving money between two locked accounts";
    BankAudit, bank_audit, 40, "bank: a snapshot or iterator sum of every account";
    ExciseWrite, excise_write, 10, "excise range: an excise ingestion rewriting it, or a put";
    ExciseRead, excise_read, 60, "excise range: lock-free reads that must find every key";
    Claim, claim, 60, "claims: optimistic, pessimistic and ingestion claimers race for fresh keys";
}

impl Weights {
    /// The cumulative table `pick` draws from.
    pub fn table(&self) -> Vec<(OpKind, u64)> {
        let mut sum = 0u64;
        let mut table = Vec::new();
        for &kind in OpKind::ALL {
            let w = u64::from(self.of(kind));
            if w > 0 {
                sum += w;
                table.push((kind, sum));
            }
        }
        table
    }
}

/// Draws a kind from a cumulative table (`Weights::table`, not empty).
pub fn pick(table: &[(OpKind, u64)], rng: &mut impl rand::Rng) -> OpKind {
    let total = table.last().map_or(1, |&(_, s)| s);
    let x = rng.gen_range(0..total);
    let i = table.partition_point(|&(_, s)| s <= x);
    table[i.min(table.len() - 1)].0
}
