//! Resolution and loading failures: each is one clear line, and the host goes on with the
//! built-in compressor without losing a message.

use ctxhost_tests::{corpus_dir, read_json, Sandbox};

fn transcript() -> String {
    corpus_dir()
        .join("ctf__pwn__warmup.json")
        .display()
        .to_string()
}

/// Runs `compress` with `engine` selected and checks the compressor took over after exactly one
/// warning line; returns that line.
fn falls_back(sandbox: &Sandbox, engine: &str) -> String {
    sandbox.write_config(&format!("context:\n  engine: {engine}\n"));
    let run = sandbox.ctxhost(&["compress", &transcript()]);
    assert!(run.success(), "{}", run.stderr);
    let lines = run.stderr_lines();
    assert_eq!(
        lines.len(),
        2,
        "one warning and the summary line: {}",
        run.stderr
    );
    assert!(lines[1].starts_with("compressor: "), "{}", run.stderr);
    assert!(lines[0].starts_with("warning: "), "{}", run.stderr);
    assert!(
        lines[0].ends_with("using the built-in compressor"),
        "{}",
        run.stderr
    );
    run.messages();
    sandbox.redact(lines[0])
}

#[test]
fn a_file_that_is_not_a_library() {
    let sandbox = Sandbox::new();
    let dir = sandbox.plugin_dir("fake");
    std::fs::write(dir.join("libfake.so"), "this is text, not a shared library").unwrap();
    sandbox.write_descriptor("fake", "library: libfake.so\n");
    let line = falls_back(&sandbox, "fake");
    assert!(line.contains("plugin 'fake'"), "{line}");
    assert!(line.contains("not a loadable shared library"), "{line}");
}

#[test]
fn a_missing_library() {
    let sandbox = Sandbox::new();
    sandbox.write_descriptor("ghost", "name: ghost\nlibrary: ctxhost_engine_ghost\n");
    let line = falls_back(&sandbox, "ghost");
    assert!(line.contains("plugin 'ghost'"), "{line}");
    assert!(line.contains("libctxhost_engine_ghost"), "{line}");
    assert!(line.contains("not found"), "{line}");
}

#[test]
fn a_plugin_yaml_with_a_bad_field() {
    let sandbox = Sandbox::new();
    sandbox.add_plugin("echo", "ctxhost_fixture_echo");
    sandbox.write_descriptor("echo", "name: echo\nlibary: ctxhost_fixture_echo\n");
    let line = falls_back(&sandbox, "echo");
    assert!(line.contains("plugin 'echo'"), "{line}");
    assert!(line.contains("plugin.yaml:2"), "names the line: {line}");
    assert!(line.contains("unknown field `libary`"), "{line}");
}

#[test]
fn a_plugin_built_against_an_incompatible_interface() {
    let sandbox = Sandbox::new();
    sandbox.add_plugin("abi-mismatch", "ctxhost_fixture_abi_mismatch");
    let line = falls_back(&sandbox, "abi-mismatch");
    assert!(line.contains("plugin 'abi-mismatch'"), "{line}");
    assert!(line.contains("incompatible ABI layout"), "{line}");
    assert!(
        line.len() < 400,
        "one readable line, not the loader's dump: {line}"
    );

    let verbose = sandbox.ctxhost(&["--verbose", "compress", &transcript()]);
    assert!(verbose.success());
    assert!(
        verbose.stderr.lines().count() > 20,
        "--verbose shows the full loader error"
    );
}

#[test]
fn an_unknown_engine_says_where_it_looked() {
    let sandbox = Sandbox::new();
    let line = falls_back(&sandbox, "nosuch");
    assert!(line.contains("context engine 'nosuch' not found"), "{line}");
    assert!(
        line.contains("[SANDBOX]/plugins/context_engine/nosuch"),
        "{line}"
    );
    assert!(
        line.contains("[SANDBOX]/home/plugins/context_engine/nosuch"),
        "{line}"
    );
}

#[test]
fn a_plugin_that_panics_in_compress_returns_the_conversation_unchanged() {
    let sandbox = Sandbox::new();
    sandbox.add_plugin("panicky", "ctxhost_fixture_panicky");
    sandbox.write_config("context:\n  engine: panicky\n");
    let run = sandbox.ctxhost(&["compress", &transcript()]);
    assert_eq!(
        run.code,
        Some(3),
        "exit code 3, not a crash: {}",
        run.stderr
    );
    assert_eq!(
        run.json(),
        read_json(&corpus_dir().join("ctf__pwn__warmup.json"))
    );
    let lines = run.stderr_lines();
    assert_eq!(lines.len(), 1, "one clear error: {}", run.stderr);
    assert!(
        lines[0].starts_with("error: engine 'panicky' panicked in compress"),
        "{}",
        lines[0]
    );
    assert!(
        lines[0].contains("deliberate panic in compress"),
        "{}",
        lines[0]
    );
    assert!(lines[0].contains("unchanged"), "{}", lines[0]);
}

#[test]
fn plugins_list_shows_every_engine_and_why_broken_ones_are_broken() {
    let sandbox = Sandbox::new();
    sandbox.add_plugin("echo", "ctxhost_fixture_echo");
    sandbox.add_plugin("abi-mismatch", "ctxhost_fixture_abi_mismatch");
    sandbox.write_descriptor("ghost", "library: ctxhost_engine_ghost\n");
    sandbox.write_descriptor("typo", "libary: x\n");
    sandbox.write_config("context:\n  engine: echo\n");
    let run = sandbox.ctxhost(&["plugins", "list"]);
    assert!(run.success(), "{}", run.stderr);
    insta::assert_snapshot!(sandbox.redact(&run.stdout));
    let engines = sandbox.ctxhost(&["engines"]);
    assert_eq!(engines.stdout, run.stdout);
}
