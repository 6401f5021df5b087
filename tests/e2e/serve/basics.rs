use ctxhost_tests::per_wire;
use ctxhost_tests::upstream::{reply, Answer, FakeUpstream};
use ctxhost_tests::wire::{GatewayFailure, Usage, Wire};
use ctxhost_tests::Sandbox;
use serde_json::{json, Value};

fn client() -> reqwest::blocking::Client {
    reqwest::blocking::Client::new()
}

per_wire! {
    fn relays_an_answer_and_names_the_session_and_engine(wire: Wire) {
        let upstream = FakeUpstream::start(move |request| {
            let usage = Usage { input: 12, output: 2 };
            wire.reply(request, &json!({"role": "assistant", "content": "Paris."}), Some(usage))
        });
        let sandbox = Sandbox::new();
        let gateway = sandbox.serve(&upstream.base_url(), &[]);
        assert!(gateway
            .ready_line
            .starts_with("ctxhost serve: listening on http://127.0.0.1:"));
        let messages = [
            json!({"role": "system", "content": "Answer briefly."}),
            json!({"role": "user", "content": [
                {"type": "text", "text": "Capital of France?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}),
        ];
        let mut body = wire.body(&messages, &[], false);
        body["temperature"] = json!(0.25);
        body["metadata"] = json!({"user_id": "u-1"});
        let response = wire.send(&gateway, Some("sk-client"), None, &body);
        assert_eq!(response.status(), 200);
        let session = response.headers()["x-ctxhost-session"]
            .to_str()
            .unwrap()
            .to_string();
        assert!(session.starts_with("auto-"), "{session}");
        assert_eq!(response.headers()["x-ctxhost-engine"], "compressor");
        let answer = wire.read(&response.text().unwrap(), false);
        assert_eq!(answer.message["content"], "Paris.");
        assert_eq!(answer.usage, Some(Usage { input: 12, output: 2 }));

        let sent = &wire.requests(&upstream)[0];
        assert_eq!(wire.credential_sent(sent).as_deref(), Some("sk-client"));
        let sent_body = sent.json();
        // Every field the gateway does not need goes through untouched, multimodal parts
        // included.
        assert_eq!(sent_body["temperature"], 0.25);
        assert_eq!(sent_body["metadata"], body["metadata"]);
        assert_eq!(wire.conversation(&sent_body), wire.conversation(&body));

        // Streamed, the same answer.
        let streamed = wire.send(&gateway, Some("sk-client"), None, &wire.body(&messages, &[], true));
        assert_eq!(streamed.status(), 200);
        let answer = wire.read(&streamed.text().unwrap(), true);
        assert_eq!(answer.message["content"], "Paris.");

        let health: Value = gateway.get_json("/healthz", None).1;
        assert_eq!(health["status"], "ok");
        let metrics = client()
            .get(format!("{}/metrics", gateway.url))
            .send()
            .unwrap()
            .text()
            .unwrap();
        let counted = format!(
            "ctxhost_requests_total{{route=\"{}\",status=\"200\"}} 2",
            wire.route()
        );
        assert!(metrics.contains(&counted), "{metrics}");
        let missing = client()
            .get(format!("{}/api/tags", gateway.url))
            .send()
            .unwrap();
        assert_eq!(missing.status(), 404);
        let error: Value = missing.json().unwrap();
        assert_eq!(error["error"]["code"], "unknown_url");
        assert!(error["error"]["message"].is_string() && error["error"]["type"].is_string());

        let (status, log) = gateway.stop();
        assert!(status.success(), "{status:?} {log:?}");
        assert!(
            !log.iter()
                .any(|l| l.contains("Capital of France") || l.contains("sk-client")),
            "logs hold no bodies or keys: {log:?}"
        );
    }

    fn upstream_errors_reach_the_client_with_their_status_and_body(wire: Wire) {
        let error = wire.rate_limited("slow down");
        let answer = error.clone();
        let upstream = FakeUpstream::start(move |_| Answer::Json(429, answer.clone()));
        let sandbox = Sandbox::new();
        let gateway = sandbox.serve(&upstream.base_url(), &[]);
        for stream in [false, true] {
            let body = wire.body(&[json!({"role": "user", "content": "hi"})], &[], stream);
            let response = wire.send(&gateway, Some("sk-errors"), None, &body);
            assert_eq!(response.status(), 429, "stream: {stream}");
            assert_eq!(response.json::<Value>().unwrap(), error, "stream: {stream}");
        }
    }

    fn a_request_without_a_conversation_is_refused_in_the_wires_shape(wire: Wire) {
        let upstream = FakeUpstream::start(|_| Answer::Hang);
        let sandbox = Sandbox::new();
        let gateway = sandbox.serve(&upstream.base_url(), &[]);
        let response = wire.send(&gateway, Some("sk-bad"), None, &wire.body(&[], &[], false));
        assert_eq!(response.status(), 400);
        let body: Value = response.json().unwrap();
        assert_eq!(wire.error_code(&body), wire.failure_code(GatewayFailure::BadRequest), "{body}");
        assert!(
            body["error"]["message"].as_str().unwrap().contains("must not be empty"),
            "{body}"
        );
        if wire == Wire::Messages {
            assert_eq!(body["type"], "error", "{body}");
        }
        assert!(upstream.received().is_empty());
    }
}

#[test]
fn models_are_relayed_and_redirects_never_followed() {
    let upstream = FakeUpstream::start(|request| {
        if request.path.starts_with("/v1/models") {
            Answer::Json(
                200,
                json!({"object": "list", "data": [{"id": "gpt-4o", "object": "model"}]}),
            )
        } else {
            Answer::Redirect("http://127.0.0.1:9/elsewhere".into())
        }
    });
    let sandbox = Sandbox::new();
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let models: Value = client()
        .get(format!("{}/models", gateway.base_url()))
        .bearer_auth("sk-models")
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(models["data"][0]["id"], "gpt-4o");
    assert_eq!(
        upstream.received()[0].header("authorization"),
        Some("Bearer sk-models")
    );
    let redirected = client()
        .post(format!("{}/chat/completions", gateway.base_url()))
        .json(&json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .unwrap();
    assert_eq!(redirected.status(), 502);
    assert!(redirected.headers().get("location").is_none());
    let error: Value = redirected.json().unwrap();
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("follows no redirects"),
        "{error}"
    );
    assert_eq!(
        upstream.received().len(),
        2,
        "the redirect target was not asked"
    );
}

#[test]
fn json_logs_and_a_model_change_reach_the_engine() {
    let upstream = FakeUpstream::start(|request| {
        reply(request, json!({"role": "assistant", "content": "ok"}), None)
    });
    let sandbox = Sandbox::new();
    let gateway = sandbox.serve(&upstream.base_url(), &["--log-format", "json"]);
    let mut messages = vec![json!({"role": "user", "content": "hi"})];
    for (model, budget, window) in [
        ("gpt-4o", None, 128_000),
        ("gpt-4o", Some(28_000), 100_000),
        ("gpt-4.1", None, 1_047_576),
    ] {
        let mut body = json!({"model": model, "messages": messages});
        if let Some(budget) = budget {
            body["max_completion_tokens"] = json!(budget);
        }
        let response = client()
            .post(format!("{}/chat/completions", gateway.base_url()))
            .header("x-ctxhost-session", "models")
            .json(&body)
            .send()
            .unwrap();
        assert_eq!(response.status(), 200);
        let state: Value = gateway.session("models", None);
        assert_eq!(state["model"], model);
        assert_eq!(state["context_length"], window, "{state}");
        messages.push(json!({"role": "assistant", "content": "ok"}));
        messages.push(json!({"role": "user", "content": "again"}));
    }
    let (status, log) = gateway.stop();
    assert!(status.success());
    let requests: Vec<Value> = log
        .iter()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line["fields"]["message"] == "request")
        .collect();
    assert!(requests.len() >= 6, "{log:?}");
    assert!(requests
        .iter()
        .any(|r| r["fields"]["session"] == "models" && r["fields"]["status"] == 200));
}

#[test]
fn sigterm_lets_a_request_in_flight_finish_then_exits_zero() {
    let (arrived_tx, arrived) = std::sync::mpsc::channel::<()>();
    let (release, released) = std::sync::mpsc::channel::<()>();
    let arrived_tx = std::sync::Mutex::new(arrived_tx);
    let released = std::sync::Mutex::new(released);
    let upstream = FakeUpstream::start(move |request| {
        // Hold the answer until the test has asked the gateway to stop.
        arrived_tx.lock().unwrap().send(()).unwrap();
        released.lock().unwrap().recv().unwrap();
        reply(
            request,
            json!({"role": "assistant", "content": "finished"}),
            None,
        )
    });
    let sandbox = Sandbox::new();
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let base = gateway.base_url();
    let in_flight = std::thread::spawn(move || {
        client()
            .post(format!("{base}/chat/completions"))
            .json(&json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "slow"}]}))
            .send()
            .unwrap()
    });
    arrived.recv().unwrap();
    gateway.signal_stop();
    // The gateway is shutting down before the answer is released.
    gateway.wait_for_log("shutting down");
    release.send(()).unwrap();
    let response = in_flight.join().unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.json::<Value>().unwrap()["choices"][0]["message"]["content"],
        "finished"
    );
    let (status, log) = gateway.stop();
    assert!(status.success(), "{status:?} {log:?}");
}

/// Sessions are scoped by the agent's credential: listed without it, the answer is empty and
/// says why; with it, the session is there and no note.
#[test]
fn the_sessions_listing_without_the_agents_credential_says_sessions_are_scoped_by_it() {
    let upstream = FakeUpstream::start(|request| {
        reply(request, json!({"role": "assistant", "content": "ok"}), None)
    });
    let sandbox = Sandbox::new();
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let response = client()
        .post(format!("{}/chat/completions", gateway.base_url()))
        .bearer_auth("sk-agent")
        .json(&json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .unwrap();
    assert_eq!(response.status(), 200);

    let (status, listing) = gateway.get_json("/ctxhost/sessions", None);
    assert_eq!(status, 200, "{listing}");
    assert_eq!(listing["sessions"], json!([]), "{listing}");
    let note = listing["note"].as_str().unwrap_or_default();
    assert!(
        note.starts_with("sessions are listed per credential: send the key the agent sends"),
        "{listing}"
    );

    let (status, listing) = gateway.get_json("/ctxhost/sessions", Some("sk-agent"));
    assert_eq!(status, 200, "{listing}");
    assert_eq!(
        listing["sessions"].as_array().unwrap().len(),
        1,
        "{listing}"
    );
    assert!(listing.get("note").is_none(), "{listing}");
}
