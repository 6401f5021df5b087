//! The `compression` section of `config.yaml`, with Hermes Agent's keys and defaults.

use serde::Deserialize;
use serde_json::Value;

use ctxhost_sdk::{EngineError, EngineSettings};

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    pub enabled: bool,
    /// Compress when the prompt reaches this fraction of the window.
    pub threshold: f64,
    /// The recent tail kept verbatim, as a fraction of the threshold tokens.
    pub target_ratio: f64,
    /// The tail never has fewer recent messages than this.
    pub protect_last_n: usize,
    /// The rough-estimate check before a turn, as a fraction of the window.
    pub hygiene_ratio: f64,
    /// Hermes' head size: non-system messages always kept verbatim. Unset: the first exchange.
    pub protect_first_n: Option<usize>,
    /// Hermes keys accepted so a Hermes config loads; this engine has no use for them.
    #[serde(rename = "abort_on_summary_failure")]
    _abort_on_summary_failure: Option<Value>,
    #[serde(rename = "hygiene_hard_message_limit")]
    _hygiene_hard_message_limit: Option<Value>,
    #[serde(rename = "summary_model")]
    _summary_model: Option<Value>,
    /// Moved to the host (`auxiliary.compression.cooldown_seconds`, which owns the summarizer's
    /// failure ladder); still accepted here, and read by the host, so older configs keep working.
    #[serde(rename = "summarizer_cooldown_seconds")]
    _summarizer_cooldown_seconds: Option<u64>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            enabled: true,
            threshold: 0.50,
            target_ratio: 0.20,
            protect_last_n: 20,
            hygiene_ratio: 0.85,
            protect_first_n: None,
            _abort_on_summary_failure: None,
            _hygiene_hard_message_limit: None,
            _summary_model: None,
            _summarizer_cooldown_seconds: None,
        }
    }
}

impl Settings {
    /// The keys of `compression.*` with their defaults, for `ctxhost plugins info compressor`.
    pub fn config_keys() -> Vec<ctxhost_sdk::ConfigKey> {
        let d = Settings::default();
        let key = |key: &str, default: String, help: &str| ctxhost_sdk::ConfigKey {
            key: key.to_string(),
            default,
            help: help.to_string(),
        };
        vec![
            key("enabled", d.enabled.to_string(), "Compress at all."),
            key(
                "threshold",
                d.threshold.to_string(),
                "Compress when the prompt reaches this fraction of the window.",
            ),
            key(
                "target_ratio",
                d.target_ratio.to_string(),
                "The recent tail kept verbatim, as a fraction of the threshold tokens.",
            ),
            key(
                "protect_last_n",
                d.protect_last_n.to_string(),
                "The tail never has fewer recent messages than this.",
            ),
            key(
                "hygiene_ratio",
                d.hygiene_ratio.to_string(),
                "The rough-estimate check before a turn, as a fraction of the window.",
            ),
            key(
                "protect_first_n",
                "the first exchange".to_string(),
                "Non-system messages at the start always kept verbatim.",
            ),
        ]
    }
}

impl EngineSettings for Settings {
    /// The ranges serde cannot check; a wrong one names its key (relative to `compression`).
    fn validate(&self) -> Result<(), EngineError> {
        for (key, value, low_inclusive) in [
            ("threshold", self.threshold, false),
            ("target_ratio", self.target_ratio, false),
            ("hygiene_ratio", self.hygiene_ratio, false),
        ] {
            let in_range = value <= 1.0 && (value > 0.0 || (low_inclusive && value == 0.0));
            if !in_range {
                return Err(EngineError::invalid_setting(
                    key,
                    format!("must be between 0 and 1, got {value}"),
                ));
            }
        }
        if self.protect_last_n == 0 {
            return Err(EngineError::invalid_setting(
                "protect_last_n",
                "must be at least 1",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_are_hermes() {
        let s = Settings::from_section(&Value::Null).unwrap();
        assert_eq!(
            (s.threshold, s.target_ratio, s.protect_last_n),
            (0.50, 0.20, 20)
        );
    }

    #[test]
    fn errors_name_the_key_as_data() {
        let fault = |v| {
            let error = Settings::from_section(&v).unwrap_err();
            let fault = error.setting().expect("a setting error").clone();
            (fault.key, fault.problem)
        };
        assert_eq!(
            fault(json!({"threshold": 1.7})),
            (
                "threshold".into(),
                "must be between 0 and 1, got 1.7".into()
            )
        );
        let (key, problem) = fault(json!({"target_ratio": "x"}));
        assert_eq!(key, "target_ratio");
        assert!(problem.starts_with("invalid type"), "{problem}");
        let (key, problem) = fault(json!({"treshold": 0.5}));
        assert_eq!(key, "treshold");
        assert!(problem.starts_with("unknown field"), "{problem}");
        assert_eq!(fault(json!(5)).0, "");
        // A Hermes config loads.
        Settings::from_section(&json!({"protect_first_n": 3, "abort_on_summary_failure": false}))
            .unwrap();
    }
}
