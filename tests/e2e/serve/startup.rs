//! What `ctxhost serve` checks before it listens: the state it owns, the upstream it points at,
//! the engine it names.

use ctxhost_tests::upstream::{reply, FakeUpstream};
use ctxhost_tests::{Run, Sandbox};
use serde_json::json;

/// `ctxhost serve ARGS` expected to refuse to start (it exits, so it can be waited for), with
/// one line on stderr; that line.
fn serve_refused(sandbox: &Sandbox, args: &[&str]) -> String {
    let mut all = vec!["serve"];
    if !args.contains(&"--listen") {
        all.extend(["--listen", "127.0.0.1:0"]);
    }
    all.extend_from_slice(args);
    let run: Run = sandbox.ctxhost(&all);
    assert_eq!(run.code, Some(1), "{}{}", run.stdout, run.stderr);
    let error = run.stderr.trim().to_string();
    assert_eq!(error.lines().count(), 1, "{error}");
    error
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
    let error = serve_refused(&sandbox, &["--upstream", &upstream.base_url()]);
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

#[test]
fn an_upstream_without_its_version_segment_is_refused_with_the_fix() {
    let sandbox = Sandbox::new();
    let error = serve_refused(&sandbox, &["--upstream", "https://api.anthropic.com"]);
    assert!(error.contains("has no version segment"), "{error}");
    assert!(
        error.ends_with("Use https://api.anthropic.com/v1"),
        "{error}"
    );
    let error = serve_refused(
        &sandbox,
        &["--upstream", "https://api.openai.com/v1/chat/completions"],
    );
    assert!(error.ends_with("Use https://api.openai.com/v1"), "{error}");
    // Another host without one starts, warned about after the ready lines.
    let upstream = echo();
    let bare = upstream.base_url().trim_end_matches("/v1").to_string();
    let gateway = sandbox.serve(&bare, &[]);
    let warning = gateway.wait_for_log("has no version segment");
    assert!(warning.contains(&format!("{bare}/v1")), "{warning}");
}

#[test]
fn an_upstream_that_is_the_gateway_itself_is_refused() {
    let sandbox = Sandbox::new();
    let port = ctxhost_tests::upstream::closed_port().to_string();
    for host in ["127.0.0.1", "localhost", "0.0.0.0"] {
        let listen = format!("127.0.0.1:{port}");
        let upstream = format!("http://{host}:{port}/v1");
        let error = serve_refused(&sandbox, &["--listen", &listen, "--upstream", &upstream]);
        assert!(error.contains("is this gateway itself"), "{error}");
    }
}

#[test]
fn a_configured_engine_that_cannot_run_fails_start_up_unless_the_fallback_is_allowed() {
    let upstream = echo();
    let sandbox = Sandbox::new();
    sandbox.write_config("context:\n  engine: lmc\n");
    let error = serve_refused(&sandbox, &["--upstream", &upstream.base_url()]);
    assert!(
        error.starts_with("error: context engine 'lmc' cannot run: context engine 'lmc' not found"),
        "{error}"
    );
    assert!(
        error.contains("serve.engine_fallback: compressor"),
        "{error}"
    );

    sandbox.write_config("context:\n  engine: lmc\nserve:\n  engine_fallback: compressor\n");
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let banner = gateway.wait_for_log("  engine: ");
    assert!(
        banner.contains("engine: compressor instead of lmc, which cannot run"),
        "{banner}"
    );
    let (status, health) = gateway.get_json("/healthz", None);
    assert_eq!(status, 200, "{health}");
    assert_eq!(health["status"], "degraded");
    assert_eq!(health["engine"], "compressor");
    assert_eq!(health["configured_engine"], "lmc");
    assert!(
        health["engine_error"]
            .as_str()
            .unwrap()
            .contains("not found"),
        "{health}"
    );
    let response = reqwest::blocking::Client::new()
        .post(format!("{}/chat/completions", gateway.base_url()))
        .bearer_auth("sk-client")
        .json(&json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-ctxhost-engine"], "compressor");
    let why = response.headers()["x-ctxhost-engine-error"]
        .to_str()
        .unwrap();
    assert!(why.contains("context engine 'lmc' not found"), "{why}");
}

/// The commands a message puts in backquotes, run as a user would copy them (`ctxhost` is the
/// binary under test); each must succeed.
fn run_quoted_commands(sandbox: &Sandbox, message: &str) -> Vec<String> {
    let commands: Vec<String> = message
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|quoted| quoted.starts_with("ctxhost "))
        .map(str::to_string)
        .collect();
    for command in &commands {
        let args: Vec<&str> = command.split_whitespace().skip(1).collect();
        let run = sandbox.ctxhost(&args);
        assert!(
            run.success(),
            "`{command}` fails: {}{}",
            run.stdout,
            run.stderr
        );
    }
    commands
}

/// A misspelt engine at start-up gets the near miss among the engines there are, installed or
/// shipped, and for a shipped engine not installed the command that installs it; every command
/// the message names works, and after it the engine meant serves.
#[test]
fn an_unknown_engine_names_the_near_miss_and_commands_that_work() {
    let upstream = echo();
    let sandbox = Sandbox::new();
    let error = serve_refused(
        &sandbox,
        &["--upstream", &upstream.base_url(), "--engine", "lcn"],
    );
    assert!(
        error.starts_with("error: context engine 'lcn' cannot run: context engine 'lcn' not found"),
        "{error}"
    );
    assert!(
        error.contains(
            "did you mean 'lcm'? (it ships with ctxhost but is not installed: `ctxhost plugins \
             install --shipped` installs it)"
        ),
        "{error}"
    );
    assert!(!error.contains("plugins doctor lcn"), "{error}");
    // `ctxhost run` says the same.
    let transcript = ctxhost_tests::corpus_dir().join("ctf__crypto__BabyEncryption.json");
    let run = sandbox.ctxhost(&["run", "--engine", "lcn", transcript.to_str().unwrap()]);
    assert!(!run.success());
    assert!(
        run.stderr.contains("did you mean 'lcm'?")
            && run.stderr.contains("`ctxhost plugins install --shipped`"),
        "{}",
        run.stderr
    );

    let commands = run_quoted_commands(&sandbox, &error);
    assert_eq!(
        commands,
        ["ctxhost plugins install --shipped", "ctxhost plugins list"]
    );
    let gateway = sandbox.serve(&upstream.base_url(), &["--engine", "lcm"]);
    let banner = gateway.wait_for_log("  engine: ");
    assert!(banner.starts_with("  engine: lcm; upstream: "), "{banner}");
}

/// `serve --engine` overrides `context.engine`, as `run`, `quality` and `tools` do.
#[test]
fn serve_engine_overrides_the_configured_engine() {
    let upstream = echo();
    let sandbox = Sandbox::new();
    sandbox.write_config("context:\n  engine: lmc\n");
    let gateway = sandbox.serve(&upstream.base_url(), &["--engine", "compressor"]);
    let banner = gateway.wait_for_log("  engine: ");
    assert!(
        banner.starts_with("  engine: compressor; upstream: "),
        "{banner}"
    );
    let (status, health) = gateway.get_json("/healthz", None);
    assert_eq!(status, 200, "{health}");
    assert_eq!(health["status"], "ok", "{health}");
    assert_eq!(health["engine"], "compressor", "{health}");
    let response = reqwest::blocking::Client::new()
        .post(format!("{}/chat/completions", gateway.base_url()))
        .bearer_auth("sk-client")
        .json(&json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-ctxhost-engine"], "compressor");
    let (stopped, _) = gateway.stop();
    assert!(stopped.success());
    // And an engine named there that does not exist stops the start as the configured one
    // would.
    sandbox.write_config("");
    let error = serve_refused(
        &sandbox,
        &["--upstream", &upstream.base_url(), "--engine", "lmc"],
    );
    assert!(
        error.starts_with("error: context engine 'lmc' cannot run: context engine 'lmc' not found"),
        "{error}"
    );
}

/// The banner: the address, the engine, then one line per wire saying how its clients are
/// pointed here (OpenAI clients with /v1, Anthropic clients without, Codex's provider).
#[test]
fn the_banner_says_how_the_clients_of_each_wire_point_here() {
    let upstream = echo();
    let sandbox = Sandbox::new();
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let url = &gateway.url;
    let openai = gateway.wait_for_log("OPENAI_BASE_URL=");
    assert!(
        openai.ends_with(&format!(": OPENAI_BASE_URL={url}/v1")),
        "{openai}"
    );
    let anthropic = gateway.wait_for_log("ANTHROPIC_BASE_URL=");
    assert!(
        anthropic.contains("Claude Code")
            && anthropic.ends_with(&format!(": ANTHROPIC_BASE_URL={url}, without /v1")),
        "{anthropic}"
    );
    let codex = gateway.wait_for_log("Codex");
    assert!(
        codex.contains("~/.codex/config.toml: model_provider = \"ctxhost\" and ")
            && codex.ends_with(&format!(
                "model_providers.ctxhost = {{ name = \"ctxhost\", base_url = \"{url}/v1\", \
                 env_key = \"OPENAI_API_KEY\", wire_api = \"responses\" }}"
            )),
        "{codex}"
    );
}
