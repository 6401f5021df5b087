//! What the host offers every engine: summarizing, token counting, logging, a data directory
//! and the engine's own config section.
//!
//! Engines never open network clients or async runtimes of their own; the host owns both and
//! serves them through [`HostServices`].

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::EngineError;
use crate::message::Message;

/// Tokens added per message for the role and framing, as OpenAI's counting guide does.
pub const MESSAGE_OVERHEAD_TOKENS: u64 = 4;

/// Severity of a log line an engine sends to the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum LogLevel {
    Debug,
    Info,
    Warn,
    Error,
}

impl LogLevel {
    pub(crate) fn code(self) -> u8 {
        self as u8
    }

    pub(crate) fn from_code(code: u8) -> Self {
        match code {
            0 => LogLevel::Debug,
            1 => LogLevel::Info,
            2 => LogLevel::Warn,
            _ => LogLevel::Error,
        }
    }
}

impl fmt::Display for LogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Warn => "warn",
            LogLevel::Error => "error",
        })
    }
}

/// A request to the host's summarizer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SummarizeRequest {
    /// What the summary is for and how to write it (the system prompt of an LLM summarizer).
    pub instructions: String,
    /// The turns to summarize, already rendered as text.
    pub content: String,
    /// Upper bound on the summary's length.
    pub max_tokens: u64,
    /// A topic to keep in priority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub focus_topic: Option<String>,
    /// A previous summary to update rather than start over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_summary: Option<String>,
}

/// The summarizer's answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    pub text: String,
    /// Which summarizer wrote it, e.g. `offline` or `openai:gpt-4o-mini`.
    pub summarizer: String,
}

/// The model the engine serves.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelInfo {
    pub name: String,
    pub context_length: u64,
}

/// The host side of [`HostServices`]. The host implements it; engines use [`HostServices`].
pub trait HostBackend: Send + Sync {
    fn count_tokens(&self, text: &str) -> u64;
    fn log(&self, engine: &str, level: LogLevel, message: &str);
    /// Services addressed by name with JSON payloads (`summarize`, and any added later).
    fn call(&self, service: &str, payload: &str) -> Result<String, EngineError>;
}

/// Everything the host hands an engine at construction.
#[derive(Clone)]
pub struct HostServices {
    backend: Arc<dyn HostBackend>,
    setup: Arc<EngineSetup>,
}

/// The construction-time facts about an engine's place in the host.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EngineSetup {
    /// The engine's name as configured.
    pub engine: String,
    /// Where the engine keeps its files (`<home>/data/<engine>/`).
    pub data_dir: PathBuf,
    /// The engine's own section of `config.yaml` (`plugins.<name>`), or null.
    #[serde(default)]
    pub config: Value,
    #[serde(default)]
    pub model: ModelInfo,
}

impl HostServices {
    pub fn new(backend: Arc<dyn HostBackend>, setup: EngineSetup) -> Self {
        HostServices {
            backend,
            setup: Arc::new(setup),
        }
    }

    pub fn setup(&self) -> &EngineSetup {
        &self.setup
    }

    pub fn data_dir(&self) -> &Path {
        &self.setup.data_dir
    }

    /// The engine's config section as JSON (null when the config has none).
    pub fn config(&self) -> &Value {
        &self.setup.config
    }

    /// The engine's config section read into a settings type; a missing section reads as `{}`
    /// so `#[serde(default)]` settings work.
    ///
    /// An error names the key at fault when it can be found, as
    /// `plugins.<engine>.<key>: <problem>` (e.g. `plugins.lcm.deadline_ms: invalid type: string
    /// "soon", expected u64`), which the host turns into `config.yaml:<line>: ...`; otherwise it
    /// is `plugins.<engine>: <problem>`.
    pub fn config_as<T: DeserializeOwned>(&self) -> Result<T, EngineError> {
        let section = format!("plugins.{}", self.setup.engine);
        let value = match &self.setup.config {
            Value::Null => Value::Object(Default::default()),
            other => other.clone(),
        };
        serde_json::from_value(value.clone()).map_err(|error| {
            let message = match bad_key::<T>(&value) {
                Some((key, problem)) => format!("{section}.{key}: {problem}"),
                None => format!("{section}: {error}"),
            };
            EngineError::invalid_input(message)
        })
    }

    pub fn model(&self) -> &ModelInfo {
        &self.setup.model
    }

    /// Tokens in `text` with the host's tokenizer (cached by the host).
    pub fn count_tokens(&self, text: &str) -> u64 {
        self.backend.count_tokens(text)
    }

    /// Tokens a message costs in a prompt: its text, its tool calls and the framing.
    pub fn count_message_tokens(&self, message: &Message) -> u64 {
        self.count_tokens(&message.searchable_text()) + MESSAGE_OVERHEAD_TOKENS
    }

    pub fn count_messages_tokens(&self, messages: &[Message]) -> u64 {
        messages.iter().map(|m| self.count_message_tokens(m)).sum()
    }

    /// Summarizes with the host's configured summarizer.
    pub fn summarize(&self, request: &SummarizeRequest) -> Result<Summary, EngineError> {
        let payload = serde_json::to_string(request)?;
        let answer = self.backend.call("summarize", &payload)?;
        serde_json::from_str(&answer).map_err(|error| {
            EngineError::failed(format!("the host's summarize answer is not valid: {error}"))
        })
    }

    pub fn log(&self, level: LogLevel, message: &str) {
        self.backend.log(&self.setup.engine, level, message);
    }

    pub fn debug(&self, message: &str) {
        self.log(LogLevel::Debug, message);
    }

    pub fn info(&self, message: &str) {
        self.log(LogLevel::Info, message);
    }

    pub fn warn(&self, message: &str) {
        self.log(LogLevel::Warn, message);
    }
}

/// serde reports a wrong type or an unknown field without saying which key holds it. Finds the
/// key at fault in `config` (an object that does not read as `T`), with its problem: first a
/// key whose value fails on its own (a missing-field complaint is not a fault of that key),
/// then a key without which the rest reads (for settings with required fields).
fn bad_key<T: DeserializeOwned>(config: &Value) -> Option<(String, String)> {
    let Value::Object(fields) = config else {
        return None;
    };
    let read = |object: Map<String, Value>| serde_json::from_value::<T>(Value::Object(object));
    for (key, value) in fields {
        if let Err(problem) = read(Map::from_iter([(key.clone(), value.clone())])) {
            let problem = problem.to_string();
            if !problem.starts_with("missing field") {
                return Some((key.clone(), problem));
            }
        }
    }
    for key in fields.keys() {
        let mut rest = fields.clone();
        rest.remove(key);
        if read(rest).is_ok() {
            let problem = read(fields.clone()).err()?.to_string();
            return Some((key.clone(), problem));
        }
    }
    None
}

impl fmt::Debug for HostServices {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostServices")
            .field("setup", &self.setup)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Quiet;

    impl HostBackend for Quiet {
        fn count_tokens(&self, text: &str) -> u64 {
            text.len() as u64
        }
        fn log(&self, _: &str, _: LogLevel, _: &str) {}
        fn call(&self, service: &str, _: &str) -> Result<String, EngineError> {
            Err(EngineError::unsupported(service))
        }
    }

    fn services(config: Value) -> HostServices {
        HostServices::new(
            Arc::new(Quiet),
            EngineSetup {
                engine: "demo".into(),
                config,
                ..EngineSetup::default()
            },
        )
    }

    #[derive(Debug, Default, PartialEq, Deserialize)]
    #[serde(default, deny_unknown_fields)]
    struct Optional {
        threshold: f64,
        count: u64,
    }

    #[derive(Debug, PartialEq, Deserialize)]
    #[allow(dead_code)] // read only to see whether it reads
    struct Required {
        name: String,
        count: u64,
    }

    fn message<T: DeserializeOwned + fmt::Debug>(config: Value) -> String {
        services(config)
            .config_as::<T>()
            .unwrap_err()
            .message()
            .to_string()
    }

    #[test]
    fn a_missing_section_reads_as_the_defaults() {
        assert_eq!(
            services(Value::Null).config_as::<Optional>().unwrap(),
            Optional::default()
        );
    }

    #[test]
    fn a_wrong_type_names_its_key() {
        let config = serde_json::json!({"threshold": 0.5, "count": "lots"});
        assert_eq!(
            message::<Optional>(config),
            "plugins.demo.count: invalid type: string \"lots\", expected u64"
        );
    }

    #[test]
    fn an_unknown_key_names_itself() {
        let text = message::<Optional>(serde_json::json!({"treshold": 0.5}));
        assert!(
            text.starts_with("plugins.demo.treshold: unknown field"),
            "{text}"
        );
    }

    #[test]
    fn settings_with_required_fields_still_name_the_key() {
        let text = message::<Required>(serde_json::json!({"name": "x", "count": -1}));
        assert!(
            text.starts_with("plugins.demo.count: invalid value"),
            "{text}"
        );
        // A missing required field is the section's problem, not a key's.
        let text = message::<Required>(serde_json::json!({"name": "x"}));
        assert_eq!(text, "plugins.demo: missing field `count`");
    }

    #[test]
    fn a_section_that_is_not_a_mapping_is_the_section_at_fault() {
        let text = message::<Optional>(serde_json::json!("lots"));
        assert!(text.starts_with("plugins.demo: invalid type"), "{text}");
    }
}
