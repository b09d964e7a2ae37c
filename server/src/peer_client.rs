//! The Raft network between nodes: each RPC is an HTTP `POST` to the target's `/raft/...` route
//! (`crate::http::raft_rpc`), the request and the answer encoded with postcard (the log entries
//! and snapshot chunks are bytes; JSON would spell each as a number).

use openraft::error::{
    InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::{AnyError, BasicNode};
use serde::de::DeserializeOwned;
use serde::Serialize;
use siftdb_raft::{NodeId, TypeConfig};

/// Makes connections to peers over one pooled HTTP client.
#[derive(Clone)]
pub struct HttpNetwork {
    client: reqwest::Client,
}

impl HttpNetwork {
    /// A network whose connections open within `connect_timeout`.
    pub fn new(connect_timeout: std::time::Duration) -> Result<HttpNetwork, reqwest::Error> {
        let client = reqwest::Client::builder()
            .connect_timeout(connect_timeout)
            // A peer's RPC is answered by the peer itself: never follow a redirect.
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(HttpNetwork { client })
    }
}

impl RaftNetworkFactory<TypeConfig> for HttpNetwork {
    type Network = PeerConnection;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> PeerConnection {
        PeerConnection {
            client: self.client.clone(),
            target,
            base: format!("http://{}", node.addr),
        }
    }
}

/// The link to one peer.
pub struct PeerConnection {
    client: reqwest::Client,
    target: NodeId,
    base: String,
}

type RpcResult<T, E = openraft::error::Infallible> =
    Result<T, RPCError<NodeId, BasicNode, RaftError<NodeId, E>>>;

impl PeerConnection {
    /// Posts `request` to `route` and decodes the peer's answer: its result, or its Raft error.
    async fn call<Req, Resp, E>(
        &self,
        route: &str,
        request: &Req,
        option: &RPCOption,
    ) -> RpcResult<Resp, E>
    where
        Req: Serialize,
        Resp: DeserializeOwned,
        E: std::error::Error + DeserializeOwned,
    {
        let body = postcard::to_stdvec(request).map_err(|e| network_error(&e))?;
        let response = self
            .client
            .post(format!("{}/raft/{route}", self.base))
            .timeout(option.hard_ttl())
            .body(body)
            .send()
            .await
            .map_err(|e| {
                if e.is_connect() {
                    RPCError::Unreachable(Unreachable::new(&e))
                } else {
                    network_error(&e)
                }
            })?;
        if !response.status().is_success() {
            let status = response.status();
            let text = response.text().await.unwrap_or_default();
            return Err(network_error(&AnyError::error(format!(
                "{route}: {status}: {text}"
            ))));
        }
        let bytes = response.bytes().await.map_err(|e| network_error(&e))?;
        let answer: Result<Resp, RaftError<NodeId, E>> =
            postcard::from_bytes(&bytes).map_err(|e| network_error(&e))?;
        answer.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
    }
}

fn network_error<E, T: std::error::Error + 'static>(e: &T) -> RPCError<NodeId, BasicNode, E>
where
    E: std::error::Error,
{
    RPCError::Network(NetworkError::new(e))
}

impl RaftNetwork<TypeConfig> for PeerConnection {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> RpcResult<AppendEntriesResponse<NodeId>> {
        self.call("append", &rpc, &option).await
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> RpcResult<InstallSnapshotResponse<NodeId>, InstallSnapshotError> {
        self.call("snapshot", &rpc, &option).await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> RpcResult<VoteResponse<NodeId>> {
        self.call("vote", &rpc, &option).await
    }
}
