//! Agents' own session logs as transcripts: a Claude Code session file and a Codex rollout,
//! replayed with `ctxhost run` and written back in their own format with `--output-format`.

use std::path::PathBuf;

use ctxhost_tests::{corpus_dir, workspace_root, Run, Sandbox};
use serde_json::Value;

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
    assert_eq!(
        conversation(back.json()),
        conversation(original.json())[1..].to_vec()
    );
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
