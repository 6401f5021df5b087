//! The agent's own compaction (`serve.client_compaction`): each client's summary request, a
//! Responses `compaction_trigger` and `POST /v1/responses/compact` answered by the session's
//! engine without the upstream, the agent's compacted history continuing the session (with lcm,
//! its tools still reach what came before), `upstream` leaving the request to the provider
//! uncompressed, `passthrough` relaying provider-owned compaction untouched, and an altered
//! reference resuming nothing.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use ctxhost_test_postgres::Postgres;
use ctxhost_tests::gateway::GatewayProcess;
use ctxhost_tests::per_wire;
use ctxhost_tests::upstream::{tool_call, Answer, FakeUpstream, Recorded};
use ctxhost_tests::wire::Wire;
use ctxhost_tests::{long_session, long_session_marked, Sandbox};
use reqwest::blocking::Client;
use serde_json::{json, Value};

pub(super) const MARKER: &str = "COMPACTED-MARKER-5512";
const CREDENTIAL: &str = "sk-compaction";
/// Codex CLI 0.169's local compaction prompt, as it begins.
const CODEX_PROMPT: &str = "You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary for another LLM that will resume the task.";
/// How Codex carries the summary into its new history.
const CODEX_RESUME: &str = "Another language model started to solve this problem and produced a summary of its thinking process. Here is the summary produced by the other language model:\n";
/// Claude Code 2.1's summary request.
const CLAUDE_PROMPT: &str = "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.\n\nYour task is to create a detailed summary of the conversation so far, paying close attention to the user's explicit requests and your previous actions.";
/// How Claude Code carries the summary into its new history.
const CLAUDE_RESUME: &str = "This session is being continued from a previous conversation that ran out of context. The summary below covers the earlier portion of the conversation.\nSummary:\n";
/// What a model asked to summarise would answer: never seen when the engine answers.
pub(super) const UPSTREAM_SUMMARY: &str = "A summary written by the upstream model.";

/// Each wire's client compacting: its prompt, and how it resumes from the summary it got.
fn client_of(wire: Wire) -> (&'static str, &'static str) {
    match wire {
        Wire::Messages => (CLAUDE_PROMPT, CLAUDE_RESUME),
        _ => (CODEX_PROMPT, CODEX_RESUME),
    }
}

/// The summary the client keeps from the answer's text (Claude Code reads its `<summary>`).
fn kept_summary(text: &str) -> String {
    match (text.find("<summary>"), text.find("</summary>")) {
        (Some(start), Some(end)) => text[start + "<summary>".len()..end].trim().to_string(),
        _ => text.to_string(),
    }
}

/// Whether a request is one of the agents' compaction requests (Codex, Claude Code, Hermes).
pub(super) fn is_compaction_prompt(body: &str) -> bool {
    body.contains("CONTEXT CHECKPOINT COMPACTION")
        || body.contains("create a detailed summary of the conversation")
        || body.contains("summarization agent creating a context checkpoint")
        || body.contains("compaction_trigger")
}

/// The scripted model: replays recorded answers; asked for a summary, writes one; asked about
/// the marker, searches with `lcm_grep`; given the search's result, reports it.
pub(super) fn model(
    wire: Wire,
    recorded: Arc<Mutex<VecDeque<Value>>>,
) -> impl Fn(&Recorded) -> Answer {
    move |request| {
        let messages = wire.sent_messages(request);
        let last = messages.last().unwrap();
        let text = last["content"].as_str().unwrap_or_default();
        let message = if is_compaction_prompt(&request.body) {
            json!({"role": "assistant", "content": UPSTREAM_SUMMARY})
        } else if last["role"] == "tool" {
            let found = messages
                .iter()
                .filter(|m| m["role"] == "tool")
                .any(|m| m["content"].as_str().unwrap_or_default().contains(MARKER));
            json!({"role": "assistant", "content": format!("Search done; marker found: {found}")})
        } else if text.contains("Which marker") {
            let call = tool_call(
                "call_grep",
                "lcm_grep",
                json!({"pattern": MARKER, "scope": "messages"}),
            );
            json!({"role": "assistant", "content": null, "tool_calls": [call]})
        } else {
            recorded
                .lock()
                .unwrap()
                .pop_front()
                .unwrap_or_else(|| json!({"role": "assistant", "content": "ok"}))
        };
        wire.reply(request, &message, None)
    }
}

/// Sends `messages` as one turn of `session`; the response's lineage header and its text.
fn turn(
    wire: Wire,
    gateway: &GatewayProcess,
    session: Option<&str>,
    messages: &[Value],
    stream: bool,
) -> (reqwest::header::HeaderMap, String) {
    let body = wire.body(messages, &[], stream);
    let response = wire.send(gateway, Some(CREDENTIAL), session, &body);
    assert_eq!(response.status(), 200);
    let headers = response.headers().clone();
    (headers, response.text().unwrap())
}

per_wire! {
    fn the_agents_summary_request_is_answered_by_the_engine_and_its_compacted_history_continues(wire: Wire) {
        let sandbox = Sandbox::new();
        sandbox.link_repo_plugins();
        sandbox.write_config("context:\n  engine: lcm\nmodel:\n  context_length: 16000\n");
        let session = "agent-compacts";
        let messages = long_session_marked(120, MARKER);
        let recorded: VecDeque<Value> = messages
            .iter()
            .filter(|m| m["role"] == "assistant")
            .cloned()
            .collect();
        let upstream = FakeUpstream::start(model(wire, Arc::new(Mutex::new(recorded))));
        let gateway = sandbox.serve(&upstream.base_url(), &[]);
        for index in 0..messages.len() {
            if messages[index]["role"] == "assistant" {
                turn(wire, &gateway, Some(session), &messages[..index], false);
            }
        }
        let calls_before = wire.requests(&upstream).len();

        // The agent's own compaction, streamed as the agents ask: the engine answers.
        let (prompt, resume) = client_of(wire);
        let mut asking = messages.clone();
        asking.push(json!({"role": "user", "content": prompt}));
        let (headers, text) = turn(wire, &gateway, Some(session), &asking, true);
        assert_eq!(wire.requests(&upstream).len(), calls_before, "no model call");
        assert_eq!(headers["x-ctxhost-client-compaction"], match wire {
            Wire::Messages => "claude_summary",
            _ => "codex_handoff",
        });
        let reply = wire.read(&text, true);
        let answer = reply.message["content"].as_str().unwrap().to_string();
        assert!(!answer.contains(UPSTREAM_SUMMARY), "{answer}");
        assert!(answer.contains("lcm_grep"), "the handoff names the engine's tools: {answer}");
        assert!(answer.contains("[ctxhost handoff: ctxhost.v1."), "{answer}");
        let usage = reply.usage.expect("the answer reports usage");
        assert!(usage.output > 0 && usage.input > usage.output, "{usage:?}");

        // The agent goes on from its compacted history: its first request, the summary, and a
        // question about what was compacted away long before.
        let handoff = format!("{resume}{}", kept_summary(&answer));
        let question = "Which marker did I plant?";
        let mut compacted = vec![messages[0].clone(), messages[1].clone()];
        if wire == Wire::Messages {
            // Claude Code sends the summary and the user's next words as one turn.
            compacted.push(json!({"role": "user", "content": [
                {"type": "text", "text": handoff}, {"type": "text", "text": question}]}));
        } else {
            compacted.push(json!({"role": "user", "content": handoff}));
            compacted.push(json!({"role": "user", "content": question}));
        }
        let (headers, text) = turn(wire, &gateway, Some(session), &compacted, false);
        assert_eq!(headers["x-ctxhost-lineage"], "continued");
        gateway.wait_for_log("around the gateway's handoff: the lineage continues");
        assert_eq!(
            wire.read(&text, false).message["content"],
            "Search done; marker found: true"
        );
        let calls = &wire.requests(&upstream)[calls_before..];
        assert_eq!(calls.len(), 2, "the question, then the search's result");
        for call in calls {
            assert!(!call.body.contains("ctxhost.v1."), "the upstream never sees the reference");
            assert!(!is_compaction_prompt(&call.body));
        }
        let state = wire.session(&gateway, session, Some(CREDENTIAL));
        assert_eq!(state["stats"]["new_lineages"], 0, "{state}");
        assert!(state["compressions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["trigger"] == "client"), "{state}");
    }

    fn a_summary_request_is_answered_whole_without_the_upstream(wire: Wire) {
        let sandbox = Sandbox::new();
        let upstream = FakeUpstream::start(model(wire, Arc::default()));
        let gateway = sandbox.serve(&upstream.base_url(), &[]);
        let mut messages = vec![
            json!({"role": "system", "content": "You are a coding agent."}),
            json!({"role": "user", "content": format!("Remember {MARKER}.")}),
        ];
        let (_, text) = turn(wire, &gateway, Some("short"), &messages, false);
        messages.push(wire.read(&text, false).message);
        messages.push(json!({"role": "user", "content": client_of(wire).0}));
        let (headers, text) = turn(wire, &gateway, Some("short"), &messages, false);
        assert_eq!(wire.requests(&upstream).len(), 1, "only the first turn went upstream");
        assert_eq!(headers["x-ctxhost-session"], "short");
        let answer = wire.read(&text, false).message["content"].as_str().unwrap().to_string();
        assert!(answer.contains("[ctxhost handoff: ctxhost.v1."), "{answer}");
        assert!(!answer.contains(UPSTREAM_SUMMARY));
    }
}

/// A Responses body for `messages` with the given items after them.
fn responses_body(messages: &[Value], more: &[Value], stream: bool) -> Value {
    let mut body = Wire::Responses.body(messages, &[], stream);
    body["input"]
        .as_array_mut()
        .unwrap()
        .extend(more.iter().cloned());
    body
}

fn post(
    gateway: &GatewayProcess,
    path: &str,
    session: Option<&str>,
    body: &Value,
) -> reqwest::blocking::Response {
    let mut request = Client::new()
        .post(format!("{}{path}", gateway.base_url()))
        .bearer_auth(CREDENTIAL);
    if let Some(session) = session {
        request = request.header("x-ctxhost-session", session);
    }
    request.json(body).send().expect("the gateway answers")
}

/// A streamed Responses answer's events, in order.
fn events_of(text: &str) -> Vec<Value> {
    text.split("\n\n")
        .filter_map(|frame| frame.lines().find_map(|l| l.strip_prefix("data: ")))
        .map(|data| serde_json::from_str(data).expect("an event is JSON"))
        .collect()
}

fn opening() -> Vec<Value> {
    vec![
        json!({"role": "system", "content": "You are Codex."}),
        json!({"role": "user", "content": format!("The password is {MARKER}; fix the build.")}),
        json!({"role": "assistant", "content": "Fixed."}),
        json!({"role": "user", "content": "Now the tests."}),
    ]
}

fn upstream_answering_ok() -> FakeUpstream {
    FakeUpstream::start(|request| {
        if request.path.starts_with("/v1/responses/compact") {
            let item = json!({"type": "compaction", "encrypted_content": "gAAAA-provider-made"});
            return Answer::Json(200, json!({"output": [item]}));
        }
        Wire::Responses.reply(
            request,
            &json!({"role": "assistant", "content": "ok"}),
            None,
        )
    })
}

#[test]
fn a_compaction_trigger_gets_one_compaction_item_that_continues_the_session() {
    let sandbox = Sandbox::new();
    let upstream = upstream_answering_ok();
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let session = "codex-remote";
    let messages = opening();
    let response = post(
        &gateway,
        "/responses",
        Some(session),
        &responses_body(&messages[..2], &[], false),
    );
    assert_eq!(response.status(), 200);
    let trigger = json!({"type": "compaction_trigger"});

    // Whole.
    let response = post(
        &gateway,
        "/responses",
        Some(session),
        &responses_body(&messages, std::slice::from_ref(&trigger), false),
    );
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["x-ctxhost-client-compaction"],
        "compaction_trigger"
    );
    let answer: Value = response.json().unwrap();
    let output = answer["output"].as_array().unwrap();
    assert_eq!(output.len(), 1, "{answer}");
    assert_eq!(output[0]["type"], "compaction");
    assert!(output[0]["encrypted_content"]
        .as_str()
        .unwrap()
        .starts_with("ctxhost.v1."));
    assert!(
        answer["usage"]["input_tokens"].as_u64().unwrap() > 0,
        "{answer}"
    );

    // Streamed: exactly the four events Codex waits for.
    let response = post(
        &gateway,
        "/responses",
        Some(session),
        &responses_body(&messages, &[trigger], true),
    );
    assert_eq!(response.status(), 200);
    let events = events_of(&response.text().unwrap());
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "response.created",
            "response.output_item.added",
            "response.output_item.done",
            "response.completed"
        ]
    );
    let completed = &events[3]["response"]["output"];
    assert_eq!(completed.as_array().unwrap().len(), 1);
    let item = completed[0].clone();
    assert_eq!(item["type"], "compaction");
    assert_eq!(events[2]["item"], item);
    assert_eq!(
        upstream.responses_requests().len(),
        1,
        "neither reached the upstream"
    );

    // Codex goes on with the item in place of its history, naming no session: the reference
    // names it, and the upstream gets the session's view in its place.
    let next = responses_body(
        &[messages[0].clone()],
        &[
            item.clone(),
            json!({"type": "message", "role": "user",
                               "content": [{"type": "input_text", "text": "And the docs."}]}),
        ],
        false,
    );
    let response = post(&gateway, "/responses", None, &next);
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-ctxhost-session"], session);
    assert_eq!(response.headers()["x-ctxhost-lineage"], "continued");
    let sent = upstream.responses_requests().last().unwrap().clone();
    assert!(!sent.body.contains("ctxhost.v1."), "{}", sent.body);
    assert!(
        sent.body.contains(MARKER),
        "the view stands for the compacted history"
    );
    assert!(sent.body.contains("And the docs."));
    let state = gateway.session(session, Some(CREDENTIAL));
    assert_eq!(state["stats"]["new_lineages"], 0, "{state}");

    // An altered reference resumes nothing: the item, which no provider can read, is taken
    // out, and the request goes on as a conversation of its own.
    let mut forged = item;
    let content = forged["encrypted_content"].as_str().unwrap().to_string();
    let flipped = if content.ends_with('0') { "1" } else { "0" };
    forged["encrypted_content"] = json!(format!("{}{flipped}", &content[..content.len() - 1]));
    let calls = upstream.responses_requests().len();
    let response = post(
        &gateway,
        "/responses",
        None,
        &responses_body(&[messages[0].clone()], &[forged], false),
    );
    assert_eq!(response.status(), 200);
    assert_ne!(response.headers()["x-ctxhost-session"], session);
    assert_eq!(upstream.responses_requests().len(), calls + 1);
    let sent = upstream.responses_requests().last().unwrap().clone();
    assert!(!sent.body.contains("ctxhost.v1."), "{}", sent.body);
    assert!(
        !sent.body.contains(MARKER),
        "no view of the session: {}",
        sent.body
    );
    gateway.wait_for_log("a ctxhost handoff reference in the request does not verify");
}

#[test]
fn the_compact_route_is_answered_by_the_engine() {
    let sandbox = Sandbox::new();
    let upstream = upstream_answering_ok();
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let body = responses_body(&opening(), &[], false);
    let body = json!({"model": body["model"], "input": body["input"], "instructions": body["instructions"]});
    let response = post(&gateway, "/responses/compact", Some("compact-route"), &body);
    assert_eq!(response.status(), 200);
    let answer: Value = response.json().unwrap();
    assert_eq!(answer["object"], "response.compaction", "{answer}");
    let output = answer["output"].as_array().unwrap();
    assert_eq!(output.len(), 1);
    assert_eq!(output[0]["type"], "compaction");
    assert!(output[0]["encrypted_content"]
        .as_str()
        .unwrap()
        .starts_with("ctxhost.v1."));
    assert!(upstream.received().is_empty(), "the upstream never saw it");
}

#[test]
fn with_upstream_the_agents_compaction_goes_on_uncompressed() {
    let sandbox = Sandbox::new();
    sandbox.write_config("model:\n  context_length: 8000\nserve:\n  client_compaction: upstream\n");
    let upstream = FakeUpstream::start(|request| {
        Wire::Responses.reply(
            request,
            &json!({"role": "assistant", "content": UPSTREAM_SUMMARY}),
            None,
        )
    });
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let mut messages = long_session();
    messages.truncate(60);
    // The same history as an ordinary request is compressed...
    let mut ordinary = messages.clone();
    ordinary.push(json!({"role": "user", "content": "Go on."}));
    let (headers, _) = turn(
        Wire::Responses,
        &gateway,
        Some("ordinary"),
        &ordinary,
        false,
    );
    assert_eq!(headers["x-ctxhost-compressed"], "true");
    // ... but as the agent's compaction it reaches the upstream whole, uncompressed.
    let mut asking = messages.clone();
    asking.push(json!({"role": "user", "content": CODEX_PROMPT}));
    let body = Wire::Responses.body(&asking, &[], true);
    let response = Wire::Responses.send(&gateway, Some(CREDENTIAL), Some("left"), &body);
    assert_eq!(response.status(), 200);
    assert!(response.headers().get("x-ctxhost-compressed").is_none());
    assert_eq!(
        Wire::Responses
            .read(&response.text().unwrap(), true)
            .message["content"],
        UPSTREAM_SUMMARY
    );
    let sent = upstream.responses_requests().last().unwrap().json();
    assert_eq!(
        Wire::Responses.conversation(&sent),
        Wire::Responses.conversation(&body)
    );
    let state = gateway.session("left", Some(CREDENTIAL));
    assert!(
        state["compressions"].as_array().unwrap().is_empty(),
        "{state}"
    );
}

#[test]
fn with_passthrough_provider_owned_compaction_is_the_providers() {
    let sandbox = Sandbox::new();
    sandbox.write_config("serve:\n  client_compaction: passthrough\n");
    let upstream = upstream_answering_ok();
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let messages = opening();
    // The provider's own item goes back to it exactly as it came.
    let foreign = r#"{"type":"compaction","id":"cmp_1","encrypted_content":"gAAAAABo-Opaque_Provider+Blob=="}"#;
    let body = responses_body(
        &messages[..1],
        &[
            serde_json::from_str(foreign).unwrap(),
            json!({"role": "user", "content": "Continue."}),
        ],
        false,
    );
    let response = post(&gateway, "/responses", Some("provider-owned"), &body);
    assert_eq!(response.status(), 200);
    let sent = upstream.responses_requests().last().unwrap().clone();
    assert!(sent.body.contains(foreign), "{}", sent.body);

    // A trigger and the compact route reach the provider as they were sent.
    let trigger = responses_body(&messages, &[json!({"type": "compaction_trigger"})], false);
    let text = serde_json::to_string(&trigger).unwrap();
    let response = Client::new()
        .post(format!("{}/responses", gateway.base_url()))
        .bearer_auth(CREDENTIAL)
        .header("content-type", "application/json")
        .body(text.clone())
        .send()
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-ctxhost-context"], "unmanaged");
    assert_eq!(upstream.responses_requests().last().unwrap().body, text);
    let compact = json!({"model": "gpt-4o", "input": trigger["input"], "instructions": "compact"});
    let response = post(&gateway, "/responses/compact", None, &compact);
    assert_eq!(response.status(), 200);
    let answer: Value = response.json().unwrap();
    assert_eq!(
        answer["output"][0]["encrypted_content"],
        "gAAAA-provider-made"
    );
    let last = upstream.responses_requests().last().unwrap().clone();
    assert_eq!(last.path, "/v1/responses/compact");
    assert_eq!(last.json(), compact);
}

#[test]
fn config_validate_names_a_client_compaction_it_does_not_know() {
    let sandbox = Sandbox::new();
    sandbox.write_config("serve:\n  client_compaction: provider\n");
    let run = sandbox.ctxhost(&["config", "validate"]);
    assert!(!run.success(), "{run:?}");
    assert!(
        run.stderr.contains("config.yaml:2: serve.client_compaction: unknown variant `provider`, expected one of `engine`, `upstream`, `passthrough`"),
        "{}",
        run.stderr
    );
    sandbox.write_config("serve:\n  client_compaction: passthrough\n");
    let run = sandbox.ctxhost(&["config", "validate"]);
    assert!(run.success(), "{run:?}");
}

#[test]
fn gateways_sharing_a_postgresql_state_know_each_others_compaction_items() {
    let url = Postgres::database("client_compaction");
    let upstream = upstream_answering_ok();
    let (one, two) = (Sandbox::new(), Sandbox::new());
    for sandbox in [&one, &two] {
        sandbox.write_config(&format!("serve:\n  state: {url}\n"));
    }
    let first = one.serve(&upstream.base_url(), &[]);
    let second = two.serve(&upstream.base_url(), &[]);
    let messages = opening();
    let trigger = json!({"type": "compaction_trigger"});
    let response = post(
        &first,
        "/responses",
        Some("shared"),
        &responses_body(&messages, std::slice::from_ref(&trigger), false),
    );
    assert_eq!(response.status(), 200);
    let item = response.json::<Value>().unwrap()["output"][0].clone();
    let next = responses_body(
        &messages[..1],
        &[item, json!({"role": "user", "content": "And the docs."})],
        false,
    );
    let response = post(&second, "/responses", None, &next);
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-ctxhost-session"], "shared");
    assert_eq!(response.headers()["x-ctxhost-lineage"], "continued");
    let sent = upstream.responses_requests().last().unwrap().clone();
    assert!(sent.body.contains(MARKER) && !sent.body.contains("ctxhost.v1."));
}
