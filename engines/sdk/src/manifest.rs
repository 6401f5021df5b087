//! What a plugin says about itself before anything is instantiated.

use serde::{Deserialize, Serialize};

/// The interface level this SDK implements. It grows when an operation is added (which never
/// changes the binary layout); engines built against a lower level still load.
pub const API_LEVEL: u32 = 1;

/// A plugin's self-description, returned by the library's `manifest()` entry point.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// The engine name used in `context.engine`.
    pub name: String,
    /// The plugin's own version.
    pub version: String,
    /// The SDK interface level the plugin was built against.
    pub api_level: u32,
    /// The version of `ctxhost-sdk` the plugin was built against.
    #[serde(default)]
    pub sdk_version: String,
    /// One line for listings.
    #[serde(default)]
    pub description: String,
    /// Free-form feature flags, e.g. `tools`, `summarizer`, `persistent`.
    #[serde(default)]
    pub capabilities: Vec<String>,
    /// Config keys the engine reads from `plugins.<name>`, with their defaults.
    #[serde(default)]
    pub config_keys: Vec<ConfigKey>,
}

/// One engine setting under `plugins.<name>` in `config.yaml`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigKey {
    /// The key inside the engine's section, dotted for nested keys (`summary.max_tokens`).
    pub key: String,
    /// The value used when the key is not set, as it would be written in YAML.
    pub default: String,
    /// One line saying what it does, shown by `ctxhost plugins info`.
    pub help: String,
}

impl Manifest {
    /// A manifest for an engine built against this SDK.
    pub fn new(name: &str, version: &str, description: &str) -> Self {
        Manifest {
            name: name.to_string(),
            version: version.to_string(),
            api_level: API_LEVEL,
            sdk_version: env!("CARGO_PKG_VERSION").to_string(),
            description: description.to_string(),
            capabilities: Vec::new(),
            config_keys: Vec::new(),
        }
    }

    /// Adds a feature flag (`tools`, `summarizer`, `persistent`, ...) for listings.
    pub fn capability(mut self, capability: &str) -> Self {
        self.capabilities.push(capability.to_string());
        self
    }

    /// Declares a setting the engine reads from `plugins.<name>.<key>`, with its default and
    /// one line of help.
    pub fn config_key(mut self, key: &str, default: &str, help: &str) -> Self {
        self.config_keys.push(ConfigKey {
            key: key.to_string(),
            default: default.to_string(),
            help: help.to_string(),
        });
        self
    }
}
