//! Answers to clients: how each [`OpError`] maps onto an HTTP status.

use axum::http::{header, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::node::OpError;

/// The answer to a request at `uri` that failed with `error`. A node that is not the leader
/// redirects (307, which keeps the method and body) to the same path on the leader; with no
/// leader known it answers 503 and asks for a retry.
pub(crate) fn error(uri: &Uri, error: &OpError) -> Response {
    let body = Json(json!({ "error": error.to_string() }));
    match error {
        OpError::NotLeader {
            leader: Some(leader),
        } => {
            let path = uri.path_and_query().map_or("/", |p| p.as_str());
            let location = format!("http://{}{path}", leader.addr);
            match HeaderValue::from_str(&location) {
                Ok(value) => (
                    StatusCode::TEMPORARY_REDIRECT,
                    [(header::LOCATION, value)],
                    Json(json!({ "error": error.to_string(), "leader": leader })),
                )
                    .into_response(),
                Err(_) => (StatusCode::SERVICE_UNAVAILABLE, body).into_response(),
            }
        }
        OpError::NotLeader { leader: None } => (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, HeaderValue::from_static("1"))],
            body,
        )
            .into_response(),
        OpError::Invalid(_) => (StatusCode::BAD_REQUEST, body).into_response(),
        OpError::Conflict(_) => (StatusCode::CONFLICT, body).into_response(),
        // The outcome is unknown: a gateway timeout, not a refusal.
        OpError::Timeout(_) => (StatusCode::GATEWAY_TIMEOUT, body).into_response(),
        OpError::Stopped(_) => (StatusCode::INTERNAL_SERVER_ERROR, body).into_response(),
    }
}

/// A 400 for a request that cannot be understood.
pub(crate) fn bad_request(why: impl std::fmt::Display) -> Response {
    (
        StatusCode::BAD_REQUEST,
        Json(json!({ "error": why.to_string() })),
    )
        .into_response()
}

/// The JSON body of a request, whatever its `Content-Type` says (so `curl -d` works).
pub(crate) fn json_body<T: serde::de::DeserializeOwned>(
    body: &[u8],
    what: &str,
) -> Result<T, Response> {
    serde_json::from_slice(body).map_err(|e| bad_request(format!("expected {what}: {e}")))
}
