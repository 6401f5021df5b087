//! The caller's side of the protocol: an engine that runs elsewhere, seen as a
//! [`ContextEngine`] like any other.

use serde_json::Value;

use ctxhost_sdk::{
    CompressOptions, CompressionReport, ContextEngine, ContextSelection, EngineError, EngineStatus,
    Message, SelectRequest, SessionInfo, SessionStart, Usage,
};

use crate::{dispatch, EngineCall, EngineReply, Op};

/// How a [`RemoteEngine`] reaches its engine: the two typed hot paths, and every other
/// operation as an [`EngineCall`] answered by [`dispatch`] on the other side.
pub trait EngineTransport: Send {
    /// [`ContextEngine::should_compress`], typed: it runs on every turn.
    fn should_compress(&mut self, prompt_tokens: u64) -> Result<bool, EngineError>;

    /// [`ContextEngine::compress`], typed: it carries the whole conversation, each way.
    fn compress(
        &mut self,
        messages: &[Message],
        options: &CompressOptions,
    ) -> Result<Vec<Message>, EngineError>;

    /// Any other operation; the reply is the one the other side's [`dispatch`] gave.
    fn call(&mut self, call: &EngineCall<&[Message]>) -> Result<EngineReply, EngineError>;
}

/// An engine reached through a transport: each [`ContextEngine`] method is one call. An
/// operation the other side does not know ([`ErrorKind::Unsupported`]: a plugin built before
/// the operation existed) does what the trait does by default, when that default is not itself
/// an error.
///
/// [`ErrorKind::Unsupported`]: ctxhost_sdk::ErrorKind::Unsupported
pub struct RemoteEngine<T> {
    name: String,
    transport: T,
}

impl<T: EngineTransport> RemoteEngine<T> {
    /// The engine `name`, reached through `transport`.
    pub fn new(name: impl Into<String>, transport: T) -> Self {
        RemoteEngine {
            name: name.into(),
            transport,
        }
    }

    /// The transport, for what is particular to it.
    pub fn transport(&self) -> &T {
        &self.transport
    }

    /// Sends `call`; see the type's docs for an operation the other side does not know.
    pub fn call(&mut self, call: EngineCall<&[Message]>) -> Result<EngineReply, EngineError> {
        match self.transport.call(&call) {
            Err(error) if error.is_unsupported() => {
                dispatch(&mut TraitDefaults, call).map_err(|_| error)
            }
            other => other,
        }
    }

    fn mismatch(&self, asked: Op, reply: &EngineReply) -> EngineError {
        EngineError::failed(format!(
            "engine '{}' answered {asked} with the reply to {}",
            self.name,
            reply.op()
        ))
    }
}

/// Sends a call and takes the value out of the reply of the same operation.
macro_rules! ask {
    ($engine:ident, $call:expr, $reply:pat => $value:expr) => {{
        let call = $call;
        let asked = call.op();
        match $engine.call(call)? {
            $reply => Ok($value),
            other => Err($engine.mismatch(asked, &other)),
        }
    }};
}

impl<T: EngineTransport> ContextEngine for RemoteEngine<T> {
    fn name(&self) -> &str {
        &self.name
    }

    fn update_from_response(&mut self, usage: &Usage) -> Result<(), EngineError> {
        ask!(self, EngineCall::UpdateFromResponse { usage: usage.clone() },
            EngineReply::UpdateFromResponse => ())
    }

    fn should_compress(&mut self, prompt_tokens: u64) -> Result<bool, EngineError> {
        self.transport.should_compress(prompt_tokens)
    }

    fn should_compress_preflight(&mut self, messages: &[Message]) -> Result<bool, EngineError> {
        ask!(self, EngineCall::ShouldCompressPreflight { messages },
            EngineReply::ShouldCompressPreflight(flag) => flag)
    }

    fn compress(
        &mut self,
        messages: &[Message],
        options: &CompressOptions,
    ) -> Result<Vec<Message>, EngineError> {
        self.transport.compress(messages, options)
    }

    fn has_content_to_compress(&mut self, messages: &[Message]) -> Result<bool, EngineError> {
        ask!(self, EngineCall::HasContentToCompress { messages },
            EngineReply::HasContentToCompress(flag) => flag)
    }

    fn on_session_start(&mut self, session: &SessionStart) -> Result<(), EngineError> {
        ask!(self, EngineCall::OnSessionStart { session: session.clone() },
            EngineReply::OnSessionStart => ())
    }

    fn on_session_end(
        &mut self,
        session_id: &str,
        messages: &[Message],
    ) -> Result<(), EngineError> {
        let call = EngineCall::OnSessionEnd {
            session_id: session_id.to_string(),
            messages,
        };
        ask!(self, call, EngineReply::OnSessionEnd => ())
    }

    fn on_session_reset(&mut self) -> Result<(), EngineError> {
        ask!(self, EngineCall::OnSessionReset, EngineReply::OnSessionReset => ())
    }

    fn tool_schemas(&mut self) -> Result<Vec<Value>, EngineError> {
        ask!(self, EngineCall::ToolSchemas, EngineReply::ToolSchemas(schemas) => schemas)
    }

    fn handle_tool_call(&mut self, name: &str, args: &Value) -> Result<String, EngineError> {
        let call = EngineCall::HandleToolCall {
            name: name.to_string(),
            args: args.clone(),
        };
        ask!(self, call, EngineReply::HandleToolCall(text) => text)
    }

    fn status(&mut self) -> Result<EngineStatus, EngineError> {
        ask!(self, EngineCall::Status, EngineReply::Status(status) => status)
    }

    fn update_model(&mut self, model: &str, context_length: u64) -> Result<(), EngineError> {
        let call = EngineCall::UpdateModel {
            model: model.to_string(),
            context_length,
        };
        ask!(self, call, EngineReply::UpdateModel => ())
    }

    fn last_compression(&mut self) -> Result<Option<CompressionReport>, EngineError> {
        ask!(self, EngineCall::LastCompression, EngineReply::LastCompression(report) => report)
    }

    fn sessions(&mut self) -> Result<Vec<SessionInfo>, EngineError> {
        ask!(self, EngineCall::Sessions, EngineReply::Sessions(sessions) => sessions)
    }

    fn session(&mut self, session_id: &str) -> Result<Option<SessionInfo>, EngineError> {
        let call = EngineCall::Session {
            session_id: session_id.to_string(),
        };
        ask!(self, call, EngineReply::Session(session) => session)
    }

    fn delete_session(&mut self, session_id: &str) -> Result<bool, EngineError> {
        let call = EngineCall::DeleteSession {
            session_id: session_id.to_string(),
        };
        ask!(self, call, EngineReply::DeleteSession(existed) => existed)
    }

    fn select_context(
        &mut self,
        messages: &[Message],
        request: &SelectRequest,
    ) -> Result<ContextSelection, EngineError> {
        let call = EngineCall::SelectContext {
            messages,
            request: Box::new(request.clone()),
        };
        ask!(self, call, EngineReply::SelectContext(selection) => selection)
    }

    fn invoke(&mut self, op: &str, payload: &Value) -> Result<Value, EngineError> {
        let call = EngineCall::Invoke {
            name: op.to_string(),
            payload: payload.clone(),
        };
        ask!(self, call, EngineReply::Invoke(answer) => answer)
    }
}

/// The trait's defaults, for an operation the other side does not know. It keeps no tracker, so
/// the defaults that need one answer "unsupported", like the other side did, and so does its
/// one required method.
struct TraitDefaults;

impl ContextEngine for TraitDefaults {
    fn name(&self) -> &str {
        "defaults"
    }

    fn compress(
        &mut self,
        _: &[Message],
        _: &CompressOptions,
    ) -> Result<Vec<Message>, EngineError> {
        Err(EngineError::unsupported("compress"))
    }
}
