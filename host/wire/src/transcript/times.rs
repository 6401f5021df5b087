//! When each message of a transcript happened, where the transcript says so: Claude Code and
//! Codex write a `timestamp` on every line of their logs, and some exports put one on each
//! message. The times price a replay against the provider's cache, which expires.

use ctxhost_sdk::Message;
use serde_json::Value;

use super::origin;

/// The extra fields holding a message's log lines (Claude Code's and Codex's readers).
const LOG_KEYS: &[&str] = &["claude_code", "codex"];

/// Seconds since the Unix epoch of each message in `messages`, where the transcript says: a
/// message read from log lines has the latest time among its lines, a message with a
/// `timestamp` field of its own (RFC 3339 text, or seconds since the epoch) has that one.
pub fn message_times(messages: &[Message]) -> Vec<Option<f64>> {
    let mut times: Vec<Option<f64>> = messages
        .iter()
        .map(|message| message.extra_fields().get("timestamp").and_then(seconds))
        .collect();
    for key in LOG_KEYS {
        if !messages.iter().any(|m| m.extra_fields().contains_key(*key)) {
            continue;
        }
        let mut at = 0;
        for run in origin::runs(key, messages) {
            let time = run.origin.as_ref().and_then(|origin| {
                origin
                    .member_lines()
                    .into_iter()
                    .filter_map(|line| line.get("timestamp").and_then(seconds))
                    .reduce(f64::max)
            });
            for slot in &mut times[at..at + run.messages.len()] {
                if slot.is_none() {
                    *slot = time;
                }
            }
            at += run.messages.len();
        }
    }
    times
}

/// RFC 3339 text or a number of seconds since the epoch.
fn seconds(value: &Value) -> Option<f64> {
    match value {
        Value::Number(number) => number.as_f64(),
        Value::String(text) => {
            let timestamp: jiff::Timestamp = text.parse().ok()?;
            Some(timestamp.as_millisecond() as f64 / 1000.0)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use super::*;

    #[test]
    fn a_claude_code_logs_lines_time_its_messages() {
        let log = [
            r#"{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","timestamp":"2026-01-01T10:00:00.000Z","message":{"role":"user","content":"hi"}}"#,
            r#"{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s","timestamp":"2026-01-01T10:00:05.500Z","message":{"role":"assistant","content":[{"type":"text","text":"hello"}]}}"#,
            r#"{"type":"user","uuid":"u2","parentUuid":"a1","sessionId":"s","timestamp":"2026-01-01T10:20:00Z","message":{"role":"user","content":"again"}}"#,
        ]
        .join("\n");
        let messages = parse(&log, "log.jsonl", None).unwrap();
        let times = message_times(&messages);
        assert_eq!(times.len(), messages.len());
        let base = 1_767_261_600.0;
        assert_eq!(
            times,
            vec![Some(base), Some(base + 5.5), Some(base + 1200.0)]
        );
    }

    #[test]
    fn a_message_may_carry_its_own_time_and_others_none() {
        let mut timed = Message::user("a");
        timed.set_extra_field("timestamp", Some(serde_json::json!(1000.5)));
        let mut text = Message::assistant("b");
        text.set_extra_field(
            "timestamp",
            Some(serde_json::json!("1970-01-01T00:20:00+00:00")),
        );
        let times = message_times(&[timed, text, Message::user("c")]);
        assert_eq!(times, vec![Some(1000.5), Some(1200.0), None]);
    }
}
