//! Windows are never guessed in silence: an unknown model's fallback is warned about, a
//! conversation still over the window after compressing is refused or marked, and a
//! compression that changed nothing is neither claimed nor counted.

use ctxhost_tests::per_wire;
use ctxhost_tests::upstream::{reply, FakeUpstream};
use ctxhost_tests::wire::{Usage, Wire};
use ctxhost_tests::Sandbox;
use serde_json::{json, Value};

fn echo() -> FakeUpstream {
    FakeUpstream::start(|request| {
        reply(request, json!({"role": "assistant", "content": "ok"}), None)
    })
}

/// About `words` tokens of text.
fn long_text(words: usize) -> String {
    (0..words).map(|i| format!("w{} ", i % 97)).collect()
}

#[test]
fn an_unknown_models_window_is_warned_about_once() {
    let upstream = echo();
    let sandbox = Sandbox::new();
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let client = reqwest::blocking::Client::new();
    for (session, model) in [
        ("a", "my-local-model"),
        ("b", "my-local-model"),
        ("c", "gpt-4o"),
    ] {
        let response = client
            .post(format!("{}/chat/completions", gateway.base_url()))
            .header("x-ctxhost-session", session)
            .json(&json!({"model": model, "messages": [{"role": "user", "content": "hi"}]}))
            .send()
            .unwrap();
        assert_eq!(response.status(), 200);
    }
    let (_, log) = gateway.stop();
    let warnings: Vec<&String> = log
        .iter()
        .filter(|l| l.contains("no known context window"))
        .collect();
    assert_eq!(warnings.len(), 1, "{log:?}");
    assert!(warnings[0].contains("WARN"), "{}", warnings[0]);
    assert!(
        warnings[0].contains("set serve.models.my-local-model to its window"),
        "{}",
        warnings[0]
    );
}

per_wire! {
    fn a_conversation_over_the_window_is_refused_or_sent_marked(wire: Wire) {
        let upstream = FakeUpstream::start(move |request| {
            wire.reply(request, &json!({"role": "assistant", "content": "ok"}), None)
        });
        let sandbox = Sandbox::new();
        sandbox.write_config("serve:\n  models:\n    gpt-4o: 2048\n");
        let gateway = sandbox.serve(&upstream.base_url(), &[]);
        let body = wire.body(&[json!({"role": "user", "content": long_text(6000)})], &[], false);
        let refused = wire.send(&gateway, None, Some("big"), &body);
        assert_eq!(refused.status(), 400);
        let error: Value = refused.json().unwrap();
        let expected = if wire == Wire::Messages {
            "invalid_request_error"
        } else {
            "context_length_exceeded"
        };
        assert_eq!(wire.error_code(&error), expected, "{error}");
        let message = error["error"]["message"].as_str().unwrap();
        assert!(message.contains("over the 2048-token window"), "{message}");
        assert!(wire.requests(&upstream).is_empty());
        drop(gateway);

        sandbox.write_config(
            "serve:\n  models:\n    gpt-4o: 2048\n  limits:\n    over_window: send\n",
        );
        let gateway = sandbox.serve(&upstream.base_url(), &[]);
        let sent = wire.send(&gateway, None, Some("big"), &body);
        assert_eq!(sent.status(), 200);
        assert_eq!(sent.headers()["x-ctxhost-over-window"], "true");
        assert!(sent.headers().get("x-ctxhost-compressed").is_none());
        assert_eq!(wire.requests(&upstream).len(), 1);
        let line = gateway.wait_for_log("sent anyway (serve.limits.over_window)");
        assert!(line.contains("WARN"), "{line}");
    }
}

#[test]
fn a_compression_that_changes_nothing_is_not_claimed_nor_counted() {
    // The provider counts more than the engine sees (tools, say): its usage crosses the
    // threshold, and the engine has nothing it may compress.
    let upstream = FakeUpstream::start(|request| {
        Wire::Chat.reply(
            request,
            &json!({"role": "assistant", "content": "ok"}),
            Some(Usage {
                input: 3500,
                output: 2,
            }),
        )
    });
    let sandbox = Sandbox::new();
    sandbox.write_config("compression:\n  threshold: 0.5\nserve:\n  models:\n    gpt-4o: 4096\n");
    let gateway = sandbox.serve(&upstream.base_url(), &[]);
    let mut messages = vec![json!({"role": "user", "content": long_text(300)})];
    // Enough turns for a second try, were the first "nothing to compress" forgotten.
    for turn in 0..6 {
        let body = Wire::Chat.body(&messages, &[], false);
        let response = Wire::Chat.send(&gateway, None, Some("noop"), &body);
        assert_eq!(response.status(), 200);
        assert!(
            response.headers().get("x-ctxhost-compressed").is_none(),
            "turn {turn}"
        );
        messages.push(json!({"role": "assistant", "content": "ok"}));
        messages.push(json!({"role": "user", "content": format!("and then {turn}?")}));
    }
    let state = Wire::Chat.session(&gateway, "noop", None);
    assert_eq!(state["compressions"], json!([]), "{state}");
    let metrics = reqwest::blocking::Client::new()
        .get(format!("{}/metrics", gateway.url))
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(!metrics.contains("outcome=\"ok\""), "{metrics}");
    // Asked once; not again while the history has barely grown.
    let (_, log) = gateway.stop();
    let tried = log.iter().filter(|l| l.contains("changed nothing")).count();
    assert_eq!(tried, 1, "{log:?}");
}
