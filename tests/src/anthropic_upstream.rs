//! Answers in Anthropic Messages' shape for the scripted upstream ([`crate::upstream`]): a
//! whole message, or the same message as the event sequence Anthropic streams (every block
//! type's deltas, pings, usage at the start and at the end); and the usage Anthropic's prompt
//! cache would report ([`PromptCache`]).

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};

use serde_json::{json, Value};

use crate::upstream::{Answer, Recorded};

/// A non-streamed Messages answer with `content` (blocks).
pub fn message(content: &Value, usage: Option<Value>) -> Value {
    let stop = if calls_tools(content) {
        "tool_use"
    } else {
        "end_turn"
    };
    let mut answer = json!({
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": "claude-fake",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": null,
    });
    if let Some(usage) = usage {
        answer["usage"] = usage;
    }
    answer
}

/// A whole Messages answer with one text block, with usage.
pub fn messages_reply(text: &str) -> Answer {
    Answer::Json(
        200,
        message(
            &json!([{"type": "text", "text": text}]),
            Some(json!({"input_tokens": 10, "output_tokens": 5})),
        ),
    )
}

fn calls_tools(content: &Value) -> bool {
    content
        .as_array()
        .is_some_and(|b| b.iter().any(|b| b["type"] == "tool_use"))
}

fn pieces(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// The same message as Anthropic streams it.
pub fn events(content: &Value, usage: Option<Value>) -> Vec<(String, Value)> {
    let mut start = message(&json!([]), None);
    start["stop_reason"] = Value::Null;
    let usage = usage.unwrap_or_else(|| json!({"input_tokens": 0, "output_tokens": 0}));
    start["usage"] = json!({"input_tokens": usage["input_tokens"], "output_tokens": 1});
    let mut out = vec![
        (
            "message_start".to_string(),
            json!({"type": "message_start", "message": start}),
        ),
        ("ping".to_string(), json!({"type": "ping"})),
    ];
    let mut push = |name: &str, data: Value| out.push((name.to_string(), data));
    for (index, block) in content.as_array().into_iter().flatten().enumerate() {
        let (empty, deltas): (Value, Vec<Value>) = match block["type"].as_str().unwrap_or("") {
            "text" => {
                let mut empty = json!({"type": "text", "text": ""});
                let mut deltas: Vec<Value> = pieces(block["text"].as_str().unwrap_or(""), 7)
                    .into_iter()
                    .map(|p| json!({"type": "text_delta", "text": p}))
                    .collect();
                if let Some(citations) = block["citations"].as_array() {
                    empty["citations"] = json!([]);
                    deltas.extend(
                        citations
                            .iter()
                            .map(|c| json!({"type": "citations_delta", "citation": c})),
                    );
                }
                (empty, deltas)
            }
            "thinking" => {
                let mut deltas: Vec<Value> = pieces(block["thinking"].as_str().unwrap_or(""), 9)
                    .into_iter()
                    .map(|p| json!({"type": "thinking_delta", "thinking": p}))
                    .collect();
                deltas.push(json!({"type": "signature_delta", "signature": block["signature"]}));
                (
                    json!({"type": "thinking", "thinking": "", "signature": ""}),
                    deltas,
                )
            }
            "tool_use" => {
                let input = block["input"].to_string();
                (
                    json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
                    pieces(&input, 5)
                        .into_iter()
                        .map(|p| json!({"type": "input_json_delta", "partial_json": p}))
                        .collect(),
                )
            }
            _ => (block.clone(), Vec::new()),
        };
        push(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": empty}),
        );
        for delta in deltas {
            push(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": delta}),
            );
        }
        push(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        );
    }
    let stop = if calls_tools(content) {
        "tool_use"
    } else {
        "end_turn"
    };
    push(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
               "usage": usage}),
    );
    push("message_stop", json!({"type": "message_stop"}));
    out
}

/// Answers `content` the way the request asks: streamed or not.
pub fn reply(request: &Recorded, content: Value, usage: Option<Value>) -> Answer {
    if request.json()["stream"].as_bool().unwrap_or(false) {
        Answer::Events(events(&content, usage))
    } else {
        Answer::Json(200, message(&content, usage))
    }
}

/// OpenAI chat messages (a recorded session) as an Anthropic request's `system` and
/// `messages`: tool calls as `tool_use` blocks, each run of tool results as one user message.
pub fn from_openai(messages: &[Value]) -> (Option<Value>, Vec<Value>) {
    let mut system = None;
    let mut out: Vec<Value> = Vec::new();
    let mut in_results = false;
    for message in messages {
        let text = message["content"].as_str().unwrap_or_default();
        match message["role"].as_str().unwrap_or_default() {
            "system" => system = Some(json!(text)),
            "tool" => {
                let block = json!({"type": "tool_result", "tool_use_id": message["tool_call_id"],
                                   "content": text});
                match out.last_mut().filter(|_| in_results) {
                    Some(last) => last["content"].as_array_mut().unwrap().push(block),
                    None => out.push(json!({"role": "user", "content": [block]})),
                }
                in_results = true;
                continue;
            }
            "assistant" => {
                out.push(json!({"role": "assistant", "content": assistant_blocks(message)}))
            }
            role => out.push(json!({"role": role, "content": text})),
        }
        in_results = false;
    }
    (system, out)
}

/// An OpenAI assistant message as Anthropic content: its thinking (a `thinking` block kept in
/// its field of that name, if any), its text, then its tool calls.
pub fn assistant_blocks(message: &Value) -> Value {
    let text = message["content"].as_str().unwrap_or_default();
    let calls = message["tool_calls"].as_array();
    let thinking = message.get("thinking");
    if calls.is_none() && thinking.is_none() {
        return json!(text);
    }
    let mut blocks: Vec<Value> = thinking.into_iter().cloned().collect();
    if !text.is_empty() || calls.is_none() {
        blocks.push(json!({"type": "text", "text": text}));
    }
    for call in calls.into_iter().flatten() {
        let input: Value =
            serde_json::from_str(call["function"]["arguments"].as_str().unwrap_or("{}"))
                .unwrap_or_else(|_| json!({}));
        blocks.push(json!({"type": "tool_use", "id": call["id"],
                           "name": call["function"]["name"], "input": input}));
    }
    Value::Array(blocks)
}

/// How many blocks before a breakpoint Anthropic looks back for a cached prefix.
const CACHE_LOOKBACK: usize = 20;

/// Anthropic's prompt cache as an upstream keeps it, to report usage the way Anthropic computes
/// it. A request is a sequence of blocks (`tools`, then `system`, then each message's content);
/// its prefix up to each block marked `cache_control` (a breakpoint) is written to the cache;
/// a later request reads the longest prefix it shares with one written, found at one of its
/// own breakpoints or up to [`CACHE_LOOKBACK`] blocks before one. Tokens are estimated at four
/// bytes of JSON each; entries do not expire (a bench runs for minutes, not the 5-minute TTL).
#[derive(Debug, Default)]
pub struct PromptCache {
    written: HashSet<u64>,
}

impl PromptCache {
    /// The `usage` of an answer to the Messages body `request` (input tokens after the last
    /// breakpoint, cache reads and writes), recording the request's breakpoints.
    pub fn usage(&mut self, request: &Value, output_tokens: u64) -> Value {
        let blocks = cache_blocks(request);
        let mut prefix = DefaultHasher::new();
        let mut hashes = Vec::with_capacity(blocks.len());
        let mut tokens = Vec::with_capacity(blocks.len());
        let mut breakpoints = Vec::new();
        for (index, (text, breakpoint)) in blocks.iter().enumerate() {
            text.hash(&mut prefix);
            hashes.push(prefix.finish());
            tokens.push((text.len() as u64).div_ceil(4));
            if *breakpoint {
                breakpoints.push(index);
            }
        }
        let read_end = breakpoints
            .iter()
            .filter_map(|&at| {
                (at.saturating_sub(CACHE_LOOKBACK)..=at)
                    .rev()
                    .find(|&k| self.written.contains(&hashes[k]))
                    .map(|k| k + 1)
            })
            .max()
            .unwrap_or(0);
        let written_end = breakpoints.last().map_or(0, |&at| at + 1).max(read_end);
        let read: u64 = tokens[..read_end].iter().sum();
        let created: u64 = tokens[read_end..written_end].iter().sum();
        let input: u64 = tokens[written_end..].iter().sum();
        self.written
            .extend(breakpoints.iter().map(|&at| hashes[at]));
        json!({"input_tokens": input, "cache_creation_input_tokens": created,
               "cache_read_input_tokens": read, "output_tokens": output_tokens})
    }
}

/// A request's cacheable blocks in order, each as the text that identifies it (its role and
/// place in its message, its JSON less `cache_control`) and whether it is a breakpoint.
fn cache_blocks(request: &Value) -> Vec<(String, bool)> {
    let mut blocks = Vec::new();
    let mut push = |place: String, block: &Value| {
        let mut block = block.clone();
        let breakpoint = block
            .as_object_mut()
            .and_then(|b| b.shift_remove("cache_control"))
            .is_some();
        blocks.push((format!("{place}\n{block}"), breakpoint));
    };
    for tool in request["tools"].as_array().into_iter().flatten() {
        push("tool".into(), tool);
    }
    let mut content = |place: &str, value: &Value| match value {
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                push(format!("{place} {index}"), item);
            }
        }
        Value::Null => {}
        other => push(place.to_string(), other),
    };
    content("system", &request["system"]);
    for message in request["messages"].as_array().into_iter().flatten() {
        let role = message["role"].as_str().unwrap_or_default();
        content(role, &message["content"]);
    }
    blocks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_seen_up_to_a_breakpoint_is_read_and_the_rest_written() {
        let mut cache = PromptCache::default();
        let marked = |text: &str| json!({"type": "text", "text": text, "cache_control": {"type": "ephemeral"}});
        let first = json!({"system": [marked("s")], "messages": [
            {"role": "user", "content": [marked("one")]}]});
        let usage = cache.usage(&first, 1);
        assert_eq!(usage["cache_read_input_tokens"], 0);
        assert!(usage["cache_creation_input_tokens"].as_u64().unwrap() > 0);
        // The same prefix, the breakpoint moved on: the old prefix is read, the new part written.
        let second = json!({"system": [marked("s")], "messages": [
            {"role": "user", "content": [{"type": "text", "text": "one"}]},
            {"role": "assistant", "content": "two"},
            {"role": "user", "content": [marked("three")]}]});
        let usage = cache.usage(&second, 1);
        assert_eq!(
            usage["cache_read_input_tokens"],
            first_tokens(&first),
            "{usage}"
        );
        assert_eq!(usage["input_tokens"], 0);
        // A changed start reads nothing.
        let changed = json!({"system": [marked("other")], "messages": second["messages"]});
        assert_eq!(cache.usage(&changed, 1)["cache_read_input_tokens"], 0);
    }

    fn first_tokens(request: &Value) -> u64 {
        cache_blocks(request)
            .iter()
            .map(|(text, _)| (text.len() as u64).div_ceil(4))
            .sum()
    }
}
