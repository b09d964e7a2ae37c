//! siftdb as the storage beneath [openraft](https://docs.rs/openraft): the replicated log, the
//! vote and the state machine of one Raft node in one siftdb database.
//!
//! - The log lives in its own keyspace, one entry per key (the big-endian log index). An append
//!   is one synced write batch; openraft is told the entries are durable only after it.
//! - The vote, the committed and purged log ids and the state machine's last applied log id and
//!   membership live in a meta keyspace; a vote is written synced.
//! - `truncate` and `purge` are each one range delete (one WAL record, whatever the number of
//!   entries).
//! - The state machine applies [`Command`]s (put, delete, batch) to a state keyspace, with its
//!   last applied log id in the same write batch.
//! - A snapshot is the state keyspace read at one siftdb snapshot and written to a file, which
//!   openraft streams to followers; installing one writes its entries into table files, which a
//!   fresh state keyspace ingests, and switches to it with one synced batch.
//!
//! ```
//! use siftdb_raft::{Command, TypeConfig};
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let (log_store, state_machine) = siftdb_raft::open(dir.path(), siftdb::Options::default())?;
//! let reader = state_machine.reader();
//! // Hand both to `openraft::Raft::<TypeConfig>::new(id, config, network, log_store,
//! // state_machine)`; clients then call `raft.client_write(Command::put(b"k", b"v"))`, and any
//! // node reads what it has applied:
//! assert_eq!(reader.get(b"k")?, None);
//! # drop((log_store, state_machine));
//! # Ok(())
//! # }
//! ```
//!
//! `docs/DISTRIBUTED.md` in the repository describes the durability contract and the example
//! cluster (`examples/kv_cluster.rs`).
#![deny(missing_docs)]
#![warn(clippy::unwrap_used, clippy::expect_used)]
// openraft's traits return its own large error types (`StorageError`, `RPCError`); the helpers
// that build them return them too, and boxing would only be undone at the trait boundary.
#![allow(clippy::result_large_err)]

pub mod cluster;
mod codec;
mod error;
mod keys;
mod log_store;
pub mod network;
mod snapshot_file;
mod snapshot_install;
mod state_machine;
mod store;
mod table_sink;
mod types;

pub use error::Error;
pub use log_store::LogStore;
pub use snapshot_file::{read_snapshot, Meta as SnapshotMeta};
pub use state_machine::{SnapshotBuilder, StateMachine, StateReader};
pub use store::open;
pub use types::{Command, KeyValue, NodeId, Raft, Response, TypeConfig, MAX_COMMAND_BYTES};
