//! Test support for the end-to-end suite: builds the real `ctxhost` binary and the plugin
//! cdylibs once per run, gives each test a sandbox (config file, home directory, plugin
//! directories), and reads the corpus.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use ctxhost_sdk::Message;
use serde_json::Value;

/// The packages the suite loads or runs, built by the suite itself so `cargo test` alone is
/// enough on a fresh machine.
const PACKAGES: &[&str] = &[
    "ctxhost",
    "ctxhost-engine-window",
    "ctxhost-engine-lcm",
    "ctxhost-fixture-panicky",
    "ctxhost-fixture-abi-mismatch",
    "ctxhost-fixture-echo",
    "ctxhost-fixture-hostile",
    "ctxhost-fixture-foreign-rpath",
];

pub mod agents;
pub mod anthropic_upstream;
pub mod bench;
pub mod crate_source;
pub mod gateway;
pub mod memory;
pub mod module_graph;
pub mod python;
pub mod responses_upstream;
pub mod secrets;
pub mod upstream;
pub mod wire;

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is inside the workspace")
        .to_path_buf()
}

/// Every workspace package: name, manifest directory relative to the workspace, and the
/// names of its normal dependencies.
pub fn workspace_packages() -> Vec<(String, String, Vec<String>)> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let output = std::process::Command::new(cargo)
        .current_dir(workspace_root())
        .args([
            "metadata",
            "--offline",
            "--no-deps",
            "--format-version",
            "1",
        ])
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let root = workspace_root()
        .canonicalize()
        .expect("the workspace exists");
    metadata["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|package| {
            let manifest = std::path::Path::new(package["manifest_path"].as_str().unwrap());
            let dir = manifest.parent().unwrap();
            let dir = dir.strip_prefix(&root).unwrap_or(dir);
            let dependencies = package["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["kind"].is_null())
                .map(|d| d["name"].as_str().unwrap().to_string())
                .collect();
            (
                package["name"].as_str().unwrap().to_string(),
                dir.to_string_lossy().into_owned(),
                dependencies,
            )
        })
        .collect()
}

/// The cargo output directory of this test run (`target/debug` or `target/release`).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary has a path");
    // target/<profile>/deps/e2e-<hash>
    exe.parent()
        .and_then(Path::parent)
        .expect("test binaries live in target/<profile>/deps")
        .to_path_buf()
}

/// Builds the binary and every plugin (once per test run) and returns the output directory.
///
/// `cargo nextest` runs each test in its own process; they share a run id, and only the first
/// process of a run builds (a stamp in the output directory records the run that built).
pub fn artifacts() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let dir = profile_dir();
        let run_id = std::env::var("NEXTEST_RUN_ID").ok();
        let stamp = dir.join("ctxhost-tests-built-for-run");
        if run_id.is_some() && std::fs::read_to_string(&stamp).ok() == run_id {
            return dir;
        }
        let target_dir = dir.parent().expect("profile dir has a parent");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
        let mut command = Command::new(cargo);
        command
            .current_dir(workspace_root())
            .arg("build")
            .arg("--quiet")
            .arg("--target-dir")
            .arg(target_dir);
        if dir.file_name().is_some_and(|n| n == "release") {
            command.arg("--release");
        }
        for package in PACKAGES {
            command.args(["-p", package]);
        }
        let status = command.status().expect("cargo runs");
        assert!(status.success(), "building the binary and plugins failed");
        if let Some(run_id) = run_id {
            std::fs::write(&stamp, run_id).expect("the output directory is writable");
        }
        dir
    })
}

/// The cargo target directory of this test run.
pub fn target_dir() -> PathBuf {
    artifacts()
        .parent()
        .expect("the profile directory has a parent")
        .to_path_buf()
}

pub fn binary() -> PathBuf {
    artifacts().join(format!("ctxhost{}", std::env::consts::EXE_SUFFIX))
}

/// The built cdylib of a workspace crate, by its library name (`ctxhost_engine_window`).
pub fn library(lib_name: &str) -> PathBuf {
    artifacts().join(format!(
        "{}{lib_name}{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ))
}

/// The corpus, where `ctxhost-sdk-test` finds it (the checkout's, or `$CTXHOST_CORPUS`).
pub fn corpus_dir() -> PathBuf {
    ctxhost_sdk_test::corpus::dir()
}

/// Every corpus transcript, by file name, sorted.
pub fn corpus_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .expect("the corpus is in the repository (host/quality/corpus/swe-agent)")
        .map(|e| e.expect("readable corpus entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
}

pub fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).expect("readable JSON file");
    serde_json::from_str(&text).expect("valid JSON")
}

pub fn read_messages(path: &Path) -> Vec<Message> {
    serde_json::from_value(read_json(path)).expect("a JSON array of messages")
}

/// A long session: every corpus transcript's turns, one after another, behind the first
/// transcript's system prompt.
pub fn long_session() -> Vec<Value> {
    static SESSION: OnceLock<Vec<Value>> = OnceLock::new();
    SESSION.get_or_init(read_long_session).clone()
}

/// The first `n` messages of [`long_session`], with `marker` planted early (in message 40,
/// long before any compression), for a test that asks whether the engine still reaches it.
pub fn long_session_marked(n: usize, marker: &str) -> Vec<Value> {
    let mut session = long_session();
    session.truncate(n);
    session[40]["content"] = serde_json::json!(format!(
        "{} {marker}",
        session[40]["content"].as_str().unwrap_or_default()
    ));
    session
}

fn read_long_session() -> Vec<Value> {
    let mut session = Vec::new();
    for (index, file) in corpus_files().iter().enumerate() {
        let Value::Array(messages) = read_json(file) else {
            panic!("{} is not an array", file.display())
        };
        for message in messages {
            if index > 0 && message["role"] == "system" {
                continue;
            }
            session.push(message);
        }
    }
    session
}

/// A temporary world for one test: a directory holding `config.yaml` and plugin directories,
/// and a separate ctxhost home.
pub struct Sandbox {
    dir: tempfile::TempDir,
}

impl Default for Sandbox {
    fn default() -> Self {
        Self::new()
    }
}

impl Sandbox {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        std::fs::create_dir_all(dir.path().join("home")).expect("home dir");
        Sandbox { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn home(&self) -> PathBuf {
        self.path().join("home")
    }

    pub fn config_path(&self) -> PathBuf {
        self.path().join("config.yaml")
    }

    pub fn write_config(&self, text: &str) -> &Self {
        self.write("config.yaml", text);
        self
    }

    pub fn write(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.path().join(relative);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("parent dirs");
        std::fs::write(&path, text).expect("writable sandbox");
        path
    }

    pub fn write_json(&self, relative: &str, value: &Value) -> PathBuf {
        self.write(relative, &value.to_string())
    }

    /// Makes the repository's own `plugins/` directory appear beside this sandbox's config, as
    /// it does beside the shipped `config.yaml`.
    pub fn link_repo_plugins(&self) -> &Self {
        let target = workspace_root().join("plugins");
        #[cfg(unix)]
        std::os::unix::fs::symlink(target, self.path().join("plugins")).expect("symlink");
        #[cfg(not(unix))]
        std::os::windows::fs::symlink_dir(target, self.path().join("plugins")).expect("symlink");
        self
    }

    /// Installs a built cdylib as plugin `name` beside the config (library copied in, as
    /// `ctxhost plugins install` would).
    pub fn add_plugin(&self, name: &str, lib_name: &str) -> PathBuf {
        let dir = self.plugin_dir(name);
        let file = library(lib_name);
        let copied = dir.join(file.file_name().expect("a file name"));
        std::fs::copy(&file, &copied).expect("copy the plugin library");
        self.write_descriptor(name, &format!("name: {name}\nlibrary: {lib_name}\n"));
        copied
    }

    pub fn plugin_dir(&self, name: &str) -> PathBuf {
        let dir = self.path().join("plugins/context_engine").join(name);
        std::fs::create_dir_all(&dir).expect("plugin dir");
        dir
    }

    pub fn write_descriptor(&self, name: &str, yaml: &str) {
        std::fs::write(self.plugin_dir(name).join("plugin.yaml"), yaml).expect("plugin.yaml");
    }

    /// Runs `ctxhost` with this sandbox's config and home.
    pub fn ctxhost(&self, args: &[&str]) -> Run {
        self.ctxhost_with_env(args, &[])
    }

    /// Runs `ctxhost` with extra environment variables (API keys for a loopback provider).
    pub fn ctxhost_with_env(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let output = self
            .command(args)
            .envs(env.iter().copied())
            .output()
            .expect("ctxhost runs");
        Run::from(output)
    }

    /// The `ctxhost` command with this sandbox's config and home, not started yet (for tests
    /// that watch or kill it while it runs). The sandbox's `config.yaml`, when there is one, is
    /// named with `--config` (which trusts it): tests about untrusted projects use
    /// [`project_command`](Self::project_command).
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = self.project_command(&[]);
        command.args(self.config_args(args)).args(args);
        command
    }

    /// `--config config.yaml` when this sandbox has a config and `args` name none.
    pub fn config_args(&self, args: &[&str]) -> Vec<&'static str> {
        let named = args.iter().any(|a| *a == "--config" || *a == "-c");
        if self.config_path().is_file() && !named {
            vec!["--config", "config.yaml"]
        } else {
            Vec::new()
        }
    }

    /// The `ctxhost` command run in this sandbox as in a project's directory: its
    /// `config.yaml` found there, not named (so untrusted until `ctxhost trust`).
    pub fn project_command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(binary());
        command
            .current_dir(self.path())
            .env("CTXHOST_HOME", self.home())
            .env_remove("CARGO_TARGET_DIR")
            .args(args);
        command
    }

    /// Runs `ctxhost` as in a project's directory (see [`project_command`](Self::project_command)).
    pub fn ctxhost_in_project(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let output = self
            .project_command(args)
            .envs(env.iter().copied())
            .output()
            .expect("ctxhost runs");
        Run::from(output)
    }

    /// The config file's text.
    pub fn config_text(&self) -> String {
        std::fs::read_to_string(self.config_path()).expect("the config file exists")
    }

    /// The directory `ctxhost plugins install` installs plugin `name` into.
    pub fn installed_dir(&self, name: &str) -> PathBuf {
        self.home().join("plugins/context_engine").join(name)
    }

    /// Replaces this sandbox's path with `[SANDBOX]`, the suite's cargo output directory (where
    /// the binary and the plugins it built are) with `[BUILD]` and the repository's with
    /// `[REPO]`.
    pub fn redact(&self, text: &str) -> String {
        let mut text = text.to_string();
        for (path, label) in [
            (self.path().to_path_buf(), "[SANDBOX]"),
            (artifacts().to_path_buf(), "[BUILD]"),
            (workspace_root(), "[REPO]"),
        ] {
            if let Ok(canonical) = path.canonicalize() {
                text = text.replace(&canonical.display().to_string(), label);
            }
            text = text.replace(&path.display().to_string(), label);
        }
        text
    }
}

/// The outcome of one `ctxhost` run.
#[derive(Debug)]
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(output: Output) -> Self {
        Run {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

impl Run {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }

    /// Stdout parsed as JSON (panics with both streams when it is not).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|error| {
            panic!(
                "stdout is not JSON ({error})\nstdout: {}\nstderr: {}",
                self.stdout, self.stderr
            )
        })
    }

    /// Stdout as messages.
    pub fn messages(&self) -> Vec<Message> {
        serde_json::from_value(self.json()).expect("stdout is a message array")
    }

    pub fn stderr_lines(&self) -> Vec<&str> {
        self.stderr
            .lines()
            .filter(|l| !l.trim().is_empty())
            .collect()
    }
}
