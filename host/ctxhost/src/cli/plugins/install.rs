//! `ctxhost plugins install|remove|new`: plugins on disk.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::bail;
use clap::Args;
use ctxhost_config::fingerprint::Recorded;
use ctxhost_config::write::{update, Change};
use ctxhost_config::BUILT_IN_ENGINE;
use ctxhost_plugins::install::shipped::Origin;
use ctxhost_plugins::install::{self, Request};
use ctxhost_plugins::libraries::foreign_libraries;
use ctxhost_plugins::scaffold;
use ctxhost_plugins::trust::short;
use ctxhost_plugins::RootKind;
use serde_yaml::Value;

use super::select::without;
use crate::cli::{App, GlobalArgs};

#[derive(Debug, Args)]
pub struct InstallArgs {
    /// A built library (with plugin.yaml beside it), a plugin directory, or a plugin crate
    #[arg(required_unless_present = "shipped")]
    pub path: Option<PathBuf>,
    /// The plugin.yaml to use for a library that has none beside it
    #[arg(long, value_name = "FILE")]
    pub manifest: Option<PathBuf>,
    /// Also approve it (record the hash of its directory), so it may load
    #[arg(long)]
    pub enable: bool,
    /// Replace a plugin of the same name that is already installed
    #[arg(long)]
    pub force: bool,
    /// Install and approve the engines that ship with ctxhost (lcm, window): the libraries
    /// built with this ctxhost, else its source tree's release build when up to date, else built
    /// there
    #[arg(long, conflicts_with_all = ["path", "manifest"])]
    pub shipped: bool,
}

#[derive(Debug, Args)]
pub struct RemoveArgs {
    /// The plugin's name
    pub name: String,
}

#[derive(Debug, Args)]
pub struct NewArgs {
    /// The engine's name (lowercase letters, digits, `-` and `_`)
    pub name: String,
    /// Where to create the crate [default: ./NAME]
    #[arg(long, value_name = "DIR")]
    pub path: Option<PathBuf>,
    /// The ctxhost-sdk sources to depend on [default: the SDK this ctxhost was built from]
    #[arg(long, value_name = "DIR")]
    pub sdk: Option<PathBuf>,
    /// The ctxhost-sdk-test sources the new crate's tests depend on [default: `sdk-test`
    /// beside the SDK]
    #[arg(long, value_name = "DIR")]
    pub sdk_test: Option<PathBuf>,
}

pub fn install(global: &GlobalArgs, args: &InstallArgs) -> anyhow::Result<ExitCode> {
    let app = App::for_edit(global)?;
    let Some(path) = &args.path else {
        return install_shipped(&app, args.force);
    };
    let request = Request {
        source: path.clone(),
        manifest: args.manifest.clone(),
        force: args.force,
    };
    let root = app.engines.user_plugin_root();
    let read = |name: &str, library: &Path| app.engines.library_manifest(name, library);
    let installed = install::install(&request, &root, &read)?;
    let name = installed.name.as_str();
    match &installed.replaced {
        Some(old) => println!(
            "installed {name} {} in {} (replaced {old})",
            installed.version,
            installed.dir.display()
        ),
        None => println!(
            "installed {name} {} in {}",
            installed.version,
            installed.dir.display()
        ),
    }
    println!("  library   {}", installed.library.display());
    println!("  tree hash {}", Recorded::value_of(&installed.tree_sha256));
    if let Ok(foreign) = foreign_libraries(&installed.library, &installed.dir) {
        super::warn_foreign(name, &foreign);
    }
    let trust = &app.config().trust;
    if args.enable {
        let key = format!("trust.enabled.{name}");
        let mut changes = vec![Change::Set(
            &key,
            Value::String(Recorded::value_of(&installed.tree_sha256)),
        )];
        if trust.disabled.iter().any(|d| d == name) {
            changes.push(Change::Set(
                "trust.disabled",
                without(&trust.disabled, name),
            ));
        }
        update(&app.config_path, &changes)?;
        println!(
            "enabled: this build is approved (in {})",
            app.config_path.display()
        );
    }
    warn_if_shadowed(&app, name);
    let selected = app.config().context.engine == name;
    let approved_other = trust
        .enabled
        .get(name)
        .filter(|approved| **approved != Recorded::value_of(&installed.tree_sha256));
    match approved_other {
        Some(approved) if !args.enable => println!(
            "note: the approved build of {name} was {}…, so this one will not load until `ctxhost plugins enable {name}` approves it",
            short(approved)
        ),
        None if !args.enable && !trust.enabled.contains_key(name) && selected => {
            println!("next: `ctxhost plugins enable {name}` approves it")
        }
        _ => {}
    }
    if !selected && (args.enable || approved_other.is_none()) {
        println!("next: `ctxhost plugins use {name}` selects it (and approves this build)");
    }
    Ok(ExitCode::SUCCESS)
}

/// `plugins install --shipped`: installs every shipped engine and approves each build.
fn install_shipped(app: &App, force: bool) -> anyhow::Result<ExitCode> {
    let read = |name: &str, library: &Path| app.engines.library_manifest(name, library);
    let (installed, origin) =
        install::install_shipped(&app.engines.user_plugin_root(), force, &read)?;
    match &origin {
        Origin::BesideBinary(dir) => println!(
            "shipped engines built with this ctxhost, in {}",
            dir.display()
        ),
        Origin::CheckoutBuild(dir) => println!(
            "shipped engines already built in {} (newer than their sources)",
            dir.display()
        ),
        Origin::Built(tree) => println!("shipped engines built from {}", tree.display()),
    }
    let trust = &app.config().trust;
    let keys: Vec<String> = installed
        .iter()
        .map(|one| format!("trust.enabled.{}", one.name))
        .collect();
    let mut changes = Vec::new();
    let mut disabled = trust.disabled.clone();
    for (one, key) in installed.iter().zip(&keys) {
        let name = one.name.as_str();
        if one.unchanged {
            println!(
                "{name} {} is already installed in {} (same build)",
                one.version,
                one.dir.display()
            );
        } else {
            match &one.replaced {
                Some(old) => println!(
                    "installed {name} {} in {} (replaced {old})",
                    one.version,
                    one.dir.display()
                ),
                None => println!("installed {name} {} in {}", one.version, one.dir.display()),
            }
        }
        println!("  library   {}", one.library.display());
        println!("  tree hash {}", Recorded::value_of(&one.tree_sha256));
        let approval = Recorded::value_of(&one.tree_sha256);
        if trust.enabled.get(name) != Some(&approval) {
            changes.push(Change::Set(key, Value::String(approval)));
        }
        disabled.retain(|d| d != name);
    }
    if disabled.len() != trust.disabled.len() {
        let disabled = disabled.into_iter().map(Value::String).collect();
        changes.push(Change::Set("trust.disabled", Value::Sequence(disabled)));
    }
    let names = installed
        .iter()
        .map(|one| one.name.as_str())
        .collect::<Vec<_>>()
        .join(" and ");
    if changes.is_empty() {
        println!(
            "{names}: these builds are approved already (in {})",
            app.config_path.display()
        );
    } else {
        update(&app.config_path, &changes)?;
        println!(
            "approved these builds of {names} (in {})",
            app.config_path.display()
        );
    }
    for one in &installed {
        warn_if_shadowed(app, &one.name);
    }
    if !installed
        .iter()
        .any(|one| one.name == app.config().context.engine)
    {
        println!("next: `ctxhost plugins use lcm` selects the lossless engine");
    }
    Ok(ExitCode::SUCCESS)
}

/// Says so when a plugin of the project (beside the config) has `name` too: resolution finds
/// it first, so the installed one is never used with this config.
fn warn_if_shadowed(app: &App, name: &str) {
    if let Some(shadow) = app
        .engines
        .inspect_plugin(name, false)
        .filter(|i| i.candidate.root != RootKind::UserHome)
    {
        println!(
            "warning: the plugin in {} has the same name and is found first; this one is never used with {}",
            shadow.candidate.dir.display(),
            app.config_path.display()
        );
    }
}

pub fn remove(global: &GlobalArgs, args: &RemoveArgs) -> anyhow::Result<ExitCode> {
    let app = App::for_edit(global)?;
    let name = args.name.as_str();
    if name == BUILT_IN_ENGINE {
        bail!("the built-in compressor cannot be removed");
    }
    let installed = app
        .engines
        .inspect_plugins(false)
        .into_iter()
        .find(|i| i.candidate.name == name && i.candidate.root == RootKind::UserHome);
    let Some(installed) = installed else {
        if let Some(other) = app.engines.inspect_plugin(name, false) {
            bail!(
                "plugin '{name}' in {} belongs to the project, not to the user plugin directory; delete it yourself if you mean to",
                other.candidate.dir.display()
            );
        }
        bail!("no plugin '{name}' is installed; see `ctxhost plugins list`");
    };
    let config = app.config();
    let key = format!("trust.enabled.{name}");
    let mut changes = Vec::new();
    if config.trust.enabled.contains_key(name) {
        changes.push(Change::Remove(&key));
    }
    if config.trust.disabled.iter().any(|d| d == name) {
        changes.push(Change::Set(
            "trust.disabled",
            without(&config.trust.disabled, name),
        ));
    }
    let was_active = config.context.engine == name;
    if was_active {
        changes.push(Change::Set(
            "context.engine",
            Value::String(BUILT_IN_ENGINE.to_string()),
        ));
    }
    if !changes.is_empty() {
        update(&app.config_path, &changes)?;
    }
    install::remove(&installed.candidate.dir)?;
    println!("removed {name} ({})", installed.candidate.dir.display());
    if was_active {
        println!(
            "context.engine = {BUILT_IN_ENGINE} (it selected {name}; in {})",
            app.config_path.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub fn new(args: &NewArgs) -> anyhow::Result<ExitCode> {
    let dir = args
        .path
        .clone()
        .unwrap_or_else(|| PathBuf::from(&args.name));
    let sdk = args.sdk.clone().unwrap_or_else(scaffold::default_sdk_path);
    let sdk_test = args
        .sdk_test
        .clone()
        .unwrap_or_else(|| scaffold::default_sdk_test_path(&sdk));
    let files = scaffold::scaffold(&args.name, &dir, &sdk, &sdk_test)?;
    println!("created engine '{}' in {}:", args.name, dir.display());
    for file in files {
        let relative = file.strip_prefix(&dir).unwrap_or(&file);
        println!("  {}", relative.display());
    }
    println!("next:");
    println!("  cd {}", dir.display());
    println!("  cargo test                    # the engine's own test");
    println!("  ctxhost plugins install .     # build in release mode, check it loads, install");
    println!("  ctxhost plugins use {}", args.name);
    Ok(ExitCode::SUCCESS)
}
