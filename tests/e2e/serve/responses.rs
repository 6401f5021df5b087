//! What only `POST /v1/responses` (the OpenAI Responses API, stateless) has: the official SDK
//! through the gateway, Codex's session header, and requests relying on server-side state
//! passed through.

use std::process::Command;

use ctxhost_tests::python::{python_with_sdks, script};
use ctxhost_tests::responses_upstream::{events, function_call, message_item, reply, response};
use ctxhost_tests::upstream::{Answer, FakeUpstream, Recorded};
use ctxhost_tests::wire::Wire;
use ctxhost_tests::Sandbox;
use serde_json::{json, Value};

/// The input's items (a string input is one user turn).
fn items_of(body: &Value) -> Vec<Value> {
    match &body["input"] {
        Value::String(text) => vec![json!({"role": "user", "content": text})],
        Value::Array(items) => items.clone(),
        _ => Vec::new(),
    }
}

/// The SDK test's model: reasons then calls `get_weather` for two cities when it has the tool
/// and the user just spoke; reports the tools' outputs; greets otherwise.
fn weather_model(request: &Recorded) -> Answer {
    let body = request.json();
    let items = items_of(&body);
    let has_tool = body["tools"]
        .as_array()
        .is_some_and(|t| t.iter().any(|t| t["name"] == "get_weather"));
    let outputs: Vec<&str> = items
        .iter()
        .filter(|i| i["type"] == "function_call_output")
        .filter_map(|i| i["output"].as_str())
        .collect();
    let output = if !outputs.is_empty() {
        json!([message_item(
            "msg_2",
            &format!("Forecast: {}", outputs.join("; "))
        )])
    } else if has_tool {
        json!([
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text",
             "text": "Two cities."}], "encrypted_content": "enc-weather"},
            function_call("call_paris", "get_weather", json!({"city": "Paris"})),
            function_call("call_rome", "get_weather", json!({"city": "Rome"})),
        ])
    } else {
        json!([message_item(
            "msg_1",
            "Hello from the upstream, streamed or not."
        )])
    };
    let usage = json!({"input_tokens": 30, "input_tokens_details": {"cached_tokens": 10},
                       "output_tokens": 7, "output_tokens_details": {"reasoning_tokens": 2},
                       "total_tokens": 37});
    reply(request, output, Some(usage))
}

#[test]
fn the_official_openai_sdk_parses_every_response_and_the_upstream_gets_what_it_sent() {
    let python = python_with_sdks();
    let upstream = FakeUpstream::start(weather_model);
    let sandbox = Sandbox::new();
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let output = Command::new(python)
        .arg(script("openai_responses.py"))
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
        json!({"text": "Hello from the upstream, streamed or not.", "usage": 37, "cached": 10,
               "session": "py-responses-plain", "engine": "compressor"})
    );
    assert_eq!(
        out["stream"]["text"],
        "Hello from the upstream, streamed or not."
    );
    assert_eq!(out["stream"]["final_text"], out["stream"]["text"]);
    assert_eq!(out["stream"]["usage"], 37);
    let types: Vec<&str> = out["stream"]["types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(types.first(), Some(&"response.created"));
    assert_eq!(types.last(), Some(&"response.completed"));
    assert!(types.contains(&"response.output_item.done"));
    for key in ["tools_streamed_false", "tools_streamed_true"] {
        assert_eq!(
            out[key]["calls"],
            json!([
                {"call_id": "call_paris", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"},
                {"call_id": "call_rome", "name": "get_weather", "arguments": "{\"city\":\"Rome\"}"},
            ]),
            "{key}: {out}"
        );
        assert_eq!(
            out[key]["kinds"],
            json!(["reasoning", "function_call", "function_call"])
        );
        assert_eq!(out[key]["final"], "Forecast: Paris: sunny; Rome: sunny");
    }
    assert_eq!(out["bad_request"]["status"], 400, "{out}");
    assert_eq!(
        out["bad_request"]["body"]["type"], "invalid_request_error",
        "{out}"
    );
    // Nothing was compressed: every body the SDK sent reached the upstream as it was sent, with
    // the session's `prompt_cache_key` added (the SDK sent none).
    let sent = out["sent"].as_array().unwrap();
    let received: Vec<Value> = upstream
        .responses_requests()
        .iter()
        .map(Recorded::json)
        .collect();
    assert_eq!(received.len(), sent.len() - 1, "all but the bad request");
    for (got, expected) in received.iter().zip(sent) {
        let mut got = got.clone();
        let key = got
            .as_object_mut()
            .unwrap()
            .shift_remove("prompt_cache_key");
        assert!(
            key.as_ref()
                .and_then(Value::as_str)
                .is_some_and(|k| k.starts_with("ctxhost-")),
            "{key:?}"
        );
        assert!(expected.get("prompt_cache_key").is_none());
        assert_eq!(&got, expected);
    }
    // The last request carried the reasoning item back with its calls and their outputs.
    let last = received.last().unwrap();
    assert_eq!(last["input"][1]["encrypted_content"], "enc-weather");
    assert_eq!(last["input"][4]["type"], "function_call_output");
}

#[test]
fn codexs_session_id_header_names_the_session() {
    let upstream =
        FakeUpstream::start(|request| reply(request, json!([message_item("msg_ok", "ok")]), None));
    let sandbox = Sandbox::new();
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let wire = Wire::Responses;
    let mut messages = vec![json!({"role": "user", "content": "hi"})];
    for lineage in ["first", "continued"] {
        let response = wire
            .post(&gateway, Some("sk-codex"))
            .header("session-id", "codex-1")
            .json(&wire.body(&messages, &[], false))
            .send()
            .unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["x-ctxhost-session"], "codex-1");
        assert_eq!(response.headers()["x-ctxhost-lineage"], lineage);
        messages.push(wire.read(&response.text().unwrap(), false).message);
        messages.push(json!({"role": "user", "content": "again"}));
    }
    let session = wire.session(&gateway, "codex-1", Some("sk-codex"));
    assert_eq!(session["requests"], 2, "{session}");
}

#[test]
fn a_request_relying_on_stored_state_is_passed_through_unmanaged() {
    let upstream = FakeUpstream::start(|request| {
        let output = json!([message_item("msg_prev", "I remember.")]);
        if request.json()["stream"] == true {
            Answer::Events(events(&output, None))
        } else {
            Answer::Json(200, response(&output, None))
        }
    });
    let sandbox = Sandbox::new();
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let client = reqwest::blocking::Client::new();
    for (stream, store) in [(false, true), (true, false)] {
        let body = format!(
            r#"{{"model":"gpt-4o", "previous_response_id":"resp_earlier","input":[{{"role":"user","content":"And then?"}}],"store":{store},"stream":{stream}}}"#
        );
        let before = upstream.responses_requests().len();
        let response = client
            .post(format!("{}/responses", gateway.base_url()))
            .bearer_auth("sk-state")
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["x-ctxhost-context"], "unmanaged");
        assert!(response.headers().get("x-ctxhost-session").is_none());
        let text = response.text().unwrap();
        assert!(text.contains("I remember."), "{text}");
        let sent = &upstream.responses_requests()[before..];
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].body, body, "passed through byte for byte");
    }
    // No session was opened for them.
    let sessions: Value = client
        .get(format!("{}/ctxhost/sessions", gateway.url))
        .bearer_auth("sk-state")
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert!(!sessions.to_string().contains("auto-"), "{sessions}");
}
