//! What the root module's `new_engine(setup, host)` receives, as JSON: the engine's setup and
//! why the host asks.

use serde::{Deserialize, Serialize};

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
