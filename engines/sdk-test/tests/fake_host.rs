//! The fake host through the services an engine sees.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use ctxhost_sdk::{ErrorKind, LogLevel, Message, SummarizeRequest, Summary};
use ctxhost_sdk_test::{digest, tokens, Answer, FakeHost, LogLine, FAKE_SUMMARIZER};
use serde_json::json;

fn request(content: &str, max_tokens: u64) -> SummarizeRequest {
    SummarizeRequest {
        instructions: "summarize".into(),
        content: content.into(),
        max_tokens,
        ..SummarizeRequest::default()
    }
}

#[test]
fn the_setup_is_what_the_builder_was_given() {
    let host = FakeHost::builder("demo")
        .config(json!({"threshold": 0.5}))
        .model("big-model")
        .context_length(128_000)
        .build();
    let services = host.services();
    assert_eq!(services.setup().engine, "demo");
    assert_eq!(services.config(), &json!({"threshold": 0.5}));
    assert_eq!(services.model().name, "big-model");
    assert_eq!(services.model().context_length, 128_000);
    assert!(services.data_dir().is_dir());
    assert_eq!(services.data_dir(), host.data_dir());
    let defaults = FakeHost::new("demo");
    assert_eq!(defaults.services().model().context_length, 8_000);
    assert!(defaults.services().config().is_null());
    assert_ne!(
        defaults.data_dir(),
        host.data_dir(),
        "each host has its own"
    );
}

#[test]
fn the_data_directory_lives_as_long_as_any_services_do() {
    let host = FakeHost::new("demo");
    let services = host.services();
    let dir = services.data_dir().to_path_buf();
    drop(host);
    std::fs::write(dir.join("store"), "kept").unwrap();
    drop(services);
    assert!(!dir.exists(), "removed with the last handle");
}

#[test]
fn a_given_data_directory_is_used_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let host = FakeHost::builder("demo").data_dir(dir.path()).build();
    assert_eq!(host.services().data_dir(), dir.path());
    drop(host);
    assert!(dir.path().is_dir());
}

#[test]
fn tokens_are_characters_over_four_rounded_up() {
    let host = FakeHost::new("demo");
    let services = host.services();
    for (text, expected) in [("", 0), ("abc", 1), ("abcd", 1), ("abcde", 2), ("ééééé", 2)] {
        assert_eq!(services.count_tokens(text), expected, "{text:?}");
        assert_eq!(tokens::count_text(text), expected, "{text:?}");
    }
    let messages = [Message::user("abcdefgh"), Message::assistant("")];
    // 2 + 4 framing, 0 + 4 framing.
    assert_eq!(services.count_messages_tokens(&messages), 10);
    assert_eq!(tokens::count_messages(&messages), 10);
}

#[test]
fn the_script_answers_in_order_then_the_default() {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let host = FakeHost::builder("demo")
        .answer(Answer::text("first"))
        .script([
            Answer::error(ErrorKind::Unavailable, "HTTP 500"),
            Answer::with(move |request| {
                seen.fetch_add(1, Ordering::SeqCst);
                Ok(Summary {
                    text: request.content.to_uppercase(),
                    summarizer: "custom".into(),
                    fallback_reason: None,
                })
            }),
        ])
        .build();
    let services = host.services();
    let ask = request("some   long\n content", 100);
    assert_eq!(services.summarize(&ask).unwrap().text, "first");
    let error = services.summarize(&ask).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unavailable);
    assert_eq!(error.message(), "HTTP 500");
    assert_eq!(
        services.summarize(&ask).unwrap(),
        Summary {
            text: "SOME   LONG\n CONTENT".into(),
            summarizer: "custom".into(),
            fallback_reason: None,
        }
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    // The queue is empty: the default digest.
    let summary = services.summarize(&ask).unwrap();
    assert_eq!(summary.text, "summary: some long content");
    assert_eq!(summary.summarizer, FAKE_SUMMARIZER);
    assert_eq!(host.summarize_calls(), 4);
    assert_eq!(host.requests(), vec![ask.clone(); 4]);
    assert_eq!(host.take_requests().len(), 4);
    assert!(host.requests().is_empty());

    host.push_answer(Answer::text("queued later"));
    host.set_default_answer(Answer::error(ErrorKind::NotConfigured, "none"));
    assert_eq!(services.summarize(&ask).unwrap().text, "queued later");
    assert_eq!(
        services.summarize(&ask).unwrap_err().kind(),
        ErrorKind::NotConfigured
    );
}

#[test]
fn the_digest_fits_the_budget_and_is_deterministic() {
    let long = "word ".repeat(1_000);
    let summary = digest(&request(&long, 10));
    assert_eq!(summary.text.chars().count(), 20);
    assert!(summary.text.starts_with("summary: word"));
    assert!(tokens::count_text(&summary.text) <= 10);
    assert_eq!(digest(&request(&long, 10)), summary);
    assert_eq!(digest(&request(&long, 0)).text, "summary:");
}

#[test]
fn logs_are_captured_with_engine_and_level() {
    let host = FakeHost::new("demo");
    let services = host.services();
    services.debug("one");
    services.warn("two");
    services.log(LogLevel::Error, "three");
    let logs = host.logs();
    assert_eq!(
        logs[1],
        LogLine {
            engine: "demo".into(),
            level: LogLevel::Warn,
            message: "two".into()
        }
    );
    let levels: Vec<LogLevel> = host.take_logs().iter().map(|l| l.level).collect();
    assert_eq!(levels, [LogLevel::Debug, LogLevel::Warn, LogLevel::Error]);
    assert!(host.logs().is_empty());
}
