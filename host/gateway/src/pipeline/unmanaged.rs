//! Requests the gateway does not manage: those that rely on the provider's stored state (such
//! as Responses' `previous_response_id`: the gateway holds only part of their conversation),
//! and an agent's compaction left to the provider. They go to the provider as the client sent
//! them and come back as the provider answered (streamed or not), with
//! `x-ctxhost-context: unmanaged` saying so.

use crate::upstream::relayed_headers;
use crate::Gateway;
use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use ctxhost_gateway_wire::error::GatewayError;

const CONTEXT_HEADER: &str = "x-ctxhost-context";

/// Why a request is not managed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unmanaged {
    /// It relies on the provider's stored state.
    StoredState,
    /// It is the agent's own compaction, left to the provider (`serve.client_compaction`).
    AgentCompaction,
}

pub async fn pass_through(
    gateway: &Gateway,
    path: &'static str,
    headers: &HeaderMap,
    query: Option<&str>,
    bytes: Bytes,
    why: Unmanaged,
) -> Result<Response, GatewayError> {
    match why {
        Unmanaged::StoredState => tracing::info!("POST /v1/{path} relies on the provider's stored state: passed through, its context not managed"),
        Unmanaged::AgentCompaction => tracing::info!("POST /v1/{path} is the agent's own compaction, left to the provider (serve.client_compaction): passed through as sent"),
    }
    let upstream = gateway
        .upstream
        .send(Method::POST, path, query, headers, Some(bytes))
        .await?;
    let status =
        StatusCode::from_u16(upstream.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    let mut relayed = relayed_headers(upstream.headers());
    relayed.insert(CONTEXT_HEADER, HeaderValue::from_static("unmanaged"));
    let mut response = Response::new(Body::from_stream(upstream.bytes_stream()));
    *response.status_mut() = status;
    *response.headers_mut() = relayed;
    Ok(response)
}
