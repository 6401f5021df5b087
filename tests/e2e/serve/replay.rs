//! A recorded session driven through the gateway turn by turn, as an agent sends it: the whole
//! history every time, on every wire. The gateway must compress where `ctxhost run` does for
//! the same session, and what it sends upstream must stay valid and cache-friendly.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use ctxhost_tests::per_wire;
use ctxhost_tests::upstream::FakeUpstream;
use ctxhost_tests::wire::{assert_tools_paired, assistant, without_reasoning, Wire};
use ctxhost_tests::{workspace_root, Sandbox};
use serde_json::{json, Value};

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

per_wire! {
    fn a_recorded_session_compresses_where_ctxhost_run_says(wire: Wire) {
        let mut transcript: Vec<Value> = serde_json::from_str(
            &std::fs::read_to_string(workspace_root().join("examples/session.json")).unwrap(),
        )
        .unwrap();
        // Tool arguments as clients send them back (compact JSON), so every wire carries the
        // very same conversation.
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
        // Every assistant turn reasoned first, with a token naming the turn (on the wires that
        // carry reasoning; the chat wire drops it).
        let spoken: Vec<Value> = transcript
            .iter()
            .enumerate()
            .map(|(index, message)| {
                let mut message = message.clone();
                if message["role"] == "assistant" {
                    message["reasoning"] = json!(format!("turn-{index}"));
                }
                message
            })
            .collect();
        // `ctxhost run` reads the transcript as it is: reasoning is not what it measures.
        sandbox.write_json("session.json", &Value::Array(transcript.clone()));
        let run = sandbox.ctxhost(&["run", "session.json", "--json"]);
        assert!(run.success(), "{}", run.stderr);
        let report = run.json()["runs"][0].clone();
        // The model answers each call with the transcript's next assistant message.
        let replies: VecDeque<Value> = spoken
            .iter()
            .filter(|m| m["role"] == "assistant")
            .cloned()
            .collect();
        let replies = Arc::new(Mutex::new(replies));
        let upstream = FakeUpstream::start(move |request| {
            let next = replies.lock().unwrap().pop_front().expect("a scripted reply");
            wire.reply(request, &next, None)
        });
        let gateway = sandbox.serve(&upstream.base_url(), &[]);
        for (index, message) in spoken.iter().enumerate() {
            if message["role"] != "assistant" {
                continue;
            }
            let body = wire.body(&spoken[..index], &[], false);
            let response = wire.send(&gateway, Some("sk-replay"), Some("replayed"), &body);
            assert_eq!(response.status(), 200, "{:?}", response.text());
            let answer = wire.read(&response.text().unwrap(), false);
            let mut expected = assistant(message);
            if !wire.carries_reasoning() {
                expected = without_reasoning(&expected);
            }
            assert_eq!(answer.message, expected);
        }
        let session = wire.session(&gateway, "replayed", Some("sk-replay"));

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

        let requests = wire.requests(&upstream);
        let compressed_at: Vec<usize> = seen
            .iter()
            .map(|c| c[0].as_u64().unwrap() as usize)
            .collect();
        let mut reasoning_sent = 0;
        let mut longest = 0;
        for (index, request) in requests.iter().enumerate() {
            // What went upstream is valid: every tool call answered before the next message,
            // and the conversation opens with the user.
            let messages = wire.sent_messages(request);
            longest = longest.max(messages.len());
            assert_tools_paired(&messages);
            let first = messages.iter().find(|m| m["role"] != "system").unwrap();
            assert_eq!(first["role"], "user", "request {}", index + 1);
            // Reasoning only ever goes up with the very turn it came with.
            for message in messages.iter().filter(|m| m.get("reasoning").is_some()) {
                let token = message["reasoning"].as_str().unwrap();
                let turn: usize = token["turn-".len()..].parse().unwrap();
                assert_eq!(*message, assistant(&spoken[turn]));
                reasoning_sent += 1;
            }
            // Between two compressions every request starts with the one before it, turn for
            // turn but for the rolling cache breakpoints: the provider's cache keeps hitting.
            if index > 0 && !compressed_at.contains(&(index + 1)) {
                let before = unmarked(&Value::Array(wire.turns(&requests[index - 1].json())));
                let now = unmarked(&Value::Array(wire.turns(&request.json())));
                let (before, now) = (before.as_array().unwrap(), now.as_array().unwrap());
                assert!(
                    now.len() > before.len() && now[..before.len()] == before[..],
                    "request {} does not extend request {index}",
                    index + 1
                );
            }
        }
        assert_eq!(reasoning_sent > 0, wire.carries_reasoning());
        assert!(longest < transcript.len());
    }
}
