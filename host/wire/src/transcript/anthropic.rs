//! Anthropic Messages documents: `[{"role", "content"}, ...]`, or a request-shaped object
//! `{"system": ..., "messages": [...], ...}`. The messages convert with [`crate::anthropic`]
//! (losslessly: what an engine left alone is written back as it was read); the document's shape
//! and its other keys (`model`, `tools`, ...) ride on the first message, so the document is
//! written back whole.

use ctxhost_sdk::Message;
use serde_json::{Map, Value};

use super::{parse_document, TranscriptError};
use crate::anthropic as convert;

/// The extra field holding the document's shape: its object with `system` and `messages`
/// emptied (the other keys and the order of all of them), or an empty array for a bare array.
const DOCUMENT: &str = "anthropic_document";

/// Block types only Anthropic content has.
const ANTHROPIC_BLOCKS: &[&str] = &[
    "tool_use",
    "tool_result",
    "thinking",
    "redacted_thinking",
    "document",
    "search_result",
];

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
    let not_messages = || {
        TranscriptError::new(
            name,
            "not Anthropic Messages: expected an array of messages or {\"messages\": [...]}",
        )
    };
    let (shape, system, turns) = match parse_document(text.trim_start(), name)? {
        Value::Object(mut object) => {
            // Taken in place (left null), so the shape keeps the keys' order.
            let system = object.get_mut("system").map(Value::take);
            let turns = object.get_mut("messages").map(Value::take);
            (Value::Object(object), system, turns)
        }
        turns @ Value::Array(_) => (Value::Array(Vec::new()), None, Some(turns)),
        _ => return Err(not_messages()),
    };
    let Some(Value::Array(turns)) = turns else {
        return Err(not_messages());
    };
    let mut messages = convert::to_messages(system, turns).map_err(|error| {
        TranscriptError::new(format!("{name}: {}", error.location), error.message)
    })?;
    // `{"system", "messages"}` is what the writer makes of messages anyway: kept only when the
    // document has another shape.
    let keys: Vec<&str> = shape
        .as_object()
        .map(|object| object.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let written_anyway = matches!(keys.as_slice(), ["system", "messages"] | ["messages"]);
    if let (false, Some(first)) = (written_anyway, messages.first_mut()) {
        first.set_extra_field(DOCUMENT, Some(shape));
    }
    Ok(messages)
}

/// Messages as an Anthropic Messages document in the shape it was read in (a new document:
/// `{"system", "messages"}`), one message per line.
pub(super) fn write(messages: &[Message]) -> String {
    let shape = messages
        .iter()
        .find_map(|m| m.extra_fields().get(DOCUMENT).cloned());
    let bare: Vec<Message> = messages
        .iter()
        .map(|message| {
            let mut message = message.clone();
            message.set_extra_field(DOCUMENT, None);
            message
        })
        .collect();
    let converted = convert::from_messages(&bare);
    let turns = lines(&converted.messages);
    let mut object = match shape {
        Some(Value::Array(_)) if converted.system.is_none() => return format!("{turns}\n"),
        Some(Value::Object(object)) => object,
        _ => Map::new(),
    };
    match converted.system {
        Some(system) if object.contains_key("system") => {
            object.insert("system".into(), system);
        }
        Some(system) => {
            object.shift_insert(0, "system".into(), system);
        }
        None => {
            object.shift_remove("system");
        }
    }
    if !object.contains_key("messages") {
        object.insert("messages".into(), Value::Null);
    }
    let fields: Vec<String> = object
        .iter()
        .map(|(key, value)| {
            let value = match key.as_str() {
                "messages" => turns.clone(),
                _ => value.to_string(),
            };
            format!("{}: {value}", Value::String(key.clone()))
        })
        .collect();
    format!("{{{}}}\n", fields.join(",\n"))
}

/// A JSON array of `turns`, one per line.
fn lines(turns: &[Value]) -> String {
    let items: Vec<String> = turns.iter().map(Value::to_string).collect();
    format!("[\n{}\n]", items.join(",\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_is_written_back_in_its_shape_with_its_other_keys() {
        let document = r#"{"model": "claude-x", "system": [{"type": "text", "text": "s",
            "cache_control": {"type": "ephemeral"}}], "max_tokens": 9, "messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "t", "signature": "x"},
                {"type": "text", "text": "a"}, {"type": "tool_use", "id": "u1", "name": "ls", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "u1", "content": "x",
                "is_error": true}, {"type": "text", "text": "more"}]}], "tools": []}"#;
        let written = write(&parse(document, "d").unwrap());
        let compact = |text: &str| serde_json::from_str::<Value>(text).unwrap().to_string();
        assert_eq!(compact(&written), compact(document));
        assert_eq!(
            crate::transcript::detect(&written),
            crate::transcript::Format::Anthropic
        );
        let array = r#"[{"role": "user", "content": [{"type": "text", "text": "q"}]}]"#;
        assert_eq!(compact(&write(&parse(array, "a").unwrap())), compact(array));
    }

    #[test]
    fn messages_of_another_format_become_a_new_document() {
        let messages = vec![Message::system("s"), Message::user("q")];
        assert_eq!(
            write(&messages),
            "{\"system\": \"s\",\n\"messages\": [\n{\"role\":\"user\",\"content\":\"q\"}\n]}\n"
        );
    }
}
