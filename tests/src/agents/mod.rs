//! Real agents as clients of the gateway: their pinned releases installed by the suite
//! ([`install`]), the scripted model they talk to ([`script`]), and one module per agent that
//! configures it in a temporary home, runs it non-interactively and reads its wire for the
//! script ([`codex`], [`claude_code`], [`hermes`]).

pub mod claude_code;
pub mod codex;
pub mod hermes;
pub mod install;
pub mod script;

use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::Run;

/// How long one agent run may take before the test fails: a guard against a hung agent, far
/// above what a run needs.
const RUN_GUARD: Duration = Duration::from_secs(600);

/// The home and working directory of one agent session, both temporary (the agent's own
/// configuration and history stay out of the machine's).
pub struct AgentDirs {
    pub home: tempfile::TempDir,
    pub work: tempfile::TempDir,
}

impl Default for AgentDirs {
    fn default() -> Self {
        AgentDirs {
            home: tempfile::tempdir().expect("a temporary home for the agent"),
            work: tempfile::tempdir().expect("a temporary working directory"),
        }
    }
}

/// Runs `command` (stdin closed) to its end and returns its outcome; kills it and panics if it
/// outlives [`RUN_GUARD`].
pub fn run_guarded(mut command: Command, what: &str) -> Run {
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{what} does not start: {e}"));
    let pid = child.id();
    let (done, outcome) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(child.wait_with_output());
    });
    match outcome.recv_timeout(RUN_GUARD) {
        Ok(output) => {
            Run::from(output.unwrap_or_else(|e| panic!("{what} could not be waited for: {e}")))
        }
        Err(_) => {
            #[cfg(unix)]
            // SAFETY: kill(2) on our own child's pid, which has not been reaped (its waiter
            // has not returned).
            unsafe {
                libc::kill(pid as i32, libc::SIGKILL);
            }
            panic!("{what} was still running after {RUN_GUARD:?}: killed");
        }
    }
}
