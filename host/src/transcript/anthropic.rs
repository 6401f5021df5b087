//! Anthropic Messages: `[{"role": "user"|"assistant", "content": "..." | [blocks]}]`, or
//! `{"system": ..., "messages": [...]}`. `tool_use` blocks become OpenAI tool calls; each
//! `tool_result` block becomes a `tool` message; `thinking` becomes `reasoning`.

use ctxhost_sdk::{Message, ToolCall};
use serde_json::{json, Value};

use super::{parse_document, TranscriptError};

const ANTHROPIC_BLOCKS: &[&str] = &["tool_use", "tool_result", "thinking", "redacted_thinking"];

pub(super) fn looks_like(value: &Value) -> bool {
    let messages = match value {
        Value::Object(object) => {
            if object.contains_key("system") && object.get("messages").is_some_and(Value::is_array)
            {
                return true;
            }
            object.get("messages")
        }
        other => Some(other),
    };
    let Some(Value::Array(messages)) = messages else {
        return false;
    };
    messages.iter().any(|m| {
        m.get("content")
            .and_then(Value::as_array)
            .is_some_and(|blocks| {
                blocks.iter().any(|b| {
                    let kind = b.get("type").and_then(Value::as_str).unwrap_or_default();
                    ANTHROPIC_BLOCKS.contains(&kind)
                        || (kind == "image" && b.get("source").is_some())
                })
            })
    })
}

pub(super) fn parse(text: &str, name: &str) -> Result<Vec<Message>, TranscriptError> {
    let document = parse_document(text.trim_start(), name)?;
    let (system, turns) = match &document {
        Value::Object(object) => (object.get("system"), object.get("messages")),
        Value::Array(_) => (None, Some(&document)),
        _ => (None, None),
    };
    let turns = turns.and_then(Value::as_array).ok_or_else(|| {
        TranscriptError::new(
            name,
            "not Anthropic Messages: expected an array of messages or {\"messages\": [...]}",
        )
    })?;
    let mut messages = Vec::new();
    if let Some(system) = system {
        messages.push(Message::system(text_of(system)));
    }
    for (index, turn) in turns.iter().enumerate() {
        let location = format!("{name}: message {}", index + 1);
        let role = turn
            .get("role")
            .and_then(Value::as_str)
            .ok_or_else(|| TranscriptError::new(&location, "the message has no \"role\""))?;
        let content = turn.get("content").cloned().unwrap_or(Value::Null);
        match role {
            "assistant" => messages.push(assistant(&content)),
            "user" => user(&content, &mut messages),
            "system" => messages.push(Message::system(text_of(&content))),
            other => {
                return Err(TranscriptError::new(
                    &location,
                    format!("unknown role `{other}` (expected user or assistant)"),
                ))
            }
        }
    }
    Ok(messages)
}

fn assistant(content: &Value) -> Message {
    let Value::Array(blocks) = content else {
        return Message::assistant(text_of(content));
    };
    let mut text = Vec::new();
    let mut thinking = Vec::new();
    let mut calls = Vec::new();
    for block in blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => text.push(str_field(block, "text")),
            Some("thinking") => thinking.push(str_field(block, "thinking")),
            Some("tool_use") => calls.push(ToolCall::new(
                str_field(block, "id"),
                str_field(block, "name"),
                block.get("input").unwrap_or(&json!({})).to_string(),
            )),
            _ => {}
        }
    }
    let text = text.join("\n");
    let mut message = if calls.is_empty() {
        Message::assistant(text)
    } else {
        let mut message = Message::assistant_tool_calls(calls);
        if !text.is_empty() {
            message.set_text(text);
        }
        message
    };
    if !thinking.is_empty() {
        message.set_extra_field("reasoning", Some(Value::String(thinking.join("\n"))));
    }
    message
}

/// A user turn: its tool results first (they answer the assistant turn before), then any other
/// content as one user message.
fn user(content: &Value, messages: &mut Vec<Message>) {
    let Value::Array(blocks) = content else {
        messages.push(Message::user(text_of(content)));
        return;
    };
    let mut parts = Vec::new();
    for block in blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("tool_result") => {
                let result = block.get("content").map(text_of).unwrap_or_default();
                messages.push(Message::tool_result(
                    str_field(block, "tool_use_id"),
                    result,
                ));
            }
            Some("text") => parts.push(json!({"type": "text", "text": str_field(block, "text")})),
            Some("image") => {
                let source = block.get("source").cloned().unwrap_or(Value::Null);
                let url = match source.get("type").and_then(Value::as_str) {
                    Some("base64") => format!(
                        "data:{};base64,{}",
                        str_field(&source, "media_type"),
                        str_field(&source, "data")
                    ),
                    _ => str_field(&source, "url"),
                };
                parts.push(json!({"type": "image_url", "image_url": {"url": url}}));
            }
            _ => {}
        }
    }
    if parts.is_empty() {
        return;
    }
    let all_text = parts.iter().all(|p| p["type"] == "text");
    let mut message = Message::user("");
    if all_text {
        let text: Vec<&str> = parts.iter().filter_map(|p| p["text"].as_str()).collect();
        message.set_text(text.join("\n"));
    } else {
        message.set_content_json(&Value::Array(parts));
    }
    messages.push(message);
}

fn str_field(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// Text of a string or of an array of text blocks.
fn text_of(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}
