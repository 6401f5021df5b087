//! The official SDKs as clients of the gateway.

use std::process::Command;

use ctxhost_tests::python::{python_with_sdks, script};
use ctxhost_tests::upstream::{reply, tool_call, FakeUpstream, Recorded};
use ctxhost_tests::Sandbox;
use serde_json::{json, Value};

/// The scripted model: asks for the weather in two cities at once when it has the tool and the
/// user just spoke; summarizes tool results; greets otherwise.
fn model(request: &Recorded) -> ctxhost_tests::upstream::Answer {
    let body = request.json();
    let messages = body["messages"].as_array().unwrap();
    let last = messages.last().unwrap();
    let has_tool = body["tools"]
        .as_array()
        .is_some_and(|t| t.iter().any(|t| t["function"]["name"] == "get_weather"));
    let usage = Some(json!({"prompt_tokens": 20, "completion_tokens": 4, "total_tokens": 24}));
    let message = if last["role"] == "tool" {
        let results: Vec<&str> = messages
            .iter()
            .filter(|m| m["role"] == "tool")
            .filter_map(|m| m["content"].as_str())
            .collect();
        json!({"role": "assistant", "content": format!("Forecast: {}", results.join("; "))})
    } else if has_tool {
        json!({"role": "assistant", "content": null, "tool_calls": [
            tool_call("call_paris", "get_weather", json!({"city": "Paris"})),
            tool_call("call_rome", "get_weather", json!({"city": "Rome"})),
        ]})
    } else {
        json!({"role": "assistant", "content": "Hello from the upstream, streamed or not."})
    };
    reply(request, message, usage)
}

#[test]
fn the_official_openai_sdk_parses_every_answer() {
    let python = python_with_sdks();
    let upstream = FakeUpstream::start(model);
    let sandbox = Sandbox::new();
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let output = Command::new(python)
        .arg(script("openai_chat.py"))
        .arg(gateway.base_url())
        .output()
        .expect("python runs");
    assert!(
        output.status.success(),
        "the client script failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let out: Value = serde_json::from_slice(&output.stdout).expect("the script prints JSON");
    assert_eq!(
        out["plain"],
        json!({"content": "Hello from the upstream, streamed or not.", "finish_reason": "stop",
               "usage": 24, "session": "py-plain", "engine": "compressor"})
    );
    assert_eq!(
        out["stream"],
        json!({"content": "Hello from the upstream, streamed or not.", "usage": 24,
               "finish_reason": "stop"})
    );
    for key in ["tools_streamed_false", "tools_streamed_true"] {
        let calls = out[key]["calls"].as_array().unwrap();
        assert_eq!(calls.len(), 2, "{key}: {out}");
        assert_eq!(calls[0]["id"], "call_paris");
        assert_eq!(calls[1]["name"], "get_weather");
        assert_eq!(out[key]["final"], "Forecast: Paris: sunny; Rome: sunny");
    }
    if !out["helper"].is_null() {
        assert_eq!(
            out["helper"],
            json!({"role": "assistant", "content": "Hello from the upstream, streamed or not."})
        );
    }
    assert_eq!(out["bad_request"]["status"], 400);
    // Streams asked upstream for usage even when the client did not.
    let streamed: Vec<Recorded> = upstream
        .chat_requests()
        .into_iter()
        .filter(Recorded::streams)
        .collect();
    assert!(streamed
        .iter()
        .all(|r| r.json()["stream_options"]["include_usage"] == true));
}
