//! `ctxhost serve`: the gateway, in front of a model provider.

use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, ValueEnum};
use ctxhost_gateway::engine_check::EngineStatus;
use ctxhost_gateway::{Bound, ServeOptions};
use ctxhost_gateway_state::store::{default_sqlite_path, StateLocation};

use ctxhost_config::{Override, BUILT_IN_ENGINE};
use ctxhost_redacted_url::RedactedUrl;

use super::{App, GlobalArgs};

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on, HOST:PORT (port 0 picks a free one) [default: serve.listen, else
    /// 127.0.0.1:8787]
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// The provider's base URL, with its version segment [default: serve.upstream, else
    /// https://api.openai.com/v1]
    #[arg(long, value_name = "URL")]
    pub upstream: Option<String>,
    /// Use this engine instead of `context.engine` (an engine that does not start is an error,
    /// unless serve.engine_fallback says otherwise)
    #[arg(long, value_name = "NAME")]
    pub engine: Option<String>,
    /// Log format on stderr
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

/// How log lines look.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per event.
    Text,
    /// One JSON object per line.
    Json,
}

pub fn run(global: &GlobalArgs, args: &ServeArgs) -> anyhow::Result<ExitCode> {
    let overrides = [
        args.listen.clone().map(Override::Listen),
        args.upstream.clone().map(Override::Upstream),
        args.engine.clone().map(Override::Engine),
    ]
    .into_iter()
    .flatten()
    .collect();
    let app = App::with_overrides(global, overrides)?;
    let mut settings = app.config().gateway_settings();
    init_logging(args.log_format, app.verbose);
    // Said after the ready lines, which clients read first.
    let lowered = connection_room()
        .filter(|room| settings.limits.max_connections > *room)
        .map(|room| {
            (
                std::mem::replace(&mut settings.limits.max_connections, room),
                room,
            )
        });
    let state = StateLocation::parse(settings.state.as_deref(), default_sqlite_path());
    let App {
        engines, runtime, ..
    } = app;
    let options = ServeOptions {
        settings,
        state,
        verbose: global.verbose,
    };
    runtime.block_on(async move {
        let upstream = RedactedUrl::new(options.settings.upstream.clone());
        let bound = Bound::bind(engines, options).await?;
        let addr = bound
            .local_addr()
            .context("the listening socket has no address")?;
        let engine = match bound.engine() {
            EngineStatus::Configured { engine } => engine.clone(),
            EngineStatus::FellBack { configured, .. } => format!(
                "{} instead of {configured}, which cannot run (serve.engine_fallback)",
                BUILT_IN_ENGINE
            ),
        };
        eprintln!("ctxhost serve: listening on http://{addr}");
        eprintln!("  engine: {engine}; upstream: {upstream}");
        // One line per wire: how its clients are pointed here.
        for setup in ctxhost_gateway_wire::client_setups(&format!("http://{addr}")) {
            eprintln!("  {setup}");
        }
        for warning in bound.warnings() {
            tracing::warn!("{warning}");
        }
        if let EngineStatus::FellBack { configured, reason } = bound.engine() {
            tracing::warn!(
                "context engine '{configured}' cannot run: {reason}; every session runs the \
                 built-in compressor, and every response says so in x-ctxhost-engine-error"
            );
        }
        if let Some((asked, room)) = lowered {
            tracing::info!(
                "serve.limits.max_connections lowered from {asked} to {room}: this process may \
                 not open more files than that and what the gateway needs itself"
            );
        }
        bound.run(ctxhost_gateway::shutdown_signal()).await?;
        eprintln!("ctxhost serve: stopped");
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(ExitCode::SUCCESS)
}

/// Connections the process can keep open: its file-descriptor limit, first raised to the hard
/// limit (a soft limit of 1024 is common, far below what a gateway needs), less a quarter kept
/// for the store, the upstream's connections and plugins. `None` where it cannot be read.
fn connection_room() -> Option<usize> {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit and setrlimit with a valid struct, on this process.
        unsafe {
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
                return None;
            }
            if limit.rlim_cur < limit.rlim_max {
                let raised = libc::rlimit {
                    rlim_cur: limit.rlim_max,
                    rlim_max: limit.rlim_max,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                    limit.rlim_cur = limit.rlim_max;
                }
            }
        }
        let files = usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX);
        Some((files - files / 4).max(1))
    }
    #[cfg(not(unix))]
    None
}

fn init_logging(format: LogFormat, verbose: bool) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("CTXHOST_LOG").unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new(if verbose { "debug" } else { "info" })
    });
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false);
    match format {
        LogFormat::Text => builder.with_ansi(false).init(),
        LogFormat::Json => builder.json().init(),
    }
}
