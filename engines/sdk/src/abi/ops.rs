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
pub const LAST_COMPRESSION: &str = "last_compression";
pub const SESSIONS: &str = "sessions";
pub const SESSION: &str = "session";
pub const DELETE_SESSION: &str = "delete_session";
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

#[derive(Serialize, Deserialize)]
pub struct SessionId {
    pub session_id: String,
}

/// What `new_engine` receives: the engine's setup, and why the host asks. Checking settings must
/// have no side effect, so the plugin side then calls `EnginePlugin::validate_settings` instead
/// of `create`.
#[derive(Serialize, Deserialize)]
pub struct NewEngine {
    #[serde(flatten)]
    pub setup: crate::services::EngineSetup,
    #[serde(default)]
    pub purpose: Purpose,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Purpose {
    #[default]
    Run,
    ValidateSettings,
}
