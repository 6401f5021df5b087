//! The engine's settings: the `plugins.lcm` section of `config.yaml`.

use std::path::Path;

use ctxhost_sdk::{EngineError, EngineSettings};
use serde::{Deserialize, Serialize};

use ctxhost_lcm_store::Location;

/// What a user can tune under `plugins.lcm`. Every key is optional; unknown keys are an error, so
/// a typo never silently falls back to a default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// Compact when the assembled context reaches this fraction of the window, in (0, 1].
    pub threshold: f64,
    /// Compaction stops as soon as the context is at or below this fraction of the window, in
    /// (0, threshold]. The gap keeps compaction from firing again on the very next turn.
    pub target_ratio: f64,
    /// The newest raw messages that are never summarized (at least 1).
    pub fresh_tail_count: usize,
    /// The protected tail never holds more than this fraction of the window, in (0, 1]; beyond
    /// it the oldest turns of the tail become compactable (the newest turn is always kept).
    pub fresh_tail_max_ratio: f64,
    /// Most source tokens summarized into one leaf summary.
    pub leaf_chunk_tokens: u64,
    /// Size asked of a leaf summary, in tokens.
    pub leaf_summary_tokens: u64,
    /// Summaries of one depth that accumulate before they are merged into a condensed one.
    pub condensed_min_fanout: usize,
    /// Size asked of a condensed summary, in tokens.
    pub condensed_summary_tokens: u64,
    /// Most summary blocks in the model's view after a compaction: beyond it the oldest are
    /// condensed into one, whatever their depths (at least 2).
    pub max_summary_blocks: usize,
    /// Most summarization passes in one `compress` call.
    pub max_passes: usize,
    /// Wall-clock limit of one `compress` call, in milliseconds.
    pub deadline_ms: u64,
    /// Longest wait for one summarizer answer, in milliseconds (also capped by the deadline).
    pub summarizer_timeout_ms: u64,
    /// Default page size of `lcm_expand`, in tokens.
    pub expand_max_tokens: u64,
    /// How long to wait for a database another process holds locked, in milliseconds.
    pub busy_timeout_ms: u64,
    /// How long a second writer of a session waits for the first to let go, in milliseconds.
    pub session_lock_wait_ms: u64,
    /// Where the store lives: a SQLite file (a relative path is taken from the engine's data
    /// directory; default `lcm.sqlite` there) or a `postgres://` URL.
    pub store: Option<String>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            threshold: 0.75,
            target_ratio: 0.5,
            fresh_tail_count: 64,
            fresh_tail_max_ratio: 0.4,
            leaf_chunk_tokens: 20_000,
            leaf_summary_tokens: 1_200,
            condensed_min_fanout: 4,
            condensed_summary_tokens: 2_000,
            max_summary_blocks: 8,
            max_passes: 24,
            deadline_ms: 60_000,
            summarizer_timeout_ms: 30_000,
            expand_max_tokens: 4_000,
            busy_timeout_ms: 5_000,
            session_lock_wait_ms: 10_000,
            store: None,
        }
    }
}

/// Read by `HostServices::settings`, which names the key at fault for wrong types and unknown
/// keys; a wrong setting found here names its key inside the section (`threshold`) too, which the
/// host places in `config.yaml`.
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
        if !(self.target_ratio > 0.0 && self.target_ratio <= self.threshold) {
            return bad(
                "target_ratio",
                format!(
                    "must be above 0 and at most threshold ({}), got {}",
                    self.threshold, self.target_ratio
                ),
            );
        }
        if !(self.fresh_tail_max_ratio > 0.0 && self.fresh_tail_max_ratio <= 1.0) {
            return bad(
                "fresh_tail_max_ratio",
                format!("must be between 0 and 1, got {}", self.fresh_tail_max_ratio),
            );
        }
        let at_least = |key: &str, value: u64, min: u64| {
            if value < min {
                bad(key, format!("must be at least {min}, got {value}"))
            } else {
                Ok(())
            }
        };
        at_least("fresh_tail_count", self.fresh_tail_count as u64, 1)?;
        at_least("leaf_chunk_tokens", self.leaf_chunk_tokens, 100)?;
        at_least("leaf_summary_tokens", self.leaf_summary_tokens, 16)?;
        at_least("condensed_min_fanout", self.condensed_min_fanout as u64, 2)?;
        at_least(
            "condensed_summary_tokens",
            self.condensed_summary_tokens,
            16,
        )?;
        at_least("max_summary_blocks", self.max_summary_blocks as u64, 2)?;
        at_least("max_passes", self.max_passes as u64, 1)?;
        at_least("deadline_ms", self.deadline_ms, 1)?;
        at_least("summarizer_timeout_ms", self.summarizer_timeout_ms, 1)?;
        at_least("expand_max_tokens", self.expand_max_tokens, 1)?;
        // Parsed only: nothing is opened or created while settings are checked.
        self.location(Path::new(".")).map(drop)
    }
}

impl Settings {
    /// The store these settings name, under `data_dir` unless a URL or an absolute path.
    pub fn location(&self, data_dir: &Path) -> Result<Location, EngineError> {
        Location::from_setting(self.store.as_deref(), data_dir, crate::DATABASE_FILE)
            .map_err(|problem| EngineError::invalid_setting("store", problem))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use ctxhost_sdk::ErrorKind;
    use ctxhost_sdk_test::FakeHost;
    use serde_json::{json, Value};

    fn read(config: Value) -> Result<Settings, EngineError> {
        FakeHost::builder("lcm")
            .config(config)
            .build()
            .services()
            .settings()
    }

    #[test]
    fn defaults_are_valid() {
        assert_eq!(read(json!({})).unwrap(), Settings::default());
    }

    /// The key at fault and the problem, as the error carries them.
    fn fault(config: Value) -> (String, String) {
        let error = read(config).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidSetting, "{error}");
        let fault = error.setting().expect("a setting error names its key");
        (fault.key.clone(), fault.problem.clone())
    }

    #[test]
    fn range_errors_name_their_key() {
        assert_eq!(
            fault(json!({"threshold": 1.7})),
            (
                "threshold".to_string(),
                "must be between 0 and 1, got 1.7".to_string()
            )
        );
        assert_eq!(fault(json!({"target_ratio": 0.9})).0, "target_ratio");
        assert_eq!(
            fault(json!({"condensed_min_fanout": 1})).0,
            "condensed_min_fanout"
        );
    }

    #[test]
    fn a_bad_store_url_names_the_key_and_hides_the_password() {
        let (key, problem) = fault(json!({"store": "postgres://u:hunter2@h:notaport/db"}));
        assert_eq!(key, "store");
        assert!(!problem.contains("hunter2"), "{problem}");
        assert!(
            problem.contains("postgres://u:***@h:notaport/db"),
            "{problem}"
        );
        // A good one is read without connecting (nothing listens there).
        let settings = read(json!({"store": "postgres://u:pw@127.0.0.1:1/db"})).unwrap();
        assert!(matches!(
            settings.location(Path::new("/d")).unwrap(),
            Location::Postgres(_)
        ));
    }

    #[test]
    fn wrong_types_and_unknown_keys_name_the_key() {
        let (key, problem) = fault(json!({"deadline_ms": "soon"}));
        assert_eq!(key, "deadline_ms");
        assert!(problem.starts_with("invalid type"), "{problem}");
        let (key, problem) = fault(json!({"treshold": 0.5}));
        assert_eq!(key, "treshold");
        assert!(problem.starts_with("unknown field"), "{problem}");
    }
}
