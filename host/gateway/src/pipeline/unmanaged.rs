//! Requests that rely on the provider's stored state (such as Responses'
//! `previous_response_id`): the gateway holds only part of their conversation, so it cannot
//! manage their context; they go to the provider as the client sent them and come back as the
//! provider answered (streamed or not), with `x-ctxhost-context: unmanaged` saying so.

use crate::error::GatewayError;
use crate::upstream::relayed_headers;
use crate::Gateway;
use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::Response;
use bytes::Bytes;

const CONTEXT_HEADER: &str = "x-ctxhost-context";

pub async fn pass_through(
    gateway: &Gateway,
    path: &'static str,
    headers: &HeaderMap,
    query: Option<&str>,
    bytes: Bytes,
) -> Result<Response, GatewayError> {
    tracing::info!("POST /v1/{path} relies on the provider's stored state: passed through, its context not managed");
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
