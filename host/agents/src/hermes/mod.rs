//! Hermes Agent (Chat Completions, Bearer auth, no session header; its headers are an OpenAI
//! SDK's). It compacts with its own compressor unless told not to: a side call to its auxiliary
//! model (which may be this gateway) carrying no conversation of its own, one user message that
//! opens with its summarizer's preamble and quotes the turns to summarise. The gateway answers it
//! from the session whose turns it quotes ([`served`]).

pub mod served;

use ctxhost_sdk::Message;

use crate::compaction::{Compaction, Prompt, Recognised};

/// Hermes Agent 0.19.0 (`agent/context_compressor.py`, its summarizer preamble): the call's
/// message begins so.
const PROMPT: &str = "You are a summarization agent creating a context checkpoint.";

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
