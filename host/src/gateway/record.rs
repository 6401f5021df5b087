//! What the gateway keeps about a session between requests and across restarts.

use ctxhost_sdk::CompressionReport;
use serde::{Deserialize, Serialize};

use super::conversation::Conversation;

/// A session's identity: the client's credential (hashed) and the session's name. Two
/// credentials never share a session, whatever names they send.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SessionKey {
    /// A hash of the client's `Authorization` (or `x-api-key`) value.
    pub credential: String,
    /// `x-ctxhost-session`, or derived from the conversation's start.
    pub name: String,
}

impl SessionKey {
    /// The id the engine knows the session by: the name, scoped by the credential.
    pub fn engine_session(&self) -> String {
        format!(
            "{}@{}",
            self.name,
            &self.credential[..12.min(self.credential.len())]
        )
    }
}

/// Why a compression ran (as in `ctxhost run`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// `should_compress_preflight` on the request about to go upstream.
    Preflight,
    /// `should_compress` on the prompt tokens the provider reported for the previous call.
    Threshold,
}

/// One compression, as `/ctxhost/sessions/{id}` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompressionRecord {
    /// The request (1-based) it ran before.
    pub request: u64,
    pub trigger: Trigger,
    pub engine: String,
    pub tokens_before: u64,
    pub tokens_after: u64,
    pub messages_before: usize,
    pub messages_after: usize,
    pub elapsed_ms: f64,
    /// Set when the engine failed; the request went upstream with the last good view.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub report: Option<CompressionReport>,
}

/// Running totals.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    /// Requests the client made.
    pub requests: u64,
    /// Model calls made upstream (more than requests when engine tools were answered).
    pub upstream_calls: u64,
    /// Tokens of the histories the client sent, summed over requests.
    pub tokens_received: u64,
    /// Tokens of the prompts sent upstream, summed over model calls.
    pub tokens_sent: u64,
    /// The largest prompt sent upstream in one model call, in tokens.
    #[serde(default)]
    pub peak_prompt_tokens: u64,
    /// Engine tool calls the gateway answered.
    pub engine_tool_calls: u64,
    /// Engine operations that failed.
    pub engine_failures: u64,
    /// Upstream answers that were errors (status >= 400, timeouts, cut streams).
    pub upstream_errors: u64,
    /// Times the client's history did not extend the lineage.
    pub new_lineages: u64,
}

/// Everything kept about one session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    pub key: SessionKey,
    /// The engine serving it.
    pub engine: String,
    pub model: String,
    /// The window the engine works with (the model's, less the request's output budget).
    pub context_length: u64,
    pub conversation: Conversation,
    /// `should_compress` said yes after the last call: compress before the next one.
    pub compress_next: bool,
    /// The prompt tokens of the last model call (reported, else counted).
    pub last_prompt_tokens: u64,
    pub stats: Stats,
    pub compressions: Vec<CompressionRecord>,
    /// Unix seconds.
    pub created_at: u64,
    pub updated_at: u64,
}

impl SessionRecord {
    pub fn new(key: SessionKey, engine: String, model: String, context_length: u64) -> Self {
        let now = unix_now();
        SessionRecord {
            key,
            engine,
            model,
            context_length,
            conversation: Conversation::default(),
            compress_next: false,
            last_prompt_tokens: 0,
            stats: Stats::default(),
            compressions: Vec::new(),
            created_at: now,
            updated_at: now,
        }
    }
}

pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
