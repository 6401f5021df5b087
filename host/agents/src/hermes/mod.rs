//! Hermes Agent (Chat Completions, Bearer auth, no session header; its headers are an OpenAI
//! SDK's). It compacts with its own compressor unless told not to: a side call to its auxiliary
//! model (which may be this gateway) carrying no conversation of its own, one user message that
//! opens with its summarizer's preamble and quotes the turns to summarise. The gateway answers it
//! from the session whose turns it quotes ([`served`]). Its compacted history keeps the summary
//! as one message after the head it protects: its summary prefix, the summary (the marker line
//! last), its end marker; or, when no role fits there, merged after the first kept message's
//! own words.

pub mod quoted;
pub mod served;

use ctxhost_sdk::Message;

use crate::compaction::{Compaction, Prompt, Recognised};
use crate::kept::{ends_with_marker, kept_in, Kept};

/// Hermes Agent 0.19.0 (`agent/context_compressor.py`, its summarizer preamble): the call's
/// message begins so.
const PROMPT: &str = "You are a summarization agent creating a context checkpoint.";

/// Hermes Agent 0.19.0 (`SUMMARY_PREFIX` in `agent/context_compressor.py`): how its summary
/// message opens.
const SUMMARY_PREFIX: &str = "[CONTEXT COMPACTION — REFERENCE ONLY]";
/// When the summary is merged into the first kept message, it follows this line.
const MERGED: &str = "[END OF PRIOR CONTEXT — COMPACTION SUMMARY BELOW]";
/// What follows the summary (`_SUMMARY_END_MARKER`, as it begins).
const END: &str = "--- END OF CONTEXT SUMMARY";

/// The handoffs Hermes' compacted history keeps: its summary message (or the summary merged
/// into the first kept message), the marker line last before its end marker.
pub(crate) fn kept(history: &[Message]) -> Vec<Kept> {
    kept_in(
        history,
        |index| history[index].is_user() || history[index].is_assistant(),
        |text| {
            let summary = match text.split_once(MERGED) {
                Some((_, summary)) => summary,
                None => text,
            };
            if !summary.trim_start().starts_with(SUMMARY_PREFIX) {
                return None;
            }
            ends_with_marker(summary, |rest| rest.is_empty() || rest.starts_with(END))
        },
    )
}

/// Hermes' compression call, if `history` is one: user messages only (system ones aside), the
/// last opening with its preamble.
pub(crate) fn compaction(history: &[Message]) -> Option<Recognised> {
    let index = history.len().checked_sub(1)?;
    let last = &history[index];
    let own_conversation = history
        .iter()
        .any(|m| m.is_assistant() || m.is_tool_result());
    let opens = last.is_user() && last.content_text().trim_start().starts_with(PROMPT);
    (opens && !own_conversation).then_some(Recognised {
        kind: Compaction::HermesCompressor,
        prompt: Prompt::Message(index),
    })
}

/// The turns a compression call quotes (its message's text).
pub fn quote(history: &[Message]) -> String {
    history
        .last()
        .map(|m| m.content_text().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn its_compression_call_carries_no_conversation_of_its_own() {
        let call = format!("{PROMPT} Treat the conversation turns below as source material");
        assert_eq!(
            compaction(&[Message::user(call.clone())]).map(|r| r.kind),
            Some(Compaction::HermesCompressor)
        );
        // Pasted into a conversation, it is a user's message like any other.
        let history = [
            Message::user("hi"),
            Message::assistant("hello"),
            Message::user(call),
        ];
        assert_eq!(compaction(&history), None);
        assert_eq!(
            compaction(&[Message::user(format!("What is \"{PROMPT}\"?"))]),
            None
        );
    }
}
