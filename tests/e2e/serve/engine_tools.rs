//! The engine's own tools, answered by the gateway for the model: the client never sees them.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use ctxhost_tests::upstream::{reply, tool_call, Answer, FakeUpstream, Recorded};
use ctxhost_tests::{long_session, Sandbox};
use serde_json::{json, Value};

const MARKER: &str = "UNIQUE-MARKER-7731";
const CONFIG: &str = "context:\n  engine: lcm\nmodel:\n  context_length: 16000\n";

/// The first `n` messages of the long session, with the marker planted early.
fn history(n: usize) -> Vec<Value> {
    let mut session = long_session();
    session.truncate(n);
    session[40]["content"] = json!(format!(
        "{} {MARKER}",
        session[40]["content"].as_str().unwrap_or_default()
    ));
    session
}

/// The scripted model: replays recorded answers; asked about the marker, it searches with
/// `lcm_grep` (and, when asked to, also calls the client's `shell` in the same reply); given
/// the search's result, it reports it.
fn model(recorded: Arc<Mutex<VecDeque<Value>>>) -> impl Fn(&Recorded) -> Answer {
    move |request| {
        let body = request.json();
        let messages = body["messages"].as_array().unwrap();
        let last = messages.last().unwrap();
        let text = last["content"].as_str().unwrap_or_default();
        let message = if last["role"] == "tool" {
            let found = messages
                .iter()
                .filter(|m| m["role"] == "tool")
                .any(|m| m["content"].as_str().unwrap_or_default().contains(MARKER));
            json!({"role": "assistant", "content": format!("Search done; marker found: {found}")})
        } else if text.contains("Which marker") {
            let mut calls = vec![tool_call(
                "call_grep",
                "lcm_grep",
                json!({"pattern": MARKER, "scope": "messages"}),
            )];
            if text.contains("and list the files") {
                calls.push(tool_call("call_shell", "shell", json!({"cmd": "ls"})));
            }
            json!({"role": "assistant", "content": null, "tool_calls": calls})
        } else {
            recorded
                .lock()
                .unwrap()
                .pop_front()
                .expect("a recorded answer")
        };
        reply(request, message, None)
    }
}

/// Sends `messages` as one turn; returns the answer's message (assembled from the stream when
/// streaming) and the response's headers.
fn turn(
    client: &reqwest::blocking::Client,
    base: &str,
    session: &str,
    messages: &[Value],
    stream: bool,
) -> Value {
    let tools = json!([{"type": "function", "function": {"name": "shell",
        "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}}]);
    let response = client
        .post(format!("{base}/chat/completions"))
        .bearer_auth("sk-tools")
        .header("x-ctxhost-session", session)
        .json(&json!({"model": "gpt-4o", "messages": messages, "tools": tools, "stream": stream}))
        .send()
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-ctxhost-engine"], "lcm");
    let text = response.text().unwrap();
    if !stream {
        let answer: Value = serde_json::from_str(&text).unwrap();
        return answer["choices"][0]["message"].clone();
    }
    // Assemble the stream as a client library would.
    let mut content = String::new();
    let mut calls: Vec<Value> = Vec::new();
    let mut finished = 0;
    for line in text.lines() {
        let Some(data) = line.strip_prefix("data: ") else {
            continue;
        };
        if data == "[DONE]" {
            break;
        }
        let chunk: Value = serde_json::from_str(data).unwrap();
        assert!(chunk.get("error").is_none(), "{chunk}");
        let choice = &chunk["choices"][0];
        if !choice["finish_reason"].is_null() {
            finished += 1;
        }
        content.push_str(choice["delta"]["content"].as_str().unwrap_or_default());
        for call in choice["delta"]["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let index = call["index"].as_u64().unwrap() as usize;
            if index == calls.len() {
                calls.push(json!({"id": "", "type": "function",
                                  "function": {"name": "", "arguments": ""}}));
            }
            let slot = &mut calls[index];
            for (key, path) in [
                ("id", None),
                ("name", Some("function")),
                ("arguments", Some("function")),
            ] {
                let piece = match path {
                    None => call[key].as_str(),
                    Some(p) => call[p][key].as_str(),
                };
                if let Some(piece) = piece {
                    let target = match path {
                        None => &mut slot[key],
                        Some(p) => &mut slot[p][key],
                    };
                    *target = json!(format!("{}{piece}", target.as_str().unwrap()));
                }
            }
        }
    }
    assert_eq!(finished, 1, "one finish reason per answer: {text}");
    let mut message = json!({"role": "assistant", "content": content});
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
        message["content"] = Value::Null;
    }
    message
}

/// Every tool call in `messages` is answered before the next non-tool message, and every
/// tool result answers a call.
fn assert_valid_sequence(messages: &[Value]) {
    let mut open: Vec<String> = Vec::new();
    for message in messages {
        if message["role"] == "tool" {
            let id = message["tool_call_id"].as_str().unwrap().to_string();
            assert!(open.contains(&id), "a result for an unknown call {id}");
            open.retain(|o| *o != id);
        } else {
            assert!(open.is_empty(), "calls left unanswered: {open:?}");
            for call in message["tool_calls"].as_array().into_iter().flatten() {
                open.push(call["id"].as_str().unwrap().to_string());
            }
        }
    }
}

#[test]
fn the_gateway_answers_lcm_grep_for_the_model_streamed_or_not() {
    let sandbox = Sandbox::new();
    sandbox.link_repo_plugins();
    sandbox.write_config(CONFIG);
    for stream in [false, true] {
        let session = format!("tools-{stream}");
        let mut messages = history(120);
        let recorded: VecDeque<Value> = messages
            .iter()
            .filter(|m| m["role"] == "assistant")
            .cloned()
            .collect();
        let upstream = FakeUpstream::start(model(Arc::new(Mutex::new(recorded))));
        let gateway = sandbox.serve(&upstream.base_url(), &[]);
        let client = reqwest::blocking::Client::new();
        let base = gateway.base_url();
        // The recorded session, turn by turn (not streamed: it is only the lead-up).
        for index in 0..messages.len() {
            if messages[index]["role"] == "assistant" {
                turn(&client, &base, &session, &messages[..index], false);
            }
        }
        let state: Value = gateway.session(&session, Some("sk-tools"));
        assert!(
            !state["compressions"].as_array().unwrap().is_empty(),
            "{state}"
        );

        // Asked about the marker, long compacted away, the model searches for it.
        messages.push(json!({"role": "user", "content": "Which marker did I plant?"}));
        let before = upstream.chat_requests().len();
        let answer = turn(&client, &base, &session, &messages, stream);
        assert_eq!(
            answer["content"], "Search done; marker found: true",
            "{answer}"
        );
        assert!(answer.get("tool_calls").is_none(), "{answer}");
        let calls = &upstream.chat_requests()[before..];
        assert_eq!(calls.len(), 2, "the model was called again with the result");
        let first = calls[0].messages();
        assert!(
            !first.iter().any(|m| m.to_string().contains(MARKER)),
            "the marker was compacted away before the search"
        );
        assert!(calls[0].json()["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["function"]["name"] == "lcm_grep"));
        assert_valid_sequence(&calls[1].messages());

        // A mixed reply: the engine's search and the client's own tool in one message.
        messages.push(answer);
        messages.push(json!({"role": "user",
                             "content": "Which marker was it again, and list the files?"}));
        let answer = turn(&client, &base, &session, &messages, stream);
        let calls = answer["tool_calls"].as_array().unwrap();
        assert_eq!(
            calls.len(),
            1,
            "the client sees only its own call: {answer}"
        );
        assert_eq!(calls[0]["function"]["name"], "shell");
        messages.push(answer);
        messages.push(json!({"role": "tool", "tool_call_id": "call_shell", "content": "a.txt"}));
        let answer = turn(&client, &base, &session, &messages, stream);
        assert_eq!(answer["content"], "Search done; marker found: true");
        // Upstream, both calls and both results are there, in a valid order.
        let last = upstream.chat_requests().last().unwrap().messages();
        assert_valid_sequence(&last);
        let ids: Vec<&str> = last
            .iter()
            .filter(|m| m["role"] == "tool")
            .filter_map(|m| m["tool_call_id"].as_str())
            .collect();
        assert!(ids.ends_with(&["call_grep", "call_shell"]), "{ids:?}");
    }
}
