//! The one turn pipeline every provider API goes through, generic over its [`Wire`] adapter:
//! the request read, taken apart and classified once ([`classify`]: which agent sent it, and
//! whether it is a turn, that agent's own compaction, Hermes' compression side call, or one to
//! relay as sent), then handed to one handler. A turn's session is opened and its turn
//! prepared ([`Turn::begin`]), then the model called with the view plus what is new, the
//! engine's own tool calls answered in rounds the client never sees, and the answer given whole
//! ([`complete`]) or streamed ([`stream`]), with every model call's usage summed ([`usage`]).

mod classify;
mod complete;
pub mod count;
mod rounds;
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
use axum::Extension;
use bytes::Bytes;
use ctxhost_agents::compaction::Recognised;
use ctxhost_agents::Agent;
use ctxhost_sdk::Message;
use serde_json::Value;

use super::auth::credential_of;
use super::compaction::{self, Answering, Shape, TakenUp};
use super::request_log::RequestCost;
use super::session::live::Prepared;
use super::turn::{
    names_session, session_name, with_session_headers, AnsweredBy, Turn, TurnRequest,
};
use super::Gateway;
use classify::{classify, Classified, Kind};
use ctxhost_config::serve::ClientCompactionMode;
use ctxhost_gateway_wire::error::{ErrorKind, GatewayError};
use ctxhost_gateway_wire::responses::Responses;
use ctxhost_gateway_wire::{Parsed, Wire};
use ctxhost_metrics::Metric;

/// `POST` of `W`'s route: the whole turn, its failures in the shape `W`'s clients parse.
pub async fn handle<W: Wire>(
    State(gateway): State<Arc<Gateway>>,
    Extension(cost): Extension<RequestCost>,
    headers: HeaderMap,
    uri: Uri,
    body: Body,
) -> Response {
    match serve::<W>(gateway, cost, headers, uri, body, Route::Own).await {
        Ok(response) => response,
        Err(error) => W::error_response(error),
    }
}

/// `POST /v1/responses/compact`: the agent's compaction of a Responses history.
pub async fn handle_compact(
    State(gateway): State<Arc<Gateway>>,
    Extension(cost): Extension<RequestCost>,
    headers: HeaderMap,
    uri: Uri,
    body: Body,
) -> Response {
    match serve::<Responses>(gateway, cost, headers, uri, body, Route::Compact).await {
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

/// Parse, classify, then the one handler for what the request is.
async fn serve<W: Wire>(
    gateway: Arc<Gateway>,
    cost: RequestCost,
    headers: HeaderMap,
    uri: Uri,
    body: Body,
    route: Route,
) -> Result<Response, GatewayError> {
    let bytes = gateway.read_request(&headers, body).await?;
    let (mut parsed, sent, agent, kind) =
        match classify::<W>(bytes, &headers, route, &gateway.settings)? {
            Classified::Relay { why, body } => {
                let path = route.path::<W>();
                return unmanaged::pass_through(&gateway, path, &headers, uri.query(), body, why)
                    .await;
            }
            Classified::Managed {
                parsed,
                sent,
                agent,
                kind,
            } => (parsed, sent, agent, kind),
        };
    let mut headers = headers;
    let feature_window = W::upstream_headers(&mut headers, &parsed.model, &gateway.settings);
    let credential = credential_of(&headers);
    if let Kind::Compaction(recognised) = &kind {
        // The engine takes in the history, not the request to compact it.
        recognised.take_prompt(&mut parsed.history);
        if parsed.history.is_empty() {
            return Err(GatewayError::new(
                ErrorKind::BadRequest,
                "the compaction request holds no history to compact",
            ));
        }
    }
    let found = compaction::take_up(&mut parsed.history, agent, &gateway.signer, &credential);
    for why in &found.unverified {
        // Not the request's fault (a rotated key, a refreshed token, a replaced store, an
        // echoed log): it resumes nothing, and the turn goes on as a new lineage.
        tracing::warn!("a ctxhost handoff reference in the request does not verify ({why}): it resumes nothing, the history is read as it is");
        gateway.metrics.add(Metric::UnverifiedReferences, &[], 1);
    }
    let taken = found.taken;
    let request = Request {
        headers,
        query: uri.query(),
        sent,
        credential,
        agent,
        feature_window,
        route,
        cost,
    };
    match kind {
        Kind::Turn => model_turn::<W>(gateway, parsed, request, taken, None).await,
        Kind::CompactionUpstream => {
            let left = Some(AnsweredBy::Upstream);
            model_turn::<W>(gateway, parsed, request, taken, left).await
        }
        Kind::Compaction(recognised) => {
            answer_compaction::<W>(gateway, parsed, request, taken, recognised).await
        }
        Kind::SideCall => side_call::hermes_compaction::<W>(gateway, parsed, request).await,
    }
}

/// What a managed request came with, beside its parsed body.
struct Request<'a> {
    /// The client's headers as the upstream gets them.
    headers: HeaderMap,
    query: Option<&'a str>,
    /// The body as it came, for a side call relayed when no session is found for it.
    sent: Bytes,
    credential: String,
    /// The agent its headers tell.
    agent: Agent,
    /// The model's window as the request's features set it.
    feature_window: Option<u64>,
    route: Route,
    /// What its model calls cost, for its log line.
    cost: RequestCost,
}

/// Opens the session the request's history belongs to and prepares its turn.
async fn open<W: Wire>(
    gateway: Arc<Gateway>,
    parsed: &mut Parsed<W::Request>,
    request: &Request<'_>,
    taken: Option<TakenUp>,
    agent_compaction: Option<AnsweredBy>,
) -> Result<(Turn, Prepared), GatewayError> {
    let header = request.agent.session_header();
    let mut taken = taken;
    let (mut turn, prepared) = loop {
        // An agent that names no session of its own is known by the handoff it brings back.
        let name = match &taken {
            Some(taken) if !names_session(&request.headers, header) => {
                taken.reference.session.clone()
            }
            _ => session_name(&request.headers, header, &parsed.history)?,
        };
        let resumed = taken
            .as_ref()
            .filter(|taken| taken.reference.session == name)
            .map(|taken| taken.resumed);
        let begun = Turn::begin(
            gateway.clone(),
            &request.headers,
            TurnRequest {
                name: name.clone(),
                history: &parsed.history,
                model: &parsed.model,
                output_budget: parsed.output_budget,
                resumed,
                agent_compaction,
                feature_window: request.feature_window,
                provider_context: W::provider_context(&parsed.request),
                cost: request.cost.clone(),
            },
        )
        .await?;
        match begun {
            Some(begun) => break begun,
            // Without a handoff to take up, the next round opens the request's own session.
            None => {
                tracing::warn!(
                    session = %name,
                    "a handoff text in the request is not the one the gateway handed out for \
                     the view its reference names (its marker line pasted into other words?): \
                     it resumes nothing, the history is read as it is"
                );
                taken = None;
            }
        }
    };
    if W::AGENTS.contains(&Agent::Hermes)
        && turn.gateway.settings.client_compaction == ClientCompactionMode::Engine
    {
        // For Hermes' compression call, which names no session, carries no history of its own
        // and only the engine answers: the history is kept, not copied.
        let name = turn.live().record.key.name.clone();
        let history = std::mem::take(&mut parsed.history);
        turn.gateway
            .served
            .remember(&request.credential, &name, history);
    }
    Ok((turn, prepared))
}

/// The agent's own compaction, answered by the session's engine with no model call.
async fn answer_compaction<W: Wire>(
    gateway: Arc<Gateway>,
    mut parsed: Parsed<W::Request>,
    request: Request<'_>,
    taken: Option<TakenUp>,
    recognised: Recognised,
) -> Result<Response, GatewayError> {
    let answer = Some(AnsweredBy::Engine);
    let (turn, prepared) = open::<W>(gateway, &mut parsed, &request, taken, answer).await?;
    let shape = Shape {
        model: &parsed.model,
        stream: parsed.stream && request.route == Route::Own,
        compact_route: request.route == Route::Compact,
    };
    let answering = Answering {
        kind: recognised.kind,
        shape,
    };
    Ok(compaction::answer::<W>(turn, prepared, answering).await)
}

/// A turn the model answers: the view plus what is new, the engine's tool rounds hidden.
async fn model_turn<W: Wire>(
    gateway: Arc<Gateway>,
    mut parsed: Parsed<W::Request>,
    request: Request<'_>,
    taken: Option<TakenUp>,
    agent_compaction: Option<AnsweredBy>,
) -> Result<Response, GatewayError> {
    let (mut turn, prepared) =
        open::<W>(gateway, &mut parsed, &request, taken, agent_compaction).await?;
    drop(std::mem::take(&mut parsed.history));
    let cache_key = turn.live().record.key.prompt_cache_key();
    W::route_prompt_cache(&mut parsed.request, cache_key);
    let session_headers = turn.headers.clone();
    let (schemas, engine_names) = tools::engine_tools(turn.live(), &parsed.client_tools);
    let call = ModelCall::<W> {
        request: parsed.request,
        schemas,
        engine_names,
        headers: request.headers,
        query: request.query.map(str::to_string),
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
