//! Failure and abuse: a failing engine, a failing or silent upstream, a client that leaves, an
//! oversized body, an open address without tokens. Each handled, the history intact.

use std::io::Read;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use ctxhost_tests::per_wire;
use ctxhost_tests::upstream::{reply, Answer, FakeUpstream};
use ctxhost_tests::wire::{GatewayFailure, Wire};
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

per_wire! {
    fn a_failing_engine_sends_the_history_unchanged_and_says_so(wire: Wire) {
        let upstream = FakeUpstream::start(move |request| {
            wire.reply(request, &json!({"role": "assistant", "content": "ok"}), None)
        });
        let sandbox = Sandbox::new();
        sandbox.add_plugin("panicky", "ctxhost_fixture_panicky");
        // The compression runs on the request that needs it, so that request hears of the
        // panic (prepared in the background, it would fail after the answer went out).
        sandbox.write_config(
            "context:\n  engine: panicky\nserve:\n  compaction:\n    background: false\n",
        );
        let gateway = sandbox.serve(&upstream.base_url(), &[]);
        let mut messages = vec![
            json!({"role": "system", "content": "sys"}),
            json!({"role": "user", "content": "first"}),
        ];
        let body = wire.body(&messages, &[], false);
        let response = wire.send(&gateway, Some("sk-failures"), Some("failing"), &body);
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["x-ctxhost-engine"], "panicky");
        messages.push(wire.read(&response.text().unwrap(), false).message);
        messages.push(json!({"role": "user", "content": "second"}));
        // The engine said to compress after the first call; its compress panics.
        let body = wire.body(&messages, &[], false);
        let response = wire.send(&gateway, Some("sk-failures"), Some("failing"), &body);
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
        let sent = wire.requests(&upstream)[1].json();
        assert_eq!(wire.conversation(&sent), wire.conversation(&body));
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

    fn upstream_failures_and_timeouts_keep_the_history(wire: Wire) {
        let broke = wire.rate_limited("upstream broke");
        let answer = broke.clone();
        let calls = Arc::new(AtomicUsize::new(0));
        let seen = calls.clone();
        let upstream = FakeUpstream::start(move |request| match seen.fetch_add(1, Ordering::SeqCst) {
            0 => Answer::Json(500, answer.clone()),
            1 => Answer::Hang,
            _ => wire.reply(request, &json!({"role": "assistant", "content": "back"}), None),
        });
        let sandbox = Sandbox::new();
        sandbox.write_config("serve:\n  limits:\n    idle_timeout_seconds: 0.5\n");
        let gateway = sandbox.serve(&upstream.base_url(), &[]);
        let body = wire.body(&[json!({"role": "user", "content": "are you there?"})], &[], false);
        let failed = wire.send(&gateway, Some("sk-failures"), Some("failing"), &body);
        assert_eq!(failed.status(), 500);
        assert_eq!(failed.json::<Value>().unwrap(), broke);
        let timed_out = wire.send(&gateway, Some("sk-failures"), Some("failing"), &body);
        assert_eq!(timed_out.status(), 504);
        let error: Value = timed_out.json().unwrap();
        assert_eq!(
            wire.error_code(&error),
            wire.failure_code(GatewayFailure::UpstreamTimeout),
            "{error}"
        );
        assert!(
            upstream.wait_abandoned(),
            "the silent upstream call was dropped"
        );
        let back = wire.send(&gateway, Some("sk-failures"), Some("failing"), &body);
        assert_eq!(back.status(), 200);
        assert_eq!(wire.read(&back.text().unwrap(), false).message["content"], "back");
        let sent = wire.requests(&upstream)[2].json();
        assert_eq!(wire.conversation(&sent), wire.conversation(&body));
    }

    fn a_client_leaving_mid_stream_cancels_the_upstream_call(wire: Wire) {
        let upstream = FakeUpstream::start(move |_| {
            wire.stream_then_hang(
                &json!({"role": "assistant", "content": "the beginning of a long answer"}),
            )
        });
        let sandbox = Sandbox::new();
        let gateway = sandbox.serve(&upstream.base_url(), &[]);
        let messages = long_session()[..6].to_vec();
        let body = wire.body(&messages, &[], true);
        let mut response = wire.send(&gateway, Some("sk-failures"), Some("failing"), &body);
        assert_eq!(response.status(), 200);
        let mut buffer = [0u8; 64];
        let read = response.read(&mut buffer).unwrap();
        let start = String::from_utf8_lossy(&buffer[..read]).to_string();
        assert!(start.starts_with("data: ") || start.starts_with("event: "), "{start}");
        drop(response);
        assert!(upstream.wait_abandoned(), "the upstream stream was closed");
        // The session is intact: the same history continues.
        let state = wire.session(&gateway, "failing", Some("sk-failures"));
        assert_eq!(state["messages_seen"], 6);
    }

    fn a_gateway_that_wants_tokens_admits_only_a_client_with_one(wire: Wire) {
        let upstream = FakeUpstream::start(move |request| {
            wire.reply(request, &json!({"role": "assistant", "content": "hi"}), None)
        });
        let sandbox = Sandbox::new();
        sandbox.write_config("serve:\n  auth:\n    tokens_env: GATEWAY_TOKENS\n");
        let gateway = sandbox.serve_with_env(
            &upstream.base_url(),
            &[],
            &[("GATEWAY_TOKENS", "tok-one,tok-two")],
        );
        let body = wire.body(&[json!({"role": "user", "content": "hi"})], &[], false);
        let refused = wire.send(&gateway, Some("sk-provider-key"), None, &body);
        assert_eq!(refused.status(), 401);
        let error: Value = refused.json().unwrap();
        assert_eq!(
            wire.error_code(&error),
            wire.failure_code(GatewayFailure::Unauthorized),
            "{error}"
        );
        let admitted = wire
            .post(&gateway, Some("sk-provider-key"))
            .header("x-ctxhost-token", "tok-two")
            .json(&body)
            .send()
            .unwrap();
        assert_eq!(admitted.status(), 200);
        let sent = &wire.requests(&upstream)[0];
        assert_eq!(wire.credential_sent(sent).as_deref(), Some("sk-provider-key"));
        assert_eq!(
            sent.header("x-ctxhost-token"),
            None,
            "the gateway token stays here"
        );
    }

    fn clients_told_apart_by_gateway_tokens_never_see_each_others_sessions(wire: Wire) {
        let upstream = FakeUpstream::start(move |request| {
            wire.reply(request, &json!({"role": "assistant", "content": "noted"}), None)
        });
        let sandbox = Sandbox::new();
        // The gateway holds the provider key: clients present only their gateway token.
        sandbox.write_config(
            "serve:\n  upstream_key_env: UPSTREAM_KEY\n  auth:\n    tokens_env: GATEWAY_TOKENS\n",
        );
        let gateway = sandbox.serve_with_env(
            &upstream.base_url(),
            &[],
            &[("GATEWAY_TOKENS", "tok-one,tok-two"), ("UPSTREAM_KEY", "sk-upstream")],
        );
        let first = json!({"role": "user", "content": "the launch code is 7421"});
        let send = |token: &str, messages: &[Value]| {
            let response = wire
                .post(&gateway, None)
                .header("x-ctxhost-token", token)
                .json(&wire.body(messages, &[], false))
                .send()
                .unwrap();
            assert_eq!(response.status(), 200, "{token}");
            response.headers()["x-ctxhost-lineage"]
                .to_str()
                .unwrap()
                .to_string()
        };
        assert_eq!(send("tok-one", std::slice::from_ref(&first)), "first");
        let longer = [
            first.clone(),
            json!({"role": "assistant", "content": "noted"}),
            json!({"role": "user", "content": "what was the code?"}),
        ];
        // A history that starts like tok-one's is not tok-one's session for tok-two.
        assert_eq!(send("tok-two", &longer), "first");
        // tok-one's own next turn does continue its session.
        assert_eq!(send("tok-one", &longer), "continued");
        let listed = |token: &str| -> Value {
            reqwest::blocking::Client::new()
                .get(format!("{}/ctxhost/sessions", gateway.url))
                .header("x-ctxhost-token", token)
                .send()
                .unwrap()
                .json()
                .unwrap()
        };
        let (one, two) = (listed("tok-one"), listed("tok-two"));
        assert_eq!(one["sessions"].as_array().map(Vec::len), Some(1), "{one}");
        assert_eq!(two["sessions"].as_array().map(Vec::len), Some(1), "{two}");
    }
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
fn an_open_address_without_gateway_tokens_refuses_to_start() {
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
}
