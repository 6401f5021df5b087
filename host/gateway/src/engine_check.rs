//! The engine the gateway runs, settled once at start-up: the configured one when it starts,
//! else (only when `serve.engine_fallback: compressor` says so) the built-in compressor, with the
//! reason kept for `/healthz` and every response. Every session then opens the engine settled
//! here, so the banner, `/healthz` and the sessions never disagree.

use ctxhost_config::serve::EngineFallback;
use ctxhost_config::BUILT_IN_ENGINE;
use ctxhost_core::engines::ResolveError;
use ctxhost_core::{Engines, SessionOptions};

/// The header every response carries while the gateway runs another engine than configured.
pub const ENGINE_ERROR_HEADER: &str = "x-ctxhost-engine-error";

/// The engine settled at start-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineStatus {
    /// The configured engine started.
    Configured { engine: String },
    /// It did not; the compressor runs instead, as `serve.engine_fallback` allows.
    FellBack { configured: String, reason: String },
}

impl EngineStatus {
    /// The engine sessions run.
    pub fn running(&self) -> &str {
        match self {
            EngineStatus::Configured { engine } => engine,
            EngineStatus::FellBack { .. } => BUILT_IN_ENGINE,
        }
    }

    /// Why the running engine is not the configured one.
    pub fn problem(&self) -> Option<&str> {
        match self {
            EngineStatus::Configured { .. } => None,
            EngineStatus::FellBack { reason, .. } => Some(reason),
        }
    }
}

/// The configured engine did not start and the config does not allow a fallback.
#[derive(Debug, thiserror::Error)]
#[error(
    "context engine '{engine}' cannot run: {reason}. {fix}, or set serve.engine_fallback: \
     compressor to serve with the built-in compressor meanwhile"
)]
pub struct EngineStartError {
    pub engine: String,
    pub reason: String,
    /// A command that shows what to do: which engines there are, or what is wrong with one.
    pub fix: &'static str,
}

/// What to run when no engine has the name asked for.
const LIST_ENGINES: &str = "Name one of the engines `ctxhost plugins list` shows";
/// What to run when the engine exists and does not start.
const DOCTOR: &str = "`ctxhost plugins doctor` says what is wrong with each plugin";

/// Starts the configured engine once on a throwaway state (a plugin in a child process is
/// spawned and greeted), and settles what runs. Blocks.
pub fn check(
    engines: &Engines,
    fallback: EngineFallback,
) -> Result<EngineStatus, EngineStartError> {
    let engine = engines.config().context.engine.clone();
    let options = SessionOptions::new("").temporary().strict();
    let (reason, fix) = match engines.open_session(&engine, options) {
        Ok(_) => return Ok(EngineStatus::Configured { engine }),
        Err(error @ ResolveError::NotFound { .. }) => (error.to_string(), LIST_ENGINES),
        Err(error) => (error.to_string(), DOCTOR),
    };
    match fallback {
        EngineFallback::Fail => Err(EngineStartError {
            engine,
            reason,
            fix,
        }),
        EngineFallback::Compressor => Ok(EngineStatus::FellBack {
            configured: engine,
            reason,
        }),
    }
}
