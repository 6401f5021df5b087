//! The summarizers ctxhost serves to engines as a host service.
//!
//! - [`OfflineSummarizer`] (the default): deterministic and extractive, no network. It fills
//!   the handoff template (Goal, Standing Facts, Constraints & Preferences, Progress: Done / In
//!   Progress / Blocked, Key Decisions, Files, Next Steps, Critical Context) from the
//!   turns. It lives in the network-free crate `ctxhost-offline-summary` and is re-exported
//!   here.
//! - [`OpenAiSummarizer`]: OpenAI chat completions (`openai`, `openrouter`, and `custom` for
//!   any compatible server such as vLLM, llama.cpp server or Ollama).
//! - [`AnthropicSummarizer`]: Anthropic's Messages API.
//!
//! The LLM clients run on the host's tokio runtime: [`Summarizer::summarize`] is called from
//! a blocking thread (an engine's worker, or `spawn_blocking`) and blocks on the runtime's
//! [`Handle`](tokio::runtime::Handle), never from inside an async task. The runtime must be
//! a multi-thread one (a current-thread runtime does not drive IO for `Handle::block_on`).
//! API keys are read from the environment variable the settings name, at each call, so a
//! missing key is an [`ErrorKind::NotConfigured`](ctxhost_sdk::ErrorKind) error the engine can
//! fall back from (the host's `summarize` service falls back to the offline summary for every
//! engine). An LLM's summary is given back the standing facts (rules, constraints, facts,
//! goals, preferences) of the previous summary and the new turns that it dropped
//! ([`ctxhost_offline_summary::carry`]). Every failure is an [`EngineError`]: `Unavailable` for network, 5xx,
//! timeouts and unusable answers; `NotConfigured` for a missing key; `Failed` for auth errors,
//! unknown models or endpoints, and rejected requests.

use std::sync::Arc;

use ctxhost_config::summarizer::{Provider, SettingsError, SummarizerSettings};
use ctxhost_offline_summary::OfflineSummarizer;
use ctxhost_sdk::{EngineError, SummarizeRequest, Summary};

mod anthropic;
mod client;
pub mod fit;
mod openai;
mod prompt;
mod retry;
mod transport;
pub mod usage;

pub use anthropic::{AnthropicSummarizer, ANTHROPIC_VERSION};
pub use openai::OpenAiSummarizer;
pub use prompt::DEFAULT_INSTRUCTIONS;
pub use retry::RetryPolicy;
pub use transport::{read_capped, redirect_of, CappedReadError};

/// Writes summaries for engines.
pub trait Summarizer: Send + Sync {
    /// Called from a blocking thread (never from inside the tokio runtime).
    fn summarize(&self, request: &SummarizeRequest) -> Result<Summary, EngineError>;
    /// e.g. "offline", "openai:gpt-4o-mini", "custom:llama3@http://127.0.0.1:8080/v1"
    fn describe(&self) -> String;
    /// What its model calls have used so far (a running total); none for a summarizer that
    /// calls no model.
    fn usage(&self) -> usage::SummarizerUsage {
        usage::SummarizerUsage::default()
    }
}

/// The summarizer `settings` describe. LLM clients run their requests on `runtime`.
pub fn build(
    settings: &SummarizerSettings,
    runtime: tokio::runtime::Handle,
) -> Result<Arc<dyn Summarizer>, SettingsError> {
    settings.validate()?;
    Ok(match settings.provider {
        Provider::Offline => Arc::new(OfflineSummarizer),
        Provider::Custom | Provider::Openai | Provider::Openrouter => {
            Arc::new(OpenAiSummarizer::new(settings, runtime)?)
        }
        Provider::Anthropic => Arc::new(AnthropicSummarizer::new(settings, runtime)?),
    })
}

impl Summarizer for OfflineSummarizer {
    fn summarize(&self, request: &SummarizeRequest) -> Result<Summary, EngineError> {
        Ok(self.summary(request))
    }

    fn describe(&self) -> String {
        OfflineSummarizer::NAME.to_string()
    }
}
