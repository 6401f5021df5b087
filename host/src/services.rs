//! The host's implementation of the services engines receive: token counting, the summarizer
//! and a log sink.

use std::io::Write;
use std::sync::{Arc, Mutex};

use ctxhost_sdk::{EngineError, ErrorKind, HostBackend, LogLevel, SummarizeRequest};
use ctxhost_summarizer::Summarizer;

use crate::tokens::TokenCounter;

/// Where engine log lines go.
#[derive(Clone)]
pub struct LogSink {
    min_level: LogLevel,
    /// Lines are also kept, so commands can report them (tests read them too).
    kept: Arc<Mutex<Vec<(String, LogLevel, String)>>>,
}

impl LogSink {
    /// Warnings and errors go to stderr; info and debug too with `verbose`.
    pub fn stderr(verbose: bool) -> Self {
        LogSink {
            min_level: if verbose {
                LogLevel::Debug
            } else {
                LogLevel::Warn
            },
            kept: Arc::default(),
        }
    }

    pub fn log(&self, engine: &str, level: LogLevel, message: &str) {
        if level >= self.min_level {
            let _ = writeln!(std::io::stderr().lock(), "[{engine}] {level}: {message}");
        }
        if let Ok(mut kept) = self.kept.lock() {
            kept.push((engine.to_string(), level, message.to_string()));
        }
    }

    pub fn lines(&self) -> Vec<(String, LogLevel, String)> {
        self.kept.lock().map(|k| k.clone()).unwrap_or_default()
    }
}

/// The backend behind every engine's `HostServices`.
pub struct HostServicesImpl {
    tokens: TokenCounter,
    log: LogSink,
    summarizer: Option<Arc<dyn Summarizer>>,
}

impl HostServicesImpl {
    pub fn new(
        tokens: TokenCounter,
        log: LogSink,
        summarizer: Option<Arc<dyn Summarizer>>,
    ) -> Self {
        HostServicesImpl {
            tokens,
            log,
            summarizer,
        }
    }

    pub fn tokens(&self) -> &TokenCounter {
        &self.tokens
    }

    pub fn log_sink(&self) -> &LogSink {
        &self.log
    }

    /// What answers `summarize`, e.g. `offline` or `openai:gpt-4o-mini`.
    pub fn summarizer(&self) -> Option<String> {
        self.summarizer.as_ref().map(|s| s.describe())
    }
}

impl HostBackend for HostServicesImpl {
    fn count_tokens(&self, text: &str) -> u64 {
        self.tokens.count(text)
    }

    fn log(&self, engine: &str, level: LogLevel, message: &str) {
        self.log.log(engine, level, message);
    }

    fn call(&self, service: &str, payload: &str) -> Result<String, EngineError> {
        match service {
            "summarize" => {
                let Some(summarizer) = &self.summarizer else {
                    return Err(EngineError::new(
                        ErrorKind::NotConfigured,
                        "no summarizer is configured (auxiliary.compression)",
                    ));
                };
                let request: SummarizeRequest = serde_json::from_str(payload)?;
                let summary = summarizer.summarize(&request)?;
                serde_json::to_string(&summary).map_err(|e| EngineError::failed(e.to_string()))
            }
            other => Err(EngineError::unsupported(other)),
        }
    }
}
