//! The one turn pipeline every provider API goes through, generic over its [`Wire`] adapter:
//! the request read and taken apart, its session opened and its turn prepared
//! ([`Turn::begin`]), then the model called with the view plus what is new, the engine's own
//! tool calls answered in rounds the client never sees, and the answer given whole
//! ([`complete`]) or streamed ([`stream`]), with every model call's usage summed ([`usage`]).

mod complete;
mod stream;
mod tools;
mod unmanaged;
pub mod usage;

use std::collections::HashSet;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, Uri};
use axum::response::Response;
use ctxhost_sdk::Message;
use serde_json::Value;

use super::error::{ErrorKind, GatewayError};
use super::turn::{session_name, with_session_headers, Turn, TurnRequest};
use super::wire::{Incoming, Wire};
use super::Gateway;

/// `POST` of `W`'s route: the whole turn, its failures in the shape `W`'s clients parse.
pub async fn handle<W: Wire>(
    State(gateway): State<Arc<Gateway>>,
    headers: HeaderMap,
    uri: Uri,
    body: Body,
) -> Response {
    match serve::<W>(gateway, headers, uri, body).await {
        Ok(response) => response,
        Err(error) => W::error_response(error),
    }
}

async fn serve<W: Wire>(
    gateway: Arc<Gateway>,
    headers: HeaderMap,
    uri: Uri,
    body: Body,
) -> Result<Response, GatewayError> {
    let bytes = gateway.read_request(&headers, body).await?;
    let parsed = match W::parse(bytes, &gateway.settings)? {
        Incoming::Turn(parsed) => parsed,
        Incoming::Unmanaged(bytes) => {
            return unmanaged::pass_through(&gateway, W::PATH, &headers, uri.query(), bytes).await
        }
    };
    let mut headers = headers;
    let feature_window = W::upstream_headers(&mut headers, &parsed.model, &gateway.settings);
    let name = session_name(&headers, W::CLIENT_SESSION_HEADER, &parsed.history)?;
    let (mut turn, prepared) = Turn::begin(
        gateway,
        &headers,
        TurnRequest {
            name,
            history: &parsed.history,
            model: &parsed.model,
            output_budget: parsed.output_budget,
            feature_window,
            provider_context: W::provider_context(&parsed.request),
        },
    )
    .await?;
    drop(parsed.history);
    let session_headers = turn.headers.clone();
    let (schemas, engine_names) = tools::engine_tools(turn.live(), &parsed.client_tools);
    let call = ModelCall::<W> {
        request: parsed.request,
        schemas,
        engine_names,
        headers,
        query: uri.query().map(str::to_string),
    };
    let answered = if parsed.stream {
        stream::stream(turn, call, prepared.upstream).await
    } else {
        complete::complete(turn, call, prepared.upstream).await
    };
    // The gateway's own errors name the session too.
    Ok(answered
        .unwrap_or_else(|error| with_session_headers(W::error_response(error), &session_headers)))
}

/// What every model call of one request shares: the request, the engine's tools offered with
/// it, and the client's headers and query string.
struct ModelCall<W: Wire> {
    request: W::Request,
    schemas: Vec<Value>,
    engine_names: HashSet<String>,
    headers: HeaderMap,
    query: Option<String>,
}

impl<W: Wire> ModelCall<W> {
    /// Calls the model with `messages` (and the engine's tools).
    async fn send(
        &self,
        turn: &mut Turn,
        messages: &[Message],
    ) -> Result<reqwest::Response, GatewayError> {
        let body = W::upstream_body(&self.request, messages, &self.schemas);
        turn.send(W::PATH, self.query.as_deref(), &self.headers, body)
            .await
    }
}

/// A non-streamed answer read back from the provider.
fn parse_answer(bytes: &[u8]) -> Result<Value, GatewayError> {
    serde_json::from_slice(bytes).map_err(|e| {
        GatewayError::new(
            ErrorKind::BadGateway,
            format!("the upstream's answer is not JSON: {e}"),
        )
    })
}
