//! Routes the gateway does not manage: the provider's other `/v1/*` endpoints relayed
//! untouched, a wrong method answered in JSON, a base-URL mistake named in the 404.

use ctxhost_tests::upstream::{Answer, FakeUpstream};
use ctxhost_tests::Sandbox;
use serde_json::{json, Value};

fn client() -> reqwest::blocking::Client {
    reqwest::blocking::Client::new()
}

#[test]
fn other_v1_routes_reach_the_provider_untouched() {
    let upstream = FakeUpstream::start(|request| match request.path.as_str() {
        "/v1/embeddings" => Answer::Json(
            200,
            json!({"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": [0.5, -0.25]}]}),
        ),
        "/v1/models/gpt-4o?detail=1" => {
            Answer::Json(200, json!({"id": "gpt-4o", "object": "model"}))
        }
        _ => Answer::Json(404, json!({"error": {"message": "no such thing"}})),
    });
    let sandbox = Sandbox::new();
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let body = json!({"model": "text-embedding-3-small", "input": "the quick brown fox"});
    let response = client()
        .post(format!("{}/embeddings", gateway.base_url()))
        .bearer_auth("sk-client")
        .json(&body)
        .send()
        .unwrap();
    assert_eq!(response.status(), 200);
    let answer: Value = response.json().unwrap();
    assert_eq!(answer["data"][0]["embedding"], json!([0.5, -0.25]));
    let sent = &upstream.received()[0];
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.path, "/v1/embeddings");
    assert_eq!(sent.json(), body);
    assert_eq!(sent.header("authorization"), Some("Bearer sk-client"));
    assert_eq!(sent.header("content-type"), Some("application/json"));

    let response = client()
        .get(format!("{}/models/gpt-4o?detail=1", gateway.base_url()))
        .bearer_auth("sk-client")
        .send()
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.json::<Value>().unwrap()["id"], "gpt-4o");
    // The provider's own answers come back as they are, errors included.
    let response = client()
        .delete(format!("{}/files/file-1", gateway.base_url()))
        .bearer_auth("sk-client")
        .send()
        .unwrap();
    assert_eq!(response.status(), 404);
    assert_eq!(
        response.json::<Value>().unwrap()["error"]["message"],
        "no such thing"
    );
    assert_eq!(upstream.received()[2].method, "DELETE");
    assert_eq!(upstream.received()[2].path, "/v1/files/file-1");
}

#[test]
fn a_wrong_method_gets_json_405_and_a_base_url_mistake_is_named() {
    let upstream = FakeUpstream::start(|_| Answer::Json(500, json!({})));
    let sandbox = Sandbox::new();
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let response = client()
        .get(format!("{}/chat/completions", gateway.base_url()))
        .send()
        .unwrap();
    assert_eq!(response.status(), 405);
    assert_eq!(response.headers()["allow"], "POST");
    let error: Value = response.json().unwrap();
    assert_eq!(error["error"]["code"], "method_not_allowed");
    let response = client()
        .get(format!("{}/messages", gateway.base_url()))
        .send()
        .unwrap();
    assert_eq!(response.status(), 405);
    assert_eq!(response.json::<Value>().unwrap()["type"], "error");

    // A client whose base URL lacks /v1, and one whose base URL has it twice.
    let response = client()
        .post(format!("{}/chat/completions", gateway.url))
        .json(&json!({}))
        .send()
        .unwrap();
    assert_eq!(response.status(), 404);
    let message = response.json::<Value>().unwrap()["error"]["message"].to_string();
    assert!(
        message.contains("base URL lacks the /v1 segment")
            && message.contains("OPENAI_BASE_URL=http://HOST:PORT/v1"),
        "{message}"
    );
    // Codex is told its own setup, not an environment variable it does not read.
    let response = client()
        .post(format!("{}/responses", gateway.url))
        .json(&json!({}))
        .send()
        .unwrap();
    assert_eq!(response.status(), 404);
    let message = response.json::<Value>().unwrap()["error"]["message"].to_string();
    assert!(
        message.contains("base URL lacks the /v1 segment")
            && message.contains("Codex")
            && message.contains("base_url = \\\"http://HOST:PORT/v1\\\"")
            && !message.contains("OPENAI_BASE_URL"),
        "{message}"
    );
    let response = client()
        .post(format!("{}/v1/messages", gateway.base_url()))
        .json(&json!({}))
        .send()
        .unwrap();
    assert_eq!(response.status(), 404);
    let error: Value = response.json().unwrap();
    assert_eq!(error["type"], "error");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("ends in /v1 and the client adds another")
            && message.contains("ANTHROPIC_BASE_URL=http://HOST:PORT, without /v1"),
        "{message}"
    );
    assert!(upstream.received().is_empty());
}
