//! What the harness measures: anything that compresses a conversation, counts its tokens and
//! may offer tools. An engine on ctxhost-sdk-test's fake host is one (its `EngineSubject`);
//! `ctxhost quality` measures a host session.

use ctxhost_sdk::{CompressOptions, Message};
use serde_json::Value;

/// A compression or tool call that failed, in the subject's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SubjectError(pub String);

/// An engine as the harness drives it.
pub trait Subject {
    /// The engine's name, for the report.
    fn engine(&self) -> String;
    /// Tokens of `messages`, with the counter the engine is given.
    fn count(&self, messages: &[Message]) -> u64;
    /// One compression.
    fn compress(
        &mut self,
        messages: &[Message],
        options: &CompressOptions,
    ) -> Result<Vec<Message>, SubjectError>;
    /// The names of the engine's tools (none by default).
    fn tool_names(&mut self) -> Vec<String> {
        Vec::new()
    }
    /// Calls one of the engine's tools; its answer as the agent would read it.
    fn call_tool(&mut self, name: &str, args: &Value) -> Result<String, SubjectError> {
        let _ = args;
        Err(SubjectError(format!("no tool '{name}'")))
    }
}

/// A tool's name in its OpenAI function schema (`{"function": {"name": ...}}` or flat).
pub fn tool_name(schema: &Value) -> Option<String> {
    schema
        .get("function")
        .unwrap_or(schema)
        .get("name")
        .and_then(Value::as_str)
        .map(str::to_string)
}
