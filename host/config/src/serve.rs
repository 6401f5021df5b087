//! `serve.*` in config.yaml: where the gateway listens, where it sends requests, and its limits.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The default listen address: loopback only, so nothing but this machine reaches it.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8787";
/// The default upstream: OpenAI's API.
pub const DEFAULT_UPSTREAM: &str = "https://api.openai.com/v1";

/// What `ctxhost serve` runs on, taken once from the settled config: the `serve:` section and
/// the config's model, whose window a session falls back to when nothing else names its model.
/// It reads as the `serve:` section ([`std::ops::Deref`]) beside `model`.
#[derive(Debug, Clone, PartialEq)]
pub struct GatewaySettings {
    pub serve: ServeSettings,
    /// `model.name` and `model.context_length`.
    pub model: crate::ModelSection,
}

impl std::ops::Deref for GatewaySettings {
    type Target = ServeSettings;

    fn deref(&self) -> &ServeSettings {
        &self.serve
    }
}

impl std::ops::DerefMut for GatewaySettings {
    fn deref_mut(&mut self) -> &mut ServeSettings {
        &mut self.serve
    }
}

impl crate::Config {
    /// The gateway's settings, from this (settled) config.
    pub fn gateway_settings(&self) -> GatewaySettings {
        GatewaySettings {
            serve: self.serve.clone(),
            model: self.model.clone(),
        }
    }
}

/// The `serve:` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServeSettings {
    /// `HOST:PORT` to listen on (`--listen` wins); port 0 picks a free one.
    pub listen: String,
    /// The provider's base URL, up to and including its version segment (`--upstream` wins).
    pub upstream: String,
    /// Opt-in: send the key in this environment variable upstream instead of the client's
    /// `Authorization`. Without it the gateway holds no provider key and forwards the client's.
    pub upstream_key_env: Option<String>,
    /// Whether a client's `Cookie` header goes upstream: a cookie is the client's session with
    /// something, rarely the provider, so by default it stays here.
    pub forward_cookies: bool,
    /// Gateway tokens: required when listening on anything but loopback.
    pub auth: AuthSettings,
    /// Models the built-in tables lack or get wrong, by model name: each one's window, or its
    /// window, price and provider.
    pub models: BTreeMap<String, ModelSetting>,
    /// Size, time and round limits.
    pub limits: Limits,
    /// Where session state lives: a SQLite file path, or a `postgres://` URL for a database
    /// several gateways share. Default: `$CTXHOST_HOME/data/gateway/sessions.sqlite`.
    pub state: Option<String>,
    /// The connection pool and timeouts when `state` is a PostgreSQL URL.
    pub database: DatabaseSettings,
    /// Keeping the provider's prompt cache warm.
    pub cache: CacheSettings,
    /// The engine's compressions prepared in the background (`serve.compaction` is the older
    /// name, still read).
    #[serde(alias = "compaction")]
    pub compression: CompressionSettings,
    /// Who answers an agent's own compaction request (Codex's handoff summary or
    /// `compaction_trigger`, `POST /v1/responses/compact`, Claude Code's summary request,
    /// Hermes' compression call).
    pub client_compaction: ClientCompactionMode,
    /// What `POST /v1/messages/count_tokens` counts.
    pub count_tokens: CountTokens,
    /// Anthropic Messages only: betas the gateway adds upstream, the TTL of its breakpoints.
    pub anthropic: AnthropicSettings,
    /// What `serve` does when the configured engine cannot start (missing, unapproved,
    /// broken).
    pub engine_fallback: EngineFallback,
}

/// `serve.models.<name>`: the model's window alone (`my-model: 32000`, the older form), or
/// what the config says of it (`{window: 32000, price: {...}, provider: openai}`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ModelSetting {
    Window(u64),
    Described(ModelDescription),
}

/// `serve.models.<name>` written as a map.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModelDescription {
    /// Its context window, in tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<u64>,
    /// Dollars per million tokens (what `ctxhost run` and the gateway price calls with).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub price: Option<ctxhost_costs::price::PriceSetting>,
    /// Whose prompt cache it follows (`anthropic` or `openai`), when its name does not say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<ctxhost_costs::price::Provider>,
}

impl ModelSetting {
    pub fn window(&self) -> Option<u64> {
        match self {
            ModelSetting::Window(window) => Some(*window),
            ModelSetting::Described(described) => described.window,
        }
    }

    pub fn price(&self) -> Option<ctxhost_costs::price::ConfiguredPrice> {
        match self {
            ModelSetting::Window(_) => None,
            ModelSetting::Described(described) => {
                described
                    .price
                    .map(|price| ctxhost_costs::price::ConfiguredPrice {
                        price,
                        provider: described.provider,
                    })
            }
        }
    }
}

impl<'de> Deserialize<'de> for ModelSetting {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = ModelSetting;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a context window in tokens, or a map of window, price and provider")
            }

            fn visit_u64<E: serde::de::Error>(self, window: u64) -> Result<ModelSetting, E> {
                Ok(ModelSetting::Window(window))
            }

            fn visit_i64<E: serde::de::Error>(self, window: i64) -> Result<ModelSetting, E> {
                u64::try_from(window)
                    .map(ModelSetting::Window)
                    .map_err(|_| {
                        E::custom(format!(
                            "{window} is not a context window (tokens, at least 1024)"
                        ))
                    })
            }

            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                map: M,
            ) -> Result<ModelSetting, M::Error> {
                ModelDescription::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(ModelSetting::Described)
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// `serve.engine_fallback`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EngineFallback {
    /// Start-up fails with the reason: the gateway never runs an engine it does not name.
    #[default]
    Fail,
    /// Serve with the built-in compressor: `/healthz` says `degraded` and every response
    /// carries `x-ctxhost-engine-error` with the reason.
    Compressor,
}

/// `serve.limits.over_window`: a request the engine cannot bring under the model's window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OverWindow {
    /// Answered with 400 in the wire's shape: the provider would refuse it anyway.
    #[default]
    Refuse,
    /// Sent as it is, marked `x-ctxhost-over-window: true`, with a WARN.
    Send,
}

impl Default for ServeSettings {
    fn default() -> Self {
        ServeSettings {
            listen: DEFAULT_LISTEN.to_string(),
            upstream: DEFAULT_UPSTREAM.to_string(),
            upstream_key_env: None,
            forward_cookies: false,
            auth: AuthSettings::default(),
            models: BTreeMap::new(),
            limits: Limits::default(),
            state: None,
            database: DatabaseSettings::default(),
            cache: CacheSettings::default(),
            compression: CompressionSettings::default(),
            client_compaction: ClientCompactionMode::default(),
            count_tokens: CountTokens::default(),
            anthropic: AnthropicSettings::default(),
            engine_fallback: EngineFallback::default(),
        }
    }
}

/// `serve.client_compaction`: one owner per history. When the agent compacts on its own, either
/// the session's engine answers (it already holds the history), or the provider does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientCompactionMode {
    /// The gateway answers from the session's engine, with no upstream call: a summary for a
    /// summary request, one signed `compaction` item for a trigger or the compact route; the
    /// agent's compacted history then continues the session.
    #[default]
    Engine,
    /// The request goes upstream as any other, and the engine does not compress it.
    Upstream,
    /// Provider-owned compaction is the provider's: a trigger or compact-route request goes to
    /// it exactly as sent (its context not managed), summary requests as in `upstream`.
    Passthrough,
}

/// `serve.count_tokens`: what a client's token count answers for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CountTokens {
    /// What the gateway would send upstream for that history (the session's view plus the new
    /// messages), so the client's meter agrees with the `usage` it receives.
    #[default]
    View,
    /// The client's request relayed as it came (its whole history).
    Passthrough,
}

/// `serve.anthropic`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AnthropicSettings {
    /// Betas added to the `anthropic-beta` header of upstream requests (after the client's).
    pub betas: Vec<AnthropicBeta>,
    /// How long the cache entries of the gateway's own breakpoints live.
    pub cache_ttl: ctxhost_costs::cache::Ttl,
}

/// One beta the gateway adds, for every model or only for those its patterns match.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum AnthropicBeta {
    /// For every model: `- context-1m-2025-08-07`.
    Always(String),
    /// For the models matching `models` (`*` matches any run of characters).
    ForModels {
        beta: String,
        models: Vec<String>,
        /// The model's context window with this beta (known betas have theirs built in).
        #[serde(default)]
        window: Option<u64>,
    },
}

impl AnthropicBeta {
    pub fn name(&self) -> &str {
        match self {
            AnthropicBeta::Always(beta) | AnthropicBeta::ForModels { beta, .. } => beta,
        }
    }

    /// Whether it is added for `model`.
    pub fn applies_to(&self, model: &str) -> bool {
        match self {
            AnthropicBeta::Always(_) => true,
            AnthropicBeta::ForModels { models, .. } => {
                models.iter().any(|pattern| glob_matches(pattern, model))
            }
        }
    }

    /// The window it gives a model, when the config says.
    pub fn window(&self) -> Option<u64> {
        match self {
            AnthropicBeta::Always(_) => None,
            AnthropicBeta::ForModels { window, .. } => *window,
        }
    }
}

/// `pattern` against `text`, where `*` matches any run of characters (none included).
fn glob_matches(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// `serve.compression`: the engine's compressions prepared before they are needed, so no turn
/// waits for a summarizer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CompressionSettings {
    /// Prepare compressions in the background, also the one a request crosses the threshold
    /// with (else each runs on the request that needs it).
    pub background: bool,
    /// How near the threshold a session is when its next request starts one, as a share of
    /// the window: the engine is asked whether it would compress with this many more tokens.
    pub margin: f64,
    /// Seconds a request whose last view plus what is new would not fit the window waits for
    /// the compression being prepared before it waits on as a synchronous compression would
    /// (said in the log). A request that fits never waits for one.
    pub wait_seconds: f64,
    /// Compress when it pays against the provider's prompt cache: early on a cold cache, on a
    /// warm one only when the window requires it or the rewrite pays back (`false`: whenever
    /// the engine asks). `ctxhost run` follows it (`--policy` overrides).
    pub cache_aware: bool,
}

impl Default for CompressionSettings {
    fn default() -> Self {
        CompressionSettings {
            background: true,
            margin: 0.1,
            wait_seconds: 2.0,
            cache_aware: true,
        }
    }
}

/// `serve.cache`: prompt caching.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CacheSettings {
    /// Cache breakpoints on Anthropic requests whose client set none.
    pub breakpoints: CacheBreakpoints,
    /// A compression that would save fewer tokens than this, while the uncompressed history
    /// still fits, is not applied (it would throw away a warm cache for little): the session
    /// goes on with its view until it has grown by this much. 0 applies every compression.
    pub min_tokens_saved: u64,
}

/// `serve.cache.breakpoints`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheBreakpoints {
    /// The system prompt and the last three messages, as Hermes' `system_and_3`.
    #[default]
    Auto,
    /// None added.
    Off,
}

/// `serve.database`: how the gateway uses a PostgreSQL `serve.state`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DatabaseSettings {
    /// Connections the gateway keeps open at most.
    pub pool_size: usize,
    /// Seconds to connect (and to wait for a free connection from the pool).
    pub connect_timeout_seconds: f64,
    /// Seconds one statement may run before the server cancels it.
    pub statement_timeout_seconds: f64,
    /// Seconds a gateway's hold on a session (a turn, a compression) lasts unless renewed: how
    /// long other gateways on the database wait for one that died.
    pub lease_seconds: f64,
    /// Seconds a request waits for another gateway to finish with its session before it gets
    /// 503.
    pub lease_wait_seconds: f64,
    /// Seconds a session whose answer went out keeps trying to save while the database is
    /// away, before the save is given up (and logged).
    pub retry_seconds: f64,
}

impl Default for DatabaseSettings {
    fn default() -> Self {
        DatabaseSettings {
            pool_size: 16,
            connect_timeout_seconds: 5.0,
            statement_timeout_seconds: 10.0,
            lease_seconds: 10.0,
            lease_wait_seconds: 120.0,
            retry_seconds: 30.0,
        }
    }
}

/// `serve.auth`: the tokens a client presents in `x-ctxhost-token` (or as its bearer token when
/// the gateway holds the upstream key).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuthSettings {
    /// An environment variable holding the tokens, comma-separated (kept out of the file).
    pub tokens_env: Option<String>,
    /// Tokens written in the config itself.
    pub tokens: Vec<String>,
}

/// `serve.limits`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Largest request body accepted, in bytes; larger ones get 413.
    pub max_request_bytes: u64,
    /// Largest upstream response relayed, in bytes; a longer one is cut with an error.
    pub max_response_bytes: u64,
    /// Seconds to wait for the upstream's connection.
    pub connect_timeout_seconds: f64,
    /// Seconds the upstream may stay silent (before its headers, or between two chunks).
    pub idle_timeout_seconds: f64,
    /// Model calls one request may make to answer the engine's own tools.
    pub tool_rounds: u32,
    /// Seconds in-flight requests get to finish after SIGINT/SIGTERM.
    pub shutdown_grace_seconds: f64,
    /// Sessions kept in memory; beyond it the least recently used leave (their state stays in
    /// the store and they reopen on their next request).
    pub max_live_sessions: usize,
    /// Seconds a client has to send a request's headers (and to start its next request on a
    /// kept-alive connection); a slower one is disconnected, so half-open connections cannot
    /// pile up.
    pub header_timeout_seconds: f64,
    /// Open connections from one client address; more are closed as soon as they are
    /// accepted, before any token check.
    pub max_connections_per_ip: usize,
    /// Open connections from all clients together; more are closed as soon as they are
    /// accepted (kept well under the process's file-descriptor limit).
    pub max_connections: usize,
    /// A request still over the model's window after the engine compressed.
    pub over_window: OverWindow,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_request_bytes: 32 * 1024 * 1024,
            max_response_bytes: 64 * 1024 * 1024,
            connect_timeout_seconds: 10.0,
            idle_timeout_seconds: 300.0,
            tool_rounds: 8,
            shutdown_grace_seconds: 30.0,
            max_live_sessions: 10_000,
            header_timeout_seconds: 30.0,
            max_connections_per_ip: 256,
            max_connections: 4_096,
            over_window: OverWindow::default(),
        }
    }
}

/// A `serve.*` key with a bad value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServeSettingsError {
    /// The full key (`serve.limits.tool_rounds`).
    pub key: String,
    pub problem: String,
}

impl ServeSettings {
    /// Reads the section from its JSON form; a missing section is the default.
    pub fn from_value(value: &Value) -> Result<Self, ServeSettingsError> {
        if value.is_null() {
            return Ok(Self::default());
        }
        let settings: ServeSettings =
            serde_path_to_error::deserialize(value.clone()).map_err(|error| {
                let path = error.path().to_string();
                ServeSettingsError {
                    key: if path == "." {
                        "serve".to_string()
                    } else {
                        format!("serve.{path}")
                    },
                    problem: error.into_inner().to_string(),
                }
            })?;
        settings.validate()?;
        Ok(settings)
    }

    pub(crate) fn validate(&self) -> Result<(), ServeSettingsError> {
        let fault = |key: &str, problem: &str| ServeSettingsError {
            key: format!("serve.{key}"),
            problem: problem.to_string(),
        };
        // The declared checks of `serve.*`; what follows relates keys or looks inside lists.
        let tree = serde_json::to_value(self).expect("the settings serialize");
        if let Some((key, problem)) =
            crate::settings::first_problem(crate::settings::HOST_SETTINGS, "serve", &tree)
        {
            return Err(ServeSettingsError { key, problem });
        }
        for (i, beta) in self.anthropic.betas.iter().enumerate() {
            let name = beta.name();
            // A header value: one token, no separators.
            if name.is_empty()
                || !name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
            {
                return Err(fault(
                    &format!("anthropic.betas[{i}]"),
                    "must name a beta (letters, digits, - _ .), e.g. context-1m-2025-08-07",
                ));
            }
            if beta.window().is_some_and(|w| w < 1024) {
                return Err(fault(
                    &format!("anthropic.betas[{i}].window"),
                    "a context window must be at least 1024 tokens",
                ));
            }
        }
        for (name, model) in &self.models {
            if model.window().is_some_and(|window| window < 1024) {
                let at = match model {
                    ModelSetting::Window(_) => format!("models.{name}"),
                    ModelSetting::Described(_) => format!("models.{name}.window"),
                };
                return Err(fault(&at, "a context window must be at least 1024 tokens"));
            }
            if let ModelSetting::Described(described) = model {
                if let Some(field) = described.price.and_then(|price| price.invalid_field()) {
                    return Err(fault(
                        &format!("models.{name}.price.{field}"),
                        "must be a price in dollars per million tokens, 0 or more",
                    ));
                }
                if described.price.is_some()
                    && described.provider.is_none()
                    && ctxhost_costs::price::Provider::of_model(name).is_none()
                {
                    return Err(fault(
                        &format!("models.{name}.provider"),
                        "say whose prompt cache this model follows: anthropic or openai",
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn betas_apply_to_the_models_their_patterns_match() {
        let settings = ServeSettings::from_value(&serde_json::json!({
            "count_tokens": "passthrough",
            "anthropic": {"betas": [
                "always-1",
                {"beta": "context-1m-2025-08-07", "models": ["claude-sonnet-4*", "*opus-4*"]},
            ]},
        }))
        .unwrap();
        assert_eq!(settings.count_tokens, CountTokens::Passthrough);
        let [always, million] = &settings.anthropic.betas[..] else {
            panic!("{settings:?}")
        };
        assert!(always.applies_to("anything"));
        assert!(million.applies_to("claude-sonnet-4-5"));
        assert!(million.applies_to("anthropic/claude-opus-4-1"));
        assert!(!million.applies_to("claude-haiku-4-5"));
        assert!(!million.applies_to("claude-sonnet-3"));
        assert!(glob_matches("a*b*c", "aXbYc"));
        assert!(!glob_matches("a*b*c", "aXcYb"));
        assert!(glob_matches("abc", "abc") && !glob_matches("abc", "abcd"));
        let bad = ServeSettings::from_value(&serde_json::json!({
            "anthropic": {"betas": ["two words"]},
        }));
        assert_eq!(bad.unwrap_err().key, "serve.anthropic.betas[0]");
        assert_eq!(ServeSettings::default().count_tokens, CountTokens::View);
    }

    #[test]
    fn the_breakpoints_ttl_is_5m_unless_set() {
        use ctxhost_costs::cache::Ttl;
        assert_eq!(
            ServeSettings::default().anthropic.cache_ttl,
            Ttl::FiveMinutes
        );
        let settings =
            ServeSettings::from_value(&serde_json::json!({"anthropic": {"cache_ttl": "1h"}}))
                .unwrap();
        assert_eq!(settings.anthropic.cache_ttl, Ttl::OneHour);
        let bad = ServeSettings::from_value(&serde_json::json!({"anthropic": {"cache_ttl": "2h"}}));
        assert_eq!(bad.unwrap_err().key, "serve.anthropic.cache_ttl");
    }
}
