//! An engine on a [`FakeHost`](crate::FakeHost) as the quality harness of `ctxhost-quality`
//! measures it: compressed directly, counted with the fake host's counter.

use ctxhost_quality::{tool_name, Subject, SubjectError};
use ctxhost_sdk::{CompressOptions, ContextEngine, Message};
use serde_json::Value;

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
