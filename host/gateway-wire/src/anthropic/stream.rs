//! A streamed Messages answer: the upstream's events relayed as they arrive (`message_start`,
//! `content_block_start/delta/stop`, `ping`, ...), the engine's `tool_use` blocks held back and
//! answered by the gateway, the next round's blocks numbered on after the client's, and one
//! `message_delta` (stop reason, usage of every round) and `message_stop` at the very end.

use std::collections::{BTreeMap, HashSet};

use bytes::Bytes;
use ctxhost_sdk::Message;
use serde_json::{json, Value};

use super::{error_body, is_engine_call};
use crate::error::{ErrorKind, GatewayError};
use crate::{ClientStream, StreamEvent, StreamedReply};
use ctxhost_wire::anthropic as convert;

fn frame(name: &str, data: &Value) -> Bytes {
    Bytes::from(format!("event: {name}\ndata: {data}\n\n"))
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

/// A streamed Messages answer over every round.
#[derive(Default)]
pub struct MessagesStream {
    round: StreamedRound,
    next_client_index: usize,
    /// The blocks the client saw, every round's.
    visible: Vec<Value>,
    /// The last round's stop (`message_delta`'s `delta`) and usage.
    stop: Option<Value>,
    last_usage: Value,
}

impl ClientStream for MessagesStream {
    const END: &'static str = "message_stop";

    fn event(
        &mut self,
        event: &eventsource_stream::Event,
        engine_names: &HashSet<String>,
        first_round: bool,
    ) -> StreamEvent {
        let Ok(data) = serde_json::from_str::<Value>(&event.data) else {
            return StreamEvent::Held;
        };
        let name = if event.event.is_empty() || event.event == "message" {
            data["type"].as_str().unwrap_or_default().to_string()
        } else {
            event.event.clone()
        };
        if name == "error" {
            return StreamEvent::Failed(frame("error", &data));
        }
        let rewritten = self.round.rewrite(
            &name,
            data,
            engine_names,
            &mut self.next_client_index,
            first_round,
        );
        match rewritten {
            // The round's last event (`message_stop`) is held back: one closes the answer.
            _ if self.round.stopped => StreamEvent::Done,
            Some(data) => StreamEvent::Frame(frame(&name, &data)),
            None => StreamEvent::Held,
        }
    }

    fn end_round(&mut self, _: &HashSet<String>) -> StreamedReply {
        let round = std::mem::take(&mut self.round);
        let content = round.content();
        let hid = round.blocks.values().any(|b| b.engine);
        self.visible.extend(
            round
                .blocks
                .values()
                .filter(|b| !b.engine)
                .map(|b| b.value.clone()),
        );
        self.stop = round.stop;
        self.last_usage = round.usage.unwrap_or(Value::Null);
        StreamedReply {
            reply: convert::reply_message(&content).ok(),
            usage: self.last_usage.clone(),
            complete: true,
            hid,
        }
    }

    fn visible(&self) -> Option<Message> {
        convert::reply_message(&Value::Array(self.visible.clone())).ok()
    }

    fn error(&mut self, error: &GatewayError) -> Bytes {
        frame("error", &error_body(error))
    }

    fn refused(&mut self, status: axum::http::StatusCode, body: &[u8]) -> Bytes {
        let error = serde_json::from_slice::<Value>(body)
            .ok()
            .filter(|v| v["type"] == "error")
            .unwrap_or_else(|| {
                error_body(&GatewayError::new(
                    ErrorKind::BadGateway,
                    format!("the upstream answered {status}"),
                ))
            });
        frame("error", &error)
    }

    fn finish(&mut self, engine_only: bool, usage: Option<Value>) -> Vec<Bytes> {
        let mut stop = self
            .stop
            .take()
            .unwrap_or_else(|| json!({"stop_reason": "end_turn", "stop_sequence": null}));
        if engine_only {
            stop["stop_reason"] = json!("end_turn");
        }
        let usage = usage.unwrap_or_else(|| self.last_usage.clone());
        vec![
            frame(
                "message_delta",
                &json!({"type": "message_delta", "delta": stop, "usage": usage}),
            ),
            frame("message_stop", &json!({"type": "message_stop"})),
        ]
    }
}
