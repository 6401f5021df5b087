//! `ctxhost tools`: the active engine's own tools (e.g. the lossless engine's `lcm_grep`),
//! listed or called from the shell against a session's state.

use std::process::ExitCode;

use anyhow::{bail, Context as _};
use clap::{Args, Subcommand};
use ctxhost::engines::EngineSource;
use ctxhost::Runner;
use ctxhost_sdk::SessionStart;
use serde_json::Value;

use super::{App, GlobalArgs};

#[derive(Debug, Subcommand)]
pub enum ToolsCommand {
    /// List the tools the engine gives the agent
    List(ListArgs),
    /// Call one of the engine's tools and print its answer
    Call(CallArgs),
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Use this engine instead of `context.engine`
    #[arg(long, value_name = "NAME")]
    pub engine: Option<String>,
    /// Print the full JSON schemas
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CallArgs {
    /// The tool's name
    pub name: String,
    /// The tool's arguments, as a JSON object
    #[arg(long, value_name = "JSON", default_value = "{}")]
    pub args: String,
    /// The session whose state the tool reads
    #[arg(long, value_name = "ID", default_value = "default")]
    pub session: String,
    /// Use this engine instead of `context.engine`
    #[arg(long, value_name = "NAME")]
    pub engine: Option<String>,
}

pub fn run(global: &GlobalArgs, command: &ToolsCommand) -> anyhow::Result<ExitCode> {
    match command {
        ToolsCommand::List(args) => list(global, args),
        ToolsCommand::Call(args) => call(global, args),
    }
}

/// Resolves the engine a command runs against, printing any resolution warning.
pub fn start(app: &App, engine: Option<&str>) -> anyhow::Result<Runner> {
    let name = engine.map_or_else(|| app.config().context.engine.clone(), str::to_string);
    let resolved = app.engines.resolve(&name)?;
    for warning in &resolved.warnings {
        app.warn(warning);
    }
    let standby = match resolved.source {
        EngineSource::BuiltIn => None,
        _ => Some(app.engines.compressor()?),
    };
    Ok(Runner::new(&resolved.name, resolved.engine, standby))
}

fn list(global: &GlobalArgs, args: &ListArgs) -> anyhow::Result<ExitCode> {
    let app = App::new(global)?;
    let mut runner = start(&app, args.engine.as_deref())?;
    let schemas = app
        .runtime
        .block_on(runner.tool_schemas())
        .map_err(anyhow::Error::msg)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&schemas)?);
        return Ok(ExitCode::SUCCESS);
    }
    if schemas.is_empty() {
        println!("engine '{}' has no tools", runner.engine_name());
        return Ok(ExitCode::SUCCESS);
    }
    for schema in &schemas {
        let function = schema.get("function").unwrap_or(schema);
        let name = function.get("name").and_then(Value::as_str).unwrap_or("?");
        let description = function
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or("")
            .lines()
            .next()
            .unwrap_or("");
        println!("{name:<20} {description}");
    }
    Ok(ExitCode::SUCCESS)
}

fn call(global: &GlobalArgs, args: &CallArgs) -> anyhow::Result<ExitCode> {
    let arguments: Value = serde_json::from_str(&args.args)
        .with_context(|| format!("--args is not JSON: {}", args.args))?;
    if !arguments.is_object() {
        bail!("--args must be a JSON object, like '{{\"pattern\": \"error\"}}'");
    }
    let app = App::new(global)?;
    let mut runner = start(&app, args.engine.as_deref())?;
    let engine = runner.engine_name().to_string();
    let schemas = app
        .runtime
        .block_on(runner.tool_schemas())
        .map_err(anyhow::Error::msg)?;
    let names: Vec<&str> = schemas
        .iter()
        .filter_map(|s| {
            s.get("function")
                .unwrap_or(s)
                .get("name")
                .and_then(Value::as_str)
        })
        .collect();
    if !names.contains(&args.name.as_str()) {
        let known = if names.is_empty() {
            "it has none".to_string()
        } else {
            format!("its tools: {}", names.join(", "))
        };
        bail!("engine '{engine}' has no tool '{}' ({known})", args.name);
    }
    let session = SessionStart {
        session_id: args.session.clone(),
        model: Some(app.config().model.name.clone()),
        context_length: Some(app.config().model.context_length),
    };
    let answer = app.runtime.block_on(async {
        runner.on_session_start(session).await?;
        runner.handle_tool_call(args.name.clone(), arguments).await
    });
    let answer = answer.map_err(anyhow::Error::msg)?;
    match serde_json::from_str::<Value>(&answer) {
        Ok(value) => println!("{}", serde_json::to_string_pretty(&value)?),
        Err(_) => println!("{answer}"),
    }
    Ok(ExitCode::SUCCESS)
}
