//! What an engine reports about its last compression, in one shape for every engine, so the
//! host reports any engine's work without knowing its private operations.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How far an engine had to go to bring the context down, from the gentlest step to the last
/// resort. Engines that have one way of compressing report [`Escalation::Normal`].
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Escalation {
    /// The engine's normal path (e.g. a summary of the asked size).
    #[default]
    Normal,
    /// A harder attempt after the normal one fell short (e.g. a shorter summary).
    Aggressive,
    /// A deterministic last resort that cannot fail (e.g. truncation).
    Deterministic,
}

/// The account of one compression, answered by [`ContextEngine::last_compression`].
///
/// [`ContextEngine::last_compression`]: crate::ContextEngine::last_compression
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CompressionReport {
    /// Context tokens handed to `compress`, as the engine counted them.
    pub tokens_before: u64,
    /// Context tokens of what `compress` returned.
    pub tokens_after: u64,
    /// Messages handed to `compress`.
    pub messages_before: u64,
    /// Messages `compress` returned.
    pub messages_after: u64,
    /// Who wrote the summary (`offline`, `openai:gpt-4o-mini`, ...); `None` when no summary was
    /// written (pruning alone was enough, or the engine does not summarize).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summarizer: Option<String>,
    /// Calls made to the host's summarizer, answered or not.
    #[serde(default)]
    pub summarizer_calls: u32,
    /// Why the configured summarizer was not the one that answered, when it was not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback_reason: Option<String>,
    /// The furthest escalation level the compression reached.
    #[serde(default)]
    pub escalation: Escalation,
    /// Time the engine spent, in milliseconds.
    #[serde(default)]
    pub elapsed_ms: f64,
    /// Anything engine-specific (pruned results, summaries written, ...).
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub details: Value,
}

/// One session an engine holds state for, as `ctxhost sessions` lists it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionInfo {
    /// The session's id, as given to [`ContextEngine::on_session_start`].
    ///
    /// [`ContextEngine::on_session_start`]: crate::ContextEngine::on_session_start
    pub id: String,
    /// Messages the engine holds for it.
    pub messages: u64,
    /// Tokens of what the model sees for it now, when the engine knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_tokens: Option<u64>,
    /// When it last changed (RFC 3339 or the engine's own clock), when the engine knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated: Option<String>,
    /// Anything engine-specific (summaries, depth, store size, ...).
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub details: Value,
}
