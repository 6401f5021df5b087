//! Reading recorded conversations in the formats agents save them in, detected automatically:
//! OpenAI chat messages, Hermes Agent trajectories and Anthropic Messages. Every error is one line
//! with the file, the line or message number, and what is wrong.

mod anthropic;
mod hermes;
mod openai;

use std::path::Path;
use std::str::FromStr;

use ctxhost_sdk::sequence::{self, SequenceError};
use ctxhost_sdk::Message;
use serde_json::Value;

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
    /// `system`.
    Anthropic,
}

impl FromStr for Format {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "openai" => Ok(Format::OpenAi),
            "hermes" => Ok(Format::Hermes),
            "anthropic" => Ok(Format::Anthropic),
            other => Err(format!(
                "unknown format `{other}`; use openai, hermes or anthropic"
            )),
        }
    }
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
    parse(&text, &name, format)
}

/// Parses transcript text; `name` is used in error locations.
pub fn parse(
    text: &str,
    name: &str,
    format: Option<Format>,
) -> Result<Vec<Message>, TranscriptError> {
    let text = text.trim_start_matches('\u{feff}');
    if text.trim().is_empty() {
        return Err(TranscriptError::new(
            name,
            "the file is empty: expected a JSON array of chat messages, or one message per line (JSONL)",
        ));
    }
    let format = match format {
        Some(format) => format,
        None => detect(text),
    };
    let messages = match format {
        Format::OpenAi => openai::parse(text, name)?,
        Format::Hermes => hermes::parse(text, name)?,
        Format::Anthropic => anthropic::parse(text, name)?,
    };
    check(&messages, name)?;
    Ok(messages)
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
    let trimmed = text.trim_start();
    let first: Option<Value> = serde_json::from_str(trimmed).ok().or_else(|| {
        trimmed
            .lines()
            .next()
            .and_then(|line| serde_json::from_str(line).ok())
    });
    let Some(first) = first else {
        return Format::OpenAi;
    };
    if hermes::looks_like(&first) {
        Format::Hermes
    } else if anthropic::looks_like(&first) {
        Format::Anthropic
    } else {
        Format::OpenAi
    }
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
    }
}
