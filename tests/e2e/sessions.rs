//! Sessions the same everywhere: `--session` on every command that touches engine state,
//! replays that start fresh unless told to keep their state, `ctxhost sessions`, and commands
//! that say which engine ran and why.

use ctxhost_tests::{workspace_root, Sandbox};
use serde_json::Value;

const LCM: &str = "context:\n  engine: lcm\nmodel:\n  context_length: 16000\n";

fn example() -> String {
    workspace_root()
        .join("examples/session.json")
        .to_string_lossy()
        .into_owned()
}

/// A report with its timings taken out: everything else must repeat exactly.
fn without_timings(mut value: Value) -> Value {
    match &mut value {
        Value::Object(map) => {
            map.retain(|key, _| key != "elapsed_ms");
            for (_, value) in map.iter_mut() {
                *value = without_timings(value.take());
            }
        }
        Value::Array(items) => {
            for item in items.iter_mut() {
                *item = without_timings(item.take());
            }
        }
        _ => {}
    }
    value
}

#[test]
fn the_same_replay_twice_gives_the_same_report_and_leaves_no_state() {
    let sandbox = Sandbox::new();
    sandbox.link_repo_plugins().write_config(LCM);
    let transcript = example();
    let first = sandbox.ctxhost(&["run", &transcript, "--engine", "lcm", "--json"]);
    assert!(first.success(), "{}", first.stderr);
    let second = sandbox.ctxhost(&["run", &transcript, "--engine", "lcm", "--json"]);
    assert!(second.success(), "{}", second.stderr);
    let report = without_timings(first.json());
    assert!(
        !report["runs"][0]["compressions"]
            .as_array()
            .unwrap()
            .is_empty(),
        "the replay compressed: {report}"
    );
    assert_eq!(report, without_timings(second.json()));
    // A fresh temporary state each time: nothing was stored under the home.
    assert!(
        !sandbox.home().join("data/lcm").exists(),
        "a default replay keeps no state"
    );
    let sessions = sandbox.ctxhost(&["sessions", "list", "--json"]);
    assert!(sessions.success(), "{}", sessions.stderr);
    assert_eq!(sessions.json(), Value::Array(Vec::new()));
}

#[test]
fn a_kept_replay_is_a_session_that_tools_and_sessions_see() {
    let sandbox = Sandbox::new();
    sandbox.link_repo_plugins().write_config(LCM);
    let run = sandbox.ctxhost(&["run", &example(), "--session", "s1"]);
    assert!(run.success(), "{}", run.stderr);

    let list = sandbox.ctxhost(&["sessions", "list", "--json"]);
    assert!(list.success(), "{}", list.stderr);
    let sessions = list.json();
    let sessions = sessions.as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    assert_eq!(sessions[0]["id"], "s1");
    assert_eq!(sessions[0]["messages"], 468);

    let show = sandbox.ctxhost(&["sessions", "show", "s1", "--json"]);
    assert!(show.success(), "{}", show.stderr);
    assert_eq!(show.json()["id"], "s1");

    let grep = sandbox.ctxhost(&[
        "tools",
        "call",
        "lcm_grep",
        "--session",
        "s1",
        "--args",
        r#"{"pattern": "marshmallow"}"#,
    ]);
    assert!(grep.success(), "{}", grep.stderr);

    // A session the engine never saw is an error, not "0 matches" from an empty one.
    let missing = sandbox.ctxhost(&[
        "tools",
        "call",
        "lcm_grep",
        "--session",
        "nosuch",
        "--args",
        r#"{"pattern": "marshmallow"}"#,
    ]);
    assert_eq!(missing.code, Some(1), "{}", missing.stderr);
    assert!(
        missing
            .stderr
            .contains("engine 'lcm' has no session 'nosuch' (its sessions: s1)"),
        "{}",
        missing.stderr
    );

    let delete = sandbox.ctxhost(&["sessions", "delete", "s1"]);
    assert!(delete.success(), "{}", delete.stderr);
    let show = sandbox.ctxhost(&["sessions", "show", "s1"]);
    assert_eq!(show.code, Some(1));
    assert!(
        show.stderr.contains("has no session 's1'"),
        "{}",
        show.stderr
    );
}

#[test]
fn an_engine_without_state_says_it_has_no_sessions() {
    let sandbox = Sandbox::new();
    sandbox.write_config("");
    let list = sandbox.ctxhost(&["sessions", "list"]);
    assert!(list.success(), "{}", list.stderr);
    assert_eq!(
        list.stdout.trim(),
        "engine 'compressor' keeps no state between runs: it has no sessions"
    );
    let show = sandbox.ctxhost(&["sessions", "show", "x"]);
    assert_eq!(show.code, Some(1));
}

#[test]
fn an_engine_named_on_the_command_line_must_exist() {
    let sandbox = Sandbox::new();
    sandbox.link_repo_plugins().write_config("");
    for command in [
        vec!["run", "EXAMPLE", "--engine", "windwo"],
        vec!["compress", "EXAMPLE", "--engine", "windwo"],
        vec!["tools", "list", "--engine", "windwo"],
        vec!["engine", "status", "--engine", "windwo"],
        vec!["sessions", "list", "--engine", "windwo"],
    ] {
        let example = example();
        let args: Vec<&str> = command
            .iter()
            .map(|a| if *a == "EXAMPLE" { example.as_str() } else { a })
            .collect();
        let run = sandbox.ctxhost(&args);
        assert_eq!(run.code, Some(1), "{command:?}: {}", run.stderr);
        let lines = run.stderr_lines();
        assert_eq!(lines.len(), 1, "{command:?}: one line: {}", run.stderr);
        assert!(
            lines[0].starts_with("error: context engine 'windwo' not found")
                && lines[0].ends_with("did you mean 'window'?"),
            "{command:?}: {}",
            lines[0]
        );
        assert!(run.stdout.is_empty(), "{command:?}: {}", run.stdout);
    }
}

#[test]
fn a_config_naming_a_missing_engine_falls_back_and_the_report_says_so() {
    let sandbox = Sandbox::new();
    sandbox.write_config("context:\n  engine: nosuch\n");
    let run = sandbox.ctxhost(&["run", &example(), "--json"]);
    assert_eq!(run.code, Some(3), "{}", run.stderr);
    let report = &run.json()["runs"][0];
    assert_eq!(report["requested"], "nosuch");
    assert_eq!(report["engine"], "compressor");
    assert!(
        report["why"]
            .as_str()
            .unwrap()
            .contains("context engine 'nosuch' not found"),
        "{report}"
    );
    let text = sandbox.ctxhost(&["run", &example()]);
    assert_eq!(text.code, Some(3));
    assert!(
        text.stdout
            .contains("asked for nosuch: context engine 'nosuch' not found"),
        "{}",
        text.stdout
    );
}

#[test]
fn a_failing_plugin_makes_run_exit_3_and_the_report_names_the_engine_that_finished() {
    let sandbox = Sandbox::new();
    sandbox.add_plugin("panicky", "ctxhost_fixture_panicky");
    sandbox.write_config("context:\n  engine: panicky\nmodel:\n  context_length: 16000\n");
    let run = sandbox.ctxhost(&["run", &example(), "--json"]);
    assert_eq!(run.code, Some(3), "{}", run.stderr);
    let report = &run.json()["runs"][0];
    assert_eq!(report["requested"], "panicky");
    assert_eq!(report["engine"], "panicky");
    assert_eq!(report["fell_back_to"], "compressor");
    assert!(
        report["why"].as_str().unwrap().contains("panicked"),
        "{report}"
    );
    let text = sandbox.ctxhost(&["run", &example()]);
    assert_eq!(text.code, Some(3));
    assert!(
        text.stdout.contains("FAILED, finished on compressor"),
        "{}",
        text.stdout
    );
}

#[test]
fn checking_a_plugin_setting_creates_no_store() {
    let sandbox = Sandbox::new();
    sandbox
        .link_repo_plugins()
        .write_config("context:\n  engine: lcm\n");
    let run = sandbox.ctxhost(&["config", "set", "plugins.lcm.threshold", "0.7"]);
    assert!(run.success(), "{}", run.stderr);
    assert!(sandbox.config_text().contains("threshold: 0.7"));
    assert!(
        !sandbox.home().join("data").exists(),
        "validating a setting created {:?}",
        std::fs::read_dir(sandbox.home().join("data"))
            .map(|d| d.map(|e| e.map(|e| e.path())).collect::<Vec<_>>())
    );
    // A wrong value is still refused, by the engine, naming the key and the line.
    let run = sandbox.ctxhost(&["config", "set", "plugins.lcm.threshold", "7"]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stderr.contains("plugins.lcm.threshold"),
        "{}",
        run.stderr
    );
    assert!(!sandbox.home().join("data").exists());
}
