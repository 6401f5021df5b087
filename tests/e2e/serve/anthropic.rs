//! Anthropic Messages through the gateway: the official SDK, a recorded session turn by turn,
//! and the engine's tools answered over `/v1/messages`, streamed or not.

use std::collections::VecDeque;
use std::process::Command;
use std::sync::{Arc, Mutex};

use ctxhost_tests::anthropic_upstream::{assistant_blocks, from_openai, message, reply};
use ctxhost_tests::gateway::GatewayProcess;
use ctxhost_tests::python::{python_with_sdks, script};
use ctxhost_tests::upstream::{completion, Answer, FakeUpstream, Recorded};
use ctxhost_tests::{long_session, workspace_root, Sandbox};
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
fn a_recorded_session_compresses_over_messages_where_it_does_over_chat_completions() {
    let mut transcript: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string(workspace_root().join("examples/session.json")).unwrap(),
    )
    .unwrap();
    // Tool arguments as an Anthropic client sends them back (compact JSON objects), so both
    // APIs carry the very same conversation.
    for message in &mut transcript {
        let calls = message.get_mut("tool_calls").and_then(Value::as_array_mut);
        for call in calls.into_iter().flatten() {
            let input: Value =
                serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
            call["function"]["arguments"] = json!(input.to_string());
        }
    }
    // Every assistant turn thought first, with a signature naming the turn (kept beside the
    // OpenAI message, where neither token counts nor the other APIs see it).
    for (index, message) in transcript.iter_mut().enumerate() {
        if message["role"] == "assistant" {
            message["thinking"] = json!({"type": "thinking", "thinking": "Next step.",
                                         "signature": format!("sig-{index}")});
        }
    }
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

    // The model answers each call with the transcript's next assistant message, in the
    // shape of the API it was asked through.
    let replies = |_: ()| -> Arc<Mutex<VecDeque<Value>>> {
        Arc::new(Mutex::new(
            transcript
                .iter()
                .filter(|m| m["role"] == "assistant")
                .cloned()
                .collect(),
        ))
    };
    let (chat_replies, messages_replies) = (replies(()), replies(()));
    let upstream = FakeUpstream::start(move |request| {
        let anthropic = request.path.starts_with("/v1/messages");
        let queue = if anthropic {
            &messages_replies
        } else {
            &chat_replies
        };
        let next = queue.lock().unwrap().pop_front().expect("a scripted reply");
        if anthropic {
            Answer::Json(200, message(&assistant_blocks(&next), None))
        } else {
            Answer::Json(200, completion(next, None))
        }
    });
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let client = reqwest::blocking::Client::new();
    for (index, expected) in transcript.iter().enumerate() {
        if expected["role"] != "assistant" {
            continue;
        }
        let response = client
            .post(format!("{}/chat/completions", gateway.base_url()))
            .bearer_auth("sk-replay")
            .header("x-ctxhost-session", "via-chat")
            .json(&json!({"model": "gpt-4o", "messages": transcript[..index]}))
            .send()
            .unwrap();
        assert_eq!(response.status(), 200);
        let (system, messages) = from_openai(&transcript[..index]);
        let mut body = json!({"model": "gpt-4o", "messages": messages});
        if let Some(system) = system {
            body["system"] = system;
        }
        let response = client
            .post(format!("{}/messages?beta=true", gateway.base_url()))
            .header("x-api-key", "sk-replay")
            .header("anthropic-version", "2023-06-01")
            .header("x-ctxhost-session", "via-messages")
            .json(&body)
            .send()
            .unwrap();
        assert_eq!(response.status(), 200, "{:?}", response.text());
        let answer: Value = response.json().unwrap();
        assert_eq!(answer["content"], assistant_blocks(expected));
    }
    let compressions = |session: &Value| -> Vec<Value> {
        session["compressions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| json!([c["request"], c["tokens_before"], c["tokens_after"]]))
            .collect()
    };
    let via_chat = gateway.session("via-chat", Some("sk-replay"));
    let via_messages = gateway.anthropic_session("via-messages", "sk-replay");
    let expected: Vec<Value> = report["compressions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| json!([c["call"], c["tokens_before"], c["tokens_after"]]))
        .collect();
    assert!(
        !expected.is_empty(),
        "the session is long enough to compress"
    );
    assert_eq!(compressions(&via_chat), expected);
    assert_eq!(compressions(&via_messages), expected);
    // The upstream never got more than the window, and what went in and out adds up.
    for key in ["peak_prompt_tokens", "upstream_calls"] {
        assert_eq!(via_messages["stats"][key], via_chat["stats"][key], "{key}");
    }
    assert!(
        via_messages["stats"]["peak_prompt_tokens"]
            .as_u64()
            .unwrap()
            <= 128_000
    );
    assert_eq!(via_messages["tokens_sent"], report["total_input_tokens"]);
    assert_eq!(
        via_messages["tokens_received"],
        report["total_input_tokens_no_engine"]
    );
    // What went upstream over /v1/messages is valid Anthropic: every tool_use answered in the
    // very next message, and the conversation opens with the user.
    // A thinking block only ever goes up with the very turn it was signed for.
    let mut thinking_sent = 0;
    let requests = upstream.messages_requests();
    let compressed_at: Vec<usize> = compressions(&via_messages)
        .iter()
        .map(|c| c[0].as_u64().unwrap() as usize)
        .collect();
    for (index, request) in requests.iter().enumerate() {
        // The client set no breakpoints: the gateway marks the system prompt and the last
        // three messages.
        let body = request.json();
        let turns = body["messages"].as_array().unwrap().len();
        assert_eq!(
            breakpoints(&body),
            1 + turns.min(3),
            "request {}",
            index + 1
        );
        // Between two compressions every request starts with the one before it, byte for
        // byte but for the rolling markers: the provider's cache keeps hitting.
        if index > 0 && !compressed_at.contains(&(index + 1)) {
            let before =
                serde_json::to_string(&unmarked(&requests[index - 1].json()["messages"])).unwrap();
            let now = serde_json::to_string(&unmarked(&body["messages"])).unwrap();
            assert!(
                now.starts_with(before.trim_end_matches(']')),
                "request {} does not extend request {} byte for byte",
                index + 1,
                index
            );
        }
    }
    for request in requests {
        let messages = unmarked(&request.json()["messages"])
            .as_array()
            .unwrap()
            .clone();
        assert_tools_paired(&messages);
        assert_eq!(messages[0]["role"], "user");
        for message in &messages {
            let blocks = message["content"].as_array().cloned().unwrap_or_default();
            for (position, block) in blocks.iter().enumerate() {
                if block["type"] != "thinking" {
                    continue;
                }
                let signature = block["signature"].as_str().unwrap();
                let turn: usize = signature["sig-".len()..].parse().unwrap();
                assert_eq!(position, 0);
                assert_eq!(message["content"], assistant_blocks(&transcript[turn]));
                thinking_sent += 1;
            }
        }
    }
    assert!(thinking_sent > 0);
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

/// `value` without its cache breakpoints.
fn unmarked(value: &Value) -> Value {
    match value {
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .filter(|(key, _)| *key != "cache_control")
                .map(|(key, value)| (key.clone(), unmarked(value)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(unmarked).collect()),
        other => other.clone(),
    }
}

/// Every `tool_use` is answered by a `tool_result` in the next message, and every
/// `tool_result` answers one.
fn assert_tools_paired(messages: &[Value]) {
    let mut open: Vec<String> = Vec::new();
    for message in messages {
        let blocks = message["content"].as_array().cloned().unwrap_or_default();
        for block in &blocks {
            if block["type"] == "tool_result" {
                let id = block["tool_use_id"].as_str().unwrap().to_string();
                assert!(open.contains(&id), "a result for an unknown call {id}");
                open.retain(|o| *o != id);
            }
        }
        assert!(open.is_empty(), "calls left unanswered: {open:?}");
        for block in &blocks {
            if block["type"] == "tool_use" {
                open.push(block["id"].as_str().unwrap().to_string());
            }
        }
    }
}

const MARKER: &str = "UNIQUE-MARKER-7731";

/// The lcm test's model: replays recorded answers; asked about the marker, it searches with
/// `lcm_grep` (and, when asked to, also calls the client's `shell`); given the search's result,
/// it reports it.
fn lcm_model(recorded: Arc<Mutex<VecDeque<Value>>>) -> impl Fn(&Recorded) -> Answer {
    move |request| {
        let body = request.json();
        let messages = body["messages"].as_array().unwrap();
        let last = messages.last().unwrap();
        let text = match &last["content"] {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        let content = if !tool_results(messages).is_empty() {
            let found = messages
                .iter()
                .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
                .filter(|b| b["type"] == "tool_result")
                .any(|b| b["content"].to_string().contains(MARKER));
            json!([{"type": "text", "text": format!("Search done; marker found: {found}")}])
        } else if text.contains("Which marker") {
            let mut calls = vec![
                json!({"type": "tool_use", "id": "call_grep", "name": "lcm_grep",
                                        "input": {"pattern": MARKER, "scope": "messages"}}),
            ];
            if text.contains("and list the files") {
                calls.push(
                    json!({"type": "tool_use", "id": "call_shell", "name": "shell",
                                  "input": {"cmd": "ls"}}),
                );
            }
            json!([{"type": "thinking", "thinking": "Search for it.", "signature": "sig-grep"}])
                .as_array()
                .unwrap()
                .iter()
                .cloned()
                .chain(calls)
                .collect()
        } else {
            let next = recorded
                .lock()
                .unwrap()
                .pop_front()
                .expect("a recorded answer");
            assistant_blocks(&next)
        };
        reply(request, content, None)
    }
}

/// A streamed Messages answer assembled as a client library would: the message with every
/// content block, after checking the event sequence.
fn assemble(text: &str) -> Value {
    let mut message = Value::Null;
    let mut blocks: Vec<Value> = Vec::new();
    let mut partial: Vec<String> = Vec::new();
    let mut name = String::new();
    let mut starts = 0;
    let mut stops = 0;
    for line in text.lines() {
        if let Some(event) = line.strip_prefix("event: ") {
            name = event.to_string();
            continue;
        }
        let Some(data) = line.strip_prefix("data: ") else {
            continue;
        };
        let data: Value = serde_json::from_str(data).unwrap();
        assert_eq!(data["type"], name.as_str(), "{text}");
        match name.as_str() {
            "message_start" => {
                starts += 1;
                message = data["message"].clone();
            }
            "content_block_start" => {
                assert_eq!(data["index"], blocks.len(), "indices run on: {text}");
                blocks.push(data["content_block"].clone());
                partial.push(String::new());
            }
            "content_block_delta" => {
                let index = data["index"].as_u64().unwrap() as usize;
                let delta = &data["delta"];
                let block = &mut blocks[index];
                let kind = delta["type"].as_str().unwrap();
                match kind {
                    "text_delta" | "thinking_delta" | "signature_delta" => {
                        let key = kind.trim_end_matches("_delta");
                        block[key] = json!(format!(
                            "{}{}",
                            block[key].as_str().unwrap(),
                            delta[key].as_str().unwrap()
                        ))
                    }
                    "input_json_delta" => {
                        partial[index].push_str(delta["partial_json"].as_str().unwrap())
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                let index = data["index"].as_u64().unwrap() as usize;
                if !partial[index].is_empty() {
                    blocks[index]["input"] = serde_json::from_str(&partial[index]).unwrap();
                }
            }
            "message_delta" => message["stop_reason"] = data["delta"]["stop_reason"].clone(),
            "message_stop" => stops += 1,
            "ping" => {}
            other => panic!("unexpected event {other}: {text}"),
        }
    }
    assert_eq!((starts, stops), (1, 1), "one message per answer: {text}");
    message["content"] = Value::Array(blocks);
    message
}

/// Sends one turn; returns the answer's message (assembled from the stream when streaming).
fn turn(
    client: &reqwest::blocking::Client,
    base: &str,
    session: &str,
    system: &Option<Value>,
    messages: &[Value],
    stream: bool,
) -> Value {
    let tools = json!([{"name": "shell", "input_schema": {"type": "object",
        "properties": {"cmd": {"type": "string"}}}}]);
    let mut body = json!({"model": "gpt-4o", "messages": messages, "tools": tools,
                          "stream": stream});
    if let Some(system) = system {
        body["system"] = system.clone();
    }
    let response = client
        .post(format!("{base}/messages"))
        .header("x-api-key", "sk-tools")
        .header("x-ctxhost-session", session)
        .json(&body)
        .send()
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-ctxhost-engine"], "lcm");
    let text = response.text().unwrap();
    if stream {
        assemble(&text)
    } else {
        serde_json::from_str(&text).unwrap()
    }
}

#[test]
fn the_gateway_answers_lcm_grep_over_messages_streamed_or_not() {
    let sandbox = Sandbox::new();
    sandbox.link_repo_plugins();
    sandbox.write_config("context:\n  engine: lcm\nmodel:\n  context_length: 16000\n");
    for stream in [false, true] {
        let session = format!("messages-tools-{stream}");
        let mut history = long_session();
        history.truncate(120);
        history[40]["content"] = json!(format!(
            "{} {MARKER}",
            history[40]["content"].as_str().unwrap_or_default()
        ));
        let recorded: VecDeque<Value> = history
            .iter()
            .filter(|m| m["role"] == "assistant")
            .cloned()
            .collect();
        let upstream = FakeUpstream::start(lcm_model(Arc::new(Mutex::new(recorded))));
        let gateway = sandbox.serve(&upstream.base_url(), &[]);
        let client = reqwest::blocking::Client::new();
        let base = gateway.base_url();
        // The recorded session, turn by turn (not streamed: it is only the lead-up).
        for index in 0..history.len() {
            if history[index]["role"] == "assistant" {
                let (system, messages) = from_openai(&history[..index]);
                turn(&client, &base, &session, &system, &messages, false);
            }
        }
        let state = gateway.anthropic_session(&session, "sk-tools");
        assert!(
            !state["compressions"].as_array().unwrap().is_empty(),
            "{state}"
        );

        // Asked about the marker, long compacted away, the model searches for it.
        let (system, mut messages) = from_openai(&history);
        messages.push(json!({"role": "user", "content": "Which marker did I plant?"}));
        let before = upstream.messages_requests().len();
        let answer = turn(&client, &base, &session, &system, &messages, stream);
        // A stream shows the thinking that came before the search; the search itself never.
        let mut expected = vec![json!({"type": "text", "text": "Search done; marker found: true"})];
        if stream {
            expected.insert(
                0,
                json!({"type": "thinking", "thinking": "Search for it.", "signature": "sig-grep"}),
            );
        }
        assert_eq!(answer["content"], Value::Array(expected), "{answer}");
        assert_eq!(answer["stop_reason"], "end_turn");
        let calls = &upstream.messages_requests()[before..];
        assert_eq!(calls.len(), 2, "the model was called again with the result");
        assert!(
            !calls[0].json()["messages"].to_string().contains(MARKER),
            "the marker was compacted away before the search"
        );
        assert!(calls[0].json()["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "lcm_grep" && t["input_schema"].is_object()));
        let second = calls[1].json()["messages"].as_array().unwrap().clone();
        assert_tools_paired(&second);
        // The thinking block that led to the search went back with its call.
        assert!(second
            .iter()
            .any(|m| m["content"][0]["signature"] == "sig-grep"));

        // A mixed reply: the engine's search and the client's own tool in one message.
        messages.push(json!({"role": "assistant", "content": answer["content"]}));
        messages.push(json!({"role": "user",
                             "content": "Which marker was it again, and list the files?"}));
        let answer = turn(&client, &base, &session, &system, &messages, stream);
        let blocks = answer["content"].as_array().unwrap();
        let uses: Vec<&Value> = blocks.iter().filter(|b| b["type"] == "tool_use").collect();
        assert_eq!(uses.len(), 1, "the client sees only its own call: {answer}");
        assert_eq!(uses[0]["name"], "shell");
        assert_eq!(uses[0]["input"], json!({"cmd": "ls"}));
        assert_eq!(answer["stop_reason"], "tool_use");
        messages.push(json!({"role": "assistant", "content": answer["content"]}));
        messages.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "call_shell", "content": "a.txt"}]}));
        let answer = turn(&client, &base, &session, &system, &messages, stream);
        assert_eq!(
            answer["content"][0]["text"],
            "Search done; marker found: true"
        );
        // Upstream, both calls and both results are there, in one valid exchange.
        let last = upstream.messages_requests().last().unwrap().json();
        let last = last["messages"].as_array().unwrap();
        assert_tools_paired(last);
        let ids: Vec<&str> = last.last().unwrap()["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|b| b["tool_use_id"].as_str())
            .collect();
        assert_eq!(ids, ["call_grep", "call_shell"]);
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
    let rate_limited = json!({"type": "error",
                              "error": {"type": "rate_limit_error", "message": "slow down"}});
    let answer = rate_limited.clone();
    let upstream = FakeUpstream::start(move |request| {
        let text = request.json()["messages"][0]["content"].to_string();
        if text.contains("limit") {
            Answer::Json(429, answer.clone())
        } else {
            // A stream the provider breaks off with an error event.
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
        }
    });
    let sandbox = Sandbox::new();
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let user = |text: &str| json!([{"role": "user", "content": text}]);
    // The gateway's own: a body that is not a Messages request.
    let (status, _, text) = post_messages(&gateway, &json!({"model": "claude-x", "messages": []}));
    assert_eq!(status, 400);
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("messages"));
    let (status, _, text) = post_messages(
        &gateway,
        &json!({"model": "claude-x", "messages": [{"role": "robot", "content": "hi"}]}),
    );
    assert_eq!(status, 400);
    assert!(text.contains("messages[0]: unknown role `robot`"), "{text}");
    // A gateway that wants a token says so in the same shape.
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
    // The upstream's own, streamed or not: its status and body.
    for stream in [false, true] {
        let (status, _, text) = post_messages(
            &gateway,
            &json!({"model": "claude-x", "stream": stream, "messages": user("over the limit")}),
        );
        assert_eq!(status, 429);
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), rate_limited);
    }
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
