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

use serde_json::Value;

use crate::gateway::GatewayProcess;
use crate::Run;

/// How long one agent run may take before the test fails: a guard against a hung agent, far
/// above what a run needs.
const RUN_GUARD: Duration = Duration::from_secs(600);

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

/// The gateway's sessions of the client that sends `header: value` (`/ctxhost/sessions`).
pub fn sessions(gateway: &GatewayProcess, header: &str, value: &str) -> Vec<Value> {
    let response = reqwest::blocking::Client::new()
        .get(format!("{}/ctxhost/sessions", gateway.url))
        .header(header, value)
        .send()
        .expect("the gateway answers");
    assert_eq!(response.status().as_u16(), 200);
    let body: Value = response.json().expect("a JSON body");
    body["sessions"].as_array().cloned().unwrap_or_default()
}

/// One session of the client that sends `header: value`, with its stats and compressions
/// (`/ctxhost/sessions/{id}`).
pub fn session(gateway: &GatewayProcess, id: &str, header: &str, value: &str) -> Value {
    let response = reqwest::blocking::Client::new()
        .get(format!("{}/ctxhost/sessions/{id}", gateway.url))
        .header(header, value)
        .send()
        .expect("the gateway answers");
    let status = response.status().as_u16();
    let body: Value = response.json().expect("a JSON body");
    assert_eq!(status, 200, "{body}");
    body
}
