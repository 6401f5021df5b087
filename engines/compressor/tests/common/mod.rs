//! A fake host for driving the compressor through its public surface.

#![allow(dead_code)]

use std::sync::{Arc, Mutex};

use ctxhost_compressor::Compressor;
use ctxhost_sdk::{
    EngineError, EngineSetup, ErrorKind, HostBackend, HostServices, LogLevel, Message, ModelInfo,
    SummarizeRequest, ToolCall,
};
use serde_json::{json, Value};

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

pub struct FakeHost {
    pub answer: Mutex<Answer>,
    pub requests: Mutex<Vec<SummarizeRequest>>,
}

impl FakeHost {
    pub fn new(answer: Answer) -> Arc<Self> {
        Arc::new(FakeHost {
            answer: Mutex::new(answer),
            requests: Mutex::new(Vec::new()),
        })
    }

    pub fn calls(&self) -> usize {
        self.requests.lock().unwrap().len()
    }
}

impl HostBackend for FakeHost {
    fn count_tokens(&self, text: &str) -> u64 {
        (text.chars().count() as u64).div_ceil(4)
    }

    fn log(&self, _engine: &str, _level: LogLevel, _message: &str) {}

    fn call(&self, service: &str, payload: &str) -> Result<String, EngineError> {
        assert_eq!(service, "summarize");
        let request: SummarizeRequest = serde_json::from_str(payload).unwrap();
        self.requests.lock().unwrap().push(request);
        match self.answer.lock().unwrap().clone() {
            Answer::Summary(text) => Ok(json!({"text": text, "summarizer": "fake"}).to_string()),
            Answer::FellBack(reason) => Ok(json!({
                "text": "## Goal\nthe offline handoff",
                "summarizer": "offline",
                "fallback_reason": reason,
            })
            .to_string()),
            Answer::Fail => Err(EngineError::new(ErrorKind::Unavailable, "HTTP 500")),
        }
    }
}

pub fn compressor(host: &Arc<FakeHost>, context_length: u64, config: Value) -> Compressor {
    let setup = EngineSetup {
        engine: "compressor".to_string(),
        data_dir: std::env::temp_dir(),
        config,
        model: ModelInfo {
            name: "test".to_string(),
            context_length,
        },
    };
    Compressor::new(HostServices::new(host.clone(), setup)).unwrap()
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
