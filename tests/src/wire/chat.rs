//! The chat-completions wire: the conversation goes as it is (less reasoning tokens, which
//! this wire does not carry).

use serde_json::{json, Value};

use super::{assistant, without_reasoning, Reply, Usage};
use crate::upstream::{chunks, reply as chat_reply, Answer, Recorded};

pub(super) fn body(messages: &[Value], tools: &[Value], stream: bool) -> Value {
    let messages: Vec<Value> = messages.iter().map(without_reasoning).collect();
    let mut body = json!({"model": "gpt-4o", "messages": messages, "stream": stream});
    if !tools.is_empty() {
        body["tools"] = json!(tools);
    }
    body
}

fn usage_of(usage: &Value) -> Option<Usage> {
    Some(Usage {
        input: usage["prompt_tokens"].as_u64()?,
        output: usage["completion_tokens"].as_u64()?,
    })
}

fn usage_value(usage: Usage) -> Value {
    json!({"prompt_tokens": usage.input, "completion_tokens": usage.output,
           "total_tokens": usage.input + usage.output})
}

pub(super) fn read(text: &str) -> Reply {
    let answer: Value = serde_json::from_str(text).expect("a JSON answer");
    let choice = &answer["choices"][0];
    Reply {
        message: assistant(&choice["message"]),
        usage: usage_of(&answer["usage"]),
        calls_tools: choice["finish_reason"] == "tool_calls",
    }
}

/// The stream assembled as a client library would: content pieces, each tool call's id, name
/// and arguments pieces, one finish reason, usage when sent.
pub(super) fn assemble(text: &str) -> Reply {
    let mut content = String::new();
    let mut calls: Vec<Value> = Vec::new();
    let mut finishes: Vec<String> = Vec::new();
    let mut usage = None;
    let mut done = false;
    for line in text.lines() {
        let Some(data) = line.strip_prefix("data: ") else {
            continue;
        };
        if data == "[DONE]" {
            done = true;
            break;
        }
        let chunk: Value = serde_json::from_str(data).unwrap();
        assert!(chunk.get("error").is_none(), "{chunk}");
        if let Some(reported) = usage_of(&chunk["usage"]) {
            usage = Some(reported);
        }
        let Some(choice) = chunk["choices"].get(0) else {
            continue;
        };
        if let Some(finish) = choice["finish_reason"].as_str() {
            finishes.push(finish.to_string());
        }
        content.push_str(choice["delta"]["content"].as_str().unwrap_or_default());
        for call in choice["delta"]["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let index = call["index"].as_u64().unwrap() as usize;
            if index == calls.len() {
                calls.push(json!({"id": "", "type": "function",
                                  "function": {"name": "", "arguments": ""}}));
            }
            let slot = &mut calls[index];
            let append = |target: &mut Value, piece: Option<&str>| {
                if let Some(piece) = piece {
                    *target = json!(format!("{}{piece}", target.as_str().unwrap()));
                }
            };
            append(&mut slot["id"], call["id"].as_str());
            append(
                &mut slot["function"]["name"],
                call["function"]["name"].as_str(),
            );
            append(
                &mut slot["function"]["arguments"],
                call["function"]["arguments"].as_str(),
            );
        }
    }
    assert!(done, "the stream ends with [DONE]: {text}");
    assert_eq!(finishes.len(), 1, "one finish reason per answer: {text}");
    let mut message = json!({"role": "assistant", "content": content});
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    Reply {
        message: assistant(&message),
        usage,
        calls_tools: finishes[0] == "tool_calls",
    }
}

pub(super) fn messages_of(body: &Value) -> Vec<Value> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| {
            if m["role"] == "assistant" {
                assistant(m)
            } else {
                m.clone()
            }
        })
        .collect()
}

/// A chat completion message as the upstream sends it (content null beside tool calls).
fn upstream_message(message: &Value) -> Value {
    let mut message = without_reasoning(&assistant(message));
    if message.get("tool_calls").is_some() && message["content"] == "" {
        message["content"] = Value::Null;
    }
    message
}

pub(super) fn reply(request: &Recorded, message: &Value, usage: Option<Usage>) -> Answer {
    chat_reply(request, upstream_message(message), usage.map(usage_value))
}

pub(super) fn stream_then_hang(message: &Value) -> Answer {
    let events = chunks(&upstream_message(message), None);
    Answer::StreamThenHang(events[..2].to_vec())
}
