//! The `auxiliary.compression` section of `config.yaml`: which summarizer the host serves.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use ctxhost_redacted_url::RedactedUrl;

/// Where the settings live in `config.yaml`; every settings error starts with it.
pub const SECTION: &str = "auxiliary.compression";

/// The summary model's window when the config does not say.
pub const DEFAULT_CONTEXT_LENGTH: u64 = 128_000;
/// Seconds per HTTP request when the config does not say.
pub const DEFAULT_TIMEOUT_SECS: f64 = 60.0;
/// The default bound on one summary, retries included.
pub const DEFAULT_DEADLINE_SECS: f64 = 90.0;
/// Retries after the first attempt when the config does not say.
pub const DEFAULT_MAX_RETRIES: u32 = 3;
/// Seconds the configured summarizer rests after a failure when the config does not say.
pub const DEFAULT_COOLDOWN_SECS: u64 = 60;

/// Who writes summaries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// Deterministic and extractive, no network (the default).
    #[default]
    Offline,
    /// Any OpenAI-compatible endpoint (vLLM, llama.cpp server, Ollama, ...): `base_url` required.
    Custom,
    Openai,
    Openrouter,
    Anthropic,
}

impl Provider {
    pub const ALL: [Provider; 5] = [
        Provider::Offline,
        Provider::Custom,
        Provider::Openai,
        Provider::Openrouter,
        Provider::Anthropic,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Offline => "offline",
            Provider::Custom => "custom",
            Provider::Openai => "openai",
            Provider::Openrouter => "openrouter",
            Provider::Anthropic => "anthropic",
        }
    }

    /// The endpoint used when `base_url` is not set (`custom` and `offline` have none).
    pub fn default_base_url(self) -> Option<&'static str> {
        match self {
            Provider::Openai => Some("https://api.openai.com/v1"),
            Provider::Openrouter => Some("https://openrouter.ai/api/v1"),
            Provider::Anthropic => Some("https://api.anthropic.com/v1"),
            Provider::Offline | Provider::Custom => None,
        }
    }

    /// The environment variable holding the key when `api_key_env` is not set.
    pub fn default_api_key_env(self) -> Option<&'static str> {
        match self {
            Provider::Openai => Some("OPENAI_API_KEY"),
            Provider::Openrouter => Some("OPENROUTER_API_KEY"),
            Provider::Anthropic => Some("ANTHROPIC_API_KEY"),
            Provider::Offline | Provider::Custom => None,
        }
    }

    /// Whether the provider is an LLM reached over HTTP.
    pub fn is_remote(self) -> bool {
        self != Provider::Offline
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The `auxiliary.compression` section of `config.yaml`.
///
/// API keys are never stored here: `api_key_env` names the environment variable that holds one.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SummarizerSettings {
    /// offline | custom | openai | openrouter | anthropic; default offline.
    pub provider: Provider,
    /// The summary model (required for every provider but offline).
    pub model: Option<String>,
    /// Required for custom; the others default to their public endpoint.
    pub base_url: Option<String>,
    /// The NAME of the environment variable holding the API key.
    pub api_key_env: Option<String>,
    /// Seconds per HTTP request.
    pub timeout: f64,
    /// Retries after the first attempt on 429, 5xx, timeouts and connection errors.
    pub max_retries: u32,
    /// Seconds one summary may take in all, retries and backoff included (default 90): past
    /// it the host answers with the offline summary.
    pub deadline: f64,
    /// The summary model's window in tokens (default 128000): requests are trimmed to fit it.
    pub context_length: Option<u64>,
    /// Seconds the summarizer rests after a failure, the offline summary answering meanwhile
    /// (default 60; 0 retries it on every call). The host's `config.yaml` loader also takes the
    /// older `compression.summarizer_cooldown_seconds` when this is unset.
    pub cooldown_seconds: Option<u64>,
}

impl Default for SummarizerSettings {
    fn default() -> Self {
        SummarizerSettings {
            provider: Provider::Offline,
            model: None,
            base_url: None,
            api_key_env: None,
            timeout: DEFAULT_TIMEOUT_SECS,
            max_retries: DEFAULT_MAX_RETRIES,
            deadline: DEFAULT_DEADLINE_SECS,
            context_length: None,
            cooldown_seconds: None,
        }
    }
}

/// A summarizer setting that cannot work, naming its key under `auxiliary.compression`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    /// `key` is the key inside the section (empty for the section itself).
    #[error("{}: {message}", qualified(key))]
    Invalid { key: String, message: String },
    /// The HTTP client could not be created.
    #[error("{SECTION}: cannot create the HTTP client: {0}")]
    Client(String),
}

fn qualified(key: &str) -> String {
    if key.is_empty() {
        SECTION.to_string()
    } else {
        format!("{SECTION}.{key}")
    }
}

impl SettingsError {
    pub fn invalid(key: &str, message: impl Into<String>) -> Self {
        SettingsError::Invalid {
            key: key.to_string(),
            message: message.into(),
        }
    }

    /// What is wrong, without the key.
    pub fn problem(&self) -> String {
        match self {
            SettingsError::Invalid { message, .. } => message.clone(),
            SettingsError::Client(message) => format!("cannot create the HTTP client: {message}"),
        }
    }

    /// The full key the error is about, e.g. `auxiliary.compression.base_url`.
    pub fn key(&self) -> String {
        match self {
            SettingsError::Invalid { key, .. } => qualified(key),
            SettingsError::Client(_) => SECTION.to_string(),
        }
    }
}

impl SummarizerSettings {
    /// The offline summarizer (the default).
    pub fn offline() -> Self {
        Self::default()
    }

    /// Reads the section from its JSON form (as the host's config loader holds it) and
    /// validates it. A missing (null) section is the default. Errors name the key.
    pub fn from_value(value: &Value) -> Result<Self, SettingsError> {
        let object = match value {
            Value::Null => return Ok(Self::default()),
            Value::Object(object) => object,
            other => {
                return Err(SettingsError::invalid(
                    "",
                    format!("must be a mapping of settings, not {}", json_kind(other)),
                ))
            }
        };
        let mut settings = Self::default();
        for (key, value) in object {
            match key.as_str() {
                "provider" => settings.provider = field(key, value)?,
                "model" => settings.model = field(key, value)?,
                "base_url" => settings.base_url = field(key, value)?,
                "api_key_env" => settings.api_key_env = field(key, value)?,
                "timeout" => settings.timeout = field(key, value)?,
                "max_retries" => settings.max_retries = field(key, value)?,
                "deadline" => settings.deadline = field(key, value)?,
                "context_length" => settings.context_length = field(key, value)?,
                "cooldown_seconds" => settings.cooldown_seconds = field(key, value)?,
                "api_key" => {
                    return Err(SettingsError::invalid(
                        key,
                        "API keys are never stored in config: put the key in an environment \
                         variable and name that variable in api_key_env",
                    ))
                }
                _ => {
                    return Err(SettingsError::invalid(
                        key,
                        format!(
                            "unknown key (expected one of: {})",
                            crate::settings::keys_of(SECTION)
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    ))
                }
            }
        }
        settings.validate()?;
        Ok(settings)
    }

    /// Checks that the settings can work; errors name the key, e.g.
    /// `auxiliary.compression.base_url: required when provider is custom`.
    pub fn validate(&self) -> Result<(), SettingsError> {
        // The declared checks of the section; what follows relates keys or parses values.
        let tree = serde_json::to_value(self).expect("the settings serialize");
        if let Some((key, problem)) =
            crate::settings::first_problem(crate::settings::HOST_SETTINGS, SECTION, &tree)
        {
            let key = key
                .strip_prefix(SECTION)
                .unwrap_or(&key)
                .trim_start_matches('.');
            return Err(SettingsError::invalid(key, problem));
        }
        if let Some(name) = &self.api_key_env {
            validate_env_name(name)?;
        }
        if let Some(url) = &self.base_url {
            validate_base_url(url)?;
        }
        if !self.provider.is_remote() {
            return Ok(());
        }
        if self.model.is_none() {
            return Err(SettingsError::invalid(
                "model",
                format!(
                    "required when provider is {} (the summary model's name)",
                    self.provider
                ),
            ));
        }
        if self.provider == Provider::Custom && self.base_url.is_none() {
            return Err(SettingsError::invalid(
                "base_url",
                "required when provider is custom (e.g. http://127.0.0.1:8080/v1)",
            ));
        }
        Ok(())
    }

    /// The endpoint's base URL without a trailing slash (None for offline, or custom unset).
    pub fn effective_base_url(&self) -> Option<String> {
        self.base_url
            .as_deref()
            .or(self.provider.default_base_url())
            .map(|url| url.trim().trim_end_matches('/').to_string())
    }

    /// The environment variable the key is read from, if the provider uses one.
    pub fn effective_api_key_env(&self) -> Option<String> {
        if !self.provider.is_remote() {
            return None;
        }
        self.api_key_env
            .clone()
            .or_else(|| self.provider.default_api_key_env().map(str::to_string))
    }

    pub fn effective_context_length(&self) -> u64 {
        self.context_length.unwrap_or(DEFAULT_CONTEXT_LENGTH)
    }

    /// How long the summarizer rests after a failure.
    pub fn cooldown(&self) -> Duration {
        Duration::from_secs(self.cooldown_seconds.unwrap_or(DEFAULT_COOLDOWN_SECS))
    }

    /// What `Summarizer::describe` (ctxhost-summarizer) will say for these settings.
    pub fn describe(&self) -> String {
        let model = self.model.as_deref().unwrap_or("?");
        match self.provider {
            Provider::Offline => "offline".to_string(),
            // The URL as shown: a password or key in it stays out of every message.
            Provider::Custom => format!(
                "custom:{model}@{}",
                RedactedUrl::new(self.effective_base_url().unwrap_or_default())
            ),
            provider => {
                let mut text = format!("{provider}:{model}");
                if let (Some(url), Some(default)) = (&self.base_url, provider.default_base_url()) {
                    let url = url.trim().trim_end_matches('/');
                    if url != default {
                        text.push('@');
                        text.push_str(&RedactedUrl::new(url).to_string());
                    }
                }
                text
            }
        }
    }
}

fn field<T: serde::de::DeserializeOwned>(key: &str, value: &Value) -> Result<T, SettingsError> {
    T::deserialize(value).map_err(|error| {
        let expected = match key {
            "provider" => format!(
                "must be one of {}",
                Provider::ALL.map(Provider::as_str).join(", ")
            ),
            "timeout" | "deadline" => "must be a number of seconds".to_string(),
            "max_retries" | "context_length" => "must be a whole number".to_string(),
            "cooldown_seconds" => "must be a whole number of seconds".to_string(),
            _ => "must be a string".to_string(),
        };
        SettingsError::invalid(key, format!("{expected} ({error})"))
    })
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

fn validate_env_name(name: &str) -> Result<(), SettingsError> {
    let looks_like_key = name.starts_with("sk-")
        || name.starts_with("sk_")
        || (name.len() >= 32 && name.chars().any(|c| c.is_ascii_lowercase()));
    if looks_like_key {
        return Err(SettingsError::invalid(
            "api_key_env",
            "this looks like an API key; keys are never stored in config: put the key in an \
             environment variable and name that variable here (e.g. OPENAI_API_KEY)",
        ));
    }
    let mut chars = name.chars();
    let valid = matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(SettingsError::invalid(
            "api_key_env",
            format!("must be an environment variable name (letters, digits and _), not {name:?}"),
        ));
    }
    Ok(())
}

fn validate_base_url(url: &str) -> Result<(), SettingsError> {
    let trimmed = url.trim();
    // Messages quote the URL masked: a password in it stays out of every error.
    let shown = format!("\"{}\"", RedactedUrl::new(trimmed));
    let parsed = url::Url::parse(trimmed)
        .map_err(|error| SettingsError::invalid("base_url", format!("{shown}: {error}")))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(SettingsError::invalid(
            "base_url",
            format!("must be an http:// or https:// URL, not {shown}"),
        ));
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(SettingsError::invalid(
            "base_url",
            format!("must not carry a query or fragment: {shown}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_offline_and_valid() {
        let settings = SummarizerSettings::default();
        assert_eq!(settings.provider, Provider::Offline);
        assert_eq!(settings.timeout, 60.0);
        assert_eq!(settings.max_retries, 3);
        assert_eq!(settings.effective_context_length(), 128_000);
        settings.validate().unwrap();
        assert_eq!(settings.describe(), "offline");
    }

    #[test]
    fn a_password_in_the_base_url_is_never_shown() {
        let settings = |url: &str| SummarizerSettings {
            provider: Provider::Custom,
            model: Some("m".into()),
            base_url: Some(url.into()),
            ..Default::default()
        };
        let fine = settings("http://bob:hunter22@127.0.0.1:9/v1");
        assert_eq!(fine.describe(), "custom:m@http://bob:***@127.0.0.1:9/v1");
        for bad in [
            "http://bob:hunter22@127.0.0.1:9/v1?x=1",
            "ftp://bob:hunter22@127.0.0.1/v1",
        ] {
            let error = settings(bad).validate().unwrap_err().to_string();
            assert!(error.contains("bob:***@"), "{error}");
            assert!(!error.contains("hunter22"), "{error}");
        }
    }

    #[test]
    fn effective_values_follow_the_provider() {
        let settings = SummarizerSettings {
            provider: Provider::Openrouter,
            model: Some("m".into()),
            ..Default::default()
        };
        assert_eq!(
            settings.effective_base_url().as_deref(),
            Some("https://openrouter.ai/api/v1")
        );
        assert_eq!(
            settings.effective_api_key_env().as_deref(),
            Some("OPENROUTER_API_KEY")
        );
        assert_eq!(settings.describe(), "openrouter:m");
        let custom = SummarizerSettings {
            provider: Provider::Custom,
            model: Some("llama3".into()),
            base_url: Some("http://127.0.0.1:8080/v1/".into()),
            ..Default::default()
        };
        assert_eq!(custom.effective_api_key_env(), None);
        assert_eq!(custom.describe(), "custom:llama3@http://127.0.0.1:8080/v1");
    }
}
