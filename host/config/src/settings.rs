//! Every host key of `config.yaml`, declared once as plain data: its dotted name, the kind of
//! value it takes, its default, a one-line doc and the check its value must pass. The typed
//! sections ([`crate::Config`]'s fields) read the file; everything that lists keys is derived
//! from [`HOST_SETTINGS`]: the known keys and sections, `config get`'s defaults, the declared
//! checks of every load, the summarizer's key list and the READMEs' settings tables
//! ([`markdown_table`]). A unit test ties each declaration to the field that reads it.
//!
//! Engines declare their own keys (`compression.*` the built-in compressor's, `plugins.<name>.*`
//! each plugin's) in their manifests; the host's keys inside a plugin's section are
//! [`PLUGIN_HOST_SETTINGS`].

use serde_json::Value;

/// The kind of value a key takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Bool,
    /// A whole number.
    Whole,
    /// A number (seconds, shares).
    Number,
    Text,
    /// One of these words.
    Choice(&'static [&'static str]),
    /// A list.
    List,
    /// A mapping whose keys are the user's (model names, engine names).
    Map,
}

/// What an unset key reads as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefaultValue {
    /// This value (as YAML).
    Value(&'static str),
    /// Nothing: the typed field stays unset, and this value (as YAML) applies in its place.
    Implied(&'static str),
    /// Nothing that `config get` can print; the docs say what applies.
    Described(&'static str),
    /// Nothing.
    Unset,
}

impl DefaultValue {
    /// The value `config get` prints for an unset key, as YAML.
    pub fn value(self) -> Option<&'static str> {
        match self {
            DefaultValue::Value(value) | DefaultValue::Implied(value) => Some(value),
            DefaultValue::Described(_) | DefaultValue::Unset => None,
        }
    }
}

/// The check a key's value passes, beyond its kind (which the typed field checks).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Check {
    /// Anything of its kind.
    Any,
    /// A number of seconds above 0.
    PositiveSeconds,
    /// A whole number at least this large, in these units (`""` for a count).
    AtLeast(u64, &'static str),
    /// A whole number at most this large.
    AtMost(u64),
    /// A whole number from the first to the second.
    Between(u64, u64),
    /// A share of the model's window: from 0 to below 1.
    Share,
    /// Not empty (nor only spaces).
    NotBlank,
    /// An `http://` or `https://` URL.
    HttpUrl,
}

impl Check {
    /// Why `value` does not pass, or `None`. Null (an unset optional key) always passes.
    pub fn problem(self, value: &Value) -> Option<String> {
        if value.is_null() {
            return None;
        }
        let number = value.as_f64();
        let whole = value.as_u64();
        match self {
            Check::Any => None,
            Check::PositiveSeconds => match number {
                Some(seconds) if seconds.is_finite() && seconds > 0.0 => None,
                _ => Some(format!("must be a positive number of seconds, got {value}")),
            },
            Check::AtLeast(min, unit) => match whole {
                Some(n) if n >= min => None,
                _ => Some(format!("must be at least {min}{unit}, got {value}")),
            },
            Check::AtMost(max) => match whole {
                Some(n) if n <= max => None,
                _ => Some(format!("must be at most {max}, got {value}")),
            },
            Check::Between(min, max) => match whole {
                Some(n) if (min..=max).contains(&n) => None,
                _ => Some(format!("must be from {min} to {max}, got {value}")),
            },
            Check::Share => match number {
                Some(share) if share.is_finite() && (0.0..1.0).contains(&share) => None,
                _ => Some(format!(
                    "must be a share of the window, from 0 to below 1, got {value}"
                )),
            },
            Check::NotBlank => match value.as_str() {
                Some(text) if !text.trim().is_empty() => None,
                _ => Some("must not be empty (remove the key to leave it unset)".to_string()),
            },
            Check::HttpUrl => match value.as_str() {
                Some(url) if url.starts_with("http://") || url.starts_with("https://") => None,
                _ => Some(
                    "must be an http:// or https:// URL (e.g. https://api.openai.com/v1)"
                        .to_string(),
                ),
            },
        }
    }
}

/// One host key.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Setting {
    /// Dotted, as in the file: `serve.limits.tool_rounds`.
    pub key: &'static str,
    pub kind: Kind,
    pub default: DefaultValue,
    /// One line, for `config keys` and the READMEs' tables.
    pub doc: &'static str,
    pub check: Check,
    /// A valid value other than the default (as YAML): the declarations' test sets every key
    /// to it at once and reads it back from the typed config.
    pub example: &'static str,
}

/// A key that was renamed: the old name is still read, and `config validate` notes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Renamed {
    pub old: &'static str,
    pub new: &'static str,
    /// Why it was renamed, for the note.
    pub why: &'static str,
}

/// Older names still read.
pub const RENAMED: &[Renamed] = &[
    Renamed {
        old: "serve.compaction",
        new: "serve.compression",
        why: "these keys are about the engine's compression, not the agent's own compaction",
    },
    Renamed {
        old: "compression.summarizer_cooldown_seconds",
        new: "auxiliary.compression.cooldown_seconds",
        why: "the summarizer's cool-down is the host's, for every engine",
    },
];

/// Top-level sections whose keys are engines' (declared in their manifests): `compression` the
/// built-in compressor's, `plugins` each plugin's.
pub const ENGINE_SECTIONS: &[&str] = &["compression", "plugins"];

const fn setting(
    key: &'static str,
    kind: Kind,
    default: DefaultValue,
    check: Check,
    example: &'static str,
    doc: &'static str,
) -> Setting {
    Setting {
        key,
        kind,
        default,
        doc,
        check,
        example,
    }
}

use Check::{AtLeast, AtMost, Between, HttpUrl, NotBlank, PositiveSeconds, Share};
use DefaultValue::{Described, Implied, Unset, Value as Is};
use Kind::{Bool, Choice, List, Map, Number, Text, Whole};

/// Every host key outside the engines' sections, in the order the docs table them.
#[rustfmt::skip]
pub const HOST_SETTINGS: &[Setting] = &[
    setting("context.engine", Text, Is("compressor"), NotBlank, "window",
        "the engine to run"),
    setting("model.name", Text, Is("gpt-4o"), Check::Any, "gpt-5",
        "the model"),
    setting("model.context_length", Whole, Is("128000"), AtLeast(1024, " tokens"), "64000",
        "the model's window, in tokens (`--context-length`)"),
    setting("auxiliary.compression.provider", Choice(&["offline", "custom", "openai", "openrouter", "anthropic"]),
        Is("offline"), Check::Any, "custom",
        "the summarizer engines use: `offline`, `custom`, `openai`, `openrouter`, `anthropic`"),
    setting("auxiliary.compression.model", Text, Unset, NotBlank, "summary-model",
        "the summary model (required for every provider but `offline`)"),
    setting("auxiliary.compression.base_url", Text, Described("the provider's public endpoint"), Check::Any,
        "http://127.0.0.1:9/v1",
        "the summarizer's endpoint (required for `custom`); its redirects are never followed (the key would go with them)"),
    setting("auxiliary.compression.api_key_env", Text, Described("the provider's usual variable (`OPENAI_API_KEY`, ...)"),
        Check::Any, "SUMMARY_KEY",
        "the NAME of the environment variable holding the API key (keys are never stored in config)"),
    setting("auxiliary.compression.timeout", Number, Is("60"), PositiveSeconds, "30",
        "seconds per summarizer request"),
    setting("auxiliary.compression.max_retries", Whole, Is("3"), AtMost(10), "5",
        "retries on 429, 5xx, timeouts and connection errors"),
    setting("auxiliary.compression.deadline", Number, Is("90"), PositiveSeconds, "45",
        "seconds one summary may take, retries included; past it the offline summary answers (an answer over 8 MiB is cut off)"),
    setting("auxiliary.compression.context_length", Whole, Implied("128000"), AtLeast(1024, " tokens"), "32000",
        "the summary model's window; requests are trimmed to fit it"),
    setting("auxiliary.compression.cooldown_seconds", Whole, Implied("60"), Check::Any, "0",
        "when the summarizer fails, every engine gets the offline summary (and is told why) and the summarizer rests this long; `0` asks it on every call"),
    setting("tokens.encoding", Choice(crate::ENCODINGS), Is("o200k_base"), Check::Any, "cl100k_base",
        "the encoding of local token counts"),
    setting("tokens.backend", Choice(&["auto", "bpe", "tiktoken"]), Is("auto"), Check::Any, "bpe",
        "`auto` counts `o200k_base` over a rank table built into the binary (nothing to load) and `cl100k_base` with bpe-openai (identical counts, faster), others with tiktoken-rs"),
    setting("trust.enabled", Map, Unset, Check::Any,
        "{window: tree-sha256:0000000000000000000000000000000000000000000000000000000000000000}",
        "approved plugin builds, by engine (the hash of the plugin's directory); written by `ctxhost plugins enable`"),
    setting("trust.disabled", List, Unset, Check::Any, "[ghost]",
        "plugins that never load, even when selected; written by `ctxhost plugins disable`"),
    setting("serve.listen", Text, Is("127.0.0.1:8787"), Check::Any, "127.0.0.1:0",
        "`HOST:PORT` (`--listen`; port 0 picks a free one)"),
    setting("serve.upstream", Text, Is("https://api.openai.com/v1"), HttpUrl, "http://127.0.0.1:9/v1",
        "the provider's base URL with its version segment (`--upstream`)"),
    setting("serve.upstream_key_env", Text, Unset, Check::Any, "UPSTREAM_KEY",
        "opt-in: send this environment variable's key upstream instead of the client's (`x-api-key` on `/v1/messages`, a bearer token otherwise)"),
    setting("serve.forward_cookies", Bool, Is("false"), Check::Any, "true",
        "forward a client's `Cookie` header upstream (hop-by-hop headers never are)"),
    setting("serve.auth.tokens_env", Text, Unset, Check::Any, "GATEWAY_TOKENS",
        "an environment variable holding gateway tokens, comma-separated (required off loopback, with `tokens`)"),
    setting("serve.auth.tokens", List, Unset, Check::Any, "[a-token]",
        "gateway tokens written in the config itself"),
    setting("serve.models", Map, Unset, Check::Any, "{my-model: 32000}",
        "by model name, over the built-in tables: its context window (`my-model: 32000`), or `{window, price: {input, cache_read, cache_write_5m, cache_write_1h, output}, provider}` (dollars per million tokens; cache writes default to the provider's rule)"),
    setting("serve.limits.max_request_bytes", Whole, Is("33554432"), AtLeast(1, ""), "1048576",
        "the largest request body accepted (32 MiB); larger ones get 413"),
    setting("serve.limits.max_response_bytes", Whole, Is("67108864"), AtLeast(1, ""), "2097152",
        "the largest upstream answer relayed (64 MiB); a longer one is cut with an error"),
    setting("serve.limits.connect_timeout_seconds", Number, Is("10"), PositiveSeconds, "5",
        "upstream connect time"),
    setting("serve.limits.idle_timeout_seconds", Number, Is("300"), PositiveSeconds, "60",
        "the upstream's silence before or inside an answer"),
    setting("serve.limits.tool_rounds", Whole, Is("8"), Check::Any, "3",
        "model calls one request may make to answer engine tools"),
    setting("serve.limits.shutdown_grace_seconds", Number, Is("30"), PositiveSeconds, "5",
        "time in-flight requests get on shutdown"),
    setting("serve.limits.max_live_sessions", Whole, Is("10000"), Check::Any, "100",
        "sessions held in memory; the least recently used beyond it leave memory (not the store) and reopen on their next request"),
    setting("serve.limits.header_timeout_seconds", Number, Is("30"), PositiveSeconds, "5",
        "time a client has to send a request's headers (or to start its next request on a kept-alive connection) before it is disconnected"),
    setting("serve.limits.max_connections_per_ip", Whole, Is("256"), AtLeast(1, ""), "16",
        "open connections from one client address; more are closed on accept, before any token check"),
    setting("serve.limits.max_connections", Whole, Is("4096"), AtLeast(1, ""), "64",
        "open connections from all clients; more are closed on accept (lowered to three quarters of the process's file limit, which `serve` first raises to its hard limit)"),
    setting("serve.limits.over_window", Choice(&["refuse", "send"]), Is("refuse"), Check::Any, "send",
        "a conversation still over the window after compressing: `refuse` (400 in the wire's shape) or `send` (marked `x-ctxhost-over-window: true`, with a WARN)"),
    setting("serve.state", Text, Described("`$CTXHOST_HOME/data/gateway/sessions.sqlite`"), NotBlank, "sessions.sqlite",
        "where session state lives: a SQLite file, or a `postgres://user@host/db` URL (`sslmode` as libpq reads it: `prefer` by default, TLS without checking the certificate when the server offers it, as libpq does with no root certificate; `verify-ca`/`verify-full` check it against Mozilla's roots; the password never shows in a message)"),
    setting("serve.database.pool_size", Whole, Is("16"), AtLeast(1, ""), "4",
        "the PostgreSQL connection pool's size"),
    setting("serve.database.connect_timeout_seconds", Number, Is("5"), PositiveSeconds, "2",
        "time to connect to PostgreSQL (and to wait for a free connection from the pool)"),
    setting("serve.database.statement_timeout_seconds", Number, Is("10"), PositiveSeconds, "20",
        "time one statement may run before the server cancels it"),
    setting("serve.database.lease_seconds", Number, Is("10"), PositiveSeconds, "20",
        "how long a gateway's hold on a session lasts unless renewed (how long the others wait for one that died)"),
    setting("serve.database.lease_wait_seconds", Number, Is("120"), PositiveSeconds, "30",
        "how long a request waits for another gateway to finish with its session before it gets 503 `session_busy`"),
    setting("serve.database.retry_seconds", Number, Is("30"), PositiveSeconds, "10",
        "how long a session whose answer went out keeps trying to save while the database is away"),
    setting("serve.cache.breakpoints", Choice(&["auto", "off"]), Is("auto"), Check::Any, "off",
        "`auto`: cache breakpoints on `/v1/messages` requests whose client set none; `off`"),
    setting("serve.cache.min_tokens_saved", Whole, Is("0"), Check::Any, "500",
        "defer compressions that save fewer tokens while the history still fits (0: never)"),
    setting("serve.compression.background", Bool, Is("true"), Check::Any, "false",
        "prepare the engine's compressions in the background (`serve.compaction.*` is still read)"),
    setting("serve.compression.margin", Number, Is("0.1"), Share, "0.2",
        "how near the threshold starts one, as a share of the window"),
    setting("serve.compression.wait_seconds", Number, Is("2"), PositiveSeconds, "1",
        "how long a request that would not fit waits for the compression being prepared before waiting on (logged)"),
    setting("serve.compression.cache_aware", Bool, Is("true"), Check::Any, "false",
        "compress when it pays against the prompt cache: early on a cold cache, on a warm one when the window requires it or the rewrite pays back (`ctxhost run` follows it; `false`: whenever the engine asks)"),
    setting("serve.client_compaction", Choice(&["engine", "upstream", "passthrough"]), Is("engine"), Check::Any, "upstream",
        "who answers the agent's own compaction: `engine`, `upstream` or `passthrough` (above)"),
    setting("serve.count_tokens", Choice(&["view", "passthrough"]), Is("view"), Check::Any, "passthrough",
        "what `count_tokens` / `input_tokens` count: `view` (what goes upstream) or `passthrough`"),
    setting("serve.anthropic.betas", List, Unset, Check::Any, "[context-1m-2025-08-07]",
        "betas added to `anthropic-beta` upstream: a name, or `{beta, models: [glob], window}`"),
    setting("serve.anthropic.cache_ttl", Choice(&["5m", "1h"]), Is("5m"), Check::Any, "1h",
        "how long the cache entries of the gateway's breakpoints live (`1h` writes cost more: 2x input, against 1.25x); `ctxhost run --cache-ttl` defaults to it"),
    setting("serve.engine_fallback", Choice(&["fail", "compressor"]), Is("fail"), Check::Any, "compressor",
        "a configured engine that cannot start stops `serve`; `compressor` serves on the compressor, `/healthz` says `degraded` and every response carries `x-ctxhost-engine-error`"),
];

/// The most processes one isolated plugin may run (`plugins.<name>.processes`): each serves
/// many sessions, so more than a machine's cores buys nothing but memory.
pub const MAX_PROCESSES: usize = 64;

/// The host's keys inside an engine's section (`plugins.<name>.<key>`): where and how the
/// engine runs. Keys are relative to the section.
#[rustfmt::skip]
pub const PLUGIN_HOST_SETTINGS: &[Setting] = &[
    setting("isolation", Choice(&["process", "in_process"]), Described("`process` for installed plugins, `in_process` for a project's"),
        Check::Any, "process",
        "where the engine runs: in a child process, or in the host's own"),
    setting("timeout", Number, Is("300"), PositiveSeconds, "60",
        "seconds one call may take before an isolated engine's process is killed"),
    setting("check_timeout", Number, Is("10"), PositiveSeconds, "1",
        "seconds a per-turn check (`should_compress`, ...) may take, in place of `timeout` (a smaller `timeout` caps it)"),
    setting("memory_limit_mb", Whole, Is("8192"), Check::Any, "1024",
        "an isolated engine's address-space limit per process, in MiB (0: none)"),
    setting("processes", Whole, Is("1"), Between(1, MAX_PROCESSES as u64), "2",
        "how many processes an isolated engine runs in; each serves many sessions"),
    setting("max_reply_mb", Whole, Is("64"), AtLeast(1, "MiB"), "256",
        "the largest answer an isolated engine's process may send for one call, in MiB; a bigger one fails that call, unread"),
];

/// The declaration of `key`, host keys and the host's keys of a plugin section
/// (`plugins.<name>.timeout`) both.
pub fn find(key: &str) -> Option<&'static Setting> {
    if let Some(found) = HOST_SETTINGS.iter().find(|s| s.key == key) {
        return Some(found);
    }
    let rest = key.strip_prefix("plugins.")?;
    let (_engine, name) = rest.split_once('.')?;
    PLUGIN_HOST_SETTINGS.iter().find(|s| s.key == name)
}

/// The keys of a section, relative to it (`auxiliary.compression` → `provider`, `model`, ...).
pub fn keys_of(section: &str) -> impl Iterator<Item = &'static str> + '_ {
    HOST_SETTINGS.iter().filter_map(move |s| {
        s.key
            .strip_prefix(section)
            .and_then(|rest| rest.strip_prefix('.'))
    })
}

/// The top-level sections ctxhost reads: the host's and the engines'.
pub fn sections() -> Vec<&'static str> {
    let mut sections: Vec<&'static str> = Vec::new();
    let firsts = HOST_SETTINGS
        .iter()
        .map(|s| s.key.split('.').next().unwrap_or(s.key));
    for section in firsts.chain(ENGINE_SECTIONS.iter().copied()) {
        if !sections.contains(&section) {
            sections.push(section);
        }
    }
    sections
}

/// The value at dotted `key` in a JSON tree, if there is one.
pub fn value_at<'a>(tree: &'a Value, key: &str) -> Option<&'a Value> {
    key.split('.').try_fold(tree, |node, part| node.get(part))
}

/// The first declared check that `tree` (the host's sections in their JSON form, keys as in the
/// file under `at`) fails: the full key and why.
pub fn first_problem(settings: &[Setting], at: &str, tree: &Value) -> Option<(String, String)> {
    settings.iter().find_map(|setting| {
        let relative = match at {
            "" => setting.key,
            at => setting.key.strip_prefix(at)?.strip_prefix('.')?,
        };
        let value = value_at(tree, relative)?;
        // A number with a value of its own serializes as null only when it is not finite
        // (NaN, infinity): the check would take that for an unset key.
        if value.is_null()
            && setting.kind == Kind::Number
            && matches!(setting.default, DefaultValue::Value(_))
        {
            return Some((
                setting.key.to_string(),
                "must be a finite number".to_string(),
            ));
        }
        let problem = setting.check.problem(value)?;
        Some((setting.key.to_string(), problem))
    })
}

/// The declared keys under `prefixes` (every key when there are none), host keys first, then
/// the host's keys of a plugin section (as `plugins.<name>.timeout`, under `plugins`), each with
/// its dotted name.
pub fn selected(prefixes: &[&str]) -> Vec<(String, &'static Setting)> {
    let under = |key: &str| {
        prefixes.is_empty()
            || prefixes.iter().any(|prefix| {
                key == *prefix
                    || key
                        .strip_prefix(prefix)
                        .is_some_and(|rest| rest.starts_with('.'))
            })
    };
    let host = HOST_SETTINGS.iter().map(|s| (s.key.to_string(), s));
    let plugin = PLUGIN_HOST_SETTINGS
        .iter()
        .map(|s| (format!("plugins.<name>.{}", s.key), s));
    host.chain(plugin).filter(|(key, _)| under(key)).collect()
}

/// The settings table of the keys under `prefixes` (see [`selected`]), as the READMEs hold it:
/// `ctxhost config keys --markdown PREFIX...` prints it.
pub fn markdown_table(prefixes: &[&str]) -> String {
    let mut table = String::from("| key | default | meaning |\n| --- | --- | --- |\n");
    for (key, setting) in selected(prefixes) {
        let default = match setting.default {
            DefaultValue::Value(value) | DefaultValue::Implied(value) => format!(" `{value}`"),
            DefaultValue::Described(text) => format!(" {text}"),
            DefaultValue::Unset => String::new(),
        };
        table.push_str(&format!("| `{key}` |{default} | {} |\n", setting.doc));
    }
    table
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::Config;

    /// The host's sections of a config as the typed fields hold them, keys as in the file.
    fn read_back(config: &Config) -> Value {
        serde_json::json!({
            "context": config.context,
            "model": config.model,
            "auxiliary": {"compression": config.summarizer},
            "tokens": config.tokens,
            "trust": config.trust,
            "serve": config.serve,
        })
    }

    pub(crate) fn yaml(text: &str) -> Value {
        serde_yaml::from_str(text).unwrap()
    }

    /// Equal as values: `60` and `60.0` are one number.
    pub(crate) fn same(a: &Value, b: &Value) -> bool {
        match (a, b) {
            (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
            (Value::Array(x), Value::Array(y)) => {
                x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
            }
            (Value::Object(x), Value::Object(y)) => {
                x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
            }
            _ => a == b,
        }
    }

    /// Every leaf of `tree` (a declared mapping counts as one), by dotted key.
    fn leaves(tree: &Value, at: &str, out: &mut Vec<String>) {
        match tree {
            Value::Object(map) if find(at).is_none_or(|s| s.kind != Kind::Map) => {
                for (key, value) in map {
                    let key = if at.is_empty() {
                        key.clone()
                    } else {
                        format!("{at}.{key}")
                    };
                    leaves(value, &key, out);
                }
            }
            _ => out.push(at.to_string()),
        }
    }

    #[test]
    fn every_declared_default_is_what_an_empty_config_reads() {
        let defaults = read_back(&Config::defaults());
        for setting in HOST_SETTINGS {
            let read = value_at(&defaults, setting.key)
                .unwrap_or_else(|| panic!("{} is read by no field", setting.key));
            match setting.default {
                DefaultValue::Value(value) => {
                    assert!(
                        same(read, &yaml(value)),
                        "{}: {read} != {value}",
                        setting.key
                    )
                }
                DefaultValue::Implied(_) | DefaultValue::Described(_) | DefaultValue::Unset => {
                    assert!(
                        read.is_null()
                            || read.as_array().is_some_and(Vec::is_empty)
                            || read.as_object().is_some_and(|m| m.is_empty()),
                        "{}: declared unset, reads {read}",
                        setting.key
                    )
                }
            }
        }
    }

    #[test]
    fn every_declared_key_is_read_by_a_field_and_every_field_is_declared() {
        // One config setting every key to its example, written as the file would be.
        let mut text = String::new();
        for setting in HOST_SETTINGS {
            text = crate::edit::set(
                &text,
                setting.key,
                &crate::edit::parse_value(setting.example),
            )
            .unwrap();
        }
        let config = Config::parse(&text, None).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let read = read_back(&config);
        for setting in HOST_SETTINGS {
            let example = yaml(setting.example);
            let value = value_at(&read, setting.key);
            assert!(
                value.is_some_and(|v| same(v, &example)),
                "{}: set to {example}, read {value:?}",
                setting.key
            );
            assert_ne!(
                Some(setting.example),
                setting.default.value(),
                "{}: the example must differ from the default",
                setting.key
            );
            assert_eq!(setting.check.problem(&example), None, "{}", setting.key);
        }
        let mut fields = Vec::new();
        leaves(&read, "", &mut fields);
        // `model.*` keeps the other keys Hermes configs carry, unread.
        let undeclared: Vec<_> = fields.iter().filter(|f| find(f).is_none()).collect();
        assert!(
            undeclared.is_empty(),
            "fields no declaration names: {undeclared:?}"
        );
    }

    #[test]
    fn every_declared_choice_is_read_and_implied_defaults_are_what_applies() {
        let examples = HOST_SETTINGS.iter().fold(String::new(), |text, setting| {
            let value = crate::edit::parse_value(setting.example);
            crate::edit::set(&text, setting.key, &value).unwrap()
        });
        for setting in HOST_SETTINGS {
            let Kind::Choice(choices) = setting.kind else {
                continue;
            };
            for choice in choices {
                let value = crate::edit::parse_value(choice);
                // Alone, or beside the other examples (a provider needs its model).
                let read = ["", examples.as_str()].into_iter().find_map(|base| {
                    let text = crate::edit::set(base, setting.key, &value).unwrap();
                    Config::parse(&text, None).ok()
                });
                let read = read.unwrap_or_else(|| panic!("{} refuses {choice}", setting.key));
                let read = read_back(&read);
                assert_eq!(
                    value_at(&read, setting.key).and_then(Value::as_str),
                    Some(*choice),
                    "{}",
                    setting.key
                );
            }
        }
        let defaults = Config::defaults();
        let implied: Vec<(&str, u64)> = HOST_SETTINGS
            .iter()
            .filter_map(|s| match s.default {
                DefaultValue::Implied(value) => Some((s.key, value.parse().unwrap())),
                _ => None,
            })
            .collect();
        assert_eq!(
            implied,
            [
                (
                    "auxiliary.compression.context_length",
                    defaults.summarizer.effective_context_length()
                ),
                (
                    "auxiliary.compression.cooldown_seconds",
                    defaults.summarizer.cooldown().as_secs()
                ),
            ]
        );
    }

    #[test]
    fn a_declared_check_refuses_with_the_key() {
        let error = Config::parse("serve:\n  compression:\n    margin: 1.5\n", None)
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "config:3: serve.compression.margin: must be a share of the window, from 0 to below 1, got 1.5"
        );
        assert_eq!(
            Check::AtLeast(1024, " tokens").problem(&serde_json::json!(10)),
            Some("must be at least 1024 tokens, got 10".to_string())
        );
        assert_eq!(Check::PositiveSeconds.problem(&Value::Null), None);
    }

    #[test]
    fn sections_and_tables_come_from_the_declarations() {
        assert_eq!(
            sections(),
            [
                "context",
                "model",
                "auxiliary",
                "tokens",
                "trust",
                "serve",
                "compression",
                "plugins"
            ]
        );
        assert_eq!(selected(&["plugins"]).len(), PLUGIN_HOST_SETTINGS.len());
        assert_eq!(
            selected(&[]).len(),
            HOST_SETTINGS.len() + PLUGIN_HOST_SETTINGS.len()
        );
        let table = markdown_table(&["serve.compression"]);
        assert_eq!(table.lines().count(), 2 + 4, "{table}");
        assert!(
            table.contains("| `serve.compression.margin` | `0.1` |"),
            "{table}"
        );
        assert_eq!(
            keys_of("auxiliary.compression").count(),
            9,
            "the summarizer's keys"
        );
    }
}
