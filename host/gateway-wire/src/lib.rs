//! The provider APIs `ctxhost serve` speaks, one adapter each around the gateway's one turn
//! pipeline: how a request is taken apart into the engine's messages and the rest of its
//! fields, how one model call's body is built from the view, how a reply and its usage are
//! read, how the engine's tool calls are hidden from the client, how a streamed answer's
//! upstream events become the client's frames, and how the gateway's own answers (the handoff
//! to an agent's compaction) and errors ([`error`]) are shaped. The lossless conversions
//! between formats are `ctxhost-wire`'s; this crate is what each API looks like on the wire.
//! Adding an API is one adapter here and its line in [`each_wire`].

pub mod anthropic;
pub mod chat;
pub mod count;
pub mod error;
pub mod own_answer;
pub mod provider_context;
pub mod responses;

use std::collections::HashSet;

use axum::response::Response;
use bytes::Bytes;
use ctxhost_agents::handoff::Handoff;
use ctxhost_agents::Agent;
use ctxhost_sdk::{Message, Usage};
use serde_json::Value;

use ctxhost_config::serve::ServeSettings;
use error::GatewayError;
use own_answer::OwnAnswer;

/// One provider API, as the turn pipeline drives it.
pub trait Wire: Send + Sync + 'static {
    /// The request's own fields, kept for building each model call's body.
    type Request: Send + Sync + 'static;
    /// A streamed answer's state across its rounds.
    type Stream: ClientStream;
    /// The provider route, after the base URL (`chat/completions`, `messages`, `responses`).
    const PATH: &'static str;
    /// The agents known to speak this API: their own headers (the one naming a session among
    /// them) are read on its requests.
    const AGENTS: &'static [Agent];
    /// Every route of this API under the provider's base URL, `PATH` first: the gateway's
    /// routes for the API are made from it (the rest relayed in its shape), and so are the
    /// hints for a client whose base URL is off and the check of `serve.upstream`.
    const ENDPOINTS: &'static [&'static str];
    /// How the provider takes the gateway's own key (`serve.upstream_key_env`).
    const KEY_HEADER: KeyHeader = KeyHeader::Bearer;

    /// How this API's clients are pointed at a gateway at `origin` (`http://HOST:PORT`), in
    /// one line: the `serve` banner says it for each wire, and a 404 on a base-URL mistake
    /// says it for the wire whose route was asked.
    fn client_setup(origin: &str) -> String;

    /// Takes a request body apart.
    fn parse(
        bytes: Bytes,
        settings: &ServeSettings,
    ) -> Result<Incoming<Self::Request>, GatewayError>;

    /// The request's own fields as sent, beside its conversation (an agent's request metadata).
    fn fields(request: &Self::Request) -> &serde_json::Map<String, Value>;

    /// The gateway's own error in the shape this API's clients parse (OpenAI's, unless the
    /// API has its own).
    fn error_response(error: GatewayError) -> Response {
        axum::response::IntoResponse::into_response(error)
    }

    /// The body of one model call: the request's fields with `messages` as the history and
    /// the engine's tools (OpenAI function schemas) offered after the client's.
    fn upstream_body(
        request: &Self::Request,
        messages: &[Message],
        engine_tools: &[Value],
    ) -> Bytes;

    /// The assistant message of a whole (non-streamed) answer, every tool call included.
    fn reply(answer: &Value) -> Option<Message>;

    /// Usage in the API's form (a whole answer's `usage`), as the engine takes it.
    fn usage(value: &Value) -> Option<Usage>;

    /// Takes the engine's calls out of a whole answer; returns what the client receives as a
    /// message. `client_calls`: the client has calls of its own to answer (else the answer
    /// ends the turn).
    fn hide_engine_calls(
        answer: &mut Value,
        engine_names: &HashSet<String>,
        client_calls: bool,
    ) -> Option<Message>;

    /// A streamed answer's state, before its first event.
    fn stream(request: &Self::Request) -> Self::Stream;

    /// The client's headers made into the upstream's for `model` (features the config adds,
    /// such as Anthropic betas); returns the model's window when those features set it. Most
    /// APIs send the headers as they came.
    fn upstream_headers(
        _headers: &mut axum::http::HeaderMap,
        _model: &str,
        _settings: &ServeSettings,
    ) -> Option<u64> {
        None
    }

    /// The gateway's own text answer in this API's shape, whole or streamed as asked (no
    /// model was called).
    fn text_answer(text: &str, answer: &OwnAnswer<'_>) -> Response;

    /// The handoff answering an agent's compaction in this API's shape: its text as
    /// [`Wire::text_answer`] renders it; an API with compaction items of its own (Responses)
    /// renders its item, and its compact route's answer.
    fn handoff_answer(handoff: &Handoff, answer: &OwnAnswer<'_>) -> Response {
        match handoff {
            Handoff::Text(text) | Handoff::Item(text) => Self::text_answer(text, answer),
        }
    }

    /// Asks the provider to keep the session's requests on one prompt cache, where the API
    /// takes a key for it and the client sent none (OpenAI's `prompt_cache_key`); `key` is the
    /// session's ([`ctxhost_gateway_state::record::SessionKey::prompt_cache_key`]). Most APIs
    /// take none.
    fn route_prompt_cache(_request: &mut Self::Request, _key: String) {}

    /// The provider's own context management the request asks for (none on most APIs).
    fn provider_context(_request: &Self::Request) -> provider_context::ProviderContext {
        provider_context::ProviderContext::None
    }
}

/// Something done for each wire the gateway speaks (routing it, checking URLs against it).
pub trait EachWire {
    fn wire<W: Wire>(&mut self);

    /// A wire with a token counting route.
    fn counting<W: count::Counting>(&mut self) {
        self.wire::<W>();
    }
}

/// Every wire the gateway speaks: adding one is its adapter and its line here.
pub fn each_wire(visit: &mut impl EachWire) {
    visit.wire::<chat::Chat>();
    visit.counting::<anthropic::Messages>();
    visit.counting::<responses::Responses>();
}

/// How a provider API takes a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyHeader {
    /// `Authorization: Bearer KEY` (OpenAI's APIs).
    Bearer,
    /// The key alone in this header (Anthropic's `x-api-key`).
    Named(&'static str),
}

/// How the provider takes the gateway's key on `path` (after the base URL): as the wire whose
/// route it is (or is under) takes it, else as a bearer.
pub fn key_header(path: &str) -> KeyHeader {
    struct Find<'a>(&'a str, KeyHeader);
    impl EachWire for Find<'_> {
        fn wire<W: Wire>(&mut self) {
            let under = |endpoint: &str| {
                self.0
                    .strip_prefix(endpoint)
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
            };
            if W::ENDPOINTS.iter().any(|e| under(e)) {
                self.1 = W::KEY_HEADER;
            }
        }
    }
    let mut find = Find(path.trim_start_matches('/'), KeyHeader::Bearer);
    each_wire(&mut find);
    find.1
}

/// How each wire's clients are pointed at a gateway at `origin` ([`Wire::client_setup`]), in
/// the order of [`each_wire`].
pub fn client_setups(origin: &str) -> Vec<String> {
    struct Setups<'a>(&'a str, Vec<String>);
    impl EachWire for Setups<'_> {
        fn wire<W: Wire>(&mut self) {
            self.1.push(W::client_setup(self.0));
        }
    }
    let mut all = Setups(origin, Vec::new());
    each_wire(&mut all);
    all.1
}

/// Routes every provider API has beside its own (relayed as they are).
pub const SHARED_ENDPOINTS: &[&str] = &["models"];

/// Every wire's endpoints.
pub fn endpoints() -> Vec<&'static str> {
    struct Endpoints(Vec<&'static str>);
    impl EachWire for Endpoints {
        fn wire<W: Wire>(&mut self) {
            self.0.extend(W::ENDPOINTS);
        }
    }
    let mut all = Endpoints(Vec::new());
    each_wire(&mut all);
    all.0
}

/// The routes whose 404 from the provider means its base URL is wrong: every wire's turn route
/// and the shared ones (others may be missing on a provider that has these).
pub fn base_routes() -> Vec<&'static str> {
    struct Turns(Vec<&'static str>);
    impl EachWire for Turns {
        fn wire<W: Wire>(&mut self) {
            self.0.push(W::PATH);
        }
    }
    let mut all = Turns(SHARED_ENDPOINTS.to_vec());
    each_wire(&mut all);
    all.0
}

/// A request body taken apart.
pub enum Incoming<R> {
    /// A turn the gateway manages.
    Turn(Parsed<R>),
    /// A request the gateway cannot manage (it relies on state the provider keeps): sent on
    /// as it came.
    Unmanaged(Bytes),
}

/// What the pipeline needs of any request, and the API's own rest.
pub struct Parsed<R> {
    pub request: R,
    /// The client's whole history, in the engine's message model.
    pub history: Vec<Message>,
    pub model: String,
    pub stream: bool,
    /// `max_tokens` or its like: the room kept free for the answer.
    pub output_budget: Option<u64>,
    /// The names of the client's own tools (they win over the engine's of the same name).
    pub client_tools: HashSet<String>,
}

/// What one upstream event of a streamed round comes to, whatever the API.
pub enum StreamEvent {
    /// Something for the client (renumbered, the engine's parts taken out).
    Frame(Bytes),
    /// Nothing for the client (held back until the end, the engine's, or unreadable).
    Held,
    /// The provider's own error, relayed as it came: the answer ends with it.
    Failed(Bytes),
    /// The round is complete.
    Done,
}

/// What one streamed round produced.
pub struct StreamedReply {
    /// The assistant message, every tool call included (the engine's too).
    pub reply: Option<Message>,
    /// Its usage in the API's form (null when none was reported).
    pub usage: Value,
    /// The reply ended normally: its engine calls may be answered.
    pub complete: bool,
    /// Some of it was held back from the client (the engine's calls).
    pub hid: bool,
}

/// A streamed answer as the client receives it, over every round of engine tool calls.
pub trait ClientStream: Send + 'static {
    /// What the round waits for before it counts as complete (named in the error when the
    /// stream breaks off without it).
    const END: &'static str;

    /// Takes in one upstream event of a round (`first_round`: of the first model call).
    fn event(
        &mut self,
        event: &eventsource_stream::Event,
        engine_names: &HashSet<String>,
        first_round: bool,
    ) -> StreamEvent;

    /// The round just completed: what it produced. The next round starts afresh.
    fn end_round(&mut self, engine_names: &HashSet<String>) -> StreamedReply;

    /// The reply as the client saw it over every round (what stands in the upstream history
    /// for what was hidden).
    fn visible(&self) -> Option<Message>;

    /// The gateway's own error as a frame.
    fn error(&mut self, error: &GatewayError) -> Bytes;

    /// A follow-up model call the provider refused with `status` and `body`, as a frame.
    fn refused(&mut self, status: axum::http::StatusCode, body: &[u8]) -> Bytes;

    /// The closing frames. `engine_only`: the last round's calls were the engine's only, so
    /// the turn ends here; `usage`: every round's usage summed.
    fn finish(&mut self, engine_only: bool, usage: Option<Value>) -> Vec<Bytes>;
}

/// Whether a tool named `name` is one of the engine's.
pub fn is_engine_tool(name: &Value, engine_names: &HashSet<String>) -> bool {
    name.as_str().is_some_and(|n| engine_names.contains(n))
}

/// The names the client's tools go by (`path` into each tool, e.g. `["function", "name"]`).
pub fn client_tool_names(body: &serde_json::Map<String, Value>, path: &[&str]) -> HashSet<String> {
    body.get("tools")
        .and_then(Value::as_array)
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| {
                    path.iter()
                        .fold(t, |v, k| &v[*k])
                        .as_str()
                        .map(str::to_string)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// `key`'s whole-number value, if any (an output budget).
pub fn budget(body: &serde_json::Map<String, Value>, keys: &[&str]) -> Option<u64> {
    keys.iter()
        .find_map(|k| body.get(*k).and_then(Value::as_u64))
}

/// The model a request names.
pub fn model(body: &serde_json::Map<String, Value>) -> Result<String, GatewayError> {
    body.get("model")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| bad_request("`model` must name a model"))
}

/// Whether the request asks for a streamed answer.
pub fn streamed(body: &serde_json::Map<String, Value>) -> bool {
    body.get("stream").and_then(Value::as_bool).unwrap_or(false)
}

/// A request body as a JSON object.
pub fn object(bytes: &[u8]) -> Result<serde_json::Map<String, Value>, GatewayError> {
    serde_json::from_slice(bytes)
        .map_err(|e| bad_request(format!("the request body is not a JSON object: {e}")))
}

pub fn bad_request(message: impl Into<String>) -> GatewayError {
    GatewayError::new(error::ErrorKind::BadRequest, message)
}

/// OpenAI's `prompt_cache_key` (Chat Completions and Responses) set to `key` when the client
/// sent none: requests with one key go to the same cache machines, so the session's prefix is
/// found where it was written
/// (<https://platform.openai.com/docs/guides/prompt-caching>).
pub fn prompt_cache_key(body: &mut serde_json::Map<String, Value>, key: String) {
    body.entry("prompt_cache_key").or_insert(Value::String(key));
}

/// Adds `tools` after the client's own in `body["tools"]`.
pub fn offer_tools(body: &mut serde_json::Map<String, Value>, tools: impl Iterator<Item = Value>) {
    let mut tools = tools.peekable();
    if tools.peek().is_none() {
        return;
    }
    if let Value::Array(list) = body
        .entry("tools")
        .or_insert_with(|| Value::Array(Vec::new()))
    {
        list.extend(tools);
    }
}

/// A body as bytes.
pub fn to_bytes(body: &serde_json::Map<String, Value>) -> Bytes {
    Bytes::from(serde_json::to_vec(body).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gateways_key_goes_as_the_wire_of_its_route_takes_it() {
        let anthropic = KeyHeader::Named("x-api-key");
        assert_eq!(key_header("messages"), anthropic);
        assert_eq!(key_header("/messages/batches/b1"), anthropic);
        assert_eq!(key_header("messages/count_tokens"), anthropic);
        for path in [
            "chat/completions",
            "responses/compact",
            "embeddings",
            "models",
            "files",
        ] {
            assert_eq!(key_header(path), KeyHeader::Bearer, "{path}");
        }
    }
}
