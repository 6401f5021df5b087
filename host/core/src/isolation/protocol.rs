//! What the host and an engine's child process say to each other: one JSON object per line,
//! a request from the host, one reply from the child. The operations are the SDK's protocol
//! ([`ctxhost_sdk::protocol`]); message lists cross as changes ([`super::lists`]).

use ctxhost_sdk::protocol::{EngineCall, Op};
use ctxhost_sdk::{CompressOptions, EngineError, ErrorKind, SettingFault};
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

/// One request of the host: a typed hot path, or any other operation as the protocol's
/// [`EngineCall`], its message list sent as a change to the last one ([`MessageList`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Request {
    ShouldCompress {
        prompt_tokens: u64,
    },
    Compress {
        messages: MessageList,
        options: CompressOptions,
    },
    Call(EngineCall<MessageList>),
}

impl Request {
    /// The operation asked for.
    pub fn op(&self) -> Op {
        match self {
            Request::ShouldCompress { .. } => Op::ShouldCompress,
            Request::Compress { .. } => Op::Compress,
            Request::Call(call) => call.op(),
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

/// The child's answer to one request (or to [`Init`]): the hot paths' own types (`bool`,
/// [`CompressedList`]), an [`EngineReply`](ctxhost_sdk::protocol::EngineReply) for a
/// [`Request::Call`]. The host reads the answer
/// straight into the type it expects; no `Value` is built on either side.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reply<T = Value> {
    Ok(T),
    Err(WireError),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isolation::lists::Part;
    use ctxhost_sdk::protocol::EngineReply;
    use ctxhost_sdk::{CompressionReport, Message};

    /// A reply as the child writes it, read as the host reads it.
    fn crossed<T: serde::de::DeserializeOwned>(reply: Reply<impl Serialize>) -> Reply<T> {
        let line = serde_json::to_string(&reply).unwrap();
        serde_json::from_str(&line).unwrap()
    }

    #[test]
    fn answers_are_read_straight_into_what_each_request_returns() {
        assert!(matches!(crossed(Reply::Ok(true)), Reply::Ok(true)));

        let list = CompressedList {
            parts: vec![
                Part::Kept { start: 0, len: 2 },
                Part::New(Box::new(Message::user("summary"))),
            ],
        };
        let Reply::Ok(read) = crossed::<CompressedList>(Reply::Ok(list.clone())) else {
            panic!("a compressed list");
        };
        assert_eq!(read, list);

        let report = CompressionReport {
            tokens_before: 10,
            tokens_after: 4,
            ..CompressionReport::default()
        };
        for reply in [
            EngineReply::LastCompression(Some(report)),
            EngineReply::LastCompression(None),
            EngineReply::UpdateModel,
            EngineReply::HandleToolCall("42".into()),
        ] {
            let Reply::Ok(read) = crossed::<EngineReply>(Reply::Ok(reply.clone())) else {
                panic!("a reply");
            };
            assert_eq!(read, reply);
        }

        let error = EngineError::invalid_setting("threshold", "must be below 1");
        let Reply::Err(wire) = crossed::<bool>(Reply::<bool>::Err(WireError::from(&error))) else {
            panic!("an error");
        };
        let back = EngineError::from(wire);
        assert_eq!(back.kind(), ErrorKind::InvalidSetting);
        assert_eq!(back.setting().map(|f| f.key.as_str()), Some("threshold"));
    }

    #[test]
    fn a_request_names_its_operation_and_reads_back() {
        let requests = [
            Request::ShouldCompress { prompt_tokens: 3 },
            Request::Compress {
                messages: MessageList::default(),
                options: CompressOptions::default(),
            },
            Request::Call(EngineCall::OnSessionEnd {
                session_id: "s".into(),
                messages: MessageList {
                    keep: 2,
                    append: vec![Message::user("new")],
                },
            }),
        ];
        for request in requests {
            let line = serde_json::to_string(&request).unwrap();
            let read: Request = serde_json::from_str(&line).unwrap();
            assert_eq!(read.op(), request.op());
            assert!(line.contains(request.op().name()), "{line}");
        }
    }

    #[test]
    fn an_answer_of_another_type_is_still_a_well_formed_reply() {
        // The host tells "answered something unreadable" from "broke the protocol" this way.
        let line = serde_json::to_string(&Reply::Ok("yes")).unwrap();
        assert!(serde_json::from_str::<Reply<bool>>(&line).is_err());
        assert!(serde_json::from_str::<Reply>(&line).is_ok());
        assert!(serde_json::from_str::<Reply>("{\"ok\": tru").is_err());
    }
}
