//! The user's ctxhost home (`$CTXHOST_HOME`, default `~/.ctxhost`): installed plugins under
//! `plugins/context_engine/`, engine data under `data/<engine>/`, and a default `config.yaml`.

use std::path::{Path, PathBuf};

pub const HOME_ENV: &str = "CTXHOST_HOME";
pub const CONFIG_FILE: &str = "config.yaml";

pub fn home_dir() -> PathBuf {
    if let Some(home) = std::env::var_os(HOME_ENV).filter(|h| !h.is_empty()) {
        return PathBuf::from(home);
    }
    let user_home = std::env::var_os("HOME")
        .or_else(|| std::env::var_os("USERPROFILE"))
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    user_home.join(".ctxhost")
}

/// The config file to use when none is given: `./config.yaml`, else the home's, else none
/// (built-in defaults).
pub fn default_config_path(home: &Path) -> Option<PathBuf> {
    [PathBuf::from(CONFIG_FILE), home.join(CONFIG_FILE)]
        .into_iter()
        .find(|p| p.is_file())
}

/// The directory the running program lives in, which for a cargo build is the output directory
/// that also holds the plugin libraries built with it: `cargo run`, `cargo run --release` and
/// `target/debug/ctxhost` each find the plugins of the same cargo build. Cargo puts test, bench
/// and example executables one level down (`deps/`, `examples/`); for those it is the parent.
pub fn executable_dir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let exe = exe.canonicalize().unwrap_or(exe);
    let dir = exe.parent()?;
    match dir.file_name() {
        Some(name) if name == "deps" || name == "examples" => dir.parent().map(Path::to_path_buf),
        _ => Some(dir.to_path_buf()),
    }
}
