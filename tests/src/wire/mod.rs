//! The three wires the gateway speaks, as the tests drive them: what a client sends on each
//! (its path, its credential's header, a body built from a conversation), how it reads each
//! answer (whole or streamed), and the matching side of the scripted upstream (what the gateway
//! sent it, answered in the same wire's shape).
//!
//! Conversations are written once in OpenAI chat shape; each wire converts them at its edge.
//! An assistant message may carry a `reasoning` token, which the wires that carry reasoning
//! (Anthropic thinking blocks, Responses reasoning items) keep with their turn and the chat wire
//! drops. [`per_wire!`](crate::per_wire) runs one test body once per wire.

mod chat;
mod messages;
mod responses;

use std::hash::{DefaultHasher, Hash, Hasher};

use reqwest::blocking::{Client, RequestBuilder, Response};
use serde_json::{json, Value};

use crate::gateway::GatewayProcess;
use crate::upstream::{Answer, FakeUpstream, Recorded};

/// One wire of the gateway: a closed set, each with its own client and upstream shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// OpenAI Chat Completions, `/v1/chat/completions`.
    Chat,
    /// Anthropic Messages, `/v1/messages`.
    Messages,
    /// OpenAI Responses (stateless), `/v1/responses`.
    Responses,
}

/// Token counts as a provider reports them (input, output), on any wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
}

/// An answer as the client read it: the assistant message in canonical chat shape (see
/// [`assistant`]), the usage it reported, and whether the model stopped to call tools.
#[derive(Debug, Clone)]
pub struct Reply {
    pub message: Value,
    pub usage: Option<Usage>,
    pub calls_tools: bool,
}

/// Gateway errors whose shape the client parses, by what went wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GatewayFailure {
    BadRequest,
    Unauthorized,
    TooLarge,
    UpstreamTimeout,
}

impl Wire {
    pub const ALL: [Wire; 3] = [Wire::Chat, Wire::Messages, Wire::Responses];

    /// The wire's path under the gateway's `/v1`.
    pub fn path(self) -> &'static str {
        match self {
            Wire::Chat => "/chat/completions",
            Wire::Messages => "/messages",
            Wire::Responses => "/responses",
        }
    }

    /// The route as the gateway's metrics name it.
    pub fn route(self) -> String {
        format!("/v1{}", self.path())
    }

    /// Whether the wire carries a model's reasoning back and forth with its turn.
    pub fn carries_reasoning(self) -> bool {
        self != Wire::Chat
    }

    /// A request body for `messages` (chat shape, the system prompt first if any) offering
    /// `tools` (chat shape), streamed or not.
    pub fn body(self, messages: &[Value], tools: &[Value], stream: bool) -> Value {
        match self {
            Wire::Chat => chat::body(messages, tools, stream),
            Wire::Messages => messages::body(messages, tools, stream),
            Wire::Responses => responses::body(messages, tools, stream),
        }
    }

    /// The fields of a body of this wire that hold the conversation (the system prompt and the
    /// turns) as the provider reads them, to compare what a client sent with what reached the
    /// upstream. On Messages the cache breakpoints the gateway adds are set aside, and a text
    /// given as a string reads as the one text block the gateway puts a breakpoint on.
    pub fn conversation(self, body: &Value) -> Value {
        let keys: &[&str] = match self {
            Wire::Chat => &["messages"],
            Wire::Messages => &["system", "messages"],
            Wire::Responses => &["instructions", "input"],
        };
        let conversation: Value = keys
            .iter()
            .map(|k| (k.to_string(), body[*k].clone()))
            .collect::<serde_json::Map<_, _>>()
            .into();
        match self {
            Wire::Messages => messages::as_read(&conversation),
            _ => conversation,
        }
    }

    /// The list of turns of a body of this wire (`messages` or `input`), as sent.
    pub fn turns(self, body: &Value) -> Vec<Value> {
        let key = if self == Wire::Responses {
            "input"
        } else {
            "messages"
        };
        body[key].as_array().cloned().unwrap_or_default()
    }

    /// A `POST` of this wire to the gateway as the client holding `credential`, in the header
    /// this wire's clients use.
    pub fn post(self, gateway: &GatewayProcess, credential: Option<&str>) -> RequestBuilder {
        let request = Client::new().post(format!("{}{}", gateway.base_url(), self.path()));
        self.authorize(request, credential)
    }

    /// `request` as sent by the client holding `credential` on this wire.
    pub fn authorize(self, request: RequestBuilder, credential: Option<&str>) -> RequestBuilder {
        match (self, credential) {
            (_, None) => request,
            (Wire::Messages, Some(key)) => request
                .header("x-api-key", key)
                .header("anthropic-version", "2023-06-01"),
            (_, Some(key)) => request.bearer_auth(key),
        }
    }

    /// Sends `body` as the client holding `credential`, naming the session when `session` is
    /// given (`x-ctxhost-session`).
    pub fn send(
        self,
        gateway: &GatewayProcess,
        credential: Option<&str>,
        session: Option<&str>,
        body: &Value,
    ) -> Response {
        let mut request = self.post(gateway, credential);
        if let Some(session) = session {
            request = request.header("x-ctxhost-session", session);
        }
        request.json(body).send().expect("the gateway answers")
    }

    /// Reads an answer's body, whole or streamed (then checked as a client library checks the
    /// event sequence).
    pub fn read(self, text: &str, stream: bool) -> Reply {
        match (self, stream) {
            (Wire::Chat, false) => chat::read(text),
            (Wire::Chat, true) => chat::assemble(text),
            (Wire::Messages, false) => messages::read(text),
            (Wire::Messages, true) => messages::assemble(text),
            (Wire::Responses, false) => responses::read(text),
            (Wire::Responses, true) => responses::assemble(text),
        }
    }

    /// The sessions the gateway holds for the client holding `credential` on this wire
    /// (`/ctxhost/sessions`).
    pub fn sessions(self, gateway: &GatewayProcess, credential: Option<&str>) -> Vec<Value> {
        let body = self.get_json(gateway, "/ctxhost/sessions", credential);
        body["sessions"].as_array().cloned().unwrap_or_default()
    }

    /// What the gateway holds about session `id` of the client holding `credential` on this
    /// wire.
    pub fn session(self, gateway: &GatewayProcess, id: &str, credential: Option<&str>) -> Value {
        self.get_json(gateway, &format!("/ctxhost/sessions/{id}"), credential)
    }

    /// The JSON body of a `GET` of `path` as the client holding `credential` on this wire,
    /// which must answer 200.
    fn get_json(self, gateway: &GatewayProcess, path: &str, credential: Option<&str>) -> Value {
        let request = Client::new().get(format!("{}{path}", gateway.url));
        let response = self
            .authorize(request, credential)
            .send()
            .expect("the gateway answers");
        let status = response.status().as_u16();
        let body: Value = response.json().expect("a JSON body");
        assert_eq!(status, 200, "{body}");
        body
    }

    /// The code an error body of this wire names its kind with (OpenAI's `error.code`,
    /// Anthropic's `error.type`).
    pub fn error_code(self, body: &Value) -> String {
        let key = if self == Wire::Messages {
            "type"
        } else {
            "code"
        };
        body["error"][key].as_str().unwrap_or_default().to_string()
    }

    /// The code a gateway error of this kind carries on this wire.
    pub fn failure_code(self, failure: GatewayFailure) -> &'static str {
        match (self, failure) {
            (Wire::Messages, GatewayFailure::BadRequest) => "invalid_request_error",
            (Wire::Messages, GatewayFailure::Unauthorized) => "authentication_error",
            (Wire::Messages, GatewayFailure::TooLarge) => "request_too_large",
            (Wire::Messages, GatewayFailure::UpstreamTimeout) => "timeout_error",
            (_, GatewayFailure::BadRequest) => "invalid_request",
            (_, GatewayFailure::Unauthorized) => "invalid_gateway_token",
            (_, GatewayFailure::TooLarge) => "request_too_large",
            (_, GatewayFailure::UpstreamTimeout) => "upstream_timeout",
        }
    }

    // The upstream's side.

    /// The model calls of this wire the upstream received, in order.
    pub fn requests(self, upstream: &FakeUpstream) -> Vec<Recorded> {
        match self {
            Wire::Chat => upstream.chat_requests(),
            Wire::Messages => upstream.messages_requests(),
            Wire::Responses => upstream.responses_requests(),
        }
    }

    /// What a model call carried, as the engine's messages in canonical chat shape.
    pub fn sent_messages(self, request: &Recorded) -> Vec<Value> {
        let body = request.json();
        match self {
            Wire::Chat => chat::messages_of(&body),
            Wire::Messages => messages::messages_of(&body),
            Wire::Responses => responses::messages_of(&body),
        }
    }

    /// The names of the tools a model call offered, each with an object schema.
    pub fn sent_tools(self, request: &Recorded) -> Vec<String> {
        let body = request.json();
        let tools = body["tools"].as_array().cloned().unwrap_or_default();
        tools
            .iter()
            .filter_map(|tool| {
                let (name, schema) = match self {
                    Wire::Chat => (&tool["function"]["name"], &tool["function"]["parameters"]),
                    Wire::Messages => (&tool["name"], &tool["input_schema"]),
                    Wire::Responses => (&tool["name"], &tool["parameters"]),
                };
                schema
                    .is_object()
                    .then(|| name.as_str())?
                    .map(str::to_string)
            })
            .collect()
    }

    /// The upstream's answer with `message` (chat shape) in this wire's shape, streamed when
    /// the request asked for a stream.
    pub fn reply(self, request: &Recorded, message: &Value, usage: Option<Usage>) -> Answer {
        match self {
            Wire::Chat => chat::reply(request, message, usage),
            Wire::Messages => messages::reply(request, message, usage),
            Wire::Responses => responses::reply(request, message, usage),
        }
    }

    /// The first events of a streamed answer with `message`, after which the upstream falls
    /// silent with the stream open.
    pub fn stream_then_hang(self, message: &Value) -> Answer {
        match self {
            Wire::Chat => chat::stream_then_hang(message),
            Wire::Messages => messages::stream_then_hang(message),
            Wire::Responses => responses::stream_then_hang(message),
        }
    }

    /// The credential a model call carried, from the header this wire's provider takes it in.
    pub fn credential_sent(self, request: &Recorded) -> Option<String> {
        match self {
            Wire::Messages => request.header("x-api-key").map(str::to_string),
            _ => request
                .header("authorization")
                .and_then(|v| v.strip_prefix("Bearer "))
                .map(str::to_string),
        }
    }

    /// A provider's rate-limit error body in this wire's shape.
    pub fn rate_limited(self, text: &str) -> Value {
        match self {
            Wire::Messages => json!({"type": "error",
                                     "error": {"type": "rate_limit_error", "message": text}}),
            _ => json!({"error": {"message": text, "type": "rate_limit",
                                  "code": "rate_limit_exceeded"}}),
        }
    }
}

/// An assistant message in canonical chat shape, so answers read back over any wire compare
/// with what the model was scripted to say: its text (empty when none), its tool calls (with
/// compact arguments) when any, and its reasoning token when any.
pub fn assistant(message: &Value) -> Value {
    let text = match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<String>(),
        _ => String::new(),
    };
    let mut out = json!({"role": "assistant", "content": text});
    let calls: Vec<Value> = message["tool_calls"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|call| {
            let arguments = call["function"]["arguments"].as_str().unwrap_or("{}");
            let arguments: Value = serde_json::from_str(arguments).unwrap_or_else(|_| json!({}));
            json!({"id": call["id"], "type": "function",
                   "function": {"name": call["function"]["name"],
                                "arguments": arguments.to_string()}})
        })
        .collect();
    if !calls.is_empty() {
        out["tool_calls"] = Value::Array(calls);
    }
    if let Some(reasoning) = message.get("reasoning").filter(|r| !r.is_null()) {
        out["reasoning"] = reasoning.clone();
    }
    out
}

/// `message` without its reasoning token (what the chat wire carries).
pub fn without_reasoning(message: &Value) -> Value {
    let mut message = message.clone();
    if let Some(fields) = message.as_object_mut() {
        fields.shift_remove("reasoning");
    }
    message
}

/// A short stable id derived from `text`, so the upstream and the client name an item alike.
fn id_of(prefix: &str, text: &str) -> String {
    let mut hasher = DefaultHasher::new();
    text.hash(&mut hasher);
    format!("{prefix}_{:012x}", hasher.finish() & 0xffff_ffff_ffff)
}

/// A chat message's text (its string content, or its text parts joined).
fn text_of(message: &Value) -> String {
    match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        _ => String::new(),
    }
}

/// A tool call's arguments as JSON (`{}` when they do not parse).
fn arguments_of(call: &Value) -> Value {
    serde_json::from_str(call["function"]["arguments"].as_str().unwrap_or("{}"))
        .unwrap_or_else(|_| json!({}))
}

/// Every tool call in `messages` (canonical chat shape) is answered before the next message
/// that is not a tool result, and every tool result answers one.
pub fn assert_tools_paired(messages: &[Value]) {
    let mut open: Vec<String> = Vec::new();
    for message in messages {
        if message["role"] == "tool" {
            let id = message["tool_call_id"].as_str().unwrap().to_string();
            assert!(open.contains(&id), "a result for an unknown call {id}");
            open.retain(|o| *o != id);
        } else {
            assert!(open.is_empty(), "calls left unanswered: {open:?}");
            for call in message["tool_calls"].as_array().into_iter().flatten() {
                open.push(call["id"].as_str().unwrap().to_string());
            }
        }
    }
}

/// Generates one `#[test]` per wire from one body: `per_wire! { fn name(wire: Wire) { .. } }`
/// makes a module `name` with tests `chat`, `messages` and `responses`, so a failure names its
/// wire. The body sees the enclosing module's items; its one argument is a [`Wire`].
#[macro_export]
macro_rules! per_wire {
    ($(#[$meta:meta])* fn $name:ident($wire:ident: $ty:ty) $body:block $($rest:tt)*) => {
        $(#[$meta])*
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            fn body($wire: $ty) $body

            #[test]
            fn chat() {
                body($crate::wire::Wire::Chat)
            }

            #[test]
            fn messages() {
                body($crate::wire::Wire::Messages)
            }

            #[test]
            fn responses() {
                body($crate::wire::Wire::Responses)
            }
        }
        $crate::per_wire! { $($rest)* }
    };
    () => {};
}
