//! Each agent's own compaction is recognised only in the shape that agent sends it, never by a
//! phrase inside user text: Claude Code's summary request as its last user message (its text, or
//! a text block of its own after the user's words, a mid-conversation system entry after it);
//! Codex's by the `request_kind` of its turn metadata (the `x-codex-turn-metadata` header, or
//! the body's `client_metadata`) before its prompt text. A user who quotes a summary request in
//! an ordinary question gets the model's answer.

use ctxhost_tests::gateway::GatewayProcess;
use ctxhost_tests::upstream::FakeUpstream;
use ctxhost_tests::wire::Wire;
use ctxhost_tests::Sandbox;
use serde_json::{json, Value};

const CREDENTIAL: &str = "sk-shapes";
/// What the scripted model answers every request with.
const MODEL_ANSWER: &str = "An answer written by the upstream model.";
/// Claude Code 2.1's summary request.
const CLAUDE_PROMPT: &str = "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.\n\nYour task is to create a detailed summary of the conversation so far, paying close attention to the user's explicit requests and your previous actions.";
/// Codex CLI 0.169's local compaction prompt, as it begins.
const CODEX_PROMPT: &str = "You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary for another LLM that will resume the task.";

fn upstream() -> FakeUpstream {
    FakeUpstream::start(|request| {
        let wire = if request.path.contains("messages") {
            Wire::Messages
        } else if request.path.contains("responses") {
            Wire::Responses
        } else {
            Wire::Chat
        };
        wire.reply(
            request,
            &json!({"role": "assistant", "content": MODEL_ANSWER}),
            None,
        )
    })
}

/// A short conversation's opening, and the answer it got.
fn opening(wire: Wire, gateway: &GatewayProcess, session: &str) -> Vec<Value> {
    let mut messages = vec![
        json!({"role": "system", "content": "You are a coding agent."}),
        json!({"role": "user", "content": "Fix the build, please."}),
    ];
    let response = wire.send(
        gateway,
        Some(CREDENTIAL),
        Some(session),
        &wire.body(&messages, &[], false),
    );
    assert_eq!(response.status(), 200);
    messages.push(wire.read(&response.text().unwrap(), false).message);
    messages
}

/// Sends `body` on `wire` with `headers`; the response's headers and its answer's text.
fn send(
    wire: Wire,
    gateway: &GatewayProcess,
    session: &str,
    headers: &[(&str, &str)],
    body: &Value,
) -> (reqwest::header::HeaderMap, String) {
    let mut request = wire
        .post(gateway, Some(CREDENTIAL))
        .header("x-ctxhost-session", session);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.json(body).send().expect("the gateway answers");
    assert_eq!(response.status(), 200);
    let headers = response.headers().clone();
    let text = response.text().unwrap();
    let content = wire.read(&text, false).message["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    (headers, content)
}

#[test]
fn a_user_quoting_claude_codes_summary_request_gets_the_models_answer() {
    let sandbox = Sandbox::new();
    let upstream = upstream();
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let wire = Wire::Messages;
    let mut messages = opening(wire, &gateway, "quoting");
    let question = format!(
        "Claude Code sent my gateway this: \"{CLAUDE_PROMPT}\" What does it ask for, in one line?"
    );
    messages.push(json!({"role": "user", "content": question}));
    let (headers, answer) = send(
        wire,
        &gateway,
        "quoting",
        &[],
        &wire.body(&messages, &[], false),
    );
    assert!(
        headers.get("x-ctxhost-client-compaction").is_none(),
        "{headers:?}"
    );
    assert_eq!(answer, MODEL_ANSWER);
    assert_eq!(
        wire.requests(&upstream).len(),
        2,
        "the question reached the model"
    );
    let sent = wire.sent_messages(wire.requests(&upstream).last().unwrap());
    let last = sent.last().unwrap().to_string();
    assert!(last.contains("What does it ask for"), "{last}");
}

#[test]
fn claude_codes_summary_request_as_a_block_after_the_users_words_is_answered_by_the_engine() {
    let sandbox = Sandbox::new();
    let upstream = upstream();
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let wire = Wire::Messages;
    let mut messages = opening(wire, &gateway, "resumed");
    // After a resume, Claude Code merges its summary request into the user's last turn as a
    // block of its own, a mid-conversation system entry after it.
    messages.push(json!({"role": "user", "content": [
        {"type": "text", "text": "say hi again"},
        {"type": "text", "text": CLAUDE_PROMPT},
    ]}));
    let mut body = wire.body(&messages, &[], false);
    body["messages"]
        .as_array_mut()
        .unwrap()
        .push(json!({"role": "system", "content": "Session resumed."}));
    let (headers, answer) = send(wire, &gateway, "resumed", &[], &body);
    assert_eq!(headers["x-ctxhost-client-compaction"], "claude_summary");
    assert!(answer.contains("<summary>"), "{answer}");
    assert!(answer.contains("[ctxhost handoff: ctxhost.v1."), "{answer}");
    assert_eq!(wire.requests(&upstream).len(), 1, "no model call");
}

/// Codex's turn metadata, as its header and its `client_metadata` carry it.
fn turn_metadata(kind: &str) -> String {
    json!({
        "turn_id": "019a-turn",
        "request_kind": kind,
        "compaction": {"trigger": "auto", "reason": "token_limit", "implementation": "local",
                       "phase": "summarize", "strategy": "handoff"},
        "window_id": "019a-window:0",
    })
    .to_string()
}

/// A Codex request whose last user message is `last`, its turn metadata saying `kind`, in the
/// header or in the body.
fn codex_request(
    gateway: &GatewayProcess,
    messages: &[Value],
    last: &str,
    kind: &str,
    in_body: bool,
) -> (reqwest::header::HeaderMap, String) {
    let wire = Wire::Responses;
    let mut messages = messages.to_vec();
    messages.push(json!({"role": "user", "content": last}));
    let mut body = wire.body(&messages, &[], false);
    let metadata = turn_metadata(kind);
    let headers: Vec<(&str, &str)> = if in_body {
        body["client_metadata"] = json!({"x-codex-turn-metadata": metadata});
        Vec::new()
    } else {
        vec![("x-codex-turn-metadata", metadata.as_str())]
    };
    send(wire, gateway, "codex", &headers, &body)
}

#[test]
fn codexs_compaction_is_told_by_its_turn_metadata_in_the_header_and_in_the_body() {
    let sandbox = Sandbox::new();
    let upstream = upstream();
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let wire = Wire::Responses;
    let messages = opening(wire, &gateway, "codex");
    // A later Codex words its prompt anew: the metadata says what the request is.
    let reworded = "Write a checkpoint of this task for the model that takes it over.";
    for in_body in [false, true] {
        let (headers, answer) = codex_request(&gateway, &messages, reworded, "compaction", in_body);
        assert_eq!(
            headers["x-ctxhost-client-compaction"], "codex_handoff",
            "in the body: {in_body}"
        );
        assert!(answer.contains("[ctxhost handoff: ctxhost.v1."), "{answer}");
        assert_eq!(wire.requests(&upstream).len(), 1, "no model call");
    }
    // A turn the metadata calls a turn is one, whatever its text says.
    for in_body in [false, true] {
        let before = wire.requests(&upstream).len();
        let (headers, answer) = codex_request(&gateway, &messages, CODEX_PROMPT, "turn", in_body);
        assert!(
            headers.get("x-ctxhost-client-compaction").is_none(),
            "{headers:?}"
        );
        assert_eq!(answer, MODEL_ANSWER);
        assert_eq!(wire.requests(&upstream).len(), before + 1);
    }
}
