use ctxhost_tests::upstream::{reply, Answer, FakeUpstream};
use ctxhost_tests::Sandbox;
use serde_json::{json, Value};

fn client() -> reqwest::blocking::Client {
    reqwest::blocking::Client::new()
}

#[test]
fn relays_a_completion_and_names_the_session_and_engine() {
    let upstream = FakeUpstream::start(|request| {
        reply(
            request,
            json!({"role": "assistant", "content": "Paris."}),
            Some(json!({"prompt_tokens": 12, "completion_tokens": 2, "total_tokens": 14})),
        )
    });
    let sandbox = Sandbox::new();
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    assert!(gateway
        .ready_line
        .starts_with("ctxhost serve: listening on http://127.0.0.1:"));
    let body = json!({
        "model": "gpt-4o",
        "temperature": 0.25,
        "user": "u-1",
        "messages": [
            {"role": "system", "content": "Answer briefly."},
            {"role": "user", "content": [{"type": "text", "text": "Capital of France?"},
                                          {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}
        ]
    });
    let response = client()
        .post(format!("{}/chat/completions", gateway.base_url()))
        .bearer_auth("sk-client")
        .json(&body)
        .send()
        .unwrap();
    assert_eq!(response.status(), 200);
    let session = response.headers()["x-ctxhost-session"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(session.starts_with("auto-"), "{session}");
    assert_eq!(response.headers()["x-ctxhost-engine"], "compressor");
    let answer: Value = response.json().unwrap();
    assert_eq!(answer["choices"][0]["message"]["content"], "Paris.");
    assert_eq!(answer["usage"]["total_tokens"], 14);

    let sent = &upstream.chat_requests()[0];
    assert_eq!(sent.header("authorization"), Some("Bearer sk-client"));
    let sent_body = sent.json();
    // Every field the gateway does not need goes through untouched, multimodal parts included.
    assert_eq!(sent_body["temperature"], 0.25);
    assert_eq!(sent_body["user"], "u-1");
    assert_eq!(sent_body["messages"], body["messages"]);

    let health: Value = client()
        .get(format!("{}/healthz", gateway.url))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(health["status"], "ok");
    let metrics = client()
        .get(format!("{}/metrics", gateway.url))
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(
        metrics.contains("ctxhost_requests_total{route=\"/v1/chat/completions\",status=\"200\"} 1"),
        "{metrics}"
    );
    let missing = client()
        .get(format!("{}/api/tags", gateway.url))
        .send()
        .unwrap();
    assert_eq!(missing.status(), 404);
    let error: Value = missing.json().unwrap();
    assert_eq!(error["error"]["code"], "unknown_url");
    assert!(error["error"]["message"].is_string() && error["error"]["type"].is_string());

    let (status, log) = gateway.stop();
    assert!(status.success(), "{status:?} {log:?}");
    assert!(
        !log.iter()
            .any(|l| l.contains("Capital of France") || l.contains("sk-client")),
        "logs hold no bodies or keys: {log:?}"
    );
}

#[test]
fn upstream_errors_reach_the_client_with_their_status_and_body() {
    let upstream = FakeUpstream::start(|_| {
        Answer::Json(
            429,
            json!({"error": {"message": "slow down", "type": "rate_limit", "code": "rate_limit_exceeded"}}),
        )
    });
    let sandbox = Sandbox::new();
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    for stream in [false, true] {
        let response = client()
            .post(format!("{}/chat/completions", gateway.base_url()))
            .json(&json!({"model": "gpt-4o", "stream": stream,
                           "messages": [{"role": "user", "content": "hi"}]}))
            .send()
            .unwrap();
        assert_eq!(response.status(), 429);
        let body: Value = response.json().unwrap();
        assert_eq!(body["error"]["message"], "slow down");
    }
}
