//! The `ctxhost` command inside the Python package: the package's `ctxhost` script runs the
//! command's own code ([`ctxhost::main_with_args`]), and says where the package keeps what the
//! command would otherwise find beside its binary.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::OnceLock;

use pyo3::prelude::*;

/// The package's `ctxhost` script, which isolated engines run in (see [`embed`]).
static SCRIPT: OnceLock<PathBuf> = OnceLock::new();

/// The script child processes are started from, when the package found it.
pub fn script() -> Option<PathBuf> {
    SCRIPT.get().cloned()
}

/// Called once by the package when it is imported: `libraries`, the package's directory of
/// the shipped engines' libraries (what `ctxhost plugins install --shipped` installs, and what
/// a binary finds beside itself); `script`, the package's `ctxhost` script when it is
/// installed, which runs isolated engines (a Python interpreter cannot).
#[pyfunction]
#[pyo3(signature = (libraries, script=None))]
pub fn embed(libraries: PathBuf, script: Option<PathBuf>) {
    ctxhost_config::home::set_executable_dir(libraries);
    if let Some(script) = script {
        let _ = SCRIPT.set(script);
    }
}

/// Runs the `ctxhost` command line `args` (the script's path first, as `sys.argv`), with the
/// interpreter's lock released, and returns its exit status. `program` is the script itself,
/// which child processes run.
#[pyfunction]
pub fn run_command(py: Python<'_>, args: Vec<OsString>, program: PathBuf) -> u8 {
    let code = py.detach(move || ctxhost::main_with_args(args, Some(program)));
    exit_status(code)
}

/// The number behind an exit code (std keeps it opaque; the command uses 0 to 3).
fn exit_status(code: ExitCode) -> u8 {
    (0..=u8::MAX)
        .find(|n| ExitCode::from(*n) == code)
        .unwrap_or(1)
}
