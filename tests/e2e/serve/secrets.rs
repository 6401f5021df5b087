//! `ctxhost serve` and secrets: none reaches the summarizer through the gateway, and a
//! credential in the upstream's URL is never printed nor sent to a client.

use ctxhost_tests::upstream::closed_port;
use ctxhost_tests::upstream::{completion, recorded_upstream, Answer, FakeUpstream};
use ctxhost_tests::{long_session, Sandbox};
use serde_json::json;

#[test]
fn no_secret_of_any_shape_reaches_the_summarizer_through_serve() {
    let summarizer = FakeUpstream::start(|_| {
        Answer::Json(
            200,
            completion(
                json!({"role": "assistant", "content": "## Goal\nFix the parser."}),
                None,
            ),
        )
    });
    let mut messages = long_session()[..110].to_vec();
    ctxhost_tests::secrets::plant(&mut messages);
    let model = recorded_upstream(&messages);
    let sandbox = Sandbox::new();
    sandbox.write_config(&format!(
        "model:\n  context_length: 8000\nauxiliary:\n  compression:\n    provider: custom\n    \
         model: s\n    base_url: {}\n    timeout: 30\n    max_retries: 0\n",
        summarizer.base_url()
    ));
    let gateway = sandbox.serve(&model.base_url(), &[]);
    // The whole history in one request: far over the window, it is compressed on the way.
    let last = messages
        .iter()
        .rposition(|m| m["role"] == "assistant")
        .unwrap();
    let response = reqwest::blocking::Client::new()
        .post(format!("{}/chat/completions", gateway.base_url()))
        .bearer_auth("sk-secrets")
        .header("x-ctxhost-session", "planted")
        .json(&json!({"model": "gpt-4o", "messages": &messages[..last]}))
        .send()
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(response.headers().get("x-ctxhost-compressed").is_some());
    let sent: String = summarizer
        .chat_requests()
        .iter()
        .map(|r| r.body.clone())
        .collect();
    ctxhost_tests::secrets::assert_none_in(&sent, "serve");
}

#[test]
fn a_password_in_the_upstream_url_is_never_printed_nor_sent_to_a_client() {
    let upstream = format!("http://user:secret@127.0.0.1:{}/v1", closed_port());
    let sandbox = Sandbox::new();
    sandbox.write_config(
        "auxiliary:\n  compression:\n    provider: custom\n    model: s\n    \
         base_url: http://bob:secret@127.0.0.1:9/v1\n",
    );
    let gateway = sandbox.serve(&upstream, &[]);
    let client = reqwest::blocking::Client::new();
    let chat = client
        .post(format!("{}/chat/completions", gateway.base_url()))
        .bearer_auth("sk-client")
        .json(&json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .unwrap();
    assert_eq!(chat.status(), 502);
    let chat = chat.text().unwrap();
    let models = client
        .get(format!("{}/models", gateway.base_url()))
        .bearer_auth("sk-client")
        .send()
        .unwrap();
    assert_eq!(models.status(), 502);
    let models = models.text().unwrap();
    let ready_line = gateway.ready_line.clone();
    let (_, log) = gateway.stop();
    // The URL is still named (masked), so the message stays useful.
    assert!(chat.contains("http://user:***@127.0.0.1:"), "{chat}");
    assert!(
        log.iter()
            .any(|line| line.contains("upstream: http://user:***@127.0.0.1:")),
        "{log:?}"
    );
    for text in [&ready_line, &chat, &models, &log.join("\n")] {
        assert!(!text.contains("secret"), "{text}");
    }
}
