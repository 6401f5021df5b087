//! [`WindowEngine`]: the `ContextEngine` contract and the plugin glue around the algorithm.

use std::time::Instant;

use ctxhost_sdk::{
    sequence, CompressOptions, CompressionReport, ContextEngine, EngineError, EnginePlugin,
    Escalation, HostServices, Manifest, Message, TokenTracker,
};
use serde_json::{json, Value};

use crate::settings::Settings;
use crate::window::{self, Limits};

/// The name users put in `context.engine`.
const NAME: &str = "window";

/// A zero-LLM context engine: keeps the head and a token-budgeted tail, drops the middle behind
/// one marker, and clears old tool outputs in what it keeps.
pub struct WindowEngine {
    /// Token counting and logging come from the host; keep the handle for later calls.
    services: HostServices,
    settings: Settings,
    /// The bookkeeping every engine needs (last usage, window, threshold, compression count):
    /// the SDK keeps it through `ContextEngine::tracker`.
    tracker: TokenTracker,
    /// What the last `compress` call did (`last_compression`).
    last: Option<CompressionReport>,
}

impl WindowEngine {
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    fn limits<'a>(&self, focus_topic: Option<&'a str>) -> Limits<'a> {
        Limits {
            tail_budget: (self.tracker.context_length as f64 * self.settings.tail_ratio) as u64,
            min_tail_messages: self.settings.min_tail_messages,
            keep_tool_outputs: self.settings.keep_tool_outputs,
            focus_topic,
        }
    }
}

impl EnginePlugin for WindowEngine {
    fn manifest() -> Manifest {
        let defaults = Settings::default();
        Manifest::new(
            NAME,
            env!("CARGO_PKG_VERSION"),
            "Keeps the head and a token-budgeted recent tail, drops the middle; no LLM needed.",
        )
        .config_key(
            "threshold",
            &defaults.threshold.to_string(),
            "Compress when the prompt reaches this fraction of the context window.",
        )
        .config_key(
            "tail_ratio",
            &defaults.tail_ratio.to_string(),
            "Token budget of the kept recent tail, as a fraction of the context window.",
        )
        .config_key(
            "min_tail_messages",
            &defaults.min_tail_messages.to_string(),
            "The tail keeps at least this many recent messages.",
        )
        .config_key(
            "keep_tool_outputs",
            &defaults.keep_tool_outputs.to_string(),
            "Tool outputs in the tail older than the newest N are cleared.",
        )
    }

    fn create(services: HostServices) -> Result<Self, EngineError> {
        // Fail here, at load time, so a bad setting is reported before the session starts.
        let settings: Settings = services.settings()?;
        let tracker = TokenTracker::new(services.model().context_length, settings.threshold);
        Ok(WindowEngine {
            services,
            settings,
            tracker,
            last: None,
        })
    }

    fn validate_settings(services: &HostServices) -> Result<(), EngineError> {
        services.settings::<Settings>().map(drop)
    }
}

impl ContextEngine for WindowEngine {
    fn name(&self) -> &str {
        NAME
    }

    fn tracker(&mut self) -> Option<&mut TokenTracker> {
        Some(&mut self.tracker)
    }

    fn should_compress_preflight(&mut self, messages: &[Message]) -> Result<bool, EngineError> {
        let tokens = self.services.count_messages_tokens(messages);
        Ok(self.tracker.over_threshold(tokens))
    }

    fn compress(
        &mut self,
        messages: &[Message],
        options: &CompressOptions,
    ) -> Result<Vec<Message>, EngineError> {
        let started = Instant::now();
        let counted = self.services.count_messages_tokens(messages);
        let mut report = CompressionReport {
            tokens_before: counted,
            tokens_after: counted,
            messages_before: messages.len() as u64,
            messages_after: messages.len() as u64,
            // One way of compressing, and no summarizer: always the normal path.
            escalation: Escalation::Normal,
            ..CompressionReport::default()
        };
        let tokens = options.current_tokens.unwrap_or(counted);
        let compacted = if options.force || self.tracker.over_threshold(tokens) {
            let mut limits = self.limits(options.focus_topic.as_deref());
            if let Some(target) = options.target_tokens {
                // A caller's target size: the tail gets what the head and the marker leave.
                limits.tail_budget =
                    target.saturating_sub(window::fixed_tokens(messages, &self.services));
                // The newest user message stays, as the output contract wants.
                let last_user = messages.iter().rposition(Message::is_user).unwrap_or(0);
                limits.min_tail_messages = messages.len() - last_user;
            }
            window::compact(messages, &self.services, &limits)
        } else {
            None
        };
        let Some(compacted) = compacted else {
            report.elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
            self.last = Some(report);
            return Ok(messages.to_vec());
        };
        self.tracker.compression_count += 1;
        self.services.debug(&format!(
            "{} → {} messages; {} dropped in all ({} tokens); {} tool outputs cleared",
            messages.len(),
            compacted.messages.len(),
            compacted.dropped.messages,
            compacted.dropped.tokens,
            compacted.cleared_outputs,
        ));
        report.details = json!({
            "dropped_messages_in_all": compacted.dropped.messages,
            "dropped_tokens_in_all": compacted.dropped.tokens,
            "cleared_tool_outputs": compacted.cleared_outputs,
        });
        // The algorithm only cuts on turn boundaries, so this changes nothing for a valid input.
        // It is the last line of defence for an input that was already broken.
        let out = sequence::repair(compacted.messages);
        report.tokens_after = self.services.count_messages_tokens(&out);
        report.messages_after = out.len() as u64;
        report.elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
        self.last = Some(report);
        Ok(out)
    }

    /// Whether a forced `compress` would change anything: false when the head and the tail
    /// cover everything, or when dropping the rest would not save more than the marker costs.
    fn has_content_to_compress(&mut self, messages: &[Message]) -> Result<bool, EngineError> {
        let limits = self.limits(None);
        Ok(window::compact(messages, &self.services, &limits).is_some())
    }

    fn on_session_reset(&mut self) -> Result<(), EngineError> {
        self.tracker.reset();
        self.last = None;
        Ok(())
    }

    fn status_details(&mut self) -> Result<Value, EngineError> {
        Ok(json!({
            "tail_budget_tokens": self.limits(None).tail_budget,
            "settings": self.settings,
        }))
    }

    fn last_compression(&mut self) -> Result<Option<CompressionReport>, EngineError> {
        Ok(self.last.clone())
    }
}
