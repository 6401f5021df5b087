//! Hermes Agent's own compression (`serve.client_compaction: engine`), shaped as Hermes 0.19
//! sends it on the chat wire: a side call with no session header and no history of its own
//! (one user message quoting the middle turns, no system prompt, no tools, not streamed). The
//! gateway answers it from the engine of the session last served for the credential, without
//! the upstream; Hermes' compacted history (its first messages, a compaction message holding
//! the summary, its recent tail) continues that session, and lcm's tools still reach what came
//! before. A call whose quoted turns are not a run of a served session's history (turns the
//! gateway never saw, or another conversation's) goes upstream as before.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use ctxhost_tests::upstream::FakeUpstream;
use ctxhost_tests::wire::Wire;
use ctxhost_tests::{long_session_marked, Sandbox};

use super::client_compaction::{is_compaction_prompt, model, MARKER, UPSTREAM_SUMMARY};
use serde_json::{json, Value};

const CREDENTIAL: &str = "sk-hermes-compaction";
/// How Hermes Agent 0.19's compression call begins.
const HERMES_PROMPT: &str = "You are a summarization agent creating a context checkpoint. Treat the conversation turns below as source material for a compact record of prior work.";
/// How Hermes frames the summary in its compacted history.
const HERMES_RESUME: &str =
    "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted into the summary below.\n";
/// How many of the last messages Hermes keeps out of its summary.
const TAIL: usize = 4;

/// Hermes' compression call: its prompt, then the turns it summarises, labelled as it labels
/// them (`_serialize_for_summary`: an assistant's tool calls listed after its text).
fn compression_call(turns: &[Value]) -> Value {
    let quoted: Vec<String> = turns
        .iter()
        .map(|m| {
            let content = m["content"].as_str().unwrap_or_default();
            match m["role"].as_str().unwrap_or_default() {
                "tool" => format!(
                    "[TOOL RESULT {}]: {content}",
                    m["tool_call_id"].as_str().unwrap_or_default()
                ),
                "assistant" => {
                    let calls: Vec<String> = m["tool_calls"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|call| {
                            let function = &call["function"];
                            format!(
                                "  {}({})",
                                function["name"].as_str().unwrap_or("?"),
                                function["arguments"].as_str().unwrap_or_default()
                            )
                        })
                        .collect();
                    if calls.is_empty() {
                        format!("[ASSISTANT]: {content}")
                    } else {
                        format!(
                            "[ASSISTANT]: {content}\n[Tool calls:\n{}\n]",
                            calls.join("\n")
                        )
                    }
                }
                role => format!("[{}]: {content}", role.to_uppercase()),
            }
        })
        .collect();
    let prompt = format!(
        "{HERMES_PROMPT}\n\nTURNS TO SUMMARIZE:\n{}",
        quoted.join("\n\n")
    );
    let mut body = Wire::Chat.body(&[json!({"role": "user", "content": prompt})], &[], false);
    body.as_object_mut().unwrap().remove("tools");
    body
}

#[test]
fn hermes_compression_is_answered_by_the_engine_and_its_compacted_history_continues() {
    let sandbox = Sandbox::new();
    sandbox.link_repo_plugins();
    sandbox.write_config("context:\n  engine: lcm\nmodel:\n  context_length: 16000\n");
    let messages = long_session_marked(120, MARKER);
    let recorded: VecDeque<Value> = messages
        .iter()
        .filter(|m| m["role"] == "assistant")
        .cloned()
        .collect();
    let upstream = FakeUpstream::start(model(Wire::Chat, Arc::new(Mutex::new(recorded))));
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let mut name = String::new();
    for index in 0..messages.len() {
        if messages[index]["role"] == "assistant" {
            let body = Wire::Chat.body(&messages[..index], &[], true);
            let response = Wire::Chat.send(&gateway, Some(CREDENTIAL), None, &body);
            assert_eq!(response.status(), 200);
            name = response.headers()["x-ctxhost-session"]
                .to_str()
                .unwrap()
                .to_string();
            response.text().unwrap();
        }
    }
    let calls_before = Wire::Chat.requests(&upstream).len();

    // A call quoting turns this gateway never served is not this session's: it goes upstream.
    let stranger = compression_call(&[
        json!({"role": "user", "content": "Turns of another conversation altogether."}),
    ]);
    let response = Wire::Chat.send(&gateway, Some(CREDENTIAL), None, &stranger);
    assert_eq!(response.status(), 200);
    let text = response.text().unwrap();
    assert_eq!(
        Wire::Chat.read(&text, false).message["content"],
        UPSTREAM_SUMMARY
    );
    assert_eq!(Wire::Chat.requests(&upstream).len(), calls_before + 1);
    gateway.wait_for_log("Hermes' compression call names no session and none was found for it");
    let calls_before = calls_before + 1;

    // Hermes' compression of the middle turns: the engine answers, the upstream is not called.
    let middle = &messages[2..messages.len() - TAIL];
    let response = Wire::Chat.send(&gateway, Some(CREDENTIAL), None, &compression_call(middle));
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["x-ctxhost-client-compaction"],
        "hermes_compression"
    );
    assert_eq!(response.headers()["x-ctxhost-session"], name.as_str());
    let text = response.text().unwrap();
    assert_eq!(
        Wire::Chat.requests(&upstream).len(),
        calls_before,
        "no model call"
    );
    let reply = Wire::Chat.read(&text, false);
    let answer = reply.message["content"].as_str().unwrap().to_string();
    assert!(!answer.contains(UPSTREAM_SUMMARY), "{answer}");
    assert!(answer.contains("lcm_grep"), "{answer}");
    assert!(answer.contains("[ctxhost handoff: ctxhost.v1."), "{answer}");
    gateway.wait_for_log("kind=\"hermes_compression\"");

    // Hermes goes on from its compacted history: its first messages, the compaction message
    // holding the summary, its recent tail, and a question about what was compacted away.
    let mut compacted = vec![messages[0].clone(), messages[1].clone()];
    compacted.push(json!({"role": "user", "content": format!("{HERMES_RESUME}{answer}\n\n--- END OF CONTEXT SUMMARY ---")}));
    compacted.extend(messages[messages.len() - TAIL..].iter().cloned());
    compacted.push(json!({"role": "user", "content": "Which marker did I plant?"}));
    let body = Wire::Chat.body(&compacted, &[], true);
    let response = Wire::Chat.send(&gateway, Some(CREDENTIAL), None, &body);
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-ctxhost-lineage"], "continued");
    assert_eq!(response.headers()["x-ctxhost-session"], name.as_str());
    let text = response.text().unwrap();
    assert_eq!(
        Wire::Chat.read(&text, true).message["content"],
        "Search done; marker found: true"
    );
    gateway.wait_for_log("around the gateway's handoff: the lineage continues");
    let calls = &Wire::Chat.requests(&upstream)[calls_before..];
    assert_eq!(calls.len(), 2, "the question, then the search's result");
    // The tail Hermes kept from what the view stands for is not sent twice.
    let sent = Wire::Chat.sent_messages(&calls[0]);
    for kept in &messages[messages.len() - TAIL..] {
        let times = sent
            .iter()
            .filter(|m| m["role"] == kept["role"] && m["content"] == kept["content"])
            .count();
        assert!(times <= 1, "sent {times} times: {kept}");
    }
    for call in calls {
        assert!(
            !call.body.contains("ctxhost.v1."),
            "the upstream never sees the reference"
        );
        assert!(!is_compaction_prompt(&call.body));
    }
    assert_eq!(Wire::Chat.sessions(&gateway, Some(CREDENTIAL)).len(), 1);
    let state = Wire::Chat.session(&gateway, &name, Some(CREDENTIAL));
    assert_eq!(state["stats"]["new_lineages"], 0, "{state}");
    assert!(
        state["compressions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["trigger"] == "client"),
        "{state}"
    );
}

#[test]
fn a_compression_call_for_a_credential_never_served_goes_upstream() {
    let sandbox = Sandbox::new();
    let upstream = FakeUpstream::start(model(Wire::Chat, Arc::default()));
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let call = compression_call(&[json!({"role": "user", "content": "Fix the build, please."})]);
    let response = Wire::Chat.send(&gateway, Some(CREDENTIAL), None, &call);
    assert_eq!(response.status(), 200);
    let text = response.text().unwrap();
    assert_eq!(
        Wire::Chat.read(&text, false).message["content"],
        UPSTREAM_SUMMARY
    );
    assert_eq!(Wire::Chat.requests(&upstream).len(), 1);
    gateway.wait_for_log("none was found for it (no session was served");
}

#[test]
fn a_compression_call_is_answered_only_from_the_session_whose_turns_it_quotes() {
    let sandbox = Sandbox::new();
    let upstream = FakeUpstream::start(model(Wire::Chat, Arc::default()));
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    // A short session of the credential: no message of it is long.
    let short = [
        json!({"role": "system", "content": "Be brief."}),
        json!({"role": "user", "content": "hi"}),
    ];
    let response = Wire::Chat.send(
        &gateway,
        Some(CREDENTIAL),
        None,
        &Wire::Chat.body(&short, &[], false),
    );
    assert_eq!(response.status(), 200);
    response.text().unwrap();

    // A call quoting turns this gateway never saw is no session's: the model answers it.
    let stranger = compression_call(&[
        json!({"role": "user", "content": "Deploy the billing service to production tonight."}),
        json!({"role": "assistant", "content": "Deployed."}),
    ]);
    let response = Wire::Chat.send(&gateway, Some(CREDENTIAL), None, &stranger);
    assert_eq!(response.status(), 200);
    assert!(response
        .headers()
        .get("x-ctxhost-client-compaction")
        .is_none());
    let text = response.text().unwrap();
    assert_eq!(
        Wire::Chat.read(&text, false).message["content"],
        UPSTREAM_SUMMARY
    );
    let last = Wire::Chat.requests(&upstream).last().unwrap().clone();
    assert!(
        last.body.contains("Deploy the billing service"),
        "relayed as sent"
    );
    assert_eq!(Wire::Chat.requests(&upstream).len(), 2);
    gateway.wait_for_log("Hermes' compression call names no session and none was found for it");

    // A call quoting the short session's own turns is that session's: the engine answers.
    let own = compression_call(&[json!({"role": "user", "content": "hi"})]);
    let response = Wire::Chat.send(&gateway, Some(CREDENTIAL), None, &own);
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["x-ctxhost-client-compaction"],
        "hermes_compression"
    );
    let text = response.text().unwrap();
    let answer = Wire::Chat.read(&text, false).message["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(answer.contains("[ctxhost handoff: ctxhost.v1."), "{answer}");
    assert_eq!(Wire::Chat.requests(&upstream).len(), 2, "no model call");
}
