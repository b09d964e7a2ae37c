//! The server's errors.

/// What can stop a node from starting or serving.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// A bad setting: the config file, or Raft's timings.
    #[error("configuration: {0}")]
    Config(String),
    /// The data directory cannot be used.
    #[error("data directory {dir}: {source}")]
    Storage {
        /// The directory.
        dir: String,
        /// Why.
        source: siftdb_raft::Error,
    },
    /// The address cannot be listened on (taken, or not this machine's).
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address.
        addr: std::net::SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// Raft failed to start or stopped.
    #[error("raft: {0}")]
    Raft(String),
    /// Serving failed.
    #[error("serving: {0}")]
    Serve(std::io::Error),
}
