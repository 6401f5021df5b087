//! `ctxhost engine <op>`: an engine's own operations (status, doctor, backup, ...), reached
//! generically through `invoke`, so every engine can offer its own without a new command.

use std::process::ExitCode;

use anyhow::{bail, Context as _};
use clap::Args;
use serde_json::Value;

use super::tools::start;
use super::{App, GlobalArgs};

#[derive(Debug, Args)]
pub struct EngineArgs {
    /// The operation, e.g. `status`, `doctor` or `backup` (what exists depends on the engine)
    pub op: String,
    /// The operation's argument, as JSON (e.g. '{"path": "backup.sqlite"}')
    #[arg(long, value_name = "JSON", default_value = "null")]
    pub args: String,
    /// Use this engine instead of `context.engine`
    #[arg(long, value_name = "NAME")]
    pub engine: Option<String>,
}

pub fn run(global: &GlobalArgs, args: &EngineArgs) -> anyhow::Result<ExitCode> {
    let payload: Value = serde_json::from_str(&args.args)
        .with_context(|| format!("--args is not JSON: {}", args.args))?;
    let app = App::new(global)?;
    let mut runner = start(&app, args.engine.as_deref())?;
    let engine = runner.engine_name().to_string();
    let answer = app.runtime.block_on(async {
        let custom = runner.invoke(&args.op, payload).await?;
        if custom.is_some() || args.op != "status" {
            return Ok::<_, String>(custom);
        }
        // Every engine has the standard status, even without a `status` operation of its own.
        let status = runner.status().await?;
        Ok(Some(
            serde_json::to_value(status).map_err(|e| e.to_string())?,
        ))
    });
    match answer.map_err(anyhow::Error::msg)? {
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
