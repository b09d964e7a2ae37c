//! The same nodes as `siftdb-server` runs (siftdb-raft storage, openraft, [`Node`]'s
//! operations) in one process, over a simulated network: each link drops, delays and
//! duplicates messages, and links between partitioned nodes carry nothing, as a seeded random
//! source decides. A nemesis partitions and heals while clients run; every client operation is
//! recorded with its call and return times for the linearizability checker.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use openraft::error::{InstallSnapshotError, RPCError, RaftError, RemoteError, Unreachable};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::{AnyError, BasicNode};
use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use siftdb_raft::{NodeId, Raft, TypeConfig};
use siftdb_server::Node;

/// How the links misbehave.
#[derive(Debug, Clone, Copy, Default)]
pub struct LinkFaults {
    /// Chance a request is lost before it arrives.
    pub drop_request: f64,
    /// Chance the answer is lost after the request was handled.
    pub drop_response: f64,
    /// Chance a request is delivered twice.
    pub duplicate: f64,
    /// Longest delay of a message, each way (uniform from 0).
    pub max_delay: Duration,
}

struct NetState {
    rng: StdRng,
    /// Each node's side; nodes on different sides cannot reach each other.
    side: BTreeMap<NodeId, u8>,
    faults: LinkFaults,
}

/// The simulated network of one cluster. Clones share it.
#[derive(Clone)]
pub struct SimNet {
    nodes: Arc<Mutex<BTreeMap<NodeId, Raft>>>,
    state: Arc<Mutex<NetState>>,
}

impl SimNet {
    /// A network whose random choices follow `seed`.
    pub fn new(seed: u64) -> SimNet {
        SimNet {
            nodes: Arc::default(),
            state: Arc::new(Mutex::new(NetState {
                rng: StdRng::seed_from_u64(seed),
                side: BTreeMap::new(),
                faults: LinkFaults::default(),
            })),
        }
    }

    /// Makes node `id` reachable through `raft`.
    pub fn add(&self, id: NodeId, raft: Raft) {
        self.nodes.lock().insert(id, raft);
    }

    /// The factory node `from` makes its links with.
    pub fn factory(&self, from: NodeId) -> SimFactory {
        SimFactory {
            net: self.clone(),
            from,
        }
    }

    /// Splits the nodes: those in `minority` on one side, the rest on the other.
    pub fn partition(&self, minority: &BTreeSet<NodeId>) {
        let mut state = self.state.lock();
        let ids: Vec<NodeId> = self.nodes.lock().keys().copied().collect();
        state.side = ids
            .into_iter()
            .map(|id| (id, u8::from(minority.contains(&id))))
            .collect();
    }

    /// Every node reaches every other again.
    pub fn heal(&self) {
        self.state.lock().side.clear();
    }

    /// Sets how links misbehave (between nodes that can reach each other).
    pub fn set_faults(&self, faults: LinkFaults) {
        self.state.lock().faults = faults;
    }

    /// A number from the network's random source.
    pub fn random(&self, below: u64) -> u64 {
        self.state.lock().rng.gen_range(0..below)
    }

    fn connected(&self, a: NodeId, b: NodeId) -> bool {
        let state = self.state.lock();
        state.side.get(&a).copied().unwrap_or(0) == state.side.get(&b).copied().unwrap_or(0)
    }

    /// Draws the fate of one message: (its delay, lost on the way there, lost on the way back,
    /// delivered twice).
    fn draw(&self) -> (Duration, Duration, bool, bool, bool) {
        let mut state = self.state.lock();
        let f = state.faults;
        let max = f.max_delay.as_micros() as u64;
        let there = Duration::from_micros(if max > 0 {
            state.rng.gen_range(0..=max)
        } else {
            0
        });
        let back = Duration::from_micros(if max > 0 {
            state.rng.gen_range(0..=max)
        } else {
            0
        });
        let lose_request = state.rng.gen_bool(f.drop_request);
        let lose_response = state.rng.gen_bool(f.drop_response);
        let duplicate = state.rng.gen_bool(f.duplicate);
        (there, back, lose_request, lose_response, duplicate)
    }
}

/// Makes node `from`'s links.
pub struct SimFactory {
    net: SimNet,
    from: NodeId,
}

impl RaftNetworkFactory<TypeConfig> for SimFactory {
    type Network = SimLink;

    async fn new_client(&mut self, target: NodeId, _node: &BasicNode) -> SimLink {
        SimLink {
            net: self.net.clone(),
            from: self.from,
            to: target,
        }
    }
}

/// One direction of one link.
pub struct SimLink {
    net: SimNet,
    from: NodeId,
    to: NodeId,
}

type RpcResult<T, E = openraft::error::Infallible> =
    Result<T, RPCError<NodeId, BasicNode, RaftError<NodeId, E>>>;

fn unreachable<E: std::error::Error>(why: &str) -> RPCError<NodeId, BasicNode, E> {
    RPCError::Unreachable(Unreachable::new(&AnyError::error(why)))
}

impl SimLink {
    /// Carries `request` to the target and its answer back, with the link's faults: the
    /// target handles a request whose answer is then lost; a duplicate is handled again.
    async fn carry<Req, Resp, E, F, Fut>(&self, request: Req, handle: F) -> RpcResult<Resp, E>
    where
        Req: Clone + Send + 'static,
        Resp: Send + 'static,
        E: std::error::Error + Send + 'static,
        F: Fn(Raft, Req) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<Resp, RaftError<NodeId, E>>> + Send + 'static,
    {
        let (there, back, lose_request, lose_response, duplicate) = self.net.draw();
        tokio::time::sleep(there).await;
        if lose_request || !self.net.connected(self.from, self.to) {
            return Err(unreachable("lost on the way"));
        }
        let Some(raft) = self.net.nodes.lock().get(&self.to).cloned() else {
            return Err(unreachable("no such node"));
        };
        let handle = Arc::new(handle);
        if duplicate {
            let (raft, request, handle) = (raft.clone(), request.clone(), Arc::clone(&handle));
            tokio::spawn(async move {
                let _ = handle(raft, request).await;
            });
        }
        let answer = handle(raft, request).await;
        tokio::time::sleep(back).await;
        if lose_response || !self.net.connected(self.to, self.from) {
            return Err(unreachable("answer lost"));
        }
        answer.map_err(|e| RPCError::RemoteError(RemoteError::new(self.to, e)))
    }
}

impl RaftNetwork<TypeConfig> for SimLink {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        _option: RPCOption,
    ) -> RpcResult<AppendEntriesResponse<NodeId>> {
        self.carry(
            rpc,
            |raft, rpc| async move { raft.append_entries(rpc).await },
        )
        .await
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        _option: RPCOption,
    ) -> RpcResult<InstallSnapshotResponse<NodeId>, InstallSnapshotError> {
        self.carry(
            rpc,
            |raft, rpc| async move { raft.install_snapshot(rpc).await },
        )
        .await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        _option: RPCOption,
    ) -> RpcResult<VoteResponse<NodeId>> {
        self.carry(rpc, |raft, rpc| async move { raft.vote(rpc).await })
            .await
    }
}

/// A cluster of nodes over one [`SimNet`], their databases on an in-memory file system.
pub struct SimCluster {
    pub net: SimNet,
    pub nodes: BTreeMap<NodeId, Node>,
    _dir: tempfile::TempDir,
    started: Instant,
}

/// Raft timing for the simulation: quick heartbeats and elections, and snapshots often enough
/// that lagging nodes are sent them.
pub fn sim_config() -> Arc<openraft::Config> {
    let config = openraft::Config {
        cluster_name: "sim".to_string(),
        heartbeat_interval: 30,
        election_timeout_min: 150,
        election_timeout_max: 300,
        snapshot_policy: openraft::SnapshotPolicy::LogsSinceLast(100),
        max_in_snapshot_log_to_keep: 20,
        ..openraft::Config::default()
    };
    Arc::new(config.validate().unwrap())
}

impl SimCluster {
    /// Nodes 1..=`n`, initialized as one cluster, over a network seeded with `seed`.
    pub async fn start(n: u64, seed: u64, deadline: Duration) -> SimCluster {
        let net = SimNet::new(seed);
        let dir = tempfile::tempdir().unwrap();
        let fs = siftdb_tests::FaultFs::new();
        let mut nodes = BTreeMap::new();
        for id in 1..=n {
            let options = siftdb::Options {
                fs: Arc::new(fs.clone()),
                write_buffer_size: 64 << 10,
                ..siftdb::Options::default()
            };
            let (log, sm) = siftdb_raft::open(dir.path().join(format!("n{id}")), options).unwrap();
            let reader = sm.reader();
            let raft = Raft::new(id, sim_config(), net.factory(id), log, sm)
                .await
                .unwrap();
            net.add(id, raft.clone());
            nodes.insert(id, Node::new(id, raft, reader, deadline));
        }
        let members: BTreeMap<NodeId, BasicNode> = (1..=n)
            .map(|id| (id, BasicNode::new(format!("sim-{id}"))))
            .collect();
        nodes[&1].raft().initialize(members).await.unwrap();
        SimCluster {
            net,
            nodes,
            _dir: dir,
            started: Instant::now(),
        }
    }

    /// Microseconds since the cluster started: the history's clock.
    pub fn now(&self) -> u64 {
        self.started.elapsed().as_micros() as u64
    }

    /// The node that believes it leads, if one does and is not partitioned from a majority.
    pub fn believed_leader(&self) -> Option<NodeId> {
        self.nodes
            .values()
            .find(|n| n.metrics().state == openraft::ServerState::Leader)
            .map(Node::id)
    }

    /// Waits until some node leads (a quorum elected it).
    pub async fn wait_leader(&self, within: Duration) -> NodeId {
        let until = Instant::now() + within;
        loop {
            let leaders: BTreeSet<NodeId> = self
                .nodes
                .values()
                .filter_map(|n| n.metrics().current_leader)
                .collect();
            if leaders.len() == 1 {
                return *leaders.iter().next().unwrap();
            }
            assert!(Instant::now() < until, "no leader: {leaders:?}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    pub async fn shutdown(self) {
        for node in self.nodes.values() {
            let _ = node.raft().shutdown().await;
        }
    }
}
