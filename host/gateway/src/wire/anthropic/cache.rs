//! Prompt-cache breakpoints for clients that set none: the system prompt and a rolling window
//! over the last messages (Hermes' `system_and_3`), at most four as Anthropic allows. A client
//! that sets its own keeps them, untouched.

use serde_json::{json, Map, Value};

/// Anthropic accepts at most this many breakpoints in one request.
const MAX_BREAKPOINTS: usize = 4;
/// Messages at the end that get one each (after the system prompt's).
const ROLLING: usize = MAX_BREAKPOINTS - 1;

/// Whether the client placed any breakpoint (in `system`, `messages` or `tools`).
pub fn client_sets_breakpoints(body: &Map<String, Value>, turns: &[Value]) -> bool {
    ["system", "tools"]
        .iter()
        .filter_map(|key| body.get(*key))
        .chain(turns)
        .any(holds_cache_control)
}

fn holds_cache_control(value: &Value) -> bool {
    match value {
        Value::Object(fields) => {
            fields.contains_key("cache_control") || fields.values().any(holds_cache_control)
        }
        Value::Array(items) => items.iter().any(holds_cache_control),
        _ => false,
    }
}

/// Marks the system prompt and the last [`ROLLING`] messages of an upstream body. Text
/// contents become text blocks everywhere (not only where marked), so a message reads the same
/// bytes, less its marker, as the window rolls past it: the cached prefix stays byte-stable.
pub fn add_breakpoints(body: &mut Map<String, Value>) {
    if let Some(Value::Array(messages)) = body.get_mut("messages") {
        for content in messages.iter_mut().filter_map(|m| m.get_mut("content")) {
            as_blocks(content);
        }
    }
    let mut placed = 0;
    if let Some(system) = body.get_mut("system") {
        if mark_last_block(system) {
            placed += 1;
        }
    }
    if let Some(Value::Array(messages)) = body.get_mut("messages") {
        for message in messages.iter_mut().rev().take(ROLLING) {
            if placed == MAX_BREAKPOINTS {
                break;
            }
            if let Some(content) = message.get_mut("content") {
                if mark_last_block(content) {
                    placed += 1;
                }
            }
        }
    }
}

/// Puts a breakpoint on the last block that may carry one (text made a block first); false
/// when there is none (thinking blocks and empty text may not be marked).
fn mark_last_block(content: &mut Value) -> bool {
    as_blocks(content);
    let Value::Array(blocks) = content else {
        return false;
    };
    let Some(block) = blocks.iter_mut().rev().find(|b| markable(b)) else {
        return false;
    };
    block["cache_control"] = json!({"type": "ephemeral"});
    true
}

/// Non-empty text as one text block (empty text stays: an empty block is refused).
fn as_blocks(content: &mut Value) {
    if let Value::String(text) = content {
        if !text.is_empty() {
            *content = json!([{"type": "text", "text": std::mem::take(text)}]);
        }
    }
}

fn markable(block: &Value) -> bool {
    match block["type"].as_str() {
        Some("thinking" | "redacted_thinking") | None => false,
        Some("text") => block["text"].as_str().is_some_and(|t| !t.is_empty()),
        Some(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_system_prompt_and_the_last_three_messages_are_marked() {
        let Value::Object(mut body) = json!({
            "system": "Be brief.",
            "messages": [
                {"role": "user", "content": "one"},
                {"role": "assistant", "content": [{"type": "text", "text": "two"}]},
                {"role": "user", "content": "three"},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "four"},
                    {"type": "thinking", "thinking": "...", "signature": "s"}]},
            ]
        }) else {
            unreachable!()
        };
        assert!(!client_sets_breakpoints(&body, &[]));
        add_breakpoints(&mut body);
        let eph = json!({"type": "ephemeral"});
        assert_eq!(body["system"][0]["cache_control"], eph);
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(
            messages[0]["content"],
            json!([{"type": "text", "text": "one"}]),
            "outside the window: a block like the others, unmarked"
        );
        assert_eq!(messages[1]["content"][0]["cache_control"], eph);
        assert_eq!(messages[2]["content"][0]["cache_control"], eph);
        assert_eq!(
            messages[3]["content"][0]["cache_control"], eph,
            "not on thinking"
        );
        assert!(messages[3]["content"][1].get("cache_control").is_none());
        assert!(client_sets_breakpoints(&body, &[]));
    }
}
