//! `POST /v1/responses` (the OpenAI Responses API, stateless): the official SDK through the
//! gateway, a recorded session driven turn by turn, the engine's tools answered by the
//! gateway, and requests relying on server-side state passed through.

use std::collections::VecDeque;
use std::process::Command;
use std::sync::{Arc, Mutex};

use ctxhost_tests::python::{python_with_sdks, script};
use ctxhost_tests::responses_upstream::{
    assistant_items, events, from_openai, function_call, message_item, reply, response,
};
use ctxhost_tests::upstream::{completion, Answer, FakeUpstream, Recorded};
use ctxhost_tests::{long_session, workspace_root, Sandbox};
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
    // Nothing was compressed: every body the SDK sent reached the upstream as it was sent.
    let sent = out["sent"].as_array().unwrap();
    let received: Vec<Value> = upstream
        .responses_requests()
        .iter()
        .map(Recorded::json)
        .collect();
    assert_eq!(received.len(), sent.len() - 1, "all but the bad request");
    for (got, expected) in received.iter().zip(sent) {
        assert_eq!(got, expected);
    }
    // The last request carried the reasoning item back with its calls and their outputs.
    let last = received.last().unwrap();
    assert_eq!(last["input"][1]["encrypted_content"], "enc-weather");
    assert_eq!(last["input"][4]["type"], "function_call_output");
}

#[test]
fn a_recorded_session_compresses_over_responses_where_it_does_over_chat_completions() {
    let mut transcript: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string(workspace_root().join("examples/session.json")).unwrap(),
    )
    .unwrap();
    // Tool arguments as compact JSON, as a Responses client sends them back.
    for message in &mut transcript {
        let calls = message.get_mut("tool_calls").and_then(Value::as_array_mut);
        for call in calls.into_iter().flatten() {
            let input: Value =
                serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
            call["function"]["arguments"] = json!(input.to_string());
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

    // The model answers each call with the transcript's next assistant message, in the shape
    // of the API it was asked through.
    let replies = || -> Arc<Mutex<VecDeque<(usize, Value)>>> {
        Arc::new(Mutex::new(
            transcript
                .iter()
                .cloned()
                .enumerate()
                .filter(|(_, m)| m["role"] == "assistant")
                .collect(),
        ))
    };
    let (chat_replies, responses_replies) = (replies(), replies());
    let upstream = FakeUpstream::start(move |request| {
        let over_responses = request.path.starts_with("/v1/responses");
        let queue = if over_responses {
            &responses_replies
        } else {
            &chat_replies
        };
        let (turn, next) = queue.lock().unwrap().pop_front().expect("a scripted reply");
        if over_responses {
            reply(request, Value::Array(assistant_items(&next, turn)), None)
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
        let (instructions, input) = from_openai(&transcript[..index]);
        let mut body = json!({"model": "gpt-4o", "input": input, "store": false});
        if let Some(instructions) = instructions {
            body["instructions"] = instructions;
        }
        let response = client
            .post(format!("{}/responses", gateway.base_url()))
            .bearer_auth("sk-replay")
            .header("session-id", "via-responses")
            .json(&body)
            .send()
            .unwrap();
        assert_eq!(response.status(), 200, "{:?}", response.text());
        let answer: Value = response.json().unwrap();
        assert_eq!(
            answer["output"],
            Value::Array(assistant_items(expected, index))
        );
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
    let via_responses = gateway.session("via-responses", Some("sk-replay"));
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
    assert_eq!(compressions(&via_responses), expected);
    for key in ["peak_prompt_tokens", "upstream_calls"] {
        assert_eq!(via_responses["stats"][key], via_chat["stats"][key], "{key}");
    }
    assert!(
        via_responses["stats"]["peak_prompt_tokens"]
            .as_u64()
            .unwrap()
            <= 128_000
    );
    assert_eq!(via_responses["tokens_sent"], report["total_input_tokens"]);
    // What went upstream is valid: every function_call_output answers a call before it, and a
    // reasoning item only ever goes up with the very turn it came with.
    let mut reasoning_sent = 0;
    for request in upstream.responses_requests() {
        let input = request.json()["input"].as_array().unwrap().clone();
        assert_calls_answered(&input);
        for (at, item) in input.iter().enumerate() {
            if item["type"] != "reasoning" {
                continue;
            }
            let turn: usize = item["id"].as_str().unwrap()["rs_".len()..].parse().unwrap();
            let turn_items = assistant_items(&transcript[turn], turn);
            assert_eq!(input[at..at + turn_items.len()], turn_items[..]);
            reasoning_sent += 1;
        }
    }
    assert!(reasoning_sent > 0);
}

/// Every `function_call_output` answers a `function_call` before it, and every call is
/// answered before the next user or assistant message.
fn assert_calls_answered(items: &[Value]) {
    let mut open: Vec<String> = Vec::new();
    for item in items {
        match item["type"].as_str().unwrap_or("message") {
            "function_call" => open.push(item["call_id"].as_str().unwrap().to_string()),
            "function_call_output" => {
                let id = item["call_id"].as_str().unwrap();
                assert!(
                    open.iter().any(|o| o == id),
                    "an output for an unknown call {id}"
                );
                open.retain(|o| o != id);
            }
            "message" if item["role"] == "user" => {
                assert!(open.is_empty(), "calls left unanswered: {open:?}")
            }
            _ => {}
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
        let items = items_of(&body);
        let last = items.last().unwrap();
        let output = if last["type"] == "function_call_output" {
            let found = items
                .iter()
                .filter(|i| i["type"] == "function_call_output")
                .any(|i| i["output"].to_string().contains(MARKER));
            json!([message_item(
                "msg_found",
                &format!("Search done; marker found: {found}")
            )])
        } else if last["content"].to_string().contains("Which marker") {
            let mut items = vec![
                json!({"type": "reasoning", "id": "rs_grep", "summary": [],
                       "encrypted_content": "enc-grep"}),
                function_call(
                    "call_grep",
                    "lcm_grep",
                    json!({"pattern": MARKER, "scope": "messages"}),
                ),
            ];
            if last["content"].to_string().contains("and list the files") {
                items.push(function_call("call_shell", "shell", json!({"cmd": "ls"})));
            }
            Value::Array(items)
        } else {
            let next = recorded
                .lock()
                .unwrap()
                .pop_front()
                .expect("a recorded answer");
            Value::Array(assistant_items(&next, 0).split_off(1))
        };
        reply(request, output, None)
    }
}

/// A streamed response assembled as a client would: the completed response, after checking
/// the sequence (one created, one completed, items added before they are done, sequence
/// numbers in order, every item of the completed response done once).
fn assemble(text: &str) -> Value {
    let mut completed = Value::Null;
    let mut created = 0;
    let mut done: Vec<Value> = Vec::new();
    let mut sequence = 0;
    for line in text.lines() {
        let Some(data) = line.strip_prefix("data: ") else {
            continue;
        };
        let data: Value = serde_json::from_str(data).unwrap();
        assert_eq!(data["sequence_number"], sequence, "{text}");
        sequence += 1;
        match data["type"].as_str().unwrap() {
            "response.created" => created += 1,
            "response.output_item.done" => {
                assert_eq!(data["output_index"], done.len(), "indices run on: {text}");
                done.push(data["item"].clone());
            }
            "response.completed" => completed = data["response"].clone(),
            "error" => panic!("an error event: {text}"),
            _ => {}
        }
    }
    assert_eq!(created, 1, "{text}");
    assert_eq!(completed["output"], Value::Array(done), "{text}");
    completed
}

/// Sends one turn; returns the response (assembled from the stream when streaming).
fn turn(
    client: &reqwest::blocking::Client,
    base: &str,
    session: &str,
    instructions: &Option<Value>,
    input: &[Value],
    stream: bool,
) -> Value {
    let tools = json!([{"type": "function", "name": "shell", "parameters": {"type": "object",
        "properties": {"cmd": {"type": "string"}}}}]);
    let mut body = json!({"model": "gpt-4o", "input": input, "tools": tools, "store": false,
                          "stream": stream});
    if let Some(instructions) = instructions {
        body["instructions"] = instructions.clone();
    }
    let response = client
        .post(format!("{base}/responses"))
        .bearer_auth("sk-tools")
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

fn user(text: &str) -> Value {
    json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
}

#[test]
fn the_gateway_answers_lcm_grep_over_responses_streamed_or_not() {
    let sandbox = Sandbox::new();
    sandbox.link_repo_plugins();
    sandbox.write_config("context:\n  engine: lcm\nmodel:\n  context_length: 16000\n");
    for stream in [false, true] {
        let session = format!("responses-tools-{stream}");
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
                let (instructions, input) = from_openai(&history[..index]);
                let input: Vec<Value> = input
                    .into_iter()
                    .filter(|i| i["type"] != "reasoning")
                    .collect();
                turn(&client, &base, &session, &instructions, &input, false);
            }
        }
        let state = gateway.session(&session, Some("sk-tools"));
        assert!(
            !state["compressions"].as_array().unwrap().is_empty(),
            "{state}"
        );

        // Asked about the marker, long compacted away, the model searches for it.
        let (instructions, input) = from_openai(&history);
        let mut input: Vec<Value> = input
            .into_iter()
            .filter(|i| i["type"] != "reasoning")
            .collect();
        input.push(user("Which marker did I plant?"));
        let before = upstream.responses_requests().len();
        let answer = turn(&client, &base, &session, &instructions, &input, stream);
        // A stream shows the reasoning that came before the search; the search itself never.
        let mut expected = vec![message_item("msg_found", "Search done; marker found: true")];
        if stream {
            expected.insert(
                0,
                json!({"type": "reasoning", "id": "rs_grep", "summary": [],
                       "encrypted_content": "enc-grep"}),
            );
        }
        assert_eq!(answer["output"], Value::Array(expected), "{answer}");
        let calls = &upstream.responses_requests()[before..];
        assert_eq!(calls.len(), 2, "the model was called again with the result");
        assert!(
            !calls[0].json()["input"].to_string().contains(MARKER),
            "the marker was compacted away before the search"
        );
        assert!(calls[0].json()["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["type"] == "function"
                && t["name"] == "lcm_grep"
                && t["parameters"].is_object()));
        let second = calls[1].json()["input"].as_array().unwrap().clone();
        assert_calls_answered(&second);
        // The reasoning that led to the search went back with its call.
        let at = second
            .iter()
            .position(|i| i["id"] == "rs_grep")
            .expect("the reasoning went back");
        assert_eq!(second[at + 1]["call_id"], "call_grep");

        // A mixed reply: the engine's search and the client's own tool in one answer.
        input.extend(answer["output"].as_array().unwrap().iter().cloned());
        input.push(user("Which marker was it again, and list the files?"));
        let answer = turn(&client, &base, &session, &instructions, &input, stream);
        let calls: Vec<&Value> = answer["output"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["type"] == "function_call")
            .collect();
        assert_eq!(
            calls.len(),
            1,
            "the client sees only its own call: {answer}"
        );
        assert_eq!(calls[0]["name"], "shell");
        assert_eq!(calls[0]["arguments"], json!({"cmd": "ls"}).to_string());
        input.extend(answer["output"].as_array().unwrap().iter().cloned());
        input.push(
            json!({"type": "function_call_output", "call_id": "call_shell",
                          "output": "a.txt"}),
        );
        let answer = turn(&client, &base, &session, &instructions, &input, stream);
        assert_eq!(
            answer["output"][0]["content"][0]["text"],
            "Search done; marker found: true"
        );
        // Upstream, both calls and both outputs are there, in one valid exchange.
        let last = upstream.responses_requests().last().unwrap().json();
        let last = last["input"].as_array().unwrap();
        assert_calls_answered(last);
        let outputs: Vec<&str> = last
            .iter()
            .rev()
            .take(2)
            .filter_map(|i| i["call_id"].as_str())
            .collect();
        assert_eq!(outputs, ["call_shell", "call_grep"]);
    }
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
