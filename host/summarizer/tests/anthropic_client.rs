//! The Anthropic Messages client against a local HTTP server.

mod support;

use ctxhost_config::summarizer::{Provider, SummarizerSettings};
use ctxhost_sdk::{ErrorKind, SummarizeRequest};
use ctxhost_summarizer::build;
use serde_json::json;
use support::{messages_reply, runtime, Answer, FakeUpstream};

fn settings(base_url: String, key_env: &str) -> SummarizerSettings {
    SummarizerSettings {
        provider: Provider::Anthropic,
        model: Some("claude-haiku-test".into()),
        base_url: Some(base_url),
        api_key_env: Some(key_env.into()),
        timeout: 5.0,
        max_retries: 2,
        deadline: 60.0,
        context_length: None,
        cooldown_seconds: None,
    }
}

fn request() -> SummarizeRequest {
    SummarizeRequest {
        instructions: "Summarize for a handoff.".into(),
        content:
            "[user] migrate the db\n[assistant -> tool_call bash] {\"command\": \"make migrate\"}"
                .into(),
        max_tokens: 256,
        focus_topic: None,
        previous_summary: None,
        shape: Default::default(),
    }
}

#[test]
fn sends_a_messages_request_and_returns_the_text() {
    std::env::set_var("CTXHOST_TEST_ANTHROPIC_SHAPE_KEY", "ak-test");
    let server = FakeUpstream::scripted(vec![messages_reply("## Goal\n- migrate the db")]);
    let rt = runtime();
    let summarizer = build(
        &settings(server.base_url(), "CTXHOST_TEST_ANTHROPIC_SHAPE_KEY"),
        rt.handle().clone(),
    )
    .unwrap();
    assert_eq!(
        summarizer.describe(),
        format!("anthropic:claude-haiku-test@{}", server.base_url())
    );
    let summary = summarizer.summarize(&request()).unwrap();
    assert_eq!(summary.text, "## Goal\n- migrate the db");

    let requests = server.received();
    assert_eq!(requests.len(), 1);
    let sent = &requests[0];
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some("ak-test"));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent.header("authorization"), None);
    let body = sent.json();
    assert_eq!(body["model"], "claude-haiku-test");
    assert_eq!(body["system"], "Summarize for a handoff.");
    assert_eq!(body["max_tokens"], 256);
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0]["role"], "user");
    let prompt = messages[0]["content"].as_str().unwrap();
    assert!(prompt.contains("[user] migrate the db"));
    assert!(prompt.contains("make migrate"));
}

#[test]
fn overloaded_is_retried() {
    std::env::set_var("CTXHOST_TEST_ANTHROPIC_RETRY_KEY", "ak-retry");
    let server = FakeUpstream::scripted(vec![
        Answer::Json(
            529,
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ),
        messages_reply("after the storm"),
    ]);
    let rt = runtime();
    let summarizer = build(
        &settings(server.base_url(), "CTXHOST_TEST_ANTHROPIC_RETRY_KEY"),
        rt.handle().clone(),
    )
    .unwrap();
    assert_eq!(
        summarizer.summarize(&request()).unwrap().text,
        "after the storm"
    );
    assert_eq!(server.received().len(), 2);
}

#[test]
fn forbidden_is_an_auth_failure_naming_the_variable() {
    std::env::set_var("CTXHOST_TEST_ANTHROPIC_AUTH_KEY", "ak-bad");
    let server = FakeUpstream::scripted(vec![Answer::Json(
        403,
        json!({"type": "error", "error": {"type": "permission_error", "message": "no access"}}),
    )]);
    let rt = runtime();
    let summarizer = build(
        &settings(server.base_url(), "CTXHOST_TEST_ANTHROPIC_AUTH_KEY"),
        rt.handle().clone(),
    )
    .unwrap();
    let error = summarizer.summarize(&request()).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Failed);
    assert!(
        error
            .message()
            .contains("check $CTXHOST_TEST_ANTHROPIC_AUTH_KEY"),
        "{error}"
    );
    assert_eq!(server.received().len(), 1);
}

#[test]
fn an_answer_without_text_is_unavailable() {
    std::env::set_var("CTXHOST_TEST_ANTHROPIC_EMPTY_KEY", "ak-empty");
    let server = FakeUpstream::scripted(vec![Answer::Json(
        200,
        json!({"type": "message", "content": [], "stop_reason": "max_tokens"}),
    )]);
    let rt = runtime();
    let summarizer = build(
        &settings(server.base_url(), "CTXHOST_TEST_ANTHROPIC_EMPTY_KEY"),
        rt.handle().clone(),
    )
    .unwrap();
    let error = summarizer.summarize(&request()).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unavailable);
    assert!(
        error.message().contains("stop_reason max_tokens"),
        "{error}"
    );
}

#[test]
fn a_missing_key_names_the_default_variable() {
    // The default variable may exist on a developer's machine; name a fresh one instead and
    // check the default separately.
    let defaults = SummarizerSettings {
        provider: Provider::Anthropic,
        model: Some("m".into()),
        ..Default::default()
    };
    assert_eq!(
        defaults.effective_api_key_env().as_deref(),
        Some("ANTHROPIC_API_KEY")
    );
    assert_eq!(
        defaults.effective_base_url().as_deref(),
        Some("https://api.anthropic.com/v1")
    );
    let rt = runtime();
    let summarizer = build(
        &settings(
            "http://127.0.0.1:9/v1".into(),
            "CTXHOST_TEST_ANTHROPIC_UNSET_KEY",
        ),
        rt.handle().clone(),
    )
    .unwrap();
    let error = summarizer.summarize(&request()).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::NotConfigured);
    assert!(error
        .message()
        .contains("$CTXHOST_TEST_ANTHROPIC_UNSET_KEY is not set"));
}
