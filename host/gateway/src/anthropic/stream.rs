//! A streamed Messages answer: the upstream's events relayed as they arrive (`message_start`,
//! `content_block_start/delta/stop`, `ping`, ...), the engine's `tool_use` blocks held back and
//! answered by the gateway, the next round's blocks numbered on after the client's, and one
//! `message_delta` (stop reason, usage of every round) and `message_stop` at the very end.

use std::collections::{BTreeMap, HashSet};
use std::convert::Infallible;

use axum::response::Response;
use bytes::Bytes;
use ctxhost_sdk::Message;
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use serde_json::{json, Value};

use super::{is_engine_call, parse_usage, Exchange, UsageSum};
use crate::error::{ErrorKind, GatewayError};
use crate::turn::{answer_calls, event_stream, split_calls, Called, ReleaseOnDrop, StreamBudget};
use crate::upstream::read_body;
use ctxhost_wire::anthropic as convert;

fn event(name: &str, data: &Value) -> Bytes {
    Bytes::from(format!("event: {name}\ndata: {data}\n\n"))
}

fn error_event(error: &GatewayError) -> Bytes {
    event("error", &error.anthropic_body())
}

/// One content block being streamed.
struct StreamedBlock {
    /// The block as it stands, deltas applied.
    value: Value,
    /// `input_json_delta` pieces, parsed at the block's end.
    partial_json: String,
    /// The engine's call: never shown to the client.
    engine: bool,
    /// The index the client sees it under.
    client_index: usize,
}

impl StreamedBlock {
    fn apply(&mut self, delta: &Value) {
        let append = |value: &mut Value, key: &str, piece: &Value| {
            let text = format!(
                "{}{}",
                value[key].as_str().unwrap_or_default(),
                piece.as_str().unwrap_or_default()
            );
            value[key] = Value::String(text);
        };
        match delta["type"].as_str().unwrap_or_default() {
            "text_delta" => append(&mut self.value, "text", &delta["text"]),
            "thinking_delta" => append(&mut self.value, "thinking", &delta["thinking"]),
            "signature_delta" => append(&mut self.value, "signature", &delta["signature"]),
            "input_json_delta" => self
                .partial_json
                .push_str(delta["partial_json"].as_str().unwrap_or_default()),
            "citations_delta" => {
                if !self.value["citations"].is_array() {
                    self.value["citations"] = json!([]);
                }
                if let Some(citations) = self.value["citations"].as_array_mut() {
                    citations.push(delta["citation"].clone());
                }
            }
            _ => {}
        }
    }

    fn finish(&mut self) {
        if !self.partial_json.trim().is_empty() {
            if let Ok(input) = serde_json::from_str::<Value>(&self.partial_json) {
                self.value["input"] = input;
            }
        }
    }
}

/// What one streamed model call produced.
#[derive(Default)]
struct StreamedRound {
    blocks: BTreeMap<u64, StreamedBlock>,
    /// `message_start`'s usage, updated by `message_delta`'s.
    usage: Option<Value>,
    /// `message_delta`'s `delta` (stop reason and sequence).
    stop: Option<Value>,
    stopped: bool,
}

impl StreamedRound {
    fn content(&self) -> Value {
        Value::Array(self.blocks.values().map(|b| b.value.clone()).collect())
    }

    fn merge_usage(&mut self, usage: &Value) {
        let Value::Object(fields) = usage else {
            return;
        };
        let total = self.usage.get_or_insert_with(|| json!({}));
        for (key, value) in fields {
            if !value.is_null() {
                total[key] = value.clone();
            }
        }
    }

    /// Takes in one upstream event; returns what the client gets of it (renumbered), if any.
    fn rewrite(
        &mut self,
        name: &str,
        mut data: Value,
        engine_names: &HashSet<String>,
        next_client_index: &mut usize,
        first_round: bool,
    ) -> Option<Value> {
        let index = data["index"].as_u64().unwrap_or(0);
        match name {
            "message_start" => {
                self.merge_usage(&data["message"]["usage"]);
                first_round.then_some(data)
            }
            "content_block_start" => {
                let value = data["content_block"].clone();
                let engine = is_engine_call(&value, engine_names);
                let client_index = *next_client_index;
                if !engine {
                    *next_client_index += 1;
                }
                self.blocks.insert(
                    index,
                    StreamedBlock {
                        value,
                        partial_json: String::new(),
                        engine,
                        client_index,
                    },
                );
                (!engine).then(|| {
                    data["index"] = json!(client_index);
                    data
                })
            }
            "content_block_delta" | "content_block_stop" => {
                let block = self.blocks.get_mut(&index)?;
                if name == "content_block_delta" {
                    block.apply(&data["delta"]);
                } else {
                    block.finish();
                }
                (!block.engine).then(|| {
                    data["index"] = json!(block.client_index);
                    data
                })
            }
            "message_delta" => {
                self.stop = Some(data["delta"].clone());
                self.merge_usage(&data["usage"]);
                None
            }
            "message_stop" => {
                self.stopped = true;
                None
            }
            _ => Some(data),
        }
    }
}

pub(super) async fn stream(exchange: Exchange) -> Result<Response, GatewayError> {
    let Exchange {
        gateway,
        mut guard,
        prepared,
        session_headers,
        call,
    } = exchange;
    let live = guard.as_mut().expect("the session is open");
    let messages = prepared.upstream;
    // The first call is made before answering, so its failure reaches the client with the
    // upstream's own status and body.
    let sent = call.send(&gateway, live, &messages).await;
    let (first, relayed) = match gateway.take_call(live, sent, &session_headers).await? {
        Called::Success(response, relayed) => (response, relayed),
        Called::Relayed(response) => return Ok(response),
    };
    let frames = async_stream::stream! {
        // The client may leave at any point: whenever the stream ends or is dropped, the
        // session as it stands is saved and released.
        let mut guard = ReleaseOnDrop::new(gateway.clone(), guard);
        let live = guard.live();
        let engine_names = &call.engine_names;
        let mut messages = messages;
        let mut hidden: Vec<Message> = Vec::new();
        let mut visible: Vec<Value> = Vec::new();
        let mut usage = UsageSum::default();
        let mut next_client_index = 0usize;
        let mut budget = StreamBudget::new(&gateway);
        let rounds = gateway.settings.limits.tool_rounds.max(1);
        let mut response = Some(first);
        let mut round_number = 0u32;
        'rounds: loop {
            round_number += 1;
            let Some(upstream) = response.take() else { break };
            let mut round = StreamedRound::default();
            let mut events = upstream.bytes_stream().eventsource();
            while let Some(next) = events.next().await {
                let next = match budget.take(&gateway, live, next) {
                    Ok(next) => next,
                    Err(error) => {
                        yield Ok::<_, Infallible>(error_event(&error));
                        break 'rounds;
                    }
                };
                let Ok(data) = serde_json::from_str::<Value>(&next.data) else {
                    continue;
                };
                let name = if next.event.is_empty() || next.event == "message" {
                    data["type"].as_str().unwrap_or_default().to_string()
                } else {
                    next.event.clone()
                };
                if name == "error" {
                    gateway.upstream_error(live, "stream");
                    yield Ok(event("error", &data));
                    break 'rounds;
                }
                if let Some(data) = round.rewrite(
                    &name,
                    data,
                    engine_names,
                    &mut next_client_index,
                    round_number == 1,
                ) {
                    yield Ok(event(&name, &data));
                }
                if round.stopped {
                    break;
                }
            }
            if !round.stopped {
                let error = GatewayError::new(
                    ErrorKind::BadGateway,
                    "the upstream's stream ended before message_stop",
                );
                gateway.upstream_error(live, "stream");
                yield Ok(error_event(&error));
                break;
            }
            let round_usage = round.usage.clone().unwrap_or(Value::Null);
            usage.add(&round_usage);
            let content = round.content();
            visible.extend(
                round.blocks.values().filter(|b| !b.engine).map(|b| b.value.clone()),
            );
            let reply = convert::reply_message(&content).ok();
            live.called(&gateway, &messages, reply.as_ref(), parse_usage(&round_usage)).await;
            let mut stop = round.stop.clone().unwrap_or_else(|| json!({"stop_reason": "end_turn", "stop_sequence": null}));
            if let Some(reply) = reply {
                let calls = split_calls(&reply, engine_names);
                if calls.engine.is_empty() {
                    hidden.push(reply);
                } else {
                    let results = answer_calls(&gateway, live, &calls.engine).await;
                    hidden.push(reply.clone());
                    hidden.extend(results.iter().cloned());
                    if !calls.has_client_calls && round_number < rounds {
                        messages.push(reply);
                        messages.extend(results);
                        match call.send(&gateway, live, &messages).await {
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
                                    .filter(|v| v["type"] == "error")
                                    .unwrap_or_else(|| {
                                        GatewayError::new(
                                            ErrorKind::BadGateway,
                                            format!("the upstream answered {status}"),
                                        )
                                        .anthropic_body()
                                    });
                                yield Ok(event("error", &error));
                                break;
                            }
                            Err(error) => {
                                yield Ok(error_event(&error));
                                break;
                            }
                        }
                    }
                    if !calls.has_client_calls {
                        stop["stop_reason"] = json!("end_turn");
                    }
                }
            }
            // What the client saw, and what the upstream history holds in its place.
            let spliced = hidden.len() > 1 || visible.len() != content.as_array().map_or(0, Vec::len);
            if spliced {
                if let Ok(visible) = convert::reply_message(&Value::Array(visible.clone())) {
                    live.record.conversation.splice(&visible, std::mem::take(&mut hidden));
                }
            }
            let total = match (usage.calls, usage.value()) {
                (1, _) | (_, None) => round_usage,
                (_, Some(total)) => total.clone(),
            };
            yield Ok(event("message_delta", &json!({"type": "message_delta", "delta": stop, "usage": total})));
            yield Ok(event("message_stop", &json!({"type": "message_stop"})));
            break;
        }
        live.finished(&gateway).await;
    };
    Ok(event_stream(frames, &relayed, &session_headers))
}
