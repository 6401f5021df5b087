//! One-shot start-up: `ctxhost compress` as a process, from spawn to exit, with the repository's
//! `config.yaml` (built-in compressor, offline summarizer). Each process loads the tokenizer and
//! counts every message before and after compressing.
//!
//! - `compress_1402_messages`: a ~412K-token session, the corpus three times over behind one
//!   system prompt (each text counted once: repeats hit the cache).
//! - `tokens_1402_messages`: the same session through `ctxhost tokens` (read and count only),
//!   so the difference is what compressing adds (the offline summary, mostly).
//! - `compress_tiny`: two short messages, so mostly start-up and the tokenizer load.
//!
//! Run: `cargo bench -p ctxhost-tests --bench oneshot` (builds the release binary first).

use criterion::{criterion_group, criterion_main, Criterion};
use ctxhost_tests::{long_session, workspace_root, Sandbox};
use serde_json::{json, Value};

/// At least `min_messages`: the first system prompt, then the corpus turns repeated.
fn session(min_messages: usize) -> Value {
    let once = long_session();
    let mut messages = vec![once[0].clone()];
    while messages.len() < min_messages {
        messages.extend_from_slice(&once[1..]);
    }
    Value::Array(messages)
}

fn bench(c: &mut Criterion) {
    let sandbox = Sandbox::new();
    let config = std::fs::read_to_string(workspace_root().join("config.yaml"))
        .expect("the repository's config.yaml");
    sandbox.write_config(&config);
    let long = sandbox.write_json("long.json", &session(1_200));
    let tiny = sandbox.write_json(
        "tiny.json",
        &json!([
            {"role": "system", "content": "You are helpful."},
            {"role": "user", "content": "Hello there"}
        ]),
    );

    let mut group = c.benchmark_group("oneshot");
    group.sample_size(20);
    for (name, command, transcript) in [
        ("compress_1402_messages", "compress", &long),
        ("tokens_1402_messages", "tokens", &long),
        ("compress_tiny", "compress", &tiny),
    ] {
        let path = transcript.to_str().expect("a UTF-8 path");
        let run = sandbox.ctxhost(&[command, path]);
        assert!(run.success(), "{name}: {}", run.stderr);
        group.bench_function(name, |b| b.iter(|| sandbox.ctxhost(&[command, path])));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
