//! `siftdb-server`: one node of a replicated key-value service. siftdb stores the Raft log, the
//! vote and the state machine ([`siftdb_raft`]); openraft replicates; one HTTP port serves
//! clients (`/kv/...`, `/cluster/...`, `/metrics`) and peers (`/raft/...`).
//!
//! Writes go through the leader's log and answer once committed; reads are linearizable by
//! default (the leader confirms with a quorum that it still leads before it reads, openraft's
//! read index) or local with `?stale=true`. A node that is not the leader answers a client with
//! `307` to the same path on the leader. `docs/DISTRIBUTED.md` has the API, the promises and
//! how to run a cluster.
//!
//! ```no_run
//! # async fn run() -> Result<(), siftdb_server::ServerError> {
//! use siftdb_server::{serve, NodeConfig, RaftSettings};
//! let config = NodeConfig {
//!     id: 1,
//!     addr: "127.0.0.1:7001".parse().unwrap(),
//!     dir: "/var/lib/siftdb/node1".into(),
//!     raft: RaftSettings::default(),
//! };
//! // Serves until the future given as `shutdown` completes (the binary passes SIGTERM).
//! serve(config, None, std::future::pending()).await
//! # }
//! ```
#![deny(missing_docs)]
#![warn(clippy::unwrap_used, clippy::expect_used)]
// openraft's traits return its own large error types (`RPCError`, `RaftError`).
#![allow(clippy::result_large_err)]

mod config;
mod error;
pub mod http;
pub mod linearizability;
mod node;
mod peer_client;

use std::future::Future;
use std::time::Duration;

pub use config::{read_config_file, NodeConfig, RaftSettings};
pub use error::ServerError;
pub use metrics_exporter_prometheus::PrometheusHandle;
pub use node::{Member, Node, OpError, WriteAck};
pub use peer_client::HttpNetwork;

/// How long a client's operation may wait for the cluster (a quorum) before it answers that
/// the outcome is unknown.
pub const OPERATION_DEADLINE: Duration = Duration::from_secs(5);

/// Opens the node's storage in `config.dir`, starts its Raft, and serves clients and peers on
/// `config.addr` until `shutdown` completes; then stops Raft and closes the storage. The
/// address is bound first, so a taken port fails before the directory is touched.
pub async fn serve(
    config: NodeConfig,
    prometheus: Option<PrometheusHandle>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    let listener = tokio::net::TcpListener::bind(config.addr)
        .await
        .map_err(|source| ServerError::Listen {
            addr: config.addr,
            source,
        })?;
    let node = start_node(&config).await?;
    tracing::info!(id = config.id, addr = %config.addr, dir = %config.dir.display(), "serving");
    let app = http::router(node.clone(), prometheus);
    let served = axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(ServerError::Serve);
    tracing::info!(id = config.id, "shutting down");
    node.raft()
        .shutdown()
        .await
        .map_err(|e| ServerError::Raft(format!("shutdown: {e}")))?;
    served
}

/// Opens the storage and starts Raft over the HTTP network.
async fn start_node(config: &NodeConfig) -> Result<Node, ServerError> {
    let storage_error = |source| ServerError::Storage {
        dir: config.dir.display().to_string(),
        source,
    };
    if config.dir.exists() && !config.dir.is_dir() {
        return Err(storage_error(siftdb_raft::Error::Io(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            "exists and is not a directory",
        ))));
    }
    let options = siftdb::Options {
        metrics_interval: Some(Duration::from_secs(5)),
        ..siftdb::Options::default()
    };
    let (log_store, state_machine) =
        siftdb_raft::open(&config.dir, options).map_err(storage_error)?;
    let reader = state_machine.reader();
    let network = HttpNetwork::new(Duration::from_secs(1))
        .map_err(|e| ServerError::Raft(format!("HTTP client: {e}")))?;
    let raft = siftdb_raft::Raft::new(
        config.id,
        config.raft.openraft_config()?,
        network,
        log_store,
        state_machine,
    )
    .await
    .map_err(|e| ServerError::Raft(e.to_string()))?;
    Ok(Node::new(config.id, raft, reader, OPERATION_DEADLINE))
}
