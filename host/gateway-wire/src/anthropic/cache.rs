//! Prompt-cache breakpoints for clients that set none: the system prompt and a rolling window
//! over the last messages (Hermes' `system_and_3`), at most four as Anthropic allows, living
//! `serve.anthropic.cache_ttl`. A client that sets its own keeps them, untouched.

use ctxhost_costs::cache::Ttl;
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

/// Marks the system prompt and the last [`ROLLING`] messages of an upstream body, with `ttl`.
/// Text contents become text blocks everywhere (not only where marked), so a message reads the
/// same bytes, less its marker, as the window rolls past it: the cached prefix stays
/// byte-stable. Anthropic refuses a 1-hour breakpoint after a 5-minute one (tools, system,
/// messages in order): past one (a client's, kept in the session's view) the gateway's are
/// 5-minute too.
pub fn add_breakpoints(body: &mut Map<String, Value>, ttl: Ttl) {
    let mut after_five_minutes = body.get("tools").is_some_and(holds_five_minute_breakpoint);
    if let Some(system) = body.get_mut("system") {
        mark_last_block(system, ttl, after_five_minutes);
        after_five_minutes |= holds_five_minute_breakpoint(system);
    }
    if let Some(Value::Array(messages)) = body.get_mut("messages") {
        let rolling_from = messages.len().saturating_sub(ROLLING);
        for (index, message) in messages.iter_mut().enumerate() {
            let Some(content) = message.get_mut("content") else {
                continue;
            };
            as_blocks(content);
            if index >= rolling_from {
                mark_last_block(content, ttl, after_five_minutes);
            }
            after_five_minutes |= holds_five_minute_breakpoint(content);
        }
    }
}

/// Puts a breakpoint on the last block that may carry one (text made a block first), unless it
/// has one (a client's, kept as it is); none when no block may (thinking blocks, empty text).
fn mark_last_block(content: &mut Value, ttl: Ttl, after_five_minutes: bool) {
    as_blocks(content);
    let Value::Array(blocks) = content else {
        return;
    };
    let Some(last) = blocks.iter().rposition(markable) else {
        return;
    };
    let ttl = match after_five_minutes || blocks[..last].iter().any(holds_five_minute_breakpoint) {
        true => Ttl::FiveMinutes,
        false => ttl,
    };
    if blocks[last].get("cache_control").is_none() {
        // The bare form for 5 minutes, byte for byte as agents write it.
        blocks[last]["cache_control"] = match ttl {
            Ttl::FiveMinutes => json!({"type": "ephemeral"}),
            Ttl::OneHour => json!({"type": "ephemeral", "ttl": ttl.name()}),
        };
    }
}

/// Whether `value` holds a breakpoint that lives 5 minutes (no `ttl` says 5 minutes).
fn holds_five_minute_breakpoint(value: &Value) -> bool {
    match value {
        Value::Object(fields) => {
            fields.get("cache_control").is_some_and(|control| {
                control.get("ttl").and_then(Value::as_str).unwrap_or("5m") == "5m"
            }) || fields.values().any(holds_five_minute_breakpoint)
        }
        Value::Array(items) => items.iter().any(holds_five_minute_breakpoint),
        _ => false,
    }
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
        add_breakpoints(&mut body, Ttl::FiveMinutes);
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
