//! Anthropic Messages (`POST /v1/messages`): the client's `system` and `messages` converted into
//! the engine's message model ([`ctxhost_wire::anthropic`]) and back for each model call, the engine's
//! own tools offered as Anthropic tools, their `tool_use` blocks hidden from the client, prompt
//! cache breakpoints placed for clients that set none ([`cache`]), streamed answers rewritten
//! event by event ([`stream`]), the client's betas kept and the config's added ([`betas`]).
//! `POST /v1/messages/count_tokens` answers for what the gateway would send ([`super::count`]).

mod betas;
mod cache;
mod stream;

use std::collections::HashSet;

use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use ctxhost_agents::Agent;
use ctxhost_sdk::{Message, Usage};
use serde_json::{json, Map, Value};

use super::count::Counting;
use super::own_answer::{streamed_answer, whole_answer, OwnAnswer};
use super::provider_context::ProviderContext;
use super::{
    bad_request, budget, client_tool_names, is_engine_tool, model, object, offer_tools, streamed,
    to_bytes, Incoming, KeyHeader, Parsed, Wire,
};
use crate::error::{ErrorKind, GatewayError};
use ctxhost_config::serve::{CacheBreakpoints, ServeSettings};
use ctxhost_costs::cache::Ttl;
use ctxhost_wire::anthropic as convert;
pub use stream::MessagesStream;

/// Anthropic Messages.
pub struct Messages;

/// A Messages request's own fields.
pub struct MessagesRequest {
    /// The body as sent; `system` and `messages` are replaced per model call.
    body: Map<String, Value>,
    /// The TTL of the gateway's own cache breakpoints, when it places them (the client placed
    /// none, `serve.cache.breakpoints: auto`).
    breakpoints: Option<Ttl>,
}

impl Wire for Messages {
    type Request = MessagesRequest;
    type Stream = MessagesStream;
    const PATH: &'static str = "messages";
    const AGENTS: &'static [Agent] = &[Agent::ClaudeCode];
    const ENDPOINTS: &'static [&'static str] = &[Self::PATH, Self::COUNT_PATH];
    const KEY_HEADER: KeyHeader = KeyHeader::Named("x-api-key");

    fn client_setup(origin: &str) -> String {
        // Anthropic's SDKs add `/v1` themselves.
        format!(
            "Anthropic clients (Messages: Claude Code): ANTHROPIC_BASE_URL={origin}, without /v1"
        )
    }

    fn parse(
        bytes: Bytes,
        settings: &ServeSettings,
    ) -> Result<Incoming<MessagesRequest>, GatewayError> {
        let mut body = object(&bytes)?;
        // Taken in place (left null), so the body keeps its key order when they are put back.
        let Some(Value::Array(turns)) = body.get_mut("messages").map(Value::take) else {
            return Err(bad_request("`messages` must be an array of messages"));
        };
        if turns.is_empty() {
            return Err(bad_request("`messages` must not be empty"));
        }
        let breakpoints = (!cache::client_sets_breakpoints(&body, &turns)
            && settings.cache.breakpoints == CacheBreakpoints::Auto)
            .then_some(settings.anthropic.cache_ttl);
        let system = body.get_mut("system").map(Value::take);
        let history =
            convert::to_messages(system, turns).map_err(|e| bad_request(e.to_string()))?;
        Ok(Incoming::Turn(Parsed {
            history,
            model: model(&body)?,
            stream: streamed(&body),
            output_budget: budget(&body, &["max_tokens"]),
            client_tools: client_tool_names(&body, &["name"]),
            request: MessagesRequest { body, breakpoints },
        }))
    }

    fn fields(request: &MessagesRequest) -> &Map<String, Value> {
        &request.body
    }

    fn text_answer(text: &str, answer: &OwnAnswer<'_>) -> Response {
        own_answer(text, answer)
    }

    fn error_response(error: GatewayError) -> Response {
        (error.status(), axum::Json(error_body(&error))).into_response()
    }

    /// The client's fields, `system` and `messages` from `messages`, and the engine's tools as
    /// Anthropic tools after the client's.
    fn upstream_body(
        request: &MessagesRequest,
        messages: &[Message],
        engine_tools: &[Value],
    ) -> Bytes {
        let converted = convert::from_messages(messages);
        let mut body = request.body.clone();
        body.insert("messages".into(), Value::Array(converted.messages));
        match converted.system {
            Some(system) => {
                body.insert("system".into(), system);
            }
            None => {
                body.shift_remove("system");
            }
        }
        offer_tools(&mut body, engine_tools.iter().map(anthropic_tool));
        if let Some(ttl) = request.breakpoints {
            cache::add_breakpoints(&mut body, ttl);
        }
        to_bytes(&body)
    }

    fn reply(answer: &Value) -> Option<Message> {
        convert::reply_message(&answer["content"]).ok()
    }

    /// The prompt is the uncached input plus what was read from and written to the cache.
    fn usage(value: &Value) -> Option<Usage> {
        let input = value.get("input_tokens")?.as_u64()?;
        let cache_read = value["cache_read_input_tokens"].as_u64();
        let cache_write = value["cache_creation_input_tokens"].as_u64();
        // Which cache the writes went to, when the provider says (`cache_creation`).
        let cache_write_1h = value["cache_creation"]["ephemeral_1h_input_tokens"].as_u64();
        let output = value["output_tokens"].as_u64().unwrap_or(0);
        let prompt_tokens = input + cache_read.unwrap_or(0) + cache_write.unwrap_or(0);
        Some(Usage {
            prompt_tokens,
            completion_tokens: output,
            total_tokens: prompt_tokens + output,
            cache_read_tokens: cache_read,
            cache_write_tokens: cache_write,
            cache_write_1h_tokens: cache_write_1h,
            ..Usage::default()
        })
    }

    fn hide_engine_calls(
        answer: &mut Value,
        engine_names: &HashSet<String>,
        client_calls: bool,
    ) -> Option<Message> {
        let visible = visible_blocks(&answer["content"], engine_names);
        let message = convert::reply_message(&visible).ok();
        answer["content"] = visible;
        if !client_calls {
            answer["stop_reason"] = json!("end_turn");
        }
        message
    }

    fn stream(_: &MessagesRequest) -> MessagesStream {
        MessagesStream::default()
    }

    fn provider_context(request: &MessagesRequest) -> ProviderContext {
        ProviderContext::of_anthropic(&request.body)
    }

    fn upstream_headers(
        headers: &mut HeaderMap,
        model: &str,
        settings: &ServeSettings,
    ) -> Option<u64> {
        betas::apply(headers, model, &settings.anthropic)
    }
}

impl Counting for Messages {
    const COUNT_PATH: &'static str = "messages/count_tokens";

    fn counted(tokens: u64) -> Value {
        json!({ "input_tokens": tokens })
    }

    /// Breakpoints change no count.
    fn for_count(request: &mut MessagesRequest) {
        request.breakpoints = None;
    }

    fn tools(request: &MessagesRequest) -> Option<&Value> {
        request.body.get("tools")
    }
}

/// The gateway's own error in Anthropic's shape (also a stream's `error` event):
/// `{"type": "error", "error": {"type", "message"}}`.
fn error_body(error: &GatewayError) -> Value {
    let kind = match error.kind {
        ErrorKind::BadRequest | ErrorKind::MethodNotAllowed | ErrorKind::OverWindow => {
            "invalid_request_error"
        }
        ErrorKind::Unauthorized => "authentication_error",
        ErrorKind::NotFound => "not_found_error",
        ErrorKind::TooLarge => "request_too_large",
        ErrorKind::BadGateway | ErrorKind::Internal | ErrorKind::StoreUnavailable => "api_error",
        ErrorKind::UpstreamTimeout => "timeout_error",
        ErrorKind::Unavailable | ErrorKind::SessionBusy => "overloaded_error",
    };
    json!({"type": "error", "error": {"type": kind, "message": error.message}})
}

/// An engine tool's OpenAI function schema as an Anthropic tool.
fn anthropic_tool(schema: &Value) -> Value {
    let function = &schema["function"];
    let mut tool = json!({"name": function["name"], "input_schema": function["parameters"]});
    if let Some(description) = function.get("description") {
        tool["description"] = description.clone();
    }
    if tool["input_schema"].is_null() {
        tool["input_schema"] = json!({"type": "object", "properties": {}});
    }
    tool
}

/// `content` without the engine's `tool_use` blocks: what the client receives.
fn visible_blocks(content: &Value, engine_names: &HashSet<String>) -> Value {
    let blocks = content.as_array().cloned().unwrap_or_default();
    Value::Array(
        blocks
            .into_iter()
            .filter(|b| !is_engine_call(b, engine_names))
            .collect(),
    )
}

fn is_engine_call(block: &Value, engine_names: &HashSet<String>) -> bool {
    block["type"] == "tool_use" && is_engine_tool(&block["name"], engine_names)
}

/// The gateway's own text answer as an Anthropic message (whole, or as its event sequence).
fn own_answer(text: &str, answer: &OwnAnswer<'_>) -> Response {
    let counts = answer.counts;
    let id = format!("msg_ctxhost_{}", answer.id);
    let message = |content: Value, stop: Value, output: u64| {
        json!({"id": id, "type": "message", "role": "assistant", "model": answer.model,
               "content": content, "stop_reason": stop, "stop_sequence": null,
               "usage": {"input_tokens": counts.input, "output_tokens": output}})
    };
    if !answer.stream {
        return whole_answer(message(
            json!([{"type": "text", "text": text}]),
            json!("end_turn"),
            counts.output,
        ));
    }
    let events = [
        json!({"type": "message_start", "message": message(json!([]), Value::Null, 0)}),
        json!({"type": "content_block_start", "index": 0,
               "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0,
               "delta": {"type": "text_delta", "text": text}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta",
               "delta": {"stop_reason": "end_turn", "stop_sequence": null},
               // Cumulative, as the API reports it now (clients read the input here too).
               "usage": {"input_tokens": counts.input, "output_tokens": counts.output}}),
        json!({"type": "message_stop"}),
    ];
    let frames = events.into_iter().map(|event| {
        let name = event["type"].as_str().unwrap_or("message").to_string();
        format!("event: {name}\ndata: {event}\n\n")
    });
    streamed_answer(frames.collect())
}
