//! The engine's side of the protocol: a call becomes the method it names.

use ctxhost_sdk::{ContextEngine, EngineError, Message};

use crate::{EngineCall, EngineReply};

/// Runs `call` on `engine` and answers with the reply of the same operation. Every transport
/// serves calls through this one function: the ABI's `invoke` in a plugin, and an isolated
/// engine's process.
pub fn dispatch(
    engine: &mut dyn ContextEngine,
    call: EngineCall<&[Message]>,
) -> Result<EngineReply, EngineError> {
    Ok(match call {
        EngineCall::UpdateFromResponse { usage } => {
            engine.update_from_response(&usage)?;
            EngineReply::UpdateFromResponse
        }
        EngineCall::ShouldCompressPreflight { messages } => {
            EngineReply::ShouldCompressPreflight(engine.should_compress_preflight(messages)?)
        }
        EngineCall::HasContentToCompress { messages } => {
            EngineReply::HasContentToCompress(engine.has_content_to_compress(messages)?)
        }
        EngineCall::OnSessionStart { session } => {
            engine.on_session_start(&session)?;
            EngineReply::OnSessionStart
        }
        EngineCall::OnSessionEnd {
            session_id,
            messages,
        } => {
            engine.on_session_end(&session_id, messages)?;
            EngineReply::OnSessionEnd
        }
        EngineCall::OnSessionReset => {
            engine.on_session_reset()?;
            EngineReply::OnSessionReset
        }
        EngineCall::ToolSchemas => EngineReply::ToolSchemas(engine.tool_schemas()?),
        EngineCall::HandleToolCall { name, args } => {
            EngineReply::HandleToolCall(engine.handle_tool_call(&name, &args)?)
        }
        EngineCall::Status => EngineReply::Status(engine.status()?),
        EngineCall::UpdateModel {
            model,
            context_length,
        } => {
            engine.update_model(&model, context_length)?;
            EngineReply::UpdateModel
        }
        EngineCall::LastCompression => EngineReply::LastCompression(engine.last_compression()?),
        EngineCall::Sessions => EngineReply::Sessions(engine.sessions()?),
        EngineCall::Session { session_id } => EngineReply::Session(engine.session(&session_id)?),
        EngineCall::DeleteSession { session_id } => {
            EngineReply::DeleteSession(engine.delete_session(&session_id)?)
        }
        EngineCall::SelectContext { messages, request } => {
            EngineReply::SelectContext(engine.select_context(messages, &request)?)
        }
        EngineCall::Invoke { name, payload } => {
            EngineReply::Invoke(engine.invoke(&name, &payload)?)
        }
    })
}
