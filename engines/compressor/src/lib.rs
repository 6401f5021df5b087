//! # ctxhost-compressor
//!
//! The built-in lossy engine, Hermes Agent's algorithm and more:
//!
//! 1. **When**: `should_compress` on the prompt tokens the provider reported (threshold 0.50 of
//!    the window); `should_compress_preflight` on local counts, plus a rough hygiene check at
//!    0.85 of the window for sessions that grew between turns. After a compression the context
//!    must grow again before the next one (no thrashing).
//! 2. **Prune** (`prune`): outside the protected head (system prompt and first exchange) and
//!    tail, old tool outputs become one-line notes of what the call did, and repeated reads of
//!    a file keep only the latest. If that is enough, no summarizer is called.
//! 3. **Summarize** (`summary`): the middle becomes the structured handoff (Goal, Constraints &
//!    Preferences, Progress, Key Decisions, Files, Next Steps, Critical Context) from
//!    the host's summarizer; a later compression updates the previous summary instead of adding
//!    another. The summary is marked as reference only.
//! 4. **Safety**: the summarizer is the host's `summarize` service, as for any plugin; the host
//!    redacts secrets from every request and every summary, for every engine. When
//!    the configured summarizer fails, the host answers with the offline summary and says why
//!    (reported as `fallback_reason`), and rests it for a cool-down. This engine depends on the
//!    SDK alone: no HTTP client, no async runtime.
//!
//! The tail is chosen by token budget (`target_ratio` of the threshold) with a floor of
//! `protect_last_n` messages, holds the latest user message, and never splits a tool call from
//! its results. Under a caller's size (`CompressOptions::target_tokens`) the budget is spent in
//! the order of `ctxhost_sdk::budget`: the head, the summary (standing facts first), the newest
//! turn; the older verbatim tail gives way first, and a summary over its share is cut by that
//! order, narrative first.

mod compressor;
mod prune;
mod settings;
mod summary;

pub use compressor::{Compressor, Telemetry};
pub use settings::Settings;
pub use summary::{is_summary as is_own_summary, SUMMARY_PREFIX};
