//! The OpenAI-compatible client against a local HTTP server.

mod support;

use std::time::Duration;

use ctxhost_config::summarizer::{Provider, SummarizerSettings};
use ctxhost_offline_summary::budget::estimate_tokens;
use ctxhost_sdk::{ErrorKind, SummarizeRequest};
use ctxhost_summarizer::build;
use serde_json::json;
use support::{chat_reply, closed_port, runtime, Answer, FakeUpstream};

fn settings(provider: Provider, base_url: String, key_env: Option<&str>) -> SummarizerSettings {
    SummarizerSettings {
        provider,
        model: Some("gpt-4o-mini".into()),
        base_url: Some(base_url),
        api_key_env: key_env.map(str::to_string),
        timeout: 5.0,
        max_retries: 3,
        deadline: 60.0,
        context_length: None,
        cooldown_seconds: None,
    }
}

fn request() -> SummarizeRequest {
    SummarizeRequest {
        instructions: "Write the handoff summary.".into(),
        content:
            "[user] fix the failing test in src/parser.rs\n[assistant] Running cargo test now."
                .into(),
        max_tokens: 300,
        focus_topic: Some("parser".into()),
        previous_summary: Some("## Goal\n- earlier goal".into()),
        shape: Default::default(),
    }
}

#[test]
fn sends_a_chat_completion_and_returns_the_summary() {
    std::env::set_var("CTXHOST_TEST_OPENAI_SHAPE_KEY", "sk-test-shape");
    let server = FakeUpstream::scripted(vec![chat_reply("## Goal\n- fix the parser")]);
    let rt = runtime();
    let summarizer = build(
        &settings(
            Provider::Openai,
            server.base_url(),
            Some("CTXHOST_TEST_OPENAI_SHAPE_KEY"),
        ),
        rt.handle().clone(),
    )
    .unwrap();
    assert_eq!(
        summarizer.describe(),
        format!("openai:gpt-4o-mini@{}", server.base_url())
    );

    let summary = summarizer.summarize(&request()).unwrap();
    assert_eq!(summary.text, "## Goal\n- fix the parser");
    assert_eq!(summary.summarizer, summarizer.describe());

    let requests = server.received();
    assert_eq!(requests.len(), 1);
    let sent = &requests[0];
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(sent.header("authorization"), Some("Bearer sk-test-shape"));
    assert!(sent
        .header("content-type")
        .unwrap()
        .starts_with("application/json"));
    let body = sent.json();
    assert_eq!(body["model"], "gpt-4o-mini");
    assert_eq!(body["max_tokens"], 300);
    assert_eq!(body["temperature"], 0);
    assert_eq!(body["messages"][0]["role"], "system");
    assert_eq!(body["messages"][0]["content"], "Write the handoff summary.");
    assert_eq!(body["messages"][1]["role"], "user");
    let prompt = body["messages"][1]["content"].as_str().unwrap();
    assert!(prompt.contains("[user] fix the failing test in src/parser.rs"));
    assert!(prompt.contains("[assistant] Running cargo test now."));
    assert!(prompt.contains("PREVIOUS SUMMARY:\n## Goal\n- earlier goal"));
    assert!(prompt.contains("FOCUS TOPIC: \"parser\""));
}

#[test]
fn retries_429_and_500_then_succeeds() {
    std::env::set_var("CTXHOST_TEST_OPENAI_RETRY_KEY", "sk-retry");
    let server = FakeUpstream::scripted(vec![
        Answer::Json(429, json!({"error": {"message": "slow down"}})).header("Retry-After", "0"),
        Answer::Text(500, "upstream exploded".into()),
        chat_reply("third time lucky"),
    ]);
    let rt = runtime();
    let summarizer = build(
        &settings(
            Provider::Openai,
            server.base_url(),
            Some("CTXHOST_TEST_OPENAI_RETRY_KEY"),
        ),
        rt.handle().clone(),
    )
    .unwrap();
    let summary = summarizer.summarize(&request()).unwrap();
    assert_eq!(summary.text, "third time lucky");
    assert_eq!(server.received().len(), 3);
}

#[test]
fn gives_up_after_max_retries_with_unavailable() {
    let server = FakeUpstream::scripted(vec![
        Answer::Text(503, "busy".into()),
        Answer::Text(502, "bad gateway".into()),
    ]);
    let rt = runtime();
    let mut settings = settings(Provider::Custom, server.base_url(), None);
    settings.max_retries = 1;
    let summarizer = build(&settings, rt.handle().clone()).unwrap();
    let error = summarizer.summarize(&request()).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unavailable);
    assert!(error.message().contains("HTTP 502"), "{error}");
    assert!(
        error.message().contains("gave up after 2 attempts"),
        "{error}"
    );
    assert_eq!(server.received().len(), 2);
}

#[test]
fn honours_retry_after() {
    // A Retry-After far longer than the overall deadline: a client that honours it is still
    // waiting when the deadline ends the call, having sent one request; one that did not would
    // have retried after its own backoff (at most 200 ms) and got the summary.
    let server = FakeUpstream::scripted(vec![
        Answer::Text(429, "wait".into()).header("Retry-After", "30"),
        chat_reply("too soon"),
    ]);
    let rt = runtime();
    let mut short_deadline = settings(Provider::Custom, server.base_url(), None);
    short_deadline.deadline = 3.0;
    let summarizer = build(&short_deadline, rt.handle().clone()).unwrap();
    let error = summarizer.summarize(&request()).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unavailable);
    assert!(
        error
            .message()
            .contains("within 3s (auxiliary.compression.deadline)"),
        "{error}"
    );
    assert_eq!(
        server.received().len(),
        1,
        "no retry before the Retry-After"
    );

    // A short one is waited out, and the retry gets the summary.
    let server = FakeUpstream::scripted(vec![
        Answer::Text(429, "wait".into()).header("Retry-After", "1"),
        chat_reply("patience"),
    ]);
    let summarizer = build(
        &settings(Provider::Custom, server.base_url(), None),
        rt.handle().clone(),
    )
    .unwrap();
    assert_eq!(summarizer.summarize(&request()).unwrap().text, "patience");
    assert_eq!(server.received().len(), 2);
}

#[test]
fn times_out_and_reports_unavailable() {
    let slow = chat_reply("too late").after(Duration::from_secs(2));
    let server = FakeUpstream::scripted(vec![slow.clone(), slow]);
    let rt = runtime();
    let mut settings = settings(Provider::Custom, server.base_url(), None);
    settings.timeout = 0.3;
    settings.max_retries = 1;
    let summarizer = build(&settings, rt.handle().clone()).unwrap();
    let error = summarizer.summarize(&request()).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unavailable);
    assert!(error.message().contains("timed out after 0.3s"), "{error}");
    assert_eq!(server.received().len(), 2, "a timeout is retried");
}

#[test]
fn garbage_and_empty_answers_are_unavailable_and_not_retried() {
    let rt = runtime();
    let cases = [
        Answer::Text(200, "<html>definitely not json</html>".into()),
        chat_reply("   "),
        Answer::Json(200, json!({"choices": []})),
        Answer::Json(200, json!({"unexpected": true})),
        chat_reply("<think>only reasoning</think>"),
    ];
    for reply in cases {
        let server = FakeUpstream::scripted(vec![reply.clone()]);
        let summarizer = build(
            &settings(Provider::Custom, server.base_url(), None),
            rt.handle().clone(),
        )
        .unwrap();
        let error = summarizer.summarize(&request()).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Unavailable, "{reply:?}: {error}");
        assert_eq!(server.received().len(), 1, "{reply:?}");
    }
}

#[test]
fn reasoning_blocks_are_stripped_from_the_summary() {
    let server = FakeUpstream::scripted(vec![chat_reply(
        "<think>let me think</think>\n## Goal\n- x",
    )]);
    let rt = runtime();
    let summarizer = build(
        &settings(Provider::Custom, server.base_url(), None),
        rt.handle().clone(),
    )
    .unwrap();
    assert_eq!(
        summarizer.summarize(&request()).unwrap().text,
        "## Goal\n- x"
    );
}

#[test]
fn auth_failures_are_not_retried_and_name_the_variable() {
    std::env::set_var("CTXHOST_TEST_OPENAI_AUTH_KEY", "sk-wrong");
    let server = FakeUpstream::scripted(vec![Answer::Json(
        401,
        json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}),
    )]);
    let rt = runtime();
    let summarizer = build(
        &settings(
            Provider::Openai,
            server.base_url(),
            Some("CTXHOST_TEST_OPENAI_AUTH_KEY"),
        ),
        rt.handle().clone(),
    )
    .unwrap();
    let error = summarizer.summarize(&request()).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Failed);
    assert!(
        error
            .message()
            .contains("auth failed (HTTP 401): check $CTXHOST_TEST_OPENAI_AUTH_KEY"),
        "{error}"
    );
    assert!(error.message().contains("Incorrect API key provided"));
    assert_eq!(server.received().len(), 1);
}

#[test]
fn not_found_names_the_url() {
    let server = FakeUpstream::scripted(vec![Answer::Json(
        404,
        json!({"error": {"message": "The model `nope` does not exist"}}),
    )]);
    let rt = runtime();
    let summarizer = build(
        &settings(Provider::Custom, server.base_url(), None),
        rt.handle().clone(),
    )
    .unwrap();
    let error = summarizer.summarize(&request()).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Failed);
    let url = format!("{}/chat/completions", server.base_url());
    assert!(
        error
            .message()
            .starts_with(&format!("model or endpoint not found: {url}")),
        "{error}"
    );
    assert_eq!(server.received().len(), 1);
}

#[test]
fn a_missing_key_is_not_configured_and_sends_nothing() {
    let server = FakeUpstream::scripted(vec![chat_reply("unused")]);
    let rt = runtime();
    let summarizer = build(
        &settings(
            Provider::Openrouter,
            server.base_url(),
            Some("CTXHOST_TEST_OPENAI_UNSET_KEY"),
        ),
        rt.handle().clone(),
    )
    .unwrap();
    let error = summarizer.summarize(&request()).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::NotConfigured);
    assert!(
        error
            .message()
            .contains("$CTXHOST_TEST_OPENAI_UNSET_KEY is not set"),
        "{error}"
    );
    assert!(server.received().is_empty());
}

#[test]
fn a_keyless_custom_endpoint_sends_no_authorization() {
    let server = FakeUpstream::scripted(vec![chat_reply("local summary")]);
    let rt = runtime();
    let mut settings = settings(Provider::Custom, server.base_url(), None);
    settings.model = Some("llama3".into());
    let summarizer = build(&settings, rt.handle().clone()).unwrap();
    assert_eq!(
        summarizer.describe(),
        format!("custom:llama3@{}", server.base_url())
    );
    assert_eq!(
        summarizer.summarize(&request()).unwrap().text,
        "local summary"
    );
    let sent = &server.received()[0];
    assert_eq!(sent.header("authorization"), None);
    assert_eq!(sent.json()["model"], "llama3");
}

#[test]
fn connection_errors_are_retried_then_unavailable() {
    let rt = runtime();
    let mut settings = settings(
        Provider::Custom,
        format!("http://127.0.0.1:{}/v1", closed_port()),
        None,
    );
    settings.max_retries = 1;
    let summarizer = build(&settings, rt.handle().clone()).unwrap();
    let error = summarizer.summarize(&request()).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unavailable);
    assert!(error.message().contains("cannot connect"), "{error}");
    assert!(
        error.message().contains("gave up after 2 attempts"),
        "{error}"
    );
}

#[test]
fn oversized_content_is_trimmed_to_the_window() {
    let server = FakeUpstream::scripted(vec![chat_reply("short")]);
    let rt = runtime();
    let mut settings = settings(Provider::Custom, server.base_url(), None);
    settings.context_length = Some(4096);
    let summarizer = build(&settings, rt.handle().clone()).unwrap();
    let mut content = String::from("[user] FIRST-ASK keep me\n");
    for i in 0..4000 {
        content.push_str(&format!(
            "[tool bash] output line {i} with some padding text\n"
        ));
    }
    content.push_str("[assistant] LAST-STATE keep me too");
    let request = SummarizeRequest {
        content,
        max_tokens: 500,
        ..request()
    };
    summarizer.summarize(&request).unwrap();
    let body = server.received()[0].json();
    let system = body["messages"][0]["content"].as_str().unwrap();
    let user = body["messages"][1]["content"].as_str().unwrap();
    let total = estimate_tokens(system) + estimate_tokens(user) + 500;
    assert!(total <= 4096, "{total} tokens do not fit the window");
    assert!(user.contains("FIRST-ASK keep me"));
    assert!(user.contains("LAST-STATE keep me too"));
    assert!(user.contains("omitted from the middle"));
    assert_eq!(body["max_tokens"], 500);
}
