//! Which of an agent's own compaction requests a request is, told by what the agent sends:
//! the stable opening phrases of each client's summary prompt (versions named beside them),
//! a Responses `compaction_trigger` item, or the compact route.

use crate::responses::carried_items;
use ctxhost_sdk::Message;

/// An agent's own compaction request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientCompaction {
    /// Codex with a custom provider compacts locally: a streamed `POST /v1/responses` whose last
    /// user message is its handoff-summary prompt; it takes the answer's text as the summary.
    CodexHandoff,
    /// Codex against OpenAI: a `POST /v1/responses` whose last input item is
    /// `{"type": "compaction_trigger"}`; it expects exactly one `compaction` output item.
    CompactionTrigger,
    /// `POST /v1/responses/compact` (`{model, input, instructions}` → `{output: [items]}`).
    CompactRoute,
    /// Claude Code's `/compact` and auto-compact: a `/v1/messages` request whose last user
    /// message asks for a summary of the conversation so far; it reads the `<summary>` back.
    ClaudeSummary,
    /// Hermes Agent's context compressor: one user message asking for a checkpoint summary of
    /// the turns it quotes.
    HermesCompression,
}

/// Codex CLI 0.169 (`codex-rs/core/templates/compact/prompt.md`): the prompt begins so.
const CODEX_HANDOFF: &str = "You are performing a CONTEXT CHECKPOINT COMPACTION.";
/// Claude Code 2.1.197: the full-conversation summary prompts (manual `/compact` and
/// auto-compact; the older and the newer wording). Its partial compaction ("... of the RECENT
/// portion of the conversation") keeps earlier messages itself and is not matched.
const CLAUDE_SUMMARY: [&str; 2] = [
    "Your task is to create a detailed summary of the conversation so far, paying close attention to the user's explicit requests and your previous actions.",
    "Your task is to create a detailed summary of this conversation. This summary will be placed at the start of a continuing session",
];
/// Hermes Agent 0.19.0 (`agent/context_compressor.py`, its summarizer preamble): the prompt
/// begins so.
const HERMES_COMPRESSION: &str = "You are a summarization agent creating a context checkpoint.";

impl ClientCompaction {
    /// The kind's name (logs, the `x-ctxhost-client-compaction` header, metrics).
    pub fn as_str(self) -> &'static str {
        match self {
            ClientCompaction::CodexHandoff => "codex_handoff",
            ClientCompaction::CompactionTrigger => "compaction_trigger",
            ClientCompaction::CompactRoute => "compact_route",
            ClientCompaction::ClaudeSummary => "claude_summary",
            ClientCompaction::HermesCompression => "hermes_compression",
        }
    }

    /// Whether the agent takes a summary text back (else one `compaction` item).
    pub fn wants_text(self) -> bool {
        !matches!(
            self,
            ClientCompaction::CompactionTrigger | ClientCompaction::CompactRoute
        )
    }

    /// Whether the request is the provider's to compact (its opaque item): with
    /// `client_compaction: passthrough` it goes to the provider as sent.
    pub fn provider_owned(self) -> bool {
        !self.wants_text()
    }

    /// Whether the request's last message is the agent's prompt (not history): the engine
    /// takes in the history without it.
    pub fn prompt_is_last(self) -> bool {
        self.wants_text()
    }
}

/// The compaction request `history` is, if it is one (on the compact route it always is).
pub fn recognise(history: &[Message], compact_route: bool) -> Option<ClientCompaction> {
    if compact_route {
        return Some(ClientCompaction::CompactRoute);
    }
    let last = history.last()?;
    if carried_items(last)
        .last()
        .is_some_and(|item| item["type"] == "compaction_trigger")
    {
        return Some(ClientCompaction::CompactionTrigger);
    }
    if !last.is_user() {
        return None;
    }
    let text = last.content_text();
    let text = text.trim_start();
    if text.starts_with(CODEX_HANDOFF) {
        Some(ClientCompaction::CodexHandoff)
    } else if text.starts_with(HERMES_COMPRESSION) {
        Some(ClientCompaction::HermesCompression)
    } else if CLAUDE_SUMMARY.iter().any(|phrase| text.contains(phrase)) {
        Some(ClientCompaction::ClaudeSummary)
    } else {
        None
    }
}

/// Takes the `compaction_trigger` item out of the last message (the engine sees the history,
/// not the request to compact it).
pub fn without_trigger(history: &mut [Message]) {
    if let Some(last) = history.last_mut() {
        let mut items = carried_items(last);
        if items
            .last()
            .is_some_and(|item| item["type"] == "compaction_trigger")
        {
            items.pop();
            crate::responses::set_carried_items(last, items);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_clients_prompt_is_told_apart() {
        let with = |text: &str| vec![Message::system("s"), Message::user(text)];
        assert_eq!(
            recognise(&with("You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary for another LLM"), false),
            Some(ClientCompaction::CodexHandoff)
        );
        assert_eq!(
            recognise(&with("CRITICAL: Respond with TEXT ONLY.\n\nYour task is to create a detailed summary of the conversation so far, paying close attention to the user's explicit requests and your previous actions.\nMore"), false),
            Some(ClientCompaction::ClaudeSummary)
        );
        assert_eq!(
            recognise(&with("You are a summarization agent creating a context checkpoint. Treat the conversation turns below as source material"), false),
            Some(ClientCompaction::HermesCompression)
        );
        assert_eq!(recognise(&with("summarize this file for me"), false), None);
        assert_eq!(
            recognise(&with("anything"), true),
            Some(ClientCompaction::CompactRoute)
        );
    }

    #[test]
    fn a_trigger_item_is_recognised_and_taken_out() {
        let input = json!([
            {"role": "user", "content": "hi"},
            {"type": "compaction_trigger"},
        ]);
        let mut history = crate::responses::to_messages(None, &input).unwrap();
        assert_eq!(
            recognise(&history, false),
            Some(ClientCompaction::CompactionTrigger)
        );
        without_trigger(&mut history);
        assert_eq!(recognise(&history, false), None);
        let back = crate::responses::from_messages(&history).input;
        assert_eq!(back, json!([{"role": "user", "content": "hi"}]));
    }
}
