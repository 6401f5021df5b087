//! The compressor with a real HTTP summarizer: a chat-completions server on 127.0.0.1 stands in
//! for the model provider.

use std::time::Duration;

use ctxhost_tests::fake_provider::{chat_reply, Reply, TestServer};
use ctxhost_tests::{corpus_dir, read_json, Sandbox};
use serde_json::Value;

const KEY_ENV: &str = "CTXHOST_E2E_SUMMARY_KEY";
const SECRET: &str = "sk-proj-PLANTEDSECRET0123456789abcdef";

/// `timeout` in seconds: generous where a test wants answers (CI machines can be slow), short
/// where it wants a timeout.
fn config(server: &TestServer, timeout: f64) -> String {
    format!(
        "model:\n  context_length: 8000\nauxiliary:\n  compression:\n    provider: custom\n    model: tiny-summarizer\n    base_url: {}\n    api_key_env: {KEY_ENV}\n    timeout: {timeout}\n    max_retries: 3\n",
        server.base_url()
    )
}

/// A corpus transcript with a secret planted in the middle.
fn transcript(sandbox: &Sandbox) -> String {
    let mut messages = read_json(&corpus_dir().join("ctf__web__i_got_id_demo.json"));
    let list = messages.as_array_mut().unwrap();
    list.insert(
        6,
        serde_json::json!({"role": "user", "content": format!("my key is {SECRET}, use it for the API")}),
    );
    list.insert(
        7,
        serde_json::json!({"role": "assistant", "content": "Noted; I will use it for the API."}),
    );
    sandbox
        .write_json("session.json", &messages)
        .display()
        .to_string()
}

fn summary_of(output: &Value) -> String {
    output
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .find(|c| c.starts_with("[CONTEXT SUMMARY"))
        .expect("a summary message")
        .to_string()
}

#[test]
fn the_request_carries_the_turns_without_secrets_and_the_summary_comes_back() {
    // Build first: the loopback server stops accepting after a deadline.
    ctxhost_tests::artifacts();
    let server = TestServer::start(vec![chat_reply(
        "## Goal\nFind the flag via the id endpoint. LOOPBACK-SUMMARY",
    )]);
    let sandbox = Sandbox::new();
    sandbox.write_config(&config(&server, 15.0));
    let path = transcript(&sandbox);
    let run = sandbox.ctxhost_with_env(
        &["compress", "--force", &path],
        &[(KEY_ENV, "test-key-123")],
    );
    assert!(run.success(), "{}", run.stderr);
    assert!(summary_of(&run.json()).contains("LOOPBACK-SUMMARY"));

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert!(
        request.path.ends_with("/chat/completions"),
        "{}",
        request.path
    );
    assert_eq!(request.header("authorization"), Some("Bearer test-key-123"));
    let body = request.json();
    assert_eq!(body["model"], "tiny-summarizer");
    let prompt = body.to_string();
    assert!(
        prompt.contains("I will use it for the API"),
        "the turns to summarize are in the prompt"
    );
    assert!(!prompt.contains(SECRET), "the planted secret never leaves");
    assert!(!run.stdout.contains(SECRET));
}

#[test]
fn rate_limits_and_server_errors_are_retried() {
    ctxhost_tests::artifacts();
    let server = TestServer::start(vec![
        Reply::json(429, serde_json::json!({"error": {"message": "slow down"}}))
            .header("Retry-After", "0"),
        Reply::json(500, serde_json::json!({"error": {"message": "oops"}})),
        chat_reply("## Goal\nAFTER-RETRIES"),
    ]);
    let sandbox = Sandbox::new();
    sandbox.write_config(&config(&server, 15.0));
    let path = transcript(&sandbox);
    let run = sandbox.ctxhost_with_env(&["compress", "--force", &path], &[(KEY_ENV, "k")]);
    assert!(run.success(), "{}", run.stderr);
    assert_eq!(server.requests().len(), 3, "{}", run.stderr);
    assert!(
        summary_of(&run.json()).contains("AFTER-RETRIES"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_timeout_or_a_garbage_answer_falls_back_to_the_deterministic_summary() {
    ctxhost_tests::artifacts();
    for script in [
        vec![chat_reply("late").after(Duration::from_secs(3)); 4],
        vec![Reply::text(200, "<html>not json</html>")],
    ] {
        let server = TestServer::start(script);
        let sandbox = Sandbox::new();
        sandbox.write_config(&config(&server, 0.5));
        let path = transcript(&sandbox);
        let run = sandbox.ctxhost_with_env(&["compress", "--force", &path], &[(KEY_ENV, "k")]);
        assert!(run.success(), "{}", run.stderr);
        let summary = summary_of(&run.json());
        assert!(
            summary.contains("## Goal"),
            "the deterministic handoff: {summary}"
        );
        assert!(!summary.contains("late"));
        assert!(!run.stdout.contains(SECRET));
        assert!(
            run.stderr.contains("summarizer failed"),
            "the fallback is reported: {}",
            run.stderr
        );
    }
}
