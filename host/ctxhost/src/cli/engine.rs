//! `ctxhost engine <op>`: an engine's own operations (status, doctor, backup, ...), reached
//! generically through `invoke`, so every engine can offer its own without a new command.

use std::process::ExitCode;

use anyhow::{bail, Context as _};
use clap::Args;
use serde_json::Value;

use ctxhost_core::session::SessionError;
use ctxhost_core::SessionOptions;

use ctxhost_gateway_state::store::{default_sqlite_path, StateLocation, StoreHealth};

use super::{App, GlobalArgs};

/// How the gateway's session store (`serve.state`) is doing: reachable, and its tables' version.
fn gateway_store_health(app: &App) -> StoreHealth {
    let location = StateLocation::parse(app.config().serve.state.as_deref(), default_sqlite_path());
    let backend = location.backend();
    if let StateLocation::Sqlite(path) = &location {
        if !path.exists() {
            return StoreHealth {
                backend,
                ok: true,
                schema_version: None,
                problem: None,
            };
        }
    }
    let database = &app.config().serve.database;
    app.runtime.block_on(async {
        match location.open(database, "ctxhost engine doctor").await {
            Ok(opened) => opened.store.health().await,
            Err(error) => StoreHealth::unreachable(backend, error.to_string()),
        }
    })
}

#[derive(Debug, Args)]
pub struct EngineArgs {
    /// The operation, e.g. `status`, `doctor` or `backup` (what exists depends on the engine)
    pub op: String,
    /// The operation's argument, as JSON (e.g. '{"path": "backup.sqlite"}')
    #[arg(long, value_name = "JSON", default_value = "null")]
    pub args: String,
    /// Use this engine instead of `context.engine` (an engine that does not resolve is an
    /// error)
    #[arg(long, value_name = "NAME")]
    pub engine: Option<String>,
    /// Run the operation within this session (the engine is told the session began first)
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
}

pub fn run(global: &GlobalArgs, args: &EngineArgs) -> anyhow::Result<ExitCode> {
    let payload: Value = serde_json::from_str(&args.args)
        .with_context(|| format!("--args is not JSON: {}", args.args))?;
    let app = App::new(global)?;
    let id = args.session.clone().unwrap_or_default();
    let mut session = app.open_session(args.engine.as_deref(), SessionOptions::new(&id))?;
    let engine = session.engine().to_string();
    let answer = app.runtime.block_on(async {
        if args.session.is_some() {
            session.begin().await?;
        }
        match session.invoke(args.op.clone(), payload).await {
            Ok(value) => Ok(Some(value)),
            Err(SessionError::Unsupported { .. }) if args.op == "status" => {
                // Every engine has the standard status, even without an operation of its own.
                let status = session.status().await?;
                Ok(Some(serde_json::to_value(status).unwrap_or(Value::Null)))
            }
            Err(SessionError::Unsupported { .. }) => Ok(None),
            Err(error) => Err(error),
        }
    });
    let mut answer = answer?;
    if args.op == "doctor" {
        // The gateway's own store is checked beside the engine's.
        let store = gateway_store_health(&app);
        let answer = answer.get_or_insert_with(|| {
            serde_json::json!({"ok": true, "engine": format!("engine '{engine}' has no doctor of its own")})
        });
        if !store.ok {
            answer["ok"] = Value::Bool(false);
        }
        answer["gateway_store"] = serde_json::to_value(&store)?;
    }
    match answer {
        Some(value) => {
            println!("{}", serde_json::to_string_pretty(&value)?);
            // A doctor that found problems says so in its exit code.
            if args.op == "doctor" && value.get("ok") == Some(&Value::Bool(false)) {
                return Ok(ExitCode::from(1));
            }
            Ok(ExitCode::SUCCESS)
        }
        None => bail!("engine '{engine}' has no operation '{}'", args.op),
    }
}
