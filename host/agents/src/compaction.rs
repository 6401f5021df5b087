//! An agent's own compaction request, recognised ([`Agent::compaction`]) only in the shape that
//! agent sends it: its
//! request metadata first (Codex's turn metadata), then the role and position of its prompt
//! (the last user message, or a text block of its own at the end of it), the Responses
//! `compaction_trigger` item, or the compact route. A phrase inside a user's own words is never
//! one: a user who quotes a summary request gets the model's answer.

use ctxhost_sdk::{Content, Message};
use ctxhost_wire::responses::{carried_items, set_carried_items};
use http::HeaderMap;
use serde_json::{Map, Value};

use crate::Agent;

/// An agent's own compaction request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compaction {
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
    /// Hermes Agent's context compressor: a side call of one user message asking for a
    /// checkpoint summary of the turns it quotes.
    HermesCompressor,
}

impl Compaction {
    /// The kind's name (logs, the `x-ctxhost-client-compaction` header, metrics).
    pub fn as_str(self) -> &'static str {
        match self {
            Compaction::CodexHandoff => "codex_handoff",
            Compaction::CompactionTrigger => "compaction_trigger",
            Compaction::CompactRoute => "compact_route",
            Compaction::ClaudeSummary => "claude_summary",
            // The name clients and logs have known it by.
            Compaction::HermesCompressor => "hermes_compression",
        }
    }

    /// The agent that compacts so.
    pub fn agent(self) -> Agent {
        match self {
            Compaction::CodexHandoff | Compaction::CompactionTrigger | Compaction::CompactRoute => {
                Agent::Codex
            }
            Compaction::ClaudeSummary => Agent::ClaudeCode,
            Compaction::HermesCompressor => Agent::Hermes,
        }
    }

    /// Whether the agent takes a summary text back (else one `compaction` item).
    pub fn wants_text(self) -> bool {
        !matches!(
            self,
            Compaction::CompactionTrigger | Compaction::CompactRoute
        )
    }

    /// Whether the request is the provider's to compact (its opaque item): with
    /// `client_compaction: passthrough` it goes to the provider as sent.
    pub fn provider_owned(self) -> bool {
        !self.wants_text()
    }

    /// Whether the request is a side call that quotes the turns it compacts instead of
    /// carrying the conversation (it is answered from the session it quotes).
    pub fn is_side_call(self) -> bool {
        self == Compaction::HermesCompressor
    }
}

/// Where a compaction request's prompt sits in its history: the engine takes in the history
/// without it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prompt {
    /// The whole message at this index.
    Message(usize),
    /// The last content block of the message at this index (the user's own words before it).
    LastBlock(usize),
    /// The `compaction_trigger` item ending the last message.
    TriggerItem,
    /// Nothing: the route says it all.
    None,
}

/// An agent's compaction request, and where its prompt sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recognised {
    pub kind: Compaction,
    pub prompt: Prompt,
}

impl Recognised {
    /// Takes the agent's prompt out of `history`, leaving what it asks to compact.
    pub fn take_prompt(&self, history: &mut Vec<Message>) {
        match self.prompt {
            Prompt::Message(index) if index < history.len() => {
                history.remove(index);
            }
            Prompt::LastBlock(index) => {
                if let Some(message) = history.get_mut(index) {
                    if let Some(mut parts) = parts(message) {
                        parts.pop();
                        message.set_content_json(&Value::Array(parts));
                    }
                }
            }
            Prompt::TriggerItem => {
                if let Some(last) = history.last_mut() {
                    let mut items = carried_items(last);
                    if items.last().is_some_and(is_trigger) {
                        items.pop();
                        set_carried_items(last, items);
                    }
                }
            }
            Prompt::Message(_) | Prompt::None => {}
        }
    }
}

/// What a request shows of itself, for telling its compaction.
pub struct Request<'a> {
    pub headers: &'a HeaderMap,
    /// The body's own fields (beside the conversation).
    pub fields: &'a Map<String, Value>,
    pub history: &'a [Message],
    /// It came by `POST /v1/responses/compact`.
    pub compact_route: bool,
}

/// Whether a carried item is a Responses `compaction_trigger`.
pub(crate) fn is_trigger(item: &Value) -> bool {
    item["type"] == "compaction_trigger"
}

/// A message's content blocks, when it has blocks.
pub(crate) fn parts(message: &Message) -> Option<Vec<Value>> {
    match message.content() {
        Content::Json(json) => serde_json::from_str(json).ok(),
        _ => None,
    }
}

/// The text a prompt stands in: a message's plain text, or one text block.
pub(crate) fn block_text(block: &Value) -> Option<&str> {
    (block["type"] == "text" || block["type"] == "input_text")
        .then(|| block["text"].as_str())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(history: &[Message]) -> Request<'_> {
        static HEADERS: std::sync::OnceLock<HeaderMap> = std::sync::OnceLock::new();
        static FIELDS: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
        Request {
            headers: HEADERS.get_or_init(HeaderMap::new),
            fields: FIELDS.get_or_init(Map::new),
            history,
            compact_route: false,
        }
    }

    #[test]
    fn a_trigger_item_is_recognised_and_taken_out() {
        let input = json!([
            {"role": "user", "content": "hi"},
            {"type": "compaction_trigger"},
        ]);
        let mut history = ctxhost_wire::responses::to_messages(None, &input).unwrap();
        let recognised = Agent::Unknown.compaction(&request(&history)).unwrap();
        assert_eq!(recognised.kind, Compaction::CompactionTrigger);
        recognised.take_prompt(&mut history);
        assert_eq!(Agent::Unknown.compaction(&request(&history)), None);
        let back = ctxhost_wire::responses::from_messages(&history).input;
        assert_eq!(back, json!([{"role": "user", "content": "hi"}]));
    }

    #[test]
    fn the_compact_route_is_always_a_compaction() {
        let history = [Message::user("anything")];
        let mut on_route = request(&history);
        on_route.compact_route = true;
        assert_eq!(
            Agent::ClaudeCode.compaction(&on_route).map(|r| r.kind),
            Some(Compaction::CompactRoute)
        );
    }

    #[test]
    fn an_agent_told_by_its_headers_is_held_to_its_own_shapes() {
        let history = [
            Message::system("s"),
            Message::user(
                "You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary",
            ),
        ];
        assert_eq!(
            Agent::Unknown
                .compaction(&request(&history))
                .map(|r| r.kind),
            Some(Compaction::CodexHandoff)
        );
        assert_eq!(Agent::ClaudeCode.compaction(&request(&history)), None);
    }
}
