//! Anthropic Messages to the engine's message model (OpenAI chat format) and back, losslessly:
//! the one conversion the gateway's `/v1/messages` and the `anthropic` and `claude-code`
//! transcript formats share.
//!
//! Engines reason about OpenAI messages: tool calls on assistant messages, one `tool` message
//! per result. An Anthropic conversation is taken apart into that shape and everything it does
//! not need is kept beside it, so a message the engine left alone converts back to the very
//! blocks it was read from (every field, in its order):
//! - content arrays stay Anthropic blocks (they read as content parts: `text` blocks count as
//!   text); a `tool_use` block becomes a tool call and leaves a stub `{"type": "tool_use",
//!   "id"}` in its place; each `tool_result` block becomes a `tool` message;
//! - the blocks' other fields ride along in extra fields (`anthropic_block` on a tool call or
//!   result: the block with its input or content taken out), pieces of one Anthropic message
//!   after the first are marked `anthropic_join`, a `role: "system"` entry inside `messages` is
//!   marked `anthropic_inline`;
//! - `cache_control` is lifted out of content arrays into `anthropic_cache_control`, so moving a
//!   breakpoint (as Claude Code does every turn) does not change a message's identity;
//! - an assistant turn with thinking records a digest of what it said (`anthropic_turn`): if an
//!   engine changed the turn, its thinking blocks (whose signatures cover it) no longer match it
//!   and are dropped.
//!
//! What an engine wrote converts to plain blocks: text as text, OpenAI `image_url` parts as
//! `image` blocks, tool calls as `tool_use` blocks after the turn's text.

use ctxhost_sdk::{Content, Message};
use serde_json::{json, Map, Value};
use sha2::{Digest as _, Sha256};

const BLOCK: &str = "anthropic_block";
const JOIN: &str = "anthropic_join";
const INLINE: &str = "anthropic_inline";
const CACHE: &str = "anthropic_cache_control";
const TURN: &str = "anthropic_turn";

/// Why a request's messages are not Anthropic Messages: where, and what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{location}: {message}")]
pub struct ConvertError {
    pub location: String,
    pub message: String,
}

fn error(location: impl Into<String>, message: impl Into<String>) -> ConvertError {
    ConvertError {
        location: location.into(),
        message: message.into(),
    }
}

/// The engine's messages for a request's `system` and `messages` (taken, not copied: a
/// history's texts move into its messages).
pub fn to_messages(system: Option<Value>, turns: Vec<Value>) -> Result<Vec<Message>, ConvertError> {
    let mut messages = Vec::with_capacity(turns.len() + 1);
    if let Some(system) = system {
        messages.push(message(
            Value::from("system"),
            system,
            Map::new(),
            &[],
            "system",
        )?);
    }
    for (index, turn) in turns.into_iter().enumerate() {
        let location = format!("messages[{index}]");
        let Value::Object(mut turn) = turn else {
            return Err(error(location, "a message must be a JSON object"));
        };
        let content = turn
            .get_mut("content")
            .map(Value::take)
            .unwrap_or(Value::Null);
        let Some(Value::String(role)) = turn.get_mut("role").map(Value::take) else {
            return Err(error(&location, "the message has no string \"role\""));
        };
        match role.as_str() {
            "assistant" => messages.push(assistant(content, &location)?),
            "user" => user(content, &location, &mut messages)?,
            "system" => messages.push(message(
                Value::from(role),
                content,
                Map::new(),
                &[INLINE],
                &location,
            )?),
            other => {
                return Err(error(
                    location,
                    format!("unknown role `{other}` (expected user, assistant or system)"),
                ))
            }
        }
    }
    Ok(messages)
}

/// One assistant reply (its content blocks) as the engine's message.
pub fn reply_message(content: &Value) -> Result<Message, ConvertError> {
    assistant(content.clone(), "the upstream's reply")
}

/// A message of `role` and `content` with `fields` beside them, the breakpoints of its
/// content's blocks lifted out ([`lift_cache_control`]) and then the `marks` set (true), in
/// that order (the order its extra fields are kept in).
fn message(
    role: Value,
    mut content: Value,
    fields: Map<String, Value>,
    marks: &[&str],
    location: &str,
) -> Result<Message, ConvertError> {
    let mut object = Map::with_capacity(fields.len() + marks.len() + 3);
    let lifted = lift_cache_control(&mut content);
    object.insert("role".into(), role);
    object.insert("content".into(), content);
    object.extend(fields);
    if let Some(lifted) = lifted {
        object.insert(CACHE.into(), lifted);
    }
    for mark in marks {
        object.insert((*mark).into(), Value::Bool(true));
    }
    Message::from_value(Value::Object(object)).map_err(|e| error(location, e.to_string()))
}

fn assistant(content: Value, location: &str) -> Result<Message, ConvertError> {
    let role = Value::from("assistant");
    let Value::Array(blocks) = content else {
        return message(role, content, Map::new(), &[], location);
    };
    let mut kept = Vec::with_capacity(blocks.len());
    let mut calls = Vec::new();
    let mut thinks = false;
    for block in blocks {
        match block_type(&block) {
            "tool_use" => {
                let mut template = block;
                let input = template
                    .get_mut("input")
                    .map(Value::take)
                    .unwrap_or_else(|| json!({}));
                let id = template["id"].clone();
                kept.push(json!({"type": "tool_use", "id": id}));
                calls.push(json!({
                    "id": id,
                    "type": "function",
                    "function": {"name": template["name"], "arguments": input.to_string()},
                    BLOCK: template,
                }));
            }
            kind => {
                thinks |= matches!(kind, "thinking" | "redacted_thinking");
                kept.push(block);
            }
        }
    }
    let mut fields = Map::new();
    if !calls.is_empty() {
        fields.insert("tool_calls".into(), Value::Array(calls));
    }
    let mut message = message(role, Value::Array(kept), fields, &[], location)?;
    if thinks {
        message.set_extra_field(TURN, Some(Value::String(turn_digest(&message))));
    }
    Ok(message)
}

/// A user turn: its `tool_result` blocks become `tool` messages, the blocks between them user
/// messages, in order; every piece after the first is marked as joining the one before.
fn user(content: Value, location: &str, messages: &mut Vec<Message>) -> Result<(), ConvertError> {
    let Value::Array(blocks) = content else {
        messages.push(message(user_role(), content, Map::new(), &[], location)?);
        return Ok(());
    };
    // Every piece after the turn's first is marked as joining it.
    let first = messages.len();
    let join = [JOIN];
    let marks = |messages: &Vec<Message>| &join[..usize::from(messages.len() > first)];
    let mut pending: Vec<Value> = Vec::new();
    let flush = |pending: &mut Vec<Value>, messages: &mut Vec<Message>| {
        if !pending.is_empty() {
            let blocks = Value::Array(std::mem::take(pending));
            let piece = message(user_role(), blocks, Map::new(), marks(messages), location)?;
            messages.push(piece);
        }
        Ok::<_, ConvertError>(())
    };
    let empty = blocks.is_empty();
    for block in blocks {
        let Value::Object(mut template) = block else {
            pending.push(block);
            continue;
        };
        if template.get("type").and_then(Value::as_str) != Some("tool_result") {
            pending.push(Value::Object(template));
            continue;
        }
        flush(&mut pending, messages)?;
        // Its content taken in place (left null), so the block keeps its key order when it
        // is put back.
        let content = template.get_mut("content").map(Value::take);
        let mut object = Map::with_capacity(5);
        object.insert("role".into(), Value::from("tool"));
        if let Some(content) = content {
            object.insert("content".into(), content);
        }
        object.insert("tool_call_id".into(), template["tool_use_id"].clone());
        object.insert(BLOCK.into(), Value::Object(template));
        for mark in marks(messages) {
            object.insert((*mark).into(), Value::Bool(true));
        }
        let piece = Message::from_value(Value::Object(object))
            .map_err(|e| error(location, e.to_string()))?;
        messages.push(piece);
    }
    flush(&mut pending, messages)?;
    if empty {
        messages.push(message(
            user_role(),
            Value::Array(Vec::new()),
            Map::new(),
            &[],
            location,
        )?);
    }
    Ok(())
}

fn user_role() -> Value {
    Value::from("user")
}

fn block_type(block: &Value) -> &str {
    block
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Takes `cache_control` out of a content array's blocks: what goes in the extra field that
/// keeps it (`[index, control]` pairs), if any.
fn lift_cache_control(content: &mut Value) -> Option<Value> {
    let Value::Array(blocks) = content else {
        return None;
    };
    let lifted: Vec<Value> = blocks
        .iter_mut()
        .enumerate()
        .filter_map(|(index, block)| {
            let control = block.as_object_mut()?.shift_remove("cache_control")?;
            Some(json!([index, control]))
        })
        .collect();
    (!lifted.is_empty()).then_some(Value::Array(lifted))
}

/// What an assistant turn said: its content and its calls' arguments.
fn turn_digest(message: &Message) -> String {
    let mut hasher = Sha256::new();
    match message.content() {
        Content::Text(text) | Content::Json(text) => hasher.update(text.as_bytes()),
        Content::Absent | Content::Null => {}
    }
    for call in message.tool_calls() {
        hasher.update([0]);
        hasher.update(call.id().as_bytes());
        hasher.update([0]);
        hasher.update(call.arguments().as_bytes());
    }
    hasher.finalize()[..12]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// An Anthropic request's `system` and `messages`, from the engine's messages.
pub struct Converted {
    pub system: Option<Value>,
    pub messages: Vec<Value>,
}

/// The engine's messages as Anthropic Messages: what an engine left alone comes back as the
/// client sent it; what it wrote (summaries, shortened results) becomes plain blocks.
pub fn from_messages(messages: &[Message]) -> Converted {
    let mut system: Vec<Value> = Vec::new();
    let mut system_is_text = true;
    let mut out: Vec<Value> = Vec::new();
    // Whether the last Anthropic message ends with a tool result (results of one turn share it).
    let mut after_result = false;
    for message in messages {
        let extra = message.extra_fields();
        let joins = extra.get(JOIN).and_then(Value::as_bool).unwrap_or(false);
        match message.role() {
            "system" | "developer" if !extra.contains_key(INLINE) => {
                let content = content_value(message, &extra);
                system_is_text &= content.is_string();
                system.push(content);
                continue;
            }
            "system" => {
                out.push(json!({"role": "system", "content": content_value(message, &extra)}));
                after_result = false;
            }
            "assistant" => {
                out.push(
                    json!({"role": "assistant", "content": assistant_content(message, &extra)}),
                );
                after_result = false;
            }
            "tool" => {
                let mut block = match extra.get(BLOCK) {
                    Some(Value::Object(template)) => template.clone(),
                    _ => Map::from_iter([("type".to_string(), json!("tool_result"))]),
                };
                block.insert(
                    "tool_use_id".into(),
                    json!(message.tool_call_id().unwrap_or_default()),
                );
                match message.content() {
                    Content::Absent => {
                        block.shift_remove("content");
                    }
                    _ => {
                        block.insert("content".into(), content_value(message, &extra));
                    }
                }
                push_user(&mut out, vec![Value::Object(block)], joins || after_result);
                after_result = true;
            }
            _ => {
                let content = content_value(message, &extra);
                match (joins, content) {
                    (true, content) => push_user(&mut out, as_blocks(content), true),
                    (false, content) => out.push(json!({"role": "user", "content": content})),
                }
                after_result = false;
            }
        }
    }
    let system = match system.len() {
        0 => None,
        1 => system.pop(),
        _ if system_is_text => Some(Value::String(
            system
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join("\n\n"),
        )),
        _ => Some(Value::Array(
            system.into_iter().flat_map(as_blocks).collect(),
        )),
    };
    Converted {
        system,
        messages: out,
    }
}

/// Adds `blocks` to the last message when it is a user message and `join`, else as a new one.
fn push_user(out: &mut Vec<Value>, blocks: Vec<Value>, join: bool) {
    if join {
        if let Some(last) = out.last_mut().filter(|m| m["role"] == "user") {
            let content = last["content"].take();
            let mut joined = as_blocks(content);
            joined.extend(blocks);
            last["content"] = Value::Array(joined);
            return;
        }
    }
    out.push(json!({"role": "user", "content": blocks}));
}

fn as_blocks(content: Value) -> Vec<Value> {
    match content {
        Value::Array(blocks) => blocks,
        Value::String(text) if text.is_empty() => Vec::new(),
        Value::String(text) => vec![json!({"type": "text", "text": text})],
        Value::Null => Vec::new(),
        other => vec![other],
    }
}

/// A message's content as Anthropic content: text as a string, blocks with their
/// `cache_control` put back, OpenAI image parts as image blocks.
fn content_value(message: &Message, extra: &Map<String, Value>) -> Value {
    match message.content() {
        Content::Text(text) => Value::String(text.to_string()),
        Content::Json(text) => {
            let mut value: Value = serde_json::from_str(text).unwrap_or(Value::Null);
            if let Value::Array(blocks) = &mut value {
                for block in blocks.iter_mut().filter(|b| block_type(b) == "image_url") {
                    *block = image_block(block);
                }
            }
            if let (Value::Array(blocks), Some(Value::Array(lifted))) =
                (&mut value, extra.get(CACHE))
            {
                for entry in lifted {
                    let index = entry[0].as_u64().unwrap_or(u64::MAX) as usize;
                    if let Some(Value::Object(block)) = blocks.get_mut(index) {
                        block.insert("cache_control".into(), entry[1].clone());
                    }
                }
            }
            value
        }
        Content::Absent | Content::Null => Value::String(String::new()),
    }
}

/// An OpenAI `image_url` part as an `image` block: a data URL as a base64 source, any other
/// URL as a url source.
fn image_block(part: &Value) -> Value {
    let url = part
        .pointer("/image_url/url")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let inline = url
        .strip_prefix("data:")
        .and_then(|rest| rest.split_once(";base64,"));
    let source = match inline {
        Some((media_type, data)) => {
            json!({"type": "base64", "media_type": media_type, "data": data})
        }
        None => json!({"type": "url", "url": url}),
    };
    json!({"type": "image", "source": source})
}

/// An assistant message's blocks: its content with each tool-use stub replaced by its call;
/// calls without a stub (an engine's rewrite) come last. Thinking survives only an unchanged
/// turn.
fn assistant_content(message: &Message, extra: &Map<String, Value>) -> Value {
    let calls: Vec<Value> = message
        .tool_calls()
        .iter()
        .map(|call| tool_use(call.to_value()))
        .collect();
    let content = content_value(message, extra);
    if calls.is_empty() && !content.is_array() {
        return content;
    }
    let unchanged = extra
        .get(TURN)
        .and_then(Value::as_str)
        .is_none_or(|digest| digest == turn_digest(message));
    let mut used = vec![false; calls.len()];
    let mut blocks = Vec::new();
    for block in as_blocks(content) {
        let kind = block_type(&block);
        if !unchanged && matches!(kind, "thinking" | "redacted_thinking") {
            continue;
        }
        if kind == "tool_use" && block.get("input").is_none() {
            let position = calls
                .iter()
                .enumerate()
                .position(|(i, call)| !used[i] && call["id"] == block["id"]);
            if let Some(i) = position {
                used[i] = true;
                blocks.push(calls[i].clone());
            }
            continue;
        }
        blocks.push(block);
    }
    for (call, used) in calls.into_iter().zip(used) {
        if !used {
            blocks.push(call);
        }
    }
    Value::Array(blocks)
}

/// A tool call (OpenAI shape) as a `tool_use` block.
fn tool_use(call: Value) -> Value {
    let mut block = match &call[BLOCK] {
        Value::Object(template) => template.clone(),
        _ => Map::from_iter([("type".to_string(), json!("tool_use"))]),
    };
    let arguments = call["function"]["arguments"].as_str().unwrap_or("{}");
    let input = serde_json::from_str::<Value>(arguments)
        .ok()
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({"arguments": arguments}));
    block.insert("id".into(), call["id"].clone());
    block.insert("name".into(), call["function"]["name"].clone());
    block.insert("input".into(), input);
    Value::Object(block)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> (Value, Vec<Value>) {
        let system = json!([{"type": "text", "text": "You are terse.",
                             "cache_control": {"type": "ephemeral"}}]);
        let messages = vec![
            json!({"role": "user", "content": [
                {"type": "text", "text": "Look at these."},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
                {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "Paris is in France."},
                 "title": "Atlas", "citations": {"enabled": true}},
            ]}),
            json!({"role": "assistant", "content": [
                {"type": "thinking", "thinking": "They want a tool.", "signature": "sig-1"},
                {"type": "redacted_thinking", "data": "opaque"},
                {"type": "text", "text": "Checking.", "citations": [{"type": "char_location",
                  "cited_text": "Paris", "document_index": 0, "start_char_index": 0, "end_char_index": 5}]},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"},
                 "cache_control": {"type": "ephemeral"}},
            ]}),
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": true, "content": [
                    {"type": "text", "text": "no network"},
                    {"type": "image", "source": {"type": "url", "url": "https://example.com/x.png"}},
                ]},
                {"type": "search_result", "source": "https://example.com", "title": "T",
                 "content": [{"type": "text", "text": "found"}]},
                {"type": "text", "text": "Go on.", "cache_control": {"type": "ephemeral", "ttl": "1h"}},
            ]}),
            json!({"role": "system", "content": "Mid-conversation note."}),
            json!({"role": "user", "content": "Thanks."}),
        ];
        (system, messages)
    }

    #[test]
    fn every_block_survives_a_round_trip() {
        let (system, turns) = request();
        let messages = to_messages(Some(system.clone()), turns.clone()).unwrap();
        assert_eq!(messages[0].role(), "system");
        assert_eq!(messages[2].tool_calls()[0].name(), "get_weather");
        assert_eq!(messages[3].tool_call_id(), Some("toolu_1"));
        ctxhost_sdk::sequence::validate(&messages).unwrap();
        let back = from_messages(&messages);
        assert_eq!(back.system, Some(system));
        assert_eq!(back.messages, turns);
    }

    #[test]
    fn moving_a_cache_breakpoint_keeps_the_message() {
        let plain = to_messages(
            None,
            vec![json!({"role": "user", "content": [{"type": "text", "text": "a"}]})],
        );
        let marked = to_messages(
            None,
            vec![
                json!({"role": "user", "content": [{"type": "text", "text": "a",
                       "cache_control": {"type": "ephemeral"}}]}),
            ],
        );
        assert_eq!(plain.unwrap()[0].content(), marked.unwrap()[0].content());
    }

    #[test]
    fn a_changed_turn_loses_its_thinking_and_results_stay_with_their_calls() {
        let (system, turns) = request();
        let mut messages = to_messages(Some(system), turns).unwrap();
        messages[2].tool_calls_mut()[0].set_arguments(r#"{"city":"[shortened]"}"#);
        // An engine's summary in place of the user's first turn, and a rewritten result.
        messages[1] = Message::user("summary of earlier turns");
        messages[3].set_text("[result cleared]");
        let back = from_messages(&messages);
        let assistant = &back.messages[1]["content"];
        assert!(assistant
            .as_array()
            .unwrap()
            .iter()
            .all(|b| b["type"] != "thinking" && b["type"] != "redacted_thinking"));
        assert_eq!(assistant[1]["input"], json!({"city": "[shortened]"}));
        let results = &back.messages[2]["content"];
        assert_eq!(results[0]["type"], "tool_result");
        assert_eq!(results[0]["content"], "[result cleared]");
        assert_eq!(results[0]["is_error"], true);
        assert_eq!(back.messages[0]["content"], "summary of earlier turns");
    }

    #[test]
    fn openai_image_parts_become_image_blocks() {
        let mut user = Message::user("");
        user.set_content_json(&json!([
            {"type": "text", "text": "see"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            {"type": "image_url", "image_url": {"url": "https://example.com/x.png"}},
        ]));
        assert_eq!(
            from_messages(&[user]).messages[0]["content"],
            json!([
                {"type": "text", "text": "see"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
                {"type": "image", "source": {"type": "url", "url": "https://example.com/x.png"}},
            ])
        );
    }
}
