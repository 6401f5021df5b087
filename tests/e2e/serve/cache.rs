//! The provider's prompt cache: its use counted per session and in the metrics, the gateway's
//! breakpoints turned off on request, and compressions not worth a cold cache deferred.

use ctxhost_tests::anthropic_upstream::reply;
use ctxhost_tests::upstream::{recorded_upstream, FakeUpstream};
use ctxhost_tests::{long_session, Sandbox};
use serde_json::{json, Value};

#[test]
fn cache_use_is_counted_and_the_gateways_breakpoints_can_be_turned_off() {
    let upstream = FakeUpstream::start(|request| {
        let usage = json!({"input_tokens": 100, "cache_read_input_tokens": 900,
                           "cache_creation_input_tokens": 0, "output_tokens": 5});
        reply(
            request,
            json!([{"type": "text", "text": "Noted."}]),
            Some(usage),
        )
    });
    let sandbox = Sandbox::new();
    sandbox.write_config("serve:\n  cache:\n    breakpoints: off\n");
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let client = reqwest::blocking::Client::new();
    let mut messages = vec![json!({"role": "user", "content": "Remember the number 7."})];
    for turn in 0..2 {
        let response = client
            .post(format!("{}/messages", gateway.base_url()))
            .header("x-api-key", "sk-cache")
            .header("anthropic-version", "2023-06-01")
            .header("x-ctxhost-session", "cached")
            .json(&json!({"model": "claude-sonnet-4-5", "max_tokens": 1024,
                          "system": "You keep numbers.", "messages": messages}))
            .send()
            .unwrap();
        assert_eq!(response.status(), 200, "turn {turn}");
        let answer: Value = response.json().unwrap();
        messages.push(json!({"role": "assistant", "content": answer["content"]}));
        messages.push(json!({"role": "user", "content": "And 8."}));
    }
    for request in upstream.messages_requests() {
        let body = request.json();
        assert!(
            !body.to_string().contains("cache_control"),
            "breakpoints: off adds none: {body}"
        );
        assert_eq!(
            body["system"], "You keep numbers.",
            "sent as the client wrote it"
        );
    }
    let response = client
        .get(format!("{}/ctxhost/sessions/cached", gateway.url))
        .header("x-api-key", "sk-cache")
        .send()
        .unwrap();
    let session: Value = response.json().unwrap();
    assert_eq!(session["cache"]["read_tokens"], 1800, "{session}");
    assert_eq!(session["cache"]["hit_ratio"], 0.9);
    // Priced by hand at Sonnet's prices ($3 input, $0.30 cache reads, $15 output per
    // million): each call 100 uncached, 900 read, 5 out = 300 + 270 + 75 millionths.
    assert_eq!(session["cost"]["priced_calls"], 2, "{session}");
    assert_eq!(session["cost"]["dollars"], 0.00129, "{session}");
    let no_engine = session["cost"]["no_engine_dollars"].as_f64().unwrap();
    assert!(no_engine > 0.0, "{session}");
    let saving = session["cost"]["saving_dollars"].as_f64().unwrap();
    assert!((saving - (no_engine - 0.00129)).abs() < 1e-12, "{session}");
    let metrics = client
        .get(format!("{}/metrics", gateway.url))
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(
        metrics.contains("ctxhost_cache_read_tokens_total 1800"),
        "{metrics}"
    );
    assert!(
        metrics.contains("ctxhost_cost_microdollars_total 1290"),
        "{metrics}"
    );
    assert!(
        metrics.contains(&format!(
            "ctxhost_no_engine_cost_microdollars_total {}",
            (no_engine * 1e6).round()
        )),
        "{metrics}"
    );
    // `ctxhost sessions show` finds the session in the gateway's state, with the same dollars
    // (the compressor keeps no sessions of its own).
    let show = sandbox.ctxhost(&["sessions", "show", "cached", "--json"]);
    assert!(show.success(), "{}", show.stderr);
    let shown = show.json();
    let served = &shown["gateway"][0];
    assert_eq!(served["name"], "cached", "{shown}");
    assert_eq!(served["requests"], 2, "{shown}");
    assert_eq!(served["cost"]["dollars"], 0.00129, "{shown}");
    assert_eq!(
        served["cost"]["no_engine_dollars"],
        session["cost"]["no_engine_dollars"]
    );
    let show = sandbox.ctxhost(&["sessions", "show", "cached"]);
    assert!(show.success(), "{}", show.stderr);
    assert!(
        show.stdout.contains("$0.0013 with compressor"),
        "{}",
        show.stdout
    );
    // By the id its engine knows it by, too.
    let engine_id = served["engine_session"].as_str().unwrap();
    let show = sandbox.ctxhost(&["sessions", "show", engine_id, "--json"]);
    assert_eq!(show.json()["gateway"][0]["name"], "cached");
    let unknown = sandbox.ctxhost(&["sessions", "show", "never-served"]);
    assert_eq!(unknown.code, Some(1), "{}", unknown.stdout);
}

#[test]
fn a_compression_that_saves_too_little_waits_while_the_history_still_fits() {
    let messages = long_session()[..140].to_vec();
    let upstream = recorded_upstream(&messages);
    let sandbox = Sandbox::new();
    // Far more than any compression here saves: every one that is not needed is deferred.
    sandbox.write_config(
        "model:\n  context_length: 16000\nserve:\n  cache:\n    min_tokens_saved: 1000000\n  \
         compaction:\n    background: false\n",
    );
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let client = reqwest::blocking::Client::new();
    for index in (0..messages.len()).filter(|i| messages[*i]["role"] == "assistant") {
        let response = client
            .post(format!("{}/chat/completions", gateway.base_url()))
            .bearer_auth("sk-defer")
            .header("x-ctxhost-session", "deferring")
            .json(&json!({"model": "gpt-4o", "messages": messages[..index]}))
            .send()
            .unwrap();
        assert_eq!(response.status(), 200);
    }
    let session = gateway.session("deferring", Some("sk-defer"));
    let compressions = session["compressions"].as_array().unwrap();
    let deferred: Vec<&Value> = compressions
        .iter()
        .filter(|c| c["deferred"] == true)
        .collect();
    let applied: Vec<&Value> = compressions
        .iter()
        .filter(|c| c["deferred"] != true)
        .collect();
    assert!(!deferred.is_empty(), "{session}");
    assert_eq!(
        session["stats"]["compressions_deferred"].as_u64().unwrap(),
        deferred.len() as u64
    );
    for compression in &deferred {
        assert_eq!(
            compression["tokens_after"], compression["tokens_before"],
            "a deferred compression leaves what goes upstream as it was"
        );
    }
    // Once the history no longer fits, compressing is not optional.
    assert!(!applied.is_empty(), "{session}");
    assert!(session["stats"]["peak_prompt_tokens"].as_u64().unwrap() <= 16000);
}

/// The value of `key=` on a log line, as a number.
fn logged_number(line: &str, key: &str) -> Option<f64> {
    line.split_whitespace()
        .find_map(|field| field.strip_prefix(key)?.strip_prefix('='))
        .map(|value| value.parse().unwrap_or_else(|_| panic!("{key} on {line}")))
}

/// Each request's log line says what its model calls cost and what no engine would have paid,
/// for a whole answer and for a streamed one (whose usage comes at its end, where its one line
/// is written); a request that called no model says nothing of dollars.
#[test]
fn the_request_log_line_carries_the_calls_dollars_whole_and_streamed() {
    let upstream = FakeUpstream::start(|request| {
        let usage = json!({"input_tokens": 100, "cache_read_input_tokens": 900,
                           "cache_creation_input_tokens": 0, "output_tokens": 5});
        reply(
            request,
            json!([{"type": "text", "text": "Noted."}]),
            Some(usage),
        )
    });
    let sandbox = Sandbox::new();
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let client = reqwest::blocking::Client::new();
    let mut messages = vec![json!({"role": "user", "content": "Remember the number 7."})];
    let mut lines = Vec::new();
    for (turn, stream) in [false, true].into_iter().enumerate() {
        let response = client
            .post(format!("{}/messages", gateway.base_url()))
            .header("x-api-key", "sk-logged")
            .header("anthropic-version", "2023-06-01")
            .header("x-ctxhost-session", "logged")
            .json(
                &json!({"model": "claude-sonnet-4-5", "max_tokens": 1024, "stream": stream,
                          "system": "You keep numbers.", "messages": messages}),
            )
            .send()
            .unwrap();
        assert_eq!(response.status(), 200, "turn {turn}");
        let body = response.text().unwrap();
        if !stream {
            let answer: Value = serde_json::from_str(&body).unwrap();
            messages.push(json!({"role": "assistant", "content": answer["content"]}));
            messages.push(json!({"role": "user", "content": "And 8."}));
        }
        // Only request lines name the path.
        lines.push(gateway.wait_for_logs("path=/v1/messages ", turn + 1));
    }
    // By hand at Sonnet's prices ($3 input, $0.30 cache reads, $15 output per million): 100
    // uncached, 900 read and 5 out are 300 + 270 + 75 millionths, on either line.
    for line in &lines {
        assert!(
            line.contains("status=200 outcome=completed session=logged "),
            "{line}"
        );
        assert_eq!(logged_number(line, "dollars"), Some(0.000645), "{line}");
    }
    // What no engine would have paid, request by request, adds up to the session's estimate.
    let session = gateway.anthropic_session("logged", "sk-logged");
    let no_engine: f64 = lines
        .iter()
        .map(|line| logged_number(line, "no_engine_dollars").expect(line))
        .sum();
    let estimated = session["cost"]["no_engine_dollars"].as_f64().unwrap();
    assert!(no_engine > 0.0, "{lines:?}");
    assert!((no_engine - estimated).abs() < 1e-9, "{lines:?} {session}");
    // The streamed answer's line is its only one, written when its usage had come.
    let (_, log) = gateway.stop();
    let logged = log.iter().filter(|l| l.contains("path=/v1/messages "));
    assert_eq!(logged.count(), 2, "{log:?}");
    let lookup = log
        .iter()
        .find(|l| l.contains("path=/ctxhost/sessions/logged"))
        .expect("the session's lookup is logged");
    assert!(!lookup.contains("dollars"), "{lookup}");
}
