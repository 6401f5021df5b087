//! Recall behind the gateway: with lcm, a fact summarized away long ago goes upstream again,
//! marked as recalled, when the newest message asks about it in other words; the session
//! says what was recalled and the metrics count it. With an engine that has no recall, the
//! upstream gets the view as before.

use ctxhost_tests::upstream::{reply, FakeUpstream};
use ctxhost_tests::Sandbox;
use serde_json::{json, Value};

const FACT: &str = "The deploy target is the eu-west-2 cluster.";
const MARKER: &str = "[ctxhost recalled ";

/// A model that answers every call with the same short message.
fn model() -> FakeUpstream {
    FakeUpstream::start(|request| {
        reply(
            request,
            json!({"role": "assistant", "content": "Done."}),
            None,
        )
    })
}

/// The fact, then `turns` turns of other work.
fn session(turns: usize) -> Vec<Value> {
    let mut messages = vec![
        json!({"role": "system", "content": "You are a coding agent."}),
        json!({"role": "user", "content": format!("Before we start: {FACT}")}),
        json!({"role": "assistant", "content": "Understood."}),
    ];
    for turn in 0..turns {
        messages.push(json!({"role": "user", "content": format!(
            "Refactor the parser module number {turn}: rename helper_{turn}, split its match \
             arms into functions and add a unit test for each of them. {}",
            "Keep the public names as they are. ".repeat(6)
        )}));
        messages.push(json!({"role": "assistant", "content": format!(
            "Renamed helper_{turn} to parse_step_{turn}; its unit tests pass."
        )}));
    }
    messages
}

/// Sends the session turn by turn (as an agent does), then `question`; the upstream's last
/// request.
fn drive(sandbox: &Sandbox, question: &str) -> (FakeUpstream, Vec<Value>, Value, String) {
    let upstream = model();
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let client = reqwest::blocking::Client::new();
    let mut messages = session(60);
    messages.push(json!({"role": "user", "content": question}));
    let users: Vec<usize> = (0..messages.len())
        .filter(|i| messages[*i]["role"] == "user")
        .collect();
    for end in users {
        let response = client
            .post(format!("{}/chat/completions", gateway.base_url()))
            .bearer_auth("sk-recall")
            .header("x-ctxhost-session", "recall")
            .json(&json!({"model": "gpt-4o", "messages": &messages[..=end]}))
            .send()
            .unwrap();
        assert_eq!(response.status(), 200, "{}", response.text().unwrap());
    }
    let last = upstream.chat_requests().last().unwrap().messages();
    let state = gateway.session("recall", Some("sk-recall"));
    let metrics = client
        .get(format!("{}/metrics", gateway.url))
        .send()
        .unwrap()
        .text()
        .unwrap();
    (upstream, last, state, metrics)
}

fn recalled(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|m| m["content"].as_str())
        .filter(|text| text.starts_with(MARKER))
        .map(str::to_string)
        .collect()
}

#[test]
fn lcm_recalls_a_fact_summarized_away_when_the_question_asks_for_it_in_other_words() {
    let sandbox = Sandbox::new();
    sandbox
        .link_repo_plugins()
        // Compressions whenever lcm asks (not weighed against the prompt cache, which would
        // hold them on this short session), on the request that asks (not prepared in the
        // background, which a loaded machine may not finish before the session ends): the
        // test is what recall brings back after them.
        .write_config(
            "context:\n  engine: lcm\nmodel:\n  context_length: 8000\n\
             serve:\n  compression:\n    cache_aware: false\n    background: false\n",
        );
    let (_upstream, last, state, metrics) = drive(&sandbox, "Which region do we ship to?");
    assert!(
        !state["compressions"].as_array().unwrap().is_empty(),
        "the session compressed: {state}"
    );
    // Not in the view as the client wrote it: summarized away.
    let asked = format!("Before we start: {FACT}");
    assert!(
        !last.iter().any(|m| m["content"] == json!(asked)),
        "{last:#?}"
    );
    let recalled = recalled(&last);
    assert!(
        recalled.iter().any(|text| text.contains(FACT)),
        "the upstream got no recalled fact: {recalled:#?}"
    );
    // Before the verbatim messages: the question is still last.
    assert_eq!(
        last.last().unwrap()["content"],
        json!("Which region do we ship to?")
    );
    let listed = state["last_recalled"].as_array().unwrap();
    assert_eq!(listed.len(), recalled.len(), "{state}");
    assert!(
        listed
            .iter()
            .any(|item| item["source"]["kind"] == "messages"),
        "{state}"
    );
    assert!(
        state["stats"]["recalled_items"].as_u64().unwrap() >= 1,
        "{state}"
    );
    assert!(
        metrics
            .lines()
            .any(|line| line.starts_with("ctxhost_recalled_items_total ") && !line.ends_with(" 0")),
        "{metrics}"
    );
}

#[test]
fn an_engine_without_recall_sends_the_view_as_before() {
    let sandbox = Sandbox::new();
    sandbox.write_config("model:\n  context_length: 8000\n");
    let (_upstream, last, state, _) = drive(&sandbox, "Which region do we ship to?");
    assert_eq!(state["engine"], "compressor", "{state}");
    assert!(recalled(&last).is_empty(), "{last:#?}");
    assert!(
        state
            .get("last_recalled")
            .is_none_or(|v| v.as_array().unwrap().is_empty()),
        "{state}"
    );
    assert_eq!(state["stats"]["recalled_items"], 0, "{state}");
}
