//! `POST /v1/messages` (Anthropic Messages): the client's history converted into the engine's
//! message model ([`ctxhost_wire::anthropic`]), prepared on the same session machinery as Chat Completions
//! ([`super::turn`], [`super::live`]), converted back for the provider, the engine's own tools
//! answered on the way as `tool_use` / `tool_result` rounds, streamed ([`stream`]) or not.
//! `POST /v1/messages/count_tokens` is passed through as the client sent it.

mod cache;
mod stream;

use std::collections::HashSet;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, Method, Uri};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use ctxhost_sdk::{Message, Usage};
use serde_json::{json, Map, Value};

use ctxhost_wire::anthropic as convert;

use super::error::{AnthropicError, ErrorKind, GatewayError};
use super::turn::{
    self, begin_turn, engine_tools, json_answer, relay, session_name, with_session_headers, Called,
    ModelCall, Step, ToolRounds, TurnRequest,
};
use super::upstream::{read_body, relayed_headers};
use super::Gateway;
use ctxhost_config::serve::CacheBreakpoints;

/// Claude Code names its session in this header.
const CLIENT_SESSION_HEADER: &str = "x-claude-code-session-id";
const UPSTREAM_PATH: &str = "messages";
const COUNT_TOKENS_PATH: &str = "messages/count_tokens";

/// A Messages request, taken apart.
struct MessagesRequest {
    /// The body as sent; `system` and `messages` are replaced per model call.
    body: Map<String, Value>,
    history: Vec<Message>,
    model: String,
    stream: bool,
    output_budget: Option<u64>,
    client_tools: HashSet<String>,
    /// The client placed no cache breakpoints: the gateway places its own.
    add_breakpoints: bool,
}

impl MessagesRequest {
    fn parse(bytes: &[u8]) -> Result<Self, GatewayError> {
        let bad = |message: String| GatewayError::new(ErrorKind::BadRequest, message);
        let mut body: Map<String, Value> = serde_json::from_slice(bytes)
            .map_err(|e| bad(format!("the request body is not a JSON object: {e}")))?;
        // Taken in place (left null), so the body keeps its key order when they are put back.
        let Some(Value::Array(turns)) = body.get_mut("messages").map(Value::take) else {
            return Err(bad("`messages` must be an array of messages".into()));
        };
        if turns.is_empty() {
            return Err(bad("`messages` must not be empty".into()));
        }
        let add_breakpoints = !cache::client_sets_breakpoints(&body, &turns);
        let system = body.get_mut("system").map(Value::take);
        let history =
            convert::to_messages(system.as_ref(), &turns).map_err(|e| bad(e.to_string()))?;
        let model = body
            .get("model")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("`model` must name a model".into()))?
            .to_string();
        let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
        let output_budget = body.get("max_tokens").and_then(Value::as_u64);
        let client_tools = body
            .get("tools")
            .and_then(Value::as_array)
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|t| t["name"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        Ok(MessagesRequest {
            body,
            history,
            model,
            stream,
            output_budget,
            client_tools,
            add_breakpoints,
        })
    }
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

/// Usage as Anthropic reports it: the prompt is the uncached input plus what was read from and
/// written to the cache.
fn parse_usage(value: &Value) -> Option<Usage> {
    let input = value.get("input_tokens")?.as_u64()?;
    let cache_read = value["cache_read_input_tokens"].as_u64();
    let cache_write = value["cache_creation_input_tokens"].as_u64();
    let output = value["output_tokens"].as_u64().unwrap_or(0);
    let prompt_tokens = input + cache_read.unwrap_or(0) + cache_write.unwrap_or(0);
    Some(Usage {
        prompt_tokens,
        completion_tokens: output,
        total_tokens: prompt_tokens + output,
        cache_read_tokens: cache_read,
        cache_write_tokens: cache_write,
        ..Usage::default()
    })
}

/// The usage the client sees: every model call its request cost, summed field by field.
#[derive(Default)]
struct UsageSum {
    total: Option<Value>,
    calls: usize,
}

impl UsageSum {
    fn add(&mut self, value: &Value) {
        let Value::Object(fields) = value else {
            return;
        };
        self.calls += 1;
        let Some(Value::Object(total)) = &mut self.total else {
            self.total = Some(value.clone());
            return;
        };
        for (key, value) in fields {
            match (total.get_mut(key), value.as_u64()) {
                (Some(sum), Some(n)) if sum.is_u64() => *sum = json!(sum.as_u64().unwrap_or(0) + n),
                (None, _) => {
                    total.insert(key.clone(), value.clone());
                }
                _ => {}
            }
        }
    }

    fn value(&self) -> Option<&Value> {
        self.total.as_ref()
    }
}

pub async fn messages(
    State(gateway): State<Arc<Gateway>>,
    headers: HeaderMap,
    uri: Uri,
    body: Body,
) -> Response {
    match handle(gateway, headers, uri, body).await {
        Ok(response) => response,
        Err(error) => AnthropicError(error).into_response(),
    }
}

async fn handle(
    gateway: Arc<Gateway>,
    headers: HeaderMap,
    uri: Uri,
    body: Body,
) -> Result<Response, GatewayError> {
    let bytes = gateway.read_request(&headers, body).await?;
    let mut request = MessagesRequest::parse(&bytes)?;
    drop(bytes);
    request.add_breakpoints &= gateway.settings.cache.breakpoints == CacheBreakpoints::Auto;
    let name = session_name(&headers, Some(CLIENT_SESSION_HEADER), &request.history)?;
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
    let session_headers = turn.session_headers;
    let live = turn.guard.as_ref().expect("the session is open");
    let (schemas, engine_names) = engine_tools(live, &request.client_tools);
    let stream = request.stream;
    let exchange = Exchange {
        gateway,
        guard: turn.guard,
        prepared: turn.prepared,
        session_headers: session_headers.clone(),
        call: ModelCall {
            request,
            schemas,
            engine_names,
            headers,
            query: uri.query().map(str::to_string),
        },
    };
    let answered = if stream {
        stream::stream(exchange).await
    } else {
        complete(exchange).await
    };
    // The gateway's own errors name the session too.
    Ok(answered.unwrap_or_else(|error| {
        with_session_headers(AnthropicError(error).into_response(), &session_headers)
    }))
}

impl turn::UpstreamRequest for MessagesRequest {
    const PATH: &'static str = UPSTREAM_PATH;
    /// The body of one model call: the client's fields, `system` and `messages` from
    /// `messages`, and the engine's tools (OpenAI schemas) as Anthropic tools after the
    /// client's.
    fn upstream_body(&self, messages: &[Message], engine_tools: &[Value]) -> Bytes {
        let converted = convert::from_messages(messages);
        let mut body = self.body.clone();
        body.insert("messages".into(), Value::Array(converted.messages));
        match converted.system {
            Some(system) => {
                body.insert("system".into(), system);
            }
            None => {
                body.shift_remove("system");
            }
        }
        if !engine_tools.is_empty() {
            let tools = body
                .entry("tools")
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(tools) = tools {
                tools.extend(engine_tools.iter().map(anthropic_tool));
            }
        }
        if self.add_breakpoints {
            cache::add_breakpoints(&mut body);
        }
        Bytes::from(serde_json::to_vec(&body).unwrap_or_default())
    }
}

/// One request's exchange with the provider, its session held.
type Exchange = turn::Exchange<MessagesRequest>;

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
    block["type"] == "tool_use"
        && block["name"]
            .as_str()
            .is_some_and(|n| engine_names.contains(n))
}

async fn complete(exchange: Exchange) -> Result<Response, GatewayError> {
    let Exchange {
        gateway,
        mut guard,
        prepared,
        session_headers,
        call,
    } = exchange;
    let live = guard.as_mut().expect("the session is open");
    let engine_names = &call.engine_names;
    let mut messages = prepared.upstream;
    let mut tools = ToolRounds::new(&gateway);
    let mut usage = UsageSum::default();
    let (mut answer, relayed) = loop {
        let sent = call.send(&gateway, live, &messages).await;
        let (response, relayed) = match gateway.take_call(live, sent, &session_headers).await? {
            Called::Success(response, relayed) => (response, relayed),
            Called::Relayed(response) => return Ok(response),
        };
        let bytes = gateway.read_answer(live, response).await?;
        let mut answer = turn::parse_answer(&bytes)?;
        usage.add(&answer["usage"]);
        let reply = convert::reply_message(&answer["content"]).ok();
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
            .after(&gateway, live, reply, engine_names, &mut messages)
            .await
        {
            Step::Answer => break (answer, relayed),
            Step::Again => continue,
            Step::Hide { client_calls } => {
                let visible = visible_blocks(&answer["content"], engine_names);
                tools.hide(live, convert::reply_message(&visible).ok());
                answer["content"] = visible;
                if !client_calls {
                    answer["stop_reason"] = json!("end_turn");
                }
                break (answer, relayed);
            }
        }
    };
    if usage.calls > 1 {
        if let Some(total) = usage.value() {
            answer["usage"] = total.clone();
        }
    }
    live.finished(&gateway).await;
    gateway.save_then_release(guard);
    Ok(json_answer(relayed, &session_headers, &answer))
}

/// `POST /v1/messages/count_tokens`: relayed as the client sent it (the session's view is not
/// applied: the count is of the history the client holds).
pub async fn count_tokens(
    State(gateway): State<Arc<Gateway>>,
    headers: HeaderMap,
    uri: Uri,
    body: Body,
) -> Response {
    let relayed = async {
        let bytes = gateway.read_request(&headers, body).await?;
        let response = gateway
            .upstream
            .send(
                Method::POST,
                COUNT_TOKENS_PATH,
                uri.query(),
                &headers,
                Some(bytes),
            )
            .await?;
        let status = response.status();
        let upstream_headers = relayed_headers(response.headers());
        let body = read_body(response, gateway.settings.limits.max_response_bytes).await?;
        Ok::<_, GatewayError>(relay(status, upstream_headers, &HeaderMap::new(), body))
    };
    match relayed.await {
        Ok(response) => response,
        Err(error) => AnthropicError(error).into_response(),
    }
}
