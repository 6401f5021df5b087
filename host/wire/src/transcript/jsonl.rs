//! JSON Lines: one JSON value per non-empty line, each error located at its line.

use serde_json::Value;

use super::{json_problem, TranscriptError};

/// One value of a JSON Lines file and the line it was on (1-based).
#[derive(Debug, Clone)]
pub(super) struct Line {
    pub number: usize,
    pub value: Value,
}

/// Every non-empty line parsed as JSON.
pub(super) fn read(text: &str, name: &str) -> Result<Vec<Line>, TranscriptError> {
    let mut lines = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let value = serde_json::from_str(line).map_err(|error| {
            TranscriptError::new(format!("{name}:{}", index + 1), json_problem(&error))
        })?;
        lines.push(Line {
            number: index + 1,
            value,
        });
    }
    Ok(lines)
}

/// Values as JSON Lines: compact, one per line, each line ended.
pub(super) fn write<'a>(values: impl IntoIterator<Item = &'a Value>) -> String {
    let mut text = String::new();
    for value in values {
        text.push_str(&value.to_string());
        text.push('\n');
    }
    text
}
