//! Project trust, as direnv and mise do it: a `config.yaml` found in the working directory
//! belongs to whoever wrote that directory, so its plugins (under `plugins/context_engine/`
//! beside it) and its credentials (a summarizer's `api_key_env` and `base_url`, the gateway's
//! keys and upstream) are used only once the user trusts the project, with `ctxhost trust`.
//! A trust is recorded under `$CTXHOST_HOME` (never in the project) by the config's path and a
//! hash of its content and of its plugin tree: any change makes the project untrusted again.
//!
//! Trusted without asking: a config named with `--config` (naming it is trusting it), the
//! home's own config, and the checkout the running `ctxhost` was built from (its binary lives
//! in that directory's cargo `target/`: whoever runs it already runs that checkout's code).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::fingerprint::tree_sha256;

/// The file under `$CTXHOST_HOME` that records trusted projects.
pub const STORE_FILE: &str = "trusted-projects.json";

/// Where the config in use came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Named on the command line (`--config FILE`), or handed over by a program embedding the
    /// host.
    Named,
    /// `$CTXHOST_HOME/config.yaml`.
    Home,
    /// Found in the working directory: a project's.
    Project,
    /// No file: the built-in defaults.
    Defaults,
}

/// Whether a config's project may be used, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    Trusted(Trusted),
    Untrusted(Untrusted),
}

impl Standing {
    pub fn is_trusted(&self) -> bool {
        matches!(self, Standing::Trusted(_))
    }
}

/// Why a config is trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trusted {
    /// Not a project's: named on the command line, the home's, or none.
    NotAProject(Origin),
    /// `ctxhost trust` recorded it, and it has not changed since.
    Recorded,
    /// The checkout the running `ctxhost` was built from.
    Checkout,
}

/// Why a project is not trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Untrusted {
    /// Never trusted.
    Never,
    /// Trusted once, changed since (its config or its plugins).
    Changed,
}

/// A project trust store problem, naming the file.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{path}: {reason}")]
    Io { path: String, reason: String },
    #[error(
        "{path}: not a trusted-projects file ({reason}); remove it and trust your projects again"
    )]
    Invalid { path: String, reason: String },
}

/// One trusted project.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// The hash of the config's content and its plugin tree when it was trusted.
    pub sha256: String,
}

/// The projects the user trusts: config path → record.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Store {
    #[serde(default)]
    pub projects: BTreeMap<PathBuf, Record>,
}

impl Store {
    pub fn path(home: &Path) -> PathBuf {
        home.join(STORE_FILE)
    }

    /// Reads the store (empty when there is none yet).
    pub fn read(home: &Path) -> Result<Self, StoreError> {
        let path = Self::path(home);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Store::default())
            }
            Err(error) => return Err(io_error(&path, error)),
        };
        serde_json::from_str(&text).map_err(|error| StoreError::Invalid {
            path: path.display().to_string(),
            reason: error.to_string(),
        })
    }

    /// Writes the store atomically, readable by the user only.
    pub fn write(&self, home: &Path) -> Result<(), StoreError> {
        let path = Self::path(home);
        std::fs::create_dir_all(home).map_err(|error| io_error(home, error))?;
        let mut text = serde_json::to_string_pretty(self).expect("the store serializes");
        text.push('\n');
        crate::atomic::write(&path, text.as_bytes()).map_err(|error| io_error(&path, error))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600));
        }
        Ok(())
    }
}

fn io_error(path: &Path, error: std::io::Error) -> StoreError {
    StoreError::Io {
        path: path.display().to_string(),
        reason: error.to_string(),
    }
}

/// The key a project is recorded under: its config's absolute, resolved path.
pub fn key(config: &Path) -> PathBuf {
    config
        .canonicalize()
        .unwrap_or_else(|_| std::path::absolute(config).unwrap_or_else(|_| config.to_path_buf()))
}

/// The hash a trust covers: the config's bytes and the plugin tree beside it
/// (`plugins/context_engine/`, every file, when there is one).
pub fn fingerprint(config: &Path) -> std::io::Result<String> {
    let mut hash = Sha256::new();
    hash.update(std::fs::read(config)?);
    hash.update(b"\0plugins\0");
    let plugins = key(config)
        .parent()
        .map(|dir| dir.join("plugins").join("context_engine"));
    if let Some(plugins) = plugins.filter(|p| p.is_dir()) {
        hash.update(tree_sha256(&plugins, None)?.as_bytes());
    }
    Ok(format!("{:x}", hash.finalize()))
}

/// Where the config at `config` stands, for a config of `origin`.
pub fn standing(config: &Path, origin: Origin, home: &Path) -> Standing {
    if origin != Origin::Project {
        return Standing::Trusted(Trusted::NotAProject(origin));
    }
    if is_own_checkout(config) {
        return Standing::Trusted(Trusted::Checkout);
    }
    let recorded = Store::read(home)
        .ok()
        .and_then(|store| store.projects.get(&key(config)).cloned());
    let Some(record) = recorded else {
        return Standing::Untrusted(Untrusted::Never);
    };
    match fingerprint(config) {
        Ok(actual) if actual == record.sha256 => Standing::Trusted(Trusted::Recorded),
        _ => Standing::Untrusted(Untrusted::Changed),
    }
}

/// Whether `config` is recorded as trusted and has not changed since.
pub fn is_recorded(config: &Path, home: &Path) -> bool {
    let Ok(store) = Store::read(home) else {
        return false;
    };
    store
        .projects
        .get(&key(config))
        .is_some_and(|record| fingerprint(config).is_ok_and(|actual| actual == record.sha256))
}

/// Records `config` (as it is now, with its plugin tree) as trusted; returns its hash.
pub fn record(config: &Path, home: &Path) -> Result<String, StoreError> {
    let mut store = Store::read(home)?;
    let sha256 = fingerprint(config).map_err(|error| io_error(config, error))?;
    store.projects.insert(
        key(config),
        Record {
            sha256: sha256.clone(),
        },
    );
    store.write(home)?;
    Ok(sha256)
}

/// Whether `config` sits at the root of the cargo checkout the running executable was built
/// in (`<dir>/Cargo.toml`, the binary in `<dir>/target/...`).
fn is_own_checkout(config: &Path) -> bool {
    let Some(dir) = key(config).parent().map(Path::to_path_buf) else {
        return false;
    };
    let Some(exe_dir) = crate::home::executable_dir() else {
        return false;
    };
    dir.join("Cargo.toml").is_file() && exe_dir.starts_with(dir.join("target"))
}

/// The one line that says how to trust the project of `config`.
pub fn how_to_trust(config: &Path, why: Untrusted) -> String {
    let what = match why {
        Untrusted::Never => "is not trusted",
        Untrusted::Changed => "changed since you trusted it",
    };
    format!(
        "the project config {} {what}: trust it with `ctxhost trust` (or name it with --config)",
        config.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_project_is_trusted_until_its_config_or_plugins_change() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let config = project.path().join("config.yaml");
        std::fs::write(&config, "context:\n  engine: compressor\n").unwrap();
        let plugin = project.path().join("plugins/context_engine/x");
        std::fs::create_dir_all(&plugin).unwrap();
        std::fs::write(plugin.join("plugin.yaml"), "library: x\n").unwrap();
        assert_eq!(
            standing(&config, Origin::Project, home.path()),
            Standing::Untrusted(Untrusted::Never)
        );
        let mut store = Store::default();
        store.projects.insert(
            key(&config),
            Record {
                sha256: fingerprint(&config).unwrap(),
            },
        );
        store.write(home.path()).unwrap();
        assert!(standing(&config, Origin::Project, home.path()).is_trusted());
        std::fs::write(plugin.join("libx.so"), "new code").unwrap();
        assert_eq!(
            standing(&config, Origin::Project, home.path()),
            Standing::Untrusted(Untrusted::Changed)
        );
        assert!(standing(&config, Origin::Named, home.path()).is_trusted());
    }
}
