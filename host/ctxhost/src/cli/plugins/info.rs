//! `ctxhost plugins info NAME`: everything about one engine.

use std::process::ExitCode;

use anyhow::bail;
use clap::Args;
use ctxhost_config::BUILT_IN_ENGINE;
use ctxhost_core::engines::State;
use ctxhost_core::SessionOptions;
use ctxhost_plugins::trust::{short, Approval};
use ctxhost_sdk::ConfigKey;
use serde::Serialize;
use serde_json::Value;

use crate::cli::{App, GlobalArgs};

#[derive(Debug, Args)]
pub struct InfoArgs {
    /// The engine: `compressor` or a plugin's name
    pub name: String,
    /// Print JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Serialize)]
struct Info {
    name: String,
    version: Option<String>,
    api_level: Option<u32>,
    host_api_level: u32,
    description: String,
    source: String,
    state: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    problem: Option<String>,
    directory: Option<String>,
    library: Option<String>,
    sha256: Option<String>,
    approval: String,
    capabilities: Vec<String>,
    config_section: String,
    config_keys: Vec<Setting>,
    tools: Vec<Tool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools_error: Option<String>,
}

#[derive(Debug, Serialize)]
struct Setting {
    key: String,
    default: String,
    /// What config.yaml sets, when it sets it.
    value: Option<Value>,
    help: String,
}

#[derive(Debug, Serialize)]
struct Tool {
    name: String,
    description: String,
}

pub fn run(global: &GlobalArgs, args: &InfoArgs) -> anyhow::Result<ExitCode> {
    let app = App::new(global)?;
    let info = if args.name == BUILT_IN_ENGINE {
        built_in(&app)
    } else {
        plugin(&app, &args.name)?
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&info)?);
    } else {
        print!("{}", render(&info));
    }
    Ok(ExitCode::SUCCESS)
}

fn built_in(app: &App) -> Info {
    let section = &app.config().compression;
    let defaults = ctxhost_compressor::Settings::config_keys();
    Info {
        name: BUILT_IN_ENGINE.to_string(),
        version: Some(env!("CARGO_PKG_VERSION").to_string()),
        api_level: Some(ctxhost_sdk::API_LEVEL),
        host_api_level: ctxhost_sdk::API_LEVEL,
        description: "Built-in lossy compressor: prunes old tool output and summarizes the middle of the conversation.".to_string(),
        source: "built-in".to_string(),
        state: if app.config().context.engine == BUILT_IN_ENGINE { "active" } else { "enabled" }.to_string(),
        problem: None,
        directory: None,
        library: None,
        sha256: None,
        approval: "built in".to_string(),
        capabilities: Vec::new(),
        config_section: "compression".to_string(),
        config_keys: settings(&defaults, section),
        tools: Vec::new(),
        tools_error: None,
    }
}

fn plugin(app: &App, name: &str) -> anyhow::Result<Info> {
    let Some(inspection) = app.engines.inspect_plugin(name, true) else {
        bail!(
            "no engine '{name}' (looked in {}){}; see `ctxhost plugins list`",
            app.engines.looked_in(name),
            ctxhost_core::suggest::did_you_mean(app.engines.closest_engine(name).as_deref())
        );
    };
    let manifest = inspection.loaded.as_ref().ok().cloned();
    let section = app.config().engine_section(name);
    let (tools, tools_error) = match &inspection.loaded {
        Ok(_) => match tools_of(app, name) {
            Ok(schemas) => (schemas.iter().map(tool).collect(), None),
            Err(error) => (Vec::new(), Some(error)),
        },
        Err(_) => (Vec::new(), None),
    };
    let approval = match &inspection.approval {
        Some(Approval::Approved) => "approved (this build)".to_string(),
        Some(Approval::Project) => "not needed (the project's own plugin)".to_string(),
        Some(Approval::UntrustedProject) => {
            "the project is not trusted: `ctxhost trust` trusts it".to_string()
        }
        Some(Approval::Stale) => format!(
            "approved by an older ctxhost (the library only): `ctxhost plugins enable {name}` re-approves"
        ),
        Some(Approval::NotApproved) => {
            format!("not approved: `ctxhost plugins enable {name}` approves this build")
        }
        Some(Approval::Changed { approved, .. }) => format!(
            "the approved build ({}…) is not this one: `ctxhost plugins enable {name}` re-approves",
            short(approved)
        ),
        Some(Approval::Disabled) => "disabled".to_string(),
        None => "-".to_string(),
    };
    Ok(Info {
        name: name.to_string(),
        version: inspection.version(),
        api_level: manifest.as_ref().map(|m| m.api_level),
        host_api_level: ctxhost_sdk::API_LEVEL,
        description: inspection.description(),
        source: inspection.candidate.root.label().to_string(),
        state: State::of(
            app.config().context.engine == name,
            inspection.loaded.as_ref().err().map(|p| p.kind),
        )
        .label()
        .to_string(),
        problem: inspection.loaded.as_ref().err().map(|p| p.summary.clone()),
        directory: Some(inspection.candidate.dir.display().to_string()),
        library: inspection.library.as_ref().map(|p| p.display().to_string()),
        sha256: inspection.checksum.clone(),
        approval,
        capabilities: manifest
            .as_ref()
            .map(|m| m.capabilities.clone())
            .unwrap_or_default(),
        config_section: format!("plugins.{name}"),
        config_keys: manifest
            .as_ref()
            .map(|m| settings(&m.config_keys, &section))
            .unwrap_or_default(),
        tools,
        tools_error,
    })
}

/// The engine's tool schemas, asked of it in a child process on a temporary state.
fn tools_of(app: &App, name: &str) -> Result<Vec<Value>, String> {
    let options = SessionOptions::new("ctxhost-info")
        .temporary()
        .strict()
        .isolated();
    let mut session = app
        .engines
        .open_session(name, options)
        .map_err(|error| error.to_string())?;
    app.runtime
        .block_on(session.tool_schemas())
        .map_err(|error| error.to_string())
}

/// Declared keys with what the config sets, then keys the config sets that nothing declares.
fn settings(declared: &[ConfigKey], section: &Value) -> Vec<Setting> {
    let mut rows: Vec<Setting> = declared
        .iter()
        .map(|key| Setting {
            key: key.key.clone(),
            default: key.default.clone(),
            value: section.get(&key.key).cloned(),
            help: key.help.clone(),
        })
        .collect();
    if let Some(map) = section.as_object() {
        for (key, value) in map {
            if !declared.iter().any(|d| &d.key == key) {
                rows.push(Setting {
                    key: key.clone(),
                    default: String::new(),
                    value: Some(value.clone()),
                    help: "(not declared by the engine)".to_string(),
                });
            }
        }
    }
    rows
}

fn tool(schema: &Value) -> Tool {
    // OpenAI function schemas, bare or wrapped in {"type": "function", "function": {...}}.
    let function = schema.get("function").unwrap_or(schema);
    let text = |key: &str| {
        function
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    Tool {
        name: text("name"),
        description: text("description"),
    }
}

fn render(info: &Info) -> String {
    let mut out = String::new();
    let dash = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".to_string());
    let mut field = |label: &str, value: String| {
        out.push_str(&format!("{label:<13}{value}\n"));
    };
    field("name", info.name.clone());
    field("version", dash(&info.version));
    field(
        "interface",
        format!(
            "{} (this host: {})",
            info.api_level
                .map_or_else(|| "-".to_string(), |l| l.to_string()),
            info.host_api_level
        ),
    );
    field("description", info.description.clone());
    field("source", info.source.clone());
    field("state", info.state.clone());
    if let Some(problem) = &info.problem {
        field("problem", problem.clone());
    }
    field("directory", dash(&info.directory));
    field("library", dash(&info.library));
    field("sha256", dash(&info.sha256));
    field("approval", info.approval.clone());
    if !info.capabilities.is_empty() {
        field("capabilities", info.capabilities.join(", "));
    }
    out.push_str(&format!("\nconfig keys ({}.*):\n", info.config_section));
    if info.config_keys.is_empty() {
        out.push_str("  (none declared)\n");
    }
    let width = info
        .config_keys
        .iter()
        .map(|k| k.key.len())
        .max()
        .unwrap_or(0);
    for key in &info.config_keys {
        let current = match &key.value {
            Some(value) => format!("{} (set)", compact(value)),
            None => format!("{} (default)", key.default),
        };
        out.push_str(&format!(
            "  {:<width$}  {current:<18}  {}\n",
            key.key, key.help
        ));
    }
    out.push_str("\ntools:\n");
    if let Some(error) = &info.tools_error {
        out.push_str(&format!("  (could not start the engine to ask: {error})\n"));
    } else if info.tools.is_empty() {
        out.push_str("  (none)\n");
    }
    let width = info.tools.iter().map(|t| t.name.len()).max().unwrap_or(0);
    for tool in &info.tools {
        let first_line = tool.description.lines().next().unwrap_or_default();
        out.push_str(&format!("  {:<width$}  {first_line}\n", tool.name));
    }
    out
}

fn compact(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
