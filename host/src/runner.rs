//! Runs engine operations off the async runtime, and keeps the conversation safe when an engine
//! fails: a failed or panicking engine is reported once, its output is discarded (the messages
//! the host had are kept), and the rest of the session runs on the built-in compressor.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

use ctxhost_sdk::sequence;
use ctxhost_sdk::{CompressOptions, ContextEngine, EngineError, ErrorKind, Message};

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

    /// Runs `op` on the active engine in a blocking thread. An engine error or panic is returned
    /// as a one-line message and retires the engine in favour of the standby compressor.
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
        let message = match outcome {
            Ok(Ok(Ok(value))) => return Ok(value),
            Ok(Ok(Err(error))) if error.kind() == ErrorKind::Panicked => {
                format!("panicked in {op}: {}", error.message())
            }
            Ok(Ok(Err(error))) => format!("failed in {op}: {error}"),
            Ok(Err(_)) | Err(_) => format!("panicked in {op}"),
        };
        Err(self.retire(message))
    }

    /// Reports the active engine's failure and, if it is a plugin, hands the session to the
    /// standby compressor.
    fn retire(&mut self, message: String) -> String {
        let line = format!("engine '{}' {message}", self.active.name);
        if let Some(standby) = self.standby.take() {
            self.active = standby;
            self.failure = Some(line.clone());
        }
        line
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
            Err(reason) => CompressOutcome {
                messages,
                engine,
                error: Some(format!("{reason}; the conversation is returned unchanged")),
            },
        }
    }
}
