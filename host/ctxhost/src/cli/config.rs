//! `ctxhost config path|get|set|unset|validate`: the config file from the command line. Writes
//! keep the user's comments, key order and unknown keys, are atomic, and are refused when the
//! result would not be a valid config (or the file already is not one).

use std::process::ExitCode;

use anyhow::bail;
use clap::{Args, Subcommand};
use ctxhost_config::edit;
use ctxhost_config::write::{update_checked, Change};
use ctxhost_config::BUILT_IN_ENGINE;
use ctxhost_redacted_url::RedactedUrl;
use serde_yaml::Value;

use ctxhost_core::suggest;

use super::plugins::select::select_engine;
use super::{App, GlobalArgs};

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print the config file commands read and write
    Path,
    /// Print a key's value (dotted: context.engine, plugins.lcm.threshold, ...)
    Get(GetArgs),
    /// Set a key; VALUE is read as YAML (0.6 is a number, true a boolean, [a, b] a list)
    Set(SetArgs),
    /// Remove a key (its default applies again)
    Unset(KeyArgs),
    /// Check the config: every section, the compressor's settings and the selected engine
    Validate,
}

#[derive(Debug, Args)]
pub struct GetArgs {
    /// The dotted key
    pub key: String,
    /// Print JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct SetArgs {
    /// The dotted key
    pub key: String,
    /// The value, as YAML
    #[arg(allow_hyphen_values = true)]
    pub value: String,
    /// Write a key ctxhost does not know, or select an engine that does not load
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct KeyArgs {
    /// The dotted key
    pub key: String,
}

pub fn run(global: &GlobalArgs, command: &ConfigCommand) -> anyhow::Result<ExitCode> {
    match command {
        ConfigCommand::Path => path(global),
        ConfigCommand::Get(args) => get(global, args),
        ConfigCommand::Set(args) => set(global, args),
        ConfigCommand::Unset(args) => unset(global, args),
        ConfigCommand::Validate => validate(global),
    }
}

fn path(global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let app = App::for_edit(global)?;
    println!("{}", app.config_path.display());
    if !app.config_path.is_file() {
        eprintln!("note: it does not exist yet; built-in defaults apply until `ctxhost config set` or `ctxhost plugins use` creates it");
    }
    Ok(ExitCode::SUCCESS)
}

fn get(global: &GlobalArgs, args: &GetArgs) -> anyhow::Result<ExitCode> {
    let app = App::new(global)?;
    let text = app.config().text();
    let (value, default) = match edit::get(text, &args.key)? {
        Some(value) => (value, false),
        None => match default_of(&app, &args.key) {
            Some(value) => (value, true),
            None => bail!(
                "{} is not set in {} and has no default ctxhost knows of{}",
                args.key,
                app.config_path.display(),
                suggest::did_you_mean(closest_key(&args.key).as_deref())
            ),
        },
    };
    let value = masked_urls(value);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        match &value {
            Value::Mapping(_) | Value::Sequence(_) => print!("{}", serde_yaml::to_string(&value)?),
            Value::String(text) => println!("{text}"),
            scalar => println!("{}", edit::render(scalar)),
        }
    }
    if default {
        eprintln!("note: not set in the config file; this is the default");
    }
    Ok(ExitCode::SUCCESS)
}

fn set(global: &GlobalArgs, args: &SetArgs) -> anyhow::Result<ExitCode> {
    let app = App::for_edit(global)?;
    if args.key == "context.engine" {
        // The same checks, approvals and messages as `plugins use`.
        println!("{}", select_engine(&app, &args.value, args.force)?);
        return Ok(ExitCode::SUCCESS);
    }
    let section = args.key.split('.').next().unwrap_or_default();
    if !SECTIONS.contains(&section) && !args.force {
        bail!(
            "{} is not a key ctxhost knows{} (--force writes it anyway)",
            args.key,
            suggest::did_you_mean(closest_key(&args.key).as_deref())
        );
    }
    let value = edit::parse_value(&args.value);
    write(&app, &[Change::Set(&args.key, value.clone())], &args.key)?;
    println!(
        "{} = {} (in {})",
        args.key,
        edit::render(&masked_urls(value)),
        app.config_path.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn unset(global: &GlobalArgs, args: &KeyArgs) -> anyhow::Result<ExitCode> {
    let app = App::for_edit(global)?;
    if edit::get(app.config().text(), &args.key)?.is_none() {
        println!("{} is not set in {}", args.key, app.config_path.display());
        return Ok(ExitCode::SUCCESS);
    }
    write(&app, &[Change::Remove(&args.key)], &args.key)?;
    println!("{} removed (in {})", args.key, app.config_path.display());
    Ok(ExitCode::SUCCESS)
}

/// Writes `changes`, first checking that the engine whose settings `key` belongs to accepts
/// the result.
fn write(app: &App, changes: &[Change<'_>], key: &str) -> anyhow::Result<()> {
    let engine = engine_of_key(key);
    update_checked(&app.config_path, changes, |config| match &engine {
        Some(engine) => app.engines.check_settings(config, engine),
        None => app.engines.check_settings(config, &config.context.engine),
    })?;
    Ok(())
}

/// The engine whose settings a key is: `compression.*` the compressor's, `plugins.NAME.*` the
/// plugin's.
fn engine_of_key(key: &str) -> Option<String> {
    let mut parts = key.split('.');
    match parts.next()? {
        "compression" => Some(BUILT_IN_ENGINE.to_string()),
        "plugins" => parts.next().map(str::to_string),
        _ => None,
    }
}

fn validate(global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    // Loading checks every section ctxhost owns; errors come back located.
    let app = App::new(global)?;
    let source = match &app.config().source {
        Some(path) => path.display().to_string(),
        None => "built-in defaults (no config file)".to_string(),
    };
    // Loading leaves unknown top-level sections alone (other programs' sections share the
    // file); one that is a near miss of a ctxhost section is a typo whose settings would be
    // silently ignored.
    let mut mistyped = false;
    for section in top_level_sections(app.config().text()) {
        if SECTIONS.contains(&section.as_str()) {
            continue;
        }
        match suggest::closest(&section, SECTIONS.iter().copied()) {
            Some(known) => {
                let line = app
                    .config()
                    .text()
                    .lines()
                    .position(|l| {
                        l.strip_prefix(section.as_str())
                            .is_some_and(|rest| rest.trim_start().starts_with(':'))
                    })
                    .map(|at| format!(":{}", at + 1))
                    .unwrap_or_default();
                println!(
                    "problem: {source}{line}: unknown top-level section `{section}:` (ctxhost \
                     would ignore it){}",
                    suggest::did_you_mean(Some(&known))
                );
                mistyped = true;
            }
            None => eprintln!("note: top-level section `{section}:` is not read by ctxhost"),
        }
    }
    if mistyped {
        return Ok(ExitCode::from(1));
    }
    let name = app.config().context.engine.clone();
    // A throwaway state: validating must not create the engine's store.
    let session = app
        .engines
        .open_session(&name, ctxhost_core::SessionOptions::new("").temporary())?;
    if !session.warnings().is_empty() {
        for warning in session.warnings() {
            println!("problem: {}", warning.summary);
        }
        return Ok(ExitCode::from(1));
    }
    println!(
        "{source}: valid; context.engine = {} ({})",
        session.engine(),
        session.source().label()
    );
    Ok(ExitCode::SUCCESS)
}

/// The keys of the file's top-level mapping, in file order.
fn top_level_sections(text: &str) -> Vec<String> {
    match serde_yaml::from_str::<Value>(text) {
        Ok(Value::Mapping(map)) => map
            .keys()
            .filter_map(|key| key.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    }
}

/// `value` with every URL in it shown as [`RedactedUrl`] shows it: a database URL or an
/// endpoint's password never reaches the terminal (or a script's log).
fn masked_urls(value: Value) -> Value {
    match value {
        Value::String(text) if text.contains("://") => {
            Value::String(RedactedUrl::new(text).to_string())
        }
        Value::Sequence(items) => Value::Sequence(items.into_iter().map(masked_urls).collect()),
        Value::Mapping(map) => Value::Mapping(
            map.into_iter()
                .map(|(key, value)| (key, masked_urls(value)))
                .collect(),
        ),
        other => other,
    }
}

/// The top-level sections of config.yaml that ctxhost reads.
const SECTIONS: &[&str] = &[
    "context",
    "model",
    "compression",
    "auxiliary",
    "tokens",
    "plugins",
    "trust",
    "serve",
];

/// Every key ctxhost knows a default for, outside plugin sections.
fn known_keys() -> Vec<String> {
    let mut keys: Vec<String> = [
        "context.engine",
        "model.name",
        "model.context_length",
        "tokens.encoding",
        "tokens.backend",
        "auxiliary.compression.provider",
        "auxiliary.compression.model",
        "auxiliary.compression.base_url",
        "auxiliary.compression.api_key_env",
        "auxiliary.compression.timeout",
        "auxiliary.compression.max_retries",
        "auxiliary.compression.deadline",
        "auxiliary.compression.context_length",
        "auxiliary.compression.cooldown_seconds",
        "trust.enabled",
        "trust.disabled",
        "serve.listen",
        "serve.upstream",
        "serve.upstream_key_env",
        "serve.auth.tokens_env",
        "serve.auth.tokens",
        "serve.models",
        "serve.limits.max_request_bytes",
        "serve.limits.max_response_bytes",
        "serve.limits.connect_timeout_seconds",
        "serve.limits.idle_timeout_seconds",
        "serve.limits.tool_rounds",
        "serve.limits.shutdown_grace_seconds",
        "serve.limits.max_live_sessions",
        "serve.limits.header_timeout_seconds",
        "serve.limits.max_connections_per_ip",
        "serve.limits.max_connections",
        "serve.limits.over_window",
        "serve.engine_fallback",
        "serve.state",
        "serve.database.pool_size",
        "serve.database.connect_timeout_seconds",
        "serve.database.statement_timeout_seconds",
        "serve.cache.breakpoints",
        "serve.cache.min_tokens_saved",
        "serve.compaction.background",
        "serve.compaction.margin",
        "serve.compaction.wait_seconds",
        "serve.client_compaction",
        "serve.count_tokens",
        "serve.anthropic.betas",
    ]
    .map(str::to_string)
    .to_vec();
    keys.extend(
        ctxhost_compressor::Settings::config_keys()
            .into_iter()
            .map(|k| format!("compression.{}", k.key)),
    );
    keys
}

/// The known key closest to a mistyped one.
fn closest_key(key: &str) -> Option<String> {
    let keys = known_keys();
    suggest::closest(key, keys.iter().map(String::as_str))
}

/// What a key reads as when the file does not set it.
fn default_of(app: &App, key: &str) -> Option<Value> {
    // The defaults are whatever an empty config reads as.
    let defaults = ctxhost_config::Config::defaults();
    let fixed = [
        ("context.engine", defaults.context.engine),
        ("model.name", defaults.model.name),
        (
            "model.context_length",
            defaults.model.context_length.to_string(),
        ),
        ("tokens.encoding", defaults.tokens.encoding),
        ("tokens.backend", defaults.tokens.backend),
        (
            "auxiliary.compression.provider",
            defaults.summarizer.provider.to_string(),
        ),
        ("serve.listen", defaults.serve.listen.clone()),
        ("serve.upstream", defaults.serve.upstream.clone()),
    ];
    if let Some((_, value)) = fixed.iter().find(|(k, _)| *k == key) {
        return Some(edit::parse_value(value));
    }
    let mut parts = key.splitn(3, '.');
    match (parts.next(), parts.next(), parts.next()) {
        (Some("compression"), Some(name), None) => ctxhost_compressor::Settings::config_keys()
            .into_iter()
            .find(|k| k.key == name)
            .map(|k| edit::parse_value(&k.default)),
        (Some("plugins"), Some(engine), Some(name)) => {
            let inspection = app.engines.inspect_plugin(engine, false)?;
            let manifest = inspection.loaded.ok()?;
            manifest
                .config_keys
                .iter()
                .find(|k| k.key == name)
                .map(|k| edit::parse_value(&k.default))
        }
        _ => None,
    }
}
