//! The node's HTTP interface, one port for clients and peers: the key-value API (`/kv/...`,
//! JSON errors), cluster administration (`/cluster/...`), Prometheus metrics (`/metrics`), and
//! the Raft RPCs between nodes (`/raft/...`, postcard bodies).

mod client;
mod cluster;
mod keys;
mod raft_rpc;
mod reply;

use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use axum::Router;
use metrics_exporter_prometheus::PrometheusHandle;

use crate::node::Node;

/// What every handler reads.
#[derive(Clone)]
pub(crate) struct AppState {
    pub node: Node,
    pub prometheus: Option<PrometheusHandle>,
}

/// The routes of a node serving `node`; `/metrics` renders `prometheus` (404 without it).
pub fn router(node: Node, prometheus: Option<PrometheusHandle>) -> Router {
    let state = AppState { node, prometheus };
    // A client's body is one command: at most the largest one the log takes, with room for
    // the JSON of a batch.
    let client_limit = DefaultBodyLimit::max(siftdb_raft::MAX_COMMAND_BYTES.saturating_mul(2));
    let kv = Router::new()
        // "/kv/batch" is a route of its own; its other methods act on the key "batch".
        .route(
            "/kv/batch",
            post(client::batch)
                .put(client::put)
                .get(client::get)
                .delete(client::delete),
        )
        .route(
            "/kv/{key}",
            get(client::get).put(client::put).delete(client::delete),
        )
        .layer(client_limit);
    let cluster = Router::new()
        .route("/cluster/init", post(cluster::init))
        .route("/cluster/add-learner", post(cluster::add_learner))
        .route(
            "/cluster/change-membership",
            post(cluster::change_membership),
        )
        .route("/cluster/metrics", get(cluster::metrics))
        .route("/metrics", get(cluster::prometheus));
    // Peers are trusted: an append of many entries or a snapshot chunk may be large.
    let raft = Router::new()
        .route("/raft/append", post(raft_rpc::append))
        .route("/raft/vote", post(raft_rpc::vote))
        .route("/raft/snapshot", post(raft_rpc::snapshot))
        .layer(DefaultBodyLimit::disable());
    kv.merge(cluster).merge(raft).with_state(state)
}
