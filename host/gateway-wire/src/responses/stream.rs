//! A streamed Responses answer: the upstream's events relayed as they arrive
//! (`response.created`, `response.output_item.added`, `response.output_text.delta`, ...), the
//! engine's `function_call` items held back and answered by the gateway, the next round's
//! items numbered on after the client's, the sequence numbers running on across rounds, and one
//! `response.completed` (every visible item, the usage of every round) at the very end.

use std::collections::{HashMap, HashSet};

use bytes::Bytes;
use ctxhost_sdk::Message;
use serde_json::{json, Value};

use super::{is_engine_call, visible_items};
use crate::error::{ErrorKind, GatewayError};
use crate::{ClientStream, StreamEvent, StreamedReply};
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

/// A streamed Responses answer over every round.
#[derive(Default)]
pub struct ResponsesStream {
    out: Outgoing,
    round: StreamedRound,
    next_client_index: u64,
    /// The items the client saw, every round's.
    visible: Vec<Value>,
    /// The client knows the response by the id it was opened with, whichever round ends it.
    opened_id: Value,
    /// The event that ended the last round.
    end: Option<Value>,
}

impl ClientStream for ResponsesStream {
    const END: &'static str = "response.completed";

    fn event(
        &mut self,
        event: &eventsource_stream::Event,
        engine_names: &HashSet<String>,
        first_round: bool,
    ) -> StreamEvent {
        let Ok(data) = serde_json::from_str::<Value>(&event.data) else {
            return StreamEvent::Held;
        };
        if data["type"] == "error" {
            return StreamEvent::Failed(self.out.frame(data));
        }
        if self.opened_id.is_null() && OPENS.contains(&data["type"].as_str().unwrap_or_default()) {
            self.opened_id = data["response"]["id"].clone();
        }
        let rewritten =
            self.round
                .rewrite(data, engine_names, &mut self.next_client_index, first_round);
        match rewritten {
            Some(data) => StreamEvent::Frame(self.out.frame(data)),
            None if self.round.end.is_some() => StreamEvent::Done,
            None => StreamEvent::Held,
        }
    }

    fn end_round(&mut self, engine_names: &HashSet<String>) -> StreamedReply {
        let mut round = std::mem::take(&mut self.round);
        let end = round.end.take().unwrap_or(Value::Null);
        let output = &end["response"]["output"];
        let visible = visible_items(output, engine_names);
        let visible = visible.as_array().cloned().unwrap_or_default();
        let hid = visible.len() != output.as_array().map_or(0, Vec::len);
        self.visible.extend(visible);
        let reply = StreamedReply {
            reply: convert::reply_message(output),
            usage: end["response"]["usage"].clone(),
            complete: end["type"] == "response.completed",
            hid,
        };
        self.end = Some(end);
        reply
    }

    fn visible(&self) -> Option<Message> {
        convert::reply_message(&Value::Array(self.visible.clone()))
    }

    fn error(&mut self, error: &GatewayError) -> Bytes {
        self.out.error(error)
    }

    fn refused(&mut self, status: axum::http::StatusCode, body: &[u8]) -> Bytes {
        let message = serde_json::from_slice::<Value>(body)
            .ok()
            .and_then(|v| v["error"]["message"].as_str().map(str::to_string))
            .unwrap_or_else(|| format!("the upstream answered {status}"));
        self.out
            .error(&GatewayError::new(ErrorKind::BadGateway, message))
    }

    fn finish(&mut self, _engine_only: bool, usage: Option<Value>) -> Vec<Bytes> {
        let mut end = self.end.take().unwrap_or(Value::Null);
        end["response"]["output"] = Value::Array(self.visible.clone());
        if !self.opened_id.is_null() {
            end["response"]["id"] = self.opened_id.clone();
        }
        if let Some(total) = usage {
            end["response"]["usage"] = total;
        }
        vec![self.out.frame(end)]
    }
}
