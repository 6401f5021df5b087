//! `ctxhost config path|get|set|unset|validate`.

use ctxhost_tests::Sandbox;

#[test]
fn path_get_and_defaults() {
    let sandbox = Sandbox::new();
    sandbox
        .write_config("context:\n  engine: compressor\nplugins:\n  window:\n    threshold: 0.6\n");
    let run = sandbox.ctxhost(&["config", "path"]);
    assert_eq!(sandbox.redact(run.stdout.trim()), "config.yaml");
    let run = sandbox.ctxhost(&["config", "get", "context.engine"]);
    assert_eq!(run.stdout, "compressor\n");
    assert_eq!(run.stderr, "");
    let run = sandbox.ctxhost(&["config", "get", "model.context_length"]);
    assert_eq!(run.stdout, "128000\n");
    assert_eq!(
        run.stderr.trim(),
        "note: not set in the config file; this is the default"
    );
    let run = sandbox.ctxhost(&["config", "get", "plugins.window", "--json"]);
    assert_eq!(run.json(), serde_json::json!({"threshold": 0.6}));
    let run = sandbox.ctxhost(&["config", "get", "display.skin"]);
    assert_eq!(run.code, Some(1));
    assert_eq!(
        run.stderr.trim(),
        "error: display.skin is not set in config.yaml and has no default ctxhost knows of"
    );
}

#[test]
fn without_a_config_file_the_home_one_is_created() {
    let sandbox = Sandbox::new();
    let run = sandbox.ctxhost(&["config", "path"]);
    assert_eq!(
        sandbox.redact(run.stdout.trim()),
        "[SANDBOX]/home/config.yaml"
    );
    assert!(run.stderr.contains("does not exist yet"), "{}", run.stderr);
    let run = sandbox.ctxhost(&["config", "set", "model.context_length", "64000"]);
    assert!(run.success(), "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(sandbox.home().join("config.yaml")).unwrap(),
        "model:\n  context_length: 64000\n"
    );
    let run = sandbox.ctxhost(&["config", "get", "model.context_length"]);
    assert_eq!(run.stdout, "64000\n");
}

#[test]
fn set_refuses_values_the_config_or_an_engine_rejects() {
    let sandbox = Sandbox::new();
    let text = "# keep\nmodel:\n  context_length: 128000\n";
    sandbox.link_repo_plugins().write_config(text);
    let run = sandbox.ctxhost(&["config", "set", "model.context_length", "10"]);
    assert_eq!(run.code, Some(1));
    assert_eq!(
        run.stderr.trim(),
        "error: config.yaml:3: model.context_length: must be at least 1024 tokens, got 10; nothing was written"
    );
    let run = sandbox.ctxhost(&["config", "set", "compression.threshold", "1.7"]);
    assert_eq!(run.code, Some(1));
    assert!(
        run.stderr
            .contains("compression.threshold: must be between 0 and 1, got 1.7"),
        "{}",
        run.stderr
    );
    // The window plugin itself judges its settings.
    let run = sandbox.ctxhost(&["config", "set", "plugins.window.tail_ratio", "0"]);
    assert_eq!(run.code, Some(1));
    assert!(
        run.stderr
            .contains("plugins.window.tail_ratio: must be between 0 and 1, got 0"),
        "{}",
        run.stderr
    );
    assert_eq!(sandbox.config_text(), text);

    let run = sandbox.ctxhost(&["config", "set", "plugins.window.tail_ratio", "0.3"]);
    assert!(run.success(), "{}", run.stderr);
    assert_eq!(
        run.stdout.trim(),
        "plugins.window.tail_ratio = 0.3 (in config.yaml)"
    );
    let run = sandbox.ctxhost(&["config", "unset", "plugins.window.tail_ratio"]);
    assert!(run.success(), "{}", run.stderr);
    assert_eq!(
        sandbox.config_text(),
        format!("{text}plugins:\n  window: {{}}\n")
    );
}

#[test]
fn validate_checks_the_selected_engine() {
    let sandbox = Sandbox::new();
    sandbox
        .link_repo_plugins()
        .write_config("context:\n  engine: window\n");
    let run = sandbox.ctxhost(&["config", "validate"]);
    assert!(run.success(), "{}{}", run.stdout, run.stderr);
    assert_eq!(
        run.stdout.trim(),
        "config.yaml: valid; context.engine = window (repo plugin dir)"
    );
    sandbox.write_config("context:\n  engine: ghost\n");
    let run = sandbox.ctxhost(&["config", "validate"]);
    assert_eq!(run.code, Some(1));
    assert!(
        run.stdout
            .starts_with("problem: context engine 'ghost' not found"),
        "{}",
        run.stdout
    );
    sandbox.write_config("model:\n  context_length: lots\n");
    let run = sandbox.ctxhost(&["config", "validate"]);
    assert_eq!(run.code, Some(1));
    assert!(
        run.stderr
            .starts_with("error: config.yaml:2: model.context_length"),
        "{}",
        run.stderr
    );
}

#[test]
fn what_the_editor_cannot_rewrite_faithfully_is_refused_in_one_line() {
    let sandbox = Sandbox::new();
    let text = "model: {name: gpt-4o}   # flow style\n";
    sandbox.write_config(text);
    let run = sandbox.ctxhost(&["config", "set", "model.name", "gpt-5"]);
    assert_eq!(run.code, Some(1));
    assert_eq!(
        run.stderr.trim(),
        "error: config.yaml: `model.name` is written in a style this editor does not rewrite (flow or multi-line); edit the file by hand"
    );
    assert_eq!(sandbox.config_text(), text);
}

#[test]
fn urls_are_printed_with_their_passwords_masked() {
    let sandbox = Sandbox::new();
    sandbox.write_config(
        "serve:\n  state: postgres://app:hunter22@db:5432/ctx\n  upstream: http://u:hunter23@127.0.0.1:9/v1\n",
    );
    let run = sandbox.ctxhost(&["config", "get", "serve.state"]);
    assert_eq!(run.stdout, "postgres://app:***@db:5432/ctx\n");
    for args in [
        &["config", "get", "serve"][..],
        &["config", "get", "serve", "--json"],
    ] {
        let run = sandbox.ctxhost(args);
        assert!(run.success(), "{}", run.stderr);
        assert!(
            run.stdout.contains("http://u:***@127.0.0.1:9/v1"),
            "{}",
            run.stdout
        );
        assert!(!run.stdout.contains("hunter"), "{}", run.stdout);
    }
    let run = sandbox.ctxhost(&[
        "config",
        "set",
        "serve.state",
        "postgres://app:hunter24@db/ctx",
    ]);
    assert!(run.success(), "{}", run.stderr);
    assert!(!run.stdout.contains("hunter24"), "{}", run.stdout);
    // The file holds what was set, as written.
    let written = std::fs::read_to_string(sandbox.config_path()).unwrap();
    assert!(
        written.contains("postgres://app:hunter24@db/ctx"),
        "{written}"
    );
}

#[test]
fn every_command_refuses_a_mistyped_top_level_section_alike() {
    let sandbox = Sandbox::new();
    sandbox.write_config("serv:\n  upstream: http://127.0.0.1:9/v1\n");
    let run = sandbox.ctxhost(&["config", "validate"]);
    assert_eq!(run.code, Some(1), "{}{}", run.stdout, run.stderr);
    assert_eq!(
        run.stderr.trim(),
        "error: config.yaml:1: unknown top-level section `serv:` (ctxhost would ignore it); did you mean 'serve'?"
    );
    // Not only `config validate`: every command that reads the config says the same.
    sandbox.write_config("model:\n  name: gpt-4o\ncompresion:\n  threshold: 0.6\n");
    let transcript = sandbox.path().join("t.json");
    std::fs::write(&transcript, r#"[{"role": "user", "content": "hi"}]"#).unwrap();
    let transcript = transcript.to_str().unwrap();
    for args in [
        &["config", "validate"][..],
        &["config", "get", "model.name"],
        &["compress", transcript],
        &["tokens", transcript],
        &["serve", "--listen", "127.0.0.1:0"],
    ] {
        let run = sandbox.ctxhost(args);
        assert_eq!(run.code, Some(1), "{args:?}: {}{}", run.stdout, run.stderr);
        assert_eq!(
            run.stderr.trim(),
            "error: config.yaml:3: unknown top-level section `compresion:` (ctxhost would ignore it); did you mean 'compression'?",
            "{args:?}"
        );
    }
    // Another program's section in the shared file is noted, not refused.
    sandbox.write_config("display:\n  skin: dark\nserve:\n  listen: 127.0.0.1:0\n");
    let run = sandbox.ctxhost(&["config", "validate"]);
    assert!(run.success(), "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr
            .contains("note: top-level section `display:` is not read by ctxhost"),
        "{}",
        run.stderr
    );
}

#[test]
fn an_older_key_name_is_read_and_noted() {
    let sandbox = Sandbox::new();
    sandbox.write_config("serve:\n  compaction:\n    margin: 0.3\n");
    let run = sandbox.ctxhost(&["config", "validate"]);
    assert!(run.success(), "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains(
            "note: `serve.compaction` is the older name of `serve.compression`, still read; \
             rename it"
        ),
        "{}",
        run.stderr
    );
    let run = sandbox.ctxhost(&["config", "get", "serve.compression.margin"]);
    assert_eq!(run.stdout, "0.3\n");
    assert_eq!(run.stderr, "");
    // A value the new name's check refuses is refused under the old name too.
    sandbox.write_config("serve:\n  compaction:\n    margin: 1.5\n");
    let run = sandbox.ctxhost(&["config", "validate"]);
    assert_eq!(run.code, Some(1));
    assert!(
        run.stderr
            .contains("serve.compression.margin: must be a share of the window"),
        "{}",
        run.stderr
    );
}

#[test]
fn keys_lists_the_declarations_and_get_reads_their_defaults() {
    let sandbox = Sandbox::new();
    let run = sandbox.ctxhost(&["config", "keys", "serve.limits"]);
    assert!(run.success(), "{}", run.stderr);
    assert!(
        run.stdout
            .lines()
            .any(|line| line.starts_with("serve.limits.tool_rounds = 8  # ")),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .lines()
            .all(|line| line.starts_with("serve.limits.")),
        "{}",
        run.stdout
    );
    let run = sandbox.ctxhost(&["config", "keys", "nothing"]);
    assert_eq!(run.code, Some(1));
    // Keys the old hand-kept list lacked, and a plugin section's host keys, have defaults.
    for (key, default) in [
        ("serve.database.lease_wait_seconds", "120"),
        ("serve.compression.wait_seconds", "2"),
        ("plugins.lcm.check_timeout", "10"),
        ("auxiliary.compression.cooldown_seconds", "60"),
    ] {
        let run = sandbox.ctxhost(&["config", "get", key]);
        assert_eq!(run.stdout, format!("{default}\n"), "{key}: {}", run.stderr);
    }
}
