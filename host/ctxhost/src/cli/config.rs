//! `ctxhost config path|get|set|unset|validate|keys`: the config file from the command line.
//! Writes keep the user's comments, key order and unknown keys, are atomic, and are refused when
//! the result would not be a valid config (or the file already is not one). Which keys exist,
//! their defaults and docs come from the declarations (`ctxhost_config::settings`).

use std::process::ExitCode;

use anyhow::bail;
use clap::{Args, Subcommand};
use ctxhost_config::edit;
use ctxhost_config::settings::{self, DefaultValue, HOST_SETTINGS, RENAMED};
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
    /// List the host's keys with their defaults and docs (the READMEs' tables are this output)
    Keys(KeysArgs),
}

#[derive(Debug, Args)]
pub struct KeysArgs {
    /// Only the keys under these (serve, serve.limits, ...)
    pub prefixes: Vec<String>,
    /// Print the Markdown table the READMEs hold
    #[arg(long)]
    pub markdown: bool,
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
        ConfigCommand::Keys(args) => keys(args),
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
    let (value, default) = match edit::get(text, &args.key)?.or(older_name_set(text, &args.key)?) {
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
    if !settings::sections().contains(&section) && !args.force {
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
    // Loading refused a mistyped section; another program's section in the shared file is
    // only noted.
    for section in super::sections::unknown(app.config()) {
        eprintln!(
            "note: top-level section `{}:` is not read by ctxhost",
            section.name
        );
    }
    for renamed in RENAMED {
        if edit::get(app.config().text(), renamed.old)?.is_some() {
            eprintln!(
                "note: `{}` is the older name of `{}`, still read; rename it ({})",
                renamed.old, renamed.new, renamed.why
            );
        }
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

/// `config keys`: the declared keys, as a list or as the READMEs' table.
fn keys(args: &KeysArgs) -> anyhow::Result<ExitCode> {
    let prefixes: Vec<&str> = args.prefixes.iter().map(String::as_str).collect();
    let selected = settings::selected(&prefixes);
    if selected.is_empty() {
        bail!(
            "no host key is under {}; `ctxhost config keys` lists them all",
            prefixes.join(", ")
        );
    }
    if args.markdown {
        print!("{}", settings::markdown_table(&prefixes));
        return Ok(ExitCode::SUCCESS);
    }
    for (key, setting) in selected {
        match setting.default {
            DefaultValue::Value(value) | DefaultValue::Implied(value) => {
                println!("{key} = {value}  # {}", setting.doc)
            }
            DefaultValue::Described(text) => println!("{key} = ({text})  # {}", setting.doc),
            DefaultValue::Unset => println!("{key}  # {}", setting.doc),
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The value of `key` written under its older name, when the file uses that.
fn older_name_set(text: &str, key: &str) -> anyhow::Result<Option<Value>> {
    for renamed in RENAMED {
        if let Some(rest) = key.strip_prefix(renamed.new) {
            if rest.is_empty() || rest.starts_with('.') {
                return Ok(edit::get(text, &format!("{}{rest}", renamed.old))?);
            }
        }
    }
    Ok(None)
}

/// `key` under its current name, when it is written under an older one.
fn current_name(key: &str) -> String {
    for renamed in RENAMED {
        if let Some(rest) = key.strip_prefix(renamed.old) {
            if rest.is_empty() || rest.starts_with('.') {
                return format!("{}{rest}", renamed.new);
            }
        }
    }
    key.to_string()
}

/// Every key ctxhost declares, outside plugin sections: the host's and the compressor's.
fn known_keys() -> Vec<String> {
    let mut keys: Vec<String> = HOST_SETTINGS.iter().map(|s| s.key.to_string()).collect();
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
    let key = &current_name(key);
    if let Some(setting) = settings::find(key) {
        return setting.default.value().map(edit::parse_value);
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
