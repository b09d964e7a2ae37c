//! The Raft type configuration: the commands the state machine applies and what it answers.

use serde::{Deserialize, Serialize};

use crate::Error;

/// The largest command, in bytes as the log encodes it: siftdb's value limit (the log stores a
/// command as one value), less room for the entry's log id and framing.
pub const MAX_COMMAND_BYTES: usize = siftdb::MAX_VALUE_SIZE - 4096;

/// A node's id in the cluster.
pub type NodeId = u64;

/// A key and its value.
pub type KeyValue = (Vec<u8>, Vec<u8>);

/// A command of the replicated key-value state machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
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

    /// Whether siftdb can store the command: every key at most [`siftdb::MAX_KEY_SIZE`]
    /// bytes, every value at most [`siftdb::MAX_VALUE_SIZE`], and the whole command (which the
    /// log stores as one value) at most [`MAX_COMMAND_BYTES`]. A command that fails this is
    /// applied as a no-op on every node (its [`Response::rejected`] says why);
    /// [`crate::cluster::write`] refuses it before it reaches the log. Check a command before
    /// `Raft::client_write`: a log entry larger than siftdb's value limit fails the leader's
    /// append, which openraft treats as fatal.
    ///
    /// ```
    /// use siftdb_raft::Command;
    /// assert!(Command::put(b"k", b"v").check().is_ok());
    /// assert!(Command::delete(vec![0; siftdb::MAX_KEY_SIZE + 1]).check().is_err());
    /// ```
    ///
    /// The limit bounds the command as the log encodes it, not only its keys and values: each
    /// operation adds a few bytes, so a batch of many small operations under the limit in keys
    /// and values alone could encode to an entry over siftdb's value limit.
    pub fn check(&self) -> Result<(), Error> {
        self.check_applicable()?;
        let encoded = postcard::experimental::serialized_size(self)
            .map_err(|e| Error::InvalidCommand(format!("the command does not encode: {e}")))?;
        if encoded > MAX_COMMAND_BYTES {
            return Err(Error::InvalidCommand(format!(
                "the command encodes to {encoded} bytes, over the {MAX_COMMAND_BYTES}-byte limit"
            )));
        }
        Ok(())
    }

    /// What the state machine checks of a command in the log before it applies it: every key
    /// and value within siftdb's limits, and at most [`MAX_COMMAND_BYTES`] of them. A command
    /// in the log was appended already, so its encoded size is not asked again (an entry an
    /// older node accepted is applied the same way by every node).
    pub(crate) fn check_applicable(&self) -> Result<(), Error> {
        self.check_sizes()?;
        let bytes = self.size_bytes();
        if bytes > MAX_COMMAND_BYTES {
            return Err(Error::InvalidCommand(format!(
                "{bytes} bytes of keys and values exceed the {MAX_COMMAND_BYTES}-byte limit"
            )));
        }
        Ok(())
    }

    fn check_sizes(&self) -> Result<(), Error> {
        let (key, value) = match self {
            Command::Put { key, value } => (key, Some(value)),
            Command::Delete { key } => (key, None),
            Command::Batch(commands) => return commands.iter().try_for_each(Command::check_sizes),
        };
        if key.len() > siftdb::MAX_KEY_SIZE {
            return Err(Error::InvalidCommand(format!(
                "key of {} bytes exceeds siftdb's {}-byte limit",
                key.len(),
                siftdb::MAX_KEY_SIZE
            )));
        }
        match value {
            Some(v) if v.len() > siftdb::MAX_VALUE_SIZE => Err(Error::InvalidCommand(format!(
                "value of {} bytes exceeds siftdb's {}-byte limit",
                v.len(),
                siftdb::MAX_VALUE_SIZE
            ))),
            _ => Ok(()),
        }
    }

    /// The bytes of the command's keys and values.
    pub fn size_bytes(&self) -> usize {
        match self {
            Command::Put { key, value } => key.len() + value.len(),
            Command::Delete { key } => key.len(),
            Command::Batch(commands) => commands.iter().map(Command::size_bytes).sum(),
        }
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
    /// Why the command was applied as a no-op, if it was (the sizes of [`Command::check`],
    /// without its bound on the encoded size, which the log checked when it took the entry).
    #[serde(default)]
    pub rejected: Option<String>,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A batch of many operations whose keys and values are just under the limit: the old
    /// check (keys and values only) passed it, yet its log entry encodes to more than siftdb's
    /// value limit, so its append would fail on every node that leads.
    #[test]
    fn a_batch_whose_entry_would_exceed_the_value_limit_is_refused() {
        const OPS: usize = 1100;
        let value_len = MAX_COMMAND_BYTES / OPS - 1;
        // Zeroed allocations are not touched: sizing a command reads lengths only.
        let batch = Command::Batch(
            (0..OPS)
                .map(|_| Command::put(vec![b'k'], vec![0u8; value_len]))
                .collect(),
        );
        assert!(batch.size_bytes() <= MAX_COMMAND_BYTES);
        assert!(batch.check_applicable().is_ok(), "the old check passes it");
        let entry = openraft::Entry::<TypeConfig> {
            log_id: openraft::LogId::new(openraft::CommittedLeaderId::new(1, 1), 1),
            payload: openraft::EntryPayload::Normal(batch.clone()),
        };
        let encoded = postcard::experimental::serialized_size(&entry).expect("size");
        assert!(
            encoded > siftdb::MAX_VALUE_SIZE,
            "the suspect: {encoded} bytes fit the value limit"
        );
        assert!(matches!(batch.check(), Err(Error::InvalidCommand(_))));
        let fits = Command::Batch(vec![Command::put(b"k".to_vec(), vec![0u8; value_len])]);
        assert!(fits.check().is_ok());
    }
}
