//! The lossless engine as users meet it: a cdylib in `plugins/context_engine/lcm/`, swapped in
//! for the compressor by config, with its tools reachable from the shell.

use ctxhost_sdk::Message;
use ctxhost_tests::{long_session, read_json, Sandbox};
use serde_json::{json, Value};

const CONFIG: &str = "context:\n  engine: lcm\nmodel:\n  context_length: 16000\n";

#[test]
fn a_long_session_through_lcm_loses_nothing_and_its_tools_work_from_the_shell() {
    long_session_through_lcm(CONFIG);
}

#[test]
fn lcm_isolated_in_its_own_process_behaves_the_same() {
    long_session_through_lcm(&format!(
        "{CONFIG}plugins:\n  lcm:\n    isolation: process\n"
    ));
}

fn long_session_through_lcm(config: &str) {
    let sandbox = Sandbox::new();
    sandbox.link_repo_plugins();
    sandbox.write_config(config);
    let mut session = long_session();
    // A marker only one message carries.
    session[40]["content"] = json!(format!(
        "{} UNIQUE-MARKER-7731",
        session[40]["content"].as_str().unwrap_or_default()
    ));
    let transcript = sandbox.write_json("session.json", &Value::Array(session.clone()));
    let out = sandbox.path().join("final.json");
    let run = sandbox.ctxhost(&[
        "run",
        transcript.to_str().unwrap(),
        "--session",
        "s1",
        "--json",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(run.success(), "{}", run.stderr);
    let report = &run.json()["runs"][0];
    assert_eq!(report["engine"], "lcm");
    assert!(
        report["compressions"].as_array().unwrap().len() >= 2,
        "{report}"
    );
    assert!(report["errors"].as_array().unwrap().is_empty(), "{report}");
    let final_context: Vec<Message> = serde_json::from_value(read_json(&out)).unwrap();
    ctxhost_sdk::sequence::validate(&final_context).unwrap();

    let grep = sandbox.ctxhost(&[
        "tools",
        "call",
        "lcm_grep",
        "--session",
        "s1",
        "--args",
        r#"{"pattern": "UNIQUE-MARKER-7731", "scope": "messages"}"#,
    ]);
    assert!(grep.success(), "{}", grep.stderr);
    let matches = grep.json()["matches"].as_array().unwrap().clone();
    assert_eq!(matches.len(), 1, "{matches:?}");
    let tools = sandbox.ctxhost(&["tools", "list"]);
    for tool in ["lcm_grep", "lcm_describe", "lcm_expand", "lcm_expand_query"] {
        assert!(tools.stdout.contains(tool), "{}", tools.stdout);
    }
    let status = sandbox.ctxhost(&["engine", "status"]);
    assert!(status.success(), "{}", status.stderr);
    let doctor = sandbox.ctxhost(&["engine", "doctor"]);
    assert!(doctor.success(), "{}", doctor.stdout);
}

#[test]
fn swapping_between_compressor_and_lcm_works_both_ways() {
    let sandbox = Sandbox::new();
    sandbox.link_repo_plugins();
    sandbox.write_config(CONFIG);
    let transcript = sandbox.write_json("session.json", &Value::Array(long_session()));
    for (engine, compare) in [("lcm", "compressor"), ("compressor", "lcm")] {
        let run = sandbox.ctxhost(&[
            "run",
            transcript.to_str().unwrap(),
            "--engine",
            engine,
            "--compare",
            compare,
            "--json",
        ]);
        assert!(run.success(), "{engine}: {}", run.stderr);
        let runs = run.json()["runs"].as_array().unwrap().clone();
        assert_eq!(runs[0]["engine"], engine);
        assert_eq!(runs[1]["engine"], compare);
        for r in &runs {
            assert!(r["errors"].as_array().unwrap().is_empty(), "{r}");
        }
    }
}

#[test]
fn a_corrupted_store_gives_one_clear_error_and_keeps_the_conversation() {
    let sandbox = Sandbox::new();
    sandbox.link_repo_plugins();
    sandbox.write_config(CONFIG);
    let store = sandbox.home().join("data/lcm/lcm.sqlite");
    std::fs::create_dir_all(store.parent().unwrap()).unwrap();
    std::fs::write(
        &store,
        b"this is not an SQLite database, it is garbage ".repeat(200),
    )
    .unwrap();
    let transcript = sandbox.write_json("session.json", &Value::Array(long_session()));
    let run = sandbox.ctxhost(&["compress", transcript.to_str().unwrap()]);
    assert!(!run.stderr.contains("panicked at"), "{}", run.stderr);
    let lines = run.stderr_lines();
    assert!(!lines.is_empty());
    assert!(
        run.stderr.contains("lcm.sqlite"),
        "names the file: {}",
        run.stderr
    );
    // Either the engine refuses to start (and the compressor takes over) or it fails in
    // compress (and the conversation comes back unchanged): no message is lost either way.
    match run.code {
        Some(0) => assert!(lines[0].starts_with("warning: "), "{}", run.stderr),
        Some(3) => assert_eq!(run.json(), Value::Array(long_session())),
        other => panic!("unexpected exit {other:?}: {}", run.stderr),
    }
    assert_eq!(
        std::fs::read(&store).unwrap(),
        b"this is not an SQLite database, it is garbage ".repeat(200),
        "the damaged store is left as it was"
    );
}

#[test]
fn a_failing_http_summarizer_still_lets_compaction_make_progress() {
    use ctxhost_tests::upstream::{Answer, FakeUpstream};
    use std::time::Duration;
    for script in [
        vec![Answer::Json(500, json!({"error": {"message": "down"}})); 400],
        vec![Answer::Text(200, "".into()).after(Duration::from_millis(800)); 400],
    ] {
        let server = FakeUpstream::scripted(script);
        let sandbox = Sandbox::new();
        sandbox.link_repo_plugins();
        sandbox.write_config(&format!(
            "{CONFIG}auxiliary:\n  compression:\n    provider: custom\n    model: m\n    base_url: {}\n    timeout: 0.3\n    max_retries: 0\n",
            server.base_url()
        ));
        let transcript = sandbox.write_json("session.json", &Value::Array(long_session()));
        let run = sandbox.ctxhost(&["run", transcript.to_str().unwrap(), "--json"]);
        assert!(run.success(), "{}", run.stderr);
        let report = &run.json()["runs"][0];
        assert!(report["errors"].as_array().unwrap().is_empty(), "{report}");
        let compressions = report["compressions"].as_array().unwrap();
        assert!(!compressions.is_empty());
        for c in compressions {
            assert!(
                c["tokens_after"].as_u64() < c["tokens_before"].as_u64(),
                "{c}"
            );
        }
        assert!(report["peak_tokens"].as_u64().unwrap() < 16_000, "{report}");
        assert!(!server.received().is_empty(), "the summarizer was tried");
    }
}

#[test]
fn a_setting_of_the_wrong_type_names_file_line_and_key() {
    let sandbox = Sandbox::new();
    sandbox.link_repo_plugins();
    sandbox.write_config(
        "context:\n  engine: lcm\nplugins:\n  lcm:\n    threshold: 0.8\n    deadline_ms: soon\n",
    );
    let transcript = sandbox.write_json("session.json", &Value::Array(long_session()));
    let run = sandbox.ctxhost(&["compress", transcript.to_str().unwrap()]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    let lines = run.stderr_lines();
    assert_eq!(lines.len(), 1, "one line: {}", run.stderr);
    assert_eq!(
        sandbox.redact(lines[0]),
        "error: config.yaml:6: plugins.lcm.deadline_ms: invalid type: string \"soon\", expected u64"
    );
}
