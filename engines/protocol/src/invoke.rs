//! The form calls and replies take through the stable ABI's `invoke(op, payload, messages)`:
//! the operation's [`Op::name`], its arguments as JSON (the method's one argument as it is, or
//! an object of its several, `null` for none), the message list beside them without
//! serialization, and the method's return value as JSON. An engine's own operations go as
//! [`ENGINE_PREFIX`] and their name, so they never collide with the trait's.
//!
//! Plugins built earlier read and write exactly this form: it is frozen like the ABI's layout.
//! A name the other side does not know answers [`ErrorKind::Unsupported`](ctxhost_sdk::ErrorKind).

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use ctxhost_sdk::{EngineError, Message};

use crate::{EngineCall, EngineReply, Op};

/// The prefix of an engine's own operations ([`EngineCall::Invoke`]) in `invoke`'s `op`.
pub const ENGINE_PREFIX: &str = "engine.";

/// A call as `invoke` carries it.
#[derive(Debug, Clone, PartialEq)]
pub struct InvokeCall<'a> {
    /// The operation's name.
    pub op: String,
    /// Its arguments, as JSON.
    pub payload: String,
    /// The message list, for the operations that take one (empty for the others).
    pub messages: &'a [Message],
}

/// The arguments of `on_session_end`, `session` and `delete_session`.
#[derive(Serialize, Deserialize)]
struct SessionIdArgs<S> {
    session_id: S,
}

/// The arguments of `handle_tool_call`.
#[derive(Serialize, Deserialize)]
struct ToolCallArgs<S, V> {
    name: S,
    args: V,
}

/// The arguments of `update_model`.
#[derive(Serialize, Deserialize)]
struct ModelArgs<S> {
    model: S,
    context_length: u64,
}

impl<'a> EngineCall<&'a [Message]> {
    /// This call in `invoke`'s form.
    pub fn to_invoke(&self) -> Result<InvokeCall<'a>, EngineError> {
        let op = match self {
            EngineCall::Invoke { name, .. } => format!("{ENGINE_PREFIX}{name}"),
            other => other.op().name().to_string(),
        };
        let payload = match self {
            EngineCall::UpdateFromResponse { usage } => json(usage)?,
            EngineCall::OnSessionStart { session } => json(session)?,
            EngineCall::OnSessionEnd { session_id, .. }
            | EngineCall::Session { session_id }
            | EngineCall::DeleteSession { session_id } => json(&SessionIdArgs {
                session_id: session_id.as_str(),
            })?,
            EngineCall::HandleToolCall { name, args } => json(&ToolCallArgs {
                name: name.as_str(),
                args,
            })?,
            EngineCall::UpdateModel {
                model,
                context_length,
            } => json(&ModelArgs {
                model: model.as_str(),
                context_length: *context_length,
            })?,
            EngineCall::Invoke { payload, .. } => json(payload)?,
            EngineCall::SelectContext { request, .. } => json(request)?,
            EngineCall::ShouldCompressPreflight { .. }
            | EngineCall::HasContentToCompress { .. }
            | EngineCall::OnSessionReset
            | EngineCall::ToolSchemas
            | EngineCall::Status
            | EngineCall::LastCompression
            | EngineCall::Sessions => json(&())?,
        };
        Ok(InvokeCall {
            op,
            payload,
            messages: self.list().copied().unwrap_or_default(),
        })
    }

    /// The call `invoke` carried; [`ErrorKind::Unsupported`](ctxhost_sdk::ErrorKind) for a name
    /// that is not one.
    pub fn from_invoke(
        op: &str,
        payload: &str,
        messages: &'a [Message],
    ) -> Result<Self, EngineError> {
        if let Some(name) = op.strip_prefix(ENGINE_PREFIX) {
            return Ok(EngineCall::Invoke {
                name: name.to_string(),
                payload: parse(payload)?,
            });
        }
        let Some(known) = Op::from_name(op) else {
            return Err(EngineError::unsupported(op));
        };
        Ok(match known {
            Op::UpdateFromResponse => EngineCall::UpdateFromResponse {
                usage: parse(payload)?,
            },
            Op::ShouldCompressPreflight => EngineCall::ShouldCompressPreflight { messages },
            Op::HasContentToCompress => EngineCall::HasContentToCompress { messages },
            Op::OnSessionStart => EngineCall::OnSessionStart {
                session: parse(payload)?,
            },
            Op::OnSessionEnd => {
                let args: SessionIdArgs<String> = parse(payload)?;
                EngineCall::OnSessionEnd {
                    session_id: args.session_id,
                    messages,
                }
            }
            Op::OnSessionReset => EngineCall::OnSessionReset,
            Op::ToolSchemas => EngineCall::ToolSchemas,
            Op::HandleToolCall => {
                let args: ToolCallArgs<String, Value> = parse(payload)?;
                EngineCall::HandleToolCall {
                    name: args.name,
                    args: args.args,
                }
            }
            Op::Status => EngineCall::Status,
            Op::UpdateModel => {
                let args: ModelArgs<String> = parse(payload)?;
                EngineCall::UpdateModel {
                    model: args.model,
                    context_length: args.context_length,
                }
            }
            Op::SelectContext => EngineCall::SelectContext {
                messages,
                request: parse(payload)?,
            },
            Op::LastCompression => EngineCall::LastCompression,
            Op::Sessions => EngineCall::Sessions,
            Op::Session => EngineCall::Session {
                session_id: parse::<SessionIdArgs<String>>(payload)?.session_id,
            },
            Op::DeleteSession => EngineCall::DeleteSession {
                session_id: parse::<SessionIdArgs<String>>(payload)?.session_id,
            },
            // The hot paths have entry points of their own; an engine's own operations carry
            // the prefix.
            Op::ShouldCompress | Op::Compress | Op::Invoke => {
                return Err(EngineError::unsupported(op))
            }
        })
    }
}

impl EngineReply {
    /// This reply in `invoke`'s form: the method's return value as JSON.
    pub fn to_invoke(&self) -> Result<String, EngineError> {
        match self {
            EngineReply::UpdateFromResponse
            | EngineReply::OnSessionStart
            | EngineReply::OnSessionEnd
            | EngineReply::OnSessionReset
            | EngineReply::UpdateModel => json(&()),
            EngineReply::ShouldCompressPreflight(flag)
            | EngineReply::HasContentToCompress(flag)
            | EngineReply::DeleteSession(flag) => json(flag),
            EngineReply::ToolSchemas(schemas) => json(schemas),
            EngineReply::HandleToolCall(text) => json(text),
            EngineReply::Status(status) => json(status),
            EngineReply::LastCompression(report) => json(report),
            EngineReply::Sessions(sessions) => json(sessions),
            EngineReply::Session(session) => json(session),
            EngineReply::Invoke(value) => json(value),
            EngineReply::SelectContext(selection) => json(selection),
        }
    }

    /// The reply `invoke` answered to a call of `op`.
    pub fn from_invoke(op: Op, answer: &str) -> Result<Self, EngineError> {
        answered(op, answer).map_err(|error| {
            EngineError::failed(format!("engine answered `{op}` with invalid JSON: {error}"))
        })
    }
}

fn answered(op: Op, answer: &str) -> Result<EngineReply, serde_json::Error> {
    let unit = |reply: EngineReply| serde_json::from_str::<()>(answer).map(|()| reply);
    Ok(match op {
        Op::UpdateFromResponse => unit(EngineReply::UpdateFromResponse)?,
        Op::ShouldCompressPreflight => EngineReply::ShouldCompressPreflight(read(answer)?),
        Op::HasContentToCompress => EngineReply::HasContentToCompress(read(answer)?),
        Op::OnSessionStart => unit(EngineReply::OnSessionStart)?,
        Op::OnSessionEnd => unit(EngineReply::OnSessionEnd)?,
        Op::OnSessionReset => unit(EngineReply::OnSessionReset)?,
        Op::ToolSchemas => EngineReply::ToolSchemas(read(answer)?),
        Op::HandleToolCall => EngineReply::HandleToolCall(read(answer)?),
        Op::Status => EngineReply::Status(read(answer)?),
        Op::UpdateModel => unit(EngineReply::UpdateModel)?,
        Op::LastCompression => EngineReply::LastCompression(read(answer)?),
        Op::Sessions => EngineReply::Sessions(read(answer)?),
        Op::Session => EngineReply::Session(read(answer)?),
        Op::DeleteSession => EngineReply::DeleteSession(read(answer)?),
        Op::Invoke => EngineReply::Invoke(read(answer)?),
        Op::SelectContext => EngineReply::SelectContext(read(answer)?),
        // Never sent through `invoke` (see `from_invoke`).
        Op::ShouldCompress | Op::Compress => {
            return Err(serde::de::Error::custom(format!(
                "`{op}` has no reply through invoke"
            )))
        }
    })
}

fn read<T: DeserializeOwned>(answer: &str) -> Result<T, serde_json::Error> {
    serde_json::from_str(answer)
}

/// An empty payload reads as `null`.
fn parse<T: DeserializeOwned>(payload: &str) -> Result<T, EngineError> {
    let payload = if payload.is_empty() { "null" } else { payload };
    serde_json::from_str(payload).map_err(EngineError::from)
}

fn json<T: Serialize + ?Sized>(value: &T) -> Result<String, EngineError> {
    serde_json::to_string(value).map_err(|e| EngineError::failed(e.to_string()))
}
