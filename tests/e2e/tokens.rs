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

/// One piece of several megabytes (a run of one character, a base64 blob, an attachment pasted
/// whole) is counted by every backend, in memory that does not grow with the piece: tiktoken's
/// split pattern overflowed its stack on it (the command panicked), and the default counter's
/// merge took tens of bytes and about a microsecond per byte of the piece.
#[test]
fn one_long_piece_is_counted_by_every_backend_in_bounded_memory() {
    let megabytes = 16;
    let run = "x".repeat(megabytes << 20);
    for backend in ["auto", "tiktoken"] {
        let sandbox = Sandbox::new();
        sandbox.write_config(&format!(
            "context:\n  engine: compressor\ntokens:\n  backend: {backend}\n"
        ));
        let transcript = sandbox.write_json(
            "blob.json",
            &serde_json::json!([{"role": "user", "content": run}]),
        );
        let mut command = sandbox.command(&["tokens", "--json", transcript.to_str().unwrap()]);
        let (stdout_path, stderr_path) = (sandbox.path().join("out"), sandbox.path().join("err"));
        command
            .stdout(std::fs::File::create(&stdout_path).unwrap())
            .stderr(std::fs::File::create(&stderr_path).unwrap());
        let (success, peak) = ctxhost_tests::memory::wait_measured(command.spawn().unwrap());
        let stderr = std::fs::read_to_string(&stderr_path).unwrap();
        assert!(success, "{backend}: {stderr}");
        let report: Value =
            serde_json::from_slice(&std::fs::read(&stdout_path).unwrap()).expect("JSON report");
        // `o200k_base` has a token of eight `x`.
        let expected = (run.len() / 8) as u64 + MESSAGE_OVERHEAD_TOKENS;
        assert_eq!(report["tokens"], expected, "{backend}: {report}");
        if let Some(peak) = peak {
            // The transcript's text is held a few times over (read, parsed, its searchable
            // text); counting adds a bounded amount on top.
            assert!(
                peak < 8 * run.len() as u64,
                "{backend}: peak RSS {} MiB for a {megabytes} MiB piece",
                peak >> 20
            );
        }
    }
}
