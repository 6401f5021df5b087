//! Failure and abuse: a failing engine, a failing or silent upstream, a client that leaves, an
//! oversized body, an open address without tokens. Each handled, the history intact.

use std::io::Read;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use ctxhost_tests::upstream::{chunks, reply, Answer, FakeUpstream};
use ctxhost_tests::{binary, long_session, Sandbox};
use serde_json::{json, Value};

fn client() -> reqwest::blocking::Client {
    reqwest::blocking::Client::new()
}

fn post(base: &str, body: &Value) -> reqwest::blocking::Response {
    client()
        .post(format!("{base}/chat/completions"))
        .bearer_auth("sk-failures")
        .header("x-ctxhost-session", "failing")
        .json(body)
        .send()
        .unwrap()
}

#[test]
fn a_failing_engine_sends_the_history_unchanged_and_says_so() {
    let upstream = FakeUpstream::start(|request| {
        reply(request, json!({"role": "assistant", "content": "ok"}), None)
    });
    let sandbox = Sandbox::new();
    sandbox.add_plugin("panicky", "ctxhost_fixture_panicky");
    sandbox.write_config("context:\n  engine: panicky\n");
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let mut messages = vec![
        json!({"role": "system", "content": "sys"}),
        json!({"role": "user", "content": "first"}),
    ];
    let response = post(
        &gateway.base_url(),
        &json!({"model": "gpt-4o", "messages": messages}),
    );
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-ctxhost-engine"], "panicky");
    messages.push(json!({"role": "assistant", "content": "ok"}));
    messages.push(json!({"role": "user", "content": "second"}));
    // The engine said to compress after the first call; its compress panics.
    let response = post(
        &gateway.base_url(),
        &json!({"model": "gpt-4o", "messages": messages}),
    );
    assert_eq!(response.status(), 200);
    let error = response.headers()["x-ctxhost-engine-error"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        error.contains("panicky") && error.contains("panicked"),
        "{error}"
    );
    assert_eq!(response.headers()["x-ctxhost-engine"], "compressor");
    assert_eq!(upstream.chat_requests()[1].messages(), messages);
    let metrics = client()
        .get(format!("{}/metrics", gateway.url))
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(
        metrics.contains("ctxhost_engine_failures_total{engine=\"panicky\"} 1"),
        "{metrics}"
    );
    assert!(gateway.log().iter().any(|l| l.contains("deliberate panic")));
}

#[test]
fn upstream_failures_and_timeouts_keep_the_history() {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let upstream = FakeUpstream::start(move |request| match seen.fetch_add(1, Ordering::SeqCst) {
        0 => Answer::Json(
            500,
            json!({"error": {"message": "upstream broke", "type": "server_error"}}),
        ),
        1 => Answer::Hang,
        _ => reply(
            request,
            json!({"role": "assistant", "content": "back"}),
            None,
        ),
    });
    let sandbox = Sandbox::new();
    sandbox.write_config("serve:\n  limits:\n    idle_timeout_seconds: 0.5\n");
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let messages = json!([{"role": "user", "content": "are you there?"}]);
    let body = json!({"model": "gpt-4o", "messages": messages});
    let failed = post(&gateway.base_url(), &body);
    assert_eq!(failed.status(), 500);
    assert_eq!(
        failed.json::<Value>().unwrap()["error"]["message"],
        "upstream broke"
    );
    let timed_out = post(&gateway.base_url(), &body);
    assert_eq!(timed_out.status(), 504);
    assert_eq!(
        timed_out.json::<Value>().unwrap()["error"]["code"],
        "upstream_timeout"
    );
    assert!(
        upstream.wait_abandoned(),
        "the silent upstream call was dropped"
    );
    let back = post(&gateway.base_url(), &body);
    assert_eq!(back.status(), 200);
    assert_eq!(
        upstream.chat_requests()[2].messages(),
        messages.as_array().unwrap().clone()
    );
}

#[test]
fn a_client_leaving_mid_stream_cancels_the_upstream_call() {
    let first = chunks(
        &json!({"role": "assistant", "content": "the beginning of a long answer"}),
        None,
    );
    let upstream = FakeUpstream::start(move |_| Answer::StreamThenHang(first[..2].to_vec()));
    let sandbox = Sandbox::new();
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let messages = long_session()[..6].to_vec();
    let mut response = post(
        &gateway.base_url(),
        &json!({"model": "gpt-4o", "stream": true, "messages": messages}),
    );
    assert_eq!(response.status(), 200);
    let mut buffer = [0u8; 64];
    let read = response.read(&mut buffer).unwrap();
    assert!(String::from_utf8_lossy(&buffer[..read]).starts_with("data: "));
    drop(response);
    assert!(upstream.wait_abandoned(), "the upstream stream was closed");
    // The session is intact: the same history continues.
    let state: Value = gateway.session("failing", Some("sk-failures"));
    assert_eq!(state["messages_seen"], 6);
}

#[test]
fn an_oversized_body_gets_413_and_changes_nothing() {
    let upstream = FakeUpstream::start(|request| {
        reply(
            request,
            json!({"role": "assistant", "content": "fine"}),
            None,
        )
    });
    let sandbox = Sandbox::new();
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let huge = "x".repeat(50 * 1024 * 1024);
    let response = post(
        &gateway.base_url(),
        &json!({"model": "gpt-4o", "messages": [{"role": "user", "content": huge}]}),
    );
    assert_eq!(response.status(), 413);
    let error: Value = response.json().unwrap();
    assert_eq!(error["error"]["code"], "request_too_large");
    assert!(upstream.chat_requests().is_empty());
    // Sent without a length (chunked), the body is found too large as it arrives.
    let body = json!({"model": "gpt-4o", "messages": [{"role": "user", "content": huge}]});
    let response = client()
        .post(format!("{}/chat/completions", gateway.base_url()))
        .bearer_auth("sk-failures")
        .header("content-type", "application/json")
        .body(reqwest::blocking::Body::new(std::io::Cursor::new(
            body.to_string().into_bytes(),
        )))
        .send()
        .unwrap();
    assert_eq!(response.status(), 413);
    assert!(upstream.chat_requests().is_empty());
    let fine = post(
        &gateway.base_url(),
        &json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "small"}]}),
    );
    assert_eq!(fine.status(), 200);
}

#[test]
fn an_open_address_needs_gateway_tokens() {
    let sandbox = Sandbox::new();
    let output = std::process::Command::new(binary())
        .current_dir(sandbox.path())
        .env("CTXHOST_HOME", sandbox.home())
        .args(["serve", "--listen", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("serve.auth.tokens_env"), "{stderr}");

    let upstream = FakeUpstream::start(|request| {
        reply(request, json!({"role": "assistant", "content": "hi"}), None)
    });
    sandbox.write_config("serve:\n  auth:\n    tokens_env: GATEWAY_TOKENS\n");
    let gateway = sandbox.serve_with_env(
        &upstream.base_url(),
        &[],
        &[("GATEWAY_TOKENS", "tok-one,tok-two")],
    );
    let body = json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]});
    let refused = post(&gateway.base_url(), &body);
    assert_eq!(refused.status(), 401);
    let admitted = client()
        .post(format!("{}/chat/completions", gateway.base_url()))
        .bearer_auth("sk-provider-key")
        .header("x-ctxhost-token", "tok-two")
        .json(&body)
        .send()
        .unwrap();
    assert_eq!(admitted.status(), 200);
    let sent = &upstream.chat_requests()[0];
    assert_eq!(sent.header("authorization"), Some("Bearer sk-provider-key"));
    assert_eq!(
        sent.header("x-ctxhost-token"),
        None,
        "the gateway token stays here"
    );
}
