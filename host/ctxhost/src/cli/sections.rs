//! The top-level sections of `config.yaml` that ctxhost does not read. Other programs' sections
//! share the file (Hermes Agent's `display:`, `memory:`, ...) and are left alone; one that is a
//! near miss of a section ctxhost reads (`compresion:`) is a typo whose settings would be
//! silently ignored, so every command that reads the config refuses it, with the same error.

use anyhow::bail;
use ctxhost_config::settings;
use ctxhost_config::Config;
use ctxhost_core::suggest;
use serde_yaml::Value;

/// A top-level section ctxhost does not read.
pub struct Unknown {
    pub name: String,
    /// The section ctxhost reads that it is a near miss of.
    pub near: Option<String>,
}

/// The file's top-level sections that ctxhost does not read, in file order.
pub fn unknown(config: &Config) -> Vec<Unknown> {
    let known = settings::sections();
    let Ok(Value::Mapping(map)) = serde_yaml::from_str::<Value>(config.text()) else {
        return Vec::new();
    };
    map.keys()
        .filter_map(Value::as_str)
        .filter(|name| !known.contains(name))
        .map(|name| Unknown {
            name: name.to_string(),
            near: suggest::closest(name, known.iter().copied()),
        })
        .collect()
}

/// Refuses a config with a mistyped section, naming its line and the section meant.
pub fn refuse_mistyped(config: &Config) -> anyhow::Result<()> {
    let Some(mistyped) = unknown(config).into_iter().find(|s| s.near.is_some()) else {
        return Ok(());
    };
    let source = match &config.source {
        Some(path) => path.display().to_string(),
        None => "config".to_string(),
    };
    let line = config
        .text()
        .lines()
        .position(|l| {
            l.strip_prefix(mistyped.name.as_str())
                .is_some_and(|rest| rest.trim_start().starts_with(':'))
        })
        .map(|at| format!(":{}", at + 1))
        .unwrap_or_default();
    bail!(
        "{source}{line}: unknown top-level section `{}:` (ctxhost would ignore it){}",
        mistyped.name,
        suggest::did_you_mean(mistyped.near.as_deref())
    )
}
