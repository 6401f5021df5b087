//! The operations that travel through `invoke`, by name, with their JSON payloads. Both sides of
//! the boundary use these definitions, so they cannot drift apart.

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub const UPDATE_FROM_RESPONSE: &str = "update_from_response";
pub const SHOULD_COMPRESS_PREFLIGHT: &str = "should_compress_preflight";
pub const HAS_CONTENT_TO_COMPRESS: &str = "has_content_to_compress";
pub const ON_SESSION_START: &str = "on_session_start";
pub const ON_SESSION_END: &str = "on_session_end";
pub const ON_SESSION_RESET: &str = "on_session_reset";
pub const TOOL_SCHEMAS: &str = "tool_schemas";
pub const HANDLE_TOOL_CALL: &str = "handle_tool_call";
pub const STATUS: &str = "status";
pub const UPDATE_MODEL: &str = "update_model";
/// Engine-specific operations are sent as `engine.<op>`.
pub const ENGINE_PREFIX: &str = "engine.";

#[derive(Serialize, Deserialize)]
pub struct SessionEnd {
    pub session_id: String,
}

#[derive(Serialize, Deserialize)]
pub struct ToolCallRequest {
    pub name: String,
    pub args: Value,
}

#[derive(Serialize, Deserialize)]
pub struct ModelUpdate {
    pub model: String,
    pub context_length: u64,
}
