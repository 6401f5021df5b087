//! The Responses wire (stateless, `store: false`): the system prompt as `instructions`, turns
//! as input items; an assistant turn as its reasoning item (the token as its encrypted
//! content), its message item and its function calls; tool results as `function_call_output`.

use serde_json::{json, Value};

use super::{arguments_of, assistant, id_of, text_of, Reply, Usage};
use crate::responses_upstream::{events, function_call, message_item, reply as responses_reply};
use crate::upstream::{Answer, Recorded};

pub(super) fn body(messages: &[Value], tools: &[Value], stream: bool) -> Value {
    let mut instructions = None;
    let mut input = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        match message["role"].as_str().unwrap_or_default() {
            "system" if index == 0 => instructions = Some(json!(text_of(message))),
            "tool" => input.push(json!({"type": "function_call_output",
                                        "call_id": message["tool_call_id"],
                                        "output": text_of(message)})),
            "assistant" => input.extend(items(message)),
            role => input.push(json!({"type": "message", "role": role,
                                      "content": content(&message["content"])})),
        }
    }
    let tools: Vec<Value> = tools
        .iter()
        .map(|tool| {
            let function = &tool["function"];
            let mut out = json!({"type": "function", "name": function["name"],
                                 "parameters": function["parameters"]});
            if let Some(description) = function.get("description") {
                out["description"] = description.clone();
            }
            out
        })
        .collect();
    let mut body = json!({"model": "gpt-4o", "input": input, "store": false, "stream": stream});
    if let Some(instructions) = instructions {
        body["instructions"] = instructions;
    }
    if !tools.is_empty() {
        body["tools"] = json!(tools);
    }
    body
}

/// A user message's content as input parts.
fn content(content: &Value) -> Value {
    let parts = match content {
        Value::Array(parts) => parts.clone(),
        other => vec![json!({"type": "text", "text": other.as_str().unwrap_or_default()})],
    };
    let parts = parts.iter().map(|part| match part["type"].as_str() {
        Some("text") => json!({"type": "input_text", "text": part["text"]}),
        Some("image_url") => json!({"type": "input_image", "image_url": part["image_url"]["url"]}),
        _ => part.clone(),
    });
    Value::Array(parts.collect())
}

/// An assistant message as output items: its reasoning, its text, then its calls.
fn items(message: &Value) -> Vec<Value> {
    let message = assistant(message);
    let mut items = Vec::new();
    if let Some(token) = message["reasoning"].as_str() {
        items.push(
            json!({"type": "reasoning", "id": id_of("rs", token), "summary": [],
                          "encrypted_content": token}),
        );
    }
    let text = message["content"].as_str().unwrap_or_default();
    let calls = message["tool_calls"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if !text.is_empty() || calls.is_empty() {
        items.push(message_item(&id_of("msg", text), text));
    }
    for call in &calls {
        items.push(function_call(
            call["id"].as_str().unwrap_or_default(),
            call["function"]["name"].as_str().unwrap_or_default(),
            arguments_of(call),
        ));
    }
    items
}

/// Items as canonical chat messages: each assistant turn (reasoning, message, calls) one
/// message.
fn messages_of_items(items: &[Value]) -> Vec<Value> {
    let mut out = Vec::new();
    let mut turn: Option<Value> = None;
    let flush = |turn: &mut Option<Value>, out: &mut Vec<Value>| {
        if let Some(message) = turn.take() {
            out.push(assistant(&message));
        }
    };
    for item in items {
        let kind = item["type"].as_str().unwrap_or("message");
        let role = item["role"].as_str().unwrap_or_default();
        match kind {
            "reasoning" => {
                flush(&mut turn, &mut out);
                turn = Some(json!({"role": "assistant", "content": "",
                                   "reasoning": item["encrypted_content"]}));
            }
            "message" if role == "assistant" => {
                let started = turn
                    .as_ref()
                    .is_some_and(|t| t["content"] != "" || t.get("tool_calls").is_some());
                if started {
                    flush(&mut turn, &mut out);
                }
                let message = turn.get_or_insert_with(|| json!({"role": "assistant"}));
                message["content"] = json!(text_of(item));
            }
            "function_call" => {
                let message =
                    turn.get_or_insert_with(|| json!({"role": "assistant", "content": ""}));
                let call = json!({"id": item["call_id"], "type": "function",
                    "function": {"name": item["name"], "arguments": item["arguments"]}});
                match message["tool_calls"].as_array_mut() {
                    Some(calls) => calls.push(call),
                    None => message["tool_calls"] = json!([call]),
                }
            }
            "function_call_output" => {
                flush(&mut turn, &mut out);
                let output = match &item["output"] {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                out.push(json!({"role": "tool", "tool_call_id": item["call_id"],
                                "content": output}));
            }
            _ => {
                flush(&mut turn, &mut out);
                out.push(json!({"role": role, "content": text_of(item)}));
            }
        }
    }
    flush(&mut turn, &mut out);
    out
}

fn usage_of(usage: &Value) -> Option<Usage> {
    Some(Usage {
        input: usage["input_tokens"].as_u64()?,
        output: usage["output_tokens"].as_u64()?,
    })
}

/// A completed response as the client reads it.
fn reply_of(response: &Value) -> Reply {
    let output = response["output"].as_array().cloned().unwrap_or_default();
    let mut messages = messages_of_items(&output);
    assert!(messages.len() <= 1, "one answer per response: {response}");
    Reply {
        message: messages
            .pop()
            .unwrap_or_else(|| assistant(&json!({"content": ""}))),
        usage: usage_of(&response["usage"]),
        calls_tools: output.iter().any(|i| i["type"] == "function_call"),
    }
}

pub(super) fn read(text: &str) -> Reply {
    let response: Value = serde_json::from_str(text).expect("a JSON answer");
    assert_eq!(response["object"], "response", "{response}");
    reply_of(&response)
}

/// The stream assembled as a client would: the completed response, after checking the
/// sequence (one created, one completed, sequence numbers in order, every item of the
/// completed response done once, in order).
pub(super) fn assemble(text: &str) -> Reply {
    let mut completed = Value::Null;
    let mut created = 0;
    let mut done: Vec<Value> = Vec::new();
    let mut sequence = 0;
    for line in text.lines() {
        let Some(data) = line.strip_prefix("data: ") else {
            continue;
        };
        let data: Value = serde_json::from_str(data).unwrap();
        assert_eq!(data["sequence_number"], sequence, "{text}");
        sequence += 1;
        match data["type"].as_str().unwrap() {
            "response.created" => created += 1,
            "response.output_item.done" => {
                assert_eq!(data["output_index"], done.len(), "indices run on: {text}");
                done.push(data["item"].clone());
            }
            "response.completed" => completed = data["response"].clone(),
            "error" => panic!("an error event: {text}"),
            _ => {}
        }
    }
    assert_eq!(created, 1, "{text}");
    assert_eq!(completed["output"], Value::Array(done), "{text}");
    reply_of(&completed)
}

pub(super) fn messages_of(body: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    if let Some(text) = body["instructions"].as_str() {
        out.push(json!({"role": "system", "content": text}));
    }
    match &body["input"] {
        Value::String(text) => out.push(json!({"role": "user", "content": text})),
        Value::Array(items) => out.extend(messages_of_items(items)),
        _ => {}
    }
    out
}

fn usage_value(usage: Usage) -> Value {
    json!({"input_tokens": usage.input, "input_tokens_details": {"cached_tokens": 0},
           "output_tokens": usage.output, "output_tokens_details": {"reasoning_tokens": 0},
           "total_tokens": usage.input + usage.output})
}

pub(super) fn reply(request: &Recorded, message: &Value, usage: Option<Usage>) -> Answer {
    responses_reply(
        request,
        Value::Array(items(message)),
        usage.map(usage_value),
    )
}

pub(super) fn stream_then_hang(message: &Value) -> Answer {
    let events = events(&Value::Array(items(message)), None);
    Answer::EventsThenHang(events[..3].to_vec())
}
