//! `ctxhost sessions`: what an engine keeps for each session, shown and deleted by id.

use std::process::ExitCode;

use anyhow::bail;
use clap::{Args, Subcommand};
use ctxhost_core::session::SessionError;
use ctxhost_core::{Session, SessionOptions};
use ctxhost_sdk::SessionInfo;

use super::gateway_sessions;
use super::report::thousands;
use super::{App, GlobalArgs};

#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// List the sessions the engine keeps state for
    List(ListArgs),
    /// Show what the engine holds for one session
    Show(IdArgs),
    /// Delete everything the engine holds for one session
    Delete(IdArgs),
    /// Copy the gateway's sessions and the engine's store from SQLite into PostgreSQL (safe to
    /// run again: what is there already is left alone)
    Migrate(super::migrate::MigrateArgs),
}

#[derive(Debug, Args)]
pub struct EngineArg {
    /// Use this engine instead of `context.engine` (an engine that does not resolve is an
    /// error)
    #[arg(long, value_name = "NAME")]
    pub engine: Option<String>,
    /// Print JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub engine: EngineArg,
}

#[derive(Debug, Args)]
pub struct IdArgs {
    /// The session's id
    pub id: String,
    #[command(flatten)]
    pub engine: EngineArg,
}

pub fn run(global: &GlobalArgs, command: &SessionsCommand) -> anyhow::Result<ExitCode> {
    let engine = match command {
        SessionsCommand::List(args) => &args.engine,
        SessionsCommand::Show(args) | SessionsCommand::Delete(args) => &args.engine,
        SessionsCommand::Migrate(args) => return super::migrate::run(global, args),
    };
    let app = App::new(global)?;
    let mut session = app.open_session(engine.engine.as_deref(), SessionOptions::new(""))?;
    let name = session.engine().to_string();
    // What the gateway served under that id, beside what the engine keeps.
    let gateway = match command {
        SessionsCommand::Show(args) => gateway_of(&app, &args.id),
        _ => Vec::new(),
    };
    let answer = app.runtime.block_on(answer(&mut session, command));
    let answer = match answer {
        Err(SessionError::Unsupported { .. }) if !gateway.is_empty() => Answer::Show(None),
        Err(SessionError::Unsupported { .. }) => {
            if engine.json {
                println!("[]");
            } else {
                println!("engine '{name}' keeps no state between runs: it has no sessions");
            }
            // Nothing to show or delete is only an error when an id was named.
            return Ok(match command {
                SessionsCommand::List(_) => ExitCode::SUCCESS,
                _ => ExitCode::from(1),
            });
        }
        other => other?,
    };
    match (command, answer) {
        (SessionsCommand::List(_), Answer::List(sessions)) => {
            if engine.json {
                println!("{}", serde_json::to_string_pretty(&sessions)?);
            } else if sessions.is_empty() {
                println!("engine '{name}' holds no sessions");
            } else {
                println!(
                    "{:<32} {:>9} {:>14}  updated",
                    "session", "messages", "context"
                );
                for info in &sessions {
                    print_row(info);
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        (SessionsCommand::Show(args), Answer::Show(info)) => {
            if info.is_none() && gateway.is_empty() {
                bail!(
                    "engine '{name}' has no session '{}'; see `ctxhost sessions list`",
                    args.id
                );
            }
            if engine.json {
                let mut shown = match &info {
                    Some(info) => serde_json::to_value(info)?,
                    None => serde_json::json!({"id": args.id}),
                };
                if !gateway.is_empty() {
                    shown["gateway"] = gateway.iter().map(gateway_sessions::to_json).collect();
                }
                println!("{}", serde_json::to_string_pretty(&shown)?);
            } else {
                match &info {
                    Some(info) => {
                        print_row(info);
                        if !info.details.is_null() {
                            println!("{}", serde_json::to_string_pretty(&info.details)?);
                        }
                    }
                    None => println!("engine '{name}' keeps nothing for '{}'", args.id),
                }
                for record in &gateway {
                    gateway_sessions::print(record);
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        (SessionsCommand::Delete(args), Answer::Deleted(deleted)) => {
            if !deleted {
                bail!(
                    "engine '{name}' has no session '{}'; see `ctxhost sessions list`",
                    args.id
                );
            }
            eprintln!("deleted session '{}' of engine '{name}'", args.id);
            Ok(ExitCode::SUCCESS)
        }
        _ => unreachable!("each command gets its own answer"),
    }
}

enum Answer {
    List(Vec<SessionInfo>),
    Show(Option<SessionInfo>),
    Deleted(bool),
}

async fn answer(session: &mut Session, command: &SessionsCommand) -> Result<Answer, SessionError> {
    Ok(match command {
        SessionsCommand::List(_) => Answer::List(session.list_sessions().await?),
        SessionsCommand::Show(args) => Answer::Show(session.session_info(args.id.clone()).await?),
        SessionsCommand::Delete(args) => {
            Answer::Deleted(session.delete_session(args.id.clone()).await?)
        }
        SessionsCommand::Migrate(_) => unreachable!("migrate runs on its own (see `run`)"),
    })
}

/// The gateway's sessions under `id`; a state that cannot be read is said, and shows none.
fn gateway_of(app: &App, id: &str) -> Vec<ctxhost_gateway_state::record::SessionRecord> {
    gateway_sessions::named(app, id).unwrap_or_else(|error| {
        eprintln!("warning: the gateway's sessions could not be read ({error:#}): showing the engine's only");
        Vec::new()
    })
}

fn print_row(info: &SessionInfo) {
    let context = info
        .context_tokens
        .map(|t| format!("{} tokens", thousands(t)))
        .unwrap_or_else(|| "-".to_string());
    println!(
        "{:<32} {:>9} {:>14}  {}",
        info.id,
        thousands(info.messages),
        context,
        info.updated.as_deref().unwrap_or("-")
    );
}
