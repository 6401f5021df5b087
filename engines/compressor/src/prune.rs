//! The cheap phase: old tool outputs become one-line notes of what the call did, and repeated
//! reads of the same file keep only the latest. Often enough on its own, with no summarizer call.

use std::collections::HashMap;

use ctxhost_sdk::{Message, ToolCall};
use serde_json::Value;

/// Outputs shorter than this are left alone: the note would save little.
const MIN_PRUNE_CHARS: usize = 400;
pub const PRUNED_PREFIX: &str = "[tool output pruned]";
pub const SUPERSEDED_PREFIX: &str = "[superseded]";

/// What pruning did to a range.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PruneCount {
    pub pruned: usize,
    pub deduplicated: usize,
}

/// Prunes tool results in `messages[range]` (the part outside the protected head and tail).
pub fn prune(messages: &mut [Message], range: std::ops::Range<usize>) -> PruneCount {
    let calls = calls_by_id(messages);
    let mut count = PruneCount::default();
    // Latest read of each file, over the whole conversation: earlier reads are superseded.
    let mut latest_read: HashMap<String, usize> = HashMap::new();
    for (index, message) in messages.iter().enumerate() {
        if let Some(path) = message
            .tool_call_id()
            .and_then(|id| calls.get(id))
            .and_then(read_path)
        {
            latest_read.insert(path, index);
        }
    }
    for index in range {
        let message = &messages[index];
        if !message.is_tool_result() {
            continue;
        }
        let text = message.content_text();
        if text.starts_with(PRUNED_PREFIX) || text.starts_with(SUPERSEDED_PREFIX) {
            continue;
        }
        let call = message.tool_call_id().and_then(|id| calls.get(id));
        let superseded = call
            .and_then(read_path)
            .filter(|path| latest_read.get(path).is_some_and(|&latest| latest > index));
        let note = if let Some(path) = superseded {
            count.deduplicated += 1;
            format!("{SUPERSEDED_PREFIX} {path} was read again later; see the latest read.")
        } else if text.len() >= MIN_PRUNE_CHARS {
            count.pruned += 1;
            format!("{PRUNED_PREFIX} {}", describe(call, &text))
        } else {
            continue;
        };
        messages[index].set_text(note);
    }
    count
}

fn calls_by_id(messages: &[Message]) -> HashMap<String, ToolCall> {
    messages
        .iter()
        .flat_map(|m| m.tool_calls().iter())
        .map(|c| (c.id().to_string(), c.clone()))
        .collect()
}

fn arguments(call: &ToolCall) -> Value {
    serde_json::from_str(call.arguments()).unwrap_or(Value::Null)
}

fn first_string(args: &Value, keys: &[&str]) -> Option<String> {
    keys.iter()
        .find_map(|k| args.get(*k).and_then(Value::as_str))
        .map(str::to_string)
}

/// The file a call reads, for calls that only read.
fn read_path(call: &ToolCall) -> Option<String> {
    let name = call.name().to_lowercase();
    let reads = ["read", "open", "view", "cat"]
        .iter()
        .any(|w| name.contains(w))
        && !["write", "edit", "create", "replace"]
            .iter()
            .any(|w| name.contains(w));
    if !reads {
        return None;
    }
    first_string(&arguments(call), &["path", "file", "file_path", "filename"])
}

/// One line about what a call did: the command and its exit code, the file read or written, the
/// search and its match count, or at least the tool and the output's size.
fn describe(call: Option<&ToolCall>, output: &str) -> String {
    let lines = output.lines().count();
    let size = format!("{lines} line{}", if lines == 1 { "" } else { "s" });
    let Some(call) = call else {
        return format!("a tool returned {size}");
    };
    let name = call.name();
    let args = arguments(call);
    if let Some(command) = first_string(&args, &["command", "cmd", "script"]) {
        let exit = exit_code(output).map_or(String::new(), |code| format!(", exit {code}"));
        return format!(
            "{name} ran `{}`{exit}: {size} of output",
            shorten(&command, 120)
        );
    }
    if let Some(pattern) = first_string(&args, &["pattern", "query", "search_term", "regex"]) {
        return format!(
            "{name} searched for `{}`: {size} of matches",
            shorten(&pattern, 80)
        );
    }
    if let Some(path) = first_string(&args, &["path", "file", "file_path", "filename"]) {
        let lower = name.to_lowercase();
        let verb = if ["write", "edit", "create", "replace"]
            .iter()
            .any(|w| lower.contains(w))
        {
            "wrote"
        } else {
            "read"
        };
        return format!("{name} {verb} {path}: {size}");
    }
    format!("{name} returned {size}")
}

fn exit_code(output: &str) -> Option<i64> {
    let lower = output.to_lowercase();
    for marker in [
        "exit code:",
        "exit code",
        "exit status",
        "returncode:",
        "exited with",
    ] {
        if let Some(at) = lower.rfind(marker) {
            let rest = lower[at + marker.len()..].trim_start_matches([' ', ':', '=']);
            let digits: String = rest
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '-')
                .collect();
            if let Ok(code) = digits.parse() {
                return Some(code);
            }
        }
    }
    None
}

fn shorten(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(id: &str, name: &str, args: &str, output: &str) -> [Message; 2] {
        [
            Message::assistant_tool_calls(vec![ToolCall::new(id, name, args)]),
            Message::tool_result(id, output),
        ]
    }

    #[test]
    fn describes_what_calls_did() {
        let long = "x\n".repeat(300);
        let mut messages: Vec<Message> = vec![Message::user("go")];
        messages.extend(turn(
            "1",
            "terminal",
            r#"{"command":"pytest -q"}"#,
            &format!("{long}exit code: 1"),
        ));
        messages.extend(turn("2", "search_files", r#"{"pattern":"TODO"}"#, &long));
        messages.extend(turn("3", "write_file", r#"{"path":"a.py"}"#, &long));
        let len = messages.len();
        let count = prune(&mut messages, 0..len);
        assert_eq!(count.pruned, 3);
        assert_eq!(
            messages[2].text().unwrap(),
            "[tool output pruned] terminal ran `pytest -q`, exit 1: 301 lines of output"
        );
        assert_eq!(
            messages[4].text().unwrap(),
            "[tool output pruned] search_files searched for `TODO`: 300 lines of matches"
        );
        assert_eq!(
            messages[6].text().unwrap(),
            "[tool output pruned] write_file wrote a.py: 300 lines"
        );
    }

    #[test]
    fn repeated_reads_keep_the_latest() {
        let mut messages: Vec<Message> = vec![Message::user("go")];
        messages.extend(turn("1", "read_file", r#"{"path":"a.py"}"#, "v1"));
        messages.extend(turn("2", "read_file", r#"{"path":"a.py"}"#, "v2"));
        let count = prune(&mut messages, 0..3);
        assert_eq!(count.deduplicated, 1);
        assert!(messages[2].text().unwrap().starts_with(SUPERSEDED_PREFIX));
        assert_eq!(messages[4].text(), Some("v2"));
    }
}
