//! What the gateway keeps about a session between requests and across restarts.

use ctxhost_sdk::CompressionReport;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

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

    /// The key the provider's prompt cache groups the session's requests by (OpenAI's
    /// `prompt_cache_key`): the same on every request and replica of the session, another for
    /// every other session, and a hash of the key, so nothing of the credential leaves.
    pub fn prompt_cache_key(&self) -> String {
        let mut hasher = Sha256::new();
        // Each part with its length, so no two splits of the same bytes collide.
        for part in [&self.credential, &self.name] {
            hasher.update((part.len() as u64).to_le_bytes());
            hasher.update(part.as_bytes());
        }
        let digest: String = hasher.finalize()[..16]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        format!("ctxhost-{digest}")
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
    /// Prepared in the background when the session neared its threshold, taken in here.
    Background,
    /// The agent's own compaction request, answered from the engine.
    Client,
    /// The session's prompt cache had expired and its context was past the cache-aware
    /// policy's lower threshold: compressed early, the rewrite being free.
    ColdCache,
}

/// What came of a compression (the `outcome` label of `ctxhost_compressions_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompressionOutcome {
    /// Applied: the view is the engine's new one.
    Ok,
    /// Not applied: it saved fewer tokens than `serve.cache.min_tokens_saved`.
    Deferred,
    /// The engine failed; the view stays.
    Failed,
    /// Prepared in the background for a view that has since been replaced.
    Stale,
    /// Prepared in the background, and the engine found nothing to compress yet.
    Unchanged,
}

impl CompressionOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            CompressionOutcome::Ok => "ok",
            CompressionOutcome::Deferred => "deferred",
            CompressionOutcome::Failed => "failed",
            CompressionOutcome::Stale => "stale",
            CompressionOutcome::Unchanged => "unchanged",
        }
    }
}

impl std::fmt::Display for CompressionOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
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
    /// Not applied: it saved fewer tokens than `serve.cache.min_tokens_saved`.
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub deferred: bool,
    /// The gateway replica that ran it (with several on one PostgreSQL database).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub replica: Option<String>,
    /// When it started and ended, Unix milliseconds (by the replica's clock).
    #[serde(default)]
    pub started_at_ms: u64,
    #[serde(default)]
    pub finished_at_ms: u64,
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
    /// Prompt tokens the provider reported, summed over the calls that reported usage.
    #[serde(default)]
    pub reported_prompt_tokens: u64,
    /// Of those, tokens read from the provider's prompt cache.
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Of those, tokens written to the provider's prompt cache.
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// Compressions prepared in the background and taken in.
    #[serde(default)]
    pub background_compressions: u64,
    /// Compressions not applied because they would have saved too little
    /// (`serve.cache.min_tokens_saved`).
    #[serde(default)]
    pub compressions_deferred: u64,
    /// Requests that waited for a compression before going upstream: what they would send
    /// did not fit the window, or compressions run on their requests (`background: false`).
    #[serde(default)]
    pub turns_waited: u64,
    /// Stored summaries and messages the engine brought back into requests.
    #[serde(default)]
    pub recalled_items: u64,
    /// Model calls priced (the model had a price).
    #[serde(default)]
    pub priced_calls: u64,
    /// What the priced calls cost, in millionths of a dollar: their reported usage (cache
    /// reads and writes) at the model's prices.
    #[serde(default)]
    pub cost_microdollars: u64,
    /// What the same calls would have cost with no engine, estimated (the client's whole
    /// history each time, against the same prompt cache), in millionths of a dollar.
    #[serde(default)]
    pub no_engine_cost_microdollars: u64,
}

impl Stats {
    /// The share of reported prompt tokens served from the cache.
    pub fn cache_hit_ratio(&self) -> f64 {
        if self.reported_prompt_tokens == 0 {
            return 0.0;
        }
        self.cache_read_tokens as f64 / self.reported_prompt_tokens as f64
    }

    /// What the engine saved against no engine, in dollars (negative: it cost more).
    pub fn saving_dollars(&self) -> f64 {
        (self.no_engine_cost_microdollars as f64 - self.cost_microdollars as f64) / 1_000_000.0
    }
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
    /// The prompt of the last model call as the gateway counted it (what the cache-aware
    /// policy measures the context's growth from, in the same count as the next request's).
    #[serde(default)]
    pub last_sent_tokens: u64,
    /// A compression being prepared in the background.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<PendingInfo>,
    /// A compression was deferred for saving too little: none is tried again until what goes
    /// upstream reaches this many tokens (0: none deferred).
    #[serde(default)]
    pub deferred_until_tokens: u64,
    pub stats: Stats,
    pub compressions: Vec<CompressionRecord>,
    /// What the engine recalled into the last request (`select_context`); empty when it
    /// recalled nothing or has no such operation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub last_recalled: Vec<ctxhost_sdk::Recalled>,
    /// Bumped at every save: a shared store refuses a record older than the one it holds, and
    /// a replica that finds a newer one stored reloads it.
    #[serde(default)]
    pub revision: u64,
    /// Unix seconds.
    pub created_at: u64,
    pub updated_at: u64,
}

impl SessionRecord {
    /// The engine recalled `recalled` into the request being sent: kept as the last recall and
    /// counted.
    pub fn took_recall(&mut self, recalled: Vec<ctxhost_sdk::Recalled>) {
        self.stats.recalled_items += recalled.len() as u64;
        self.last_recalled = recalled;
    }

    /// The tokens the last recall added to its request.
    pub fn last_recalled_tokens(&self) -> u64 {
        self.last_recalled.iter().map(|item| item.tokens).sum()
    }

    /// The engine's compression of `tokens` changed nothing (it may count fewer tokens than
    /// the provider, which counts the tools): it is not asked again until what goes upstream
    /// has grown by a twentieth of the window, or by `min_saved` when that is more.
    pub fn defer_unchanged(&mut self, tokens: u64, min_saved: u64) {
        self.deferred_until_tokens = tokens + min_saved.max(self.context_length / 20).max(1);
    }

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
            last_sent_tokens: 0,
            deferred_until_tokens: 0,
            pending: None,
            stats: Stats::default(),
            compressions: Vec::new(),
            last_recalled: Vec::new(),
            revision: 0,
            created_at: now,
            updated_at: now,
        }
    }
}

/// Unix milliseconds.
pub fn unix_now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// What the session's status shows of a compression being prepared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingInfo {
    /// Its id (what a gateway looks it up by in a shared database).
    #[serde(default)]
    pub id: u64,
    /// The gateway preparing it (with several on one database).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica: Option<String>,
    /// The request (1-based) that started it.
    pub request: u64,
    /// The lineage messages it stands for.
    pub base_messages: usize,
    /// Unix seconds.
    pub started_at: u64,
}
