//! `ctxhost sessions migrate --to postgres://…`: the gateway's sessions and the engine's store
//! copied from SQLite into PostgreSQL, idempotently, each read back and checked.
//!
//! The gateway's part is the host's own; the engine's store belongs to the engine, which copies
//! it one session at a time when asked with its `migrate_session` operation (so the bar moves
//! per session and a failure names the session).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context as _};
use clap::Args;
use ctxhost_core::session::SessionError;
use ctxhost_core::SessionOptions;
use ctxhost_gateway_state::store::migrate::{migrate_gateway, GatewayMigration};
use ctxhost_gateway_state::store::{
    default_replica_name, default_sqlite_path, PostgresStore, SqliteStore, StateLocation,
};
use ctxhost_pg::PostgresUrl;
use ctxhost_redacted_url::RedactedUrl;
use serde_json::{json, Value};

use super::run::progress_bar;
use super::{App, GlobalArgs};

#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// The PostgreSQL database to copy into (postgres://user:password@host:port/database)
    #[arg(long, value_name = "URL")]
    pub to: RedactedUrl,
    /// The gateway's SQLite store to copy [default: serve.state when it is a file, else the
    /// gateway's default store under $CTXHOST_HOME]
    #[arg(long, value_name = "PATH")]
    pub from: Option<PathBuf>,
    /// Use this engine instead of `context.engine` for the engine's store
    #[arg(long, value_name = "NAME")]
    pub engine: Option<String>,
    /// Print the report as JSON
    #[arg(long)]
    pub json: bool,
}

/// What the engine's part copied.
#[derive(Debug, Default, serde::Serialize)]
struct EngineMigration {
    engine: String,
    /// Sessions copied; `None` when the engine keeps none.
    sessions: Option<u64>,
    /// Each session's own answer (counts and checksum), by id.
    copied: Vec<Value>,
}

pub fn run(global: &GlobalArgs, args: &MigrateArgs) -> anyhow::Result<ExitCode> {
    let app = App::new(global)?;
    if !args.to.is_postgres() {
        bail!(
            "--to must be a PostgreSQL URL (postgres://user:password@host:port/database), not `{}`",
            args.to
        );
    }
    let source = match &args.from {
        Some(path) => path.clone(),
        None => {
            match StateLocation::parse(app.config().serve.state.as_deref(), default_sqlite_path()) {
                StateLocation::Sqlite(path) => path,
                StateLocation::Postgres(_) => default_sqlite_path(),
            }
        }
    };
    // Connected first: a database that cannot be reached is said before anything else.
    let target = app.runtime.block_on(PostgresStore::connect(
        &args.to,
        &app.config().serve.database,
        default_replica_name(),
    ))?;
    let gateway = migrate_gateway_part(&app, &source, &target)?;
    let engine = migrate_engine_part(&app, args)?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({"gateway": gateway, "engine": engine}))?
        );
        return Ok(ExitCode::SUCCESS);
    }
    let target = &args.to;
    match &gateway {
        Some(report) => {
            println!(
                "gateway: {} sessions from {} into {target}: {} added, {} replaced, {} unchanged; \
                 read back and verified (sha256 {})",
                report.sessions,
                source.display(),
                report.added,
                report.replaced,
                report.unchanged,
                &report.checksum[..16],
            );
            if !report.kept_newer.is_empty() {
                println!(
                    "gateway: kept {} sessions that went on in PostgreSQL since (newer there): {}",
                    report.kept_newer.len(),
                    report.kept_newer.join(", ")
                );
            }
        }
        None => println!(
            "gateway: no store at {} (the gateway never ran here): nothing of it to copy",
            source.display()
        ),
    }
    match engine.sessions {
        Some(sessions) => {
            let total = |field: &str| -> u64 {
                engine.copied.iter().filter_map(|c| c[field].as_u64()).sum()
            };
            println!(
                "engine '{}': {sessions} sessions into {target}: {} messages, {} summaries; \
                 read back and verified",
                engine.engine,
                total("messages"),
                total("summaries"),
            );
        }
        None => println!(
            "engine '{}': keeps no sessions between runs: nothing of it to copy",
            engine.engine
        ),
    }
    Ok(ExitCode::SUCCESS)
}

/// The gateway's sessions; `None` when there is no SQLite store to copy.
fn migrate_gateway_part(
    app: &App,
    source: &std::path::Path,
    target: &PostgresStore,
) -> anyhow::Result<Option<GatewayMigration>> {
    if !source.exists() {
        return Ok(None);
    }
    let from = app.runtime.block_on(SqliteStore::open_existing(source))?;
    let bar = progress_bar(0, "gateway", "sessions");
    let report = app
        .runtime
        .block_on(migrate_gateway(&from, target, |done, total| {
            bar.set_length(total);
            bar.set_position(done);
        }));
    bar.finish_and_clear();
    Ok(Some(report?))
}

/// The engine's store, one session at a time.
fn migrate_engine_part(app: &App, args: &MigrateArgs) -> anyhow::Result<EngineMigration> {
    let mut session = app.open_session(args.engine.as_deref(), SessionOptions::new(""))?;
    let mut report = EngineMigration {
        engine: session.engine().to_string(),
        ..EngineMigration::default()
    };
    let sessions = match app.runtime.block_on(session.list_sessions()) {
        Ok(sessions) => sessions,
        Err(SessionError::Unsupported { .. }) => return Ok(report),
        Err(error) => return Err(error.into()),
    };
    let bar = progress_bar(sessions.len() as u64, &report.engine, "sessions");
    for info in &sessions {
        // The engine connects itself: it gets the URL as written.
        let payload = json!({"to": args.to.expose(), "session": info.id});
        let copied = app
            .runtime
            .block_on(session.invoke("migrate_session".to_string(), payload));
        let copied = match copied {
            Ok(copied) => copied,
            Err(SessionError::Unsupported { .. }) => bail!(
                "engine '{}' keeps sessions but cannot copy its store into PostgreSQL (it has no \
                 `migrate_session` operation)",
                report.engine
            ),
            Err(error) => {
                return Err(error).with_context(|| format!("copying session '{}'", info.id))
            }
        };
        let mut entry = json!({"session": info.id});
        if let (Some(entry), Value::Object(counts)) = (entry.as_object_mut(), copied) {
            entry.extend(counts);
        }
        report.copied.push(entry);
        bar.inc(1);
    }
    bar.finish_and_clear();
    report.sessions = Some(sessions.len() as u64);
    Ok(report)
}
