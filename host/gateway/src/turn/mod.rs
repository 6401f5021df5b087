//! What every provider API's handler does around its own protocol: naming and opening the
//! session, preparing the turn (lineage, view, compression), the headers that say what
//! happened, model calls, the engine's tool calls answered, and the session released when the
//! answer is done with it.

mod cache_aware;
pub(crate) mod plan;
mod policy;

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use ctxhost_sdk::Message;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::auth::credential_of;
use crate::conversation::{Continuity, Resumed};
use crate::models::{usable_window, window_of, ConfiguredModel};
use crate::record::SessionKey;
use crate::request_log::RequestCost;
use crate::session::live::{Live, Prepared};
use crate::session::SessionGuard;
use crate::upstream::{read_body, relayed_headers};
use crate::Gateway;
use ctxhost_config::serve::OverWindow;
use ctxhost_gateway_wire::error::{ErrorKind, GatewayError};
use ctxhost_gateway_wire::provider_context::ProviderContext;
use ctxhost_metrics::Metric;

/// The header naming a client's session.
pub const SESSION_HEADER: &str = "x-ctxhost-session";

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

/// Whether the client names its session in a header (`x-ctxhost-session` or its own).
pub fn names_session(headers: &HeaderMap, alternative: Option<&str>) -> bool {
    headers.contains_key(SESSION_HEADER) || alternative.is_some_and(|h| headers.contains_key(h))
}

/// A request's turn, from its session opened to its answer done with: the one owner of the
/// gateway, the session (locked) and the headers that name it, for every step of the pipeline.
pub struct Turn {
    pub gateway: Arc<Gateway>,
    pub guard: SessionGuard,
    /// The headers every response of the turn carries (`x-ctxhost-*`).
    pub headers: HeaderMap,
    /// What the provider itself does to the context: the engine leaves that to it.
    pub provider_context: ProviderContext,
    /// What the request's model calls cost, for its log line.
    pub cost: RequestCost,
}

/// Who answers the agent's own compaction a turn is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnsweredBy {
    /// The engine: it compresses the history now.
    Engine,
    /// The model upstream: the engine does not compress it.
    Upstream,
}

/// What a request asks of a turn, whatever its protocol.
pub struct TurnRequest<'a> {
    pub name: String,
    pub history: &'a [Message],
    pub model: &'a str,
    /// `max_tokens` or its like: the room kept free for the answer.
    pub output_budget: Option<u64>,
    /// Where the history takes up a handoff the gateway gave the agent, if it does.
    pub resumed: Option<Resumed>,
    /// The request is the agent's own compaction: answered by the engine, or left to upstream.
    pub agent_compaction: Option<AnsweredBy>,
    /// The model's window as the request's features set it (an Anthropic beta), unless
    /// `serve.models` names the model.
    pub feature_window: Option<u64>,
    /// What the provider itself does to the context (`context_management`).
    pub provider_context: ProviderContext,
    /// What the request's model calls cost, for its log line.
    pub cost: RequestCost,
}

impl Turn {
    /// Opens the session of `request` (scoped by the client's credential) and prepares its
    /// turn: what goes upstream comes back beside it. `None` (the session released untouched)
    /// when the handoff the history takes up is not one the session handed out
    /// ([`Conversation::handed_out`](crate::conversation::Conversation::handed_out)): the
    /// caller opens the request's own session instead.
    pub async fn begin(
        gateway: Arc<Gateway>,
        headers: &HeaderMap,
        request: TurnRequest<'_>,
    ) -> Result<Option<(Turn, Prepared)>, GatewayError> {
        let (mut turn, window) = Turn::open(gateway, headers, &request).await?;
        if let Some(resumed) = &request.resumed {
            if !turn.guard.record.conversation.handed_out(resumed) {
                turn.release();
                return Ok(None);
            }
        }
        let prepared = turn
            .prepare(
                request.history,
                request.model,
                window,
                request.resumed,
                request.agent_compaction,
            )
            .await;
        let turn = turn.opened(&prepared, request.model, window).await?;
        Ok(Some((turn, prepared)))
    }

    /// As [`Turn::begin`], for a request that carries no history of its own (Hermes'
    /// compression call): the turn is prepared from the history the session last served on
    /// the chat wire. `None` (the session released untouched) when it holds none, or one the
    /// lineage has moved on from.
    pub async fn begin_served(
        gateway: Arc<Gateway>,
        headers: &HeaderMap,
        request: TurnRequest<'_>,
    ) -> Result<Option<(Turn, Prepared)>, GatewayError> {
        let (mut turn, window) = Turn::open(gateway, headers, &request).await?;
        // Kept for a retry of the call (the lineage stays where it is until the next turn).
        let key = &turn.guard.record.key;
        let served = turn.gateway.served.history(&key.credential, &key.name);
        // Only the history the lineage stands at: the engine then compresses all of it.
        let conversation = &turn.guard.record.conversation;
        let Some(history) = served.filter(|history| {
            history.len() == conversation.lineage_len() && conversation.peek(history).is_some()
        }) else {
            turn.release();
            return Ok(None);
        };
        let prepared = turn
            .prepare(
                &history,
                request.model,
                window,
                None,
                request.agent_compaction,
            )
            .await;
        let turn = turn.opened(&prepared, request.model, window).await?;
        Ok(Some((turn, prepared)))
    }

    /// Opens the session of `request`; the window its turn has.
    async fn open(
        gateway: Arc<Gateway>,
        headers: &HeaderMap,
        request: &TurnRequest<'_>,
    ) -> Result<(Turn, u64), GatewayError> {
        let key = SessionKey {
            credential: credential_of(headers),
            name: request.name.clone(),
        };
        let settings = &gateway.settings;
        let configured = &settings.model;
        let (model_window, guessed) = match request.feature_window {
            Some(window)
                if settings
                    .models
                    .get(request.model)
                    .is_none_or(|m| m.window().is_none()) =>
            {
                (window, false)
            }
            _ => window_of(
                request.model,
                &settings.models,
                &ConfiguredModel {
                    name: &configured.name,
                    context_length: configured.context_length,
                },
            ),
        };
        if guessed {
            gateway
                .guessed_windows
                .warn_once(request.model, model_window);
        }
        let window = usable_window(model_window, request.output_budget);
        let guard = gateway.session(&key, request.model, window).await?;
        let turn = Turn {
            gateway,
            guard,
            headers: HeaderMap::new(),
            provider_context: request.provider_context,
            cost: request.cost.clone(),
        };
        Ok((turn, window))
    }

    /// The turn is prepared: its new view saved, the headers that say what happened set.
    /// A conversation still over the window is refused here (the session released), or marked,
    /// as `serve.limits.over_window` says.
    async fn opened(
        mut self,
        prepared: &Prepared,
        model: &str,
        window: u64,
    ) -> Result<Turn, GatewayError> {
        // A new view is saved before it is used, so a crash mid-request cannot lose a
        // compression; the rest of the record (lineage, counts) is saved once the answer is on
        // its way (a client that retries after a crash sends the same history, which extends
        // the old lineage).
        if prepared.compressed {
            self.gateway.persist(&mut self.guard.record).await?;
        }
        let live = &*self.guard;
        let mut session_headers = HeaderMap::new();
        set_header(&mut session_headers, SESSION_HEADER, &live.record.key.name);
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
                Continuity::Extends | Continuity::Compacted | Continuity::Rewound => "continued",
                Continuity::Diverged => "new",
            },
        );
        if prepared.compressed {
            set_header(&mut session_headers, "x-ctxhost-compressed", "true");
        }
        if let Some(error) = &prepared.engine_error {
            set_header(&mut session_headers, "x-ctxhost-engine-error", error);
        }
        if let Some(tokens) = prepared.over_window {
            let name = live.record.key.name.clone();
            let what = format!(
                "the conversation is {tokens} tokens after the engine ({}) compressed what it \
                 could, over the {window}-token window of {model} (less the room kept for the \
                 answer)",
                live.session.engine(),
            );
            match self.gateway.settings.limits.over_window {
                OverWindow::Refuse => {
                    tracing::warn!(session = %name, "{what}: refused (serve.limits.over_window)");
                    self.release();
                    return Err(GatewayError::new(
                        ErrorKind::OverWindow,
                        format!(
                            "{what}; shorten it (or set serve.limits.over_window: send to let \
                             the provider judge)"
                        ),
                    ));
                }
                OverWindow::Send => {
                    tracing::warn!(session = %name, "{what}: sent anyway (serve.limits.over_window)");
                    set_header(&mut session_headers, "x-ctxhost-over-window", "true");
                }
            }
        }
        self.headers = session_headers;
        Ok(self)
    }

    /// The session.
    pub fn live(&mut self) -> &mut Live {
        &mut self.guard
    }

    /// Makes one model call (`POST base/path`) with `body`, timing it; a call that gets no
    /// answer at all is counted against the session and logged.
    pub async fn send(
        &mut self,
        path: &'static str,
        query: Option<&str>,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Result<reqwest::Response, GatewayError> {
        let started = Instant::now();
        let result = self
            .gateway
            .upstream
            .send(Method::POST, path, query, headers, Some(body))
            .await;
        self.gateway.metrics.observe(
            Metric::UpstreamDuration,
            &[("route", path)],
            started.elapsed(),
        );
        if let Err(error) = &result {
            self.upstream_error("connect");
            tracing::warn!("{error}");
        }
        result
    }

    /// Takes in a model call's result: a success is handed back with the headers to relay; an
    /// upstream error is counted and relayed with its own status and body; no answer at all is
    /// the gateway's error. The session is saved before any failure goes out.
    pub async fn take_call(
        &mut self,
        sent: Result<reqwest::Response, GatewayError>,
    ) -> Result<Called, GatewayError> {
        let response = match sent {
            Ok(response) => response,
            Err(error) => {
                self.save().await;
                return Err(error);
            }
        };
        let status = response.status();
        let relayed = relayed_headers(response.headers());
        if status.is_success() {
            return Ok(Called::Success(response, relayed));
        }
        let body = self.read_answer(response).await?;
        self.upstream_error(&status.as_u16().to_string());
        self.save().await;
        Ok(Called::Relayed(relay(status, relayed, &self.headers, body)))
    }

    /// Reads a model call's whole answer (bounded); a failure is counted and the session saved.
    pub async fn read_answer(
        &mut self,
        response: reqwest::Response,
    ) -> Result<Bytes, GatewayError> {
        let limit = self.gateway.settings.limits.max_response_bytes;
        match read_body(response, limit).await {
            Ok(bytes) => Ok(bytes),
            Err(error) => {
                self.upstream_error("body");
                self.save().await;
                Err(error)
            }
        }
    }

    /// Counts an upstream error against the session.
    pub fn upstream_error(&mut self, kind: &str) {
        crate::request_log::upstream_broke_off();
        self.live().record.stats.upstream_errors += 1;
        self.gateway
            .metrics
            .add(Metric::UpstreamErrors, &[("kind", kind)], 1);
    }

    /// Saves the session's record now (before a failure goes out).
    async fn save(&mut self) {
        let gateway = self.gateway.clone();
        gateway.save(&mut self.live().record).await;
    }

    /// Runs the engine's calls (id, name, arguments); their results, in order.
    pub async fn answer_calls(&mut self, calls: &[(String, String, String)]) -> Vec<Message> {
        let mut results = Vec::new();
        for (id, name, arguments) in calls {
            let answer = self.run_tool(name, arguments).await;
            results.push(Message::tool_result(id.clone(), answer));
        }
        results
    }

    /// Saves the session after its answer has gone out, then releases it.
    pub fn release(self) {
        self.gateway.clone().save_then_release(self.guard);
    }
}

/// A model call taken in: a success to read or stream, or the upstream's own error, already
/// made into the client's response.
pub enum Called {
    Success(reqwest::Response, HeaderMap),
    Relayed(Response),
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
