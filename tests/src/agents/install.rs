//! Installs the real agents' pinned releases under the cargo target directory, once (under a
//! file lock, so parallel tests share one install), reused by later runs: the npm packages into
//! one prefix, Hermes Agent into a virtualenv of its own. A machine without Node.js, npm or
//! Python gets a panic naming what to install, never a skipped test.

use std::fs::File;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use crate::python::virtualenv;
use crate::target_dir;

/// The npm releases the suite drives (the versions its tests were written against).
pub const NPM_PACKAGES: &[&str] = &["@openai/codex@0.169.0", "@anthropic-ai/claude-code@2.1.197"];

/// The PyPI release of Hermes Agent.
pub const HERMES_PACKAGE: &str = "hermes-agent==0.19.0";

/// Where the agents live: `target/ctxhost-test-agents/`.
fn agents_dir() -> PathBuf {
    target_dir().join("ctxhost-test-agents")
}

/// The npm prefix holding [`NPM_PACKAGES`], installed when missing or when the list changed;
/// returns its `node_modules/.bin`.
fn npm_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let prefix = agents_dir().join("npm");
        std::fs::create_dir_all(&prefix).expect("the target directory is writable");
        let lock = File::create(prefix.with_extension("lock")).expect("a lock file");
        lock.lock().expect("lock the npm prefix");
        let stamp = prefix.join("ctxhost-packages");
        let wanted = NPM_PACKAGES.join(" ");
        if std::fs::read_to_string(&stamp).ok().as_deref() != Some(wanted.as_str()) {
            let npm = Command::new("npm").arg("--version").output();
            assert!(
                npm.as_ref().is_ok_and(|o| o.status.success()),
                "the real-agent tests need Node.js (18 or newer) and npm to install {wanted} \
                 ({npm:?}): install them (Debian: apt-get install nodejs npm)"
            );
            let installed = Command::new("npm")
                .args([
                    "install",
                    "--no-audit",
                    "--no-fund",
                    "--loglevel=error",
                    "--prefix",
                ])
                .arg(&prefix)
                .args(NPM_PACKAGES)
                .status();
            assert!(
                installed.as_ref().is_ok_and(|s| s.success()),
                "cannot install {wanted} from npm into {} ({installed:?}): the real-agent tests \
                 need them; check that the npm registry is reachable",
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
            &[HERMES_PACKAGE],
            "the real-agent tests (Hermes Agent)",
        );
        python.with_file_name("hermes")
    })
    .clone()
}
