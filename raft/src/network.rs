//! An in-process network: nodes of one process reach each other's [`Raft`](crate::Raft) handles directly,
//! without sockets. For tests, benchmarks and the example cluster; a node that is removed (or
//! never added) is unreachable, as a crashed server would be.

use std::collections::BTreeMap;
use std::sync::Arc;

use openraft::error::{InstallSnapshotError, RPCError, RaftError, RemoteError, Unreachable};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::{AnyError, BasicNode, RaftTypeConfig};
use parking_lot::RwLock;

/// The nodes of one process, by id. Clones share the table.
pub struct Router<C: RaftTypeConfig> {
    nodes: Arc<RwLock<BTreeMap<C::NodeId, openraft::Raft<C>>>>,
}

impl<C: RaftTypeConfig> Clone for Router<C> {
    fn clone(&self) -> Self {
        Router {
            nodes: Arc::clone(&self.nodes),
        }
    }
}

impl<C: RaftTypeConfig> Default for Router<C> {
    fn default() -> Self {
        Router {
            nodes: Arc::default(),
        }
    }
}

impl<C: RaftTypeConfig> Router<C> {
    /// An empty network.
    pub fn new() -> Self {
        Self::default()
    }

    /// Makes node `id` reachable through `raft`.
    pub fn add(&self, id: C::NodeId, raft: openraft::Raft<C>) {
        self.nodes.write().insert(id, raft);
    }

    /// Makes node `id` unreachable; returns its handle.
    pub fn remove(&self, id: &C::NodeId) -> Option<openraft::Raft<C>> {
        self.nodes.write().remove(id)
    }

    /// The ids of the reachable nodes.
    pub fn ids(&self) -> Vec<C::NodeId> {
        self.nodes.read().keys().cloned().collect()
    }

    /// The handle of node `id`, if it is reachable.
    pub fn get(&self, id: &C::NodeId) -> Option<openraft::Raft<C>> {
        self.nodes.read().get(id).cloned()
    }

    fn target<E: std::error::Error>(
        &self,
        id: &C::NodeId,
    ) -> Result<openraft::Raft<C>, RPCError<C::NodeId, C::Node, E>> {
        self.get(id)
            .ok_or_else(|| Unreachable::new(&AnyError::error(format!("node {id} is down"))).into())
    }
}

impl<C> RaftNetworkFactory<C> for Router<C>
where
    C: RaftTypeConfig<Node = BasicNode>,
{
    type Network = Connection<C>;

    async fn new_client(&mut self, target: C::NodeId, _node: &BasicNode) -> Connection<C> {
        Connection {
            router: self.clone(),
            target,
        }
    }
}

/// One node's link to another through a [`Router`].
pub struct Connection<C: RaftTypeConfig> {
    router: Router<C>,
    target: C::NodeId,
}

type Rpc<C, T, E = openraft::error::Infallible> = Result<
    T,
    RPCError<
        <C as RaftTypeConfig>::NodeId,
        <C as RaftTypeConfig>::Node,
        RaftError<<C as RaftTypeConfig>::NodeId, E>,
    >,
>;

impl<C> RaftNetwork<C> for Connection<C>
where
    C: RaftTypeConfig<Node = BasicNode>,
{
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<C>,
        _option: RPCOption,
    ) -> Rpc<C, AppendEntriesResponse<C::NodeId>> {
        let raft = self.router.target(&self.target)?;
        raft.append_entries(rpc)
            .await
            .map_err(|e| RemoteError::new(self.target.clone(), e).into())
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<C>,
        _option: RPCOption,
    ) -> Rpc<C, InstallSnapshotResponse<C::NodeId>, InstallSnapshotError> {
        let raft = self.router.target(&self.target)?;
        raft.install_snapshot(rpc)
            .await
            .map_err(|e| RemoteError::new(self.target.clone(), e).into())
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<C::NodeId>,
        _option: RPCOption,
    ) -> Rpc<C, VoteResponse<C::NodeId>> {
        let raft = self.router.target(&self.target)?;
        raft.vote(rpc)
            .await
            .map_err(|e| RemoteError::new(self.target.clone(), e).into())
    }
}
