//! What the harness measures: anything that compresses a conversation, counts its tokens and
//! may offer tools. An engine on a [`FakeHost`](crate::FakeHost) is one ([`EngineSubject`]);
//! `ctxhost quality` measures a host session.

use ctxhost_sdk::{CompressOptions, ContextEngine, Message};
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

/// An engine built on a [`FakeHost`](crate::FakeHost), counted with its counter
/// ([`tokens`](crate::tokens)). An engine that keeps per-session state (and serves its tools
/// from it) is measured once its session has started (`on_session_start`).
pub struct EngineSubject<E: ContextEngine> {
    engine: E,
}

impl<E: ContextEngine> EngineSubject<E> {
    /// Measures `engine`.
    pub fn new(engine: E) -> Self {
        EngineSubject { engine }
    }

    /// The engine, e.g. to read its status after a run.
    pub fn engine_mut(&mut self) -> &mut E {
        &mut self.engine
    }
}

impl<E: ContextEngine> Subject for EngineSubject<E> {
    fn engine(&self) -> String {
        self.engine.name().to_string()
    }

    fn count(&self, messages: &[Message]) -> u64 {
        crate::tokens::count_messages(messages)
    }

    fn compress(
        &mut self,
        messages: &[Message],
        options: &CompressOptions,
    ) -> Result<Vec<Message>, SubjectError> {
        self.engine
            .compress(messages, options)
            .map_err(|e| SubjectError(e.to_string()))
    }

    fn tool_names(&mut self) -> Vec<String> {
        self.engine
            .tool_schemas()
            .unwrap_or_default()
            .iter()
            .filter_map(tool_name)
            .collect()
    }

    fn call_tool(&mut self, name: &str, args: &Value) -> Result<String, SubjectError> {
        self.engine
            .handle_tool_call(name, args)
            .map_err(|e| SubjectError(e.to_string()))
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
