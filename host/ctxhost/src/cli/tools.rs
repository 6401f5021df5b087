//! `ctxhost tools`: the active engine's own tools (e.g. the lossless engine's `lcm_grep`),
//! listed or called from the shell against a session's state.

use std::process::ExitCode;

use anyhow::{bail, Context as _};
use clap::{Args, Subcommand};
use ctxhost_core::session::SessionError;
use ctxhost_core::SessionOptions;
use serde_json::Value;

use super::{App, GlobalArgs, SessionArg};

#[derive(Debug, Subcommand)]
pub enum ToolsCommand {
    /// List the tools the engine gives the agent
    List(ListArgs),
    /// Call one of the engine's tools and print its answer
    Call(CallArgs),
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Use this engine instead of `context.engine` (an engine that does not resolve is an
    /// error)
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
    #[command(flatten)]
    pub session: SessionArg,
    /// Use this engine instead of `context.engine` (an engine that does not resolve is an
    /// error)
    #[arg(long, value_name = "NAME")]
    pub engine: Option<String>,
}

pub fn run(global: &GlobalArgs, command: &ToolsCommand) -> anyhow::Result<ExitCode> {
    match command {
        ToolsCommand::List(args) => list(global, args),
        ToolsCommand::Call(args) => call(global, args),
    }
}

fn list(global: &GlobalArgs, args: &ListArgs) -> anyhow::Result<ExitCode> {
    let app = App::new(global)?;
    let mut session = app.open_session(args.engine.as_deref(), SessionOptions::new(""))?;
    let schemas = app.runtime.block_on(session.tool_schemas())?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&schemas)?);
        return Ok(ExitCode::SUCCESS);
    }
    if schemas.is_empty() {
        println!("engine '{}' has no tools", session.engine());
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
    let id = args.session.session.clone();
    let mut session = app.open_session(args.engine.as_deref(), SessionOptions::new(&id))?;
    let engine = session.engine().to_string();
    let schemas = app.runtime.block_on(session.tool_schemas())?;
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
    let answer = app.runtime.block_on(async {
        // A tool reads a session's state: asking about one the engine never saw is a mistake
        // to report, not an empty answer.
        match session.session_info(id.clone()).await {
            Ok(Some(_)) | Err(SessionError::Unsupported { .. }) => {}
            Ok(None) => {
                let known = session
                    .list_sessions()
                    .await
                    .unwrap_or_default()
                    .into_iter()
                    .map(|s| s.id)
                    .collect::<Vec<_>>();
                let hint = if known.is_empty() {
                    "it holds none yet; `ctxhost run --keep` or `ctxhost compress` fill one"
                        .to_string()
                } else {
                    format!("its sessions: {}", known.join(", "))
                };
                bail!(
                    "engine '{engine}' has no session '{id}' ({hint}); see `ctxhost sessions list`"
                );
            }
            Err(error) => return Err(error.into()),
        }
        session.begin().await?;
        Ok(session.call_tool(args.name.clone(), arguments).await?)
    });
    let answer = answer?;
    match serde_json::from_str::<Value>(&answer) {
        Ok(value) => println!("{}", serde_json::to_string_pretty(&value)?),
        Err(_) => println!("{answer}"),
    }
    Ok(ExitCode::SUCCESS)
}
