//! What only Anthropic Messages has: the official SDK through the gateway, the gateway's cache
//! breakpoints, Claude Code's session header and errors in Anthropic's shape.

use std::process::Command;

use ctxhost_tests::anthropic_upstream::{message, reply};
use ctxhost_tests::gateway::GatewayProcess;
use ctxhost_tests::python::{python_with_sdks, script};
use ctxhost_tests::upstream::{Answer, FakeUpstream, Recorded};
use ctxhost_tests::wire::Wire;
use ctxhost_tests::Sandbox;
use serde_json::{json, Value};

const SIGNATURE: &str = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds";

/// The last message's tool results, if it carries any.
fn tool_results(messages: &[Value]) -> Vec<Value> {
    let last = messages.last().unwrap();
    last["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["type"] == "tool_result")
        .cloned()
        .collect()
}

/// The SDK test's model: thinks, speaks and calls `get_weather` when it has the tool and the
/// user just spoke; reports the tool's result with a citation; greets otherwise.
fn weather_model(request: &Recorded) -> Answer {
    if request.path.contains("count_tokens") {
        return Answer::Json(200, json!({"input_tokens": 42}));
    }
    let body = request.json();
    let messages = body["messages"].as_array().unwrap();
    let has_tool = body["tools"]
        .as_array()
        .is_some_and(|t| t.iter().any(|t| t["name"] == "get_weather"));
    let results = tool_results(messages);
    let content = if let Some(result) = results.first() {
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        json!([{"type": "text", "text": format!("Forecast: {text}"), "citations": [{
            "type": "char_location", "cited_text": "Paris is sunny.", "document_index": 0,
            "document_title": "Forecast", "start_char_index": 0, "end_char_index": 15}]}])
    } else if has_tool {
        json!([
            {"type": "thinking", "thinking": "The user wants the weather; I have a tool.",
             "signature": SIGNATURE},
            {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"},
            {"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": "toolu_paris", "name": "get_weather",
             "input": {"city": "Paris"}},
        ])
    } else {
        json!([{"type": "text", "text": "Hello from the upstream."}])
    };
    let usage = json!({"input_tokens": 30, "cache_read_input_tokens": 10,
                       "cache_creation_input_tokens": 5, "output_tokens": 7});
    reply(request, content, Some(usage))
}

#[test]
fn the_official_anthropic_sdk_parses_every_answer_and_the_upstream_gets_every_byte() {
    let python = python_with_sdks();
    let upstream = FakeUpstream::start(weather_model);
    let sandbox = Sandbox::new();
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let output = Command::new(python)
        .arg(script("anthropic_messages.py"))
        .arg(&gateway.url)
        .output()
        .expect("python runs");
    assert!(
        output.status.success(),
        "the client script failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let out: Value = serde_json::from_slice(&output.stdout).expect("the script prints JSON");
    assert_eq!(
        out["headers"],
        json!({"session": "py-anthropic-false", "engine": "compressor"})
    );
    for key in ["create", "stream"] {
        let conversation = &out[key];
        assert_eq!(
            conversation["first"],
            json!([
                {"type": "thinking", "thinking": "The user wants the weather; I have a tool.",
                 "signature": SIGNATURE},
                {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"},
                {"type": "text", "text": "Let me check.", "citations": 0},
                {"type": "tool_use", "id": "toolu_paris", "name": "get_weather",
                 "input": {"city": "Paris"}},
            ]),
            "{key}: {out}"
        );
        assert_eq!(conversation["first_stop"], "tool_use");
        assert_eq!(
            conversation["final"],
            json!([{"type": "text", "text": "Forecast: Paris: sunny", "citations": 1}]),
            "{key}"
        );
        assert_eq!(conversation["final_stop"], "end_turn");
    }
    // The text arrived in the upstream's pieces, as they came.
    assert_eq!(out["stream"]["texts"], json!(["Let me ", "check."]));
    assert_eq!(
        out["beta"],
        json!([{"type": "text", "text": "Hello from the upstream.", "citations": 0}])
    );
    assert_eq!(out["count_tokens"], 42);
    assert_eq!(out["bad_request"]["status"], 400);
    assert_eq!(out["bad_request"]["body"]["type"], "error");
    assert_eq!(
        out["bad_request"]["body"]["error"]["type"],
        "invalid_request_error"
    );

    // What reached the upstream is what the SDK sent, block for block and field for field.
    let requests = upstream.messages_requests();
    let sent = out["sent"].as_array().unwrap();
    assert_eq!(
        requests.len(),
        sent.len() + 1,
        "four turns and the beta call"
    );
    for (request, sent) in requests.iter().zip(sent) {
        let body = request.json();
        for key in ["system", "messages", "tools", "thinking"] {
            assert_eq!(body[key], sent[key], "{key} of {}", request.path);
        }
        assert_eq!(request.header("x-api-key"), Some("sk-ant-python"));
        assert!(request.header("anthropic-version").is_some());
        assert_eq!(request.header("anthropic-beta"), Some("test-beta-1"));
        assert!(request.header("x-ctxhost-session").is_none());
    }
    let beta = requests.last().unwrap();
    assert!(beta.path.ends_with("?beta=true"), "{}", beta.path);
    let counted = upstream
        .received()
        .into_iter()
        .find(|r| r.path.contains("count_tokens"))
        .unwrap();
    assert_eq!(
        counted.json()["messages"],
        json!([{"role": "user", "content": "Count me."}])
    );
    // Claude Code's session header names the session, scoped by the client's x-api-key.
    let session = gateway.anthropic_session("cc-session-1", "sk-ant-python");
    assert_eq!(session["requests"], 1);
    // The engine heard of the prompt as the provider counted it: input, cache reads and cache
    // writes together.
    let session = gateway.anthropic_session("py-anthropic-true", "sk-ant-python");
    assert_eq!(session["last_prompt_tokens"], 30 + 10 + 5);
    // Each conversation's second turn continued the lineage of its first.
    for id in ["py-anthropic-true", "py-anthropic-false"] {
        let session = gateway.anthropic_session(id, "sk-ant-python");
        assert_eq!(session["stats"]["new_lineages"], 0, "{id}: {session}");
    }
}

#[test]
fn the_gateway_marks_the_system_prompt_and_the_last_three_messages() {
    let upstream = FakeUpstream::start(|request| {
        reply(request, json!([{"type": "text", "text": "Noted."}]), None)
    });
    let sandbox = Sandbox::new();
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let wire = Wire::Messages;
    let mut messages = vec![json!({"role": "system", "content": "You keep numbers."})];
    for turn in 0..4 {
        messages.push(json!({"role": "user", "content": format!("Remember {turn}.")}));
        // The client set no breakpoints.
        let body = wire.body(&messages, &[], false);
        let response = wire.send(&gateway, Some("sk-marks"), Some("marked"), &body);
        assert_eq!(response.status(), 200);
        let sent = wire.requests(&upstream).last().unwrap().json();
        let turns = sent["messages"].as_array().unwrap().len();
        assert_eq!(breakpoints(&sent), 1 + turns.min(3), "turn {turn}: {sent}");
        assert!(breakpoints(&sent["system"]) == 1, "{sent}");
        messages.push(wire.read(&response.text().unwrap(), false).message);
    }
}

/// How many blocks carry a cache breakpoint.
fn breakpoints(value: &Value) -> usize {
    match value {
        Value::Object(fields) => {
            usize::from(fields.contains_key("cache_control"))
                + fields.values().map(breakpoints).sum::<usize>()
        }
        Value::Array(items) => items.iter().map(breakpoints).sum(),
        _ => 0,
    }
}

/// Posts `body` to `/v1/messages` as a Claude Code-like client; the status, the lineage header
/// and the body's text.
fn post_messages(gateway: &GatewayProcess, body: &Value) -> (u16, String, String) {
    let response = reqwest::blocking::Client::new()
        .post(format!("{}/messages?beta=true", gateway.base_url()))
        .header("x-api-key", "sk-ant-errors")
        .header("x-claude-code-session-id", "cc-errors")
        .json(body)
        .send()
        .unwrap();
    let status = response.status().as_u16();
    let lineage = response
        .headers()
        .get("x-ctxhost-lineage")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    (status, lineage, response.text().unwrap())
}

#[test]
fn errors_on_messages_come_in_anthropics_shape() {
    // A stream the provider breaks off with an error event.
    let upstream = FakeUpstream::start(|_| {
        Answer::Events(vec![
            (
                "message_start".into(),
                json!({"type": "message_start",
                "message": message(&json!([]), Some(json!({"input_tokens": 3, "output_tokens": 1})))}),
            ),
            (
                "error".into(),
                json!({"type": "error",
                "error": {"type": "overloaded_error", "message": "Overloaded"}}),
            ),
        ])
    });
    let sandbox = Sandbox::new();
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let user = |text: &str| json!([{"role": "user", "content": text}]);
    // The gateway's own: a turn Anthropic's API does not know.
    let (status, _, text) = post_messages(
        &gateway,
        &json!({"model": "claude-x", "messages": [{"role": "robot", "content": "hi"}]}),
    );
    assert_eq!(status, 400);
    assert!(text.contains("messages[0]: unknown role `robot`"), "{text}");
    // A gateway that wants a token (listed in the config) says so in the same shape.
    let guarded = Sandbox::new();
    guarded.write_config("serve:\n  auth:\n    tokens: [gateway-token]\n");
    let guarded = guarded.serve(&upstream.base_url(), &[]);
    let (status, _, text) = post_messages(
        &guarded,
        &json!({"model": "claude-x", "messages": user("hi")}),
    );
    assert_eq!(status, 401);
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["error"]["type"], "authentication_error", "{body}");
    // An error event mid-stream reaches the client as the provider sent it.
    let (status, _, text) = post_messages(
        &gateway,
        &json!({"model": "claude-x", "stream": true, "messages": user("hi")}),
    );
    assert_eq!(status, 200);
    assert!(
        text.contains(
            "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\""
        ),
        "{text}"
    );
}

#[test]
fn moving_cache_breakpoints_keeps_the_lineage() {
    let upstream = FakeUpstream::start(|request| {
        reply(request, json!([{"type": "text", "text": "ok"}]), None)
    });
    let sandbox = Sandbox::new();
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let cached = json!({"type": "ephemeral"});
    let text = |text: &str, cache: bool| {
        let mut block = json!({"type": "text", "text": text});
        if cache {
            block["cache_control"] = cached.clone();
        }
        json!([block])
    };
    // As Claude Code does: the breakpoint sits on the newest user message each turn.
    let first = json!([{"role": "user", "content": text("one", true)}]);
    let second = json!([
        {"role": "user", "content": text("one", false)},
        {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
        {"role": "user", "content": text("two", true)},
    ]);
    let (status, lineage, _) =
        post_messages(&gateway, &json!({"model": "claude-x", "messages": first}));
    assert_eq!((status, lineage.as_str()), (200, "first"));
    let (status, lineage, _) =
        post_messages(&gateway, &json!({"model": "claude-x", "messages": second}));
    assert_eq!((status, lineage.as_str()), (200, "continued"));
    // And each breakpoint went upstream where the client put it.
    let sent = upstream.messages_requests().last().unwrap().json();
    assert_eq!(sent["messages"], second);
}
