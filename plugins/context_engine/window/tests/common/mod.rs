//! Shared test fixtures: a fake host and conversation builders.

#![allow(dead_code)] // Each test file uses a different part of this module.

use std::sync::Arc;

use ctxhost_engine_window::WindowEngine;
use ctxhost_sdk::{
    EngineError, EnginePlugin, EngineSetup, HostBackend, HostServices, LogLevel, Message,
    ModelInfo, ToolCall,
};
use serde_json::Value;

/// A host with a predictable tokenizer: one token per 4 characters, rounded up.
pub struct FakeBackend;

impl HostBackend for FakeBackend {
    fn count_tokens(&self, text: &str) -> u64 {
        (text.chars().count() as u64).div_ceil(4)
    }

    fn log(&self, _engine: &str, _level: LogLevel, _message: &str) {}

    fn call(&self, service: &str, _payload: &str) -> Result<String, EngineError> {
        Err(EngineError::new(
            ctxhost_sdk::ErrorKind::NotConfigured,
            format!("{service} is not configured in tests"),
        ))
    }
}

pub fn services(config: Value, context_length: u64) -> HostServices {
    HostServices::new(
        Arc::new(FakeBackend),
        EngineSetup {
            engine: "window".to_string(),
            data_dir: std::env::temp_dir(),
            config,
            model: ModelInfo {
                name: "test-model".to_string(),
                context_length,
            },
        },
    )
}

pub fn try_engine(config: Value, context_length: u64) -> Result<WindowEngine, EngineError> {
    WindowEngine::create(services(config, context_length))
}

pub fn engine(config: Value, context_length: u64) -> WindowEngine {
    try_engine(config, context_length).expect("valid settings")
}

/// Tokens of messages as the engine counts them.
pub fn tokens(messages: &[Message]) -> u64 {
    services(Value::Null, 0).count_messages_tokens(messages)
}

/// `n` characters of filler, so a message's size is easy to reason about (n/4 tokens).
pub fn filler(label: &str, chars: usize) -> String {
    let mut text = format!("{label} ");
    while text.len() < chars {
        text.push('x');
    }
    text
}

pub fn tool_turn(ids: &[&str], output_chars: usize) -> Vec<Message> {
    let mut turn = vec![Message::assistant_tool_calls(
        ids.iter()
            .map(|id| ToolCall::new(*id, "run", format!("{{\"id\":\"{id}\"}}")))
            .collect(),
    )];
    for id in ids {
        turn.push(Message::tool_result(
            *id,
            filler(&format!("output of {id}"), output_chars),
        ));
    }
    turn
}

/// System prompt, first ask, then `turns` user/assistant exchanges of about 100 tokens each.
pub fn chat(turns: usize) -> Vec<Message> {
    let mut messages = vec![
        Message::system("You are terse."),
        Message::user("first ask"),
    ];
    for i in 0..turns {
        messages.push(Message::assistant(filler(&format!("reply {i}"), 400)));
        messages.push(Message::user(filler(&format!("ask {i}"), 400)));
    }
    messages
}

pub fn is_marker(message: &Message) -> bool {
    message.is_user() && message.content_text().starts_with("[window engine: ")
}

pub fn markers(messages: &[Message]) -> usize {
    messages.iter().filter(|m| is_marker(m)).count()
}
