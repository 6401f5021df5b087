//! Agents' own session logs as transcripts: a Claude Code session file and a Codex rollout,
//! replayed with `ctxhost run` and written back in their own format with `--output-format`.

use std::path::PathBuf;

use ctxhost_tests::{corpus_dir, workspace_root, Run, Sandbox};
use serde_json::{json, Value};

/// The fixtures and the format each is detected as.
const LOGS: [(&str, &str); 2] = [
    ("claude-code.jsonl", "claude-code"),
    ("codex-rollout.jsonl", "codex"),
];

/// The field each format keeps its source lines in.
const ORIGIN_FIELDS: [&str; 2] = ["claude_code", "codex"];

fn fixture(file: &str) -> PathBuf {
    workspace_root()
        .join("tests/fixtures/transcripts")
        .join(file)
}

/// A sandbox with the echo engine (it returns the conversation unchanged).
fn sandbox() -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.add_plugin("echo", "ctxhost_fixture_echo");
    sandbox.write_config("model:\n  context_length: 8000\n");
    sandbox
}

/// `ctxhost compress PATH --engine echo` with more arguments: the file read and written as is.
fn echo(sandbox: &Sandbox, path: &str, more: &[&str]) -> Run {
    sandbox.ctxhost(&[&["compress", path, "--engine", "echo"], more].concat())
}

/// Messages without the fields that record their source lines, tool call arguments compacted
/// (formats that keep them as objects do not keep their spacing).
fn conversation(messages: Value) -> Vec<Value> {
    let mut messages = match messages {
        Value::Array(messages) => messages,
        other => panic!("not a message array: {other}"),
    };
    for message in &mut messages {
        for field in ORIGIN_FIELDS {
            message.as_object_mut().unwrap().shift_remove(field);
        }
        for call in message["tool_calls"].as_array_mut().into_iter().flatten() {
            let arguments = &mut call["function"]["arguments"];
            if let Some(parsed) = arguments
                .as_str()
                .and_then(|a| serde_json::from_str::<Value>(a).ok())
            {
                *arguments = Value::String(parsed.to_string());
            }
        }
    }
    messages
}

#[test]
fn claude_code_and_codex_logs_replay_with_run_and_write_their_own_format_back() {
    let sandbox = Sandbox::new();
    sandbox.link_repo_plugins();
    sandbox.write_config("model:\n  context_length: 8000\n");
    for (file, format) in LOGS {
        for engine in ["compressor", "lcm"] {
            let out = sandbox.path().join(format!("final-{engine}-{file}"));
            let out = out.to_str().unwrap();
            let run = sandbox.ctxhost(&[
                "run",
                fixture(file).to_str().unwrap(),
                "--engine",
                engine,
                "--json",
                "--out",
                out,
                "--output-format",
                "same",
            ]);
            assert!(run.success(), "{file}, {engine}: {}", run.stderr);
            let report = run.json();
            assert_eq!(report["format"], format, "{file}");
            let replay = &report["runs"][0];
            assert!(replay["errors"].as_array().unwrap().is_empty(), "{replay}");
            let compressions = replay["compressions"].as_array().unwrap();
            assert!(
                compressions
                    .iter()
                    .any(|c| c["tokens_after"].as_u64() < c["tokens_before"].as_u64()),
                "{file}, {engine}: no compression shrank the context: {compressions:?}"
            );
            // The final context was written as a log of the same format, which reads back as
            // the final context.
            let again = sandbox.ctxhost(&["run", out, "--json"]);
            assert!(again.success(), "{file}, {engine}: {}", again.stderr);
            assert_eq!(again.json()["format"], format);
            assert_eq!(
                again.json()["runs"][0]["messages"],
                replay["final_messages"],
                "{file}, {engine}"
            );
        }
        // The text report names the format too.
        let text = sandbox.ctxhost(&["run", fixture(file).to_str().unwrap()]);
        assert!(
            text.stdout.starts_with(&format!("format       {format}\n")),
            "{}",
            text.stdout
        );
    }
}

#[test]
fn compress_writes_the_log_back_and_it_reads_as_the_compressed_conversation() {
    let sandbox = sandbox();
    for (file, format) in LOGS {
        let path = fixture(file);
        let path = path.to_str().unwrap();
        let args = ["compress", path, "--engine", "compressor", "--force"];
        let as_openai = sandbox.ctxhost(&args);
        assert!(as_openai.success(), "{file}: {}", as_openai.stderr);
        let as_log = sandbox.ctxhost(&[&args[..], &["--output-format", "same"]].concat());
        assert!(as_log.success(), "{file}: {}", as_log.stderr);
        assert_ne!(
            as_log.stdout,
            std::fs::read_to_string(path).unwrap(),
            "{file}: compressed"
        );
        let written = sandbox.write(&format!("compressed-{file}"), &as_log.stdout);
        let read_back = echo(&sandbox, written.to_str().unwrap(), &[]);
        assert!(read_back.success(), "{file}: {}", read_back.stderr);
        assert!(
            read_back.stderr.contains(&format!(
                "echo: {} → ",
                as_openai.json().as_array().unwrap().len()
            )),
            "{}",
            read_back.stderr
        );
        assert_eq!(
            conversation(read_back.json()),
            conversation(as_openai.json()),
            "{file}: the {format} log reads back as what the engine returned"
        );
    }
}

#[test]
fn an_unchanged_log_round_trips_losslessly() {
    let sandbox = sandbox();
    for (file, format) in LOGS {
        let path = fixture(file);
        let original = std::fs::read_to_string(&path).unwrap();
        let path = path.to_str().unwrap();
        // Written back unchanged: the same bytes.
        let same = echo(&sandbox, path, &["--output-format", format]);
        assert!(same.success(), "{file}: {}", same.stderr);
        assert_eq!(same.stdout, original, "{file}");
        // Parse, write back, parse again: equal, source lines included.
        let first = echo(&sandbox, path, &[]);
        let written = sandbox.write(&format!("again-{file}"), &same.stdout);
        let second = echo(&sandbox, written.to_str().unwrap(), &[]);
        assert!(
            first.success() && second.success(),
            "{}{}",
            first.stderr,
            second.stderr
        );
        assert_eq!(first.json(), second.json(), "{file}");
        // Naming the format reads the same; naming the wrong one is one line.
        let named = echo(&sandbox, path, &["--format", format]);
        assert_eq!(named.stdout, first.stdout, "{file}");
    }
    let wrong = echo(
        &sandbox,
        fixture("claude-code.jsonl").to_str().unwrap(),
        &["--format", "codex"],
    );
    assert_eq!(wrong.code, Some(1));
    assert_eq!(wrong.stderr_lines().len(), 1, "{}", wrong.stderr);
    assert!(
        wrong.stderr.contains("not a Codex rollout"),
        "{}",
        wrong.stderr
    );
}

#[test]
fn an_openai_transcript_converts_to_a_codex_rollout_and_back() {
    let sandbox = sandbox();
    let corpus =
        corpus_dir().join("function_calling__install-1__marshmallow-code__marshmallow-1867.json");
    let corpus = corpus.to_str().unwrap();
    let rollout = echo(&sandbox, corpus, &["--output-format", "codex"]);
    assert!(rollout.success(), "{}", rollout.stderr);
    let written = sandbox.write("converted.jsonl", &rollout.stdout);
    let back = echo(&sandbox, written.to_str().unwrap(), &[]);
    assert!(back.success(), "{}", back.stderr);
    let original = echo(&sandbox, corpus, &[]);
    assert_eq!(conversation(back.json()), conversation(original.json()));
    // Claude Code logs hold no system prompt: it is left out, and said so.
    let log = echo(&sandbox, corpus, &["--output-format", "claude-code"]);
    assert!(log.success(), "{}", log.stderr);
    assert!(
        log.stderr
            .contains("note: the system prompt is not written"),
        "{}",
        log.stderr
    );
    let written = sandbox.write("converted-claude.jsonl", &log.stdout);
    let back = echo(&sandbox, written.to_str().unwrap(), &[]);
    assert!(back.success(), "{}", back.stderr);
    // Read back, the messages hold Anthropic blocks: the same conversation, as Anthropic
    // Messages, as the corpus transcript's (less its system prompt).
    let as_anthropic = |path: &str| -> Value {
        let run = echo(&sandbox, path, &["--output-format", "anthropic"]);
        assert!(run.success(), "{path}: {}", run.stderr);
        serde_json::from_str(&run.stdout).unwrap()
    };
    let from_log = as_anthropic(written.to_str().unwrap());
    let from_corpus = as_anthropic(corpus);
    assert_eq!(from_log["messages"], from_corpus["messages"]);
    assert!(from_log.get("system").is_none() && from_corpus["system"].is_string());
}

#[test]
fn every_format_writes_itself_back() {
    let sandbox = sandbox();
    for file in ["anthropic.json", "hermes.jsonl"] {
        let path = fixture(file);
        let path = path.to_str().unwrap();
        let original = echo(&sandbox, path, &[]);
        let same = echo(&sandbox, path, &["--output-format", "same"]);
        assert!(same.success(), "{file}: {}", same.stderr);
        assert_ne!(same.stdout, original.stdout, "{file}: not OpenAI messages");
        let written = sandbox.write(&format!("again-{file}"), &same.stdout);
        let back = echo(&sandbox, written.to_str().unwrap(), &[]);
        assert!(back.success(), "{file}: {}", back.stderr);
        assert_eq!(back.json(), original.json(), "{file}");
    }
    let unknown = sandbox.ctxhost(&["compress", "x.json", "--output-format", "yaml"]);
    assert_eq!(unknown.code, Some(2));
    assert!(
        unknown.stderr.contains(
            "unknown format `yaml`; use openai, hermes, anthropic, claude-code, codex or same"
        ),
        "{}",
        unknown.stderr
    );
}

/// An Anthropic Messages document with every block type: thinking with signatures,
/// redacted_thinking, documents (text and PDF) with citations enabled, images, search results
/// (in a tool result and on their own), citations of both kinds, tool results with `is_error`
/// and image content, cache_control on system, blocks and a tool call; `model` and
/// `max_tokens` beside the messages.
const EVERY_BLOCK: &str = "anthropic-blocks.json";

/// A JSON text compacted with its keys in the order they came: equal texts are equal
/// documents, key order included.
fn compact(text: &str) -> String {
    serde_json::from_str::<Value>(text)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
        .to_string()
}

#[test]
fn an_anthropic_document_with_every_block_comes_back_unchanged_under_the_threshold() {
    let sandbox = sandbox();
    let path = fixture(EVERY_BLOCK);
    let original = std::fs::read_to_string(&path).unwrap();
    let path = path.to_str().unwrap();
    // The echo engine changes nothing; the compressor has nothing to do under its threshold.
    for engine in ["echo", "compressor"] {
        for output in ["same", "anthropic"] {
            let run = sandbox.ctxhost(&[
                "compress",
                path,
                "--engine",
                engine,
                "--output-format",
                output,
            ]);
            assert!(run.success(), "{engine}, {output}: {}", run.stderr);
            assert_eq!(
                compact(&run.stdout),
                compact(&original),
                "{engine}, {output}"
            );
        }
    }
    // The document written back reads as the same messages.
    let written = echo(&sandbox, path, &["--output-format", "same"]);
    let again = sandbox.write("again-blocks.json", &written.stdout);
    let first = echo(&sandbox, path, &[]);
    let second = echo(&sandbox, again.to_str().unwrap(), &[]);
    assert!(second.success(), "{}", second.stderr);
    assert_eq!(first.json(), second.json());
}

/// The blocks of an Anthropic message (a string is one text block).
fn blocks(message: &Value) -> Vec<Value> {
    match &message["content"] {
        Value::Array(blocks) => blocks.clone(),
        Value::String(text) => vec![serde_json::json!({"type": "text", "text": text})],
        _ => Vec::new(),
    }
}

fn has_thinking(message: &Value) -> bool {
    blocks(message)
        .iter()
        .any(|b| b["type"] == "thinking" || b["type"] == "redacted_thinking")
}

/// What Anthropic requires of a compressed conversation, checked against the original.
fn assert_valid_for_anthropic(compressed: &Value, original: &Value, what: &str) {
    assert_eq!(
        compressed["system"], original["system"],
        "{what}: the system prompt"
    );
    assert_eq!(
        compressed["model"], original["model"],
        "{what}: the other keys"
    );
    let turns = compressed["messages"].as_array().unwrap();
    let originals = original["messages"].as_array().unwrap();
    // Every tool_result answers a tool_use of the assistant turn right before it.
    for (index, turn) in turns.iter().enumerate() {
        for result in blocks(turn).iter().filter(|b| b["type"] == "tool_result") {
            let called = index
                .checked_sub(1)
                .map(|before| &turns[before])
                .filter(|before| before["role"] == "assistant")
                .is_some_and(|before| {
                    blocks(before)
                        .iter()
                        .any(|b| b["type"] == "tool_use" && b["id"] == result["tool_use_id"])
                });
            assert!(
                called,
                "{what}: message {index}: {result} has no tool_use before it"
            );
        }
    }
    // Thinking survives only on a turn that is exactly as it was (its signature covers it).
    for turn in turns.iter().filter(|t| has_thinking(t)) {
        assert!(
            originals.contains(turn),
            "{what}: thinking kept on a changed turn: {turn}"
        );
    }
    // The current turn is the user's own, as sent.
    let last_user = |turns: &[Value]| turns.iter().rev().find(|t| t["role"] == "user").cloned();
    assert_eq!(
        last_user(turns),
        last_user(originals),
        "{what}: the current turn"
    );
    assert_eq!(turns.last(), originals.last(), "{what}: the last message");
}

#[test]
fn above_the_threshold_an_anthropic_document_stays_valid_for_anthropic() {
    let sandbox = Sandbox::new();
    sandbox.link_repo_plugins();
    // The smallest window, and short protected tails, so that a few turns are over it.
    sandbox.write_config(
        "model:\n  context_length: 1024\ncompression:\n  protect_last_n: 3\n  target_ratio: 0.1\n\
         plugins:\n  lcm:\n    fresh_tail_count: 3\n",
    );
    let path = fixture(EVERY_BLOCK);
    let original: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let path = path.to_str().unwrap();
    for engine in ["compressor", "lcm"] {
        let run = sandbox.ctxhost(&[
            "compress",
            path,
            "--engine",
            engine,
            "--force",
            "--output-format",
            "same",
        ]);
        assert!(run.success(), "{engine}: {}", run.stderr);
        let compressed: Value = serde_json::from_str(&run.stdout).unwrap();
        assert!(
            compressed["messages"].as_array().unwrap().len()
                < original["messages"].as_array().unwrap().len(),
            "{engine}: nothing was summarized: {}",
            run.stderr
        );
        assert_valid_for_anthropic(&compressed, &original, engine);
        // What was written reads back as a valid conversation.
        let written = sandbox.write(&format!("compressed-{engine}.json"), &run.stdout);
        let back = sandbox.ctxhost(&[
            "compress",
            written.to_str().unwrap(),
            "--engine",
            "compressor",
        ]);
        assert!(back.success(), "{engine}: {}", back.stderr);
    }
    // `ctxhost run` replays it, compressing on the way, and writes the final context back.
    let out = sandbox.path().join("final-blocks.json");
    let run = sandbox.ctxhost(&[
        "run",
        path,
        "--json",
        "--out",
        out.to_str().unwrap(),
        "--output-format",
        "same",
    ]);
    assert!(run.success(), "{}", run.stderr);
    let report = run.json();
    assert_eq!(report["format"], "anthropic");
    let replay = &report["runs"][0];
    assert!(replay["errors"].as_array().unwrap().is_empty(), "{replay}");
    assert!(
        !replay["compressions"].as_array().unwrap().is_empty(),
        "no compression: {replay}"
    );
    let last: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_valid_for_anthropic(&last, &original, "run");
}

#[test]
fn a_hermes_tool_turn_without_tags_is_kept_and_a_call_inside_think_is_not_made() {
    let sandbox = sandbox();
    let trajectory = json!({"conversations": [
        {"from": "human", "value": "list the files"},
        {"from": "gpt", "value": "<think>\nnot <tool_call>\n{\"name\": \"rm\", \"arguments\": {}}\n</tool_call> that\n</think>\n<tool_call>\n{\"name\": \"ls\", \"arguments\": {}}\n</tool_call>"},
        {"from": "tool", "value": "a.txt\nb.txt"},
        {"from": "gpt", "value": "two files"},
    ]});
    let path = sandbox.write("trajectory.jsonl", &format!("{trajectory}\n"));
    let run = echo(&sandbox, path.to_str().unwrap(), &[]);
    assert!(run.success(), "{}", run.stderr);
    let messages = run.json();
    let messages = messages.as_array().unwrap();
    assert_eq!(messages.len(), 4, "{messages:?}");
    let calls = messages[1]["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{messages:?}");
    assert_eq!(calls[0]["function"]["name"], "ls");
    assert_eq!(messages[2]["role"], "tool");
    assert_eq!(messages[2]["tool_call_id"], calls[0]["id"]);
    assert_eq!(messages[2]["content"], "a.txt\nb.txt");
}
