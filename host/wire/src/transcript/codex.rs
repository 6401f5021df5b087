//! Codex rollout files (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`): lines
//! `{"timestamp", "type", "payload"}` of type `session_meta`, `response_item` (a Responses API
//! item), `event_msg`, `turn_context` and `compacted`; the oldest rollouts hold a bare session
//! line then bare items.
//!
//! The session's `base_instructions` are the system prompt; `message` items are user, developer
//! and assistant turns; `reasoning`, assistant `message` and call items in a row (`function_call`,
//! `custom_tool_call`, `local_shell_call`) are one assistant message; each `function_call_output`
//! or `custom_tool_call_output` is a tool message. A `compacted` line replaces the conversation
//! before it with its `replacement_history` (or with its summary as a user message). Events and
//! turn contexts are not conversation. Every line is kept on the messages (see `origin`), so the
//! file can be written back.

use std::collections::HashMap;

use ctxhost_sdk::{Message, ToolCall};
use serde_json::{json, Value};

use super::origin::{self, Group, Run};
use super::{assistant_message, jsonl, TranscriptError, Written};

/// The extra field holding each message's lines.
const KEY: &str = "codex";

const LINE_TYPES: &[&str] = &[
    "session_meta",
    "response_item",
    "event_msg",
    "turn_context",
    "compacted",
];

/// What a rollout line is.
enum Line<'a> {
    /// The session: its payload (or the whole line in the oldest rollouts).
    Meta(&'a Value),
    /// A Responses API item.
    Item(&'a Value),
    /// A compaction: the payload.
    Compacted(&'a Value),
    /// Events, turn contexts, state records.
    Other,
}

fn line(value: &Value) -> Line<'_> {
    let kind = value.get("type").and_then(Value::as_str);
    match (value.get("payload"), kind) {
        (Some(payload), Some("session_meta")) => Line::Meta(payload),
        (Some(payload), Some("response_item")) => Line::Item(payload),
        (Some(payload), Some("compacted")) => Line::Compacted(payload),
        (Some(_), Some(_)) => Line::Other,
        _ if is_bare_meta(value) => Line::Meta(value),
        _ if value.get("record_type").is_some() => Line::Other,
        (None, Some(_)) => Line::Item(value),
        _ => Line::Other,
    }
}

/// The first line of the oldest rollouts: `{"id", "timestamp", "instructions", ...}`.
fn is_bare_meta(value: &Value) -> bool {
    value.get("id").is_some()
        && value.get("timestamp").is_some()
        && value.get("type").is_none()
        && value.get("role").is_none()
}

pub(super) fn looks_like(first: &Value) -> bool {
    let wrapped = first.get("payload").is_some_and(Value::is_object)
        && first
            .get("type")
            .and_then(Value::as_str)
            .is_some_and(|kind| LINE_TYPES.contains(&kind));
    wrapped || (is_bare_meta(first) && first.get("instructions").is_some())
}

/// How an item joins the conversation.
#[derive(PartialEq)]
pub(crate) enum Part {
    /// Part of an assistant message (reasoning, its text, its calls).
    Assistant,
    /// A message of its own (a user or developer turn, a call's output).
    Single,
    /// Not conversation (web search calls, ghost snapshots, encrypted compactions).
    Skip,
}

/// An item's type; a bare `{role, content}` (the Responses API's short form) is a message.
fn item_type(item: &Value) -> &str {
    match item.get("type").and_then(Value::as_str) {
        Some(kind) => kind,
        None if item.get("role").is_some() => "message",
        None => "",
    }
}

pub(crate) fn part(item: &Value) -> Part {
    match item_type(item) {
        "message" if item.get("role").and_then(Value::as_str) == Some("assistant") => {
            Part::Assistant
        }
        "message" | "function_call_output" | "custom_tool_call_output" => Part::Single,
        "reasoning" | "function_call" | "custom_tool_call" | "local_shell_call" => Part::Assistant,
        _ => Part::Skip,
    }
}

pub(super) fn parse(text: &str, name: &str) -> Result<Vec<Message>, TranscriptError> {
    let lines = jsonl::read(text, name)?;
    let values: Vec<Value> = lines.iter().map(|line| line.value.clone()).collect();
    let mut groups: Vec<Group> = Vec::new();
    let mut open_assistant = false;
    let new_group = |at: usize| Group {
        members: vec![at],
        chain: Vec::new(),
        messages: Vec::new(),
    };
    for (at, value) in values.iter().enumerate() {
        match line(value) {
            Line::Meta(meta) => {
                let first = !groups.iter().any(|g| is_meta(&values[g.members[0]]));
                if first && instructions(meta).is_some() {
                    groups.push(new_group(at));
                    open_assistant = false;
                }
            }
            Line::Item(item) => match part(item) {
                Part::Assistant if open_assistant => {
                    if let Some(group) = groups.last_mut() {
                        group.members.push(at);
                    }
                }
                Part::Assistant => {
                    groups.push(new_group(at));
                    open_assistant = true;
                }
                Part::Single => {
                    groups.push(new_group(at));
                    open_assistant = false;
                }
                Part::Skip => {}
            },
            Line::Compacted(_) => {
                groups.retain(|g| is_meta(&values[g.members[0]]));
                groups.push(new_group(at));
                open_assistant = false;
            }
            Line::Other => {}
        }
    }
    for group in &mut groups {
        let members: Vec<&Value> = group.members.iter().map(|&at| &values[at]).collect();
        group.messages = convert(&members);
    }
    groups.retain(|group| !group.messages.is_empty());
    if groups.is_empty() {
        return Err(TranscriptError::new(
            name,
            "no conversation items (response_item lines): not a Codex rollout with a conversation",
        ));
    }
    Ok(origin::attach(KEY, &values, groups))
}

fn is_meta(value: &Value) -> bool {
    matches!(line(value), Line::Meta(_))
}

/// The system prompt a session line records: `base_instructions` (text or `{text}`), else the
/// user `instructions` of the oldest rollouts.
fn instructions(meta: &Value) -> Option<String> {
    let text = match meta.get("base_instructions") {
        Some(Value::String(text)) => Some(text.clone()),
        Some(Value::Object(base)) => base.get("text").and_then(Value::as_str).map(str::to_string),
        _ => meta
            .get("instructions")
            .and_then(Value::as_str)
            .map(str::to_string),
    };
    text.filter(|text| !text.trim().is_empty())
}

/// The messages one group's lines hold.
fn convert(members: &[&Value]) -> Vec<Message> {
    let Some(first) = members.first() else {
        return Vec::new();
    };
    match line(first) {
        Line::Meta(meta) => instructions(meta)
            .map(Message::system)
            .into_iter()
            .collect(),
        Line::Compacted(compacted) => match compacted.get("replacement_history") {
            Some(Value::Array(history)) => items(&history.iter().collect::<Vec<_>>()),
            _ => {
                let summary = compacted.get("message").and_then(Value::as_str);
                summary.map(Message::user).into_iter().collect()
            }
        },
        Line::Item(_) => {
            let items_of: Vec<&Value> = members
                .iter()
                .filter_map(|m| match line(m) {
                    Line::Item(item) => Some(item),
                    _ => None,
                })
                .collect();
            items(&items_of)
        }
        Line::Other => Vec::new(),
    }
}

/// Responses API items as messages: assistant items in a row become one message.
pub(crate) fn items(items: &[&Value]) -> Vec<Message> {
    let mut messages = Vec::new();
    let mut assistant: Vec<&Value> = Vec::new();
    for item in items {
        match part(item) {
            Part::Assistant => assistant.push(item),
            Part::Single => {
                if !assistant.is_empty() {
                    messages.push(assistant_turn(&assistant));
                    assistant.clear();
                }
                messages.push(single_message(item));
            }
            Part::Skip => {}
        }
    }
    if !assistant.is_empty() {
        messages.push(assistant_turn(&assistant));
    }
    messages
}

/// The texts of a content list (or a string).
fn texts(content: Option<&Value>) -> Vec<String> {
    match content {
        Some(Value::String(text)) => vec![text.clone()],
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str).map(str::to_string))
            .collect(),
        _ => Vec::new(),
    }
}

fn assistant_turn(items: &[&Value]) -> Message {
    let mut text = Vec::new();
    let mut reasoning = Vec::new();
    let mut calls = Vec::new();
    for item in items {
        let field = |key: &str| item.get(key).and_then(Value::as_str).unwrap_or_default();
        match field("type") {
            "message" => text.extend(texts(item.get("content"))),
            "reasoning" => {
                reasoning.extend(texts(item.get("summary")));
                reasoning.extend(texts(item.get("content")));
            }
            "function_call" => calls.push(ToolCall::new(
                field("call_id"),
                field("name"),
                field("arguments"),
            )),
            "custom_tool_call" => calls.push(ToolCall::new(
                field("call_id"),
                field("name"),
                field("input"),
            )),
            "local_shell_call" => {
                let id = item
                    .get("call_id")
                    .and_then(Value::as_str)
                    .unwrap_or(field("id"));
                let action = item.get("action").cloned().unwrap_or(Value::Null);
                calls.push(ToolCall::new(id, "local_shell", action.to_string()));
            }
            _ => {}
        }
    }
    let reasoning: Vec<&str> = reasoning.iter().map(String::as_str).collect();
    assistant_message(&text.join("\n"), calls, &reasoning)
}

fn single_message(item: &Value) -> Message {
    let field = |key: &str| item.get(key).and_then(Value::as_str).unwrap_or_default();
    if item_type(item) != "message" {
        return Message::tool_result(field("call_id"), output_text(item.get("output")));
    }
    let role = item.get("role").and_then(Value::as_str).unwrap_or("user");
    let parts = match item.get("content") {
        Some(Value::Array(parts)) => parts.clone(),
        other => return Message::new(role, texts(other).join("\n")),
    };
    if parts.iter().all(|p| p.get("text").is_some()) {
        return Message::new(role, texts(item.get("content")).join("\n"));
    }
    let parts: Vec<Value> = parts
        .iter()
        .map(|p| match (p.get("text"), p.get("image_url")) {
            (Some(text), _) => json!({"type": "text", "text": text}),
            (None, Some(url)) => json!({"type": "image_url", "image_url": {"url": url}}),
            _ => p.clone(),
        })
        .collect();
    let mut message = Message::new(role, "");
    message.set_content_json(&Value::Array(parts));
    message
}

/// A call output's text: a string, `{content, success}`, or content items.
fn output_text(output: Option<&Value>) -> String {
    match output {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Object(object)) => match object.get("content") {
            Some(Value::String(text)) => text.clone(),
            other => texts(other).join("\n"),
        },
        Some(Value::Array(_)) => texts(output).join("\n"),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// Writes messages as a Codex rollout: the lines of unchanged messages as they were, new lines
/// for the rest (in the file's own style, wrapped or bare).
pub(super) fn write(messages: &[Message]) -> Written {
    let runs = origin::runs(KEY, messages);
    let bare = runs.iter().filter_map(|r| r.origin.as_ref()).any(|o| {
        o.member_lines()
            .iter()
            .any(|l| l.get("payload").is_none() && l.get("type").is_some())
    });
    let mut out: Vec<Value> = Vec::new();
    let mut kinds: HashMap<String, String> = HashMap::new();
    for (index, run) in runs.iter().enumerate() {
        let intact = run.is_intact(|lines| Some(convert(lines)));
        if let Some(origin) = &run.origin {
            for (at, line) in origin.lines.iter().enumerate() {
                let member = origin.is_member(at);
                if intact || (!member && !is_conversation(line)) {
                    remember_kinds(line, &mut kinds);
                    out.push(line.clone());
                }
            }
        }
        if !intact {
            let template = origin::nearest_member(&runs, index);
            let timestamp = template.and_then(|t| t.get("timestamp")).cloned();
            for line in rebuild(run, &mut kinds) {
                out.push(match line {
                    Rebuilt::Line(line) => line,
                    Rebuilt::Item(item) if bare => item,
                    Rebuilt::Item(item) => wrap("response_item", item, timestamp.as_ref()),
                });
            }
        }
        if let Some(origin) = &run.origin {
            out.extend(origin.after.iter().cloned());
        }
    }
    if !out.first().is_some_and(is_meta) {
        let timestamp = out.iter().find_map(|l| l.get("timestamp")).cloned();
        out.insert(0, new_meta(None, bare, timestamp.as_ref()));
    }
    Written {
        text: jsonl::write(&out),
        notes: Vec::new(),
    }
}

/// Lines that hold conversation: dropped with the messages they held.
fn is_conversation(line: &Value) -> bool {
    match self::line(line) {
        Line::Item(item) => part(item) != Part::Skip,
        Line::Compacted(_) => true,
        Line::Meta(_) | Line::Other => false,
    }
}

/// Call ids and the item type that made them, so outputs are written with the matching type.
fn remember_kinds(line: &Value, kinds: &mut HashMap<String, String>) {
    if let Line::Item(item) = self::line(line) {
        if let (Some(id), Some(kind)) = (
            item.get("call_id").and_then(Value::as_str),
            item.get("type").and_then(Value::as_str),
        ) {
            if kind.ends_with("_call") {
                kinds.insert(id.to_string(), kind.to_string());
            }
        }
    }
}

fn wrap(kind: &str, payload: Value, timestamp: Option<&Value>) -> Value {
    match timestamp {
        Some(timestamp) => json!({"timestamp": timestamp, "type": kind, "payload": payload}),
        None => json!({"type": kind, "payload": payload}),
    }
}

/// A session line; `instructions` as its `base_instructions`.
fn new_meta(instructions: Option<&str>, bare: bool, timestamp: Option<&Value>) -> Value {
    let seed = instructions.unwrap_or_default();
    let mut meta = json!({"id": origin::derived_uuid(seed)});
    if let Some(timestamp) = timestamp {
        meta["timestamp"] = timestamp.clone();
    }
    if let Some(text) = instructions {
        meta["base_instructions"] = json!({ "text": text });
    }
    if bare {
        meta["instructions"] = Value::Null;
        meta
    } else {
        wrap("session_meta", meta, timestamp)
    }
}

/// A line rebuilt from a message: a whole line (a session line, a kept reasoning line) or an
/// item to wrap.
pub(crate) enum Rebuilt {
    Line(Value),
    Item(Value),
}

fn rebuild(run: &Run, kinds: &mut HashMap<String, String>) -> Vec<Rebuilt> {
    let originals: Vec<&Value> = run
        .origin
        .as_ref()
        .map(|o| o.member_lines())
        .unwrap_or_default();
    let original_messages = convert(&originals);
    let mut out = Vec::new();
    for message in &run.messages {
        match message.role() {
            "system" => {
                let text = message.content_text();
                let meta = originals.iter().find(|l| is_meta(l)).map(|&l| {
                    let mut line = l.clone();
                    let meta = if line.get("payload").is_some() {
                        &mut line["payload"]
                    } else {
                        &mut line
                    };
                    if meta.is_object() {
                        meta["base_instructions"] = json!({ "text": text });
                    }
                    line
                });
                let bare = originals.iter().any(|l| l.get("payload").is_none());
                out.push(Rebuilt::Line(
                    meta.unwrap_or_else(|| new_meta(Some(&text), bare, None)),
                ));
            }
            _ => out.extend(message_items(
                message,
                &originals,
                &original_messages,
                kinds,
            )),
        }
    }
    out
}

/// A user, developer, assistant or tool message as Responses items: an assistant's reasoning
/// (the original lines of `originals` when it did not change), text and calls (with the item
/// type each call had, remembered in `kinds` for its output).
pub(crate) fn message_items(
    message: &Message,
    originals: &[&Value],
    original_messages: &[Message],
    kinds: &mut HashMap<String, String>,
) -> Vec<Rebuilt> {
    let mut out = Vec::new();
    match message.role() {
        "assistant" => assistant_items(message, originals, original_messages, kinds, &mut out),
        "tool" => {
            let id = message.tool_call_id().unwrap_or_default();
            let kind = match kinds.get(id).map(String::as_str) {
                Some("custom_tool_call") => "custom_tool_call_output",
                _ => "function_call_output",
            };
            out.push(Rebuilt::Item(json!({
                "type": kind, "call_id": id, "output": message.content_text()
            })));
        }
        role => out.push(Rebuilt::Item(json!({
            "type": "message", "role": role, "content": content_items(message, "input_text")
        }))),
    }
    out
}

/// A message's content as Responses content items (`kind` for text).
fn content_items(message: &Message, kind: &str) -> Value {
    let value = message.to_value();
    let parts = match value.get("content") {
        Some(Value::Array(parts)) => parts.clone(),
        _ => vec![json!({"type": "text", "text": message.content_text()})],
    };
    Value::Array(
        parts
            .iter()
            .map(|p| match (p.get("text"), p.pointer("/image_url/url")) {
                (Some(text), _) => json!({"type": kind, "text": text}),
                (None, Some(url)) => json!({"type": "input_image", "image_url": url}),
                _ => p.clone(),
            })
            .collect(),
    )
}

/// An assistant message as items: its reasoning (the original lines when it did not change),
/// its text, its calls (with the item type each call had).
fn assistant_items(
    message: &Message,
    originals: &[&Value],
    original_messages: &[Message],
    kinds: &mut HashMap<String, String>,
    out: &mut Vec<Rebuilt>,
) {
    let reasoning = message.extra_fields().get("reasoning").cloned();
    let unchanged = original_messages
        .iter()
        .find(|m| m.is_assistant())
        .is_some_and(|m| m.extra_fields().get("reasoning").cloned() == reasoning);
    let original_item = |kind: &str| items_of_kind(originals, kind);
    if unchanged {
        out.extend(
            original_item("reasoning")
                .into_iter()
                .map(|(l, _)| Rebuilt::Line(l.clone())),
        );
    } else if let Some(Value::String(text)) = &reasoning {
        out.push(Rebuilt::Item(json!({
            "type": "reasoning", "summary": [{"type": "summary_text", "text": text}]
        })));
    }
    if !message.content_text().is_empty() {
        out.push(Rebuilt::Item(json!({
            "type": "message", "role": "assistant", "content": content_items(message, "output_text")
        })));
    }
    for call in message.tool_calls() {
        let id = call.id();
        let kind = ["custom_tool_call", "local_shell_call"]
            .into_iter()
            .find(|kind| {
                original_item(kind).iter().any(|(_, item)| {
                    item.get("call_id").and_then(Value::as_str) == Some(id)
                        || item.get("id").and_then(Value::as_str) == Some(id)
                })
            })
            .unwrap_or("function_call");
        kinds.insert(id.to_string(), kind.to_string());
        out.push(Rebuilt::Item(match kind {
            "custom_tool_call" => json!({
                "type": kind, "call_id": id, "name": call.name(), "input": call.arguments()
            }),
            "local_shell_call" => json!({
                "type": kind, "call_id": id, "status": "completed",
                "action": serde_json::from_str::<Value>(call.arguments()).unwrap_or(Value::Null)
            }),
            _ => json!({
                "type": kind, "name": call.name(), "arguments": call.arguments(), "call_id": id
            }),
        }));
    }
}

/// The lines among `lines` holding an item of type `kind`, with the item.
fn items_of_kind<'a>(lines: &[&'a Value], kind: &str) -> Vec<(&'a Value, &'a Value)> {
    lines
        .iter()
        .filter_map(|&l| match line(l) {
            Line::Item(item) if item.get("type").and_then(Value::as_str) == Some(kind) => {
                Some((l, item))
            }
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wrapped(kind: &str, payload: Value) -> String {
        json!({"timestamp": "2025-10-01T00:00:00.000Z", "type": kind, "payload": payload})
            .to_string()
    }

    fn rollout() -> String {
        [
            wrapped("session_meta", json!({"id": "s", "cwd": "/w", "base_instructions": {"text": "You are Codex."}})),
            wrapped("response_item", json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list"}]})),
            wrapped("event_msg", json!({"type": "user_message", "message": "list"})),
            wrapped("turn_context", json!({"cwd": "/w", "model": "gpt-5-codex"})),
            wrapped("response_item", json!({"type": "reasoning", "summary": [{"type": "summary_text", "text": "look"}], "encrypted_content": "gAAA"})),
            wrapped("response_item", json!({"type": "function_call", "name": "shell", "arguments": "{\"command\":[\"ls\"]}", "call_id": "c1"})),
            wrapped("response_item", json!({"type": "custom_tool_call", "name": "apply_patch", "input": "*** Begin Patch", "call_id": "c2"})),
            wrapped("response_item", json!({"type": "function_call_output", "call_id": "c1", "output": "a.txt"})),
            wrapped("response_item", json!({"type": "custom_tool_call_output", "call_id": "c2", "output": "ok"})),
            wrapped("response_item", json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]})),
            wrapped("event_msg", json!({"type": "token_count"})),
        ]
        .join("\n")
            + "\n"
    }

    #[test]
    fn items_become_messages() {
        let text = rollout();
        assert!(looks_like(
            &serde_json::from_str(text.lines().next().unwrap()).unwrap()
        ));
        let messages = parse(&text, "r.jsonl").unwrap();
        let roles: Vec<&str> = messages.iter().map(Message::role).collect();
        assert_eq!(
            roles,
            ["system", "user", "assistant", "tool", "tool", "assistant"]
        );
        assert_eq!(messages[0].content_text(), "You are Codex.");
        assert_eq!(messages[2].tool_calls().len(), 2);
        assert_eq!(messages[2].extra_fields()["reasoning"], "look");
        assert_eq!(messages[4].content_text(), "ok");
        ctxhost_sdk::sequence::validate(&messages).unwrap();
    }

    #[test]
    fn an_unchanged_rollout_is_written_back_byte_for_byte() {
        let text = rollout();
        let messages = parse(&text, "r.jsonl").unwrap();
        assert_eq!(write(&messages).text, text);
    }

    #[test]
    fn changed_messages_are_rebuilt_with_their_item_types() {
        let mut messages = parse(&rollout(), "r.jsonl").unwrap();
        messages[4].set_text("[cleared]");
        messages.splice(1..2, [Message::user("summary")]);
        let written = write(&messages).text;
        let again = parse(&written, "w.jsonl").unwrap();
        let bare = |m: &[Message]| -> Vec<Value> {
            m.iter()
                .map(|m| {
                    let mut m = m.clone();
                    m.set_extra_field(KEY, None);
                    m.to_value()
                })
                .collect()
        };
        assert_eq!(bare(&again), bare(&messages));
        assert!(
            written.contains(
                r#""type":"custom_tool_call_output","call_id":"c2","output":"[cleared]""#
            ),
            "{written}"
        );
        assert!(written.lines().next().unwrap().contains("session_meta"));
    }

    #[test]
    fn a_local_shell_call_stays_one_when_rebuilt() {
        let text = [
            wrapped("session_meta", json!({"id": "s", "base_instructions": {"text": "sys"}})),
            wrapped("response_item", json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "ls"}]})),
            wrapped("response_item", json!({"type": "local_shell_call", "call_id": "c9", "status": "completed", "action": {"type": "exec", "command": ["ls"]}})),
            wrapped("response_item", json!({"type": "function_call_output", "call_id": "c9", "output": {"content": "a.txt", "success": true}})),
        ]
        .join("\n");
        let mut messages = parse(&text, "r.jsonl").unwrap();
        assert_eq!(messages[2].tool_calls()[0].name(), "local_shell");
        assert_eq!(messages[3].content_text(), "a.txt");
        messages[2].tool_calls_mut()[0].set_arguments(r#"{"type":"exec","command":["ls","-a"]}"#);
        let written = write(&messages).text;
        assert!(
            written.contains(r#""type":"local_shell_call","call_id":"c9","status":"completed","action":{"type":"exec","command":["ls","-a"]}"#),
            "{written}"
        );
        assert_eq!(parse(&written, "w.jsonl").unwrap().len(), 4);
    }

    #[test]
    fn a_compaction_replaces_what_came_before() {
        let text = [
            wrapped("session_meta", json!({"id": "s", "base_instructions": {"text": "sys"}})),
            wrapped("response_item", json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "old"}]})),
            wrapped("compacted", json!({"message": "what happened"})),
            wrapped("response_item", json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "new"}]})),
        ]
        .join("\n");
        let messages = parse(&text, "r.jsonl").unwrap();
        let texts: Vec<String> = messages
            .iter()
            .map(|m| m.content_text().into_owned())
            .collect();
        assert_eq!(texts, ["sys", "what happened", "new"]);
        assert_eq!(write(&messages).text, text + "\n");
    }

    #[test]
    fn the_oldest_rollouts_hold_bare_items() {
        let text = [
            json!({"id": "s", "timestamp": "2025-05-01", "instructions": null}).to_string(),
            json!({"record_type": "state"}).to_string(),
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}).to_string(),
            json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hello"}]}).to_string(),
        ]
        .join("\n");
        assert!(looks_like(
            &serde_json::from_str(text.lines().next().unwrap()).unwrap()
        ));
        let messages = parse(&text, "r.jsonl").unwrap();
        assert_eq!(messages.len(), 2);
        assert_eq!(write(&messages).text, text + "\n");
    }
}
