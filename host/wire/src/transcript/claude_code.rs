//! Claude Code session logs (`~/.claude/projects/<project>/<session-id>.jsonl`): one entry per
//! line, `type` `user` / `assistant` (an Anthropic message under `message`), `system`, `summary`,
//! `file-history-snapshot` and others; entries link by `uuid` / `parentUuid`.
//!
//! The conversation is the chain that ends at the last user or assistant entry outside
//! sidechains, followed back by `parentUuid` (a compaction boundary, whose parent is null, ends
//! it as Claude Code's own resume does). Tool results that parallel tool calls left on a sibling
//! branch are brought back next to their calls. Consecutive assistant entries sharing
//! `message.id` (Claude Code writes one content block per entry) are one message. The content
//! converts as Anthropic Messages do ([`crate::anthropic`], losslessly); every line is kept on the
//! messages (see `origin`), so the log can be written back.

use std::collections::{HashMap, HashSet};

use ctxhost_sdk::Message;
use serde_json::{json, Map, Value};

use super::origin::{self, Group, Run};
use super::{jsonl, TranscriptError, Written};
use crate::anthropic;

/// The extra field holding each message's lines.
const KEY: &str = "claude_code";

/// Entry types Claude Code writes (a first line of another type is not taken for one).
const ENTRY_TYPES: &[&str] = &[
    "user",
    "assistant",
    "system",
    "summary",
    "file-history-snapshot",
    "queue-operation",
    "custom-title",
    "progress",
    "attachment",
];

/// Fields of an entry that describe the session rather than the message: copied onto entries
/// written for new messages.
const SESSION_FIELDS: &[&str] = &[
    "parentUuid",
    "isSidechain",
    "userType",
    "cwd",
    "sessionId",
    "version",
    "gitBranch",
    "type",
    "message",
    "uuid",
    "timestamp",
];

pub(super) fn looks_like(first: &Value) -> bool {
    let Value::Object(entry) = first else {
        return false;
    };
    let kind = entry
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    !entry.contains_key("role")
        && ENTRY_TYPES.contains(&kind)
        && ["parentUuid", "sessionId", "leafUuid", "messageId", "uuid"]
            .iter()
            .any(|key| entry.contains_key(*key))
}

pub(super) fn parse(text: &str, name: &str) -> Result<Vec<Message>, TranscriptError> {
    let lines = jsonl::read(text, name)?;
    let numbers: Vec<usize> = lines.iter().map(|line| line.number).collect();
    let values: Vec<Value> = lines.into_iter().map(|line| line.value).collect();
    let groups = groups(&values).map_err(|(at, problem)| {
        TranscriptError::new(format!("{name}:{}", numbers[at]), problem)
    })?;
    if groups.is_empty() {
        return Err(TranscriptError::new(
            name,
            "no user or assistant entry outside sidechains: not a Claude Code session with a conversation",
        ));
    }
    Ok(origin::attach(KEY, &values, groups))
}

fn kind(entry: &Value) -> &str {
    entry
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn is_message(entry: &Value) -> bool {
    matches!(kind(entry), "user" | "assistant")
        && entry.get("message").is_some_and(Value::is_object)
}

fn is_main(entry: &Value) -> bool {
    entry.get("isSidechain") != Some(&Value::Bool(true))
}

fn message_id(entry: &Value) -> Option<&str> {
    entry.pointer("/message/id").and_then(Value::as_str)
}

/// The content blocks of an entry's message (a string is one text block).
fn blocks(entry: &Value) -> Vec<Value> {
    match entry.pointer("/message/content") {
        Some(Value::Array(blocks)) => blocks.clone(),
        Some(Value::String(text)) => vec![json!({"type": "text", "text": text})],
        _ => Vec::new(),
    }
}

/// The `field` of every block of type `block` in an entry.
fn block_ids(entry: &Value, block: &str, field: &str) -> Vec<String> {
    blocks(entry)
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some(block))
        .filter_map(|b| b.get(field).and_then(Value::as_str).map(str::to_string))
        .collect()
}

/// The conversation's entries grouped into messages, with the chain entries between them.
fn groups(entries: &[Value]) -> Result<Vec<Group>, (usize, String)> {
    let Some(leaf) = entries.iter().rposition(|e| is_message(e) && is_main(e)) else {
        return Ok(Vec::new());
    };
    let by_uuid: HashMap<&str, usize> = entries
        .iter()
        .enumerate()
        .filter_map(|(at, e)| e.get("uuid").and_then(Value::as_str).map(|u| (u, at)))
        .collect();
    let mut on_chain = vec![false; entries.len()];
    let mut at = Some(leaf);
    while let Some(here) = at {
        if on_chain[here] {
            break;
        }
        on_chain[here] = true;
        at = entries[here]
            .get("parentUuid")
            .and_then(Value::as_str)
            .and_then(|parent| by_uuid.get(parent).copied());
    }
    let mut members: Vec<usize> = (0..entries.len())
        .filter(|&at| on_chain[at] && is_message(&entries[at]))
        .collect();
    rescue_sibling_results(entries, &on_chain, &mut members);

    let mut groups: Vec<Group> = Vec::new();
    let mut open_assistant: Option<&str> = None;
    for &at in &members {
        let entry = &entries[at];
        let id = (kind(entry) == "assistant")
            .then(|| message_id(entry))
            .flatten();
        match (groups.last_mut(), id) {
            (Some(group), Some(id)) if open_assistant == Some(id) => group.members.push(at),
            _ => groups.push(Group {
                members: vec![at],
                chain: Vec::new(),
                messages: Vec::new(),
            }),
        }
        open_assistant = id;
    }
    for group in &mut groups {
        let lines: Vec<&Value> = group.members.iter().map(|&at| &entries[at]).collect();
        group.messages = convert(&lines).map_err(|problem| (group.members[0], problem))?;
    }
    groups.retain(|group| !group.messages.is_empty());
    // Chain entries (messages, and the system or progress entries between them) belong to the
    // group they precede; results brought back from a sibling branch are not on the chain.
    for at in (0..entries.len()).filter(|&at| on_chain[at]) {
        if let Some(group) = groups
            .iter_mut()
            .find(|g| g.members.iter().max().is_some_and(|&end| end >= at))
        {
            group.chain.push(at);
        }
    }
    Ok(groups)
}

/// Parallel tool calls leave all but one of their results on sibling branches of the chain:
/// results answering a call on the chain that the chain does not answer join it, in file order.
fn rescue_sibling_results(entries: &[Value], on_chain: &[bool], members: &mut Vec<usize>) {
    let calls: HashSet<String> = members
        .iter()
        .flat_map(|&at| block_ids(&entries[at], "tool_use", "id"))
        .collect();
    let answered: HashSet<String> = members
        .iter()
        .flat_map(|&at| block_ids(&entries[at], "tool_result", "tool_use_id"))
        .collect();
    let mut missing: HashSet<String> = calls.difference(&answered).cloned().collect();
    if missing.is_empty() {
        return;
    }
    for (at, entry) in entries.iter().enumerate() {
        if on_chain[at] || !is_message(entry) || !is_main(entry) || kind(entry) != "user" {
            continue;
        }
        let ids = block_ids(entry, "tool_result", "tool_use_id");
        if !ids.is_empty() && ids.iter().all(|id| missing.contains(id)) {
            for id in &ids {
                missing.remove(id);
            }
            members.push(at);
        }
    }
    members.sort_unstable();
}

/// The messages one group's entries hold: an assistant turn's blocks together, or one user
/// entry (its tool results, then its other content).
fn convert(entries: &[&Value]) -> Result<Vec<Message>, String> {
    let Some(first) = entries.first() else {
        return Ok(Vec::new());
    };
    let role = kind(first);
    let content = if role == "assistant" && entries.len() > 1 {
        Value::Array(entries.iter().flat_map(|e| blocks(e)).collect())
    } else {
        first
            .pointer("/message/content")
            .cloned()
            .unwrap_or(Value::Null)
    };
    let turn = vec![json!({ "role": role, "content": content })];
    anthropic::to_messages(None, turn).map_err(|error| error.message)
}

/// Writes messages as a Claude Code session log: the entries of unchanged messages as they were
/// (re-linked when the entry before them was dropped), new entries for the rest.
pub(super) fn write(messages: &[Message]) -> Written {
    let runs = origin::runs(KEY, messages);
    let mut writer = ChainWriter::default();
    let mut notes = Vec::new();
    for (index, run) in runs.iter().enumerate() {
        let intact = run.is_intact(|lines| convert(lines).ok());
        if let Some(origin) = &run.origin {
            for (at, line) in origin.lines.iter().enumerate() {
                if intact || !origin.is_member(at) {
                    writer.push(line.clone(), origin.is_chain(at), false);
                }
            }
        }
        if !intact {
            let template = origin::nearest_member(&runs, index).cloned();
            rebuild(run, template.as_ref(), &mut writer, &mut notes);
        }
        if let Some(origin) = &run.origin {
            for line in &origin.after {
                writer.push(line.clone(), false, false);
            }
        }
    }
    Written {
        text: jsonl::write(&writer.lines),
        notes,
    }
}

/// Lines written so far and the chain through them.
#[derive(Default)]
struct ChainWriter {
    lines: Vec<Value>,
    /// Where each written entry's uuid is.
    written: HashMap<String, usize>,
    /// The last entry on the chain.
    tip: Option<String>,
    /// Where the last new entry is: a kept entry whose parent is before it is re-linked, so
    /// the new entry stays on the chain.
    fence: usize,
}

impl ChainWriter {
    fn push(&mut self, mut line: Value, on_chain: bool, new: bool) {
        // Only entries (objects) link; a stored line of another shape goes out as it came.
        let on_chain = on_chain && line.is_object();
        if on_chain {
            let parent = line.get("parentUuid").and_then(Value::as_str);
            let keep = match parent {
                Some(parent) => self.written.get(parent).is_some_and(|&at| at >= self.fence),
                None => self.tip.is_none(),
            };
            if !keep && !new {
                line["parentUuid"] = self.tip.clone().map_or(Value::Null, Value::String);
            }
        }
        let uuid = line.get("uuid").and_then(Value::as_str).map(str::to_string);
        if let Some(uuid) = &uuid {
            self.written.insert(uuid.clone(), self.lines.len());
        }
        if new {
            self.fence = self.lines.len();
        }
        if on_chain {
            self.tip = uuid.or(self.tip.take());
        }
        self.lines.push(line);
    }
}

/// New entries for a run's messages, one each: the first takes the place (and uuid) of the
/// run's first entry when there was one.
fn rebuild(run: &Run, template: Option<&Value>, writer: &mut ChainWriter, notes: &mut Vec<String>) {
    let originals: Vec<&Value> = run
        .origin
        .as_ref()
        .map(|o| o.member_lines())
        .unwrap_or_default();
    let mut place = originals.first().copied().filter(|e| e.is_object());
    for message in &run.messages {
        if matches!(message.role(), "system" | "developer") {
            notes.push(
                "the system prompt is not written: Claude Code session logs do not hold one"
                    .to_string(),
            );
            continue;
        }
        // Each message alone as an Anthropic turn: a tool message is a user turn with its
        // result, an assistant message keeps its thinking only if the turn is unchanged.
        let converted = anthropic::from_messages(std::slice::from_ref(message));
        let Some(mut body) = converted.messages.into_iter().next() else {
            continue;
        };
        let entry_type = if body["role"] == "assistant" {
            let original = originals.iter().find(|e| kind(e) == "assistant");
            body = assistant_body(message, body["content"].take(), original.copied());
            "assistant"
        } else {
            "user"
        };
        let mut entry = match place.take() {
            Some(original) => {
                let mut entry = original.clone();
                if let Value::Object(fields) = &mut entry {
                    fields.shift_remove("toolUseResult");
                }
                entry
            }
            None => new_entry(template, writer.tip.as_deref(), message),
        };
        entry["parentUuid"] = writer.tip.clone().map_or(Value::Null, Value::String);
        entry["type"] = Value::String(entry_type.to_string());
        entry["message"] = body;
        writer.push(entry, true, true);
    }
}

/// A fresh entry: the session fields of a nearby entry, a uuid derived from the chain and the
/// message.
fn new_entry(template: Option<&Value>, tip: Option<&str>, message: &Message) -> Value {
    let mut fields = Map::new();
    if let Some(Value::Object(template)) = template {
        for (key, value) in template {
            if SESSION_FIELDS.contains(&key.as_str()) {
                fields.insert(key.clone(), value.clone());
            }
        }
    }
    let seed = format!("{}\n{message}", tip.unwrap_or_default());
    fields.insert("isSidechain".into(), Value::Bool(false));
    if !fields.contains_key("sessionId") {
        fields.insert(
            "sessionId".into(),
            Value::String(origin::derived_uuid("session")),
        );
    }
    fields.insert("uuid".into(), Value::String(origin::derived_uuid(&seed)));
    Value::Object(fields)
}

/// The `message` of an assistant entry: the original's fields (id, model, usage...) when the
/// message came from one, with `content`.
fn assistant_body(message: &Message, content: Value, original: Option<&Value>) -> Value {
    match original.and_then(|e| e.get("message")) {
        Some(Value::Object(body)) => {
            let mut body = body.clone();
            body.insert("content".into(), content);
            Value::Object(body)
        }
        _ => {
            let stop = if message.tool_calls().is_empty() {
                "end_turn"
            } else {
                "tool_use"
            };
            let id = origin::derived_uuid(&message.to_string()).replace('-', "");
            json!({
                "id": format!("msg_{id}"),
                "type": "message",
                "role": "assistant",
                "model": "<synthetic>",
                "content": content,
                "stop_reason": stop,
                "stop_sequence": null,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(uuid: &str, parent: Option<&str>, kind: &str, message: Value) -> String {
        json!({
            "parentUuid": parent, "isSidechain": false, "sessionId": "s", "type": kind,
            "message": message, "uuid": uuid, "timestamp": "2025-01-01T00:00:00Z"
        })
        .to_string()
    }

    fn assistant(id: &str, block: Value) -> Value {
        json!({"id": id, "type": "message", "role": "assistant", "model": "m", "content": [block]})
    }

    /// A tool loop with two parallel calls whose first result sits on a sibling branch, a
    /// sidechain and an abandoned branch.
    fn session() -> String {
        [
            json!({"type": "summary", "summary": "t", "leafUuid": "a4"}).to_string(),
            entry("u1", None, "user", json!({"role": "user", "content": "list files"})),
            entry("a1", Some("u1"), "assistant", assistant("m1", json!({"type": "thinking", "thinking": "hm", "signature": "sig"}))),
            entry("a2", Some("a1"), "assistant", assistant("m1", json!({"type": "tool_use", "id": "t1", "name": "ls", "input": {}}))),
            entry("a3", Some("a2"), "assistant", assistant("m1", json!({"type": "tool_use", "id": "t2", "name": "pwd", "input": {}}))),
            entry("r1", Some("a2"), "user", json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.txt"}]})),
            entry("r2", Some("a3"), "user", json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "/", "is_error": true}]})),
            json!({"parentUuid": "r2", "isSidechain": true, "type": "user", "message": {"role": "user", "content": "side"}, "uuid": "s1"}).to_string(),
            entry("x1", Some("u1"), "user", json!({"role": "user", "content": "abandoned"})),
            entry("a4", Some("r2"), "assistant", assistant("m2", json!({"type": "text", "text": "done"}))),
        ]
        .join("\n")
            + "\n"
    }

    #[test]
    fn the_main_chain_becomes_messages() {
        let text = session();
        assert!(looks_like(
            &serde_json::from_str(text.lines().next().unwrap()).unwrap()
        ));
        let messages = parse(&text, "s.jsonl").unwrap();
        let roles: Vec<&str> = messages.iter().map(Message::role).collect();
        assert_eq!(roles, ["user", "assistant", "tool", "tool", "assistant"]);
        assert_eq!(messages[1].tool_calls().len(), 2);
        let content: Value = messages[1].to_value()["content"].clone();
        assert_eq!(
            content[0],
            json!({"type": "thinking", "thinking": "hm", "signature": "sig"})
        );
        assert_eq!(messages[2].tool_call_id(), Some("t1"));
        assert_eq!(messages[4].content_text(), "done");
        ctxhost_sdk::sequence::validate(&messages).unwrap();
    }

    #[test]
    fn an_unchanged_session_is_written_back_byte_for_byte() {
        let text = session();
        let messages = parse(&text, "s.jsonl").unwrap();
        assert_eq!(write(&messages).text, text);
    }

    #[test]
    fn changed_and_new_messages_get_entries_on_the_chain() {
        let text = session();
        let mut messages = parse(&text, "s.jsonl").unwrap();
        // An engine summarised the first turn and shortened a tool result.
        messages[3].set_text("[cleared]");
        messages.splice(0..1, [Message::user("summary of earlier turns")]);
        let written = write(&messages);
        let again = parse(&written.text, "w.jsonl").unwrap();
        let strip = |m: &[Message]| -> Vec<Message> {
            m.iter()
                .map(|m| {
                    let mut m = m.clone();
                    m.set_extra_field(KEY, None);
                    m
                })
                .collect()
        };
        assert_eq!(strip(&again), strip(&messages));
        // The shortened result keeps its entry's uuid and is_error; the summary is new.
        let lines: Vec<Value> = written
            .text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let result = lines.iter().find(|l| l["uuid"] == "r2").unwrap();
        assert_eq!(result["message"]["content"][0]["is_error"], true);
        assert_eq!(result["message"]["content"][0]["content"], "[cleared]");
        let summary = lines
            .iter()
            .find(|l| l["message"]["content"] == "summary of earlier turns")
            .unwrap();
        assert_eq!(summary["parentUuid"], Value::Null);
        assert_eq!(summary["sessionId"], "s");
    }

    #[test]
    fn stored_lines_of_another_shape_do_not_break_writing() {
        let mut message = Message::user("hi");
        message.set_extra_field(
            KEY,
            Some(json!({"group": 0, "lines": [5, "x"], "members": [0], "chain": [0, 1]})),
        );
        let written = write(&[message]);
        let again = parse(&written.text, "w.jsonl").unwrap();
        assert_eq!(again[0].content_text(), "hi");
    }

    #[test]
    fn no_conversation_is_one_line() {
        let only_summary = json!({"type": "summary", "summary": "t", "leafUuid": "x"}).to_string();
        let error = parse(&only_summary, "s.jsonl").unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("s.jsonl: no user or assistant entry"),
            "{error}"
        );
        let broken = format!("{only_summary}\n{{\"type\":");
        assert_eq!(parse(&broken, "s.jsonl").unwrap_err().location, "s.jsonl:2");
    }
}
