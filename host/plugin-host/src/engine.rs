//! A plugin's engine object seen from the host through the [`ContextEngine`] trait, so the host
//! treats built-in engines and plugins alike. The hot paths are typed calls; every other
//! operation travels as JSON through `invoke`, and an operation an older plugin does not know
//! falls back to the trait's default behaviour.

use abi_stable::std_types::{RSlice, RStr};
use ctxhost_sdk::abi::{ops, EngineBox};
use ctxhost_sdk::{
    CompressOptions, CompressionReport, ContextEngine, EngineError, EngineStatus, Message,
    SessionInfo, SessionStart, Usage,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

/// An engine living in a plugin library, built by
/// [`PluginLibrary::instantiate`](crate::PluginLibrary::instantiate).
///
/// Calls run the plugin's code on the calling thread: make them off the async runtime. A panic in
/// the plugin comes back as an [`ErrorKind::Panicked`](ctxhost_sdk::ErrorKind::Panicked) error
/// and disables the engine; an abort or a crash cannot be caught in this process.
pub struct PluginEngine {
    name: String,
    object: EngineBox,
}

impl PluginEngine {
    pub(crate) fn new(name: String, object: EngineBox) -> Self {
        PluginEngine { name, object }
    }

    /// Sends `op` through `invoke` and reads the JSON answer.
    fn call<T: DeserializeOwned>(
        &mut self,
        op: &str,
        payload: &impl Serialize,
        messages: &[Message],
    ) -> Result<T, EngineError> {
        let payload = serde_json::to_string(payload)?;
        let answer = self
            .object
            .invoke(
                RStr::from_str(op),
                RStr::from_str(&payload),
                RSlice::from_slice(messages),
            )
            .into_result()
            .map_err(EngineError::from)?;
        serde_json::from_str(answer.as_str()).map_err(|error| {
            EngineError::failed(format!("engine answered `{op}` with invalid JSON: {error}"))
        })
    }

    /// Like `call`, but an operation the plugin does not know yields `default`.
    fn call_or<T: DeserializeOwned>(
        &mut self,
        op: &str,
        payload: &impl Serialize,
        messages: &[Message],
        default: T,
    ) -> Result<T, EngineError> {
        match self.call(op, payload, messages) {
            Err(error) if error.is_unsupported() => Ok(default),
            other => other,
        }
    }
}

impl ContextEngine for PluginEngine {
    fn name(&self) -> &str {
        &self.name
    }

    fn update_from_response(&mut self, usage: &Usage) -> Result<(), EngineError> {
        self.call_or(ops::UPDATE_FROM_RESPONSE, usage, &[], ())
    }

    fn should_compress(&mut self, prompt_tokens: u64) -> Result<bool, EngineError> {
        self.object
            .should_compress(prompt_tokens)
            .into_result()
            .map_err(EngineError::from)
    }

    fn should_compress_preflight(&mut self, messages: &[Message]) -> Result<bool, EngineError> {
        self.call_or(ops::SHOULD_COMPRESS_PREFLIGHT, &(), messages, false)
    }

    fn compress(
        &mut self,
        messages: &[Message],
        options: &CompressOptions,
    ) -> Result<Vec<Message>, EngineError> {
        let options = serde_json::to_string(options)?;
        self.object
            .compress(RSlice::from_slice(messages), RStr::from_str(&options))
            .into_result()
            .map(|messages| messages.into_vec())
            .map_err(EngineError::from)
    }

    fn has_content_to_compress(&mut self, messages: &[Message]) -> Result<bool, EngineError> {
        self.call_or(ops::HAS_CONTENT_TO_COMPRESS, &(), messages, true)
    }

    fn on_session_start(&mut self, session: &SessionStart) -> Result<(), EngineError> {
        self.call_or(ops::ON_SESSION_START, session, &[], ())
    }

    fn on_session_end(
        &mut self,
        session_id: &str,
        messages: &[Message],
    ) -> Result<(), EngineError> {
        let end = ops::SessionEnd {
            session_id: session_id.to_string(),
        };
        self.call_or(ops::ON_SESSION_END, &end, messages, ())
    }

    fn on_session_reset(&mut self) -> Result<(), EngineError> {
        self.call_or(ops::ON_SESSION_RESET, &(), &[], ())
    }

    fn tool_schemas(&mut self) -> Result<Vec<Value>, EngineError> {
        self.call_or(ops::TOOL_SCHEMAS, &(), &[], Vec::new())
    }

    fn handle_tool_call(&mut self, name: &str, args: &Value) -> Result<String, EngineError> {
        let request = ops::ToolCallRequest {
            name: name.to_string(),
            args: args.clone(),
        };
        self.call(ops::HANDLE_TOOL_CALL, &request, &[])
    }

    fn status(&mut self) -> Result<EngineStatus, EngineError> {
        self.call(ops::STATUS, &(), &[])
    }

    fn update_model(&mut self, model: &str, context_length: u64) -> Result<(), EngineError> {
        let update = ops::ModelUpdate {
            model: model.to_string(),
            context_length,
        };
        self.call_or(ops::UPDATE_MODEL, &update, &[], ())
    }

    fn last_compression(&mut self) -> Result<Option<CompressionReport>, EngineError> {
        self.call_or(ops::LAST_COMPRESSION, &(), &[], None)
    }

    fn sessions(&mut self) -> Result<Vec<SessionInfo>, EngineError> {
        self.call(ops::SESSIONS, &(), &[])
    }

    fn session(&mut self, session_id: &str) -> Result<Option<SessionInfo>, EngineError> {
        let id = ops::SessionId {
            session_id: session_id.to_string(),
        };
        self.call(ops::SESSION, &id, &[])
    }

    fn delete_session(&mut self, session_id: &str) -> Result<bool, EngineError> {
        let id = ops::SessionId {
            session_id: session_id.to_string(),
        };
        self.call(ops::DELETE_SESSION, &id, &[])
    }

    fn invoke(&mut self, op: &str, payload: &Value) -> Result<Value, EngineError> {
        self.call(&format!("{}{op}", ops::ENGINE_PREFIX), payload, &[])
    }
}
