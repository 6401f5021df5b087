//! Changing `config.yaml` from the command line: the edit keeps the user's text (see `edit`),
//! the result must be a valid config, and the file is replaced atomically. A file that does not
//! parse is never overwritten.

use std::path::{Path, PathBuf};

use super::edit::{self, EditError};
use super::{Config, ConfigError};

/// Why a config change was not written. Nothing on disk changed.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("{path}: cannot read the config file: {error}")]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{0}; fix the file first, nothing was written")]
    AlreadyInvalid(ConfigError),
    #[error("{path}: {error}")]
    Edit { path: PathBuf, error: EditError },
    #[error("{0}; nothing was written")]
    Rejected(ConfigError),
    #[error("{path}: cannot write the config file: {error}")]
    Write {
        path: PathBuf,
        error: std::io::Error,
    },
}

/// One change to the text of a config file.
pub enum Change<'a> {
    Set(&'a str, serde_yaml::Value),
    Remove(&'a str),
}

/// Applies `changes` to the config file at `path` (created when missing) and returns the config
/// now in effect. Either every change is written or none is.
pub fn update(path: &Path, changes: &[Change<'_>]) -> Result<Config, WriteError> {
    update_checked(path, changes, |_| Ok(()))
}

/// Like [`update`], with a further check of the resulting config (e.g. that an engine accepts
/// its settings) before anything is written.
pub fn update_checked(
    path: &Path,
    changes: &[Change<'_>],
    check: impl FnOnce(&Config) -> Result<(), ConfigError>,
) -> Result<Config, WriteError> {
    // Read, edit and write under one lock, so concurrent writers never lose each other's
    // changes. The lock is on the directory: the file itself is replaced by each write.
    let _lock = lock_dir_of(path).map_err(|error| WriteError::Write {
        path: path.to_path_buf(),
        error,
    })?;
    crate::atomic::remove_stale(path);
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(error) => {
            return Err(WriteError::Read {
                path: path.to_path_buf(),
                error,
            })
        }
    };
    Config::parse(&text, Some(path.to_path_buf())).map_err(WriteError::AlreadyInvalid)?;
    let mut edited = text.clone();
    for change in changes {
        edited = match change {
            Change::Set(key, value) => edit::set(&edited, key, value),
            Change::Remove(key) => edit::remove(&edited, key),
        }
        .map_err(|error| WriteError::Edit {
            path: path.to_path_buf(),
            error,
        })?;
    }
    let config = Config::parse(&edited, Some(path.to_path_buf())).map_err(WriteError::Rejected)?;
    check(&config).map_err(WriteError::Rejected)?;
    if edited != text || !path.exists() {
        // A project the user trusted stays trusted through ctxhost's own edits of it.
        let home = crate::home::home_dir();
        let trusted = super::project::is_recorded(path, &home);
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|error| WriteError::Write {
                path: path.to_path_buf(),
                error,
            })?;
        }
        crate::atomic::write(path, edited.as_bytes()).map_err(|error| WriteError::Write {
            path: path.to_path_buf(),
            error,
        })?;
        if trusted {
            super::project::record(path, &home).map_err(|error| WriteError::Write {
                path: super::project::Store::path(&home),
                error: std::io::Error::other(error.to_string()),
            })?;
        }
    }
    Ok(config)
}

/// Takes an exclusive lock on the directory holding `path` (created when missing), released
/// when the returned handle is dropped, including when the process dies.
fn lock_dir_of(path: &Path) -> std::io::Result<std::fs::File> {
    let dir = match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(dir) => dir,
        None => Path::new("."),
    };
    std::fs::create_dir_all(dir)?;
    let handle = std::fs::File::open(dir)?;
    handle.lock()?;
    Ok(handle)
}
