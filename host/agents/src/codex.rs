//! Codex CLI (OpenAI Responses, `POST /v1/responses`, stateless): it names its session in
//! `session-id` and labels its own requests with turn metadata, a JSON envelope in the
//! `x-codex-turn-metadata` header (and, since mid-2026, the same envelope as a string in the
//! body's `client_metadata`) whose `request_kind` is `"compaction"` for its compaction. That
//! label says what a request is; only a Codex that sends none is read by its prompt, in the
//! place it puts it (its last user message, opening with it). Against OpenAI it compacts
//! remotely instead: a `compaction_trigger` item ending the input, or the compact route.
//!
//! Its compacted history keeps a summary text as one user message after the user messages it
//! retains: its summary prefix, then the summary (the marker line last); a `compaction` item
//! is found by the gateway as an item.

use ctxhost_sdk::Message;
use ctxhost_wire::responses::carried_items;
use http::HeaderMap;
use serde_json::{Map, Value};

use crate::compaction::{is_trigger, Compaction, Prompt, Recognised, Request};
use crate::header_starts;
use crate::kept::{at_the_head, ends_with_marker, kept_in, Kept};

/// The header Codex names its session in.
pub const SESSION_HEADER: &str = "session-id";
/// The header (and the `client_metadata` key) carrying Codex's turn metadata.
pub const TURN_METADATA: &str = "x-codex-turn-metadata";
/// Codex's `originator` header and user agent begin so (`codex_cli_rs`, `codex_exec`).
const ORIGINATOR: &str = "codex";
/// The `request_kind` of its compaction requests.
const COMPACTION_KIND: &str = "compaction";

/// Codex CLI 0.169 (`codex-rs/core/templates/compact/prompt.md`): its local compaction prompt
/// begins so.
const PROMPT: &str = "You are performing a CONTEXT CHECKPOINT COMPACTION.";

/// Codex CLI 0.169 (`codex-rs/core/templates/compact/summary_prefix.md`): how the message
/// carrying a summary into its compacted history opens.
const SUMMARY_PREFIX: &str = "Another language model started to solve this problem";

/// Whether Codex sent a request with `headers` and a body with these `fields`.
pub(crate) fn sent(headers: &HeaderMap, fields: &Map<String, Value>) -> bool {
    headers.contains_key(SESSION_HEADER)
        || headers.contains_key(TURN_METADATA)
        || header_starts(headers, "originator", ORIGINATOR)
        || header_starts(headers, "user-agent", ORIGINATOR)
        || body_metadata(fields).is_some()
}

/// The `request_kind` of the request's turn metadata (the header's first, then the body's), if
/// it carries one.
pub fn request_kind(headers: &HeaderMap, fields: &Map<String, Value>) -> Option<String> {
    let header = headers
        .get(TURN_METADATA)
        .and_then(|v| v.to_str().ok())
        .and_then(|text| serde_json::from_str::<Value>(text).ok());
    [header, body_metadata(fields)]
        .into_iter()
        .flatten()
        .find_map(|metadata| metadata["request_kind"].as_str().map(str::to_string))
}

/// The turn metadata in the body's `client_metadata` (a JSON text, or an object).
fn body_metadata(fields: &Map<String, Value>) -> Option<Value> {
    match fields.get("client_metadata")?.get(TURN_METADATA)? {
        Value::String(text) => serde_json::from_str(text).ok(),
        object @ Value::Object(_) => Some(object.clone()),
        _ => None,
    }
}

/// Codex's compaction, if `request` is one: a trigger item ending the input; else what its
/// turn metadata says; else, with no metadata, its prompt as the last user message.
pub(crate) fn compaction(request: &Request<'_>) -> Option<Recognised> {
    let last_index = request.history.len().checked_sub(1)?;
    let last = &request.history[last_index];
    if carried_items(last).last().is_some_and(is_trigger) {
        return Some(Recognised {
            kind: Compaction::CompactionTrigger,
            prompt: Prompt::TriggerItem,
        });
    }
    let handoff = Recognised {
        kind: Compaction::CodexHandoff,
        prompt: Prompt::Message(last_index),
    };
    match request_kind(request.headers, request.fields) {
        Some(kind) => (kind == COMPACTION_KIND && last.is_user()).then_some(handoff),
        None => opens_with_prompt(last).then_some(handoff),
    }
}

/// The handoffs Codex's compacted history keeps: a user message opening with its summary
/// prefix, only user messages before it, ending with the marker line.
pub(crate) fn kept(history: &[Message]) -> Vec<Kept> {
    let place = |index: usize| history[index].is_user() && at_the_head(history, index);
    kept_in(history, place, |text| {
        if !text.trim_start().starts_with(SUMMARY_PREFIX) {
            return None;
        }
        ends_with_marker(text, str::is_empty)
    })
}

fn opens_with_prompt(message: &Message) -> bool {
    message.is_user() && message.content_text().trim_start().starts_with(PROMPT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request<'a>(
        headers: &'a HeaderMap,
        fields: &'a Map<String, Value>,
        history: &'a [Message],
    ) -> Request<'a> {
        Request {
            headers,
            fields,
            history,
            compact_route: false,
        }
    }

    #[test]
    fn the_turn_metadata_says_first_and_the_prompt_only_without_it() {
        let history = [
            Message::system("You are Codex."),
            Message::user(format!("{PROMPT} Create a handoff summary for another LLM")),
        ];
        let none = Map::new();
        let mut headers = HeaderMap::new();
        assert_eq!(
            compaction(&request(&headers, &none, &history)).map(|r| r.kind),
            Some(Compaction::CodexHandoff)
        );
        headers.insert(TURN_METADATA, r#"{"request_kind":"turn"}"#.parse().unwrap());
        assert_eq!(compaction(&request(&headers, &none, &history)), None);
        let reworded = [Message::user("Checkpoint this task for the next model.")];
        headers.insert(
            TURN_METADATA,
            r#"{"request_kind":"compaction"}"#.parse().unwrap(),
        );
        assert_eq!(
            compaction(&request(&headers, &none, &reworded)).map(|r| r.prompt),
            Some(Prompt::Message(0))
        );
        // The body's copy, as a JSON text.
        let fields: Map<String, Value> = serde_json::from_value(json!({"client_metadata":
            {TURN_METADATA: r#"{"request_kind":"compaction"}"#}}))
        .unwrap();
        let headers = HeaderMap::new();
        assert!(sent(&headers, &fields));
        assert_eq!(
            compaction(&request(&headers, &fields, &reworded)).map(|r| r.kind),
            Some(Compaction::CodexHandoff)
        );
    }

    #[test]
    fn a_quoted_prompt_is_no_compaction() {
        let history = [Message::user(format!("Why does Codex say \"{PROMPT}\"?"))];
        let none = Map::new();
        assert_eq!(
            compaction(&request(&HeaderMap::new(), &none, &history)),
            None
        );
    }
}
