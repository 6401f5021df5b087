//! The cheap phase: old tool outputs become one-line notes of what the call did, repeated reads
//! of the same file keep only the latest, huge tool-call arguments are cut down (staying valid
//! JSON), and old images become a placeholder. Often enough on its own, with no summarizer call.

use std::collections::HashMap;

use ctxhost_sdk::{Content, Message, ToolCall};
use serde_json::Value;

/// Outputs shorter than this are left alone: the note would save little.
const MIN_PRUNE_CHARS: usize = 400;
pub const PRUNED_PREFIX: &str = "[tool output pruned]";
pub const SUPERSEDED_PREFIX: &str = "[superseded]";
pub const IMAGE_PLACEHOLDER: &str = "[image removed by context compression]";
/// Tool-call arguments longer than this (in bytes of JSON) are shrunk...
const LONG_ARGUMENTS: usize = 500;
/// ...by cutting each string inside them to this many characters (Hermes' figures).
const KEEP_ARGUMENT_CHARS: usize = 200;
/// Content-part types that carry an image (OpenAI chat, OpenAI Responses, Anthropic).
const IMAGE_PART_TYPES: &[&str] = &["image_url", "input_image", "image"];

/// What pruning did to a range.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PruneCount {
    pub pruned: usize,
    pub deduplicated: usize,
    /// Tool calls whose arguments were shrunk.
    pub truncated_arguments: usize,
    /// Image parts replaced by a placeholder.
    pub stripped_images: usize,
}

impl PruneCount {
    pub fn any(&self) -> bool {
        self.pruned + self.deduplicated + self.truncated_arguments + self.stripped_images > 0
    }
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
        for call in messages[index].tool_calls_mut() {
            if let Some(shrunk) = shrink_arguments(call.arguments()) {
                call.set_arguments(shrunk);
                count.truncated_arguments += 1;
            }
        }
        count.stripped_images += strip_images(&mut messages[index]);
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

/// Replaces the image parts of every message before the newest user message that carries an
/// image: a screenshot or photo is sent again with every later call otherwise. Returns how many
/// parts were replaced.
pub fn strip_images_before_latest(messages: &mut [Message]) -> usize {
    let Some(latest) = messages
        .iter()
        .rposition(|m| m.is_user() && image_parts(m).is_some())
    else {
        return 0;
    };
    messages[..latest].iter_mut().map(strip_images).sum()
}

/// A message's content parts when at least one is an image.
fn image_parts(message: &Message) -> Option<Vec<Value>> {
    let Content::Json(json) = message.content() else {
        return None;
    };
    let Ok(Value::Array(parts)) = serde_json::from_str::<Value>(json) else {
        return None;
    };
    parts.iter().any(is_image).then_some(parts)
}

fn is_image(part: &Value) -> bool {
    part.get("type")
        .and_then(Value::as_str)
        .is_some_and(|t| IMAGE_PART_TYPES.contains(&t))
}

/// Replaces a message's image parts with a text placeholder; returns how many.
fn strip_images(message: &mut Message) -> usize {
    let Some(parts) = image_parts(message) else {
        return 0;
    };
    let mut stripped = 0;
    let parts: Vec<Value> = parts
        .into_iter()
        .map(|part| {
            if is_image(&part) {
                stripped += 1;
                serde_json::json!({"type": "text", "text": IMAGE_PLACEHOLDER})
            } else {
                part
            }
        })
        .collect();
    message.set_content_json(&Value::Array(parts));
    stripped
}

/// Long tool-call arguments with every long string cut short, or `None` when there is nothing
/// to cut. Arguments that are not JSON are left alone: providers reject a call whose arguments
/// stop being valid JSON, so cutting the raw text is not an option.
fn shrink_arguments(arguments: &str) -> Option<String> {
    if arguments.len() <= LONG_ARGUMENTS {
        return None;
    }
    let mut value: Value = serde_json::from_str(arguments).ok()?;
    if !shrink_strings(&mut value) {
        return None;
    }
    serde_json::to_string(&value).ok()
}

fn shrink_strings(value: &mut Value) -> bool {
    match value {
        Value::String(text) => match text.char_indices().nth(KEEP_ARGUMENT_CHARS) {
            Some((cut, _)) => {
                let dropped = text[cut..].chars().count();
                *text = format!("{}…[{dropped} more characters truncated]", &text[..cut]);
                true
            }
            None => false,
        },
        // Every string is visited: no short-circuit.
        Value::Array(items) => {
            items
                .iter_mut()
                .map(shrink_strings)
                .filter(|&cut| cut)
                .count()
                > 0
        }
        Value::Object(map) => {
            map.values_mut()
                .map(shrink_strings)
                .filter(|&cut| cut)
                .count()
                > 0
        }
        _ => false,
    }
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
    fn huge_arguments_shrink_and_stay_json() {
        let content = "line\n".repeat(2000);
        let args = serde_json::json!({"path": "big.py", "content": content, "mode": 420, "old": ["y".repeat(300)]})
            .to_string();
        let mut messages: Vec<Message> = vec![Message::user("go")];
        messages.extend(turn("1", "write_file", &args, "ok"));
        messages.extend(turn("2", "terminal", r#"{"command":"ls"}"#, "a.py"));
        let count = prune(&mut messages, 0..5);
        assert_eq!(count.truncated_arguments, 1);
        let shrunk: Value = serde_json::from_str(messages[1].tool_calls()[0].arguments()).unwrap();
        assert_eq!(shrunk["path"], "big.py");
        assert_eq!(shrunk["mode"], 420);
        assert!(shrunk["old"][0]
            .as_str()
            .unwrap()
            .ends_with("…[100 more characters truncated]"));
        let text = shrunk["content"].as_str().unwrap();
        assert!(
            text.ends_with("…[9800 more characters truncated]"),
            "{text}"
        );
        assert_eq!(
            text.chars().count(),
            200 + "…[9800 more characters truncated]".chars().count()
        );
        // Short and non-JSON arguments are left as they are.
        assert_eq!(
            messages[3].tool_calls()[0].arguments(),
            r#"{"command":"ls"}"#
        );
        assert_eq!(shrink_arguments(&"x".repeat(600)), None);
    }

    fn with_image(text: &str) -> Message {
        let mut message = Message::user("");
        message.set_content_json(&serde_json::json!([
            {"type": "text", "text": text},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
        ]));
        message
    }

    #[test]
    fn images_before_the_latest_one_become_placeholders() {
        let mut messages = vec![
            with_image("first"),
            Message::assistant("seen"),
            with_image("second"),
            Message::assistant("seen too"),
        ];
        assert_eq!(strip_images_before_latest(&mut messages), 1);
        assert_eq!(
            messages[0].content_text(),
            format!("first\n{IMAGE_PLACEHOLDER}")
        );
        assert!(
            image_parts(&messages[2]).is_some(),
            "the latest image stays"
        );
        let mut middle = vec![with_image("old")];
        assert_eq!(prune(&mut middle, 0..1).stripped_images, 1);
        assert!(image_parts(&middle[0]).is_none());
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
