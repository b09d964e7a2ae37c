//! Cluster administration: `/cluster/init`, `/cluster/add-learner`,
//! `/cluster/change-membership`, `/cluster/metrics`, and Prometheus' `/metrics`.

use std::collections::BTreeSet;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;
use siftdb_raft::NodeId;

use super::reply;
use super::AppState;
use crate::node::Member;

/// `POST /cluster/init` with `[{"id": 1, "addr": "127.0.0.1:7001"}, ...]`.
pub(crate) async fn init(State(app): State<AppState>, uri: Uri, body: Bytes) -> Response {
    let members: Vec<Member> = match reply::json_body(&body, "a list of {id, addr}") {
        Ok(m) => m,
        Err(r) => return r,
    };
    match app.node.init(&members).await {
        Ok(()) => (StatusCode::OK, Json(json!({ "initialized": members }))).into_response(),
        Err(e) => reply::error(&uri, &e),
    }
}

/// `POST /cluster/add-learner` with `{"id": 4, "addr": "..."}`: answers once it caught up.
pub(crate) async fn add_learner(State(app): State<AppState>, uri: Uri, body: Bytes) -> Response {
    let member: Member = match reply::json_body(&body, "{id, addr}") {
        Ok(m) => m,
        Err(r) => return r,
    };
    match app.node.add_learner(&member).await {
        Ok(ack) => (StatusCode::OK, Json(ack)).into_response(),
        Err(e) => reply::error(&uri, &e),
    }
}

/// `POST /cluster/change-membership` with the voters' ids, `[1, 2, 4]`.
pub(crate) async fn change_membership(
    State(app): State<AppState>,
    uri: Uri,
    body: Bytes,
) -> Response {
    let voters: BTreeSet<NodeId> = match reply::json_body(&body, "a list of voter ids") {
        Ok(v) => v,
        Err(r) => return r,
    };
    match app.node.change_membership(&voters).await {
        Ok(ack) => (StatusCode::OK, Json(ack)).into_response(),
        Err(e) => reply::error(&uri, &e),
    }
}

/// `GET /cluster/metrics`: openraft's metrics of this node, as JSON.
pub(crate) async fn metrics(State(app): State<AppState>) -> Response {
    Json(app.node.metrics()).into_response()
}

/// `GET /metrics`: the storage's and the node's figures in Prometheus' text format.
pub(crate) async fn prometheus(State(app): State<AppState>) -> Response {
    match &app.prometheus {
        Some(handle) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
            handle.render(),
        )
            .into_response(),
        None => (StatusCode::NOT_FOUND, "metrics are off").into_response(),
    }
}
