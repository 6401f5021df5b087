//! `POST /v1/chat/completions`: the client's history in, the session's view plus what is new
//! out to the provider, the engine's own tools answered on the way, streaming or not.

use std::collections::{BTreeMap, HashSet};
use std::convert::Infallible;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, Uri};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use ctxhost_sdk::{Message, Usage};
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use serde_json::{json, Map, Value};

use super::error::{ErrorKind, GatewayError};
use super::live::{Live, Prepared, SessionGuard};
use super::turn::{
    answer_calls, begin_turn, engine_tools, event_stream, json_answer, session_name, split_calls,
    with_session_headers, Called, ReleaseOnDrop, Step, StreamBudget, ToolRounds, TurnRequest,
};
use super::upstream::read_body;
use super::Gateway;

/// The header naming a client's session.
pub const SESSION_HEADER: &str = "x-ctxhost-session";
const UPSTREAM_PATH: &str = "chat/completions";

/// A Chat Completions request, taken apart.
struct ChatRequest {
    /// The body as sent; `messages` is replaced per model call.
    body: Map<String, Value>,
    history: Vec<Message>,
    model: String,
    stream: bool,
    /// The client asked for the usage chunk (`stream_options.include_usage`).
    wants_usage: bool,
    output_budget: Option<u64>,
    client_tools: HashSet<String>,
}

impl ChatRequest {
    fn parse(bytes: &[u8]) -> Result<Self, GatewayError> {
        let bad = |message: String| GatewayError::new(ErrorKind::BadRequest, message);
        let mut body: Map<String, Value> = serde_json::from_slice(bytes)
            .map_err(|e| bad(format!("the request body is not a JSON object: {e}")))?;
        let Some(Value::Array(messages)) = body.get_mut("messages").map(Value::take) else {
            return Err(bad("`messages` must be an array of messages".into()));
        };
        let history = messages
            .into_iter()
            .enumerate()
            .map(|(i, m)| Message::from_value(m).map_err(|e| bad(format!("messages[{i}]: {e}"))))
            .collect::<Result<Vec<_>, _>>()?;
        if history.is_empty() {
            return Err(bad("`messages` must not be empty".into()));
        }
        let model = body
            .get("model")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("`model` must name a model".into()))?
            .to_string();
        let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
        let wants_usage = body
            .get("stream_options")
            .and_then(|o| o.get("include_usage"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let output_budget = ["max_completion_tokens", "max_tokens"]
            .iter()
            .find_map(|k| body.get(*k).and_then(Value::as_u64));
        let client_tools = body
            .get("tools")
            .and_then(Value::as_array)
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        Ok(ChatRequest {
            body,
            history,
            model,
            stream,
            wants_usage,
            output_budget,
            client_tools,
        })
    }

    /// The body of one model call: the client's fields, `messages`, the engine's tools beside
    /// the client's, and usage asked for when streaming (stripped again if the client did not
    /// ask for it).
    fn upstream_body(&self, messages: &[Message], engine_tools: &[Value]) -> Bytes {
        let mut body = self.body.clone();
        body.insert(
            "messages".into(),
            Value::Array(messages.iter().map(Message::to_value).collect()),
        );
        if !engine_tools.is_empty() {
            let tools = body
                .entry("tools")
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(tools) = tools {
                tools.extend(engine_tools.iter().cloned());
            }
        }
        if self.stream {
            let options = body
                .entry("stream_options")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(options) = options {
                options.insert("include_usage".into(), Value::Bool(true));
            }
        }
        Bytes::from(serde_json::to_vec(&body).unwrap_or_default())
    }
}

/// Usage as the provider reported it.
fn parse_usage(value: &Value) -> Option<Usage> {
    let prompt_tokens = value.get("prompt_tokens")?.as_u64()?;
    let completion_tokens = value
        .get("completion_tokens")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    Some(Usage {
        prompt_tokens,
        completion_tokens,
        total_tokens: value
            .get("total_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(prompt_tokens + completion_tokens),
        cache_read_tokens: value["prompt_tokens_details"]["cached_tokens"].as_u64(),
        reasoning_tokens: value["completion_tokens_details"]["reasoning_tokens"].as_u64(),
        ..Usage::default()
    })
}

/// The usage the client sees: every model call its request cost, summed.
#[derive(Default)]
struct UsageSum {
    last: Option<Value>,
    prompt: u64,
    completion: u64,
    total: u64,
    calls: usize,
}

impl UsageSum {
    fn add(&mut self, value: &Value) {
        if value.is_null() {
            return;
        }
        self.prompt += value["prompt_tokens"].as_u64().unwrap_or(0);
        self.completion += value["completion_tokens"].as_u64().unwrap_or(0);
        self.total += value["total_tokens"].as_u64().unwrap_or(0);
        self.calls += 1;
        self.last = Some(value.clone());
    }

    fn value(&self) -> Option<Value> {
        let mut value = self.last.clone()?;
        if self.calls > 1 {
            value["prompt_tokens"] = json!(self.prompt);
            value["completion_tokens"] = json!(self.completion);
            value["total_tokens"] = json!(self.total);
        }
        Some(value)
    }
}

pub async fn chat_completions(
    State(gateway): State<Arc<Gateway>>,
    headers: HeaderMap,
    uri: Uri,
    body: Body,
) -> Response {
    match handle(gateway, headers, uri, body).await {
        Ok(response) => response,
        Err(error) => error.into_response(),
    }
}

async fn handle(
    gateway: Arc<Gateway>,
    headers: HeaderMap,
    uri: Uri,
    body: Body,
) -> Result<Response, GatewayError> {
    let bytes = gateway.read_request(&headers, body).await?;
    let request = ChatRequest::parse(&bytes)?;
    drop(bytes);
    let name = session_name(&headers, None, &request.history)?;
    let turn = begin_turn(
        &gateway,
        &headers,
        TurnRequest {
            name,
            history: &request.history,
            model: &request.model,
            output_budget: request.output_budget,
        },
    )
    .await?;
    let (guard, prepared, session_headers) = (turn.guard, turn.prepared, turn.session_headers);
    let query = uri.query().map(str::to_string);
    let answered = if request.stream {
        stream(
            gateway,
            guard,
            request,
            prepared,
            headers,
            query,
            session_headers.clone(),
        )
        .await
    } else {
        complete(
            gateway,
            guard,
            request,
            prepared,
            headers,
            query,
            session_headers.clone(),
        )
        .await
    };
    // The gateway's own errors name the session too.
    Ok(answered
        .unwrap_or_else(|error| with_session_headers(error.into_response(), &session_headers)))
}

/// What every model call of one request shares.
struct ModelCall<'a> {
    request: &'a ChatRequest,
    schemas: &'a [Value],
    headers: &'a HeaderMap,
    query: Option<&'a str>,
}

/// The reply with the engine's calls taken out, as the client receives it.
fn visible_message(message: &Value, engine_names: &HashSet<String>) -> Value {
    let mut visible = message.clone();
    if let Some(Value::Array(calls)) = visible.get_mut("tool_calls") {
        calls.retain(|c| {
            !c["function"]["name"]
                .as_str()
                .is_some_and(|n| engine_names.contains(n))
        });
        if calls.is_empty() {
            if let Some(object) = visible.as_object_mut() {
                object.remove("tool_calls");
            }
        }
    }
    if visible.get("content").is_none_or(Value::is_null) && visible.get("tool_calls").is_none() {
        visible["content"] = Value::String(String::new());
    }
    visible
}

async fn complete(
    gateway: Arc<Gateway>,
    mut guard: SessionGuard,
    request: ChatRequest,
    prepared: Prepared,
    headers: HeaderMap,
    query: Option<String>,
    session_headers: HeaderMap,
) -> Result<Response, GatewayError> {
    let live = guard.as_mut().expect("the session is open");
    let (schemas, engine_names) = engine_tools(live, &request.client_tools);
    let mut messages = prepared.upstream;
    let mut tools = ToolRounds::new(&gateway);
    let mut usage = UsageSum::default();
    let call = ModelCall {
        request: &request,
        schemas: &schemas,
        headers: &headers,
        query: query.as_deref(),
    };
    let (mut answer, relayed) = loop {
        let sent = gateway.model_call(live, &call, &messages).await;
        let (response, relayed) = match gateway.take_call(live, sent, &session_headers).await? {
            Called::Success(response, relayed) => (response, relayed),
            Called::Relayed(response) => return Ok(response),
        };
        let bytes = gateway.read_answer(live, response).await?;
        let mut answer = super::turn::parse_answer(&bytes)?;
        usage.add(&answer["usage"]);
        let message = answer["choices"][0]["message"].clone();
        let reply = Message::from_value(message.clone()).ok();
        live.called(
            &gateway,
            &messages,
            reply.as_ref(),
            parse_usage(&answer["usage"]),
        )
        .await;
        let Some(reply) = reply else {
            break (answer, relayed);
        };
        match tools
            .after(&gateway, live, reply, &engine_names, &mut messages)
            .await
        {
            Step::Answer => break (answer, relayed),
            Step::Again => continue,
            Step::Hide { client_calls } => {
                let visible = visible_message(&message, &engine_names);
                tools.hide(live, Message::from_value(visible.clone()).ok());
                answer["choices"][0]["message"] = visible;
                if !client_calls {
                    answer["choices"][0]["finish_reason"] = json!("stop");
                }
                break (answer, relayed);
            }
        }
    };
    if let Some(total) = usage.value() {
        answer["usage"] = total;
    }
    live.finished(&gateway).await;
    gateway.save_then_release(guard);
    Ok(json_answer(relayed, &session_headers, &answer))
}

/// One tool call being streamed.
#[derive(Default)]
struct StreamedCall {
    /// `Some(true)`: the engine's; `Some(false)`: the client's; `None`: its name has not
    /// arrived yet.
    engine: Option<bool>,
    /// The index the client sees (client calls only).
    client_index: usize,
    id: String,
    name: String,
    arguments: String,
    /// The first delta's other fields (`type`, ...).
    fields: Map<String, Value>,
    /// Deltas held until the call is known to be the client's.
    held: Vec<Value>,
}

/// What one streamed model call produced.
#[derive(Default)]
struct StreamedRound {
    content: String,
    calls: BTreeMap<u64, StreamedCall>,
    finish_reason: Option<Value>,
    usage: Option<Value>,
}

impl StreamedRound {
    /// The assistant message the call produced, with every tool call (the engine's too).
    fn reply(&self) -> Option<Message> {
        let calls: Vec<Value> = self
            .calls
            .values()
            .map(|c| {
                let mut call = c.fields.clone();
                call.insert("id".into(), json!(c.id));
                call.insert("type".into(), json!("function"));
                call.insert(
                    "function".into(),
                    json!({"name": c.name, "arguments": c.arguments}),
                );
                Value::Object(call)
            })
            .collect();
        let mut message = json!({"role": "assistant", "content": self.content});
        if !calls.is_empty() {
            message["tool_calls"] = Value::Array(calls);
            if self.content.is_empty() {
                message["content"] = Value::Null;
            }
        }
        Message::from_value(message).ok()
    }
}

/// Rewrites one upstream chunk for the client: the engine's tool calls taken out, the client's
/// renumbered, the finish reason and usage held back (they are sent once, at the very end).
/// Returns `None` when nothing is left to send.
fn rewrite_chunk(
    mut chunk: Value,
    round: &mut StreamedRound,
    engine_names: &HashSet<String>,
    next_client_index: &mut usize,
    first_round: bool,
) -> Option<Value> {
    if let Some(usage) = chunk.as_object_mut().and_then(|c| c.remove("usage")) {
        if !usage.is_null() {
            round.usage = Some(usage);
        }
    }
    let Some(Value::Array(choices)) = chunk.get_mut("choices") else {
        return None;
    };
    let mut keep = false;
    for choice in choices.iter_mut() {
        let primary = choice["index"].as_u64().unwrap_or(0) == 0;
        if !primary {
            keep = true;
            continue;
        }
        if let Some(reason) = choice.get_mut("finish_reason").map(Value::take) {
            if !reason.is_null() {
                round.finish_reason = Some(reason);
            }
        }
        let Some(delta) = choice.get_mut("delta").and_then(Value::as_object_mut) else {
            continue;
        };
        if !first_round {
            delta.remove("role");
        }
        if let Some(text) = delta.get("content").and_then(Value::as_str) {
            round.content.push_str(text);
        }
        if let Some(Value::Array(calls)) = delta.remove("tool_calls") {
            let mut forwarded = Vec::new();
            for call in calls {
                let index = call["index"].as_u64().unwrap_or(0);
                let streamed = round.calls.entry(index).or_default();
                if let Some(id) = call["id"].as_str() {
                    streamed.id.push_str(id);
                }
                if let Some(name) = call["function"]["name"].as_str() {
                    streamed.name.push_str(name);
                }
                if let Some(arguments) = call["function"]["arguments"].as_str() {
                    streamed.arguments.push_str(arguments);
                }
                if let Value::Object(fields) = &call {
                    for (key, value) in fields {
                        if !matches!(key.as_str(), "index" | "id" | "function" | "type") {
                            streamed.fields.insert(key.clone(), value.clone());
                        }
                    }
                }
                if streamed.engine.is_none() && !streamed.name.is_empty() {
                    let engine = engine_names.contains(&streamed.name);
                    streamed.engine = Some(engine);
                    if !engine {
                        streamed.client_index = *next_client_index;
                        *next_client_index += 1;
                    }
                }
                match streamed.engine {
                    None => streamed.held.push(call),
                    Some(true) => streamed.held.clear(),
                    Some(false) => {
                        for mut delta in streamed.held.drain(..).chain([call]) {
                            delta["index"] = json!(streamed.client_index);
                            forwarded.push(delta);
                        }
                    }
                }
            }
            if !forwarded.is_empty() {
                delta.insert("tool_calls".into(), Value::Array(forwarded));
            }
        }
        let only_role = delta.len() == 1 && delta.contains_key("role");
        keep |= !delta.is_empty() && (!only_role || first_round);
        choice["finish_reason"] = Value::Null;
    }
    keep.then_some(chunk)
}

fn sse(value: &Value) -> Bytes {
    Bytes::from(format!("data: {value}\n\n"))
}

type Frame = Result<Bytes, Infallible>;

async fn stream(
    gateway: Arc<Gateway>,
    mut guard: SessionGuard,
    request: ChatRequest,
    prepared: Prepared,
    headers: HeaderMap,
    query: Option<String>,
    session_headers: HeaderMap,
) -> Result<Response, GatewayError> {
    let live = guard.as_mut().expect("the session is open");
    let (schemas, engine_names) = engine_tools(live, &request.client_tools);
    let messages = prepared.upstream;
    // The first call is made before answering, so its failure reaches the client with the
    // upstream's own status and body.
    let call = ModelCall {
        request: &request,
        schemas: &schemas,
        headers: &headers,
        query: query.as_deref(),
    };
    let sent = gateway.model_call(live, &call, &messages).await;
    let (first, relayed) = match gateway.take_call(live, sent, &session_headers).await? {
        Called::Success(response, relayed) => (response, relayed),
        Called::Relayed(response) => return Ok(response),
    };
    let frames = async_stream::stream! {
        // The client may leave at any point: whenever the stream ends or is dropped, the
        // session as it stands is saved and released.
        let mut guard = ReleaseOnDrop::new(gateway.clone(), guard);
        let live = guard.live();
        let mut messages = messages;
        let mut hidden: Vec<Message> = Vec::new();
        let mut visible_content = String::new();
        let mut visible_calls: Vec<Value> = Vec::new();
        let mut usage = UsageSum::default();
        let mut next_client_index = 0usize;
        let mut meta: Option<Value> = None;
        let mut budget = StreamBudget::new(&gateway);
        let rounds = gateway.settings.limits.tool_rounds.max(1);
        let mut response = Some(first);
        let mut round_number = 0u32;
        'rounds: loop {
            round_number += 1;
            let Some(upstream) = response.take() else { break };
            let mut round = StreamedRound::default();
            let mut events = upstream.bytes_stream().eventsource();
            let mut done = false;
            while let Some(event) = events.next().await {
                let event = match budget.take(&gateway, live, event) {
                    Ok(event) => event,
                    Err(error) => {
                        yield Ok::<_, Infallible>(sse(&error.body()));
                        break 'rounds;
                    }
                };
                if event.data.trim() == "[DONE]" {
                    done = true;
                    break;
                }
                let Ok(mut chunk) = serde_json::from_str::<Value>(&event.data) else {
                    continue;
                };
                if chunk.get("error").is_some() {
                    gateway.upstream_error(live, "stream");
                    yield Ok(sse(&chunk));
                    break 'rounds;
                }
                match &meta {
                    None => meta = Some(chunk.clone()),
                    Some(first) => {
                        // One response to the client: every round under the first one's id.
                        chunk["id"] = first["id"].clone();
                    }
                }
                if let Some(chunk) = rewrite_chunk(
                    chunk,
                    &mut round,
                    &engine_names,
                    &mut next_client_index,
                    round_number == 1,
                ) {
                    yield Ok(sse(&chunk));
                }
            }
            if !done {
                let error = GatewayError::new(
                    ErrorKind::BadGateway,
                    "the upstream's stream ended before [DONE]",
                );
                gateway.upstream_error(live, "stream");
                yield Ok(sse(&error.body()));
                break;
            }
            visible_content.push_str(&round.content);
            if let Some(value) = &round.usage {
                usage.add(value);
            }
            let reply = round.reply();
            live.called(
                &gateway,
                &messages,
                reply.as_ref(),
                round.usage.as_ref().and_then(parse_usage),
            )
            .await;
            for call in round.calls.values().filter(|c| c.engine == Some(false)) {
                visible_calls.push(json!({
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }));
            }
            let Some(reply) = reply else { break };
            let calls = split_calls(&reply, &engine_names);
            let mut finish = round.finish_reason.clone().unwrap_or(json!("stop"));
            if calls.engine.is_empty() {
                hidden.push(reply);
            } else {
                let results = answer_calls(&gateway, live, &calls.engine).await;
                hidden.push(reply.clone());
                hidden.extend(results.iter().cloned());
                if !calls.has_client_calls && round_number < rounds {
                    messages.push(reply);
                    messages.extend(results);
                    let call = ModelCall {
                        request: &request,
                        schemas: &schemas,
                        headers: &headers,
                        query: query.as_deref(),
                    };
                    match gateway.model_call(live, &call, &messages).await {
                        Ok(next) if next.status().is_success() => {
                            response = Some(next);
                            continue;
                        }
                        Ok(next) => {
                            let status = next.status();
                            gateway.upstream_error(live, &status.as_u16().to_string());
                            let body = read_body(next, budget.limit).await.unwrap_or_default();
                            let error = serde_json::from_slice::<Value>(&body)
                                .ok()
                                .filter(|v| v.get("error").is_some())
                                .unwrap_or_else(|| {
                                    GatewayError::new(
                                        ErrorKind::BadGateway,
                                        format!("the upstream answered {status}"),
                                    )
                                    .body()
                                });
                            yield Ok(sse(&error));
                            break;
                        }
                        Err(error) => {
                            yield Ok(sse(&error.body()));
                            break;
                        }
                    }
                }
                if !calls.has_client_calls {
                    finish = json!("stop");
                }
            }
            // What the client saw, and what the upstream history holds in its place.
            let mut visible = json!({"role": "assistant", "content": visible_content});
            if !visible_calls.is_empty() {
                visible["tool_calls"] = Value::Array(visible_calls.clone());
                if visible_content.is_empty() {
                    visible["content"] = Value::Null;
                }
            }
            let spliced = hidden.len() > 1
                || hidden.first().is_some_and(|h| h.tool_calls().len() != visible_calls.len());
            if spliced {
                if let Ok(visible) = Message::from_value(visible) {
                    live.record.conversation.splice(&visible, std::mem::take(&mut hidden));
                }
            }
            let mut last = meta.clone().unwrap_or_else(|| json!({"object": "chat.completion.chunk"}));
            if let Some(object) = last.as_object_mut() {
                object.remove("usage");
            }
            last["choices"] = json!([{"index": 0, "delta": {}, "finish_reason": finish}]);
            yield Ok(sse(&last));
            if request.wants_usage {
                if let Some(total) = usage.value() {
                    last["choices"] = json!([]);
                    last["usage"] = total;
                    yield Ok(sse(&last));
                }
            }
            yield Ok(Bytes::from_static(b"data: [DONE]\n\n"));
            break;
        }
        live.finished(&gateway).await;
    };
    let frames = frames.map(|frame: Frame| frame);
    Ok(event_stream(frames, &relayed, &session_headers))
}

impl Gateway {
    /// Makes one model call for `request` with `messages` (and the engine's tools).
    async fn model_call(
        &self,
        live: &mut Live,
        call: &ModelCall<'_>,
        messages: &[Message],
    ) -> Result<reqwest::Response, GatewayError> {
        let body = call.request.upstream_body(messages, call.schemas);
        self.send_model(live, UPSTREAM_PATH, call.query, call.headers, body)
            .await
    }
}
