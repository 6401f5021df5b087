//! Runs engine operations off the async runtime, and keeps the conversation safe when an engine
//! fails: a failed or panicking engine is reported once, its output is discarded (the messages
//! the host had are kept), and the rest of the session runs on the built-in compressor.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

use ctxhost_sdk::sequence;
use ctxhost_sdk::{
    CompressOptions, ContextEngine, EngineError, EngineStatus, ErrorKind, Message, SessionStart,
    Usage,
};
use serde_json::Value;

type SharedEngine = Arc<Mutex<Box<dyn ContextEngine>>>;

struct Slot {
    name: String,
    engine: SharedEngine,
}

/// The active engine of a session, with the built-in compressor standing by.
pub struct Runner {
    active: Slot,
    standby: Option<Slot>,
    failure: Option<String>,
}

/// What a compression produced.
#[derive(Debug)]
pub struct CompressOutcome {
    pub messages: Arc<Vec<Message>>,
    /// The engine that produced `messages` (or that failed).
    pub engine: String,
    /// Set when the engine failed and `messages` is the input, unchanged.
    pub error: Option<String>,
}

impl Runner {
    /// `standby` is the compressor to switch to if `engine` fails (none when `engine` is it).
    pub fn new(
        name: &str,
        engine: Box<dyn ContextEngine>,
        standby: Option<Box<dyn ContextEngine>>,
    ) -> Self {
        Runner {
            active: Slot {
                name: name.to_string(),
                engine: Arc::new(Mutex::new(engine)),
            },
            standby: standby.map(|engine| Slot {
                name: crate::config::BUILT_IN_ENGINE.to_string(),
                engine: Arc::new(Mutex::new(engine)),
            }),
            failure: None,
        }
    }

    /// The engine now in use.
    pub fn engine_name(&self) -> &str {
        &self.active.name
    }

    /// Why the configured engine was replaced by the compressor, if it was.
    pub fn failure(&self) -> Option<&str> {
        self.failure.as_deref()
    }

    /// Runs `op` on the active engine in a blocking thread. An error comes back as one line; a
    /// panic also retires the engine in favour of the standby compressor (its state can no
    /// longer be trusted).
    pub async fn call<T, F>(&mut self, op: &'static str, body: F) -> Result<T, String>
    where
        T: Send + 'static,
        F: FnOnce(&mut dyn ContextEngine) -> Result<T, EngineError> + Send + 'static,
    {
        let engine = self.active.engine.clone();
        let outcome = tokio::task::spawn_blocking(move || {
            let mut guard = match engine.lock() {
                Ok(guard) => guard,
                Err(poisoned) => poisoned.into_inner(),
            };
            catch_unwind(AssertUnwindSafe(|| body(guard.as_mut())))
        })
        .await;
        match outcome {
            Ok(Ok(Ok(value))) => Ok(value),
            Ok(Ok(Err(error))) if error.kind() == ErrorKind::Panicked => {
                Err(self.retire(format!("panicked in {op}: {}", error.message())))
            }
            Ok(Ok(Err(error))) => Err(format!(
                "engine '{}' failed in {op}: {error}",
                self.active.name
            )),
            Ok(Err(_)) | Err(_) => Err(self.retire(format!("panicked in {op}"))),
        }
    }

    /// Reports the active engine's failure and, if it is a plugin, hands the session to the
    /// standby compressor.
    fn retire(&mut self, message: String) -> String {
        let line = format!("engine '{}' {message}", self.active.name);
        self.switch_to_standby(&line);
        line
    }

    fn switch_to_standby(&mut self, reason: &str) {
        if let Some(standby) = self.standby.take() {
            self.active = standby;
            self.failure = Some(reason.to_string());
        }
    }

    /// Compresses `messages`. On any failure, or when the engine returns an invalid chat
    /// sequence from a valid one, the input comes back unchanged with the reason.
    pub async fn compress(
        &mut self,
        messages: Arc<Vec<Message>>,
        options: CompressOptions,
    ) -> CompressOutcome {
        let engine = self.active.name.clone();
        let input = messages.clone();
        let result = self
            .call("compress", move |e| e.compress(&input, &options))
            .await;
        match result {
            Ok(output) => {
                if let Err(problem) = sequence::validate(&output) {
                    if sequence::validate(&messages).is_ok() {
                        let reason = self.retire(format!(
                            "returned an invalid chat sequence ({problem}); the conversation is kept unchanged"
                        ));
                        return CompressOutcome {
                            messages,
                            engine,
                            error: Some(reason),
                        };
                    }
                }
                CompressOutcome {
                    messages: Arc::new(output),
                    engine,
                    error: None,
                }
            }
            Err(reason) => {
                // A failed compression retires the engine too: the next one would likely fail
                // the same way, and the conversation must keep fitting.
                if self.active.name == engine {
                    self.switch_to_standby(&reason);
                }
                CompressOutcome {
                    messages,
                    engine,
                    error: Some(format!("{reason}; the conversation is returned unchanged")),
                }
            }
        }
    }
}

/// The lifecycle and tool operations, each run like [`Runner::call`]. Failures are reported the
/// same way and fall back to the operation's default.
impl Runner {
    pub async fn on_session_start(&mut self, session: SessionStart) -> Result<(), String> {
        self.call("on_session_start", move |e| e.on_session_start(&session))
            .await
    }

    pub async fn on_session_end(
        &mut self,
        session_id: String,
        messages: Arc<Vec<Message>>,
    ) -> Result<(), String> {
        self.call("on_session_end", move |e| {
            e.on_session_end(&session_id, &messages)
        })
        .await
    }

    pub async fn update_from_response(&mut self, usage: Usage) -> Result<(), String> {
        self.call("update_from_response", move |e| {
            e.update_from_response(&usage)
        })
        .await
    }

    pub async fn should_compress(&mut self, prompt_tokens: u64) -> Result<bool, String> {
        self.call("should_compress", move |e| e.should_compress(prompt_tokens))
            .await
    }

    pub async fn should_compress_preflight(
        &mut self,
        messages: Arc<Vec<Message>>,
    ) -> Result<bool, String> {
        self.call("should_compress_preflight", move |e| {
            e.should_compress_preflight(&messages)
        })
        .await
    }

    pub async fn status(&mut self) -> Result<EngineStatus, String> {
        self.call("status", |e| e.status()).await
    }

    pub async fn tool_schemas(&mut self) -> Result<Vec<Value>, String> {
        self.call("tool_schemas", |e| e.tool_schemas()).await
    }

    pub async fn handle_tool_call(&mut self, name: String, args: Value) -> Result<String, String> {
        self.call("handle_tool_call", move |e| {
            e.handle_tool_call(&name, &args)
        })
        .await
    }

    /// An engine-specific operation; `Ok(None)` when the engine does not have it.
    pub async fn invoke(&mut self, op: &str, payload: Value) -> Result<Option<Value>, String> {
        let name = op.to_string();
        let engine = self.active.engine.clone();
        let outcome = tokio::task::spawn_blocking(move || {
            let mut guard = match engine.lock() {
                Ok(guard) => guard,
                Err(poisoned) => poisoned.into_inner(),
            };
            catch_unwind(AssertUnwindSafe(|| guard.invoke(&name, &payload)))
        })
        .await;
        match outcome {
            Ok(Ok(Ok(value))) => Ok(Some(value)),
            Ok(Ok(Err(error))) if error.is_unsupported() => Ok(None),
            Ok(Ok(Err(error))) if error.kind() == ErrorKind::Panicked => {
                Err(self.retire(format!("panicked in {op}: {}", error.message())))
            }
            Ok(Ok(Err(error))) => Err(format!(
                "engine '{}' failed in {op}: {error}",
                self.active.name
            )),
            _ => Err(self.retire(format!("panicked in {op}"))),
        }
    }
}
