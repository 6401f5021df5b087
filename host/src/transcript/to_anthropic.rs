//! OpenAI messages back into Anthropic Messages: content blocks (for the Claude Code lines
//! rebuilt from messages an engine changed or wrote) and whole documents (the inverse of the
//! `anthropic` reader).

use ctxhost_sdk::{Content, Message};
use serde_json::{json, Map, Value};

/// A user message's content: its text as a string, or content parts as blocks (images as image
/// blocks; parts that are already Anthropic blocks as they are).
pub(super) fn user_content(message: &Message) -> Value {
    match message.content() {
        Content::Text(text) => Value::String(text.to_string()),
        Content::Json(_) => match message.to_value().get("content") {
            Some(Value::Array(parts)) => Value::Array(parts.iter().map(block_of_part).collect()),
            _ => Value::String(message.content_text().into_owned()),
        },
        Content::Absent | Content::Null => Value::String(String::new()),
    }
}

fn block_of_part(part: &Value) -> Value {
    match part.get("type").and_then(Value::as_str) {
        Some("text") => {
            json!({"type": "text", "text": part.get("text").cloned().unwrap_or_default()})
        }
        Some("image_url") => {
            let url = part
                .pointer("/image_url/url")
                .and_then(Value::as_str)
                .unwrap_or_default();
            json!({"type": "image", "source": image_source(url)})
        }
        _ => part.clone(),
    }
}

/// A data URL as a base64 source, any other URL as a url source.
fn image_source(url: &str) -> Value {
    let inline = url
        .strip_prefix("data:")
        .and_then(|rest| rest.split_once(";base64,"));
    match inline {
        Some((media_type, data)) => {
            json!({"type": "base64", "media_type": media_type, "data": data})
        }
        None => json!({"type": "url", "url": url}),
    }
}

/// An assistant message's blocks: `thinking` (kept from the original turn by the caller), its
/// text, then one `tool_use` per call.
pub(super) fn assistant_blocks(message: &Message, thinking: Vec<Value>) -> Vec<Value> {
    let mut blocks = thinking;
    let text = message.content_text();
    if !text.is_empty() {
        blocks.push(json!({"type": "text", "text": text}));
    }
    for call in message.tool_calls() {
        let input = match serde_json::from_str::<Value>(call.arguments()) {
            Ok(Value::Object(input)) => Value::Object(input),
            _ if call.arguments().trim().is_empty() => Value::Object(Map::new()),
            // Anthropic wants an object: arguments that are not one are kept under a key.
            _ => json!({"arguments": call.arguments()}),
        };
        blocks.push(
            json!({"type": "tool_use", "id": call.id(), "name": call.name(), "input": input}),
        );
    }
    blocks
}

/// A tool message as a `tool_result` block (`is_error` as the original result had it).
pub(super) fn tool_result(message: &Message, is_error: Option<&Value>) -> Value {
    let mut block = json!({
        "tool_use_id": message.tool_call_id().unwrap_or_default(),
        "type": "tool_result",
        "content": user_content(message),
    });
    if let Some(is_error) = is_error {
        block["is_error"] = is_error.clone();
    }
    block
}

/// Messages as an Anthropic Messages document, `{"system", "messages"}` with one message per
/// line: system prompts joined into `system`, consecutive tool results in one user turn,
/// reasoning as a `thinking` block (without a signature: the message model keeps none).
pub(super) fn write(messages: &[Message]) -> String {
    let mut system = Vec::new();
    let mut turns: Vec<Value> = Vec::new();
    let mut results_open = false;
    for message in messages {
        let role = message.role();
        if role == "tool" {
            let block = tool_result(message, None);
            match turns.last_mut() {
                Some(turn) if results_open => {
                    if let Some(blocks) = turn["content"].as_array_mut() {
                        blocks.push(block);
                    }
                }
                _ => turns.push(json!({"role": "user", "content": [block]})),
            }
            results_open = true;
            continue;
        }
        results_open = false;
        match role {
            "system" => system.push(message.content_text().into_owned()),
            "assistant" => {
                let thinking = match message.extra_fields().get("reasoning") {
                    Some(Value::String(text)) => {
                        vec![json!({"type": "thinking", "thinking": text})]
                    }
                    _ => Vec::new(),
                };
                let blocks = assistant_blocks(message, thinking);
                turns.push(json!({"role": "assistant", "content": blocks}));
            }
            _ => turns.push(json!({"role": "user", "content": user_content(message)})),
        }
    }
    let mut text = String::from("{");
    if !system.is_empty() {
        text.push_str(&format!(
            "\"system\": {},\n",
            Value::String(system.join("\n"))
        ));
    }
    text.push_str("\"messages\": [");
    for (index, turn) in turns.iter().enumerate() {
        text.push_str(if index == 0 { "\n" } else { ",\n" });
        text.push_str(&turn.to_string());
    }
    text.push_str("\n]}\n");
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxhost_sdk::ToolCall;

    #[test]
    fn messages_become_blocks() {
        let mut user = Message::user("");
        user.set_content_json(&json!([
            {"type": "text", "text": "see"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
        ]));
        assert_eq!(
            user_content(&user),
            json!([
                {"type": "text", "text": "see"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}
            ])
        );
        let mut call = Message::assistant_tool_calls(vec![ToolCall::new("t1", "ls", "{\"a\":1}")]);
        call.set_text("looking");
        assert_eq!(
            assistant_blocks(&call, vec![]),
            vec![
                json!({"type": "text", "text": "looking"}),
                json!({"type": "tool_use", "id": "t1", "name": "ls", "input": {"a": 1}})
            ]
        );
        let result = tool_result(&Message::tool_result("t1", "out"), Some(&json!(true)));
        assert_eq!(result["is_error"], true);
        assert_eq!(
            result,
            json!({"tool_use_id": "t1", "type": "tool_result", "content": "out", "is_error": true})
        );
    }

    #[test]
    fn a_document_reads_back_as_the_same_messages() {
        let document = r#"{"system": "s", "messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "t", "signature": "x"},
                {"type": "text", "text": "a"}, {"type": "tool_use", "id": "u1", "name": "ls", "input": {}},
                {"type": "tool_use", "id": "u2", "name": "pwd", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "u1", "content": "x"},
                {"type": "tool_result", "tool_use_id": "u2", "content": "y"}, {"type": "text", "text": "more"}]},
            {"role": "assistant", "content": "done"}]}"#;
        let messages = crate::transcript::anthropic::parse(document, "d").unwrap();
        let written = write(&messages);
        assert_eq!(
            crate::transcript::anthropic::parse(&written, "w").unwrap(),
            messages
        );
        assert_eq!(
            crate::transcript::detect(&written),
            crate::transcript::Format::Anthropic
        );
    }
}
