//! A streamed Responses answer: the upstream's events relayed as they arrive
//! (`response.created`, `response.output_item.added`, `response.output_text.delta`, ...), the
//! engine's `function_call` items held back and answered by the gateway, the next round's
//! items numbered on after the client's, the sequence numbers running on across rounds, and one
//! `response.completed` (every visible item, the usage of every round) at the very end.

use std::collections::{HashMap, HashSet};
use std::convert::Infallible;

use axum::response::Response;
use bytes::Bytes;
use ctxhost_sdk::Message;
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use serde_json::{json, Value};

use super::usage::parse_usage;
use super::{is_engine_call, visible_items, Exchange, UsageSum};
use crate::error::{ErrorKind, GatewayError};
use crate::turn::{answer_calls, event_stream, split_calls, Called, ReleaseOnDrop, StreamBudget};
use crate::upstream::read_body;
use ctxhost_wire::responses as convert;

/// The events that end a response.
const ENDS: &[&str] = &[
    "response.completed",
    "response.failed",
    "response.incomplete",
];
/// The events that open a response: the client sees the first round's only.
const OPENS: &[&str] = &[
    "response.created",
    "response.in_progress",
    "response.queued",
];

/// The client's event stream: sequence numbers run on across rounds.
#[derive(Default)]
struct Outgoing {
    sequence: u64,
}

impl Outgoing {
    fn frame(&mut self, mut data: Value) -> Bytes {
        if data.get("sequence_number").is_some() {
            data["sequence_number"] = json!(self.sequence);
        }
        self.sequence += 1;
        let name = data["type"].as_str().unwrap_or("message").to_string();
        Bytes::from(format!("event: {name}\ndata: {data}\n\n"))
    }

    fn error(&mut self, error: &GatewayError) -> Bytes {
        let (_, code) = error.kind.type_and_code();
        self.frame(
            json!({"type": "error", "code": code, "message": error.message,
                          "param": null, "sequence_number": 0}),
        )
    }
}

/// One streamed model call: which of its items are the engine's, and where the client's sit.
#[derive(Default)]
struct StreamedRound {
    /// Upstream output index to the client's, for the items the client sees.
    client_index: HashMap<u64, u64>,
    /// The output indices of the engine's calls.
    hidden: HashSet<u64>,
    /// The event that ended it.
    end: Option<Value>,
}

impl StreamedRound {
    /// Takes in one upstream event; returns what the client gets of it (renumbered), if any.
    fn rewrite(
        &mut self,
        mut data: Value,
        engine_names: &HashSet<String>,
        next_client_index: &mut u64,
        first_round: bool,
    ) -> Option<Value> {
        let kind = data["type"].as_str().unwrap_or_default().to_string();
        if ENDS.contains(&kind.as_str()) {
            self.end = Some(data);
            return None;
        }
        if OPENS.contains(&kind.as_str()) {
            return first_round.then_some(data);
        }
        let Some(index) = data["output_index"].as_u64() else {
            return Some(data);
        };
        if kind == "response.output_item.added" {
            if is_engine_call(&data["item"], engine_names) {
                self.hidden.insert(index);
            } else {
                self.client_index.insert(index, *next_client_index);
                *next_client_index += 1;
            }
        }
        if self.hidden.contains(&index) {
            return None;
        }
        let client = self.client_index.get(&index).copied().unwrap_or(index);
        data["output_index"] = json!(client);
        Some(data)
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
        let mut out = Outgoing::default();
        let mut hidden: Vec<Message> = Vec::new();
        let mut visible: Vec<Value> = Vec::new();
        let mut usage = UsageSum::default();
        let mut next_client_index = 0u64;
        let mut budget = StreamBudget::new(&gateway);
        let rounds = gateway.settings.limits.tool_rounds.max(1);
        let mut response = Some(first);
        let mut round_number = 0u32;
        // The client knows the response by the id it was opened with, whichever round ends it.
        let mut opened_id = Value::Null;
        'rounds: loop {
            round_number += 1;
            let Some(upstream) = response.take() else { break };
            let mut round = StreamedRound::default();
            let mut events = upstream.bytes_stream().eventsource();
            while let Some(next) = events.next().await {
                let next = match budget.take(&gateway, live, next) {
                    Ok(next) => next,
                    Err(error) => {
                        yield Ok::<_, Infallible>(out.error(&error));
                        break 'rounds;
                    }
                };
                let Ok(data) = serde_json::from_str::<Value>(&next.data) else {
                    continue;
                };
                if data["type"] == "error" {
                    gateway.upstream_error(live, "stream");
                    yield Ok(out.frame(data));
                    break 'rounds;
                }
                if opened_id.is_null() && OPENS.contains(&data["type"].as_str().unwrap_or_default()) {
                    opened_id = data["response"]["id"].clone();
                }
                if let Some(data) = round.rewrite(data, engine_names, &mut next_client_index, round_number == 1) {
                    yield Ok(out.frame(data));
                }
                if round.end.is_some() {
                    break;
                }
            }
            let Some(mut end) = round.end.take() else {
                let error = GatewayError::new(
                    ErrorKind::BadGateway,
                    "the upstream's stream ended before response.completed",
                );
                gateway.upstream_error(live, "stream");
                yield Ok(out.error(&error));
                break;
            };
            let output = end["response"]["output"].clone();
            let round_usage = end["response"]["usage"].clone();
            usage.add(&round_usage);
            visible.extend(visible_items(&output, engine_names).as_array().cloned().unwrap_or_default());
            let reply = convert::reply_message(&output);
            live.called(&gateway, &messages, reply.as_ref(), parse_usage(&round_usage)).await;
            if end["type"] == "response.completed" {
                if let Some(reply) = reply {
                    let calls = split_calls(&reply, engine_names);
                    hidden.push(reply.clone());
                    if !calls.engine.is_empty() {
                        let results = answer_calls(&gateway, live, &calls.engine).await;
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
                                    let message = serde_json::from_slice::<Value>(&body)
                                        .ok()
                                        .and_then(|v| v["error"]["message"].as_str().map(str::to_string))
                                        .unwrap_or_else(|| format!("the upstream answered {status}"));
                                    yield Ok(out.error(&GatewayError::new(ErrorKind::BadGateway, message)));
                                    break;
                                }
                                Err(error) => {
                                    yield Ok(out.error(&error));
                                    break;
                                }
                            }
                        }
                    }
                }
            }
            // What the client saw, and what the upstream history holds in its place.
            let spliced = hidden.len() > 1 || visible.len() != output.as_array().map_or(0, Vec::len);
            if spliced {
                if let Some(seen) = convert::reply_message(&Value::Array(visible.clone())) {
                    live.record.conversation.splice(&seen, std::mem::take(&mut hidden));
                }
            }
            end["response"]["output"] = Value::Array(visible.clone());
            if !opened_id.is_null() {
                end["response"]["id"] = opened_id.clone();
            }
            if let Some(total) = usage.total() {
                end["response"]["usage"] = total;
            }
            yield Ok(out.frame(end));
            break;
        }
        live.finished(&gateway).await;
    };
    Ok(event_stream(frames, &relayed, &session_headers))
}
