//! Shared test fixtures: the engine on a fake host, and conversation builders.

#![allow(dead_code)] // Each test file uses a different part of this module.

use ctxhost_engine_window::WindowEngine;
use ctxhost_sdk::{EngineError, EnginePlugin, Message, ToolCall};
use ctxhost_sdk_test::FakeHost;
use serde_json::Value;

/// A fake host (ctxhost-sdk-test) for this engine: its config section and window, a token
/// counter of one token per 4 characters, rounded up, and captured logs.
pub fn host(config: Value, context_length: u64) -> FakeHost {
    FakeHost::builder("window")
        .config(config)
        .context_length(context_length)
        .build()
}

pub fn try_engine(config: Value, context_length: u64) -> Result<WindowEngine, EngineError> {
    WindowEngine::create(host(config, context_length).services())
}

pub fn engine(config: Value, context_length: u64) -> WindowEngine {
    try_engine(config, context_length).expect("valid settings")
}

/// Tokens of messages as the engine counts them on the fake host.
pub fn tokens(messages: &[Message]) -> u64 {
    ctxhost_sdk_test::tokens::count_messages(messages)
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
