//! The `ctxhost` command line: argument definitions and the shared setup every command uses.

pub mod compress;
pub mod config;
pub mod engine;
pub mod picker;
pub mod plugins;
pub mod run;
pub mod tokens;
pub mod tools;

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};
use ctxhost::engines::Warning;
use ctxhost::services::{HostServicesImpl, LogSink};
use ctxhost::{home, Config, Engines};

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
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Replay a recorded session through an engine, as an agent loop would, and report what
    /// it did
    Run(run::RunArgs),
    /// Compress a recorded conversation once and print the result as JSON
    Compress(compress::CompressArgs),
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
    /// Read and change config.yaml (comments and unknown keys are kept)
    #[command(subcommand)]
    Config(config::ConfigCommand),
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
        Self::build(global, false)
    }

    /// For commands that write the config: a config file that does not exist yet reads as
    /// empty (the first write creates it).
    pub fn for_edit(global: &GlobalArgs) -> anyhow::Result<Self> {
        Self::build(global, true)
    }

    fn build(global: &GlobalArgs, missing_ok: bool) -> anyhow::Result<Self> {
        let home = home::home_dir();
        let config_path = global
            .config
            .clone()
            .or_else(|| home::default_config_path(&home))
            .unwrap_or_else(|| home.join(home::CONFIG_FILE));
        let config = if config_path.is_file() || (global.config.is_some() && !missing_ok) {
            Config::load(&config_path)?
        } else if missing_ok {
            Config::parse("", Some(config_path.clone()))?
        } else {
            Config::defaults()
        };
        let runtime = runtime()?;
        let summarizer = ctxhost_summarizer::build(&config.summarizer, runtime.handle().clone())
            .map_err(|error| config.locate_message(&error.to_string()))?;
        let tokens = config.token_counter();
        let services = Arc::new(
            HostServicesImpl::new(tokens, LogSink::stderr(global.verbose), Some(summarizer))
                .with_summarizer_cooldown(config.summarizer.cooldown()),
        );
        Ok(App {
            engines: Engines::new(config, home, services),
            config_path,
            verbose: global.verbose,
            runtime,
        })
    }

    pub fn config(&self) -> &Config {
        self.engines.config()
    }

    /// Loads the tokenizer on another thread while the command reads its input: loading takes
    /// longer than parsing a large transcript, and every engine command counts tokens.
    pub fn warm_tokenizer(&self) {
        let services = self.engines.services().clone();
        std::thread::spawn(move || services.tokens().count("warm up"));
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

/// A tokio runtime for the commands that run engines (engines run on its blocking pool).
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}
