//! The scripted retrieval agent: for an engine with lcm's tools, what an agent recovers of a
//! fact with at most three calls: a search for the fact's subject, then the newest matches
//! opened in full.

use serde_json::{json, Value};

use super::subject::Subject;

/// The search tool the agent starts with.
pub const GREP: &str = "lcm_grep";
/// Opens a match in full.
pub const EXPAND: &str = "lcm_expand";
/// A summary's full text and metadata.
pub const DESCRIBE: &str = "lcm_describe";

/// Most tool calls the agent makes per fact.
pub const MAX_CALLS: usize = 3;

/// Whether the subject offers what the agent needs.
pub fn available(tools: &[String]) -> bool {
    tools.iter().any(|t| t == GREP) && tools.iter().any(|t| t == EXPAND || t == DESCRIBE)
}

/// Searches for `subject`, newest first; when the answer does not show `value`, opens the
/// first matches (expand, else describe) until it does or three calls are spent.
pub fn recovers(engine: &mut dyn Subject, tools: &[String], subject: &str, value: &str) -> bool {
    let search = json!({"pattern": subject, "sort": "recency", "limit": 20});
    let Ok(answer) = engine.call_tool(GREP, &search) else {
        return false;
    };
    if answer.contains(value) {
        return true;
    }
    let ids = match_ids(&answer);
    let open = if tools.iter().any(|t| t == EXPAND) {
        EXPAND
    } else {
        DESCRIBE
    };
    ids.iter().take(MAX_CALLS - 1).any(|id| {
        engine
            .call_tool(open, &json!({ "id": id }))
            .is_ok_and(|answer| answer.contains(value))
    })
}

/// The ids of a search answer's matches, in its order.
fn match_ids(answer: &str) -> Vec<String> {
    let Ok(value) = serde_json::from_str::<Value>(answer) else {
        return Vec::new();
    };
    value
        .get("matches")
        .and_then(Value::as_array)
        .map(|matches| {
            matches
                .iter()
                .filter_map(|m| m.get("id").and_then(Value::as_str).map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}
