//! A fake host for driving the compressor through its public surface.

#![allow(dead_code)]

use ctxhost_compressor::Compressor;
use ctxhost_sdk::{EngineSetup, ErrorKind, HostServices, Message, ModelInfo, Summary, ToolCall};
pub use ctxhost_sdk_test::FakeHost;
use serde_json::Value;

/// How the fake host's `summarize` answers.
#[derive(Clone)]
pub enum Answer {
    /// The configured summarizer wrote this.
    Summary(String),
    /// The host fell back to its offline summary, for this reason.
    FellBack(String),
    /// The host could not answer at all.
    Fail,
}

/// The test-support crate's fake host (one token per 4 characters), answering every
/// `summarize` with `answer`.
pub fn host(answer: Answer) -> FakeHost {
    let answer = match answer {
        Answer::Summary(text) => ctxhost_sdk_test::Answer::text(text),
        Answer::FellBack(reason) => ctxhost_sdk_test::Answer::with(move |_| {
            Ok(Summary {
                text: "## Goal\nthe offline handoff".into(),
                summarizer: "offline".into(),
                fallback_reason: Some(reason.clone()),
            })
        }),
        Answer::Fail => ctxhost_sdk_test::Answer::error(ErrorKind::Unavailable, "HTTP 500"),
    };
    FakeHost::builder("compressor")
        .default_answer(answer)
        .build()
}

/// The compressor on `host`, for a model with `context_length`, with `config` as its
/// `compression` section.
pub fn compressor(host: &FakeHost, context_length: u64, config: Value) -> Compressor {
    let setup = EngineSetup {
        engine: "compressor".to_string(),
        data_dir: host.data_dir().to_path_buf(),
        config,
        model: ModelInfo {
            name: "test".to_string(),
            context_length,
        },
    };
    Compressor::new(HostServices::new(host.backend(), setup)).unwrap()
}

/// A conversation of `turns` exchanges, each an assistant tool call with a sizeable result.
pub fn conversation(turns: usize) -> Vec<Message> {
    let mut messages = vec![
        Message::system("You are a coding agent."),
        Message::user("Fix the failing test in parser.rs"),
        Message::assistant("I will look at the code first."),
    ];
    for i in 0..turns {
        let id = format!("c{i}");
        messages.push(Message::assistant_tool_calls(vec![ToolCall::new(
            &id,
            "terminal",
            format!(r#"{{"command":"cargo test step{i}"}}"#),
        )]));
        messages.push(Message::tool_result(&id, format!("line {i}\n").repeat(60)));
        if i % 5 == 4 {
            messages.push(Message::user(format!("keep going, step {i}")));
        }
    }
    messages.push(Message::user("latest ask: also update the changelog"));
    messages
}

pub fn summaries(messages: &[Message]) -> usize {
    messages
        .iter()
        .filter(|m| {
            m.content_text()
                .starts_with(ctxhost_compressor::SUMMARY_PREFIX)
        })
        .count()
}

/// A host whose summarizer is the host's offline summary.
pub fn offline_host() -> FakeHost {
    FakeHost::builder("compressor")
        .default_answer(ctxhost_sdk_test::Answer::with(|request| {
            Ok(ctxhost_offline_summary::OfflineSummarizer.summary(request))
        }))
        .build()
}
