//! `config.yaml`: loading, defaults and validation. Keys follow Hermes Agent where it has them.
//! Every error names the file, the line when it can be found, and the key.

pub mod atomic;
pub mod edit;
pub mod fingerprint;
pub mod home;
mod locate;
pub mod nesting;
mod overrides;
pub mod plugin_host;
pub mod project;
/// URLs shown with their secrets masked (a leaf crate of its own, so engines may use it).
pub mod serve;
pub mod settings;
pub mod summarizer;
pub mod tokens;
pub mod untrusted;
pub mod write;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use summarizer::SummarizerSettings;
use untrusted::{Ignored, Withheld};

pub use locate::line_of_key;
pub use overrides::Override;

/// The name of the built-in engine, always available.
pub const BUILT_IN_ENGINE: &str = "compressor";

/// The loaded configuration. Its serde form is the settled value itself (what an isolated
/// engine's process receives), not the file's shape: a file is read by [`Config::parse`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Config {
    /// The file it came from; `None` when running on defaults.
    pub source: Option<PathBuf>,
    text: String,
    pub context: ContextSection,
    pub model: ModelSection,
    /// The compressor's settings (`compression.*`); the compressor validates them.
    pub compression: Value,
    /// `auxiliary.compression.*`: the summarizer.
    pub summarizer: SummarizerSettings,
    /// Whether the file names the summarizer's provider (`auxiliary.compression.provider`): a
    /// program embedding the host then does not bring its own ([`Override::Summarizer`]).
    #[serde(default)]
    summarizer_named: bool,
    pub tokens: TokensSection,
    /// `plugins.<name>`: each engine's own section.
    pub plugins: Map<String, Value>,
    pub trust: TrustSection,
    /// `serve.*`: the gateway.
    pub serve: serve::ServeSettings,
    /// Whether the config's project (its plugins and credentials) may be used; see
    /// [`project`]. A config read by a program embedding the host is trusted.
    project_untrusted: Option<project::Untrusted>,
}

/// `trust.*`: which plugins the user approved, written by `ctxhost plugins enable`. Loading a
/// library runs its code, so an approval names the plugin's exact files by their hash.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TrustSection {
    /// Engine name → `tree-sha256:<hex>`, the hash of the plugin directory approved for it
    /// (a bare sha256 is an older version's approval of the library alone: stale).
    pub enabled: BTreeMap<String, String>,
    /// Engines that never load, even when selected.
    pub disabled: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ContextSection {
    pub engine: String,
}

impl Default for ContextSection {
    fn default() -> Self {
        ContextSection {
            engine: BUILT_IN_ENGINE.to_string(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ModelSection {
    pub name: String,
    pub context_length: u64,
    /// Other model keys Hermes configs carry (provider, base_url, ...): kept, unused here.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl Default for ModelSection {
    fn default() -> Self {
        ModelSection {
            name: "gpt-4o".to_string(),
            context_length: 128_000,
            other: Map::new(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TokensSection {
    /// tiktoken encoding: o200k_base, cl100k_base, p50k_base or r50k_base.
    pub encoding: String,
    /// Counting implementation: auto (the fast counters where they have the encoding: a
    /// built-in table for o200k_base, bpe-openai for cl100k_base), bpe, tiktoken.
    pub backend: String,
}

impl Default for TokensSection {
    fn default() -> Self {
        TokensSection {
            encoding: "o200k_base".to_string(),
            backend: "auto".to_string(),
        }
    }
}

pub const ENCODINGS: &[&str] = &["o200k_base", "cl100k_base", "p50k_base", "r50k_base"];

/// The file's shape; sections the host does not own stay JSON for their owners to validate.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ConfigFile {
    context: ContextSection,
    model: ModelSection,
    compression: Option<Value>,
    auxiliary: Option<AuxiliarySection>,
    tokens: TokensSection,
    plugins: Option<Map<String, Value>>,
    trust: Option<TrustSection>,
    serve: Option<Value>,
    /// Unknown top-level keys (other Hermes sections) are allowed and left alone.
    #[serde(flatten)]
    _other: Map<String, Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct AuxiliarySection {
    compression: Option<Value>,
    #[serde(flatten)]
    _other: Map<String, Value>,
}

/// A config problem, located.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: cannot read the config file: {reason}")]
    Read { path: String, reason: String },
    #[error("{location}: {message}")]
    Invalid { location: String, message: String },
    /// A command-line flag standing for a key, refused as the key would be.
    #[error("{flag}: {message}")]
    Flag { flag: &'static str, message: String },
}

impl Config {
    /// Defaults only, as if the config file were empty.
    pub fn defaults() -> Self {
        Self::parse("", None).expect("the empty config is valid")
    }

    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|error| ConfigError::Read {
            path: path.display().to_string(),
            reason: error.to_string(),
        })?;
        Self::parse(&text, Some(path.to_path_buf()))
    }

    /// Parses config text; `source` is used in error locations.
    pub fn parse(text: &str, source: Option<PathBuf>) -> Result<Self, ConfigError> {
        // Before the parser, whose cost grows with the square of the depth.
        nesting::check(text).map_err(|error| ConfigError::Invalid {
            location: location(source.as_deref(), Some(error.line)),
            message: error.to_string(),
        })?;
        let file: ConfigFile = if text.trim().is_empty() {
            ConfigFile::default()
        } else {
            let deserializer = serde_yaml::Deserializer::from_str(text);
            serde_path_to_error::deserialize(deserializer).map_err(|error| {
                let key = error.path().to_string();
                let inner = error.into_inner();
                let line = inner.location().map(|l| l.line());
                let message = strip_yaml_position(&inner.to_string());
                // serde_yaml already names the key in most messages.
                let named = message
                    .split_once(": ")
                    .is_some_and(|(head, _)| !head.contains(' ') && key.starts_with(head));
                let message = if key.is_empty() || key == "." || named {
                    message
                } else {
                    format!("{key}: {message}")
                };
                ConfigError::Invalid {
                    location: location(source.as_deref(), line),
                    message,
                }
            })?
        };
        let summarizer_section = file
            .auxiliary
            .and_then(|aux| aux.compression)
            .unwrap_or(Value::Null);
        let summarizer_named = summarizer_section.get("provider").is_some();
        let mut config = Config {
            source,
            text: text.to_string(),
            context: file.context,
            model: file.model,
            compression: file.compression.unwrap_or(Value::Null),
            summarizer: SummarizerSettings::default(),
            summarizer_named,
            tokens: file.tokens,
            plugins: file.plugins.unwrap_or_default(),
            trust: file.trust.unwrap_or_default(),
            serve: serve::ServeSettings::default(),
            project_untrusted: None,
        };
        config.serve =
            serve::ServeSettings::from_value(file.serve.as_ref().unwrap_or(&Value::Null))
                .map_err(|error| config.error_at(&error.key, &error.problem))?;
        config.summarizer = SummarizerSettings::from_value(&summarizer_section)
            .and_then(|settings| settings.validate().map(|()| settings))
            .map_err(|error| config.error_at(&error.key(), &error.problem()))?;
        config.adopt_legacy_cooldown()?;
        config.validate()?;
        Ok(config)
    }

    /// The summarizer's cool-down used to be the compressor's
    /// `compression.summarizer_cooldown_seconds`; it is the host's now
    /// (`auxiliary.compression.cooldown_seconds`, which wins when both are set).
    fn adopt_legacy_cooldown(&mut self) -> Result<(), ConfigError> {
        const LEGACY: &str = "summarizer_cooldown_seconds";
        let Some(value) = self.compression.get(LEGACY) else {
            return Ok(());
        };
        let Some(seconds) = value.as_u64() else {
            return Err(self.error_at(
                &format!("compression.{LEGACY}"),
                "must be a whole number of seconds",
            ));
        };
        self.summarizer.cooldown_seconds.get_or_insert(seconds);
        Ok(())
    }

    fn validate(&self) -> Result<(), ConfigError> {
        // The declared checks of the sections held here (the tree has no `serve` nor
        // `auxiliary`: those check theirs when they are read).
        let tree = serde_json::json!({
            "context": self.context,
            "model": self.model,
            "tokens": self.tokens,
            "trust": self.trust,
        });
        if let Some((key, problem)) = settings::first_problem(settings::HOST_SETTINGS, "", &tree) {
            return Err(self.error_at(&key, &problem));
        }
        if !ENCODINGS.contains(&self.tokens.encoding.as_str()) {
            return Err(self.error_at(
                "tokens.encoding",
                &format!(
                    "unknown encoding `{}`; use one of {}",
                    self.tokens.encoding,
                    ENCODINGS.join(", ")
                ),
            ));
        }
        match self.tokens.backend.parse::<tokens::Backend>() {
            Err(message) => return Err(self.error_at("tokens.backend", &message)),
            Ok(tokens::Backend::Bpe)
                if !tokens::BPE_ENCODINGS.contains(&self.tokens.encoding.as_str()) =>
            {
                return Err(self.error_at(
                    "tokens.backend",
                    &format!(
                        "bpe has no `{}`; use auto or tiktoken",
                        self.tokens.encoding
                    ),
                ))
            }
            Ok(_) => {}
        }
        for (name, section) in &self.plugins {
            if let Err((key, problem)) = plugin_host::HostPluginSettings::from_section(section) {
                return Err(self.error_at(&format!("plugins.{name}.{key}"), &problem));
            }
            if !(section.is_object() || section.is_null()) {
                return Err(self.error_at(
                    &format!("plugins.{name}"),
                    "must be a mapping of the engine's settings",
                ));
            }
        }
        for (name, checksum) in &self.trust.enabled {
            if fingerprint::Recorded::parse(checksum).is_none() {
                return Err(self.error_at(
                    &format!("trust.enabled.{name}"),
                    "must be the hash of the plugin's directory (`tree-sha256:` and 64 hex digits); run `ctxhost plugins enable` to record it",
                ));
            }
        }
        Ok(())
    }

    /// Whether the config's project may be used (its plugins load, its credentials are used).
    pub fn project_trusted(&self) -> bool {
        self.project_untrusted.is_none()
    }

    /// Why the config's project is not trusted, when it is not.
    pub fn project_untrusted(&self) -> Option<project::Untrusted> {
        self.project_untrusted
    }

    /// Holds the config to what an untrusted project may do: its plugins do not load, its
    /// approvals count for nothing, nothing it names that holds a credential or an endpoint is
    /// used (the summarizer becomes the offline one; the gateway's key, tokens and upstream
    /// their defaults), and nothing it names as where data goes (the gateway's state, an
    /// engine's store, any URL or path outside the project in an engine's section) is used.
    /// Returns the keys set that are not used.
    pub fn distrust_project(&mut self, why: project::Untrusted) -> Vec<Ignored> {
        self.project_untrusted = Some(why);
        self.trust.enabled.clear();
        let mut ignored = Vec::new();
        let summarizer = &self.summarizer;
        if summarizer.provider != summarizer::Provider::Offline
            || summarizer.base_url.is_some()
            || summarizer.api_key_env.is_some()
        {
            ignored.push(Ignored::new(
                "auxiliary.compression (the offline summarizer runs)",
                Withheld::Credential,
            ));
            self.summarizer = SummarizerSettings {
                cooldown_seconds: self.summarizer.cooldown_seconds,
                ..SummarizerSettings::default()
            };
            // Not used, so not named: a program embedding the host may bring its own.
            self.summarizer_named = false;
        }
        let defaults = serve::ServeSettings::default();
        let serve = &mut self.serve;
        for (key, set, why) in [
            (
                "serve.upstream",
                serve.upstream != defaults.upstream,
                Withheld::Credential,
            ),
            (
                "serve.upstream_key_env",
                serve.upstream_key_env.is_some(),
                Withheld::Credential,
            ),
            (
                "serve.auth",
                serve.auth != defaults.auth,
                Withheld::Credential,
            ),
            ("serve.state", serve.state.is_some(), Withheld::Destination),
        ] {
            if set {
                ignored.push(Ignored::new(key, why));
            }
        }
        serve.upstream = defaults.upstream;
        serve.upstream_key_env = None;
        serve.auth = defaults.auth;
        serve.state = None;
        let project = self.dir();
        for (name, section) in &mut self.plugins {
            untrusted::screen_plugin_section(
                section,
                &format!("plugins.{name}"),
                project.as_deref(),
                &mut ignored,
            );
        }
        ignored
    }

    /// The text the config was read from (empty for defaults).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The section handed to engine `name`: `plugins.<name>` (null when absent).
    /// Engine `name`'s own settings: `plugins.<name>` without the host's keys
    /// (`isolation`, `timeout`, `check_timeout`, `memory_limit_mb`, `processes`, `max_reply_mb`).
    pub fn engine_section(&self, name: &str) -> Value {
        plugin_host::engine_only(self.plugins.get(name).cloned().unwrap_or(Value::Null))
    }

    /// The host's settings for plugin `name` (`plugins.<name>.{isolation, timeout,
    /// check_timeout, memory_limit_mb, processes, max_reply_mb}`), checked when the config is read.
    pub fn plugin_host_settings(&self, name: &str) -> plugin_host::HostPluginSettings {
        self.plugins
            .get(name)
            .and_then(|section| plugin_host::HostPluginSettings::from_section(section).ok())
            .unwrap_or_default()
    }

    /// The directory plugin paths are resolved against: the config file's directory, absolute.
    pub fn dir(&self) -> Option<PathBuf> {
        let source = self.source.as_deref()?;
        let absolute = std::path::absolute(source).unwrap_or_else(|_| source.to_path_buf());
        absolute.parent().map(Path::to_path_buf)
    }

    /// An error about `key`, located at its line when it can be found.
    pub fn error_at(&self, key: &str, message: &str) -> ConfigError {
        ConfigError::Invalid {
            location: location(self.source.as_deref(), line_of_key(&self.text, key)),
            message: format!("{key}: {message}"),
        }
    }
}

fn location(source: Option<&Path>, line: Option<usize>) -> String {
    let file = source
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "config".to_string());
    match line {
        Some(line) => format!("{file}:{line}"),
        None => file,
    }
}

/// serde_yaml appends " at line L column C"; the location is already in front.
fn strip_yaml_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(at) => message[..at].to_string(),
        None => message.to_string(),
    }
}

impl fmt::Display for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.source {
            Some(path) => write!(f, "{}", path.display()),
            None => f.write_str("built-in defaults"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> String {
        Config::parse(text, Some(PathBuf::from("config.yaml")))
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn defaults_apply() {
        let config = Config::parse("context:\n  engine: window\n", None).unwrap();
        assert_eq!(config.context.engine, "window");
        assert_eq!(config.model.context_length, 128_000);
        assert_eq!(config.tokens.encoding, "o200k_base");
    }

    #[test]
    fn an_untrusted_project_chooses_no_destination_for_data() {
        let text = "serve:\n  state: postgres://u:p@attacker/loot\nplugins:\n  lcm:\n    \
                    store: /tmp/loot.sqlite\n    fresh_tail_count: 8\n    hooks:\n      \
                    - https://attacker/hook\n  window:\n    store: own.sqlite\n";
        let mut config = Config::parse(text, Some(PathBuf::from("/p/config.yaml"))).unwrap();
        let ignored = config.distrust_project(project::Untrusted::Never);
        assert_eq!(
            ignored,
            [
                Ignored::new("serve.state", Withheld::Destination),
                Ignored::new("plugins.lcm.store", Withheld::Destination),
                Ignored::new("plugins.lcm.hooks", Withheld::Destination),
            ]
        );
        assert_eq!(config.serve.state, None);
        assert_eq!(
            config.engine_section("lcm"),
            serde_json::json!({"fresh_tail_count": 8})
        );
        assert_eq!(
            config.engine_section("window"),
            serde_json::json!({"store": "own.sqlite"})
        );
    }

    #[test]
    fn an_untrusted_project_names_no_environment_variable_for_a_plugin() {
        let text = "plugins:\n  lcm:\n    api_key_env: GITHUB_TOKEN\n    summarizer:\n      \
                    token_env: HOME_TOKEN\n      model: m\n    fresh_tail_count: 8\n  window:\n    \
                    keep_last: 3\n";
        let mut config = Config::parse(text, None).unwrap();
        let ignored = config.distrust_project(project::Untrusted::Never);
        assert_eq!(
            ignored.iter().map(|i| i.key.as_str()).collect::<Vec<_>>(),
            [
                "plugins.lcm.api_key_env",
                "plugins.lcm.summarizer.token_env"
            ]
        );
        assert_eq!(
            config.engine_section("lcm"),
            serde_json::json!({"summarizer": {"model": "m"}, "fresh_tail_count": 8})
        );
        assert_eq!(
            config.engine_section("window"),
            serde_json::json!({"keep_last": 3})
        );
    }

    #[test]
    fn errors_name_file_line_and_key() {
        assert_eq!(
            error("model:\n  name: x\n  context_length: lots\n"),
            "config.yaml:3: model.context_length: invalid type: string \"lots\", expected u64"
        );
        assert_eq!(
            error("model:\n  context_length: 10\n"),
            "config.yaml:2: model.context_length: must be at least 1024 tokens, got 10"
        );
        assert!(error("context: [unclosed\n").starts_with("config.yaml:"));
        assert_eq!(
            error("context:\n  engin: lcm\n"),
            "config.yaml:2: context: unknown field `engin`, expected `engine`"
        );
    }

    #[test]
    fn engine_messages_are_located() {
        let config = Config::parse(
            "compression:\n  threshold: 1.7\n",
            Some(PathBuf::from("c.yaml")),
        )
        .unwrap();
        assert_eq!(
            config
                .error_at("compression.threshold", "must be between 0 and 1, got 1.7")
                .to_string(),
            "c.yaml:2: compression.threshold: must be between 0 and 1, got 1.7"
        );
    }

    #[test]
    fn unknown_top_level_sections_are_allowed() {
        Config::parse("display:\n  skin: dark\nmemory:\n  provider: x\n", None).unwrap();
    }
}
