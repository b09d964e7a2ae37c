//! One node's operations, apart from any transport: writes through the Raft log, reads
//! (linearizable through the read index, or local), and membership. The HTTP layer
//! (`crate::http`) and the simulated network of the partition tests call the same methods.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use openraft::error::{CheckIsLeaderError, ClientWriteError, InitializeError, RaftError};
use openraft::BasicNode;
use serde::{Deserialize, Serialize};
use siftdb_raft::{Command, NodeId, Raft, StateReader};

/// A member of the cluster: its id and the address its clients and peers reach it at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    /// The node's id.
    pub id: NodeId,
    /// Its `host:port`.
    pub addr: String,
}

/// What a committed write answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteAck {
    /// The log index the write was committed at.
    pub index: u64,
}

/// Why an operation did not happen (or may not have).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OpError {
    /// This node is not the leader: the operation must go to `leader` (unknown while an
    /// election runs). Nothing was done.
    #[error("not the leader (leader: {leader:?})")]
    NotLeader {
        /// The leader this node knows of.
        leader: Option<Member>,
    },
    /// The request is malformed or names something siftdb cannot store. Nothing was done.
    #[error("invalid request: {0}")]
    Invalid(String),
    /// The cluster is already initialized, or a membership change is under way.
    #[error("conflict: {0}")]
    Conflict(String),
    /// The operation did not finish before its deadline (no quorum reachable): a write may
    /// or may not be committed later.
    #[error("timed out after {0:?}: the outcome is unknown")]
    Timeout(Duration),
    /// The node's Raft stopped (shut down, or a storage failure).
    #[error("raft stopped: {0}")]
    Stopped(String),
}

/// One node: its Raft handle and a reader of its state machine.
#[derive(Clone)]
pub struct Node {
    id: NodeId,
    raft: Raft,
    reader: StateReader,
    deadline: Duration,
}

impl Node {
    /// The node `id` over `raft`, reading its applied state through `reader`; operations give
    /// up after `deadline`.
    pub fn new(id: NodeId, raft: Raft, reader: StateReader, deadline: Duration) -> Node {
        Node {
            id,
            raft,
            reader,
            deadline,
        }
    }

    /// The node's id.
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// The Raft handle.
    pub fn raft(&self) -> &Raft {
        &self.raft
    }

    /// Commits `command` through the log; answers once it is applied here (the leader).
    pub async fn write(&self, command: Command) -> Result<WriteAck, OpError> {
        command
            .check()
            .map_err(|e| OpError::Invalid(e.to_string()))?;
        let written = self.timed(self.raft.client_write(command)).await?;
        written
            .map(|r| WriteAck {
                index: r.log_id.index,
            })
            .map_err(client_write_error)
    }

    /// The value of `key`. `linearizable`: only on the leader, after it confirmed with a quorum
    /// that it still leads and applied everything committed before the read began (openraft's
    /// read index), so the value is at least as new as any write acknowledged before the read
    /// started. Otherwise what this node has applied, however stale.
    pub async fn read(&self, key: &[u8], linearizable: bool) -> Result<Option<Vec<u8>>, OpError> {
        if linearizable {
            self.timed(self.raft.ensure_linearizable())
                .await?
                .map_err(check_leader_error)?;
        }
        self.reader
            .get(key)
            .map_err(|e| OpError::Stopped(format!("reading the state: {e}")))
    }

    /// Makes the cluster of `members` (this node among them) with this node's log as its first.
    pub async fn init(&self, members: &[Member]) -> Result<(), OpError> {
        let nodes: BTreeMap<NodeId, BasicNode> = members
            .iter()
            .map(|m| (m.id, BasicNode::new(&m.addr)))
            .collect();
        if nodes.len() != members.len() || !nodes.contains_key(&self.id) {
            return Err(OpError::Invalid(format!(
                "members must be distinct and include this node ({})",
                self.id
            )));
        }
        self.timed(self.raft.initialize(nodes))
            .await?
            .map_err(initialize_error)
    }

    /// Adds `member` as a learner and waits until it caught up with the log (or a snapshot).
    pub async fn add_learner(&self, member: &Member) -> Result<WriteAck, OpError> {
        let node = BasicNode::new(&member.addr);
        let added = self
            .timed(self.raft.add_learner(member.id, node, true))
            .await?;
        added
            .map(|r| WriteAck {
                index: r.log_id.index,
            })
            .map_err(client_write_error)
    }

    /// Makes `voters` the voting members (learners not named stay learners; a removed voter is
    /// dropped from the cluster).
    pub async fn change_membership(&self, voters: &BTreeSet<NodeId>) -> Result<WriteAck, OpError> {
        let changed = self
            .timed(self.raft.change_membership(voters.clone(), false))
            .await?;
        changed
            .map(|r| WriteAck {
                index: r.log_id.index,
            })
            .map_err(client_write_error)
    }

    /// openraft's metrics of this node now.
    pub fn metrics(&self) -> openraft::RaftMetrics<NodeId, BasicNode> {
        self.raft.metrics().borrow().clone()
    }

    async fn timed<T>(&self, f: impl std::future::Future<Output = T>) -> Result<T, OpError> {
        tokio::time::timeout(self.deadline, f)
            .await
            .map_err(|_| OpError::Timeout(self.deadline))
    }
}

fn forward(to: &openraft::error::ForwardToLeader<NodeId, BasicNode>) -> OpError {
    OpError::NotLeader {
        leader: to
            .leader_id
            .zip(to.leader_node.as_ref())
            .map(|(id, n)| Member {
                id,
                addr: n.addr.clone(),
            }),
    }
}

fn client_write_error(e: RaftError<NodeId, ClientWriteError<NodeId, BasicNode>>) -> OpError {
    match e {
        RaftError::APIError(ClientWriteError::ForwardToLeader(to)) => forward(&to),
        RaftError::APIError(ClientWriteError::ChangeMembershipError(c)) => {
            OpError::Conflict(c.to_string())
        }
        RaftError::Fatal(f) => OpError::Stopped(f.to_string()),
    }
}

fn check_leader_error(e: RaftError<NodeId, CheckIsLeaderError<NodeId, BasicNode>>) -> OpError {
    match e {
        RaftError::APIError(CheckIsLeaderError::ForwardToLeader(to)) => forward(&to),
        // The leader lost its quorum while checking: like not being the leader, nothing was
        // read, but there is no leader to name.
        RaftError::APIError(CheckIsLeaderError::QuorumNotEnough(q)) => {
            OpError::NotLeader { leader: None }.or_log(q)
        }
        RaftError::Fatal(f) => OpError::Stopped(f.to_string()),
    }
}

fn initialize_error(e: RaftError<NodeId, InitializeError<NodeId, BasicNode>>) -> OpError {
    match e {
        RaftError::APIError(InitializeError::NotAllowed(n)) => OpError::Conflict(n.to_string()),
        RaftError::APIError(InitializeError::NotInMembers(n)) => OpError::Invalid(n.to_string()),
        RaftError::Fatal(f) => OpError::Stopped(f.to_string()),
    }
}

impl OpError {
    fn or_log(self, why: impl std::fmt::Display) -> OpError {
        tracing::debug!("linearizable read refused: {why}");
        self
    }
}
