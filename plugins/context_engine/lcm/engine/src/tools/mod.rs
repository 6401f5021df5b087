//! The agent's tools: `lcm_grep`, `lcm_describe`, `lcm_expand`, `lcm_expand_query`.
//!
//! Every answer is a JSON string. Problems the agent can fix (bad arguments, an unknown id)
//! come back as `{"error": "..."}` so the agent can read them and retry; only store failures
//! are engine errors.

mod describe;
mod expand;
mod grep;
mod query;
mod snippet;
mod standing;

use ctxhost_sdk::{EngineError, HostServices};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use crate::settings::Settings;
use ctxhost_lcm_store::Store;

pub const GREP: &str = "lcm_grep";
pub const DESCRIBE: &str = "lcm_describe";
pub const EXPAND: &str = "lcm_expand";
pub const EXPAND_QUERY: &str = "lcm_expand_query";

/// What a tool call may read.
pub struct ToolContext<'a> {
    pub store: &'a Store,
    pub conv: i64,
    pub services: &'a HostServices,
    pub settings: &'a Settings,
}

/// A problem to report to the agent as `{"error": ...}`.
#[derive(Debug)]
pub struct ToolError(pub String);

impl From<String> for ToolError {
    fn from(message: String) -> Self {
        ToolError(message)
    }
}

/// A tool's outcome: an answer, an error for the agent, or an engine failure.
pub type ToolResult = Result<Result<Value, ToolError>, EngineError>;

/// Runs `name` with `args`; `None` when the tool is not one of ours.
pub fn call(
    ctx: &ToolContext<'_>,
    name: &str,
    args: &Value,
) -> Option<Result<String, EngineError>> {
    let outcome = match name {
        GREP => grep::run(ctx, args),
        DESCRIBE => describe::run(ctx, args),
        EXPAND => expand::run(ctx, args),
        EXPAND_QUERY => query::run(ctx, args),
        _ => return None,
    };
    Some(outcome.map(|answer| match answer {
        Ok(value) => value.to_string(),
        Err(ToolError(message)) => json!({ "error": format!("{name}: {message}") }).to_string(),
    }))
}

/// Reads a tool's arguments (an object, or the JSON text of one as models sometimes send).
pub fn parse_args<T: DeserializeOwned>(args: &Value) -> Result<T, ToolError> {
    let value = match args {
        Value::String(text) => serde_json::from_str(text)
            .map_err(|e| ToolError(format!("arguments are not a JSON object: {e}")))?,
        Value::Null => json!({}),
        other => other.clone(),
    };
    serde_json::from_value(value).map_err(|e| ToolError(format!("bad arguments: {e}")))
}

/// The OpenAI function schemas of the tools.
pub fn schemas() -> Vec<Value> {
    vec![
        function(
            GREP,
            "Search everything said in this conversation, including turns that were summarized \
             out of the context. Returns matches with their id (msg_<seq> or sum_<hex>), a \
             snippet, the sequence number and, for messages, the summary that covers them now; \
             and the standing rules, constraints, facts, goals and preferences the matches \
             state (search a subject such as \"budget\" or a value), with every value the \
             subject was given and which one is current.",
            json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "Words to find (full_text) or a regular expression (regex)."},
                    "mode": {"type": "string", "enum": ["full_text", "regex"], "default": "full_text"},
                    "scope": {"type": "string", "enum": ["messages", "summaries", "both"], "default": "both"},
                    "since_seq": {"type": "integer", "description": "Only sequence numbers at or after this."},
                    "before_seq": {"type": "integer", "description": "Only sequence numbers before this."},
                    "limit": {"type": "integer", "default": 50, "minimum": 1, "maximum": 200},
                    "offset": {"type": "integer", "default": 0, "minimum": 0},
                    "sort": {"type": "string", "enum": ["recency", "relevance"], "default": "recency"}
                },
                "required": ["pattern"]
            }),
        ),
        function(
            DESCRIBE,
            "Show a summary's full text and metadata (kind, depth, tokens, covered range, source \
             messages or child summaries, parent summaries), or a stored message's metadata.",
            json!({
                "type": "object",
                "properties": {
                    "id": {"type": "string", "description": "A summary id (sum_<hex>) or message id (msg_<seq>)."}
                },
                "required": ["id"]
            }),
        ),
        function(
            EXPAND,
            "Recover the original messages under a summary, verbatim, through condensed \
             summaries down to the leaves. Paginated by token budget: call again with \
             next_offset while it is not null.",
            json!({
                "type": "object",
                "properties": {
                    "id": {"type": "string", "description": "A summary id (sum_<hex>) or message id (msg_<seq>)."},
                    "max_tokens": {"type": "integer", "minimum": 1, "description": "Token budget of this page."},
                    "offset": {"type": "integer", "default": 0, "minimum": 0, "description": "Index of the first message to return."}
                },
                "required": ["id"]
            }),
        ),
        function(
            EXPAND_QUERY,
            "Answer a question from the original turns: gathers the messages matching `query` \
             (or under `ids`) and asks the summarizer to answer `prompt` from them, citing ids. \
             When no model is available it returns the most relevant excerpts instead.",
            json!({
                "type": "object",
                "properties": {
                    "prompt": {"type": "string", "description": "The question to answer."},
                    "query": {"type": "string", "description": "Words to find the relevant turns."},
                    "ids": {"type": "array", "items": {"type": "string"}, "description": "Summary or message ids to read instead of searching."},
                    "max_tokens": {"type": "integer", "minimum": 16, "description": "Size of the answer."}
                },
                "required": ["prompt"]
            }),
        ),
    ]
}

fn function(name: &str, description: &str, parameters: Value) -> Value {
    json!({
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters}
    })
}
