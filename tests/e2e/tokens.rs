//! Token counts: the batch path a one-shot command takes (a whole session counted at once, on
//! every core) gives exactly the reference counter's counts over the corpus.

use ctxhost_sdk::{Message, MESSAGE_OVERHEAD_TOKENS};
use ctxhost_tests::{long_session, Sandbox};
use ctxhost_tokens::TokenCounter;
use serde_json::Value;

/// What tiktoken-rs counts for the messages, one by one.
fn reference_total(messages: &[Message]) -> u64 {
    let reference = tiktoken_rs::o200k_base().expect("the o200k_base encoding loads");
    messages
        .iter()
        .map(|m| reference.encode_ordinary(&m.searchable_text()).len() as u64)
        .map(|tokens| tokens + MESSAGE_OVERHEAD_TOKENS)
        .sum()
}

#[test]
fn a_session_counted_at_once_matches_tiktoken_message_by_message() {
    let session = long_session();
    let messages: Vec<Message> =
        serde_json::from_value(Value::Array(session.clone())).expect("corpus messages");
    let expected = reference_total(&messages);

    let counter = TokenCounter::new("o200k_base");
    assert_eq!(counter.count_messages(&messages), expected);
    // Again, from the cache.
    assert_eq!(counter.count_messages(&messages), expected);
    let one_by_one: u64 = messages.iter().map(|m| counter.count_message(m)).sum();
    assert_eq!(one_by_one, expected);

    // The one-shot command reports the same total.
    let sandbox = Sandbox::new();
    sandbox.write_config("context:\n  engine: compressor\n");
    let transcript = sandbox.write_json("session.json", &Value::Array(session));
    let run = sandbox.ctxhost(&["compress", transcript.to_str().expect("a UTF-8 path")]);
    assert!(run.success(), "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!(" messages, {expected} → ")),
        "expected {expected} tokens before compression: {}",
        run.stderr
    );
}
