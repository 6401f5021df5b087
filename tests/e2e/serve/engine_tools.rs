//! The engine's own tools, answered by the gateway for the model: the client never sees them,
//! on every wire, streamed or not.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use ctxhost_tests::per_wire;
use ctxhost_tests::upstream::{tool_call, Answer, FakeUpstream, Recorded};
use ctxhost_tests::wire::{assert_tools_paired, Wire};
use ctxhost_tests::{long_session_marked, Sandbox};
use serde_json::{json, Value};

const MARKER: &str = "UNIQUE-MARKER-7731";
const CONFIG: &str = "context:\n  engine: lcm\nmodel:\n  context_length: 16000\n";
/// The reasoning that leads the model to search (kept by the wires that carry reasoning).
const SEARCHING: &str = "reasoning-grep";

/// The scripted model: replays recorded answers; asked about the marker, it searches with
/// `lcm_grep` (and, when asked to, also calls the client's `shell` in the same reply); given
/// the search's result, it reports it.
fn model(wire: Wire, recorded: Arc<Mutex<VecDeque<Value>>>) -> impl Fn(&Recorded) -> Answer {
    move |request| {
        let messages = wire.sent_messages(request);
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
            json!({"role": "assistant", "content": null, "tool_calls": calls,
                   "reasoning": SEARCHING})
        } else {
            recorded
                .lock()
                .unwrap()
                .pop_front()
                .expect("a recorded answer")
        };
        wire.reply(request, &message, None)
    }
}

/// Sends `messages` as one turn; returns the answer as the client read it.
fn turn(
    wire: Wire,
    gateway: &ctxhost_tests::gateway::GatewayProcess,
    session: &str,
    messages: &[Value],
    stream: bool,
) -> ctxhost_tests::wire::Reply {
    let tools = [json!({"type": "function", "function": {"name": "shell",
        "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}})];
    let body = wire.body(messages, &tools, stream);
    let response = wire.send(gateway, Some("sk-tools"), Some(session), &body);
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-ctxhost-engine"], "lcm");
    wire.read(&response.text().unwrap(), stream)
}

per_wire! {
    fn the_gateway_answers_lcm_grep_for_the_model_streamed_or_not(wire: Wire) {
        let sandbox = Sandbox::new();
        sandbox.link_repo_plugins();
        sandbox.write_config(CONFIG);
        for stream in [false, true] {
            let session = format!("tools-{stream}");
            let mut messages = long_session_marked(120, MARKER);
            let recorded: VecDeque<Value> = messages
                .iter()
                .filter(|m| m["role"] == "assistant")
                .cloned()
                .collect();
            let upstream = FakeUpstream::start(model(wire, Arc::new(Mutex::new(recorded))));
            let gateway = sandbox.serve(&upstream.base_url(), &[]);
            // The recorded session, turn by turn (not streamed: it is only the lead-up).
            for index in 0..messages.len() {
                if messages[index]["role"] == "assistant" {
                    turn(wire, &gateway, &session, &messages[..index], false);
                }
            }
            let state = wire.session(&gateway, &session, Some("sk-tools"));
            assert!(
                !state["compressions"].as_array().unwrap().is_empty(),
                "{state}"
            );

            // Asked about the marker, long compacted away, the model searches for it.
            messages.push(json!({"role": "user", "content": "Which marker did I plant?"}));
            let before = wire.requests(&upstream).len();
            let answer = turn(wire, &gateway, &session, &messages, stream);
            // A stream shows the reasoning that came before the search (on the wires that
            // carry it); the search itself never.
            let mut expected = json!({"role": "assistant",
                                      "content": "Search done; marker found: true"});
            if stream && wire.carries_reasoning() {
                expected["reasoning"] = json!(SEARCHING);
            }
            assert_eq!(answer.message, expected);
            assert!(!answer.calls_tools);
            let calls = &wire.requests(&upstream)[before..];
            assert_eq!(calls.len(), 2, "the model was called again with the result");
            assert!(
                !calls[0].body.contains(MARKER),
                "the marker was compacted away before the search"
            );
            assert!(wire.sent_tools(&calls[0]).contains(&"lcm_grep".to_string()));
            let second = wire.sent_messages(&calls[1]);
            assert_tools_paired(&second);
            // The reasoning that led to the search went back with its call.
            if wire.carries_reasoning() {
                assert!(second.iter().any(|m| m["reasoning"] == SEARCHING
                    && m["tool_calls"][0]["id"] == "call_grep"));
            }

            // A mixed reply: the engine's search and the client's own tool in one message.
            messages.push(answer.message);
            messages.push(json!({"role": "user",
                                 "content": "Which marker was it again, and list the files?"}));
            let answer = turn(wire, &gateway, &session, &messages, stream);
            let calls = answer.message["tool_calls"].as_array().unwrap();
            assert_eq!(calls.len(), 1, "the client sees only its own call: {:?}", answer);
            assert_eq!(calls[0]["function"]["name"], "shell");
            assert_eq!(calls[0]["function"]["arguments"], json!({"cmd": "ls"}).to_string());
            assert!(answer.calls_tools);
            messages.push(answer.message);
            messages.push(json!({"role": "tool", "tool_call_id": "call_shell", "content": "a.txt"}));
            let answer = turn(wire, &gateway, &session, &messages, stream);
            assert_eq!(answer.message["content"], "Search done; marker found: true");
            // Upstream, both calls and both results are there, in a valid order.
            let last = wire.sent_messages(wire.requests(&upstream).last().unwrap());
            assert_tools_paired(&last);
            let ids: Vec<&str> = last
                .iter()
                .filter(|m| m["role"] == "tool")
                .filter_map(|m| m["tool_call_id"].as_str())
                .collect();
            assert!(ids.ends_with(&["call_grep", "call_shell"]), "{ids:?}");
        }
    }
}
