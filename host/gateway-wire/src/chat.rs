//! OpenAI Chat Completions (`POST /v1/chat/completions`): the engine's own message model, so
//! the history goes in and out as it is. Streamed answers are `chat.completion.chunk`s: the
//! engine's tool calls are held back, the client's renumbered, and the finish reason and usage
//! sent once, at the very end.

use std::collections::{BTreeMap, HashSet};

use axum::response::Response;
use bytes::Bytes;
use ctxhost_agents::Agent;
use ctxhost_sdk::{Message, Usage};
use serde_json::{json, Map, Value};

use super::own_answer::{streamed_answer, whole_answer, OwnAnswer};
use super::{
    bad_request, budget, client_tool_names, is_engine_tool, model, object, offer_tools,
    prompt_cache_key, streamed, to_bytes, ClientStream, Incoming, Parsed, StreamEvent,
    StreamedReply, Wire,
};
use crate::error::{ErrorKind, GatewayError};
use ctxhost_config::serve::ServeSettings;

/// Chat Completions.
pub struct Chat;

/// A Chat Completions request's own fields.
pub struct ChatRequest {
    /// The body as sent; `messages` is replaced per model call.
    body: Map<String, Value>,
    stream: bool,
    /// The client asked for the usage chunk (`stream_options.include_usage`).
    wants_usage: bool,
}

impl Wire for Chat {
    type Request = ChatRequest;
    type Stream = ChatStream;
    const PATH: &'static str = "chat/completions";
    const AGENTS: &'static [Agent] = &[Agent::Hermes];
    /// The legacy completions and the embeddings are relayed.
    const ENDPOINTS: &'static [&'static str] = &[Self::PATH, "completions", "embeddings"];

    fn text_answer(text: &str, answer: &OwnAnswer<'_>) -> Response {
        own_answer(text, answer)
    }

    fn client_setup(origin: &str) -> String {
        format!(
            "OpenAI clients (Chat Completions: Hermes Agent, any OpenAI-compatible agent): \
             OPENAI_BASE_URL={origin}/v1"
        )
    }

    fn parse(bytes: Bytes, _: &ServeSettings) -> Result<Incoming<ChatRequest>, GatewayError> {
        let mut body = object(&bytes)?;
        let Some(Value::Array(messages)) = body.get_mut("messages").map(Value::take) else {
            return Err(bad_request("`messages` must be an array of messages"));
        };
        let history = messages
            .into_iter()
            .enumerate()
            .map(|(i, m)| {
                Message::from_value(m).map_err(|e| bad_request(format!("messages[{i}]: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if history.is_empty() {
            return Err(bad_request("`messages` must not be empty"));
        }
        let model = model(&body)?;
        let stream = streamed(&body);
        let wants_usage = body
            .get("stream_options")
            .and_then(|o| o.get("include_usage"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        Ok(Incoming::Turn(Parsed {
            history,
            model,
            stream,
            output_budget: budget(&body, &["max_completion_tokens", "max_tokens"]),
            client_tools: client_tool_names(&body, &["function", "name"]),
            request: ChatRequest {
                body,
                stream,
                wants_usage,
            },
        }))
    }

    fn fields(request: &ChatRequest) -> &Map<String, Value> {
        &request.body
    }

    /// The client's fields, `messages`, the engine's tools beside the client's, and usage
    /// asked for when streaming (stripped again if the client did not ask for it).
    /// `prompt_cache_key`, unless the client set its own (its cache options go as they came).
    fn route_prompt_cache(request: &mut ChatRequest, key: String) {
        prompt_cache_key(&mut request.body, key);
    }

    fn upstream_body(request: &ChatRequest, messages: &[Message], engine_tools: &[Value]) -> Bytes {
        let mut body = request.body.clone();
        body.insert(
            "messages".into(),
            Value::Array(messages.iter().map(Message::to_value).collect()),
        );
        offer_tools(&mut body, engine_tools.iter().cloned());
        if request.stream {
            let options = body
                .entry("stream_options")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(options) = options {
                options.insert("include_usage".into(), Value::Bool(true));
            }
        }
        to_bytes(&body)
    }

    fn reply(answer: &Value) -> Option<Message> {
        Message::from_value(answer["choices"][0]["message"].clone()).ok()
    }

    fn usage(value: &Value) -> Option<Usage> {
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

    fn hide_engine_calls(
        answer: &mut Value,
        engine_names: &HashSet<String>,
        client_calls: bool,
    ) -> Option<Message> {
        let visible = visible_message(&answer["choices"][0]["message"], engine_names);
        answer["choices"][0]["message"] = visible.clone();
        if !client_calls {
            answer["choices"][0]["finish_reason"] = json!("stop");
        }
        Message::from_value(visible).ok()
    }

    fn stream(request: &ChatRequest) -> ChatStream {
        ChatStream {
            wants_usage: request.wants_usage,
            ..ChatStream::default()
        }
    }
}

/// The reply with the engine's calls taken out, as the client receives it.
fn visible_message(message: &Value, engine_names: &HashSet<String>) -> Value {
    let mut visible = message.clone();
    if let Some(Value::Array(calls)) = visible.get_mut("tool_calls") {
        calls.retain(|c| !is_engine_tool(&c["function"]["name"], engine_names));
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

/// An assistant message of `content` and `calls`.
fn assistant(content: &str, calls: Vec<Value>) -> Value {
    let mut message = json!({"role": "assistant", "content": content});
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
        if content.is_empty() {
            message["content"] = Value::Null;
        }
    }
    message
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
        Message::from_value(assistant(&self.content, calls)).ok()
    }

    /// Takes in one tool call delta; returns the deltas the client gets now (renumbered).
    fn call_delta(
        &mut self,
        call: Value,
        engine_names: &HashSet<String>,
        next_client_index: &mut usize,
    ) -> Vec<Value> {
        let index = call["index"].as_u64().unwrap_or(0);
        let streamed = self.calls.entry(index).or_default();
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
            None => {
                streamed.held.push(call);
                Vec::new()
            }
            Some(true) => {
                streamed.held.clear();
                Vec::new()
            }
            Some(false) => streamed
                .held
                .drain(..)
                .chain([call])
                .map(|mut delta| {
                    delta["index"] = json!(streamed.client_index);
                    delta
                })
                .collect(),
        }
    }

    /// Rewrites one upstream chunk for the client: the engine's tool calls taken out, the
    /// client's renumbered, the finish reason and usage held back (they are sent once, at the
    /// very end). Returns `None` when nothing is left to send.
    fn rewrite(
        &mut self,
        mut chunk: Value,
        engine_names: &HashSet<String>,
        next_client_index: &mut usize,
        first_round: bool,
    ) -> Option<Value> {
        if let Some(usage) = chunk.as_object_mut().and_then(|c| c.remove("usage")) {
            if !usage.is_null() {
                self.usage = Some(usage);
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
                    self.finish_reason = Some(reason);
                }
            }
            let Some(delta) = choice.get_mut("delta").and_then(Value::as_object_mut) else {
                continue;
            };
            if !first_round {
                delta.remove("role");
            }
            if let Some(text) = delta.get("content").and_then(Value::as_str) {
                self.content.push_str(text);
            }
            if let Some(Value::Array(calls)) = delta.remove("tool_calls") {
                let forwarded: Vec<Value> = calls
                    .into_iter()
                    .flat_map(|call| self.call_delta(call, engine_names, next_client_index))
                    .collect();
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
}

fn sse(value: &Value) -> Bytes {
    Bytes::from(format!("data: {value}\n\n"))
}

/// A streamed Chat Completions answer: one response to the client over every round, under the
/// first round's id.
#[derive(Default)]
pub struct ChatStream {
    wants_usage: bool,
    /// The first chunk: the id, model and the like every chunk carries.
    meta: Option<Value>,
    next_client_index: usize,
    visible_content: String,
    visible_calls: Vec<Value>,
    round: StreamedRound,
    /// The last round's finish reason.
    finish_reason: Option<Value>,
}

impl ClientStream for ChatStream {
    const END: &'static str = "[DONE]";

    fn event(
        &mut self,
        event: &eventsource_stream::Event,
        engine_names: &HashSet<String>,
        first_round: bool,
    ) -> StreamEvent {
        if event.data.trim() == "[DONE]" {
            return StreamEvent::Done;
        }
        let Ok(mut chunk) = serde_json::from_str::<Value>(&event.data) else {
            return StreamEvent::Held;
        };
        if chunk.get("error").is_some() {
            return StreamEvent::Failed(sse(&chunk));
        }
        match &self.meta {
            None => self.meta = Some(chunk.clone()),
            Some(first) => chunk["id"] = first["id"].clone(),
        }
        match self.round.rewrite(
            chunk,
            engine_names,
            &mut self.next_client_index,
            first_round,
        ) {
            Some(chunk) => StreamEvent::Frame(sse(&chunk)),
            None => StreamEvent::Held,
        }
    }

    fn end_round(&mut self, _: &HashSet<String>) -> StreamedReply {
        let round = std::mem::take(&mut self.round);
        self.visible_content.push_str(&round.content);
        for call in round.calls.values().filter(|c| c.engine == Some(false)) {
            self.visible_calls.push(json!({
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }));
        }
        self.finish_reason = round.finish_reason.clone();
        StreamedReply {
            reply: round.reply(),
            usage: round.usage.clone().unwrap_or(Value::Null),
            complete: true,
            hid: round.calls.values().any(|c| c.engine != Some(false)),
        }
    }

    fn visible(&self) -> Option<Message> {
        Message::from_value(assistant(&self.visible_content, self.visible_calls.clone())).ok()
    }

    fn error(&mut self, error: &GatewayError) -> Bytes {
        sse(&error.body())
    }

    fn refused(&mut self, status: axum::http::StatusCode, body: &[u8]) -> Bytes {
        let error = serde_json::from_slice::<Value>(body)
            .ok()
            .filter(|v| v.get("error").is_some())
            .unwrap_or_else(|| {
                GatewayError::new(
                    ErrorKind::BadGateway,
                    format!("the upstream answered {status}"),
                )
                .body()
            });
        sse(&error)
    }

    fn finish(&mut self, engine_only: bool, usage: Option<Value>) -> Vec<Bytes> {
        let finish = match self.finish_reason.take() {
            Some(_) if engine_only => json!("stop"),
            Some(reason) => reason,
            None => json!("stop"),
        };
        let mut last = self
            .meta
            .clone()
            .unwrap_or_else(|| json!({"object": "chat.completion.chunk"}));
        if let Some(object) = last.as_object_mut() {
            object.remove("usage");
        }
        last["choices"] = json!([{"index": 0, "delta": {}, "finish_reason": finish}]);
        let mut frames = vec![sse(&last)];
        if let Some(total) = usage.filter(|_| self.wants_usage) {
            last["choices"] = json!([]);
            last["usage"] = total;
            frames.push(sse(&last));
        }
        frames.push(Bytes::from_static(b"data: [DONE]\n\n"));
        frames
    }
}

/// The gateway's own text answer as a chat completion (whole, or as chunks ending with the
/// usage chunk and `[DONE]`).
fn own_answer(text: &str, answer: &OwnAnswer<'_>) -> Response {
    let counts = answer.counts;
    let usage = json!({"prompt_tokens": counts.input, "completion_tokens": counts.output,
                       "total_tokens": counts.input + counts.output});
    let id = format!("chatcmpl-ctxhost-{}", answer.id);
    let created = answer.created;
    if !answer.stream {
        return whole_answer(json!({
            "id": id, "object": "chat.completion", "created": created, "model": answer.model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "stop"}],
            "usage": usage,
        }));
    }
    let chunk = |choices: Value, usage: Value| {
        json!({"id": id, "object": "chat.completion.chunk", "created": created,
               "model": answer.model, "choices": choices, "usage": usage})
    };
    let frames = [
        chunk(
            json!([{"index": 0, "delta": {"role": "assistant", "content": text},
                     "finish_reason": null}]),
            Value::Null,
        ),
        chunk(
            json!([{"index": 0, "delta": {}, "finish_reason": "stop"}]),
            Value::Null,
        ),
        chunk(json!([]), usage),
    ]
    .into_iter()
    .map(|chunk| format!("data: {chunk}\n\n"))
    .chain(std::iter::once("data: [DONE]\n\n".to_string()));
    streamed_answer(frames.collect())
}
