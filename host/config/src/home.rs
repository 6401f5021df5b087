//! The user's ctxhost home (`$CTXHOST_HOME`, default `~/.ctxhost`): installed plugins under
//! `plugins/context_engine/`, engine data under `data/<engine>/`, and a default `config.yaml`.

use std::path::{Path, PathBuf};

pub const HOME_ENV: &str = "CTXHOST_HOME";
pub const CONFIG_FILE: &str = "config.yaml";

/// What [`executable_dir`] is in a program embedding ctxhost, once it says so.
static EMBEDDED_DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Makes `dir` what [`executable_dir`] answers from now on, in this process: for a program
/// embedding ctxhost, the directory that holds the libraries built with it. The first call
/// wins; `false` when an earlier one set another directory.
pub fn set_executable_dir(dir: PathBuf) -> bool {
    EMBEDDED_DIR.get_or_init(|| dir.clone()) == &dir
}

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
/// A program embedding ctxhost whose libraries are not beside its executable (the Python
/// package: an interpreter runs it, and the shipped engines' libraries sit in the package) says
/// where they are with [`set_executable_dir`].
pub fn executable_dir() -> Option<PathBuf> {
    if let Some(dir) = EMBEDDED_DIR.get() {
        return Some(dir.clone());
    }
    let exe = std::env::current_exe().ok()?;
    let exe = exe.canonicalize().unwrap_or(exe);
    let dir = exe.parent()?;
    match dir.file_name() {
        Some(name) if name == "deps" || name == "examples" => dir.parent().map(Path::to_path_buf),
        _ => Some(dir.to_path_buf()),
    }
}
