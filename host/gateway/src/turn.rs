//! What every provider API's handler does around its own protocol: naming and opening the
//! session, preparing the turn (lineage, view, compression), the headers that say what
//! happened, model calls, the engine's tool calls answered, and the session released when the
//! answer is done with it.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use ctxhost_sdk::Message;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use super::auth::credential_of;
use super::chat::SESSION_HEADER;
use super::conversation::Continuity;
use super::error::{ErrorKind, GatewayError};
use super::live::{Live, Prepared, SessionGuard};
use super::models::{context_window, usable_window, ConfiguredModel};
use super::record::SessionKey;
use super::request_body::read_limited;
use super::upstream::{read_body, relayed_headers};
use super::Gateway;

/// The session's name: the client's `x-ctxhost-session`, else the client's own session header
/// (`alternative`, such as Claude Code's), else a hash of how the conversation starts (its
/// system prompt and first user message), stable across the conversation's turns.
pub fn session_name(
    headers: &HeaderMap,
    alternative: Option<&str>,
    history: &[Message],
) -> Result<String, GatewayError> {
    let named = headers
        .get(SESSION_HEADER)
        .map(|v| (SESSION_HEADER, v))
        .or_else(|| alternative.and_then(|h| headers.get(h).map(|v| (h, v))));
    if let Some((header, value)) = named {
        let name = value.to_str().unwrap_or_default();
        let valid =
            !name.is_empty() && name.len() <= 200 && name.bytes().all(|b| b.is_ascii_graphic());
        if !valid {
            return Err(GatewayError::new(
                ErrorKind::BadRequest,
                format!("{header} must be 1 to 200 printable ASCII characters"),
            ));
        }
        return Ok(name.to_string());
    }
    let first = |role: &str| {
        history
            .iter()
            .find(|m| m.role() == role)
            .map(|m| m.to_value()["content"].to_string())
            .unwrap_or_default()
    };
    let mut hasher = Sha256::new();
    hasher.update(first("system"));
    hasher.update([0]);
    hasher.update(first("user"));
    let digest = hasher.finalize();
    Ok(format!(
        "auto-{}",
        digest[..8]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    ))
}

/// A turn under way: its session locked, what goes upstream, and the headers naming it.
pub struct Turn {
    pub guard: SessionGuard,
    pub prepared: Prepared,
    pub session_headers: HeaderMap,
}

/// What a request asks of a turn, whatever its protocol.
pub struct TurnRequest<'a> {
    pub name: String,
    pub history: &'a [Message],
    pub model: &'a str,
    /// `max_tokens` or its like: the room kept free for the answer.
    pub output_budget: Option<u64>,
}

/// Opens the session of `request` (scoped by the client's credential) and prepares its turn.
pub async fn begin_turn(
    gateway: &Arc<Gateway>,
    headers: &HeaderMap,
    request: TurnRequest<'_>,
) -> Result<Turn, GatewayError> {
    let key = SessionKey {
        credential: credential_of(headers),
        name: request.name,
    };
    let settings = &gateway.settings;
    let configured = &gateway.engines.config().model;
    let window = usable_window(
        context_window(
            request.model,
            &settings.models,
            &ConfiguredModel {
                name: &configured.name,
                context_length: configured.context_length,
            },
        ),
        request.output_budget,
    );
    let mut guard = gateway.session(&key, request.model, window).await?;
    let live = guard.as_mut().expect("the session is open");
    let prepared = live
        .prepare(gateway, request.history, request.model, window)
        .await;
    // A new view is saved before it is used, so a crash mid-request cannot lose a compression;
    // the rest of the record (lineage, counts) is saved once the answer is on its way (a
    // client that retries after a crash sends the same history, which extends the old lineage).
    if prepared.compressed {
        gateway.persist(&mut live.record).await?;
    }
    let mut session_headers = HeaderMap::new();
    set_header(&mut session_headers, SESSION_HEADER, &key.name);
    set_header(
        &mut session_headers,
        "x-ctxhost-engine",
        live.session.engine(),
    );
    set_header(
        &mut session_headers,
        "x-ctxhost-lineage",
        match prepared.continuity {
            Continuity::First => "first",
            Continuity::Extends => "continued",
            Continuity::Diverged => "new",
        },
    );
    if prepared.compressed {
        set_header(&mut session_headers, "x-ctxhost-compressed", "true");
    }
    if let Some(error) = &prepared.engine_error {
        set_header(&mut session_headers, "x-ctxhost-engine-error", error);
    }
    Ok(Turn {
        guard,
        prepared,
        session_headers,
    })
}

/// A header value from text that may hold anything: cut to one line.
pub fn set_header(headers: &mut HeaderMap, name: &'static str, value: &str) {
    let line: String = value
        .chars()
        .map(|c| {
            if c.is_ascii() && !c.is_ascii_control() {
                c
            } else {
                ' '
            }
        })
        .take(300)
        .collect();
    if let Ok(value) = HeaderValue::from_str(&line) {
        headers.insert(name, value);
    }
}

/// Adds the session's headers to a response.
pub fn with_session_headers(mut response: Response, session_headers: &HeaderMap) -> Response {
    for (name, value) in session_headers {
        response.headers_mut().insert(name, value.clone());
    }
    response
}

/// The upstream's own answer, status and body as they came, with the session's headers.
pub fn relay(
    status: reqwest::StatusCode,
    upstream_headers: HeaderMap,
    session_headers: &HeaderMap,
    body: Bytes,
) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() =
        StatusCode::from_u16(status.as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    *response.headers_mut() = upstream_headers;
    with_session_headers(response, session_headers)
}

/// A whole answer: `answer` as JSON, status 200, with the upstream's headers and the session's.
pub fn json_answer(
    upstream_headers: HeaderMap,
    session_headers: &HeaderMap,
    answer: &Value,
) -> Response {
    let mut response = relay(
        reqwest::StatusCode::OK,
        upstream_headers,
        session_headers,
        Bytes::from(serde_json::to_vec(answer).unwrap_or_default()),
    );
    response.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// What the upstream may stream for one request, over all of its rounds:
/// `serve.limits.max_response_bytes` of event data.
pub struct StreamBudget {
    received: u64,
    pub limit: u64,
}

impl StreamBudget {
    pub fn new(gateway: &Gateway) -> Self {
        StreamBudget {
            received: 0,
            limit: gateway.settings.limits.max_response_bytes,
        }
    }

    /// Takes in one upstream event: a stream that broke off or went over the budget is the
    /// gateway's error, counted against the session.
    pub fn take<E: std::fmt::Display>(
        &mut self,
        gateway: &Gateway,
        live: &mut Live,
        event: Result<eventsource_stream::Event, E>,
    ) -> Result<eventsource_stream::Event, GatewayError> {
        let event = event.map_err(|error| {
            gateway.upstream_error(live, "stream");
            GatewayError::new(
                ErrorKind::BadGateway,
                format!("the upstream's stream broke off: {error}"),
            )
        })?;
        self.received += event.data.len() as u64;
        if self.received > self.limit {
            gateway.upstream_error(live, "too_large");
            return Err(GatewayError::new(
                ErrorKind::BadGateway,
                format!(
                    "the upstream's response is over serve.limits.max_response_bytes ({} bytes)",
                    self.limit
                ),
            ));
        }
        Ok(event)
    }
}

/// A streamed answer's hold on its session: saved and released when the stream is done with
/// it, finished or dropped by a client that left.
pub struct ReleaseOnDrop {
    gateway: Arc<Gateway>,
    guard: Option<SessionGuard>,
}

impl ReleaseOnDrop {
    pub fn new(gateway: Arc<Gateway>, guard: SessionGuard) -> Self {
        ReleaseOnDrop {
            gateway,
            guard: Some(guard),
        }
    }

    pub fn live(&mut self) -> &mut Live {
        self.guard
            .as_mut()
            .and_then(|guard| guard.as_mut())
            .expect("the session is open")
    }
}

impl Drop for ReleaseOnDrop {
    fn drop(&mut self) {
        if let Some(guard) = self.guard.take() {
            self.gateway.save_then_release(guard);
        }
    }
}

/// The engine's tools offered upstream (OpenAI function schemas) and their names: those the
/// client does not also define (the client's own tool of the same name wins).
pub fn engine_tools(live: &Live, client_tools: &HashSet<String>) -> (Vec<Value>, HashSet<String>) {
    let names: HashSet<String> = live
        .tool_names
        .iter()
        .filter(|n| !client_tools.contains(*n))
        .cloned()
        .collect();
    let schemas = live
        .tool_schemas
        .iter()
        .filter(|s| {
            s["function"]["name"]
                .as_str()
                .is_some_and(|n| names.contains(n))
        })
        .cloned()
        .collect();
    (schemas, names)
}

/// What a reply's tool calls are, split.
pub struct Calls {
    /// The engine's calls: (id, name, arguments).
    pub engine: Vec<(String, String, String)>,
    pub has_client_calls: bool,
}

pub fn split_calls(reply: &Message, engine_names: &HashSet<String>) -> Calls {
    let mut engine = Vec::new();
    let mut has_client_calls = false;
    for call in reply.tool_calls() {
        if engine_names.contains(call.name()) {
            engine.push((
                call.id().to_string(),
                call.name().to_string(),
                call.arguments().to_string(),
            ));
        } else {
            has_client_calls = true;
        }
    }
    Calls {
        engine,
        has_client_calls,
    }
}

/// Runs the engine's calls; their results, in order.
pub async fn answer_calls(
    gateway: &Gateway,
    live: &mut Live,
    calls: &[(String, String, String)],
) -> Vec<Message> {
    let mut results = Vec::new();
    for (id, name, arguments) in calls {
        let answer = live.run_tool(gateway, name, arguments).await;
        results.push(Message::tool_result(id.clone(), answer));
    }
    results
}

/// What a non-streamed request does after one of its model calls.
pub enum Step {
    /// The reply is the answer, as it came.
    Answer,
    /// The reply is the answer once the engine's calls are taken out of it (the client has
    /// calls of its own to answer, or the rounds ran out); [`ToolRounds::hide`] then.
    Hide { client_calls: bool },
    /// The engine's calls were answered: call the model again.
    Again,
}

/// A non-streamed request's rounds of engine tool calls, and what the client never sees of
/// them.
pub struct ToolRounds {
    hidden: Vec<Message>,
    round: u32,
    rounds: u32,
}

impl ToolRounds {
    pub fn new(gateway: &Gateway) -> Self {
        ToolRounds {
            hidden: Vec::new(),
            round: 0,
            rounds: gateway.settings.limits.tool_rounds.max(1),
        }
    }

    /// Takes in a model call's reply: answers the engine's calls in it (adding them and their
    /// results to `messages` when the model is to be called again) and says what comes next.
    pub async fn after(
        &mut self,
        gateway: &Gateway,
        live: &mut Live,
        reply: Message,
        engine_names: &HashSet<String>,
        messages: &mut Vec<Message>,
    ) -> Step {
        self.round += 1;
        let calls = split_calls(&reply, engine_names);
        if calls.engine.is_empty() {
            if !self.hidden.is_empty() {
                self.hidden.push(reply.clone());
                let hidden = std::mem::take(&mut self.hidden);
                live.record.conversation.splice(&reply, hidden);
            }
            return Step::Answer;
        }
        let results = answer_calls(gateway, live, &calls.engine).await;
        if calls.has_client_calls || self.round >= self.rounds {
            self.hidden.push(reply);
            self.hidden.extend(results);
            return Step::Hide {
                client_calls: calls.has_client_calls,
            };
        }
        messages.push(reply.clone());
        messages.extend(results.iter().cloned());
        self.hidden.push(reply);
        self.hidden.extend(results);
        Step::Again
    }

    /// The client receives `visible`: the client answers its own calls; the engine's stay with
    /// the gateway, spliced back into the upstream history when the client's answers arrive.
    pub fn hide(&mut self, live: &mut Live, visible: Option<Message>) {
        if let Some(visible) = visible {
            let hidden = std::mem::take(&mut self.hidden);
            live.record.conversation.splice(&visible, hidden);
        }
    }
}

/// A model call taken in: a success to read or stream, or the upstream's own error, already
/// made into the client's response.
pub enum Called {
    Success(reqwest::Response, HeaderMap),
    Relayed(Response),
}

/// A streamed answer: `frames` as Server-Sent Events, with the upstream's headers and the
/// session's.
pub fn event_stream<S>(frames: S, relayed: &HeaderMap, session_headers: &HeaderMap) -> Response
where
    S: futures_util::Stream<Item = Result<Bytes, std::convert::Infallible>> + Send + 'static,
{
    let mut response = Response::new(Body::from_stream(frames));
    let headers = response.headers_mut();
    for (name, value) in relayed {
        headers.insert(name, value.clone());
    }
    headers.insert(
        axum::http::header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(
        axum::http::header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache"),
    );
    with_session_headers(response, session_headers)
}

impl Gateway {
    /// Takes in a model call's result: a success is handed back with the headers to relay; an
    /// upstream error is counted and relayed with its own status and body; no answer at all is
    /// the gateway's error. The session is saved before any failure goes out.
    pub async fn take_call(
        &self,
        live: &mut Live,
        sent: Result<reqwest::Response, GatewayError>,
        session_headers: &HeaderMap,
    ) -> Result<Called, GatewayError> {
        let response = match sent {
            Ok(response) => response,
            Err(error) => {
                self.save(&mut live.record).await;
                return Err(error);
            }
        };
        let status = response.status();
        let relayed = relayed_headers(response.headers());
        if status.is_success() {
            return Ok(Called::Success(response, relayed));
        }
        let body = self.read_answer(live, response).await?;
        self.upstream_error(live, &status.as_u16().to_string());
        self.save(&mut live.record).await;
        Ok(Called::Relayed(relay(
            status,
            relayed,
            session_headers,
            body,
        )))
    }

    /// Reads a model call's whole answer (bounded); a failure is counted and the session saved.
    pub async fn read_answer(
        &self,
        live: &mut Live,
        response: reqwest::Response,
    ) -> Result<Bytes, GatewayError> {
        match read_body(response, self.settings.limits.max_response_bytes).await {
            Ok(bytes) => Ok(bytes),
            Err(error) => {
                self.upstream_error(live, "body");
                self.save(&mut live.record).await;
                Err(error)
            }
        }
    }

    /// Makes one model call (`POST base/route`) with `body`, timing it; a call that gets no
    /// answer at all is counted against the session and logged.
    pub async fn send_model(
        &self,
        live: &mut Live,
        route: &'static str,
        query: Option<&str>,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Result<reqwest::Response, GatewayError> {
        let started = Instant::now();
        let result = self
            .upstream
            .send(Method::POST, route, query, headers, Some(body))
            .await;
        self.metrics.observe(
            "ctxhost_upstream_duration_seconds",
            &[("route", route)],
            started.elapsed(),
        );
        if let Err(error) = &result {
            self.upstream_error(live, "connect");
            tracing::warn!("{error}");
        }
        result
    }

    /// Counts an upstream error against a session.
    pub fn upstream_error(&self, live: &mut Live, kind: &str) {
        live.record.stats.upstream_errors += 1;
        self.metrics
            .add("ctxhost_upstream_errors_total", &[("kind", kind)], 1);
    }

    /// Reads a request body, refusing one over `serve.limits.max_request_bytes` with 413.
    pub async fn read_request(
        &self,
        headers: &HeaderMap,
        body: Body,
    ) -> Result<Bytes, GatewayError> {
        read_limited(headers, body, self.settings.limits.max_request_bytes).await
    }
}

/// A request of one of the provider APIs, as the model calls of one client request send it.
pub trait UpstreamRequest {
    /// The provider route, after the base URL (`messages`, `responses`).
    const PATH: &'static str;
    /// The body of one model call: the client's fields with `messages` as the history and the
    /// engine's tools offered beside the client's.
    fn upstream_body(&self, messages: &[Message], engine_tools: &[Value]) -> Bytes;
}

/// What every model call of one request shares: the request, the engine's tools offered with
/// it, and the client's headers and query string.
pub struct ModelCall<R> {
    pub request: R,
    pub schemas: Vec<Value>,
    pub engine_names: HashSet<String>,
    pub headers: HeaderMap,
    pub query: Option<String>,
}

impl<R: UpstreamRequest> ModelCall<R> {
    pub async fn send(
        &self,
        gateway: &Gateway,
        live: &mut Live,
        messages: &[Message],
    ) -> Result<reqwest::Response, GatewayError> {
        let body = self.request.upstream_body(messages, &self.schemas);
        gateway
            .send_model(live, R::PATH, self.query.as_deref(), &self.headers, body)
            .await
    }
}

/// One request's exchange with the provider, its session held.
pub struct Exchange<R> {
    pub gateway: Arc<Gateway>,
    pub guard: SessionGuard,
    pub prepared: Prepared,
    pub session_headers: HeaderMap,
    pub call: ModelCall<R>,
}

/// A non-streamed answer read back from the provider.
pub fn parse_answer(bytes: &[u8]) -> Result<Value, GatewayError> {
    serde_json::from_slice(bytes).map_err(|e| {
        GatewayError::new(
            ErrorKind::BadGateway,
            format!("the upstream's answer is not JSON: {e}"),
        )
    })
}
