//! The Raft type configuration: the commands the state machine applies and what it answers.

use serde::{Deserialize, Serialize};

/// A node's id in the cluster.
pub type NodeId = u64;

/// A key and its value.
pub type KeyValue = (Vec<u8>, Vec<u8>);

/// A command of the replicated key-value state machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Command {
    /// Sets `key` to `value`.
    Put {
        /// The key.
        key: Vec<u8>,
        /// The value.
        value: Vec<u8>,
    },
    /// Removes `key`.
    Delete {
        /// The key.
        key: Vec<u8>,
    },
    /// Several commands applied together, in order (nested batches are flattened).
    Batch(Vec<Command>),
}

impl Command {
    /// A put of `key` = `value`.
    pub fn put(key: impl Into<Vec<u8>>, value: impl Into<Vec<u8>>) -> Command {
        Command::Put {
            key: key.into(),
            value: value.into(),
        }
    }

    /// A delete of `key`.
    pub fn delete(key: impl Into<Vec<u8>>) -> Command {
        Command::Delete { key: key.into() }
    }

    /// How many puts and deletes the command holds.
    pub fn ops(&self) -> u64 {
        match self {
            Command::Put { .. } | Command::Delete { .. } => 1,
            Command::Batch(commands) => commands.iter().map(Command::ops).sum(),
        }
    }
}

/// What applying one log entry did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Response {
    /// Puts and deletes applied (0 for a blank or membership entry).
    pub ops: u64,
}

openraft::declare_raft_types!(
    /// openraft's type configuration for a siftdb-backed node: [`Command`]s in, [`Response`]s
    /// out, `u64` node ids, snapshots streamed as files.
    pub TypeConfig:
        D = Command,
        R = Response,
        NodeId = NodeId,
        Node = openraft::BasicNode,
        Entry = openraft::Entry<TypeConfig>,
        SnapshotData = tokio::fs::File,
        AsyncRuntime = openraft::TokioRuntime,
);

/// A Raft node running over siftdb storage.
pub type Raft = openraft::Raft<TypeConfig>;
