//! What makes an engine a plugin: a manifest and a constructor (the protocol crate's
//! `export_engine!` then exports it).

use crate::engine::ContextEngine;
use crate::error::EngineError;
use crate::manifest::Manifest;
use crate::services::HostServices;

/// An engine that can be built by the host from a plugin library.
pub trait EnginePlugin: ContextEngine + Sized + 'static {
    /// The plugin's self-description. `name` is what users put in `context.engine`.
    fn manifest() -> Manifest;

    /// Builds the engine. `services` carries the engine's config section, data directory and
    /// model; keep it to count tokens, summarize and log later.
    fn create(services: HostServices) -> Result<Self, EngineError>;

    /// Checks the engine's settings (`services.config()`) without side effects: no store opened,
    /// no directory created, no network. The host calls it before writing a setting
    /// (`ctxhost config set plugins.<name>.<key> ...`). Report a wrong setting with
    /// [`EngineError::invalid_setting`]; [`HostServices::config_as`] already does for settings
    /// that do not read. The default accepts everything.
    fn validate_settings(services: &HostServices) -> Result<(), EngineError> {
        let _ = services;
        Ok(())
    }
}
