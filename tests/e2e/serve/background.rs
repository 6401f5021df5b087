//! Compressions prepared in the background: no turn waits for the summarizer, and a turn that
//! finds one still being prepared waits at most `serve.compaction.wait_seconds`.

use std::time::Duration;

use ctxhost_tests::upstream::{completion, recorded_upstream, Answer, FakeUpstream};
use ctxhost_tests::{long_session, Sandbox};
use serde_json::{json, Value};

/// A summarizer on 127.0.0.1 that takes `pause` to answer (or never answers).
fn summarizer(pause: Option<Duration>) -> FakeUpstream {
    FakeUpstream::start(move |_| {
        let summary = completion(
            json!({"role": "assistant", "content": "## Goal\nFix the parser.\n## Progress\nRead the files."}),
            None,
        );
        match pause {
            Some(pause) => Answer::After(pause, Box::new(Answer::Json(200, summary))),
            None => Answer::Hang,
        }
    })
}

fn config(summarizer: &FakeUpstream, wait_seconds: f64) -> String {
    format!(
        "model:\n  context_length: 16000\nauxiliary:\n  compression:\n    provider: custom\n    \
         model: slow-summarizer\n    base_url: {}\n    timeout: 60\n    max_retries: 0\n\
         compression:\n  protect_last_n: 4\n\
         serve:\n  compaction:\n    margin: 0.2\n    wait_seconds: {wait_seconds}\n",
        summarizer.base_url()
    )
}

fn send(base: &str, session: &str, history: &[Value]) -> reqwest::blocking::Response {
    let response = reqwest::blocking::Client::new()
        .post(format!("{base}/chat/completions"))
        .bearer_auth("sk-background")
        .header("x-ctxhost-session", session)
        .json(&json!({"model": "gpt-4o", "messages": history}))
        .send()
        .unwrap();
    assert_eq!(response.status(), 200);
    response
}

#[test]
fn no_turn_waits_for_the_summarizer_when_compressions_are_prepared_in_the_background() {
    // Up to the turn whose tool output alone takes the context past the threshold (one step
    // from well below it: that one compresses on its request, as nothing could foresee it).
    let messages = long_session()[..110].to_vec();
    let summarizer = summarizer(Some(Duration::from_secs(1)));
    let model = recorded_upstream(&messages);
    let sandbox = Sandbox::new();
    sandbox.write_config(&config(&summarizer, 2.0));
    let gateway = sandbox.serve(&model.base_url(), &[]);
    let mut ready = 0;
    for index in (0..messages.len()).filter(|i| messages[*i]["role"] == "assistant") {
        send(&gateway.base_url(), "agent", &messages[..index]);
        // The agent thinks (or runs its tools) for longer than the summarizer takes: wait
        // until whatever is being prepared is ready before the next turn.
        let session = gateway.session("agent", Some("sk-background"));
        if session.get("pending").is_some_and(|p| !p.is_null()) {
            ready += 1;
            gateway.wait_for_logs("a compression prepared in the background is ready", ready);
        }
    }
    let session = gateway.session("agent", Some("sk-background"));
    let compressions = session["compressions"].as_array().unwrap();
    assert!(!compressions.is_empty(), "{session}");
    // Every compression was prepared in the background: no request ran the summarizer.
    for compression in compressions {
        assert_eq!(
            compression["trigger"],
            "background",
            "{compression}\n{:#?}",
            gateway.log()
        );
        assert!(compression.get("error").is_none(), "{compression}");
    }
    assert!(
        !summarizer.chat_requests().is_empty(),
        "the summarizer was used"
    );
    assert_eq!(
        session["stats"]["background_compressions"]
            .as_u64()
            .unwrap(),
        compressions.len() as u64
    );
    assert!(session["stats"]["peak_prompt_tokens"].as_u64().unwrap() <= 16000);
}

#[test]
fn a_turn_that_finds_a_compression_still_being_prepared_goes_on_with_the_last_view() {
    let messages = long_session()[..140].to_vec();
    // This summarizer never answers within the test.
    let summarizer = summarizer(None);
    let model = recorded_upstream(&messages);
    let sandbox = Sandbox::new();
    sandbox.write_config(&config(&summarizer, 0.2));
    let gateway = sandbox.serve(&model.base_url(), &[]);
    let turns: Vec<usize> = (0..messages.len())
        .filter(|i| messages[*i]["role"] == "assistant")
        .collect();
    let started = turns
        .iter()
        .position(|index| {
            send(&gateway.base_url(), "busy", &messages[..*index]);
            let session = gateway.session("busy", Some("sk-background"));
            session.get("pending").is_some_and(|p| !p.is_null())
        })
        .expect("the session nears its threshold and starts preparing a compression");
    let sent_before = model.chat_requests().len();
    // The next turn finds it still being prepared: it waits the bound, then goes upstream with
    // the last view and what is new, uncompressed.
    let response = send(&gateway.base_url(), "busy", &messages[..turns[started + 1]]);
    assert!(response.headers().get("x-ctxhost-compressed").is_none());
    assert_eq!(model.chat_requests().len(), sent_before + 1);
    let upstream = model.chat_requests().last().unwrap().json();
    assert_eq!(
        upstream["messages"].as_array().unwrap().len(),
        turns[started + 1],
        "nothing was compressed yet: the whole history went up"
    );
    let session = gateway.session("busy", Some("sk-background"));
    assert!(
        session["pending"].is_object(),
        "still being prepared: {session}"
    );
    assert_eq!(session["compressions"].as_array().unwrap().len(), 0);
}
