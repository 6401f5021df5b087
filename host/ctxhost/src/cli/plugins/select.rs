//! `ctxhost plugins use|enable|disable`: choosing the engine and approving plugin builds. Every
//! change goes through the comment-keeping, atomic config writer.

use std::process::ExitCode;

use anyhow::bail;
use clap::Args;
use ctxhost_config::fingerprint::{tree_sha256, Recorded};
use ctxhost_config::write::{update, update_checked, Change};
use ctxhost_config::BUILT_IN_ENGINE;
use ctxhost_plugins::trust::short;
use ctxhost_plugins::{Inspection, ProblemKind};
use serde_yaml::Value;

use crate::cli::{App, GlobalArgs};

#[derive(Debug, Args)]
pub struct UseArgs {
    /// The engine: `compressor` or a plugin's name
    pub name: String,
    /// Select it even if it is not installed or does not load
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct NameArgs {
    /// The plugin's name
    pub name: String,
}

pub fn use_engine(global: &GlobalArgs, args: &UseArgs) -> anyhow::Result<ExitCode> {
    let app = App::for_edit(global)?;
    let message = select_engine(&app, &args.name, args.force)?;
    println!("{message}");
    Ok(ExitCode::SUCCESS)
}

/// Sets `context.engine` to `name` after checking it can run; a plugin never approved is
/// approved by being chosen (its checksum is recorded). Returns what to tell the user.
pub fn select_engine(app: &App, name: &str, force: bool) -> anyhow::Result<String> {
    let path = &app.config_path;
    let mut changes = vec![Change::Set(
        "context.engine",
        Value::String(name.to_string()),
    )];
    let mut notes = Vec::new();
    let approval_key = format!("trust.enabled.{name}");
    if name != BUILT_IN_ENGINE && !app.engines.is_registered(name) {
        match app.engines.inspect_plugin(name, false) {
            None if force => notes.push(format!(
                "warning: no plugin '{name}' is installed; the built-in compressor runs until one is"
            )),
            None => bail!(
                "engine '{name}' is not installed (looked in {}){}; see `ctxhost plugins list`, install it with `ctxhost plugins install PATH`, or pass --force",
                app.engines.looked_in(name),
                ctxhost_core::suggest::did_you_mean(app.engines.closest_engine(name).as_deref())
            ),
            Some(inspection) => match &inspection.loaded {
                Ok(_) => super::warn_foreign(name, &inspection.foreign),
                Err(problem)
                    if matches!(
                        problem.kind,
                        ProblemKind::NotEnabled | ProblemKind::StaleApproval
                    ) =>
                {
                    let (checksum, version) = approve(app, &inspection)?;
                    super::warn_foreign(name, &inspection.foreign);
                    notes.push(format!(
                        "approved {name} {version} (sha256 {}…): this build may now load",
                        short(&checksum)
                    ));
                    changes.push(Change::Set(
                        &approval_key,
                        Value::String(Recorded::value_of(&checksum)),
                    ));
                }
                Err(problem) if force => notes.push(format!(
                    "warning: {name}: {}; the built-in compressor runs until that is fixed",
                    problem.summary
                )),
                Err(problem) => bail!("cannot select '{name}': {} (or pass --force)", problem.summary),
            },
        }
    }
    let check = |config: &ctxhost_config::Config| app.engines.check_settings(config, name);
    update_checked(path, &changes, check)?;
    notes.push(format!("context.engine = {name} (in {})", path.display()));
    Ok(notes.join("\n"))
}

pub fn enable(global: &GlobalArgs, args: &NameArgs) -> anyhow::Result<ExitCode> {
    let app = App::for_edit(global)?;
    let name = args.name.as_str();
    if name == BUILT_IN_ENGINE {
        bail!("the built-in compressor is always enabled");
    }
    let Some(inspection) = app.engines.inspect_plugin(name, true) else {
        bail!(
            "no plugin '{name}' is installed (looked in {}){}; install it with `ctxhost plugins install PATH`",
            app.engines.looked_in(name),
            ctxhost_core::suggest::did_you_mean(app.engines.closest_engine(name).as_deref())
        );
    };
    if let Err(problem) = &inspection.loaded {
        let approvable = matches!(
            problem.kind,
            ProblemKind::NotEnabled
                | ProblemKind::Disabled
                | ProblemKind::ChecksumMismatch
                | ProblemKind::StaleApproval
        );
        if !approvable {
            bail!("cannot enable '{name}': {}", problem.summary);
        }
    }
    let (checksum, version) = approve(&app, &inspection)?;
    super::warn_foreign(name, &inspection.foreign);
    let key = format!("trust.enabled.{name}");
    let mut changes = vec![Change::Set(
        &key,
        Value::String(Recorded::value_of(&checksum)),
    )];
    if app.config().trust.disabled.iter().any(|d| d == name) {
        changes.push(Change::Set(
            "trust.disabled",
            without(&app.config().trust.disabled, name),
        ));
    }
    update(&app.config_path, &changes)?;
    println!(
        "enabled {name} {version}: its directory (sha256 {checksum}) is approved (in {}); a change to any file in it will be refused until it is enabled again",
        app.config_path.display()
    );
    if app.config().context.engine != name {
        println!("select it with `ctxhost plugins use {name}`");
    }
    Ok(ExitCode::SUCCESS)
}

pub fn disable(global: &GlobalArgs, args: &NameArgs) -> anyhow::Result<ExitCode> {
    let app = App::for_edit(global)?;
    let name = args.name.as_str();
    if name == BUILT_IN_ENGINE {
        bail!("the built-in compressor cannot be disabled; it is what runs when nothing else can");
    }
    let trust = &app.config().trust;
    let known =
        app.engines.inspect_plugin(name, false).is_some() || trust.enabled.contains_key(name);
    if !known {
        bail!(
            "no plugin '{name}' is installed{}; nothing to disable",
            ctxhost_core::suggest::did_you_mean(app.engines.closest_engine(name).as_deref())
        );
    }
    let key = format!("trust.enabled.{name}");
    let mut changes = vec![Change::Remove(&key)];
    if !trust.disabled.iter().any(|d| d == name) {
        let mut disabled: Vec<Value> = trust
            .disabled
            .iter()
            .map(|d| Value::String(d.clone()))
            .collect();
        disabled.push(Value::String(name.to_string()));
        changes.push(Change::Set("trust.disabled", Value::Sequence(disabled)));
    }
    update(&app.config_path, &changes)?;
    println!("disabled {name} (in {})", app.config_path.display());
    if app.config().context.engine == name {
        println!(
            "note: context.engine still selects {name}; the built-in compressor runs instead until you choose another engine (`ctxhost plugins use NAME`)"
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Checks that a plugin's library loads (in a child process: loading runs its code) and is
/// the engine it claims to be, and returns the hash of its directory and its version for the
/// approval.
fn approve(app: &App, inspection: &Inspection) -> anyhow::Result<(String, String)> {
    let name = &inspection.candidate.name;
    let Some(library) = &inspection.library else {
        bail!("plugin '{name}' has no library to approve");
    };
    let unreadable = |error: std::io::Error| {
        anyhow::anyhow!(
            "cannot read {}: {error}",
            inspection.candidate.dir.display()
        )
    };
    let mut file = std::fs::File::open(library).map_err(unreadable)?;
    let checksum =
        tree_sha256(&inspection.candidate.dir, Some((library, &mut file))).map_err(unreadable)?;
    let manifest = app
        .engines
        .read_manifest(&inspection.candidate.name, library)
        .map_err(|problem| anyhow::anyhow!("cannot enable '{name}': {}", problem.summary))?;
    if &manifest.name != name {
        bail!(
            "cannot enable '{name}': plugin.yaml names '{name}' but the library is engine '{}'",
            manifest.name
        );
    }
    Ok((checksum, manifest.version))
}

pub(super) fn without(list: &[String], name: &str) -> Value {
    Value::Sequence(
        list.iter()
            .filter(|d| *d != name)
            .map(|d| Value::String(d.clone()))
            .collect(),
    )
}
