//! OpenAI chat messages as a JSON array (or `{"messages": [...]}`) or as JSON Lines.

use ctxhost_sdk::Message;
use serde_json::Value;

use super::{jsonl, parse_document, TranscriptError};

/// Parses transcript text; `name` is used in error locations.
pub(super) fn parse(text: &str, name: &str) -> Result<Vec<Message>, TranscriptError> {
    let fail = |location: String, message: String| TranscriptError { location, message };
    let trimmed = text.trim_start();
    if !trimmed.starts_with('[') && !looks_like_one_document(trimmed) {
        return jsonl::read(text, name)?
            .into_iter()
            .map(|line| {
                Message::from_value(line.value)
                    .map_err(|error| fail(format!("{name}:{}", line.number), error.to_string()))
            })
            .collect();
    }
    let array = match parse_document(trimmed, name)? {
        Value::Array(array) => array,
        Value::Object(mut object) => match object.remove("messages") {
            Some(Value::Array(array)) => array,
            _ => {
                return Err(fail(
                    name.to_string(),
                    "a JSON object, but not a transcript: expected an array of messages or {\"messages\": [...]}".to_string(),
                ))
            }
        },
        _ => {
            return Err(fail(
                name.to_string(),
                "expected a JSON array of chat messages".to_string(),
            ))
        }
    };
    from_array(array, name)
}

/// The messages of a parsed JSON array; `name` is used in error locations.
pub(super) fn from_array(array: Vec<Value>, name: &str) -> Result<Vec<Message>, TranscriptError> {
    array
        .into_iter()
        .enumerate()
        .map(|(i, value)| {
            Message::from_value(value).map_err(|error| TranscriptError {
                location: format!("{name}: message {}", i + 1),
                message: error.to_string(),
            })
        })
        .collect()
}

/// A JSON array with one message per line: valid JSON, and readable and diffable as text.
pub(super) fn write(messages: &[Message]) -> String {
    let mut text = String::from("[");
    for (index, message) in messages.iter().enumerate() {
        text.push_str(if index == 0 { "\n" } else { ",\n" });
        text.push_str(&message.to_string());
    }
    text.push_str("\n]\n");
    text
}

/// A single JSON object spanning several lines (pretty-printed) rather than JSONL.
fn looks_like_one_document(text: &str) -> bool {
    text.starts_with('{')
        && text
            .lines()
            .next()
            .is_some_and(|first| serde_json::from_str::<Value>(first).is_err())
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn reads_arrays_wrappers_and_jsonl() {
        let array = r#"[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]"#;
        assert_eq!(parse(array, "t").unwrap().len(), 2);
        let wrapped = "{\n  \"messages\": [{\"role\":\"user\",\"content\":\"a\"}]\n}";
        assert_eq!(parse(wrapped, "t").unwrap().len(), 1);
        let jsonl =
            "{\"role\":\"user\",\"content\":\"a\"}\n\n{\"role\":\"assistant\",\"content\":\"b\"}\n";
        assert_eq!(parse(jsonl, "t").unwrap().len(), 2);
    }

    #[test]
    fn errors_are_located() {
        assert_eq!(
            parse("[{\"role\":\"user\"", "t.json").unwrap_err().location,
            "t.json:1:15"
        );
        let jsonl = "{\"role\":\"user\",\"content\":\"a\"}\n{\"content\":\"b\"}\n";
        let error = parse(jsonl, "t.jsonl").unwrap_err();
        assert_eq!(error.to_string(), "t.jsonl:2: the message has no \"role\"");
    }
}
