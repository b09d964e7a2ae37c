//! `siftdb-stress`: RocksDB's `db_stress` for siftdb. Threads run every public operation at
//! random over a shared key space and check every read against an expected state; a crash mode
//! SIGKILLs worker processes and checks that no acknowledged write is lost; a fault mode runs
//! on an in-memory file system that fails calls, syncs and space.
//!
//! ```text
//! siftdb-stress --threads 8 --duration 60 --seed 1          # a stress run
//! siftdb-stress --crash_test --kills 20 --seed 2            # a crash test
//! siftdb-stress --faults --duration 30 --seed 3             # I/O faults and Db::resume
//! SIFTDB_STRESS_LONG=1 .ci/stress                           # the CI script's long soak
//! ```
//!
//! Every run prints its seed; a run with the same seed and flags draws the same operations
//! (the threads' interleaving still varies). The last line of a stress run is
//! `stress: <ops> ops, <threads> threads, <n> verifications, <m> mismatches`, of a crash test
//! `crash: <kills> kills, <reopens> reopens, <n> keys verified, <lost> lost, <wrong> wrong`; the
//! exit code is non-zero on any mismatch, each printed first with the seed, the operation, the
//! keyspace, the key, the expected and actual values (length, hash, first bytes), and the
//! key's last writes in the process that found it.
//!
//! # Keys and values (`siftdb_tests::stress_values`)
//!
//! `--keys` keys per keyspace, named `k00001234`, in three keyspaces: "default" (with an
//! 8-byte prefix extractor), "blob" (values of 128 bytes and more in blob files) and
//! "counters" (U64Add merges). Values are encoded from (keyspace, key, value id): a header
//! naming all three and the length, a pattern, the id again at the end; so a reader knows
//! which version of which key it holds, and a value of several MiB is cheap to make and check.
//! A fourth keyspace, "scratch", is created and dropped as an operation.
//!
//! # The expected state (`expected.rs`)
//!
//! Per key, the committed state (the version last acknowledged: a value id, a deletion, a
//! counter's sum) and the pending state (a write in flight: set before the write is issued,
//! cleared once it is acknowledged). Ids come from one counter, so they grow with time. The
//! state lives in memory and, except under `--faults`, in a file beside the database
//! (`<db>.expected`), updated with `pwrite` at every change: the page cache keeps those writes
//! when the process is SIGKILLed. A write that returned an error (under `--faults`) may or may
//! not be there: its state joins the key's possible states until a later write succeeds.
//!
//! # Locking (`locks.rs`)
//!
//! Keys are locked by stripes of four, in one global order (keyspace, stripe), for the writes
//! of an operation and for the reads it verifies, so while a thread holds a key its expected
//! state is exact. Range operations (delete_range, iterators, ingestion, delete_files_in_range)
//! lock the contiguous stripes of their run and keep their bounds inside it. A snapshot is
//! taken under its run's locks, the expectation recorded, the locks released, keys rewritten,
//! and the snapshot read afterwards. A gate (taken before any key lock) keeps
//! `delete_files_in_range` — which may bring back older versions until its `delete_range`
//! lands — apart from the readers that look without the keys' locks: snapshots and the
//! read-only instance, whose check is loose (a key written meanwhile may read as absent or as
//! any version no older than before the catch-up).
//!
//! # Operations (`ops*.rs`; one `--<name>_weight` flag each, 0 disables it)
//!
//! put (values from 32 bytes to `--max_value_size`), put_with_ttl (30 days), delete, merge,
//! delete_range, write batches across keyspaces (half of them `WriteBatchWithIndex`es read back
//! with `get_from_batch_and_db_in` first), get / get_into / get_opt, get_pinned,
//! multi_get, range and prefix iterators (both directions, both ends, seek and seek_for_prev),
//! raw iterator moves within bounds, snapshots, optimistic and pessimistic transactions (with
//! savepoints, reads of their own writes, and a conflicting write that must fail the commit),
//! SstFileWriter + ingest_external_file (with a range deletion, or `excise`),
//! delete_files_in_range + delete_range, flush (and build_filter_index), compact_range,
//! set_options, keyspace create and drop, checkpoints (some with file deletions disabled) and
//! backups (verified, restored, one in three after their metadata was damaged, the engine
//! reopened, and repaired) opened and compared on a run of keys, and a read-only instance
//! with try_catch_up_with_primary (one in four opened afresh). Half the puts are read back at
//! once; iterators seek (and seek_for_prev) to targets outside their bounds too, half their
//! upper bounds included.
//!
//! # Lock-free workloads (`ops_bank.rs`, `ops_excise.rs`, `ops_claims.rs`)
//!
//! Three keyspaces beside the tracked ones ("bank", "excise", "claims"; `setup::open` makes
//! them) hold workloads that take no key lock, for the faults only concurrent access to the
//! same keys shows. Each checks an invariant a correct engine keeps in every interleaving:
//!
//! - the bank (`--bank_transfer_weight`, `--bank_ingest_weight`, `--bank_audit_weight`): 16
//!   accounts; transfers by optimistic and pessimistic transactions at once, and moves by an
//!   ingested file under a pessimistic transaction's locks; a snapshot or iterator sum of every
//!   account is always the initial total;
//! - the excise range (`--excise_write_weight`, `--excise_read_weight`): 64 keys rewritten by
//!   ingestions with `excise` over the range (or puts); readers without locks (gets, a
//!   snapshot's gets, iterators) find every key, of a generation between its last acknowledged
//!   write and the newest issued;
//! - claims (`--claim_weight`): optimistic, pessimistic and ingesting claimers race for fresh
//!   keys (read absent, then write); at most one claim of a key may succeed.
//!
//! Each is set up (or checked) at every open, and checked whole after the threads.
//!
//! # After the threads
//!
//! Every key of every keyspace is read and every keyspace scanned against the expected state,
//! then the database is closed, reopened (in the next style with `--compaction_style all`) and
//! verified the same way.
//!
//! # Crash mode (`crash.rs`)
//!
//! `--crash_test --kills N` runs this binary as a worker (`--worker`, hidden) over `--db` and
//! its expected-state file, SIGKILLs it 0.3 to 3 s after it starts (seeded), reopens the
//! database and checks every key: a key whose pending state is set may hold either version,
//! every other key exactly its committed one (siftdb hands WAL records to the OS before it
//! acknowledges, so a SIGKILL loses nothing acknowledged, synced or not). Each key is then
//! settled to what it holds; the database is closed, opened and checked once more (recovery
//! must answer the same twice), and the next worker starts. A worker that finds a mismatch
//! itself exits 1, which ends the test as a wrong key.
//!
//! # Fault mode (`faults.rs`)
//!
//! `--faults` runs on `siftdb_tests::FaultFs`: every 20 to 200 ms one call fails, or one sync
//! fails (dropping the file's unsynced pages), or the disk is full for a moment. A writer that
//! meets an error calls `Db::resume` until it succeeds; reads that fail are counted. It uses
//! 2000 keys and values up to 64 KiB by default (the file system keeps every byte in memory).
//! The run is cut into rounds of 2 to 8 s; each ends with the threads stopped, a full
//! verification, then every keyspace flushed (every memtable empty), a fault armed a few calls
//! ahead and puts until one fails, `resume`, a synced put; then the database is closed and
//! opened again, which must succeed (a failed open is a mismatch), and the next round starts.
//!
//! # Knobs
//!
//! `--sync_one_in N` (one write in N synced), `--excise_one_in N` (one ingestion in N replaces
//! its run), `--kill_min_ms` / `--kill_max_ms` (when a crash test's worker dies), `--keys`,
//! `--max_value_size`, and the weights. A reproduction keeps the seed and narrows the weights:
//! `--threads 1` with every weight 0 but the operations involved.
//!
//! # Long runs
//!
//! `.ci/stress` runs 60 s of stress (4 threads), a crash test of 20 kills and 30 s of faults;
//! `SIFTDB_STRESS_LONG=1 .ci/stress` runs 30 minutes of stress, 300 kills and twenty 30 s
//! fault runs (a fault run keeps every byte it writes in memory, about 650 MB per 30 s, so the
//! soak runs many short ones with their own seeds).

mod cli;
mod crash;
mod ctx;
mod expected;
mod faults;
mod locks;
mod ops;
mod ops_admin;
mod ops_bank;
mod ops_bulk;
mod ops_claims;
mod ops_copies;
mod ops_excise;
mod ops_read;
mod ops_txn;
mod ops_write;
mod run;
mod setup;
mod stats;
mod verify;

use std::process::ExitCode;

/// Key names and value encodings, shared with the test of them (`tests/it/stress_values.rs`).
use siftdb_tests::stress_values as values;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Args::parse();
    if args.weights.table().is_empty() {
        eprintln!("stress: every operation weight is 0");
        return ExitCode::FAILURE;
    }
    let seed = args.seed.unwrap_or_else(|| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        now.as_nanos() as u64 % 1_000_000_007
    });
    if args.crash_test {
        crash::drive(&args, seed)
    } else if args.worker {
        run::worker(&args, seed)
    } else {
        run::stress(&args, seed)
    }
}
