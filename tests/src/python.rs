//! A Python interpreter with the official `openai` and `anthropic` SDKs, for tests that drive
//! the gateway with real clients. The suite makes it itself: a virtualenv under the cargo
//! target directory, created once (under a lock, so parallel tests share it) with packages from
//! PyPI. `CTXHOST_TEST_PYTHON` names an interpreter that already has both instead.

use std::fs::File;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use crate::target_dir;

/// The SDK versions the suite installs.
const PACKAGES: &[&str] = &["openai>=1.40,<3", "anthropic>=0.40,<1"];

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
                PACKAGES,
                "the gateway's client tests (or set CTXHOST_TEST_PYTHON to an interpreter \
                 that has the openai and anthropic packages)",
            )
        })
        .clone()
}

/// A virtualenv under the target directory named `name` holding `packages` (created or
/// refreshed when the list changed, under a lock so parallel callers share it); returns its
/// `bin/python`. `purpose` names who needs it in the message a machine without Python gets.
pub fn virtualenv(name: &str, packages: &[&str], purpose: &str) -> PathBuf {
    let dir = target_dir().join(name);
    std::fs::create_dir_all(&dir).expect("the target directory is writable");
    let lock = File::create(dir.with_extension("lock")).expect("a lock file");
    lock.lock().expect("lock the virtualenv");
    let python = dir.join("bin/python");
    let stamp = dir.join("ctxhost-packages");
    let wanted = packages.join(" ");
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
            .args(packages)
            .status();
        assert!(
            installed.as_ref().is_ok_and(|s| s.success()),
            "cannot install {wanted} from PyPI into {} ({installed:?}): {purpose} need them; \
             check that PyPI is reachable",
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
