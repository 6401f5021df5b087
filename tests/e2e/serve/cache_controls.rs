//! The provider's cache controls the gateway sets: how long its Anthropic breakpoints live
//! (`serve.anthropic.cache_ttl`), OpenAI's `prompt_cache_key` per session, and the prefix it
//! sends staying byte-for-byte the same between compressions.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use ctxhost_tests::anthropic_upstream::reply;
use ctxhost_tests::per_wire;
use ctxhost_tests::upstream::FakeUpstream;
use ctxhost_tests::wire::Wire;
use ctxhost_tests::{long_session, Sandbox};
use serde_json::{json, Value};

/// An upstream that answers each call of `wire` with `messages`' next assistant message.
fn replaying(wire: Wire, messages: &[Value]) -> FakeUpstream {
    let replies: VecDeque<Value> = messages
        .iter()
        .filter(|m| m["role"] == "assistant")
        .cloned()
        .collect();
    let replies = Arc::new(Mutex::new(replies));
    FakeUpstream::start(move |request| {
        let reply = replies
            .lock()
            .unwrap()
            .pop_front()
            .expect("a recorded reply");
        wire.reply(request, &reply, None)
    })
}

/// Every `cache_control` in a body, in request order (tools, system, messages).
fn breakpoints(body: &Value) -> Vec<Value> {
    fn collect(value: &Value, found: &mut Vec<Value>) {
        match value {
            Value::Object(fields) => {
                if let Some(control) = fields.get("cache_control") {
                    found.push(control.clone());
                }
                fields.values().for_each(|v| collect(v, found));
            }
            Value::Array(items) => items.iter().for_each(|v| collect(v, found)),
            _ => {}
        }
    }
    let mut found = Vec::new();
    for key in ["tools", "system", "messages"] {
        collect(&body[key], &mut found);
    }
    found
}

/// Three turns of a short conversation on Messages as a client that sets no breakpoints;
/// the bodies the upstream received.
fn three_unmarked_turns(config: &str) -> Vec<String> {
    let wire = Wire::Messages;
    let messages = long_session()[..7].to_vec();
    let upstream = replaying(wire, &messages);
    let sandbox = Sandbox::new();
    sandbox.write_config(config);
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    for index in (0..messages.len()).filter(|i| messages[*i]["role"] == "assistant") {
        let body = wire.body(&messages[..index], &[], false);
        let response = wire.send(&gateway, Some("sk-ttl"), Some("ttl"), &body);
        assert_eq!(response.status(), 200);
    }
    let sent: Vec<String> = wire
        .requests(&upstream)
        .into_iter()
        .map(|r| r.body)
        .collect();
    assert!(sent.len() >= 3, "{} calls", sent.len());
    sent
}

#[test]
fn the_gateways_breakpoints_live_as_long_as_the_config_says() {
    let one_hour = json!({"type": "ephemeral", "ttl": "1h"});
    for body in three_unmarked_turns("serve:\n  anthropic:\n    cache_ttl: 1h\n") {
        let body: Value = serde_json::from_str(&body).unwrap();
        let marks = breakpoints(&body);
        assert!(marks.len() >= 2, "{body}");
        assert!(marks.iter().all(|m| *m == one_hour), "{body}");
    }
    // The default: the bare breakpoint, byte for byte as agents write it.
    for body in three_unmarked_turns("") {
        assert!(
            body.contains(r#""cache_control":{"type":"ephemeral"}"#),
            "{body}"
        );
        assert!(!body.contains("ttl"), "{body}");
    }
}

#[test]
fn a_clients_breakpoints_go_as_sent_whatever_the_ttl() {
    let wire = Wire::Messages;
    let messages = long_session()[..5].to_vec();
    let upstream = replaying(wire, &messages);
    let sandbox = Sandbox::new();
    sandbox.write_config("serve:\n  anthropic:\n    cache_ttl: 1h\n");
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let mut body = wire.body(&messages[..4], &[], false);
    let last = body["messages"].as_array_mut().unwrap().last_mut().unwrap();
    last["content"] = json!([{"type": "text", "text": last["content"],
                              "cache_control": {"type": "ephemeral"}}]);
    let response = wire.send(&gateway, Some("sk-own"), Some("own"), &body);
    assert_eq!(response.status(), 200);
    let sent = wire.requests(&upstream)[0].json();
    assert_eq!(sent["messages"], body["messages"]);
    assert_eq!(breakpoints(&sent), vec![json!({"type": "ephemeral"})]);
}

#[test]
fn no_one_hour_breakpoint_follows_a_five_minute_one() {
    // The client marks its system prompt (5 minutes) until the first compression, which keeps
    // it in the session's view; its next request sets no breakpoint, so the gateway places
    // its own behind the view's, and those may not live longer than the one before them.
    let wire = Wire::Messages;
    let messages = long_session()[..140].to_vec();
    let upstream = replaying(wire, &messages);
    let sandbox = Sandbox::new();
    sandbox.write_config(
        "model:\n  context_length: 16000\nserve:\n  anthropic:\n    cache_ttl: 1h\n  \
         compression:\n    background: false\n    cache_aware: false\n",
    );
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let five_minutes = json!({"type": "ephemeral"});
    let mut compressed = false;
    for index in (0..messages.len()).filter(|i| messages[*i]["role"] == "assistant") {
        let mut body = wire.body(&messages[..index], &[], false);
        if !compressed {
            body["system"] = json!([{"type": "text", "text": body["system"],
                                     "cache_control": five_minutes}]);
        }
        let response = wire.send(&gateway, Some("sk-order"), Some("order"), &body);
        assert_eq!(response.status(), 200);
        if compressed {
            break;
        }
        let session = gateway.anthropic_session("order", "sk-order");
        compressed = !session["compressions"].as_array().unwrap().is_empty();
    }
    assert!(compressed, "the session compresses");
    let sent = wire.requests(&upstream).last().unwrap().json();
    let marks = breakpoints(&sent);
    assert_eq!(
        sent["system"]
            .as_array()
            .and_then(|s| s.last())
            .map(|b| &b["cache_control"]),
        Some(&five_minutes),
        "the view's system prompt keeps the client's breakpoint: {sent}"
    );
    assert!(marks.len() >= 2, "the gateway placed its own: {sent}");
    assert!(marks.iter().all(|m| *m == five_minutes), "{marks:?}");
}

#[test]
fn cache_writes_are_priced_at_the_configured_ttl() {
    let upstream = FakeUpstream::start(|request| {
        let usage = json!({"input_tokens": 100, "cache_read_input_tokens": 0,
                           "cache_creation_input_tokens": 1000, "output_tokens": 0});
        reply(
            request,
            json!([{"type": "text", "text": "Noted."}]),
            Some(usage),
        )
    });
    for (ttl, dollars) in [("5m", 0.00405), ("1h", 0.0063)] {
        let sandbox = Sandbox::new();
        sandbox.write_config(&format!("serve:\n  anthropic:\n    cache_ttl: {ttl}\n"));
        let gateway = sandbox.serve(&upstream.base_url(), &[]);
        let body = json!({"model": "claude-sonnet-4-5", "max_tokens": 64,
                          "messages": [{"role": "user", "content": "Remember 7."}]});
        let response = Wire::Messages.send(&gateway, Some("sk-price"), Some("priced"), &body);
        assert_eq!(response.status(), 200);
        // By hand at Sonnet's prices per million: 100 input at $3, 1,000 written at $3.75
        // (5 minutes) or $6 (an hour).
        let session = gateway.anthropic_session("priced", "sk-price");
        assert_eq!(session["cost"]["dollars"], dollars, "{ttl}: {session}");
    }
}

#[test]
fn cache_writes_the_provider_splits_by_ttl_are_priced_by_their_cache() {
    let upstream = FakeUpstream::start(|request| {
        let usage = json!({"input_tokens": 100, "cache_read_input_tokens": 0,
                           "cache_creation_input_tokens": 1000,
                           "cache_creation": {"ephemeral_5m_input_tokens": 600,
                                              "ephemeral_1h_input_tokens": 400},
                           "output_tokens": 0});
        reply(
            request,
            json!([{"type": "text", "text": "Noted."}]),
            Some(usage),
        )
    });
    let sandbox = Sandbox::new();
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let body = json!({"model": "claude-sonnet-4-5", "max_tokens": 64,
                      "messages": [{"role": "user", "content": "Remember 7."}]});
    let response = Wire::Messages.send(&gateway, Some("sk-split"), Some("split"), &body);
    assert_eq!(response.status(), 200);
    // By hand at Sonnet's prices per million: 100 input at $3, 600 written at $3.75 and 400
    // at $6: 300 + 2,250 + 2,400 millionths.
    let session = gateway.anthropic_session("split", "sk-split");
    assert_eq!(session["cost"]["dollars"], 0.00495, "{session}");
}

/// An OpenAI wire's request as a client sends it, in session `session`, with `extra` fields.
fn send_openai(
    wire: Wire,
    gateway: &ctxhost_tests::gateway::GatewayProcess,
    session: &str,
    messages: &[Value],
    extra: &Value,
) {
    let mut body = wire.body(messages, &[], false);
    for (key, value) in extra.as_object().unwrap() {
        body[key] = value.clone();
    }
    let response = wire.send(gateway, Some("sk-openai-key"), Some(session), &body);
    assert_eq!(response.status(), 200);
}

fn prompt_cache_keys_on(wire: Wire) {
    let messages = long_session()[..9].to_vec();
    let upstream = replaying(wire, &messages);
    let sandbox = Sandbox::new();
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let turns: Vec<usize> = (0..messages.len())
        .filter(|i| messages[*i]["role"] == "assistant")
        .collect();
    let none = json!({});
    // Session "a" twice, then session "b", then a client with cache options of its own.
    send_openai(wire, &gateway, "a", &messages[..turns[0]], &none);
    send_openai(wire, &gateway, "a", &messages[..turns[1]], &none);
    send_openai(wire, &gateway, "b", &messages[..turns[2]], &none);
    let own = json!({"prompt_cache_key": "client-key", "prompt_cache_retention": "24h"});
    send_openai(wire, &gateway, "c", &messages[..turns[3]], &own);
    let sent: Vec<Value> = wire.requests(&upstream).iter().map(|r| r.json()).collect();
    let key = |body: &Value| body["prompt_cache_key"].as_str().unwrap().to_string();
    assert_eq!(
        key(&sent[0]),
        key(&sent[1]),
        "one key for every request of a session"
    );
    assert_ne!(key(&sent[0]), key(&sent[2]), "another for another session");
    for body in &sent[..3] {
        assert!(
            !key(body).contains("sk-openai"),
            "never the credential: {body}"
        );
        assert!(body.get("prompt_cache_retention").is_none());
    }
    assert_eq!(key(&sent[3]), "client-key");
    assert_eq!(sent[3]["prompt_cache_retention"], "24h");
}

#[test]
fn chat_completions_get_a_prompt_cache_key_per_session() {
    prompt_cache_keys_on(Wire::Chat);
}

#[test]
fn responses_get_a_prompt_cache_key_per_session() {
    prompt_cache_keys_on(Wire::Responses);
}

#[test]
fn anthropic_requests_get_no_prompt_cache_key() {
    let sent = three_unmarked_turns("");
    assert!(sent.iter().all(|body| !body.contains("prompt_cache_key")));
}

per_wire! {
    fn the_prefix_sent_stays_byte_for_byte_the_same_between_compressions(wire: Wire) {
        let messages = long_session()[..11].to_vec();
        let upstream = replaying(wire, &messages);
        let sandbox = Sandbox::new();
        let gateway = sandbox.serve(&upstream.base_url(), &[]);
        for index in (0..messages.len()).filter(|i| messages[*i]["role"] == "assistant") {
            let body = wire.body(&messages[..index], &[], false);
            let response = wire.send(&gateway, Some("sk-stable"), Some("stable"), &body);
            assert_eq!(response.status(), 200);
        }
        let session = wire.session(&gateway, "stable", Some("sk-stable"));
        assert_eq!(session["compressions"], json!([]), "no compression in between");
        // The bytes as the provider reads them: the Messages breakpoints that roll with the
        // last messages set aside.
        let sent: Vec<String> = wire
            .requests(&upstream)
            .iter()
            .map(|r| r.body.replace(r#","cache_control":{"type":"ephemeral"}"#, ""))
            .collect();
        assert!(sent.len() >= 4, "{} calls", sent.len());
        for pair in sent.windows(2) {
            let (earlier, later) = (&pair[0], &pair[1]);
            let turns = wire.turns(&serde_json::from_str(earlier).unwrap());
            let last = serde_json::to_string(turns.last().unwrap()).unwrap();
            let end = earlier.rfind(&last).expect("the last turn, as sent") + last.len();
            assert_eq!(
                &later[..end],
                &earlier[..end],
                "the next request starts with the same bytes"
            );
            // What follows the history (where a client puts its system prompt after it) too.
            assert!(
                later.ends_with(&earlier[end..]),
                "the same fields after the history: {}",
                &earlier[end..]
            );
        }
    }
}
