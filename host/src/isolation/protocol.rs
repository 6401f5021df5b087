//! What the host and an engine's child process say to each other: one JSON object per line,
//! a request from the host, one reply from the child. The operations are the ABI's; message
//! lists cross as changes ([`super::lists`]).

use ctxhost_sdk::{
    CompressOptions, EngineError, ErrorKind, Message, SessionStart, SettingFault, Usage,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use super::lists::{CompressedList, MessageList};

/// The first line the host sends: how to build the engine.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Init {
    /// The config's text and where it came from (plugin directories resolve against it).
    pub config_text: String,
    pub config_source: Option<std::path::PathBuf>,
    /// `$CTXHOST_HOME`.
    pub home: std::path::PathBuf,
    /// The engine to start.
    pub name: String,
    /// Where engines keep their data.
    pub data_root: std::path::PathBuf,
    pub verbose: bool,
    /// Whether the config's project (its plugins and credentials) is trusted: the child
    /// holds the config to what the host decided.
    #[serde(default = "trusted")]
    pub project_trusted: bool,
    /// What the child is for.
    #[serde(default)]
    pub purpose: Purpose,
}

fn trusted() -> bool {
    true
}

/// Why the host starts a child.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Purpose {
    /// Run the engine and answer its operations.
    #[default]
    Engine,
    /// Load the library and answer with what it declares ([`Loaded`]), then exit: loading
    /// runs the plugin's code, so listings read manifests here, never in the host.
    Manifest { library: std::path::PathBuf },
    /// Check the engine's settings without building it (no store opened), then exit.
    ValidateSettings,
}

/// The child's answer to [`Purpose::Manifest`].
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Loaded {
    Manifest(ctxhost_sdk::Manifest),
    /// The loader refused the library (not a plugin, another interface, ...).
    Refused {
        kind: ctxhost_plugin_host::LoadErrorKind,
        summary: String,
        detail: String,
    },
}

/// The child's answer to [`Init`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Ready {
    pub name: String,
    pub version: String,
}

/// One engine operation.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    UpdateFromResponse {
        usage: Usage,
    },
    ShouldCompress {
        prompt_tokens: u64,
    },
    ShouldCompressPreflight {
        messages: MessageList,
    },
    Compress {
        messages: MessageList,
        options: CompressOptions,
    },
    HasContentToCompress {
        messages: MessageList,
    },
    OnSessionStart {
        session: SessionStart,
    },
    OnSessionEnd {
        session_id: String,
        messages: Vec<Message>,
    },
    OnSessionReset,
    ToolSchemas,
    HandleToolCall {
        name: String,
        args: Value,
    },
    Status,
    UpdateModel {
        model: String,
        context_length: u64,
    },
    LastCompression,
    Sessions,
    Session {
        session_id: String,
    },
    DeleteSession {
        session_id: String,
    },
    Invoke {
        name: String,
        payload: Value,
    },
}

impl Request {
    /// The operation's name, for messages.
    pub fn op(&self) -> &'static str {
        match self {
            Request::UpdateFromResponse { .. } => "update_from_response",
            Request::ShouldCompress { .. } => "should_compress",
            Request::ShouldCompressPreflight { .. } => "should_compress_preflight",
            Request::Compress { .. } => "compress",
            Request::HasContentToCompress { .. } => "has_content_to_compress",
            Request::OnSessionStart { .. } => "on_session_start",
            Request::OnSessionEnd { .. } => "on_session_end",
            Request::OnSessionReset => "on_session_reset",
            Request::ToolSchemas => "tool_schemas",
            Request::HandleToolCall { .. } => "handle_tool_call",
            Request::Status => "status",
            Request::UpdateModel { .. } => "update_model",
            Request::LastCompression => "last_compression",
            Request::Sessions => "sessions",
            Request::Session { .. } => "session",
            Request::DeleteSession { .. } => "delete_session",
            Request::Invoke { .. } => "invoke",
        }
    }
}

/// An [`EngineError`] on the wire.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WireError {
    pub kind: ErrorKind,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setting: Option<SettingFault>,
}

impl From<&EngineError> for WireError {
    fn from(error: &EngineError) -> Self {
        WireError {
            kind: error.kind(),
            message: error.message().to_string(),
            setting: error.setting().cloned(),
        }
    }
}

impl From<WireError> for EngineError {
    fn from(error: WireError) -> Self {
        match error.setting {
            Some(fault) if error.kind == ErrorKind::InvalidSetting => {
                EngineError::invalid_setting(fault.key, fault.problem)
            }
            _ => EngineError::new(error.kind, error.message),
        }
    }
}

/// The child's answer to one request (or to [`Init`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reply {
    Ok(Value),
    Err(WireError),
}
