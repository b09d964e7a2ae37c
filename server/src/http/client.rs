//! The key-value API: `PUT`, `GET`, `DELETE /kv/{key}` and `POST /kv/batch`.

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{header, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use siftdb_raft::Command;

use super::keys::key_of_path;
use super::reply;
use super::AppState;

/// `?stale=true`: read this node's applied state, without the read index.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ReadQuery {
    #[serde(default)]
    stale: bool,
}

/// One operation of a batch.
#[derive(Debug, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase", deny_unknown_fields)]
pub(crate) enum BatchOp {
    /// Sets `key` to `value` (both UTF-8 text).
    Put { key: String, value: String },
    /// Removes `key`.
    Delete { key: String },
}

fn key_or_400(uri: &Uri) -> Result<Vec<u8>, Response> {
    key_of_path(uri.path()).ok_or_else(|| reply::bad_request("expected /kv/{key}, a non-empty key"))
}

/// `PUT /kv/{key}`: the body is the value; 200 once committed.
pub(crate) async fn put(State(app): State<AppState>, uri: Uri, body: Bytes) -> Response {
    let key = match key_or_400(&uri) {
        Ok(k) => k,
        Err(r) => return r,
    };
    write(&app, &uri, Command::put(key, body.to_vec())).await
}

/// `DELETE /kv/{key}`: 200 once committed (whether the key existed or not).
pub(crate) async fn delete(State(app): State<AppState>, uri: Uri) -> Response {
    let key = match key_or_400(&uri) {
        Ok(k) => k,
        Err(r) => return r,
    };
    write(&app, &uri, Command::delete(key)).await
}

/// `POST /kv/batch`: a JSON list of operations, applied atomically in order.
pub(crate) async fn batch(State(app): State<AppState>, uri: Uri, body: Bytes) -> Response {
    let ops: Vec<BatchOp> = match reply::json_body(&body, "a JSON list of operations") {
        Ok(ops) => ops,
        Err(r) => return r,
    };
    let commands = ops
        .into_iter()
        .map(|op| match op {
            BatchOp::Put { key, value } => Command::put(key, value),
            BatchOp::Delete { key } => Command::delete(key),
        })
        .collect();
    write(&app, &uri, Command::Batch(commands)).await
}

async fn write(app: &AppState, uri: &Uri, command: Command) -> Response {
    match app.node.write(command).await {
        Ok(ack) => (StatusCode::OK, Json(ack)).into_response(),
        Err(e) => reply::error(uri, &e),
    }
}

/// `GET /kv/{key}`: 200 with the value's bytes, or 404. Linearizable unless `?stale=true`.
pub(crate) async fn get(
    State(app): State<AppState>,
    uri: Uri,
    Query(query): Query<ReadQuery>,
) -> Response {
    let key = match key_or_400(&uri) {
        Ok(k) => k,
        Err(r) => return r,
    };
    match app.node.read(&key, !query.stale).await {
        Ok(Some(value)) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/octet-stream")],
            value,
        )
            .into_response(),
        Ok(None) => StatusCode::NOT_FOUND.into_response(),
        Err(e) => reply::error(&uri, &e),
    }
}
