//! Messages and calls crossing the plugin boundary.

use ctxhost_plugin_host::load_library;
use ctxhost_sdk::{CompressOptions, ContextEngine, ErrorKind, Message};
use ctxhost_sdk_test::FakeHost;
use ctxhost_tests::{corpus_files, library, read_json, Sandbox};
use serde_json::json;

#[test]
fn every_corpus_message_survives_a_round_trip_through_the_abi() {
    let sandbox = Sandbox::new();
    sandbox.add_plugin("echo", "ctxhost_fixture_echo");
    sandbox.write_config("context:\n  engine: echo\n");
    for file in corpus_files() {
        let run = sandbox.ctxhost(&["compress", file.to_str().unwrap()]);
        assert!(run.success(), "{}: {}", file.display(), run.stderr);
        assert_eq!(run.json(), read_json(&file), "{} changed", file.display());
    }
}

#[test]
fn unknown_fields_content_parts_and_odd_tool_calls_survive_the_abi() {
    let conversation = json!([
        {"role": "system", "content": "s", "x_meta": {"tenant": 7}},
        {"role": "user", "name": "ada", "content": [
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "high"}},
            {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}}
        ], "cache_control": {"type": "ephemeral"}},
        {"role": "assistant", "content": null, "reasoning_content": "think", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": "{\"path\":\".\"}"}, "index": 0},
            {"id": "call_2", "type": "function", "function": {"name": "cat", "arguments": {"path": "a"}, "strict": true}}
        ]},
        {"role": "tool", "tool_call_id": "call_1", "content": "a\nb", "is_error": false},
        {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "file a"}]},
        {"role": "assistant", "content": "done", "refusal": null, "annotations": [], "audio": null}
    ]);
    let sandbox = Sandbox::new();
    sandbox.add_plugin("echo", "ctxhost_fixture_echo");
    sandbox.write_config("context:\n  engine: echo\n");
    let transcript = sandbox.write_json("odd.json", &conversation);
    let run = sandbox.ctxhost(&["compress", transcript.to_str().unwrap()]);
    assert!(run.success(), "{}", run.stderr);
    assert_eq!(run.json(), conversation);
}

/// A fake host (ctxhost-sdk-test) for loading plugin `engine` directly in this process.
fn fake_host(engine: &str) -> FakeHost {
    FakeHost::builder(engine)
        .model("test")
        .context_length(2000)
        .build()
}

fn conversation(turns: usize) -> Vec<Message> {
    let mut messages = vec![
        Message::system("You are a test."),
        Message::user("first ask"),
    ];
    for i in 0..turns {
        messages.push(Message::assistant(format!(
            "reply {i} {}",
            "word ".repeat(80)
        )));
        messages.push(Message::user(format!("ask {i}")));
    }
    messages
}

#[test]
fn two_plugins_in_one_process_stay_distinct_and_a_panic_is_contained() {
    let window = load_library(&library("ctxhost_engine_window")).expect("window loads");
    let panicky = load_library(&library("ctxhost_fixture_panicky")).expect("panicky loads");
    let echo = load_library(&library("ctxhost_fixture_echo")).expect("echo loads");
    assert_eq!(window.manifest().name, "window");
    assert_eq!(panicky.manifest().name, "panicky");
    assert_eq!(echo.manifest().name, "echo");

    let (window_host, panicky_host, echo_host) =
        (fake_host("window"), fake_host("panicky"), fake_host("echo"));
    let mut window_engine = window
        .instantiate(window_host.backend(), window_host.setup().clone())
        .unwrap();
    let mut panicky_engine = panicky
        .instantiate(panicky_host.backend(), panicky_host.setup().clone())
        .unwrap();
    let mut echo_engine = echo
        .instantiate(echo_host.backend(), echo_host.setup().clone())
        .unwrap();
    assert_eq!(window_engine.name(), "window");
    assert_eq!(panicky_engine.name(), "panicky");

    let messages = conversation(40);
    let force = CompressOptions {
        force: true,
        ..CompressOptions::default()
    };
    let compressed = window_engine.compress(&messages, &force).unwrap();
    assert!(compressed.len() < messages.len());
    assert_eq!(echo_engine.compress(&messages, &force).unwrap(), messages);

    let error = panicky_engine.compress(&messages, &force).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Panicked);
    assert!(
        error.message().contains("deliberate panic in compress"),
        "{error}"
    );
    // After a panic the engine refuses further work instead of running on broken state.
    let again = panicky_engine.compress(&messages, &force).unwrap_err();
    assert!(again.message().contains("disabled"), "{again}");
    // The other plugins are unaffected.
    assert_eq!(
        window_engine.compress(&messages, &force).unwrap(),
        compressed
    );

    // Operations beyond the typed hot paths travel through `invoke`.
    assert_eq!(echo_engine.tool_schemas().unwrap().len(), 1);
    assert_eq!(
        echo_engine
            .handle_tool_call("echo", &json!({"q": 1}))
            .unwrap(),
        "{\"q\":1}"
    );
    let setup = echo_engine.invoke("setup", &json!(null)).unwrap();
    assert_eq!(setup["engine"], "echo");
    assert_eq!(setup["model"]["context_length"], 2000);
    assert!(echo_engine
        .invoke("nope", &json!(null))
        .unwrap_err()
        .is_unsupported());
    assert_eq!(echo_engine.status().unwrap().context_length, 2000);
}
