//! Hermes Agent trajectories: `{"conversations": [{"from": "system"|"human"|"gpt"|"tool",
//! "value": ...}]}`, one per JSONL line. Assistant turns carry `<think>` blocks and
//! `<tool_call>{"name", "arguments"}</tool_call>` blocks; tool turns carry one
//! `<tool_response>{"tool_call_id", "name", "content"}</tool_response>` block per call (a tool
//! turn without them is the next waiting call's output as it is, or text when no call waits; a
//! `<tool_call>` inside `<think>` is reasoning, not a call).

use std::collections::HashMap;

use ctxhost_sdk::{Message, ToolCall};
use serde_json::{json, Value};

use super::{assistant_message, parse_document, TranscriptError};

pub(super) fn looks_like(value: &Value) -> bool {
    match value {
        Value::Object(object) => object.get("conversations").is_some_and(Value::is_array),
        Value::Array(turns) => turns
            .first()
            .is_some_and(|t| t.get("from").is_some() && t.get("value").is_some()),
        _ => false,
    }
}

pub(super) fn parse(text: &str, name: &str) -> Result<Vec<Message>, TranscriptError> {
    let trimmed = text.trim_start();
    // A JSONL file holds one trajectory per line: the session is the first.
    let document = match parse_document(trimmed, name) {
        Ok(document) => document,
        Err(whole) => {
            let first = trimmed.lines().next().unwrap_or_default();
            serde_json::from_str(first).map_err(|_| whole)?
        }
    };
    let turns = match &document {
        Value::Object(object) => object.get("conversations"),
        Value::Array(_) => Some(&document),
        _ => None,
    }
    .and_then(Value::as_array)
    .ok_or_else(|| {
        TranscriptError::new(
            name,
            "not a Hermes trajectory: expected {\"conversations\": [...]}",
        )
    })?;
    let mut messages = Vec::new();
    let mut pending_calls: Vec<usize> = Vec::new();
    for (index, turn) in turns.iter().enumerate() {
        let location = format!("{name}: turn {}", index + 1);
        let from = turn
            .get("from")
            .and_then(Value::as_str)
            .ok_or_else(|| TranscriptError::new(&location, "the turn has no \"from\""))?;
        let value = match turn.get("value") {
            Some(Value::String(value)) => value.as_str(),
            Some(Value::Null) | None => "",
            Some(_) => return Err(TranscriptError::new(&location, "\"value\" is not text")),
        };
        match from {
            "system" => messages.push(Message::system(value)),
            "human" => messages.push(Message::user(value)),
            "gpt" => {
                let message = assistant(value, index)
                    .map_err(|problem| TranscriptError::new(&location, problem))?;
                pending_calls = (0..message.tool_calls().len()).collect();
                messages.push(message);
            }
            "tool" => {
                let call_turn = messages.len().checked_sub(1);
                let responses = blocks(value, "tool_response");
                if responses.is_empty() {
                    // A tool turn written without `<tool_response>` tags: its text answers the
                    // next call still waiting; with none waiting it stays as text. Never dropped.
                    match (call_turn, pending_calls.first()) {
                        (Some(at), Some(&call)) => {
                            let id = messages[at].tool_calls()[call].id().to_string();
                            messages.push(Message::tool_result(id, value));
                            pending_calls.remove(0);
                        }
                        _ if value.trim().is_empty() => {}
                        _ => messages.push(Message::user(value)),
                    }
                    continue;
                }
                for (k, response) in responses.into_iter().enumerate() {
                    let response: Value = serde_json::from_str(response.trim()).map_err(|e| {
                        TranscriptError::new(
                            &location,
                            format!("a <tool_response> is not JSON: {e}"),
                        )
                    })?;
                    let content = match response.get("content") {
                        Some(Value::String(text)) => text.clone(),
                        Some(other) => other.to_string(),
                        None => String::new(),
                    };
                    let id = response
                        .get("tool_call_id")
                        .and_then(Value::as_str)
                        .filter(|id| !id.is_empty());
                    // Answer the k-th call of the assistant turn before, renaming it to the id the
                    // response recorded.
                    let id = match (call_turn, pending_calls.get(k)) {
                        (Some(at), Some(&call)) => {
                            let calls = messages[at].tool_calls_mut();
                            if let Some(id) = id {
                                calls[call] =
                                    ToolCall::new(id, calls[call].name(), calls[call].arguments());
                            }
                            calls[call].id().to_string()
                        }
                        _ => id.unwrap_or_default().to_string(),
                    };
                    messages.push(Message::tool_result(id, content));
                }
                pending_calls.clear();
            }
            other => {
                return Err(TranscriptError::new(
                    &location,
                    format!("unknown \"from\" `{other}` (expected system, human, gpt or tool)"),
                ))
            }
        }
    }
    Ok(messages)
}

/// An assistant turn: reasoning from `<think>`, calls from `<tool_call>`, the rest as content.
fn assistant(value: &str, turn: usize) -> Result<Message, String> {
    let reasoning: Vec<&str> = blocks(value, "think")
        .into_iter()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .collect();
    // A `<tool_call>` inside `<think>` is the model thinking about a call, not making one.
    let said = strip_blocks(value, "think");
    let mut calls = Vec::new();
    for (k, block) in blocks(&said, "tool_call").into_iter().enumerate() {
        let call: Value = serde_json::from_str(block.trim())
            .map_err(|e| format!("a <tool_call> is not JSON: {e}"))?;
        let name = call.get("name").and_then(Value::as_str).unwrap_or_default();
        let arguments = match call.get("arguments") {
            Some(Value::String(text)) => text.clone(),
            Some(other) => other.to_string(),
            None => "{}".to_string(),
        };
        calls.push(ToolCall::new(
            format!("call_{}_{}", turn + 1, k + 1),
            name,
            arguments,
        ));
    }
    let text = strip_blocks(&said, "tool_call");
    Ok(assistant_message(text.trim(), calls, &reasoning))
}

/// Messages as one Hermes trajectory (a JSONL line): reasoning in `<think>`, calls in
/// `<tool_call>`, consecutive tool results in one `tool` turn of `<tool_response>` blocks.
pub(super) fn write(messages: &[Message]) -> String {
    let mut names: HashMap<&str, &str> = HashMap::new();
    let mut turns: Vec<Value> = Vec::new();
    let mut responses_open = false;
    for message in messages {
        if message.is_tool_result() {
            let id = message.tool_call_id().unwrap_or_default();
            let response = json!({
                "tool_call_id": id,
                "name": names.get(id).copied().unwrap_or_default(),
                "content": message.content_text(),
            });
            let block = format!("<tool_response>\n{response}\n</tool_response>");
            match turns.last_mut() {
                Some(turn) if responses_open => {
                    let value = format!("{}\n{block}", turn["value"].as_str().unwrap_or_default());
                    turn["value"] = Value::String(value);
                }
                _ => turns.push(json!({"from": "tool", "value": block})),
            }
            responses_open = true;
            continue;
        }
        responses_open = false;
        let (from, value) = match message.role() {
            "system" => ("system", message.content_text().into_owned()),
            "assistant" => {
                let mut parts = Vec::new();
                if let Some(Value::String(reasoning)) = message.extra_fields().get("reasoning") {
                    parts.push(format!("<think>\n{reasoning}\n</think>"));
                }
                let text = message.content_text();
                if !text.is_empty() {
                    parts.push(text.into_owned());
                }
                for call in message.tool_calls() {
                    names.insert(call.id(), call.name());
                    let arguments = serde_json::from_str::<Value>(call.arguments())
                        .unwrap_or_else(|_| Value::String(call.arguments().to_string()));
                    let call = json!({"name": call.name(), "arguments": arguments});
                    parts.push(format!("<tool_call>\n{call}\n</tool_call>"));
                }
                ("gpt", parts.join("\n"))
            }
            _ => ("human", message.content_text().into_owned()),
        };
        turns.push(json!({"from": from, "value": value}));
    }
    json!({ "conversations": turns }).to_string() + "\n"
}

/// The inner text of every `<tag>…</tag>` block, in order.
fn blocks<'a>(text: &'a str, tag: &str) -> Vec<&'a str> {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(&open) {
        let after = &rest[start + open.len()..];
        let Some(end) = after.find(&close) else { break };
        found.push(&after[..end]);
        rest = &after[end + close.len()..];
    }
    found
}

fn strip_blocks(text: &str, tag: &str) -> String {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(&open) {
        let Some(end) = rest[start..].find(&close) else {
            break;
        };
        out.push_str(&rest[..start]);
        rest = &rest[start + end + close.len()..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trajectory_reads_back_as_the_same_messages() {
        let trajectory = r#"{"conversations": [{"from": "system", "value": "s"},
            {"from": "human", "value": "q"},
            {"from": "gpt", "value": "<think>\nhm\n</think>\nlook\n<tool_call>\n{\"name\": \"ls\", \"arguments\": {\"a\": 1}}\n</tool_call>\n<tool_call>\n{\"name\": \"pwd\", \"arguments\": {}}\n</tool_call>"},
            {"from": "tool", "value": "<tool_response>\n{\"tool_call_id\": \"c1\", \"name\": \"ls\", \"content\": \"x\"}\n</tool_response>\n<tool_response>\n{\"tool_call_id\": \"c2\", \"name\": \"pwd\", \"content\": \"/\"}\n</tool_response>"},
            {"from": "gpt", "value": "done"}]}"#;
        let messages = parse(trajectory, "t").unwrap();
        let written = write(&messages);
        assert_eq!(parse(&written, "w").unwrap(), messages);
        assert!(looks_like(&serde_json::from_str(&written).unwrap()));
    }

    #[test]
    fn a_tool_turn_without_response_tags_is_kept_as_the_calls_result() {
        let trajectory = r#"{"conversations": [{"from": "human", "value": "q"},
            {"from": "gpt", "value": "<tool_call>\n{\"name\": \"ls\", \"arguments\": {}}\n</tool_call>"},
            {"from": "tool", "value": "a.txt\nb.txt"},
            {"from": "gpt", "value": "two files"}]}"#;
        let messages = parse(trajectory, "t").unwrap();
        assert_eq!(messages.len(), 4, "{messages:?}");
        assert!(messages[2].is_tool_result());
        assert_eq!(messages[2].tool_call_id(), Some("call_2_1"));
        assert_eq!(messages[2].content_text(), "a.txt\nb.txt");
    }

    #[test]
    fn a_tool_turn_without_tags_or_a_call_before_it_is_kept_as_text() {
        let trajectory = r#"{"conversations": [{"from": "human", "value": "q"},
            {"from": "tool", "value": "stray output"},
            {"from": "gpt", "value": "ok"}]}"#;
        let messages = parse(trajectory, "t").unwrap();
        assert_eq!(messages.len(), 3, "{messages:?}");
        assert!(!messages[1].is_tool_result());
        assert!(messages[1].content_text().contains("stray output"));
    }

    #[test]
    fn a_tool_call_inside_think_is_reasoning_not_a_call() {
        let trajectory = r#"{"conversations": [{"from": "human", "value": "q"},
            {"from": "gpt", "value": "<think>\nmaybe <tool_call>\n{\"name\": \"rm\", \"arguments\": {}}\n</tool_call> no\n</think>\nI will not."}]}"#;
        let messages = parse(trajectory, "t").unwrap();
        assert_eq!(messages.len(), 2, "{messages:?}");
        assert!(messages[1].tool_calls().is_empty(), "{messages:?}");
        assert_eq!(messages[1].content_text(), "I will not.");
    }
}
