//! A recorded session driven through the gateway turn by turn, as an agent sends it: the whole
//! history every time. The gateway must compress where `ctxhost run` does for the same session.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use ctxhost_tests::upstream::{completion, Answer, FakeUpstream};
use ctxhost_tests::{workspace_root, Sandbox};
use serde_json::{json, Value};

#[test]
fn a_recorded_session_compresses_where_ctxhost_run_says() {
    let transcript: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string(workspace_root().join("examples/session.json")).unwrap(),
    )
    .unwrap();
    let sandbox = Sandbox::new();
    sandbox.write(
        "config.yaml",
        &std::fs::read_to_string(workspace_root().join("config.yaml")).unwrap(),
    );
    // As `ctxhost run` does: each compression on the request that needs it.
    let set = sandbox.ctxhost(&["config", "set", "serve.compaction.background", "false"]);
    assert!(set.success(), "{}", set.stderr);
    sandbox.write_json("session.json", &Value::Array(transcript.clone()));
    let run = sandbox.ctxhost(&["run", "session.json", "--json"]);
    assert!(run.success(), "{}", run.stderr);
    let report = run.json()["runs"][0].clone();

    // The model answers each call with the transcript's next assistant message.
    let replies: VecDeque<Value> = transcript
        .iter()
        .filter(|m| m["role"] == "assistant")
        .cloned()
        .collect();
    let replies = Arc::new(Mutex::new(replies));
    let script = replies.clone();
    let upstream = FakeUpstream::start(move |_| {
        let message = script
            .lock()
            .unwrap()
            .pop_front()
            .expect("a scripted reply");
        Answer::Json(200, completion(message, None))
    });
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let client = reqwest::blocking::Client::new();
    for (index, message) in transcript.iter().enumerate() {
        if message["role"] != "assistant" {
            continue;
        }
        let response = client
            .post(format!("{}/chat/completions", gateway.base_url()))
            .bearer_auth("sk-replay")
            .header("x-ctxhost-session", "replayed")
            .json(&json!({"model": "gpt-4o", "messages": transcript[..index]}))
            .send()
            .unwrap();
        assert_eq!(response.status(), 200, "{:?}", response.text());
        let answer: Value = response.json().unwrap();
        assert_eq!(
            answer["choices"][0]["message"]["content"],
            message["content"]
        );
    }
    let session: Value = gateway.session("replayed", Some("sk-replay"));

    let calls = report["calls"].as_array().unwrap();
    assert_eq!(session["stats"]["upstream_calls"], json!(calls.len()));
    let expected: Vec<Value> = report["compressions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| json!([c["call"], c["tokens_before"], c["tokens_after"]]))
        .collect();
    let seen: Vec<Value> = session["compressions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| json!([c["request"], c["tokens_before"], c["tokens_after"]]))
        .collect();
    assert!(
        !expected.is_empty(),
        "the session is long enough to compress"
    );
    assert_eq!(seen, expected);
    // The upstream never got more than the window, and what went in and out adds up.
    assert!(session["stats"]["peak_prompt_tokens"].as_u64().unwrap() <= 128_000);
    assert_eq!(
        session["stats"]["peak_prompt_tokens"],
        report["peak_tokens"]
    );
    assert_eq!(session["tokens_sent"], report["total_input_tokens"]);
    assert_eq!(
        session["tokens_received"],
        report["total_input_tokens_no_engine"]
    );
    let sent: u64 = upstream
        .chat_requests()
        .iter()
        .map(|r| r.messages().len() as u64)
        .max()
        .unwrap();
    assert!(sent < transcript.len() as u64);
}
