//! What `ctxhost serve` checks before it listens: the state it owns, the upstream it points at,
//! the engine it names.

use ctxhost_tests::upstream::{reply, FakeUpstream};
use ctxhost_tests::{Run, Sandbox};
use serde_json::json;

/// `ctxhost serve` expected to refuse to start (it exits, so it can be waited for).
fn serve_refused(sandbox: &Sandbox, args: &[&str]) -> Run {
    let mut all = vec!["serve", "--listen", "127.0.0.1:0"];
    all.extend_from_slice(args);
    let run = sandbox.ctxhost(&all);
    assert_eq!(run.code, Some(1), "{}{}", run.stdout, run.stderr);
    run
}

fn echo() -> FakeUpstream {
    FakeUpstream::start(|request| {
        reply(request, json!({"role": "assistant", "content": "ok"}), None)
    })
}

#[test]
fn a_second_gateway_on_one_sqlite_state_refuses_to_start() {
    let upstream = echo();
    let sandbox = Sandbox::new();
    let first = sandbox.serve(&upstream.base_url(), &[]);
    let run = serve_refused(&sandbox, &["--upstream", &upstream.base_url()]);
    let error = run.stderr.trim();
    assert_eq!(error.lines().count(), 1, "{error}");
    assert!(
        error.contains(&format!("another ctxhost serve (pid {})", first.pid())),
        "{error}"
    );
    assert!(error.contains("postgres://"), "{error}");
    // The first one goes on serving; once it stops, the state is free again.
    let (status, _) = first.get_json("/healthz", None);
    assert_eq!(status, 200);
    let (stopped, _) = first.stop();
    assert!(stopped.success());
    let again = sandbox.serve(&upstream.base_url(), &[]);
    assert_eq!(again.get_json("/healthz", None).0, 200);
}
