//! The one turn pipeline every provider API goes through, generic over its [`Wire`] adapter:
//! the request read and taken apart, its session opened and its turn prepared
//! ([`Turn::begin`]), then the model called with the view plus what is new, the engine's own
//! tool calls answered in rounds the client never sees, and the answer given whole
//! ([`complete`]) or streamed ([`stream`]), with every model call's usage summed ([`usage`]).

mod complete;
pub mod count;
mod side_call;
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

use super::auth::credential_of;
use super::compaction::render::Shape;
use super::compaction::{self, AgentCompaction, Answering};
use super::error::{ErrorKind, GatewayError};
use super::turn::{names_session, session_name, with_session_headers, Turn, TurnRequest};
use super::wire::responses::Responses;
use super::wire::{Api, Incoming, Wire};
use super::Gateway;
use ctxhost_config::serve::ClientCompactionMode;
use ctxhost_wire::client_compaction::ClientCompaction;
use ctxhost_wire::client_compaction::{recognise, without_trigger};
use unmanaged::Unmanaged;

/// `POST` of `W`'s route: the whole turn, its failures in the shape `W`'s clients parse.
pub async fn handle<W: Wire>(
    State(gateway): State<Arc<Gateway>>,
    headers: HeaderMap,
    uri: Uri,
    body: Body,
) -> Response {
    match serve::<W>(gateway, headers, uri, body, Route::Own).await {
        Ok(response) => response,
        Err(error) => W::error_response(error),
    }
}

/// `POST /v1/responses/compact`: the agent's compaction of a Responses history.
pub async fn handle_compact(
    State(gateway): State<Arc<Gateway>>,
    headers: HeaderMap,
    uri: Uri,
    body: Body,
) -> Response {
    match serve::<Responses>(gateway, headers, uri, body, Route::Compact).await {
        Ok(response) => response,
        Err(error) => Responses::error_response(error),
    }
}

/// Which of a wire's routes a request came by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    /// The wire's own (`W::PATH`).
    Own,
    /// Responses' compact route.
    Compact,
}

impl Route {
    fn path<W: Wire>(self) -> &'static str {
        match self {
            Route::Own => W::PATH,
            Route::Compact => "responses/compact",
        }
    }
}

async fn serve<W: Wire>(
    gateway: Arc<Gateway>,
    headers: HeaderMap,
    uri: Uri,
    body: Body,
    route: Route,
) -> Result<Response, GatewayError> {
    let bytes = gateway.read_request(&headers, body).await?;
    // Kept for a request relayed as it came (a cheap handle on the same bytes).
    let sent = bytes.clone();
    let mut parsed = match W::parse(bytes, &gateway.settings)? {
        Incoming::Turn(parsed) => parsed,
        Incoming::Unmanaged(bytes) => {
            return unmanaged::pass_through(
                &gateway,
                route.path::<W>(),
                &headers,
                uri.query(),
                bytes,
                Unmanaged::StoredState,
            )
            .await
        }
    };
    let kind = recognise(&parsed.history, route == Route::Compact);
    let agent = match kind.map(|kind| owner(kind, gateway.settings.client_compaction)) {
        None => None,
        Some(Owner::Relay) => {
            let path = route.path::<W>();
            return unmanaged::pass_through(
                &gateway,
                path,
                &headers,
                uri.query(),
                sent,
                Unmanaged::AgentCompaction,
            )
            .await;
        }
        Some(Owner::Turn(agent)) => Some(agent),
    };
    let mut headers = headers;
    let feature_window = W::upstream_headers(&mut headers, &parsed.model, &gateway.settings);
    let credential = credential_of(&headers);
    let taken = compaction::take_up(&mut parsed.history, &gateway.signer, &credential)
        .map_err(|error| GatewayError::new(ErrorKind::BadRequest, error.to_string()))?;
    if kind == Some(ClientCompaction::HermesCompression) {
        // Answered by the engine (relayed under the other modes, above).
        let side_call = side_call::SideCall {
            headers: &headers,
            query: uri.query(),
            sent,
            credential: &credential,
            agent,
            feature_window,
        };
        return side_call::hermes_compression::<W>(gateway, parsed, side_call).await;
    }
    // An agent that names no session of its own is known by the handoff it brings back.
    let name = match &taken {
        Some(taken) if !names_session(&headers, W::CLIENT_SESSION_HEADER) => {
            taken.reference.session.clone()
        }
        _ => session_name(&headers, W::CLIENT_SESSION_HEADER, &parsed.history)?,
    };
    let resumed = taken
        .filter(|taken| taken.reference.session == name)
        .map(|taken| taken.resumed);
    if let (Some(kind), Some(AgentCompaction::Answer)) = (kind, agent) {
        // The engine takes in the history, not the request to compact it.
        if kind.prompt_is_last() {
            parsed.history.pop();
        } else {
            without_trigger(&mut parsed.history);
        }
        if parsed.history.is_empty() {
            return Err(GatewayError::new(
                ErrorKind::BadRequest,
                "the compaction request holds no history to compact",
            ));
        }
    }
    let (mut turn, prepared) = Turn::begin(
        gateway,
        &headers,
        TurnRequest {
            name,
            history: &parsed.history,
            model: &parsed.model,
            output_budget: parsed.output_budget,
            resumed,
            agent_compaction: agent,
            feature_window,
            provider_context: W::provider_context(&parsed.request),
        },
    )
    .await?;
    if W::API == Api::Chat
        && turn.gateway.settings.client_compaction == ClientCompactionMode::Engine
    {
        // For a side call of the agent's that names no session and carries no history of its
        // own (Hermes' compression), which only the engine answers: the history is kept, not
        // copied.
        let name = turn.live().record.key.name.clone();
        let history = std::mem::take(&mut parsed.history);
        turn.gateway.served.remember(&credential, &name, history);
    }
    drop(parsed.history);
    if let (Some(kind), Some(AgentCompaction::Answer)) = (kind, agent) {
        let shape = Shape {
            api: W::API,
            model: &parsed.model,
            stream: parsed.stream && route == Route::Own,
            compact_route: route == Route::Compact,
        };
        return Ok(compaction::answer(turn, prepared, Answering { kind, shape }).await);
    }
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

/// Who takes an agent's compaction request, under `serve.client_compaction`.
enum Owner {
    /// Relayed to the provider exactly as sent, the session untouched: the provider's own
    /// compaction under `passthrough` (a trigger, the compact route), the compact route under
    /// `upstream` too (it has no managed form), and Hermes' summary call under `upstream` and
    /// `passthrough` (a side call that quotes the turns it summarises, not the conversation
    /// itself; under `engine` it is answered from the session it is for).
    Relay,
    /// A turn of the session: answered by the engine, or sent on with the engine leaving it.
    Turn(AgentCompaction),
}

fn owner(kind: ClientCompaction, mode: ClientCompactionMode) -> Owner {
    match (kind, mode) {
        (ClientCompaction::HermesCompression, ClientCompactionMode::Engine) => {
            Owner::Turn(AgentCompaction::Answer)
        }
        (ClientCompaction::HermesCompression, _) => Owner::Relay,
        (_, ClientCompactionMode::Engine) => Owner::Turn(AgentCompaction::Answer),
        (ClientCompaction::CompactRoute, _) => Owner::Relay,
        (kind, ClientCompactionMode::Passthrough) if kind.provider_owned() => Owner::Relay,
        _ => Owner::Turn(AgentCompaction::Leave),
    }
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
