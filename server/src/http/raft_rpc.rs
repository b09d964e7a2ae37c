//! The Raft RPCs peers send (`crate::peer_client`): postcard in, postcard out; the answer is
//! the local Raft's result, its error included, for the sender to interpret.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::AppState;

fn decode<T: DeserializeOwned>(body: &Bytes) -> Result<T, Response> {
    postcard::from_bytes(body).map_err(|e| {
        (
            StatusCode::BAD_REQUEST,
            format!("undecodable Raft RPC: {e}"),
        )
            .into_response()
    })
}

fn encode<T: Serialize>(answer: &T) -> Response {
    match postcard::to_stdvec(answer) {
        Ok(bytes) => (StatusCode::OK, bytes).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

/// `POST /raft/append`.
pub(crate) async fn append(State(app): State<AppState>, body: Bytes) -> Response {
    match decode(&body) {
        Ok(rpc) => encode(&app.node.raft().append_entries(rpc).await),
        Err(r) => r,
    }
}

/// `POST /raft/vote`.
pub(crate) async fn vote(State(app): State<AppState>, body: Bytes) -> Response {
    match decode(&body) {
        Ok(rpc) => encode(&app.node.raft().vote(rpc).await),
        Err(r) => r,
    }
}

/// `POST /raft/snapshot`: one chunk of a snapshot.
pub(crate) async fn snapshot(State(app): State<AppState>, body: Bytes) -> Response {
    match decode(&body) {
        Ok(rpc) => encode(&app.node.raft().install_snapshot(rpc).await),
        Err(r) => r,
    }
}
