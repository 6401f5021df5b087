//! `ctxhost run`, `tokens` and `tools`: replaying recorded sessions and reporting on them.

use ctxhost_sdk::Message;
use ctxhost_tests::{corpus_files, long_session, read_json, workspace_root, Sandbox};
use serde_json::Value;

/// Tokens with no engine, computed here from scratch: at each model call (each assistant
/// message), everything before it is sent.
fn no_engine_total(messages: &[Message]) -> u64 {
    let bpe = tiktoken_rs::o200k_base().unwrap();
    let cost: Vec<u64> = messages
        .iter()
        .map(|m| bpe.encode_ordinary(&m.searchable_text()).len() as u64 + 4)
        .collect();
    messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.is_assistant())
        .map(|(i, _)| cost[..i].iter().sum::<u64>())
        .sum()
}

fn replay_json(sandbox: &Sandbox, args: &[&str]) -> Value {
    let run = sandbox.ctxhost(args);
    assert!(run.success(), "{args:?}: {}", run.stderr);
    run.json()["runs"][0].clone()
}

#[test]
fn every_corpus_transcript_replays_through_every_engine_and_the_numbers_add_up() {
    let sandbox = Sandbox::new();
    sandbox.link_repo_plugins();
    sandbox.write_config("model:\n  context_length: 8000\n");
    let out = sandbox.path().join("final.json");
    for engine in ["compressor", "window", "lcm"] {
        for file in corpus_files() {
            let transcript = file.to_str().unwrap();
            let report = replay_json(
                &sandbox,
                &[
                    "run",
                    transcript,
                    "--engine",
                    engine,
                    "--json",
                    "--out",
                    out.to_str().unwrap(),
                ],
            );
            let messages: Vec<Message> = serde_json::from_value(read_json(&file)).unwrap();
            let name = file.file_name().unwrap().to_string_lossy();
            assert_eq!(report["engine"], engine, "{name}");
            assert_eq!(
                report["total_input_tokens_no_engine"].as_u64().unwrap(),
                no_engine_total(&messages),
                "{name}: tokens with no engine"
            );
            let calls = report["calls"].as_array().unwrap();
            assert_eq!(
                calls.len(),
                messages.iter().filter(|m| m.is_assistant()).count()
            );
            let sent: u64 = calls.iter().map(|c| c["tokens"].as_u64().unwrap()).sum();
            assert_eq!(
                report["total_input_tokens"].as_u64().unwrap(),
                sent,
                "{name}"
            );
            let written: Vec<Message> = serde_json::from_value(read_json(&out)).unwrap();
            assert_eq!(
                written.len() as u64,
                report["final_messages"].as_u64().unwrap()
            );
            ctxhost_sdk::sequence::validate(&written).expect("the final context is valid");
            assert!(
                report["errors"].as_array().unwrap().is_empty(),
                "{name}: {report}"
            );
        }
    }
}

#[test]
fn a_long_session_compresses_several_times_and_the_plot_shows_each() {
    let sandbox = Sandbox::new();
    sandbox.write_config("model:\n  context_length: 32000\n");
    let transcript = sandbox.write_json("long.json", &Value::Array(long_session()));
    let plot = sandbox.path().join("plot.svg");
    let report = replay_json(
        &sandbox,
        &[
            "run",
            transcript.to_str().unwrap(),
            "--json",
            "--plot",
            plot.to_str().unwrap(),
        ],
    );
    let compressions = report["compressions"].as_array().unwrap();
    assert!(compressions.len() >= 3, "{}", compressions.len());
    for c in compressions {
        assert!(
            c["tokens_after"].as_u64() < c["tokens_before"].as_u64(),
            "{c}"
        );
    }
    assert!(report["peak_tokens"].as_u64().unwrap() < 32_000);
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert!(
        svg.starts_with("<svg") || svg.starts_with("<?xml"),
        "an SVG file"
    );
    assert_eq!(
        svg.matches("class=\"compression\"").count(),
        compressions.len(),
        "one mark per compression"
    );
}

#[test]
fn compare_draws_two_engines_side_by_side() {
    let sandbox = Sandbox::new();
    sandbox.link_repo_plugins();
    sandbox.write_config("model:\n  context_length: 32000\n");
    let transcript = sandbox.write_json("long.json", &Value::Array(long_session()));
    let plot = sandbox.path().join("compare.svg");
    let run = sandbox.ctxhost(&[
        "run",
        transcript.to_str().unwrap(),
        "--compare",
        "window",
        "--plot",
        plot.to_str().unwrap(),
    ]);
    assert!(run.success(), "{}", run.stderr);
    assert!(run.stdout.contains("engine       compressor"));
    assert!(run.stdout.contains("engine       window"));
    assert!(run.stdout.contains("compare      compressor costs $"));
    assert!(run.stdout.contains("compressor sends"));
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert!(svg.contains("compressor") && svg.contains("window"));
}

/// The text report, with timings (which vary run to run) masked.
fn stable(report: &str) -> String {
    report
        .lines()
        .map(|line| match line.find(" ms,") {
            Some(end) => {
                let start = line[..end].rfind(", ").map_or(0, |i| i + 2);
                format!("{}X{}", &line[..start], &line[end..])
            }
            None => line.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_text_report() {
    let sandbox = Sandbox::new();
    sandbox.write_config("model:\n  context_length: 8000\n");
    let transcript = ctxhost_tests::corpus_dir().join("ctf__crypto__BabyEncryption.json");
    let run = sandbox.ctxhost(&["run", transcript.to_str().unwrap()]);
    assert!(run.success(), "{}", run.stderr);
    insta::assert_snapshot!(stable(&run.stdout));
}

#[test]
fn each_format_parses_to_the_same_messages_as_its_openai_equivalent() {
    let sandbox = Sandbox::new();
    sandbox.add_plugin("echo", "ctxhost_fixture_echo");
    sandbox.write_config("context:\n  engine: echo\n");
    let fixtures = workspace_root().join("tests/fixtures/transcripts");
    for (file, expected) in [
        ("hermes.jsonl", "hermes.openai.json"),
        ("anthropic.json", "anthropic.openai.json"),
    ] {
        let expected = read_json(&fixtures.join(expected));
        let detected = sandbox.ctxhost(&["compress", fixtures.join(file).to_str().unwrap()]);
        assert!(detected.success(), "{file}: {}", detected.stderr);
        assert_eq!(detected.json(), expected, "{file}, detected");
        let format = file.split('.').next().unwrap();
        let forced = sandbox.ctxhost(&[
            "compress",
            "--format",
            format,
            fixtures.join(file).to_str().unwrap(),
        ]);
        assert_eq!(forced.json(), expected, "{file}, --format {format}");
    }
    // And the OpenAI equivalents themselves, as JSON Lines.
    let jsonl: String = read_json(&fixtures.join("anthropic.openai.json"))
        .as_array()
        .unwrap()
        .iter()
        .map(|m| format!("{m}\n"))
        .collect();
    let path = sandbox.write("anthropic.openai.jsonl", &jsonl);
    let run = sandbox.ctxhost(&["compress", path.to_str().unwrap()]);
    assert_eq!(
        run.json(),
        read_json(&fixtures.join("anthropic.openai.json"))
    );
}

#[test]
fn malformed_transcripts_get_one_line_and_a_non_zero_exit() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let cases: [(&str, &[u8], &str); 5] = [
        (
            "truncated.json",
            b"[{\"role\": \"user\", \"content\": \"a\"},\n{\"role\": \"assis",
            "truncated.json:2:",
        ),
        (
            "role.json",
            br#"[{"role": "user", "content": "a"}, {"role": "wizard", "content": "b"}]"#,
            "role.json: message 2: unknown role `wizard`",
        ),
        (
            "orphan.jsonl",
            b"{\"role\": \"user\", \"content\": \"a\"}\n{\"role\": \"tool\", \"tool_call_id\": \"c9\", \"content\": \"b\"}\n",
            "orphan.jsonl: message 2: tool result for `c9` has no matching call before it",
        ),
        ("empty.json", b"", "empty.json: the file is empty"),
        ("garbage.bin", b"\x7fELF\x02\x01\x01\x00\xff\xfe\x00\x00", "garbage.bin: not UTF-8 text"),
    ];
    for (name, bytes, expected) in cases {
        let path = sandbox.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let run = sandbox.ctxhost(&["run", path.to_str().unwrap()]);
        assert_eq!(run.code, Some(1), "{name}: {}", run.stderr);
        let lines = run.stderr_lines();
        assert_eq!(lines.len(), 1, "{name}: {}", run.stderr);
        assert!(
            sandbox
                .redact(lines[0])
                .starts_with(&format!("error: [SANDBOX]/{expected}")),
            "{name}: {}",
            lines[0]
        );
        assert!(run.stdout.is_empty());
    }
}

#[test]
fn tokens_by_role_and_heaviest_messages() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let transcript = workspace_root().join("examples/session.json");
    let run = sandbox.ctxhost(&[
        "tokens",
        transcript.to_str().unwrap(),
        "--json",
        "--top",
        "3",
    ]);
    assert!(run.success(), "{}", run.stderr);
    let report = run.json();
    let messages: Vec<Message> = serde_json::from_value(read_json(&transcript)).unwrap();
    let bpe = tiktoken_rs::o200k_base().unwrap();
    let total: u64 = messages
        .iter()
        .map(|m| bpe.encode_ordinary(&m.searchable_text()).len() as u64 + 4)
        .sum();
    assert_eq!(report["tokens"].as_u64().unwrap(), total);
    let by_role: u64 = report["by_role"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(by_role, total);
    let heaviest = report["heaviest"].as_array().unwrap();
    assert_eq!(heaviest.len(), 3);
    assert!(heaviest[0]["tokens"].as_u64() >= heaviest[1]["tokens"].as_u64());
    let text = sandbox.ctxhost(&["tokens", transcript.to_str().unwrap()]);
    assert!(text.stdout.contains("ROLE"), "{}", text.stdout);
}

#[test]
fn tools_are_listed_and_called_from_the_shell() {
    let sandbox = Sandbox::new();
    sandbox.add_plugin("echo", "ctxhost_fixture_echo");
    sandbox.write_config("context:\n  engine: echo\n");
    let list = sandbox.ctxhost(&["tools", "list"]);
    assert!(list.success(), "{}", list.stderr);
    assert!(list.stdout.starts_with("echo "), "{}", list.stdout);
    let call = sandbox.ctxhost(&["tools", "call", "echo", "--args", r#"{"q": "hi"}"#]);
    assert!(call.success(), "{}", call.stderr);
    assert_eq!(call.json(), serde_json::json!({"q": "hi"}));
    let missing = sandbox.ctxhost(&["tools", "call", "lcm_grep", "--engine", "compressor"]);
    assert_eq!(missing.code, Some(1));
    assert_eq!(
        missing.stderr.trim(),
        "error: engine 'compressor' has no tool 'lcm_grep' (it has none)"
    );
}

#[test]
fn help_for_every_subcommand() {
    let sandbox = Sandbox::new();
    for command in [
        &[][..],
        &["run"],
        &["compress"],
        &["quality"],
        &["tokens"],
        &["tools"],
        &["tools", "list"],
        &["tools", "call"],
        &["engines"],
        &["engine"],
        &["plugins"],
        &["plugins", "list"],
        &["plugins", "info"],
        &["plugins", "use"],
        &["plugins", "install"],
        &["plugins", "remove"],
        &["plugins", "enable"],
        &["plugins", "disable"],
        &["plugins", "doctor"],
        &["plugins", "new"],
        &["config"],
        &["config", "get"],
        &["config", "set"],
        &["serve"],
    ] {
        let mut args: Vec<&str> = command.to_vec();
        args.push("--help");
        let run = sandbox.ctxhost(&args);
        assert!(run.success(), "{args:?}");
        let name = if command.is_empty() {
            "ctxhost".to_string()
        } else {
            format!("ctxhost {}", command.join(" "))
        };
        insta::assert_snapshot!(name.replace(' ', "_"), run.stdout, &name);
    }
}

#[test]
fn engine_operations_are_reached_generically() {
    let sandbox = Sandbox::new();
    sandbox.add_plugin("echo", "ctxhost_fixture_echo");
    sandbox.write_config("context:\n  engine: echo\nmodel:\n  context_length: 4096\n");
    let setup = sandbox.ctxhost(&["engine", "setup"]);
    assert!(setup.success(), "{}", setup.stderr);
    let setup = setup.json();
    assert_eq!(setup["engine"], "echo");
    assert_eq!(setup["model"]["context_length"], 4096);
    assert!(setup["data_dir"]
        .as_str()
        .unwrap()
        .ends_with("home/data/echo"));
    let status = sandbox.ctxhost(&["engine", "status"]);
    assert_eq!(status.json()["context_length"], 4096, "{}", status.stderr);
    let missing = sandbox.ctxhost(&["engine", "backup"]);
    assert_eq!(missing.code, Some(1));
    assert_eq!(
        missing.stderr.trim(),
        "error: engine 'echo' has no operation 'backup'"
    );
}

#[test]
fn a_message_larger_than_the_window_is_named_in_one_warning_by_compress_and_run() {
    let sandbox = Sandbox::new();
    sandbox.write_config("model:\n  context_length: 8000\n");
    // About 70 times the window, in one user message.
    let huge = "lorem ipsum dolor sit amet ".repeat(100_000);
    let transcript = sandbox.write_json(
        "huge.json",
        &serde_json::json!([
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": huge},
            {"role": "assistant", "content": "That is long."},
        ]),
    );
    let path = transcript.to_str().unwrap();
    for args in [vec!["compress", path], vec!["run", path]] {
        let run = sandbox.ctxhost(&args);
        // Not an engine failure: the result is reported over the window, as any other is.
        assert_eq!(run.code, Some(0), "{args:?}: {}", run.stderr);
        let warnings: Vec<&str> = run
            .stderr_lines()
            .into_iter()
            .filter(|l| l.starts_with("warning: message"))
            .collect();
        assert_eq!(warnings.len(), 1, "{args:?}: {}", run.stderr);
        assert!(
            warnings[0].starts_with("warning: message 2 (user) is ")
                && warnings[0].contains("the model's window of 8,000 tokens by itself")
                && warnings[0].contains("cut or summarize that message"),
            "{args:?}: {}",
            run.stderr
        );
    }
}

/// The engine's name and the model's window are two things, said apart even when the engine is
/// `window`; the peak context is what a model call was sent, after compression, so it may read
/// lower than a compression's "before" (what the engine was handed), and the report says so.
#[test]
fn the_report_tells_the_engine_from_the_context_length_and_says_what_the_peak_is() {
    let sandbox = Sandbox::new();
    sandbox.add_plugin("window", "ctxhost_engine_window");
    sandbox.write_config("model:\n  context_length: 8000\n");
    let transcript = ctxhost_tests::corpus_dir().join("ctf__crypto__BabyEncryption.json");
    let run = sandbox.ctxhost(&["run", "--engine", "window", transcript.to_str().unwrap()]);
    assert!(run.success(), "{}", run.stderr);
    let engine = run
        .stdout
        .lines()
        .find(|l| l.starts_with("engine "))
        .unwrap();
    assert_eq!(engine.matches("window").count(), 1, "{engine}");
    assert!(
        engine.contains("context length 8,000 tokens, compresses at"),
        "{engine}"
    );
    let peak = run
        .stdout
        .lines()
        .find(|l| l.starts_with("peak context "))
        .unwrap();
    assert!(
        peak.contains("sent in one model call (after compression; each \"before\" above is what the engine was handed)"),
        "{peak}"
    );
}
