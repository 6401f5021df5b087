//! An engine's settings read by the SDK: defaults for what is missing, the engine's own checks
//! after serde's, and every error naming the key at fault.

use ctxhost_sdk::{read_section, EngineError, EngineSettings, ErrorKind};
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct Settings {
    threshold: f64,
    keep: usize,
    nested: Nested,
}

#[derive(Debug, PartialEq, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct Nested {
    max_tokens: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            threshold: 0.75,
            keep: 4,
            nested: Nested::default(),
        }
    }
}

impl EngineSettings for Settings {
    fn validate(&self) -> Result<(), EngineError> {
        if !(self.threshold > 0.0 && self.threshold <= 1.0) {
            return Err(EngineError::invalid_setting(
                "threshold",
                format!("must be between 0 and 1, got {}", self.threshold),
            ));
        }
        Ok(())
    }
}

/// The key at fault and the problem, as the error carries them.
fn fault(section: Value) -> (String, String) {
    let error = Settings::from_section(&section).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidSetting, "{error}");
    let fault = error.setting().expect("a setting error carries its key");
    (fault.key.clone(), fault.problem.clone())
}

#[test]
fn a_missing_section_or_key_reads_as_the_defaults() {
    assert_eq!(
        Settings::from_section(&Value::Null).unwrap(),
        Settings::default()
    );
    let read = Settings::from_section(&json!({"keep": 9})).unwrap();
    assert_eq!((read.threshold, read.keep), (0.75, 9));
}

#[test]
fn serde_errors_and_the_engines_checks_name_their_key() {
    let (key, problem) = fault(json!({"keep": "many"}));
    assert_eq!(key, "keep");
    assert!(problem.starts_with("invalid type"), "{problem}");
    let (key, problem) = fault(json!({"kepe": 1}));
    assert_eq!(key, "kepe");
    assert!(problem.starts_with("unknown field `kepe`"), "{problem}");
    let (key, problem) = fault(json!({"nested": {"max_tokens": -1}}));
    assert_eq!(key, "nested.max_tokens");
    assert!(problem.starts_with("invalid value"), "{problem}");
    assert_eq!(
        fault(json!({"threshold": 1.5})),
        (
            "threshold".to_string(),
            "must be between 0 and 1, got 1.5".to_string()
        )
    );
    // Not a section at all: the section's problem, not a key's.
    assert_eq!(fault(json!(5)).0, "");
}

#[test]
fn read_section_alone_skips_the_engines_checks() {
    let read: Settings = read_section(&json!({"threshold": 1.5})).unwrap();
    assert_eq!(read.threshold, 1.5);
}
