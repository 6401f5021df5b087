//! `POST /v1/responses` (OpenAI Responses API) in its stateless form: the client's
//! `instructions` and `input` items converted into the engine's message model ([`convert`]),
//! prepared on the same session machinery as Chat Completions ([`super::turn`],
//! [`super::live`]), converted back for the provider, the engine's own tools offered as flat
//! function tools and answered on the way, streamed ([`stream`]) or not. A request that relies
//! on the provider's stored state (`previous_response_id`) is passed through untouched
//! ([`unmanaged`]).

use ctxhost_wire::responses as convert;
mod stream;
mod unmanaged;
mod usage;

use std::collections::HashSet;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, Uri};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use ctxhost_sdk::Message;
use serde_json::{json, Map, Value};

use super::error::{ErrorKind, GatewayError};
use super::turn::{
    self, begin_turn, engine_tools, json_answer, session_name, with_session_headers, Called,
    ModelCall, Step, ToolRounds, TurnRequest,
};
use super::Gateway;
use usage::{parse_usage, UsageSum};

/// Codex names its session in this header.
const CLIENT_SESSION_HEADER: &str = "session-id";
const UPSTREAM_PATH: &str = "responses";

/// A Responses request, taken apart.
struct ResponsesRequest {
    /// The body as sent; `instructions` and `input` are replaced per model call.
    body: Map<String, Value>,
    history: Vec<Message>,
    model: String,
    stream: bool,
    output_budget: Option<u64>,
    client_tools: HashSet<String>,
}

impl ResponsesRequest {
    fn parse(mut body: Map<String, Value>) -> Result<Self, GatewayError> {
        let bad = |message: String| GatewayError::new(ErrorKind::BadRequest, message);
        // Taken in place (left null), so the body keeps its key order when they are put back.
        let input = body
            .get_mut("input")
            .map(Value::take)
            .unwrap_or(Value::Null);
        if input.is_null() {
            return Err(bad("`input` must be a string or an array of items".into()));
        }
        let instructions = body.get_mut("instructions").map(Value::take);
        let history =
            convert::to_messages(instructions.as_ref(), &input).map_err(|e| bad(e.to_string()))?;
        if history.is_empty() {
            return Err(bad("`input` must not be empty".into()));
        }
        let model = body
            .get("model")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("`model` must name a model".into()))?
            .to_string();
        let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
        let output_budget = body.get("max_output_tokens").and_then(Value::as_u64);
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
        Ok(ResponsesRequest {
            body,
            history,
            model,
            stream,
            output_budget,
            client_tools,
        })
    }
}

/// An engine tool's Chat Completions schema as a Responses function tool (flat).
fn function_tool(schema: &Value) -> Value {
    let function = &schema["function"];
    let mut tool = json!({"type": "function", "name": function["name"]});
    if let Some(description) = function.get("description") {
        tool["description"] = description.clone();
    }
    tool["parameters"] = match function.get("parameters") {
        Some(parameters) if parameters.is_object() => parameters.clone(),
        _ => json!({"type": "object", "properties": {}}),
    };
    tool
}

pub async fn responses(
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
    let body: Map<String, Value> = serde_json::from_slice(&bytes).map_err(|e| {
        GatewayError::new(
            ErrorKind::BadRequest,
            format!("the request body is not a JSON object: {e}"),
        )
    })?;
    if unmanaged::relies_on_stored_state(&body) {
        return unmanaged::pass_through(&gateway, &headers, uri.query(), bytes).await;
    }
    drop(bytes);
    let request = ResponsesRequest::parse(body)?;
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
    Ok(answered
        .unwrap_or_else(|error| with_session_headers(error.into_response(), &session_headers)))
}

impl turn::UpstreamRequest for ResponsesRequest {
    const PATH: &'static str = UPSTREAM_PATH;
    /// The body of one model call: the client's fields, `instructions` and `input` from
    /// `messages`, and the engine's tools as flat function tools after the client's.
    fn upstream_body(&self, messages: &[Message], engine_tools: &[Value]) -> Bytes {
        let converted = convert::from_messages(messages);
        let mut body = self.body.clone();
        body.insert("input".into(), converted.input);
        match converted.instructions {
            Some(instructions) => {
                body.insert("instructions".into(), instructions);
            }
            None => {
                body.shift_remove("instructions");
            }
        }
        if !engine_tools.is_empty() {
            let tools = body
                .entry("tools")
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(tools) = tools {
                tools.extend(engine_tools.iter().map(function_tool));
            }
        }
        Bytes::from(serde_json::to_vec(&body).unwrap_or_default())
    }
}

/// One request's exchange with the provider, its session held.
type Exchange = turn::Exchange<ResponsesRequest>;

/// Whether an output item is one of the engine's calls: never shown to the client.
fn is_engine_call(item: &Value, engine_names: &HashSet<String>) -> bool {
    item["type"] == "function_call"
        && item["name"]
            .as_str()
            .is_some_and(|n| engine_names.contains(n))
}

/// `output` without the engine's calls: what the client receives.
fn visible_items(output: &Value, engine_names: &HashSet<String>) -> Value {
    let items = output.as_array().cloned().unwrap_or_default();
    Value::Array(
        items
            .into_iter()
            .filter(|item| !is_engine_call(item, engine_names))
            .collect(),
    )
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
        let answer = turn::parse_answer(&bytes)?;
        usage.add(&answer["usage"]);
        let reply = convert::reply_message(&answer["output"]);
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
            Step::Hide { .. } => {
                let mut answer = answer;
                let visible = visible_items(&answer["output"], engine_names);
                tools.hide(live, convert::reply_message(&visible));
                answer["output"] = visible;
                break (answer, relayed);
            }
        }
    };
    if let Some(total) = usage.total() {
        answer["usage"] = total;
    }
    live.finished(&gateway).await;
    gateway.save_then_release(guard);
    Ok(json_answer(relayed, &session_headers, &answer))
}
