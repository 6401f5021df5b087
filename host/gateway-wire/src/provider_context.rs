//! What a request asks the provider itself to do to its context (`context_management`), and
//! the rule that follows: the engine never compacts what the provider already owns.
//!
//! - Edits that clear parts of the history (Anthropic's `clear_tool_uses_*` and
//!   `clear_thinking_*`, except a thinking edit that keeps all thinking): past its own trigger the provider clears old tool results and
//!   thinking, and the usage it reports counts what remains after its edits. The engine's
//!   threshold is judged on that usage (after each call, as always); the gateway's own count
//!   of the unedited view starts a compression only when the view would not fit the window.
//! - Compaction by the provider (Anthropic's `compact_*` edit, OpenAI Responses' `compaction`
//!   entry): the provider summarizes the whole history at its own threshold, so the engine
//!   compresses only a view that would not fit the window.
//!
//! Either way the request goes upstream with `context_management` as the client sent it, and
//! no compression is prepared in the background for it (that is judged on the unedited count).

use serde_json::{Map, Value};

use ctxhost_gateway_state::record::Trigger;

/// Whether an edit leaves the context as it is: a thinking edit that keeps every turn's
/// thinking (`"keep": "all"`, which Claude Code sends on every request with thinking on).
fn clears_nothing(edit: &Value) -> bool {
    edit["type"]
        .as_str()
        .is_some_and(|kind| kind.starts_with("clear_thinking_"))
        && edit["keep"] == "all"
}

/// The provider's own context management a request asks for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ProviderContext {
    /// None: the engine alone keeps the context under the window.
    #[default]
    None,
    /// The provider clears old tool results or thinking.
    Clears,
    /// The provider compacts the history.
    Compacts,
}

impl ProviderContext {
    /// Anthropic Messages: `context_management.edits[].type`.
    pub fn of_anthropic(body: &Map<String, Value>) -> Self {
        let edits = body
            .get("context_management")
            .and_then(|c| c.get("edits"))
            .and_then(Value::as_array);
        let kinds = edits
            .into_iter()
            .flatten()
            .filter(|edit| !clears_nothing(edit))
            .filter_map(|edit| edit["type"].as_str());
        let mut owned = ProviderContext::None;
        for kind in kinds {
            if kind.starts_with("compact_") {
                return ProviderContext::Compacts;
            }
            if kind.starts_with("clear_") {
                owned = ProviderContext::Clears;
            }
        }
        owned
    }

    /// OpenAI Responses: `context_management[].type`.
    pub fn of_responses(body: &Map<String, Value>) -> Self {
        let compacts = body
            .get("context_management")
            .and_then(Value::as_array)
            .is_some_and(|entries| entries.iter().any(|e| e["type"] == "compaction"));
        if compacts {
            ProviderContext::Compacts
        } else {
            ProviderContext::None
        }
    }

    /// Whether the engine compresses for `trigger`, the view being `tokens` of `window`.
    pub fn leaves_to_engine(self, trigger: Trigger, tokens: u64, window: u64) -> bool {
        tokens > window
            || match self {
                ProviderContext::None => true,
                ProviderContext::Clears => trigger == Trigger::Threshold,
                ProviderContext::Compacts => false,
            }
    }

    /// Whether the provider manages some of the context itself.
    pub fn manages(self) -> bool {
        self != ProviderContext::None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn the_provider_owns_what_its_edits_cover() {
        let clears = body(json!({"context_management": {"edits": [
            {"type": "clear_thinking_20251015"}, {"type": "clear_tool_uses_20250919"}]}}));
        let owned = ProviderContext::of_anthropic(&clears);
        assert_eq!(owned, ProviderContext::Clears);
        assert!(owned.leaves_to_engine(Trigger::Threshold, 900, 1000));
        assert!(!owned.leaves_to_engine(Trigger::Preflight, 900, 1000));
        assert!(owned.leaves_to_engine(Trigger::Preflight, 1001, 1000));
        let compacts =
            body(json!({"context_management": {"edits": [{"type": "compact_20260112"}]}}));
        let owned = ProviderContext::of_anthropic(&compacts);
        assert_eq!(owned, ProviderContext::Compacts);
        assert!(!owned.leaves_to_engine(Trigger::Threshold, 900, 1000));
        let responses = body(json!({"context_management": [
            {"type": "compaction", "compact_threshold": 200000}]}));
        assert_eq!(
            ProviderContext::of_responses(&responses),
            ProviderContext::Compacts
        );
        assert_eq!(
            ProviderContext::of_anthropic(&body(json!({}))),
            ProviderContext::None
        );
    }

    #[test]
    fn a_thinking_edit_that_keeps_all_thinking_leaves_the_context_to_the_engine() {
        // What Claude Code sends on every request with thinking on.
        let keeps_all = body(json!({"context_management": {"edits": [
            {"type": "clear_thinking_20251015", "keep": "all"}]}}));
        assert_eq!(
            ProviderContext::of_anthropic(&keeps_all),
            ProviderContext::None
        );
        let keeps_some = body(json!({"context_management": {"edits": [
            {"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 2}}]}}));
        assert_eq!(
            ProviderContext::of_anthropic(&keeps_some),
            ProviderContext::Clears
        );
        let with_tool_uses = body(json!({"context_management": {"edits": [
            {"type": "clear_thinking_20251015", "keep": "all"},
            {"type": "clear_tool_uses_20250919"}]}}));
        assert_eq!(
            ProviderContext::of_anthropic(&with_tool_uses),
            ProviderContext::Clears
        );
    }
}
