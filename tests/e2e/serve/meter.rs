//! One token view and the provider's features: `count_tokens` answers for what the gateway
//! sends upstream for a history (the session's view plus the new messages), counted by the
//! provider when it has the route and by the gateway when it has not, and `passthrough` relays
//! it as it came; the client's `anthropic-beta` values reach the provider untouched, and the
//! config's betas are added for the models that take them, with the window they give.

use ctxhost_tests::anthropic_upstream::{from_openai, reply};
use ctxhost_tests::gateway::GatewayProcess;
use ctxhost_tests::upstream::{Answer, FakeUpstream};
use ctxhost_tests::{long_session, Sandbox};
use serde_json::{json, Value};

const MODEL: &str = "claude-meter";
const KEY: &str = "sk-meter";

/// The text a provider counts in a block or a content value.
fn text_of(content: &Value, out: &mut String) {
    match content {
        Value::String(text) => out.push_str(text),
        Value::Array(blocks) => blocks.iter().for_each(|b| text_of(b, out)),
        Value::Object(block) => {
            for key in ["text", "thinking", "name"] {
                if let Some(Value::String(text)) = block.get(key) {
                    out.push_str(text);
                    out.push('\n');
                }
            }
            if let Some(input) = block.get("input") {
                out.push_str(&input.to_string());
            }
            if let Some(content) = block.get("content") {
                text_of(content, out);
            }
        }
        _ => {}
    }
}

/// What the test provider counts for a Messages body: its system prompt, every message's
/// blocks (tool inputs as JSON) and its tool definitions in o200k_base tokens, and four tokens
/// a message.
fn provider_count(body: &Value) -> u64 {
    let bpe = tiktoken_rs::o200k_base().unwrap();
    let mut text = String::new();
    text_of(&body["system"], &mut text);
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    for message in &messages {
        text_of(&message["content"], &mut text);
        text.push('\n');
    }
    if let Some(tools) = body.get("tools") {
        text.push_str(&tools.to_string());
    }
    bpe.encode_ordinary(&text).len() as u64 + 4 * messages.len() as u64
}

/// A provider that reports the input tokens it counted, and answers `count_tokens` with the
/// same counter when `counts` (else it has no such route).
fn provider(counts: bool) -> FakeUpstream {
    FakeUpstream::start(move |request| {
        let body = request.json();
        let tokens = provider_count(&body);
        if request.path.contains("count_tokens") {
            return if counts {
                Answer::Json(200, json!({"input_tokens": tokens}))
            } else {
                Answer::Json(
                    404,
                    json!({"type": "error", "error": {"type": "not_found_error",
                                                      "message": "Not Found"}}),
                )
            };
        }
        let usage = json!({"input_tokens": tokens, "output_tokens": 2});
        reply(
            request,
            json!([{"type": "text", "text": "Noted."}]),
            Some(usage),
        )
    })
}

fn post(gateway: &GatewayProcess, path: &str, session: &str, body: &Value) -> (u16, Value) {
    let response = reqwest::blocking::Client::new()
        .post(format!("{}/{path}", gateway.base_url()))
        .bearer_auth(KEY)
        .header("anthropic-version", "2023-06-01")
        .header("x-ctxhost-session", session)
        .json(body)
        .send()
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().unwrap())
}

/// The client's `system` and `messages` for the first `upto` messages of the long session.
fn history(upto: usize) -> Value {
    let (system, messages) = from_openai(&long_session()[..upto]);
    json!({"model": MODEL, "system": system, "messages": messages})
}

/// Replays the long session's turns until the engine has compressed and the session has gone
/// on a few turns past it; the last turn's history.
fn compressed_session(gateway: &GatewayProcess, session: &str) -> Value {
    let session_messages = long_session();
    let mut after = 0;
    let mut last = Value::Null;
    for upto in (1..session_messages.len()).filter(|i| session_messages[*i]["role"] == "assistant")
    {
        let mut body = history(upto);
        body["max_tokens"] = json!(1024);
        let (status, answer) = post(gateway, "messages", session, &body);
        assert_eq!(status, 200, "{answer}");
        last = history(upto);
        let state = gateway.session(session, Some(KEY));
        let applied = state["compressions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["error"].is_null() && c["deferred"] != true);
        after += usize::from(applied);
        if after == 3 {
            return last;
        }
    }
    panic!("the session never compressed: {last}");
}

fn assert_close(counted: u64, reference: u64, what: &str) {
    let off = counted.abs_diff(reference) as f64 / reference as f64;
    assert!(
        off <= 0.02,
        "{what}: counted {counted}, the provider received {reference} ({:.1}% off)",
        off * 100.0
    );
}

#[test]
fn count_tokens_counts_the_view_the_upstream_receives() {
    for counts in [true, false] {
        let upstream = provider(counts);
        let sandbox = Sandbox::new();
        sandbox.write_config(&format!(
            "serve:\n  models:\n    {MODEL}: 16000\n  compaction:\n    background: false\n  cache:\n    \
             breakpoints: off\n"
        ));
        let gateway = sandbox.serve(&upstream.base_url(), &[]);
        let last = compressed_session(&gateway, "metered");
        let sent = upstream.messages_requests().last().unwrap().json();
        let received = provider_count(&sent);
        let whole = provider_count(&last);
        // Far enough apart that a count of the whole history fails the 2% check.
        assert!(
            whole > received * 11 / 10,
            "the view is smaller: {whole} vs {received}"
        );
        let before = gateway.session("metered", Some(KEY));

        let (status, answer) = post(&gateway, "messages/count_tokens", "metered", &last);
        assert_eq!(status, 200, "{answer}");
        let counted = answer["input_tokens"].as_u64().unwrap();
        assert_close(counted, received, &format!("provider route: {counts}"));
        if counts {
            // The provider was asked about the very messages it received for that history.
            let asked = upstream
                .received()
                .into_iter()
                .rfind(|r| r.path.contains("count_tokens"))
                .unwrap()
                .json();
            assert_eq!(asked["messages"], sent["messages"]);
            assert_eq!(asked["system"], sent["system"]);
        }
        // Only read: the session is where it was.
        let after = gateway.session("metered", Some(KEY));
        for key in ["requests", "revision", "messages_seen", "view_messages"] {
            assert_eq!(before[key], after[key], "{key}");
        }

        // A history no session knows is counted whole, and no session is made for it.
        let (status, answer) = post(&gateway, "messages/count_tokens", "unknown", &last);
        assert_eq!(status, 200, "{answer}");
        assert_close(
            answer["input_tokens"].as_u64().unwrap(),
            whole,
            "unknown session",
        );
        let (status, _) = gateway.get_json("/ctxhost/sessions/unknown", Some(KEY));
        assert_eq!(status, 404);
        // And the session's next turn continues its lineage.
        let mut next = last.clone();
        next["messages"]
            .as_array_mut()
            .unwrap()
            .push(json!({"role": "assistant", "content": "Noted."}));
        next["messages"]
            .as_array_mut()
            .unwrap()
            .push(json!({"role": "user", "content": "Go on."}));
        let (status, _) = post(&gateway, "messages", "metered", &next);
        assert_eq!(status, 200);
        let state = gateway.session("metered", Some(KEY));
        assert_eq!(state["stats"]["new_lineages"], 0, "{state}");
    }
}

#[test]
fn count_tokens_passthrough_relays_the_clients_request() {
    let upstream = provider(true);
    let sandbox = Sandbox::new();
    sandbox.write_config(&format!(
        "serve:\n  count_tokens: passthrough\n  models:\n    {MODEL}: 16000\n  compaction:\n    \
         background: false\n"
    ));
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let last = compressed_session(&gateway, "relayed");
    let (status, answer) = post(&gateway, "messages/count_tokens", "relayed", &last);
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["input_tokens"], provider_count(&last));
    let asked = upstream
        .received()
        .into_iter()
        .rfind(|r| r.path.contains("count_tokens"))
        .unwrap();
    assert_eq!(asked.json(), last, "the client's request, as it came");
}

#[test]
fn betas_pass_through_and_configured_ones_widen_the_window() {
    let upstream = provider(true);
    let sandbox = Sandbox::new();
    sandbox.write_config(
        "serve:\n  models:\n    claude-opus-4-1: 500000\n  anthropic:\n    betas:\n      - beta: \
         context-1m-2025-08-07\n        models: [\"claude-sonnet-4*\", \"claude-opus-4*\"]\n",
    );
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let client_betas = "interleaved-thinking-2025-05-14, fine-grained-tool-streaming-2025-05-14,\
                        context-management-2025-06-27";
    // (model, the betas the provider receives, the session's window)
    let million = "context-1m-2025-08-07";
    for (model, betas, window) in [
        ("claude-haiku-4-5", client_betas.to_string(), 200_000),
        (
            "claude-sonnet-4-5",
            format!("{client_betas},{million}"),
            1_000_000,
        ),
        // serve.models says otherwise.
        (
            "claude-opus-4-1",
            format!("{client_betas},{million}"),
            500_000,
        ),
    ] {
        let response = reqwest::blocking::Client::new()
            .post(format!("{}/messages?beta=true", gateway.base_url()))
            .bearer_auth(KEY)
            .header("anthropic-beta", client_betas)
            .header("x-ctxhost-session", model)
            .json(&json!({"model": model, "messages": [{"role": "user", "content": "hi"}]}))
            .send()
            .unwrap();
        assert_eq!(response.status(), 200);
        let received = upstream.messages_requests().last().unwrap().clone();
        assert_eq!(received.header("anthropic-beta"), Some(betas.as_str()));
        let state = gateway.session(model, Some(KEY));
        assert_eq!(state["context_length"], window, "{model}");
    }
    // count_tokens carries them too.
    let response = reqwest::blocking::Client::new()
        .post(format!("{}/messages/count_tokens", gateway.base_url()))
        .bearer_auth(KEY)
        .header("anthropic-beta", client_betas)
        .json(
            &json!({"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "hi"}]}),
        )
        .send()
        .unwrap();
    assert_eq!(response.status(), 200);
    let asked = upstream
        .received()
        .into_iter()
        .rfind(|r| r.path.contains("count_tokens"))
        .unwrap();
    assert_eq!(
        asked.header("anthropic-beta"),
        Some(format!("{client_betas},{million}").as_str())
    );
}
