//! # ctxhost-protocol
//!
//! The engine-call protocol: every [`ContextEngine`] operation as data, defined once.
//!
//! An engine that runs somewhere else (in a plugin library behind the stable ABI, or in a child
//! process) is reached the same way. The caller holds a [`RemoteEngine`]: a [`ContextEngine`]
//! that turns each method into an [`EngineCall`] and sends it over an [`EngineTransport`]. The
//! engine's side runs [`dispatch`], which turns the call back into the method and its answer
//! into the [`EngineReply`] of the same operation. The two hot paths,
//! [`should_compress`](ctxhost_sdk::ContextEngine::should_compress) and
//! [`compress`](ctxhost_sdk::ContextEngine::compress), are typed transport methods of their own: they run on
//! every turn and carry the whole conversation.
//!
//! Adding an operation: a method on [`ContextEngine`] with its default, and a variant in
//! [`Op`], [`EngineCall`] and [`EngineReply`]; the compiler then asks for the arms of this
//! crate that handle it. Transports never list operations.
//!
//! [`Op::name`] is each operation's stable name, the one the ABI's `invoke` carries ([`invoke`]
//! form): add names, never rename one, so plugins built earlier keep answering.
//!
//! The plugin's end of the stable ABI is here too, because it serves `invoke` through
//! [`dispatch`]: [`export_engine!`] turns an engine into the root module a host loads. The
//! layout both ends compile against stays in the SDK (`ctxhost_sdk::abi`): abi_stable checks
//! the crate each of its types comes from, so it never moves. A plugin crate depends on
//! `ctxhost-sdk` for the contract and on this crate for the one `export_engine!` line.
//!
//! [`ContextEngine`]: ctxhost_sdk::ContextEngine

mod dispatch;
#[doc(hidden)]
pub mod export;
pub mod invoke;
mod remote;
mod remote_host;

use std::convert::Infallible;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use ctxhost_sdk::{
    CompressionReport, ContextSelection, EngineStatus, SelectRequest, SessionInfo, SessionStart,
    Usage,
};

pub use dispatch::dispatch;
pub use remote::{EngineTransport, RemoteEngine};

/// Every operation of [`ContextEngine`](ctxhost_sdk::ContextEngine), by name: the hot paths included,
/// so a host can label any call it makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    /// [`ContextEngine::update_from_response`](ctxhost_sdk::ContextEngine::update_from_response).
    UpdateFromResponse,
    /// [`ContextEngine::should_compress`](ctxhost_sdk::ContextEngine::should_compress) (a hot path).
    ShouldCompress,
    /// [`ContextEngine::should_compress_preflight`](ctxhost_sdk::ContextEngine::should_compress_preflight).
    ShouldCompressPreflight,
    /// [`ContextEngine::compress`](ctxhost_sdk::ContextEngine::compress) (a hot path).
    Compress,
    /// [`ContextEngine::has_content_to_compress`](ctxhost_sdk::ContextEngine::has_content_to_compress).
    HasContentToCompress,
    /// [`ContextEngine::on_session_start`](ctxhost_sdk::ContextEngine::on_session_start).
    OnSessionStart,
    /// [`ContextEngine::on_session_end`](ctxhost_sdk::ContextEngine::on_session_end).
    OnSessionEnd,
    /// [`ContextEngine::on_session_reset`](ctxhost_sdk::ContextEngine::on_session_reset).
    OnSessionReset,
    /// [`ContextEngine::tool_schemas`](ctxhost_sdk::ContextEngine::tool_schemas).
    ToolSchemas,
    /// [`ContextEngine::handle_tool_call`](ctxhost_sdk::ContextEngine::handle_tool_call).
    HandleToolCall,
    /// [`ContextEngine::status`](ctxhost_sdk::ContextEngine::status).
    Status,
    /// [`ContextEngine::update_model`](ctxhost_sdk::ContextEngine::update_model).
    UpdateModel,
    /// [`ContextEngine::last_compression`](ctxhost_sdk::ContextEngine::last_compression).
    LastCompression,
    /// [`ContextEngine::sessions`](ctxhost_sdk::ContextEngine::sessions).
    Sessions,
    /// [`ContextEngine::session`](ctxhost_sdk::ContextEngine::session).
    Session,
    /// [`ContextEngine::delete_session`](ctxhost_sdk::ContextEngine::delete_session).
    DeleteSession,
    /// [`ContextEngine::select_context`](ctxhost_sdk::ContextEngine::select_context).
    SelectContext,
    /// [`ContextEngine::invoke`](ctxhost_sdk::ContextEngine::invoke): an engine's own operations.
    Invoke,
}

impl Op {
    /// Every operation, in the trait's order.
    pub const ALL: [Op; 18] = [
        Op::UpdateFromResponse,
        Op::ShouldCompress,
        Op::ShouldCompressPreflight,
        Op::Compress,
        Op::HasContentToCompress,
        Op::OnSessionStart,
        Op::OnSessionEnd,
        Op::OnSessionReset,
        Op::ToolSchemas,
        Op::HandleToolCall,
        Op::Status,
        Op::UpdateModel,
        Op::LastCompression,
        Op::Sessions,
        Op::Session,
        Op::DeleteSession,
        Op::SelectContext,
        Op::Invoke,
    ];

    /// The operation's stable name: the trait method's.
    pub const fn name(self) -> &'static str {
        match self {
            Op::UpdateFromResponse => "update_from_response",
            Op::ShouldCompress => "should_compress",
            Op::ShouldCompressPreflight => "should_compress_preflight",
            Op::Compress => "compress",
            Op::HasContentToCompress => "has_content_to_compress",
            Op::OnSessionStart => "on_session_start",
            Op::OnSessionEnd => "on_session_end",
            Op::OnSessionReset => "on_session_reset",
            Op::ToolSchemas => "tool_schemas",
            Op::HandleToolCall => "handle_tool_call",
            Op::Status => "status",
            Op::UpdateModel => "update_model",
            Op::LastCompression => "last_compression",
            Op::Sessions => "sessions",
            Op::Session => "session",
            Op::DeleteSession => "delete_session",
            Op::SelectContext => "select_context",
            Op::Invoke => "invoke",
        }
    }

    /// The operation named `name`, if any.
    pub fn from_name(name: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|op| op.name() == name)
    }

    /// Whether the operation is a typed hot path of every transport rather than an
    /// [`EngineCall`].
    pub const fn is_hot_path(self) -> bool {
        matches!(self, Op::ShouldCompress | Op::Compress)
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One operation other than the hot paths, with its arguments. `L` is how the call holds a
/// message list: `&[Message]` where it is made and served, and whatever a transport sends
/// instead (a change to the list the other side holds, say). A call holds at most one list.
///
/// Serialized, the tag (`op`) is the operation's [`Op::name`].
///
/// [`Message`]: ctxhost_sdk::Message
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", content = "args", rename_all = "snake_case")]
pub enum EngineCall<L> {
    /// The usage the provider reported for the last model call.
    UpdateFromResponse {
        /// As reported.
        usage: Usage,
    },
    /// A cheap check before a call, from local estimates.
    ShouldCompressPreflight {
        /// The context about to be sent.
        messages: L,
    },
    /// Whether anything could be compacted.
    HasContentToCompress {
        /// The context.
        messages: L,
    },
    /// A session begins.
    OnSessionStart {
        /// Which, and for which model.
        session: SessionStart,
    },
    /// A session ends.
    OnSessionEnd {
        /// The session that ended.
        session_id: String,
        /// Its context as it stands.
        messages: L,
    },
    /// `/new` or `/reset`.
    OnSessionReset,
    /// The engine's tools.
    ToolSchemas,
    /// Runs one of the engine's tools.
    HandleToolCall {
        /// The tool's name, as in its schema.
        name: String,
        /// The call's arguments, parsed.
        args: Value,
    },
    /// Where the engine stands.
    Status,
    /// The model changed.
    UpdateModel {
        /// The model's name.
        model: String,
        /// Its context window, in tokens.
        context_length: u64,
    },
    /// What the last compression did.
    LastCompression,
    /// The sessions the engine keeps state for.
    Sessions,
    /// One session's state.
    Session {
        /// The session asked about.
        session_id: String,
    },
    /// Forgets one session.
    DeleteSession {
        /// The session to forget.
        session_id: String,
    },
    /// What to send for one request.
    SelectContext {
        /// The messages about to be sent.
        messages: L,
        /// The newest message and the budget (boxed: a call stays small).
        request: Box<SelectRequest>,
    },
    /// One of the engine's own operations.
    Invoke {
        /// The operation's name, the engine's.
        name: String,
        /// Its argument.
        payload: Value,
    },
}

impl<L> EngineCall<L> {
    /// Which operation this is.
    pub fn op(&self) -> Op {
        match self {
            EngineCall::UpdateFromResponse { .. } => Op::UpdateFromResponse,
            EngineCall::ShouldCompressPreflight { .. } => Op::ShouldCompressPreflight,
            EngineCall::HasContentToCompress { .. } => Op::HasContentToCompress,
            EngineCall::OnSessionStart { .. } => Op::OnSessionStart,
            EngineCall::OnSessionEnd { .. } => Op::OnSessionEnd,
            EngineCall::OnSessionReset => Op::OnSessionReset,
            EngineCall::ToolSchemas => Op::ToolSchemas,
            EngineCall::HandleToolCall { .. } => Op::HandleToolCall,
            EngineCall::Status => Op::Status,
            EngineCall::UpdateModel { .. } => Op::UpdateModel,
            EngineCall::LastCompression => Op::LastCompression,
            EngineCall::Sessions => Op::Sessions,
            EngineCall::Session { .. } => Op::Session,
            EngineCall::DeleteSession { .. } => Op::DeleteSession,
            EngineCall::SelectContext { .. } => Op::SelectContext,
            EngineCall::Invoke { .. } => Op::Invoke,
        }
    }

    /// The message list the call holds, if it holds one.
    pub fn list(&self) -> Option<&L> {
        match self {
            EngineCall::ShouldCompressPreflight { messages }
            | EngineCall::HasContentToCompress { messages }
            | EngineCall::OnSessionEnd { messages, .. }
            | EngineCall::SelectContext { messages, .. } => Some(messages),
            _ => None,
        }
    }

    /// The same call with its message list (if any) turned into another form by `f`, which
    /// runs at most once; its error is the result's.
    pub fn try_map_list<M, E>(self, f: impl FnOnce(L) -> Result<M, E>) -> Result<EngineCall<M>, E> {
        Ok(match self {
            EngineCall::ShouldCompressPreflight { messages } => {
                EngineCall::ShouldCompressPreflight {
                    messages: f(messages)?,
                }
            }
            EngineCall::HasContentToCompress { messages } => EngineCall::HasContentToCompress {
                messages: f(messages)?,
            },
            EngineCall::OnSessionEnd {
                session_id,
                messages,
            } => EngineCall::OnSessionEnd {
                session_id,
                messages: f(messages)?,
            },
            EngineCall::SelectContext { messages, request } => EngineCall::SelectContext {
                messages: f(messages)?,
                request,
            },
            EngineCall::UpdateFromResponse { usage } => EngineCall::UpdateFromResponse { usage },
            EngineCall::OnSessionStart { session } => EngineCall::OnSessionStart { session },
            EngineCall::OnSessionReset => EngineCall::OnSessionReset,
            EngineCall::ToolSchemas => EngineCall::ToolSchemas,
            EngineCall::HandleToolCall { name, args } => EngineCall::HandleToolCall { name, args },
            EngineCall::Status => EngineCall::Status,
            EngineCall::UpdateModel {
                model,
                context_length,
            } => EngineCall::UpdateModel {
                model,
                context_length,
            },
            EngineCall::LastCompression => EngineCall::LastCompression,
            EngineCall::Sessions => EngineCall::Sessions,
            EngineCall::Session { session_id } => EngineCall::Session { session_id },
            EngineCall::DeleteSession { session_id } => EngineCall::DeleteSession { session_id },
            EngineCall::Invoke { name, payload } => EngineCall::Invoke { name, payload },
        })
    }

    /// [`try_map_list`](Self::try_map_list) with a conversion that cannot fail.
    pub fn map_list<M>(self, f: impl FnOnce(L) -> M) -> EngineCall<M> {
        match self.try_map_list(|list| Ok::<M, Infallible>(f(list))) {
            Ok(call) => call,
            Err(never) => match never {},
        }
    }
}

/// What an [`EngineCall`] answers: the variant of the same operation, holding the method's
/// return value.
///
/// Serialized, the tag (`op`) is the operation's [`Op::name`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", content = "value", rename_all = "snake_case")]
pub enum EngineReply {
    /// Done.
    UpdateFromResponse,
    /// Whether to compress now.
    ShouldCompressPreflight(bool),
    /// Whether anything could be compacted.
    HasContentToCompress(bool),
    /// Done.
    OnSessionStart,
    /// Done.
    OnSessionEnd,
    /// Done.
    OnSessionReset,
    /// The tools' JSON schemas (OpenAI function format).
    ToolSchemas(Vec<Value>),
    /// The text the agent gets back.
    HandleToolCall(String),
    /// Where the engine stands.
    Status(EngineStatus),
    /// Done.
    UpdateModel,
    /// The last compression's report, if any.
    LastCompression(Option<CompressionReport>),
    /// The sessions the engine keeps state for.
    Sessions(Vec<SessionInfo>),
    /// One session's state, if the engine holds any.
    Session(Option<SessionInfo>),
    /// Whether there was anything to delete.
    DeleteSession(bool),
    /// The messages to send, and what in them was recalled.
    SelectContext(ContextSelection),
    /// The engine's own operation's answer.
    Invoke(Value),
}

impl EngineReply {
    /// Which operation this answers.
    pub fn op(&self) -> Op {
        match self {
            EngineReply::UpdateFromResponse => Op::UpdateFromResponse,
            EngineReply::ShouldCompressPreflight(_) => Op::ShouldCompressPreflight,
            EngineReply::HasContentToCompress(_) => Op::HasContentToCompress,
            EngineReply::OnSessionStart => Op::OnSessionStart,
            EngineReply::OnSessionEnd => Op::OnSessionEnd,
            EngineReply::OnSessionReset => Op::OnSessionReset,
            EngineReply::ToolSchemas(_) => Op::ToolSchemas,
            EngineReply::HandleToolCall(_) => Op::HandleToolCall,
            EngineReply::Status(_) => Op::Status,
            EngineReply::UpdateModel => Op::UpdateModel,
            EngineReply::LastCompression(_) => Op::LastCompression,
            EngineReply::Sessions(_) => Op::Sessions,
            EngineReply::Session(_) => Op::Session,
            EngineReply::DeleteSession(_) => Op::DeleteSession,
            EngineReply::SelectContext(_) => Op::SelectContext,
            EngineReply::Invoke(_) => Op::Invoke,
        }
    }
}
