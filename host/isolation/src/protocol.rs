//! What the host and an engine's child process say to each other: one JSON object per line.
//! The host starts with [`Init`]; then each line is a [`Call`] of one session (named by the
//! host's number for it) and call (a number the reply carries back, which the child cannot
//! guess), and each reply is a line [`Framed`] by that call number, in whatever order the
//! child answers them. A reply for a call the host is not waiting on breaks the protocol. Calls of one
//! session are answered in order; of different sessions, concurrently. The operations are the
//! engine-call protocol's ([`ctxhost_protocol`]); message lists cross as changes
//! ([`super::lists`]), to the last list of the same session.

use ctxhost_protocol::{EngineCall, Op};
use ctxhost_sdk::{CompressOptions, EngineError, ErrorKind, SettingFault};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use super::lists::{CompressedList, MessageList};

/// The first line the host sends: how to build the engine.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Init {
    /// The config as the host settled it (the file, the project's trust, the command line's
    /// overrides): the child runs on the very value the host does, without reading the file.
    pub config: ctxhost_config::Config,
    /// `$CTXHOST_HOME`.
    pub home: std::path::PathBuf,
    /// The engine to start.
    pub name: String,
    /// Where engines keep their data.
    pub data_root: std::path::PathBuf,
    pub verbose: bool,
    /// What the child is for.
    #[serde(default)]
    pub purpose: Purpose,
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

/// One line from the host after [`Init`]: what one session asks.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Call {
    /// The session, numbered by the host (unique within one child's life).
    pub session: u64,
    /// The call, numbered by the host: the reply carries it back ([`Framed`]). Drawn so that
    /// the child cannot guess another call's from the ones it is given: a session's engine
    /// can only answer its own calls.
    pub call: u64,
    pub body: SessionCall,
}

/// What a session asks of the child.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionCall {
    /// Builds the session's engine instance, its state kept under `data_root` (its store is
    /// read again when a new child reopens it). Answered `()` or the engine's start-up error.
    Open { data_root: std::path::PathBuf },
    /// One operation on the session's engine.
    Request(Request),
    /// Drops the session's engine instance. Answered `()`.
    Close,
}

/// The call number of [`Init`]'s answer.
pub const INIT_CALL: u64 = 0;

/// A reply line: the number of the call it answers, a space, then the [`Reply`]. The number
/// comes first so the host's reader hands a line to its caller without reading the answer,
/// which only the caller knows the type of.
pub struct Framed;

impl Framed {
    /// The line (with its newline) answering `call`.
    pub fn line<T: Serialize>(call: u64, reply: &Reply<T>) -> serde_json::Result<Vec<u8>> {
        let mut line = format!("{call} ").into_bytes();
        serde_json::to_writer(&mut line, reply)?;
        line.push(b'\n');
        Ok(line)
    }

    /// The call a line (without its newline) answers, and its reply; `None` for a line not
    /// framed so.
    pub fn split(line: &str) -> Option<(u64, &str)> {
        let (call, reply) = line.split_once(' ')?;
        Some((call.parse().ok()?, reply))
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
/// [`CompressedList`]), an [`EngineReply`](ctxhost_protocol::EngineReply) for a
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
    use crate::lists::Part;
    use ctxhost_protocol::EngineReply;
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
    fn a_reply_line_names_its_call_first() {
        let line = Framed::line(42, &Reply::Ok(true)).unwrap();
        let line = String::from_utf8(line).unwrap();
        assert!(line.ends_with('\n') && line.matches('\n').count() == 1);
        let (call, reply) = Framed::split(line.trim_end()).unwrap();
        assert_eq!(call, 42);
        assert!(matches!(
            serde_json::from_str(reply).unwrap(),
            Reply::Ok(true)
        ));
        assert!(Framed::split("{\"ok\": true}").is_none());
        assert!(Framed::split("x {}").is_none());
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
