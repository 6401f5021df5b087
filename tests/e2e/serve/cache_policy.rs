//! The cache-aware policy at the gateway (`serve.compression.cache_aware`, on by default): on a
//! warm cache a compression the engine asks for is held while it would cost the prompt cache
//! more than it saves (until the window requires it); after the cache has expired, a context
//! past the lower threshold is compressed early, the rewrite being free, and the same context
//! on a warm cache is not.

use ctxhost_sdk::Message;
use ctxhost_tests::gateway::GatewayProcess;
use ctxhost_tests::upstream::{completion, Answer, FakeUpstream};
use ctxhost_tests::{long_session, Sandbox};
use ctxhost_tokens::TokenCounter;
use serde_json::{json, Value};

/// A window small enough for the long session to cross its compressor's threshold (half of
/// it, 8,000 tokens) and the policy's lower one (a quarter, 4,000), priced as Claude Sonnet: a
/// cache write costs 12.5 reads, so a rewrite pays back only over many calls.
const CONFIG: &str = "serve:\n  models:\n    claude-sonnet-4-5: 16000\n";

/// The longest history of the long session ending before an assistant turn (a request's
/// history) that counts at most `tokens`.
fn history_of(messages: &[Value], tokens: u64) -> usize {
    let counter = TokenCounter::new("o200k_base");
    let mut longest = 0;
    for index in (1..messages.len()).filter(|i| messages[*i]["role"] == "assistant") {
        let history: Vec<Message> = messages[..index]
            .iter()
            .map(|m| serde_json::from_value(m.clone()).unwrap())
            .collect();
        if counter.count_messages(&history) > tokens {
            break;
        }
        longest = index;
    }
    assert!(
        longest > 0,
        "the long session has a history under {tokens} tokens"
    );
    longest
}

fn send(gateway: &GatewayProcess, session: &str, history: &[Value]) {
    let response = reqwest::blocking::Client::new()
        .post(format!("{}/chat/completions", gateway.base_url()))
        .bearer_auth("sk-cache-policy")
        .header("x-ctxhost-session", session)
        .json(&json!({"model": "claude-sonnet-4-5", "messages": history}))
        .send()
        .unwrap();
    assert_eq!(response.status(), 200, "{}", response.text().unwrap());
}

fn noted() -> FakeUpstream {
    FakeUpstream::start(|_| {
        Answer::Json(
            200,
            completion(json!({"role": "assistant", "content": "Noted."}), None),
        )
    })
}

fn decisions(gateway: &GatewayProcess, outcome: &str) -> u64 {
    let metrics = reqwest::blocking::get(format!("{}/metrics", gateway.url))
        .unwrap()
        .text()
        .unwrap();
    let line = format!("ctxhost_cache_decisions_total{{outcome=\"{outcome}\"}} ");
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(&line))
        .map_or(0, |n| n.parse().unwrap())
}

#[test]
fn a_warm_cache_holds_a_compression_that_would_not_pay_back_until_the_window_requires_it() {
    let messages = long_session();
    let upstream = noted();
    let sandbox = Sandbox::new();
    // Compressions on their request, so when one runs does not hang on how fast a background
    // one finishes on a loaded machine (a request that fits does not wait for it).
    sandbox.write_config(&format!("{CONFIG}  compression:\n    background: false\n"));
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    // Just under the threshold, then one turn at a time past it: the engine asks, and after
    // one call a rewrite at 12.5x a read does not pay back.
    let start = history_of(&messages, 7_600);
    let past = history_of(&messages, 9_000);
    let turns: Vec<usize> = (start..=past)
        .filter(|i| messages[*i]["role"] == "assistant")
        .collect();
    assert!(
        turns.len() >= 3,
        "a few turns cross the threshold: {turns:?}"
    );
    for &turn in &turns {
        send(&gateway, "warm", &messages[..turn]);
    }
    let session = gateway.session("warm", Some("sk-cache-policy"));
    assert_eq!(
        session["compressions"].as_array().unwrap().len(),
        0,
        "held on a warm cache: {session}"
    );
    assert!(decisions(&gateway, "would_not_pay_back") >= 1);
    let last = upstream.chat_requests().last().unwrap().json();
    assert_eq!(
        last["messages"].as_array().unwrap().len(),
        *turns.last().unwrap(),
        "the whole history went upstream"
    );
    // Near the window it is not optional.
    let near = history_of(&messages, 15_000);
    for turn in (past + 1..=near).filter(|i| messages[*i]["role"] == "assistant") {
        send(&gateway, "warm", &messages[..turn]);
    }
    let session = gateway.session("warm", Some("sk-cache-policy"));
    let compressions = session["compressions"].as_array().unwrap();
    assert!(
        !compressions.is_empty(),
        "compressed near the window: {session}"
    );
    assert!(decisions(&gateway, "window_requires") + decisions(&gateway, "pays_back") >= 1);
    assert!(session["stats"]["peak_prompt_tokens"].as_u64().unwrap() <= 16_000);
}

#[test]
fn an_expired_cache_compresses_early_past_the_lower_threshold_and_a_warm_one_does_not() {
    let messages = long_session();
    let upstream = noted();
    let sandbox = Sandbox::new();
    sandbox.write_config(CONFIG);
    // The first request: its system prompt and first task, under the lower threshold.
    let short = history_of(&messages, 2_500);
    // Past the lower threshold (4,000), under the engine's (8,000).
    let middle = history_of(&messages, 6_000);
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    send(&gateway, "idle", &messages[..short]);
    send(&gateway, "busy", &messages[..short]);
    gateway.stop();
    // Two hours pass for the idle session: its last use, as the store keeps it, moves back
    // (past Anthropic's 5-minute cache and OpenAI's idle expiry both).
    let store = sandbox.home().join("data/gateway/sessions.sqlite");
    let db = rusqlite::Connection::open(&store).unwrap();
    let moved = db
        .execute(
            "UPDATE gateway_sessions SET updated_at = updated_at - 7200,
             record = json_set(record, '$.updated_at', json_extract(record, '$.updated_at') - 7200)
             WHERE name = 'idle'",
            [],
        )
        .unwrap();
    assert_eq!(moved, 1);
    drop(db);
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    send(&gateway, "idle", &messages[..middle]);
    send(&gateway, "busy", &messages[..middle]);

    let idle = gateway.session("idle", Some("sk-cache-policy"));
    let compressions = idle["compressions"].as_array().unwrap();
    assert_eq!(compressions.len(), 1, "{idle}");
    assert_eq!(compressions[0]["trigger"], "cold_cache", "{idle}");
    assert!(
        compressions[0]["tokens_after"].as_u64().unwrap()
            < compressions[0]["tokens_before"].as_u64().unwrap(),
        "{idle}"
    );
    let busy = gateway.session("busy", Some("sk-cache-policy"));
    assert_eq!(
        busy["compressions"].as_array().unwrap().len(),
        0,
        "a warm cache under the threshold keeps its prefix: {busy}"
    );
    assert_eq!(decisions(&gateway, "cold_cache_early"), 1);
    let requests = upstream.chat_requests();
    let sent = |index: usize| requests[index].json()["messages"].as_array().unwrap().len();
    assert!(
        sent(2) < middle,
        "the idle session's view went upstream compressed"
    );
    assert_eq!(sent(3), middle, "the busy session's history went whole");
}
