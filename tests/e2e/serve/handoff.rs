//! The gateway's handoff as the agent brings it back: a reference that does not verify here (a
//! rotated key or refreshed token since the compaction, a replaced store, an echoed log) is
//! text that resumes nothing, logged and counted, and the conversation goes on.

use ctxhost_tests::gateway::GatewayProcess;
use ctxhost_tests::upstream::FakeUpstream;
use ctxhost_tests::wire::Wire;
use ctxhost_tests::Sandbox;
use reqwest::blocking::Client;
use serde_json::{json, Value};

const ALICE: &str = "sk-alice";
const BOB: &str = "sk-bob";
/// What the scripted model answers every request with.
const MODEL_ANSWER: &str = "An answer written by the upstream model.";
/// Codex CLI 0.169's local compaction prompt, as it begins.
const CODEX_PROMPT: &str = "You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary for another LLM that will resume the task.";
/// How Codex carries the summary into its new history.
const CODEX_RESUME: &str = "Another language model started to solve this problem and produced a summary of its thinking process. Here is the summary produced by the other language model:\n";

fn upstream() -> FakeUpstream {
    FakeUpstream::start(|request| {
        Wire::Chat.reply(
            request,
            &json!({"role": "assistant", "content": MODEL_ANSWER}),
            None,
        )
    })
}

/// A conversation of `credential` in `session`, compacted by the agent: the handoff text the
/// engine answered with.
fn compacted_by_the_engine(
    gateway: &GatewayProcess,
    credential: &str,
    session: &str,
    opening: &[Value],
) -> String {
    let wire = Wire::Chat;
    let mut messages = opening.to_vec();
    let body = wire.body(&messages, &[], false);
    let response = wire.send(gateway, Some(credential), Some(session), &body);
    assert_eq!(response.status(), 200);
    messages.push(wire.read(&response.text().unwrap(), false).message);
    messages.push(json!({"role": "user", "content": CODEX_PROMPT}));
    let body = wire.body(&messages, &[], false);
    let response = wire.send(gateway, Some(credential), Some(session), &body);
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["x-ctxhost-client-compaction"],
        "codex_handoff"
    );
    let answer = wire.read(&response.text().unwrap(), false).message["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(answer.contains("[ctxhost handoff: ctxhost.v1."), "{answer}");
    answer
}

fn metrics(gateway: &GatewayProcess) -> String {
    Client::new()
        .get(format!("{}/metrics", gateway.url))
        .send()
        .unwrap()
        .text()
        .unwrap()
}

#[test]
fn a_reference_that_does_not_verify_is_text_and_the_conversation_goes_on() {
    let sandbox = Sandbox::new();
    let upstream = upstream();
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let wire = Wire::Chat;
    let opening = [
        json!({"role": "system", "content": "You are a coding agent."}),
        json!({"role": "user", "content": "Fix the build, please."}),
    ];
    let handoff = compacted_by_the_engine(&gateway, ALICE, "alice-session", &opening);

    // The compacted history comes back under another credential (the key was rotated since):
    // the reference does not verify for it, so it resumes nothing and is read as text.
    let mut compacted = opening.to_vec();
    compacted.push(json!({"role": "user", "content": format!("{CODEX_RESUME}{handoff}")}));
    compacted.push(json!({"role": "user", "content": "Now the tests."}));
    let response = wire.send(
        &gateway,
        Some(BOB),
        None,
        &wire.body(&compacted, &[], false),
    );
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-ctxhost-lineage"], "first");
    let text = response.text().unwrap();
    assert_eq!(wire.read(&text, false).message["content"], MODEL_ANSWER);
    let sent = wire.sent_messages(wire.requests(&upstream).last().unwrap());
    assert_eq!(
        sent.len(),
        compacted.len(),
        "the history goes as it came: {sent:?}"
    );
    assert_eq!(sent.last().unwrap()["content"], "Now the tests.");
    gateway.wait_for_log("a ctxhost handoff reference in the request does not verify");

    // And the turn after it.
    compacted.push(json!({"role": "assistant", "content": MODEL_ANSWER}));
    compacted.push(json!({"role": "user", "content": "And the docs."}));
    let response = wire.send(
        &gateway,
        Some(BOB),
        None,
        &wire.body(&compacted, &[], false),
    );
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-ctxhost-lineage"], "continued");
    let sent = wire.sent_messages(wire.requests(&upstream).last().unwrap());
    assert_eq!(sent.last().unwrap()["content"], "And the docs.");
    assert!(
        metrics(&gateway).contains("ctxhost_unverified_references_total 2\n"),
        "{}",
        metrics(&gateway)
    );
}

/// The reference in a handoff text's marker line.
fn marker_line(handoff: &str) -> &str {
    handoff
        .lines()
        .find(|line| line.starts_with("[ctxhost handoff: "))
        .expect("the handoff holds its marker line")
}

#[test]
fn a_handoff_line_pasted_into_another_conversation_swaps_nothing() {
    let sandbox = Sandbox::new();
    let upstream = upstream();
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let wire = Wire::Chat;
    let opening = [
        json!({"role": "system", "content": "You are Alice's build agent."}),
        json!({"role": "user", "content": "Fix the build of the billing service, please."}),
    ];
    let handoff = compacted_by_the_engine(&gateway, ALICE, "alice-session", &opening);
    let line = marker_line(&handoff);

    // Another conversation of the same credential, naming no session, quotes the line amid its
    // own words; then ends its own words with it.
    let pasted = [
        format!("I found this line in a log:\n{line}\nWhat does it mean?"),
        format!("What does the last line of this mean?\n\n{line}"),
    ];
    for (n, question) in pasted.iter().enumerate() {
        let system = format!("You are Bob's helper, conversation {n}.");
        let messages = [
            json!({"role": "system", "content": system}),
            json!({"role": "user", "content": question}),
        ];
        let response = wire.send(
            &gateway,
            Some(ALICE),
            None,
            &wire.body(&messages, &[], false),
        );
        assert_eq!(response.status(), 200);
        assert_ne!(response.headers()["x-ctxhost-session"], "alice-session");
        assert_eq!(response.headers()["x-ctxhost-lineage"], "first");
        let text = response.text().unwrap();
        assert_eq!(wire.read(&text, false).message["content"], MODEL_ANSWER);
        let sent = wire.sent_messages(wire.requests(&upstream).last().unwrap());
        assert_eq!(sent[0]["content"], system.as_str(), "{sent:?}");
        assert_eq!(
            sent.last().unwrap()["content"],
            question.as_str(),
            "{sent:?}"
        );
        let all = serde_json::to_string(&sent).unwrap();
        assert!(
            !all.contains("billing service"),
            "the other session's view: {all}"
        );
    }
}

#[test]
fn a_pasted_marker_ending_a_users_first_words_resumes_nothing_at_a_later_turn_and_the_text_handed_out_does(
) {
    let sandbox = Sandbox::new();
    let upstream = upstream();
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let wire = Wire::Chat;
    let opening = [
        json!({"role": "system", "content": "You are Alice's build agent."}),
        json!({"role": "user", "content": "Fix the build of the billing service, please."}),
    ];
    let handoff = compacted_by_the_engine(&gateway, ALICE, "alice-session", &opening);
    let line = marker_line(&handoff);

    // Another conversation of the same credential, naming no session, ends its first words
    // with the line after a blank line, as a handoff text does; the model answers, and the
    // next turn starts with those words at the head of the history, followed.
    let system = "You are Bob's helper.";
    let question = format!("What does the last line of this mean?\n\n{line}");
    let mut messages = vec![
        json!({"role": "system", "content": system}),
        json!({"role": "user", "content": question}),
    ];
    let send = |messages: &[Value]| {
        let response = wire.send(
            &gateway,
            Some(ALICE),
            None,
            &wire.body(messages, &[], false),
        );
        assert_eq!(response.status(), 200);
        let headers = response.headers().clone();
        let text = response.text().unwrap();
        assert_eq!(wire.read(&text, false).message["content"], MODEL_ANSWER);
        let sent = wire.sent_messages(wire.requests(&upstream).last().unwrap());
        (headers, sent)
    };
    let (first, _) = send(&messages);
    let bobs = first["x-ctxhost-session"].to_str().unwrap().to_string();
    assert_ne!(bobs, "alice-session");
    messages.push(json!({"role": "assistant", "content": MODEL_ANSWER}));
    messages.push(json!({"role": "user", "content": "And the line before it?"}));
    let (later, sent) = send(&messages);
    assert_eq!(later["x-ctxhost-session"], bobs.as_str());
    assert_eq!(later["x-ctxhost-lineage"], "continued");
    assert_eq!(sent[0]["content"], system, "{sent:?}");
    assert_eq!(sent[1]["content"], question.as_str(), "{sent:?}");
    assert_eq!(sent.last().unwrap()["content"], "And the line before it?");
    let all = serde_json::to_string(&sent).unwrap();
    assert!(
        !all.contains("billing service"),
        "the other session's view: {all}"
    );
    gateway.wait_for_log("is not the one the gateway handed out");

    // The text the gateway handed out, kept whole by a client no profile tells, with its next
    // words after it, takes the session up.
    let compacted = [
        json!({"role": "system", "content": "You are Alice's build agent."}),
        json!({"role": "user", "content": handoff}),
        json!({"role": "user", "content": "Now the tests."}),
    ];
    let (resumed, sent) = send(&compacted);
    assert_eq!(resumed["x-ctxhost-session"], "alice-session");
    assert_eq!(resumed["x-ctxhost-lineage"], "continued");
    let all = serde_json::to_string(&sent).unwrap();
    assert!(
        !all.contains("ctxhost.v1."),
        "the upstream never sees the reference: {all}"
    );
    assert_eq!(sent.last().unwrap()["content"], "Now the tests.");
}
