//! The Anthropic Messages wire: the system prompt beside the turns, assistant turns as blocks
//! (a reasoning token as a signed thinking block, tool calls as `tool_use`), each run of tool
//! results as one user message of `tool_result` blocks.

use serde_json::{json, Value};

use super::{arguments_of, assistant, text_of, Reply, Usage};
use crate::anthropic_upstream::{events, reply as messages_reply};
use crate::upstream::{Answer, Recorded};

pub(super) fn body(messages: &[Value], tools: &[Value], stream: bool) -> Value {
    let mut system = None;
    let mut out: Vec<Value> = Vec::new();
    let mut in_results = false;
    for (index, message) in messages.iter().enumerate() {
        match message["role"].as_str().unwrap_or_default() {
            "system" if index == 0 => system = Some(json!(text_of(message))),
            "tool" => {
                let block = json!({"type": "tool_result", "tool_use_id": message["tool_call_id"],
                                   "content": text_of(message)});
                match out.last_mut().filter(|_| in_results) {
                    Some(last) => last["content"].as_array_mut().unwrap().push(block),
                    None => out.push(json!({"role": "user", "content": [block]})),
                }
                in_results = true;
                continue;
            }
            "assistant" => out.push(json!({"role": "assistant", "content": blocks(message)})),
            role => out.push(json!({"role": role, "content": content(&message["content"])})),
        }
        in_results = false;
    }
    let tools: Vec<Value> = tools
        .iter()
        .map(|tool| {
            let function = &tool["function"];
            let mut out = json!({"name": function["name"], "input_schema": function["parameters"]});
            if let Some(description) = function.get("description") {
                out["description"] = description.clone();
            }
            out
        })
        .collect();
    let mut body = json!({"model": "gpt-4o", "messages": out,
                          "stream": stream});
    if let Some(system) = system {
        body["system"] = system;
    }
    if !tools.is_empty() {
        body["tools"] = json!(tools);
    }
    body
}

/// A user message's content as Anthropic takes it: text stays text, parts become blocks.
fn content(content: &Value) -> Value {
    let Value::Array(parts) = content else {
        return content.clone();
    };
    let blocks = parts.iter().map(|part| match part["type"].as_str() {
        Some("image_url") => {
            let url = part["image_url"]["url"].as_str().unwrap_or_default();
            let source = match url
                .strip_prefix("data:")
                .and_then(|rest| rest.split_once(";base64,"))
            {
                Some((media_type, data)) => {
                    json!({"type": "base64", "media_type": media_type, "data": data})
                }
                None => json!({"type": "url", "url": url}),
            };
            json!({"type": "image", "source": source})
        }
        _ => part.clone(),
    });
    Value::Array(blocks.collect())
}

/// An assistant message as content blocks: its reasoning (a thinking block signed with the
/// token), its text, then its tool calls.
fn blocks(message: &Value) -> Value {
    let message = assistant(message);
    let mut blocks = Vec::new();
    if let Some(token) = message["reasoning"].as_str() {
        blocks.push(thinking(token));
    }
    let text = message["content"].as_str().unwrap_or_default();
    let calls = message["tool_calls"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if !text.is_empty() || calls.is_empty() {
        blocks.push(json!({"type": "text", "text": text}));
    }
    for call in &calls {
        blocks.push(json!({"type": "tool_use", "id": call["id"],
                           "name": call["function"]["name"], "input": arguments_of(call)}));
    }
    Value::Array(blocks)
}

/// A thinking block signed with `token`.
fn thinking(token: &str) -> Value {
    json!({"type": "thinking", "thinking": "Thinking it over.", "signature": token})
}

/// A conversation (`system` and `messages`) as the provider reads it: without cache
/// breakpoints, every text given as a string as one text block.
pub(super) fn as_read(conversation: &Value) -> Value {
    fn unmarked(value: &Value) -> Value {
        match value {
            Value::Object(fields) => Value::Object(
                fields
                    .iter()
                    .filter(|(key, _)| *key != "cache_control")
                    .map(|(key, value)| (key.clone(), unmarked(value)))
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(unmarked).collect()),
            other => other.clone(),
        }
    }
    let blocks = |content: &Value| match content {
        Value::String(text) => json!([{"type": "text", "text": text}]),
        other => unmarked(other),
    };
    let mut read = json!({"system": blocks(&conversation["system"]), "messages": []});
    for message in conversation["messages"].as_array().into_iter().flatten() {
        let mut message = unmarked(message);
        message["content"] = blocks(&message["content"]);
        read["messages"].as_array_mut().unwrap().push(message);
    }
    read
}

/// Content blocks (or a string) as a canonical assistant message.
fn assistant_of(content: &Value) -> Value {
    let mut message = json!({"role": "assistant", "content": ""});
    let Value::Array(blocks) = content else {
        message["content"] = content.clone();
        return assistant(&message);
    };
    let mut text = String::new();
    let mut calls = Vec::new();
    for block in blocks {
        match block["type"].as_str().unwrap_or_default() {
            "text" => text.push_str(block["text"].as_str().unwrap_or_default()),
            "thinking" => message["reasoning"] = block["signature"].clone(),
            "tool_use" => calls.push(json!({"id": block["id"], "type": "function",
                "function": {"name": block["name"], "arguments": block["input"].to_string()}})),
            _ => {}
        }
    }
    message["content"] = json!(text);
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    assistant(&message)
}

fn usage_of(usage: &Value) -> Option<Usage> {
    Some(Usage {
        input: usage["input_tokens"].as_u64()?,
        output: usage["output_tokens"].as_u64()?,
    })
}

pub(super) fn read(text: &str) -> Reply {
    let answer: Value = serde_json::from_str(text).expect("a JSON answer");
    assert_eq!(answer["type"], "message", "{answer}");
    Reply {
        message: assistant_of(&answer["content"]),
        usage: usage_of(&answer["usage"]),
        calls_tools: answer["stop_reason"] == "tool_use",
    }
}

/// The stream assembled as a client library would: the message with every content block,
/// after checking the event sequence (one start, one stop, block indices in order).
pub(super) fn assemble(text: &str) -> Reply {
    let mut message = Value::Null;
    let mut blocks: Vec<Value> = Vec::new();
    let mut partial: Vec<String> = Vec::new();
    let mut name = String::new();
    let mut usage = None;
    let (mut starts, mut stops) = (0, 0);
    for line in text.lines() {
        if let Some(event) = line.strip_prefix("event: ") {
            name = event.to_string();
            continue;
        }
        let Some(data) = line.strip_prefix("data: ") else {
            continue;
        };
        let data: Value = serde_json::from_str(data).unwrap();
        assert_eq!(data["type"], name.as_str(), "{text}");
        match name.as_str() {
            "message_start" => {
                starts += 1;
                message = data["message"].clone();
            }
            "content_block_start" => {
                assert_eq!(data["index"], blocks.len(), "indices run on: {text}");
                blocks.push(data["content_block"].clone());
                partial.push(String::new());
            }
            "content_block_delta" => {
                let index = data["index"].as_u64().unwrap() as usize;
                let delta = &data["delta"];
                let block = &mut blocks[index];
                let kind = delta["type"].as_str().unwrap();
                match kind {
                    "text_delta" | "thinking_delta" | "signature_delta" => {
                        let key = kind.trim_end_matches("_delta");
                        block[key] = json!(format!(
                            "{}{}",
                            block[key].as_str().unwrap(),
                            delta[key].as_str().unwrap()
                        ))
                    }
                    "input_json_delta" => {
                        partial[index].push_str(delta["partial_json"].as_str().unwrap())
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                let index = data["index"].as_u64().unwrap() as usize;
                if !partial[index].is_empty() {
                    blocks[index]["input"] = serde_json::from_str(&partial[index]).unwrap();
                }
            }
            "message_delta" => {
                message["stop_reason"] = data["delta"]["stop_reason"].clone();
                usage = usage_of(&data["usage"]);
            }
            "message_stop" => stops += 1,
            "ping" => {}
            other => panic!("unexpected event {other}: {text}"),
        }
    }
    assert_eq!((starts, stops), (1, 1), "one message per answer: {text}");
    Reply {
        message: assistant_of(&Value::Array(blocks)),
        usage,
        calls_tools: message["stop_reason"] == "tool_use",
    }
}

pub(super) fn messages_of(body: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    match &body["system"] {
        Value::Null => {}
        Value::String(text) => out.push(json!({"role": "system", "content": text})),
        blocks => {
            out.push(json!({"role": "system", "content": text_of(&json!({"content": blocks}))}))
        }
    }
    for message in body["messages"].as_array().into_iter().flatten() {
        if message["role"] == "assistant" {
            out.push(assistant_of(&message["content"]));
            continue;
        }
        let Value::Array(blocks) = &message["content"] else {
            out.push(message.clone());
            continue;
        };
        let mut text = String::new();
        for block in blocks {
            if block["type"] == "tool_result" {
                let result = match &block["content"] {
                    Value::String(text) => text.clone(),
                    other => text_of(&json!({"content": other})),
                };
                out.push(json!({"role": "tool", "tool_call_id": block["tool_use_id"],
                                "content": result}));
            } else {
                text.push_str(block["text"].as_str().unwrap_or_default());
            }
        }
        if !text.is_empty() {
            out.push(json!({"role": message["role"], "content": text}));
        }
    }
    out
}

fn usage_value(usage: Usage) -> Value {
    json!({"input_tokens": usage.input, "output_tokens": usage.output})
}

pub(super) fn reply(request: &Recorded, message: &Value, usage: Option<Usage>) -> Answer {
    messages_reply(request, blocks(message), usage.map(usage_value))
}

pub(super) fn stream_then_hang(message: &Value) -> Answer {
    let events = events(&blocks(message), None);
    Answer::EventsThenHang(events[..3].to_vec())
}
