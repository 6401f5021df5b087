//! The operations that travel through `invoke`, by name, with their JSON payloads. Both sides of
//! the boundary use these definitions, so they cannot drift apart.
//!
//! Each name is the [`ContextEngine`](crate::ContextEngine) method of the same name; its payload
//! is the method's argument as JSON (`null` for none) and its answer the method's return value as
//! JSON. The names are part of the frozen interface: add new ones, never rename one.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Payload: [`Usage`](crate::Usage).
pub const UPDATE_FROM_RESPONSE: &str = "update_from_response";
/// Payload: none; the message list rides in `messages`.
pub const SHOULD_COMPRESS_PREFLIGHT: &str = "should_compress_preflight";
/// Payload: none; the message list rides in `messages`.
pub const HAS_CONTENT_TO_COMPRESS: &str = "has_content_to_compress";
/// Payload: [`SessionStart`](crate::SessionStart).
pub const ON_SESSION_START: &str = "on_session_start";
/// Payload: [`SessionEnd`]; the session's messages ride in `messages`.
pub const ON_SESSION_END: &str = "on_session_end";
/// Payload: none.
pub const ON_SESSION_RESET: &str = "on_session_reset";
/// Payload: none. Answers the tool schemas (OpenAI function format).
pub const TOOL_SCHEMAS: &str = "tool_schemas";
/// Payload: [`ToolCallRequest`]. Answers the string the agent gets back.
pub const HANDLE_TOOL_CALL: &str = "handle_tool_call";
/// Payload: none. Answers [`EngineStatus`](crate::EngineStatus).
pub const STATUS: &str = "status";
/// Payload: [`ModelUpdate`].
pub const UPDATE_MODEL: &str = "update_model";
/// Payload: none. Answers an optional [`CompressionReport`](crate::CompressionReport).
pub const LAST_COMPRESSION: &str = "last_compression";
/// Payload: none. Answers a list of [`SessionInfo`](crate::SessionInfo).
pub const SESSIONS: &str = "sessions";
/// Payload: [`SessionId`]. Answers an optional [`SessionInfo`](crate::SessionInfo).
pub const SESSION: &str = "session";
/// Payload: [`SessionId`]. Answers whether the session existed.
pub const DELETE_SESSION: &str = "delete_session";
/// Engine-specific operations ([`ContextEngine::invoke`](crate::ContextEngine::invoke)) are sent
/// as `engine.<op>`, so they never collide with the names above.
pub const ENGINE_PREFIX: &str = "engine.";

/// The payload of [`ON_SESSION_END`].
#[derive(Serialize, Deserialize)]
pub struct SessionEnd {
    /// The session that ended.
    pub session_id: String,
}

/// The payload of [`HANDLE_TOOL_CALL`].
#[derive(Serialize, Deserialize)]
pub struct ToolCallRequest {
    /// The tool's name, as in its schema.
    pub name: String,
    /// The call's arguments, parsed.
    pub args: Value,
}

/// The payload of [`UPDATE_MODEL`].
#[derive(Serialize, Deserialize)]
pub struct ModelUpdate {
    /// The model's name.
    pub model: String,
    /// Its context window, in tokens.
    pub context_length: u64,
}

/// The payload of [`SESSION`] and [`DELETE_SESSION`].
#[derive(Serialize, Deserialize)]
pub struct SessionId {
    /// The session asked about.
    pub session_id: String,
}

/// What `new_engine` receives: the engine's setup, and why the host asks. Checking settings must
/// have no side effect, so the plugin side then calls `EnginePlugin::validate_settings` instead
/// of `create`. A bare [`EngineSetup`](crate::EngineSetup) reads as [`Purpose::Run`].
#[derive(Serialize, Deserialize)]
pub struct NewEngine {
    /// The engine's setup, flattened into the same JSON object.
    #[serde(flatten)]
    pub setup: crate::services::EngineSetup,
    /// Why the host calls `new_engine`.
    #[serde(default)]
    pub purpose: Purpose,
}

/// Why the host calls `new_engine`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Purpose {
    /// Build the engine ([`EnginePlugin::create`](crate::EnginePlugin::create)).
    #[default]
    Run,
    /// Only check its settings
    /// ([`EnginePlugin::validate_settings`](crate::EnginePlugin::validate_settings)); the
    /// object returned refuses every call.
    ValidateSettings,
}
