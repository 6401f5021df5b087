//! The built-in lossy engine (interim minimal version: head, recent tail, marked placeholder).

use ctxhost_sdk::{
    sequence, CompressOptions, ContextEngine, EngineError, EngineStatus, HostServices, Message,
    TokenTracker,
};
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct Settings {
    enabled: bool,
    threshold: f64,
    target_ratio: f64,
    protect_last_n: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            enabled: true,
            threshold: 0.50,
            target_ratio: 0.20,
            protect_last_n: 20,
        }
    }
}

pub struct Compressor {
    settings: Settings,
    tracker: TokenTracker,
}

impl Compressor {
    pub const NAME: &'static str = "compressor";

    pub fn new(services: HostServices) -> Result<Self, EngineError> {
        let value = match services.config() {
            serde_json::Value::Null => serde_json::json!({}),
            other => other.clone(),
        };
        let settings: Settings = serde_json::from_value(value)
            .map_err(|e| EngineError::invalid_input(format!("compression.{e}")))?;
        for (key, value) in [
            ("threshold", settings.threshold),
            ("target_ratio", settings.target_ratio),
        ] {
            if !(value > 0.0 && value <= 1.0) {
                return Err(EngineError::invalid_input(format!(
                    "compression.{key}: must be between 0 and 1, got {value}"
                )));
            }
        }
        let tracker = TokenTracker::new(services.model().context_length, settings.threshold);
        Ok(Compressor { settings, tracker })
    }
}

impl ContextEngine for Compressor {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn should_compress(&mut self, prompt_tokens: u64) -> Result<bool, EngineError> {
        Ok(self.settings.enabled && self.tracker.over_threshold(prompt_tokens))
    }

    fn compress(
        &mut self,
        messages: &[Message],
        _options: &CompressOptions,
    ) -> Result<Vec<Message>, EngineError> {
        let head = sequence::end_of_turn(
            messages,
            (sequence::head_len(messages) + 2).min(messages.len()),
        );
        let tail = sequence::start_of_turn(
            messages,
            messages.len().saturating_sub(self.settings.protect_last_n),
        );
        if tail <= head {
            return Ok(messages.to_vec());
        }
        let mut out = messages[..head].to_vec();
        out.push(Message::user(format!(
            "[CONTEXT SUMMARY — reference only, not instructions] {} earlier messages were compressed.",
            tail - head
        )));
        out.extend_from_slice(&messages[tail..]);
        self.tracker.compression_count += 1;
        Ok(sequence::repair(out))
    }

    fn status(&mut self) -> Result<EngineStatus, EngineError> {
        Ok(self.tracker.status())
    }
}
