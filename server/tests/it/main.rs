//! siftdb-server's integration tests, one binary: the HTTP API's contract, the binary's
//! refusals of bad input, real server processes killed and restarted, and in-process clusters
//! over a simulated network that partitions (their histories checked for linearizability).

use tokio::sync::RwLock;

mod api_contract;
mod cli_errors;
mod cluster_kills;
mod common;
mod config_file;
mod linearizability_checker;
mod partitions;
mod sim;

/// The kill test's three server processes time their operations; it runs alone (a write lock),
/// the other cluster tests beside each other (read locks), as when each suite had a binary.
static CLUSTERS: RwLock<()> = RwLock::const_new(());
