//! A node's settings: its identity and address from the command line, Raft's timing and the
//! storage's options from an optional TOML file (`--config`).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

use crate::error::ServerError;

/// What one node runs with.
#[derive(Debug, Clone)]
pub struct NodeConfig {
    /// The node's id in the cluster (unique, never reused for a node whose data was lost).
    pub id: u64,
    /// The address it listens on for clients and peers, and that peers reach it at.
    pub addr: SocketAddr,
    /// Its data directory (the siftdb database of the log, the vote and the state).
    pub dir: PathBuf,
    /// Raft's timing and snapshots.
    pub raft: RaftSettings,
}

/// Raft's timing and snapshot policy, as read from `[raft]` of the config file.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RaftSettings {
    /// Milliseconds between the leader's heartbeats.
    pub heartbeat_interval_ms: u64,
    /// A follower that hears no leader for a random time between these two (milliseconds)
    /// calls an election.
    pub election_timeout_min_ms: u64,
    /// See `election_timeout_min_ms`.
    pub election_timeout_max_ms: u64,
    /// A snapshot every this many applied log entries.
    pub snapshot_every: u64,
    /// Log entries kept behind a snapshot (a follower further behind gets the snapshot).
    pub keep_logs: u64,
    /// Bytes of a snapshot chunk sent to a follower.
    pub snapshot_chunk_bytes: u64,
}

impl Default for RaftSettings {
    fn default() -> Self {
        RaftSettings {
            heartbeat_interval_ms: 100,
            election_timeout_min_ms: 500,
            election_timeout_max_ms: 1000,
            snapshot_every: 10_000,
            keep_logs: 1_000,
            snapshot_chunk_bytes: 1 << 20,
        }
    }
}

impl RaftSettings {
    /// openraft's configuration for these settings, checked.
    pub fn openraft_config(&self) -> Result<Arc<openraft::Config>, ServerError> {
        let config = openraft::Config {
            cluster_name: "siftdb".to_string(),
            heartbeat_interval: self.heartbeat_interval_ms,
            election_timeout_min: self.election_timeout_min_ms,
            election_timeout_max: self.election_timeout_max_ms,
            snapshot_policy: openraft::SnapshotPolicy::LogsSinceLast(self.snapshot_every),
            max_in_snapshot_log_to_keep: self.keep_logs,
            snapshot_max_chunk_size: self.snapshot_chunk_bytes,
            ..openraft::Config::default()
        };
        config
            .validate()
            .map(Arc::new)
            .map_err(|e| ServerError::Config(format!("raft settings: {e}")))
    }
}

/// The config file: every table optional.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct ConfigFile {
    raft: RaftSettings,
}

/// Reads the `[raft]` settings of the TOML file at `path`.
pub fn read_config_file(path: &Path) -> Result<RaftSettings, ServerError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ServerError::Config(format!("cannot read {}: {e}", path.display())))?;
    let file: ConfigFile = toml::from_str(&text)
        .map_err(|e| ServerError::Config(format!("{}: {e}", path.display())))?;
    Ok(file.raft)
}
