//! Installs the real agents' pinned releases under the cargo target directory, once (under a
//! file lock, so parallel tests share one install), reused by later runs: the npm packages with
//! `npm ci` from the lockfile in `tests/agents/` (every package of the tree pinned with its
//! integrity hash), Hermes Agent into a virtualenv of its own from
//! `tests/agents/hermes-requirements.txt` (every package pinned with its hashes). A machine
//! without Node.js, npm or Python gets a panic naming what to install, never a skipped test.

use std::fs::File;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use crate::python::{virtualenv, Requirements};
use crate::{target_dir, workspace_root};

/// The npm manifest and lockfile of the agents the suite drives (Codex CLI and Claude Code).
const NPM_FILES: [&str; 2] = ["package.json", "package-lock.json"];

/// The folder of the repository holding the agents' pins.
fn pins_dir() -> PathBuf {
    workspace_root().join("tests/agents")
}

/// Where the agents live: `target/ctxhost-test-agents/`.
fn agents_dir() -> PathBuf {
    target_dir().join("ctxhost-test-agents")
}

/// The npm prefix holding the locked packages, installed with `npm ci` when missing or when
/// the manifest or lockfile changed; returns its `node_modules/.bin`.
fn npm_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let prefix = agents_dir().join("npm");
        std::fs::create_dir_all(&prefix).expect("the target directory is writable");
        let lock = File::create(prefix.with_extension("lock")).expect("a lock file");
        lock.lock().expect("lock the npm prefix");
        let stamp = prefix.join("ctxhost-packages");
        let wanted: String = NPM_FILES
            .iter()
            .map(|name| {
                let path = pins_dir().join(name);
                std::fs::read_to_string(&path)
                    .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
            })
            .collect();
        if std::fs::read_to_string(&stamp).ok().as_deref() != Some(wanted.as_str()) {
            let npm = Command::new("npm").arg("--version").output();
            assert!(
                npm.as_ref().is_ok_and(|o| o.status.success()),
                "the real-agent tests need Node.js (18 or newer) and npm to install the agents \
                 locked in tests/agents/package-lock.json ({npm:?}): install them (Debian: \
                 apt-get install nodejs npm)"
            );
            for name in NPM_FILES {
                std::fs::copy(pins_dir().join(name), prefix.join(name))
                    .expect("copy the npm manifest and lockfile into the prefix");
            }
            let installed = Command::new("npm")
                .args([
                    "ci",
                    "--no-audit",
                    "--no-fund",
                    "--loglevel=error",
                    "--prefix",
                ])
                .arg(&prefix)
                .status();
            assert!(
                installed.as_ref().is_ok_and(|s| s.success()),
                "cannot install the agents locked in tests/agents/package-lock.json into {} \
                 with `npm ci` ({installed:?}): the real-agent tests need them; check that the \
                 npm registry is reachable",
                prefix.display()
            );
            std::fs::write(&stamp, &wanted).expect("write the stamp");
        }
        prefix.join("node_modules/.bin")
    })
    .clone()
}

/// The `codex` command of the pinned Codex CLI.
pub fn codex() -> PathBuf {
    npm_bin().join("codex")
}

/// The `claude` command of the pinned Claude Code.
pub fn claude() -> PathBuf {
    npm_bin().join("claude")
}

/// The `hermes` command of the pinned Hermes Agent.
pub fn hermes() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let python = virtualenv(
            "ctxhost-test-agents/hermes",
            Requirements::Locked(&pins_dir().join("hermes-requirements.txt")),
            "the real-agent tests (Hermes Agent)",
        );
        python.with_file_name("hermes")
    })
    .clone()
}
