//! A Python interpreter with the official `openai` and `anthropic` SDKs, for tests that drive
//! the gateway with real clients. The suite makes it itself: a virtualenv under the cargo
//! target directory, created once (under a lock, so parallel tests share it) from
//! `tests/python/sdk-requirements.txt`, which pins every package with its hashes.
//! `CTXHOST_TEST_PYTHON` names an interpreter that already has both instead.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::{target_dir, workspace_root};

/// What a virtualenv is made from.
#[derive(Debug, Clone, Copy)]
pub enum Requirements<'a> {
    /// A requirements file that pins every package of the closure with its hashes, installed
    /// with `pip install --require-hashes -r FILE`, so every machine gets the same files.
    Locked(&'a Path),
    /// Packages by name and version range, resolved at install time (the benches' reference
    /// proxies, which are measured against, not tested).
    Unlocked(&'a [&'a str]),
}

impl Requirements<'_> {
    /// pip's arguments after `install`.
    fn pip_args(&self) -> Vec<String> {
        match self {
            Requirements::Locked(file) => vec![
                "--require-hashes".to_string(),
                "-r".to_string(),
                file.display().to_string(),
            ],
            Requirements::Unlocked(packages) => packages.iter().map(|p| p.to_string()).collect(),
        }
    }

    /// What the virtualenv's stamp records: the virtualenv is made again when it changes.
    fn stamp(&self) -> String {
        match self {
            Requirements::Locked(file) => std::fs::read_to_string(file).unwrap_or_else(|error| {
                panic!("cannot read the requirements {}: {error}", file.display())
            }),
            Requirements::Unlocked(packages) => packages.join(" "),
        }
    }
}

/// The requirements file of the SDK virtualenv.
fn sdk_requirements() -> PathBuf {
    workspace_root().join("tests/python/sdk-requirements.txt")
}

/// The interpreter to run client scripts with.
pub fn python_with_sdks() -> PathBuf {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON
        .get_or_init(|| {
            if let Some(python) = std::env::var_os("CTXHOST_TEST_PYTHON") {
                return PathBuf::from(python);
            }
            virtualenv(
                "ctxhost-test-venv",
                Requirements::Locked(&sdk_requirements()),
                "the gateway's client tests (or set CTXHOST_TEST_PYTHON to an interpreter \
                 that has the openai and anthropic packages)",
            )
        })
        .clone()
}

/// A virtualenv under the target directory named `name` holding `requirements` (created or
/// made again when they changed, under a lock so parallel callers share it); returns its
/// `bin/python`. `purpose` names who needs it in the message a machine without Python gets.
pub fn virtualenv(name: &str, requirements: Requirements, purpose: &str) -> PathBuf {
    let dir = target_dir().join(name);
    std::fs::create_dir_all(&dir).expect("the target directory is writable");
    let lock = File::create(dir.with_extension("lock")).expect("a lock file");
    lock.lock().expect("lock the virtualenv");
    let python = dir.join("bin/python");
    let stamp = dir.join("ctxhost-packages");
    let wanted = requirements.stamp();
    if std::fs::read_to_string(&stamp).ok().as_deref() != Some(wanted.as_str()) {
        let created = Command::new("python3")
            .args(["-m", "venv", "--clear"])
            .arg(&dir)
            .status();
        assert!(
            created.as_ref().is_ok_and(|s| s.success()),
            "cannot create a Python virtualenv with `python3 -m venv` ({created:?}): install \
             Python 3 with its venv module (Debian: python3-venv); {purpose} need it"
        );
        let installed = Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .args(requirements.pip_args())
            .status();
        assert!(
            installed.as_ref().is_ok_and(|s| s.success()),
            "cannot install {requirements:?} from PyPI into {} ({installed:?}): {purpose} need \
             them; check that PyPI is reachable",
            dir.display()
        );
        std::fs::write(&stamp, &wanted).expect("write the stamp");
    }
    python
}

/// The suite's Python client scripts (`tests/python/`).
pub fn script(name: &str) -> PathBuf {
    crate::workspace_root().join("tests/python").join(name)
}
