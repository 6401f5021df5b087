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
    pub fn config_as<T: DeserializeOwned>(&self) -> Result<T, EngineError> {
        let value = match &self.setup.config {
            Value::Null => Value::Object(Default::default()),
            other => other.clone(),
        };
        serde_json::from_value(value).map_err(|error| {
            EngineError::invalid_input(format!("plugins.{}: {error}", self.setup.engine))
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

impl fmt::Debug for HostServices {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostServices")
            .field("setup", &self.setup)
            .finish_non_exhaustive()
    }
}
