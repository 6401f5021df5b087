//! Reading recorded conversations in the formats agents save them in, detected automatically:
//! OpenAI chat messages, Hermes Agent trajectories, Anthropic Messages, Claude Code session logs
//! and Codex rollout files; and writing messages back in one of them. Every error is one line
//! with the file, the line or message number, and what is wrong.

mod anthropic;
mod claude_code;
pub(crate) mod codex;
mod hermes;
mod jsonl;
mod openai;
mod origin;
mod times;
mod write;

pub use times::message_times;
pub use write::{write, OutputFormat};

use std::path::Path;
use std::str::FromStr;

use ctxhost_sdk::sequence::{self, SequenceError};
use ctxhost_sdk::{Message, ToolCall};
use serde_json::Value;

/// Text to write, and what could not be written in that format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub text: String,
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{location}: {message}")]
pub struct TranscriptError {
    pub location: String,
    pub message: String,
}

impl TranscriptError {
    pub(crate) fn new(location: impl Into<String>, message: impl Into<String>) -> Self {
        TranscriptError {
            location: location.into(),
            message: message.into(),
        }
    }
}

/// A transcript format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OpenAI chat messages: a JSON array, `{"messages": [...]}`, or JSON Lines.
    OpenAi,
    /// Hermes Agent trajectories: `{"conversations": [{"from", "value"}, ...]}` (JSONL: the first
    /// line is the session).
    Hermes,
    /// Anthropic Messages: content blocks with `tool_use` / `tool_result`, optional top-level
    /// `system`; read and written back losslessly.
    Anthropic,
    /// Claude Code session logs (`~/.claude/projects/<project>/<session>.jsonl`): one entry per
    /// line, the conversation being the `parentUuid` chain that ends at the last message.
    ClaudeCode,
    /// Codex rollout files (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`): `session_meta`,
    /// `response_item`, `event_msg`, `turn_context` and `compacted` lines (or bare items in the
    /// oldest rollouts).
    Codex,
}

impl Format {
    /// Every format, in the order help texts list them.
    pub const ALL: [Format; 5] = [
        Format::OpenAi,
        Format::Hermes,
        Format::Anthropic,
        Format::ClaudeCode,
        Format::Codex,
    ];

    /// The name the command line uses.
    pub fn name(self) -> &'static str {
        match self {
            Format::OpenAi => "openai",
            Format::Hermes => "hermes",
            Format::Anthropic => "anthropic",
            Format::ClaudeCode => "claude-code",
            Format::Codex => "codex",
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Format::ALL
            .into_iter()
            .find(|format| format.name() == text)
            .ok_or_else(|| {
                let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
                format!("unknown format `{text}`; use {}", names.join(", "))
            })
    }
}

/// A transcript as read: its messages and the format they were read from.
#[derive(Debug, Clone, PartialEq)]
pub struct Transcript {
    pub messages: Vec<Message>,
    pub format: Format,
}

/// The roles a chat transcript may use.
const ROLES: &[&str] = &[
    "system",
    "developer",
    "user",
    "assistant",
    "tool",
    "function",
];

/// Reads a transcript file (`-` for standard input), detecting its format unless `format` is
/// given, and checks that it is a valid chat sequence.
pub fn read(path: &Path, format: Option<Format>) -> Result<Vec<Message>, TranscriptError> {
    read_transcript(path, format).map(|transcript| transcript.messages)
}

/// [`read`], also saying which format the file was read as.
pub fn read_transcript(path: &Path, format: Option<Format>) -> Result<Transcript, TranscriptError> {
    let name = path.display().to_string();
    let bytes = if path == Path::new("-") {
        let mut buffer = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut buffer).map(|_| buffer)
    } else {
        std::fs::read(path)
    }
    .map_err(|error| TranscriptError::new(&name, format!("cannot read: {error}")))?;
    let text = String::from_utf8(bytes).map_err(|error| {
        TranscriptError::new(
            &name,
            format!(
                "not UTF-8 text (invalid byte at offset {}): expected chat messages as JSON",
                error.utf8_error().valid_up_to()
            ),
        )
    })?;
    parse_transcript(&text, &name, format)
}

/// Parses transcript text; `name` is used in error locations.
pub fn parse(
    text: &str,
    name: &str,
    format: Option<Format>,
) -> Result<Vec<Message>, TranscriptError> {
    parse_transcript(text, name, format).map(|transcript| transcript.messages)
}

/// [`parse`], also saying which format the text was read as.
pub fn parse_transcript(
    text: &str,
    name: &str,
    format: Option<Format>,
) -> Result<Transcript, TranscriptError> {
    let text = text.trim_start_matches('\u{feff}');
    if text.trim().is_empty() {
        return Err(TranscriptError::new(
            name,
            "the file is empty: expected a JSON array of chat messages, or one message per line (JSONL)",
        ));
    }
    let (format, document) = match format {
        Some(format) => (format, None),
        None => detect_document(text),
    };
    let messages = match (format, document) {
        // The array detection already parsed: read it, rather than parse the text again.
        (Format::OpenAi, Some(Value::Array(array))) => openai::from_array(array, name)?,
        (format, _) => parse_as(format, text, name)?,
    };
    check(&messages, name)?;
    Ok(Transcript { messages, format })
}

fn parse_as(format: Format, text: &str, name: &str) -> Result<Vec<Message>, TranscriptError> {
    Ok(match format {
        Format::OpenAi => openai::parse(text, name)?,
        Format::Hermes => hermes::parse(text, name)?,
        Format::Anthropic => anthropic::parse(text, name)?,
        Format::ClaudeCode => claude_code::parse(text, name)?,
        Format::Codex => codex::parse(text, name)?,
    })
}

/// Known roles and a valid chat sequence: the rules every engine relies on.
fn check(messages: &[Message], name: &str) -> Result<(), TranscriptError> {
    if messages.is_empty() {
        return Err(TranscriptError::new(name, "the transcript has no messages"));
    }
    if let Some((index, message)) = messages
        .iter()
        .enumerate()
        .find(|(_, m)| !ROLES.contains(&m.role()))
    {
        return Err(TranscriptError::new(
            format!("{name}: message {}", index + 1),
            format!(
                "unknown role `{}` (expected one of {})",
                message.role(),
                ROLES.join(", ")
            ),
        ));
    }
    sequence::validate(messages).map_err(|error| {
        let index = match &error {
            SequenceError::SystemNotFirst { index }
            | SequenceError::OrphanResult { index, .. }
            | SequenceError::UnansweredCall { index, .. } => *index,
        };
        let problem = error.to_string();
        let problem = problem
            .split_once(": ")
            .map_or(problem.as_str(), |(_, rest)| rest)
            .to_string();
        TranscriptError::new(format!("{name}: message {}", index + 1), problem)
    })
}

/// Guesses the format from the first JSON value (or first line of JSONL).
pub fn detect(text: &str) -> Format {
    detect_document(text).0
}

/// [`detect`], with the document when the whole text parsed as one JSON value.
fn detect_document(text: &str) -> (Format, Option<Value>) {
    let trimmed = text.trim_start();
    if let Ok(document) = serde_json::from_str::<Value>(trimmed) {
        return (detect_value(&document), Some(document));
    }
    let first = trimmed
        .lines()
        .next()
        .and_then(|line| serde_json::from_str(line).ok());
    (first.as_ref().map_or(Format::OpenAi, detect_value), None)
}

/// The format a document (or a JSON Lines file's first line) is in.
fn detect_value(first: &Value) -> Format {
    if hermes::looks_like(first) {
        Format::Hermes
    } else if claude_code::looks_like(first) {
        Format::ClaudeCode
    } else if codex::looks_like(first) {
        Format::Codex
    } else if anthropic::looks_like(first) {
        Format::Anthropic
    } else {
        Format::OpenAi
    }
}

/// An assistant message from its parts: text, tool calls (`content: null` when there is no
/// text) and the reasoning as its `reasoning` field.
pub(crate) fn assistant_message(text: &str, calls: Vec<ToolCall>, reasoning: &[&str]) -> Message {
    let mut message = if calls.is_empty() {
        Message::assistant(text)
    } else {
        let mut message = Message::assistant_tool_calls(calls);
        if !text.is_empty() {
            message.set_text(text);
        }
        message
    };
    if !reasoning.is_empty() {
        message.set_extra_field("reasoning", Some(Value::String(reasoning.join("\n"))));
    }
    message
}

pub(crate) fn json_problem(error: &serde_json::Error) -> String {
    let message = error.to_string();
    let message = message
        .rfind(" at line ")
        .map_or(message.as_str(), |at| &message[..at]);
    if error.is_eof() {
        format!("{message}: the JSON is truncated")
    } else {
        format!("{message}: not valid JSON")
    }
}

/// Parses one JSON document, locating syntax errors at line and column.
pub(crate) fn parse_document(text: &str, name: &str) -> Result<Value, TranscriptError> {
    serde_json::from_str(text).map_err(|error| {
        TranscriptError::new(
            format!("{name}:{}:{}", error.line(), error.column()),
            json_problem(&error),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_sequences_and_roles_are_located() {
        let orphan =
            r#"[{"role":"user","content":"a"},{"role":"tool","tool_call_id":"x","content":"b"}]"#;
        assert_eq!(
            parse(orphan, "t.json", None).unwrap_err().to_string(),
            "t.json: message 2: tool result for `x` has no matching call before it"
        );
        let role = r#"[{"role":"user","content":"a"},{"role":"robot","content":"b"}]"#;
        assert!(parse(role, "t.json", None)
            .unwrap_err()
            .to_string()
            .starts_with("t.json: message 2: unknown role `robot`"));
    }

    #[test]
    fn formats_are_detected() {
        assert_eq!(detect(r#"[{"role":"user","content":"a"}]"#), Format::OpenAi);
        assert_eq!(
            detect(r#"{"conversations":[{"from":"human","value":"a"}]}"#),
            Format::Hermes
        );
        assert_eq!(
            detect(
                r#"[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"x","input":{}}]}]"#
            ),
            Format::Anthropic
        );
        assert_eq!(
            detect(r#"{"system":"s","messages":[{"role":"user","content":"a"}]}"#),
            Format::Anthropic
        );
        assert_eq!(
            detect("{\"type\":\"summary\",\"summary\":\"s\",\"leafUuid\":\"u\"}\n{}"),
            Format::ClaudeCode
        );
        assert_eq!(
            detect(r#"{"parentUuid":null,"type":"user","message":{"role":"user","content":"a"}}"#),
            Format::ClaudeCode
        );
        assert_eq!(
            detect(
                "{\"timestamp\":\"t\",\"type\":\"session_meta\",\"payload\":{\"id\":\"s\"}}\n{}"
            ),
            Format::Codex
        );
        assert_eq!(
            detect(r#"{"id":"s","timestamp":"t","instructions":null}"#),
            Format::Codex
        );
    }

    #[test]
    fn output_formats_name_a_format_or_the_input_s_own() {
        assert_eq!("same".parse(), Ok(OutputFormat::Same));
        assert_eq!(
            "claude-code"
                .parse::<OutputFormat>()
                .map(|f| f.resolve(Format::OpenAi)),
            Ok(Format::ClaudeCode)
        );
        assert_eq!(
            OutputFormat::default().resolve(Format::Codex),
            Format::OpenAi
        );
        assert!("yaml"
            .parse::<OutputFormat>()
            .unwrap_err()
            .contains("or same"));
    }
}
