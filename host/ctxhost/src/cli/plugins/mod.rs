//! `ctxhost plugins …`: list, inspect, install, select, approve and check engine plugins.

mod doctor;
mod info;
mod install;
mod list;
mod picker;
pub mod select;

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::{Args, Subcommand};

pub use list::{list, ListArgs};

use super::GlobalArgs;

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct PluginsArgs {
    #[command(subcommand)]
    pub command: Option<PluginsCommand>,
}

#[derive(Debug, Subcommand)]
pub enum PluginsCommand {
    /// List every engine: the built-in compressor, plugins (loaded in a child process, when
    /// allowed, to check their ABI) and engines registered in code, with source, version, state
    /// and path
    List(ListArgs),
    /// Show one engine: manifest, tools, config keys with current values, library and checksum
    Info(info::InfoArgs),
    /// Select the context engine (sets `context.engine`)
    #[command(visible_alias = "select")]
    Use(select::UseArgs),
    /// Install a plugin into the user plugin directory from a built library, a plugin
    /// directory or a plugin crate (built with cargo in release mode)
    Install(install::InstallArgs),
    /// Remove a plugin installed in the user plugin directory
    #[command(visible_alias = "uninstall")]
    Remove(install::RemoveArgs),
    /// Approve a plugin: record the hash of its directory so these files, and only these, load
    Enable(select::NameArgs),
    /// Stop a plugin from loading, even when selected
    Disable(select::NameArgs),
    /// Load every plugin and report everything wrong; exits 1 if anything is
    Doctor(doctor::DoctorArgs),
    /// Create a new engine crate from the template: Cargo.toml on ctxhost-sdk, plugin.yaml, a
    /// working engine and a test
    New(install::NewArgs),
}

pub fn run(global: &GlobalArgs, args: &PluginsArgs) -> anyhow::Result<ExitCode> {
    match &args.command {
        None if std::io::stdin().is_terminal() && std::io::stdout().is_terminal() => {
            picker::run(global)
        }
        None => list(global, &ListArgs { json: false }),
        Some(PluginsCommand::List(args)) => list(global, args),
        Some(PluginsCommand::Info(args)) => info::run(global, args),
        Some(PluginsCommand::Use(args)) => select::use_engine(global, args),
        Some(PluginsCommand::Install(args)) => install::install(global, args),
        Some(PluginsCommand::Remove(args)) => install::remove(global, args),
        Some(PluginsCommand::Enable(args)) => select::enable(global, args),
        Some(PluginsCommand::Disable(args)) => select::disable(global, args),
        Some(PluginsCommand::Doctor(args)) => doctor::run(global, args),
        Some(PluginsCommand::New(args)) => install::new(args),
    }
}

/// Says, one line each, where an installed plugin's library loads shared libraries from outside
/// its directory: its approval does not cover those files (a project's plugin is refused).
fn warn_foreign(name: &str, foreign: &[ctxhost_plugins::libraries::Foreign]) {
    for foreign in foreign {
        eprintln!("warning: {name}: {foreign}");
    }
}
