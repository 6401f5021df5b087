//! The engine's settings: the `plugins.window` section of `config.yaml`.

use ctxhost_sdk::{EngineError, EngineSettings};
use serde::{Deserialize, Serialize};

/// What a user can tune under `plugins.window`. Every key is optional; unknown keys are an
/// error, so a typo never silently falls back to a default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// Compress when the prompt reaches this fraction of the context window, in (0, 1].
    pub threshold: f64,
    /// Token budget of the kept recent tail, as a fraction of the context window, in (0, 1) and
    /// below `threshold` (otherwise a compressed context would still be over the threshold).
    pub tail_ratio: f64,
    /// The tail keeps at least this many recent messages, whatever their size (at least 1).
    pub min_tail_messages: usize,
    /// Tool outputs inside the tail older than the newest `keep_tool_outputs` are cleared.
    pub keep_tool_outputs: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            threshold: 0.75,
            tail_ratio: 0.40,
            min_tail_messages: 6,
            keep_tool_outputs: 4,
        }
    }
}

/// Read by `HostServices::settings`, which names the key at fault for wrong types and unknown
/// keys; a wrong setting found here names its key inside the section (`threshold`) too, so the
/// host can point at the line of `config.yaml`.
impl EngineSettings for Settings {
    /// Checks the ranges serde cannot.
    fn validate(&self) -> Result<(), EngineError> {
        let bad = |key: &str, problem: String| Err(EngineError::invalid_setting(key, problem));
        // Written as `!(in range)` so NaN is rejected too.
        if !(self.threshold > 0.0 && self.threshold <= 1.0) {
            return bad(
                "threshold",
                format!("must be between 0 and 1, got {}", self.threshold),
            );
        }
        if !(self.tail_ratio > 0.0 && self.tail_ratio <= 1.0) {
            return bad(
                "tail_ratio",
                format!("must be between 0 and 1, got {}", self.tail_ratio),
            );
        }
        if self.tail_ratio >= self.threshold {
            return bad(
                "tail_ratio",
                format!(
                    "must be below threshold ({}), got {}",
                    self.threshold, self.tail_ratio
                ),
            );
        }
        if self.min_tail_messages == 0 {
            return bad(
                "min_tail_messages",
                "must be at least 1, got 0 (the newest message is always kept)".to_string(),
            );
        }
        Ok(())
    }
}
