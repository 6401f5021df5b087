//! What the host and an engine's child process say to each other: one JSON object per line,
//! a request from the host, one reply from the child. The operations are the ABI's; message
//! lists cross as changes ([`super::lists`]).

use ctxhost_sdk::{
    CompressOptions, CompressionReport, EngineError, EngineStatus, ErrorKind, Message, SessionInfo,
    SessionStart, SettingFault, Usage,
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
    /// The command line's overrides the host settled into its config: the child settles them
    /// too, so it runs on the very config the host does.
    #[serde(default)]
    pub overrides: Vec<ctxhost_config::Override>,
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

/// The child's answer to one request (or to [`Init`]). The host reads the answer straight into
/// the type the operation returns; the child writes it from its own type ([`Answer`]), so no
/// `Value` is built on either side.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reply<T = Value> {
    Ok(T),
    Err(WireError),
}

/// What an engine operation answers, written as the value itself.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Answer {
    /// `null`: the operation returns nothing.
    Nothing,
    Flag(bool),
    Text(String),
    Compressed(CompressedList),
    Status(EngineStatus),
    LastCompression(Option<CompressionReport>),
    Sessions(Vec<SessionInfo>),
    Session(Option<SessionInfo>),
    Json(Value),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isolation::lists::Part;

    /// A reply as the child writes it, read as the host reads it.
    fn crossed<T: serde::de::DeserializeOwned>(reply: Reply<Answer>) -> Reply<T> {
        let line = serde_json::to_string(&reply).unwrap();
        serde_json::from_str(&line).unwrap()
    }

    #[test]
    fn answers_are_read_straight_into_what_each_operation_returns() {
        assert!(matches!(
            crossed(Reply::Ok(Answer::Flag(true))),
            Reply::Ok(true)
        ));
        assert!(matches!(crossed(Reply::Ok(Answer::Nothing)), Reply::Ok(())));
        assert!(matches!(
            crossed::<Value>(Reply::Ok(Answer::Nothing)),
            Reply::Ok(Value::Null)
        ));
        let Reply::Ok(text) = crossed::<String>(Reply::Ok(Answer::Text("42".into()))) else {
            panic!("a text answer");
        };
        assert_eq!(text, "42");

        let list = CompressedList {
            parts: vec![
                Part::Kept { start: 0, len: 2 },
                Part::New(Box::new(Message::user("summary"))),
            ],
        };
        let Reply::Ok(read) =
            crossed::<CompressedList>(Reply::Ok(Answer::Compressed(list.clone())))
        else {
            panic!("a compressed list");
        };
        assert_eq!(read, list);

        let report = CompressionReport {
            tokens_before: 10,
            tokens_after: 4,
            ..CompressionReport::default()
        };
        let Reply::Ok(Some(read)) = crossed::<Option<CompressionReport>>(Reply::Ok(
            Answer::LastCompression(Some(report.clone())),
        )) else {
            panic!("a report");
        };
        assert_eq!((read.tokens_before, read.tokens_after), (10, 4));
        assert!(matches!(
            crossed::<Option<CompressionReport>>(Reply::Ok(Answer::LastCompression(None))),
            Reply::Ok(None)
        ));

        let error = EngineError::invalid_setting("threshold", "must be below 1");
        let Reply::Err(wire) = crossed::<bool>(Reply::Err(WireError::from(&error))) else {
            panic!("an error");
        };
        let back = EngineError::from(wire);
        assert_eq!(back.kind(), ErrorKind::InvalidSetting);
        assert_eq!(back.setting().map(|f| f.key.as_str()), Some("threshold"));
    }

    #[test]
    fn an_answer_of_another_type_is_still_a_well_formed_reply() {
        // The host tells "answered something unreadable" from "broke the protocol" this way.
        let line = serde_json::to_string(&Reply::Ok(Answer::Text("yes".into()))).unwrap();
        assert!(serde_json::from_str::<Reply<bool>>(&line).is_err());
        assert!(serde_json::from_str::<Reply>(&line).is_ok());
        assert!(serde_json::from_str::<Reply>("{\"ok\": tru").is_err());
    }
}
