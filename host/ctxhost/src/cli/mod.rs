//! The `ctxhost` command line: argument definitions and the shared setup every command uses.

pub mod compress;
pub mod config;
pub mod engine;
pub mod engine_child;
mod gateway_sessions;
pub mod migrate;
pub mod output;
mod oversized;
pub mod plot;
pub mod plugins;
pub mod quality;
pub mod quality_plot;
pub mod report;
pub mod run;
mod sections;
pub mod serve;
pub mod sessions;
pub mod tokens;
pub mod tools;
pub mod trust;

use std::path::PathBuf;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};
use ctxhost_config::project::{self, Origin, Standing};
use ctxhost_config::Config;
use ctxhost_config::{home, Override};
use ctxhost_core::engines::Warning;
use ctxhost_core::{Engines, Session, SessionOptions};

/// Host for pluggable LLM context engines: run the built-in compressor or a native plugin
/// engine, chosen by `context.engine` in config.yaml.
#[derive(Debug, Parser)]
#[command(
    name = "ctxhost",
    version,
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Config file [default: ./config.yaml, else $CTXHOST_HOME/config.yaml, else built-in
    /// defaults]
    #[arg(long, short = 'c', global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Show engine log lines and full loader errors
    #[arg(long, short = 'v', global = true)]
    pub verbose: bool,
    /// The executable that runs this command again, for child processes (not an argument:
    /// see [`crate::main_with_args`]); `None`, the running executable.
    #[arg(skip)]
    pub program: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Replay a recorded session through an engine, as an agent loop would, and report what
    /// it did
    Run(run::RunArgs),
    /// Compress a recorded conversation once and print the result as JSON
    Compress(compress::CompressArgs),
    /// What the model still knows after compaction: plant typed facts in a session, compact
    /// it round after round through an engine at a fixed budget, and score what survives
    Quality(quality::QualityArgs),
    /// Count a transcript's tokens by role and show the heaviest messages
    Tokens(tokens::TokensArgs),
    /// The active engine's tools: list them, or call one against a session's state
    #[command(subcommand)]
    Tools(tools::ToolsCommand),
    /// List the engines resolution can see (same as `plugins list`)
    Engines(plugins::ListArgs),
    /// Run one of the engine's own operations (status, doctor, backup, ...) and print its JSON
    Engine(engine::EngineArgs),
    /// Manage context engine plugins: list, install, select, check and pin them. Without a
    /// subcommand, in a terminal: pick the context engine from a list
    Plugins(plugins::PluginsArgs),
    /// The sessions an engine keeps state for: list them, show one, delete one
    #[command(subcommand)]
    Sessions(sessions::SessionsCommand),
    /// Read and change config.yaml (comments and unknown keys are kept)
    #[command(subcommand)]
    Config(config::ConfigCommand),
    /// Run the gateway: agents point their base URL here, and every session's context is kept
    /// under the window by the configured engine
    Serve(serve::ServeArgs),
    /// Trust the project config in this directory (./config.yaml): its plugins and the
    /// credentials it names are used until it changes. `--revoke` takes the trust back
    Trust(trust::TrustArgs),
    /// The process an isolated engine runs in (started by the host)
    #[command(name = "__engine-child", hide = true)]
    EngineChild(engine_child::EngineChildArgs),
}

/// What every command needs: the config, the engines it can build, and the runtime that
/// serves them (engines run on its blocking pool; LLM summarizers on its workers).
pub struct App {
    pub engines: Engines,
    /// The config file commands that change the configuration write to (it may not exist yet).
    pub config_path: PathBuf,
    pub verbose: bool,
    pub runtime: tokio::runtime::Runtime,
}

impl App {
    pub fn new(global: &GlobalArgs) -> anyhow::Result<Self> {
        Self::build(global, false, Vec::new())
    }

    /// With the command's own flags that stand for config keys settled into the config before
    /// any engine exists.
    pub fn with_overrides(global: &GlobalArgs, overrides: Vec<Override>) -> anyhow::Result<Self> {
        Self::build(global, false, overrides)
    }

    /// For commands that write the config: a config file that does not exist yet reads as
    /// empty (the first write creates it).
    pub fn for_edit(global: &GlobalArgs) -> anyhow::Result<Self> {
        Self::build(global, true, Vec::new())
    }

    fn build(
        global: &GlobalArgs,
        missing_ok: bool,
        overrides: Vec<Override>,
    ) -> anyhow::Result<Self> {
        let home = home::home_dir();
        let (config_path, origin) = config_path(global, &home);
        let mut config = if config_path.is_file() || (global.config.is_some() && !missing_ok) {
            Config::load(&config_path)?
        } else if missing_ok {
            Config::parse("", Some(config_path.clone()))?
        } else {
            Config::defaults()
        };
        // Writing commands may be what fixes it.
        if !missing_ok {
            sections::refuse_mistyped(&config)?;
        }
        let origin = if config.source.is_none() {
            Origin::Defaults
        } else {
            origin
        };
        if let Standing::Untrusted(why) = project::standing(&config_path, origin, &home) {
            let ignored = config.distrust_project(why);
            if !ignored.is_empty() {
                eprintln!(
                    "warning: {}; until then its plugins do not load and {} {} not used",
                    project::how_to_trust(&config_path, why),
                    ignored
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", "),
                    if ignored.len() == 1 { "is" } else { "are" }
                );
            }
        }
        let config = config.settle(overrides)?;
        let runtime = runtime()?;
        let mut engines =
            Engines::for_config(config, home, runtime.handle().clone(), global.verbose)?;
        // Plugin code the host only asks something of (a manifest, its settings) runs in a
        // child of this very command.
        if let Some(program) = global
            .program
            .clone()
            .or_else(|| std::env::current_exe().ok())
        {
            engines.set_child_program(program);
        }
        Ok(App {
            engines,
            config_path,
            verbose: global.verbose,
            runtime,
        })
    }

    pub fn config(&self) -> &Config {
        self.engines.config()
    }

    /// Gets the tokenizer ready on another thread while the command reads its input (every
    /// engine command counts tokens).
    pub fn warm_tokenizer(&self) {
        let services = self.engines.services().clone();
        std::thread::spawn(move || services.tokens().warm());
    }

    /// Opens a session on `engine` (`--engine`, strict: that engine or an error) or on
    /// `context.engine` (falls back to the compressor with a warning), printing warnings.
    pub fn open_session(
        &self,
        engine: Option<&str>,
        options: SessionOptions,
    ) -> anyhow::Result<Session> {
        let (name, options) = match engine {
            Some(name) => (name.to_string(), options.strict()),
            None => (self.config().context.engine.clone(), options),
        };
        let session = self.engines.open_session(&name, options)?;
        for warning in session.warnings() {
            self.warn(warning);
        }
        Ok(session)
    }

    /// Prints a resolution warning: one line, and the loader's full text with `--verbose`.
    pub fn warn(&self, warning: &Warning) {
        eprintln!("warning: {}", warning.summary);
        if self.verbose {
            if let Some(detail) = &warning.detail {
                eprintln!("{detail}");
            }
        }
    }
}

/// The config file commands use, and where it comes from: `--config FILE`, else
/// `./config.yaml` (a project's), else the home's (which may not exist yet).
pub fn config_path(global: &GlobalArgs, home: &std::path::Path) -> (PathBuf, Origin) {
    if let Some(path) = &global.config {
        return (path.clone(), Origin::Named);
    }
    match home::default_config_path(home) {
        Some(path) if project::key(&path).parent() == Some(&project::key(home)) => {
            (path, Origin::Home)
        }
        Some(path) => (path, Origin::Project),
        None => (home.join(home::CONFIG_FILE), Origin::Home),
    }
}

/// A tokio runtime for the commands that run engines (engines run on its blocking pool).
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// The session every command that touches engine state uses without `--session` (`ctxhost run`
/// replays on a fresh temporary state instead, unless told to keep it).
pub const DEFAULT_SESSION: &str = "default";

/// `--session`, shared by the commands that touch engine state.
#[derive(Debug, Args)]
pub struct SessionArg {
    /// The session whose engine state the command reads and changes
    #[arg(long, value_name = "ID", default_value = DEFAULT_SESSION)]
    pub session: String,
}
