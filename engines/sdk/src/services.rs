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
use serde_json::Value;

use crate::error::EngineError;
use crate::message::Message;
use crate::settings::{read_section, EngineSettings};

/// Tokens added per message for the role and framing, as OpenAI's counting guide does.
pub const MESSAGE_OVERHEAD_TOKENS: u64 = 4;

/// Severity of a log line an engine sends to the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum LogLevel {
    /// Detail for whoever debugs the engine; hidden unless asked for.
    Debug,
    /// A notable step (a compression done, a store opened).
    Info,
    /// Something the operator should know about, though the engine carries on.
    Warn,
    /// Something failed.
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
    /// The kind of text wanted. An LLM summarizer follows `instructions`; the offline one,
    /// which cannot read them, follows this.
    #[serde(default, skip_serializing_if = "SummaryShape::is_handoff")]
    pub shape: SummaryShape,
}

/// The kind of summary an engine asks for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SummaryShape {
    /// A handoff to continue the work from: goal, constraints, progress, decisions, files,
    /// next steps, critical context (the built-in compressor's).
    #[default]
    Handoff,
    /// A record of what a span of turns did (what was asked, commands and their results, files,
    /// errors, decisions), with nothing empty or repeated; also the merge of such records
    /// (the lossless engine's leaf and condensed summaries).
    Digest,
}

impl SummaryShape {
    fn is_handoff(&self) -> bool {
        *self == SummaryShape::Handoff
    }
}

/// The summarizer's answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    /// The summary itself.
    pub text: String,
    /// Which summarizer wrote it, e.g. `offline` or `openai:gpt-4o-mini`.
    pub summarizer: String,
    /// Set when the host's configured summarizer did not write this summary and the offline
    /// one did instead: one line saying why (the configured one failed, answered unusably, or
    /// is cooling down after a failure). The host's `summarize` never fails for that reason;
    /// this is how an engine learns it fell back. Absent from hosts that predate it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback_reason: Option<String>,
}

/// The model the engine serves.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// The model's name as configured (`model.name`).
    pub name: String,
    /// Its context window, in tokens (`model.context_length`).
    pub context_length: u64,
}

/// The host side of [`HostServices`]. The host implements it; engines use [`HostServices`]. Test
/// support implements it too, to run an engine without a host.
///
/// Calls may come from any thread the engine runs on, and must not panic.
pub trait HostBackend: Send + Sync {
    /// Tokens in `text` with the host's tokenizer.
    fn count_tokens(&self, text: &str) -> u64;
    /// A log line from `engine` (its configured name).
    fn log(&self, engine: &str, level: LogLevel, message: &str);
    /// Services addressed by name with JSON payloads (`summarize`, and any added later).
    fn call(&self, service: &str, payload: &str) -> Result<String, EngineError>;
    /// The `summarize` service. By default it goes through [`call`](Self::call) as JSON, as it
    /// crosses a plugin boundary; a host in the engine's own process answers it directly
    /// rather than serialize the turns and read them back.
    fn summarize(&self, request: &SummarizeRequest) -> Result<Summary, EngineError> {
        let payload = serde_json::to_string(request)?;
        let answer = self.call("summarize", &payload)?;
        serde_json::from_str(&answer).map_err(|error| {
            EngineError::failed(format!("the host's summarize answer is not valid: {error}"))
        })
    }
}

/// Everything the host hands an engine at construction. Cheap to clone: keep it in the engine
/// to count tokens, summarize and log later.
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
    /// The model the engine serves.
    #[serde(default)]
    pub model: ModelInfo,
}

impl HostServices {
    /// Services served by `backend` for the engine `setup` describes. The host (and test
    /// support) builds these; an engine receives them in
    /// [`EnginePlugin::create`](crate::EnginePlugin::create).
    pub fn new(backend: Arc<dyn HostBackend>, setup: EngineSetup) -> Self {
        HostServices {
            backend,
            setup: Arc::new(setup),
        }
    }

    /// Everything the host said about the engine's place: name, data directory, config, model.
    pub fn setup(&self) -> &EngineSetup {
        &self.setup
    }

    /// Where the engine keeps its files (`<home>/data/<engine>/`). The host creates it before
    /// [`EnginePlugin::create`](crate::EnginePlugin::create); write nothing there from
    /// [`validate_settings`](crate::EnginePlugin::validate_settings).
    pub fn data_dir(&self) -> &Path {
        &self.setup.data_dir
    }

    /// The engine's config section as JSON (null when the config has none).
    pub fn config(&self) -> &Value {
        &self.setup.config
    }

    /// The engine's config section read into a settings type; a missing section reads as `{}`
    /// so `#[serde(default)]` settings work. An error names the key at fault as data
    /// ([`read_section`](crate::read_section)).
    pub fn config_as<T: DeserializeOwned>(&self) -> Result<T, EngineError> {
        read_section(&self.setup.config)
    }

    /// The engine's settings: its config section read ([`config_as`](Self::config_as)) and
    /// checked ([`EngineSettings::validate`]).
    pub fn settings<T: EngineSettings>(&self) -> Result<T, EngineError> {
        T::from_section(&self.setup.config)
    }

    /// The model the engine serves, as configured when it was built; later changes arrive
    /// through [`ContextEngine::update_model`](crate::ContextEngine::update_model).
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

    /// Tokens a message list costs in a prompt: the sum of
    /// [`count_message_tokens`](Self::count_message_tokens).
    pub fn count_messages_tokens(&self, messages: &[Message]) -> u64 {
        messages.iter().map(|m| self.count_message_tokens(m)).sum()
    }

    /// Summarizes with the host's configured summarizer. Fails with
    /// [`ErrorKind::NotConfigured`](crate::ErrorKind::NotConfigured) when there is none and
    /// [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable) when it could not answer, so an
    /// engine keeps a deterministic way to compress without one.
    pub fn summarize(&self, request: &SummarizeRequest) -> Result<Summary, EngineError> {
        self.backend.summarize(request)
    }

    /// Sends a log line to the host, tagged with the engine's name.
    pub fn log(&self, level: LogLevel, message: &str) {
        self.backend.log(&self.setup.engine, level, message);
    }

    /// [`log`](Self::log) at [`LogLevel::Debug`].
    pub fn debug(&self, message: &str) {
        self.log(LogLevel::Debug, message);
    }

    /// [`log`](Self::log) at [`LogLevel::Info`].
    pub fn info(&self, message: &str) {
        self.log(LogLevel::Info, message);
    }

    /// [`log`](Self::log) at [`LogLevel::Warn`].
    pub fn warn(&self, message: &str) {
        self.log(LogLevel::Warn, message);
    }
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

    /// The key at fault and the problem, as the error carries them.
    fn fault<T: DeserializeOwned + fmt::Debug>(config: Value) -> (String, String) {
        let error = services(config).config_as::<T>().unwrap_err();
        assert_eq!(error.kind(), crate::ErrorKind::InvalidSetting);
        let fault = error.setting().expect("a setting error carries its key");
        (fault.key.clone(), fault.problem.clone())
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
            fault::<Optional>(config),
            (
                "count".to_string(),
                "invalid type: string \"lots\", expected u64".to_string()
            )
        );
    }

    #[test]
    fn an_unknown_key_names_itself() {
        let (key, problem) = fault::<Optional>(serde_json::json!({"treshold": 0.5}));
        assert_eq!(key, "treshold");
        assert!(problem.starts_with("unknown field `treshold`"), "{problem}");
    }

    #[test]
    fn settings_with_required_fields_still_name_the_key() {
        let (key, problem) = fault::<Required>(serde_json::json!({"name": "x", "count": -1}));
        assert_eq!(key, "count");
        assert!(problem.starts_with("invalid value"), "{problem}");
        // A missing required field is the section's problem, not a key's.
        let (key, problem) = fault::<Required>(serde_json::json!({"name": "x"}));
        assert_eq!(
            (key.as_str(), problem.as_str()),
            ("", "missing field `count`")
        );
    }

    #[test]
    fn a_section_that_is_not_a_mapping_is_the_section_at_fault() {
        let (key, problem) = fault::<Optional>(serde_json::json!("lots"));
        assert_eq!(key, "");
        assert!(problem.starts_with("invalid type"), "{problem}");
    }
}
