//! `ctxhost plugins` in a terminal: the interactive picker, driven in a pseudo-terminal.

#![cfg(unix)]

use std::process::Command;

use ctxhost_tests::{binary, Sandbox};
use rexpect::reader::Options;
use rexpect::session::spawn_with_options;

fn picker(sandbox: &Sandbox) -> rexpect::session::PtySession {
    let mut command = Command::new(binary());
    command
        .args(sandbox.config_args(&[]))
        .arg("plugins")
        .current_dir(sandbox.path())
        .env("CTXHOST_HOME", sandbox.home())
        .env("TERM", "xterm")
        .env_remove("CARGO_TARGET_DIR");
    let options = Options {
        timeout_ms: Some(20_000),
        strip_ansi_escape_codes: true,
    };
    spawn_with_options(command, options).expect("the picker starts in a pseudo-terminal")
}

#[test]
fn the_picker_selects_an_engine_and_writes_the_config() {
    let sandbox = Sandbox::new();
    sandbox
        .link_repo_plugins()
        .write_config("# picked below\ncontext:\n  engine: compressor\n");
    let mut session = picker(&sandbox);
    session.exp_string("Context Engine (select one)").unwrap();
    // compressor (selected), lcm, window: two steps down.
    session.exp_string("window").unwrap();
    session.send("\x1b[B").unwrap();
    session.send("\x1b[B").unwrap();
    session.send("\r").unwrap();
    session.flush().unwrap();
    session.exp_string("context.engine = window").unwrap();
    session.exp_eof().unwrap();
    assert_eq!(
        sandbox.config_text(),
        "# picked below\ncontext:\n  engine: window\n"
    );
}

#[test]
fn escape_leaves_the_config_alone() {
    let sandbox = Sandbox::new();
    sandbox
        .link_repo_plugins()
        .write_config("context:\n  engine: compressor\n");
    let mut session = picker(&sandbox);
    session.exp_string("Context Engine (select one)").unwrap();
    session.exp_string("window").unwrap();
    session.send("\x1b[B").unwrap();
    session.send("\x1b").unwrap();
    session.flush().unwrap();
    session
        .exp_string("no change: context.engine = compressor")
        .unwrap();
    session.exp_eof().unwrap();
    assert_eq!(sandbox.config_text(), "context:\n  engine: compressor\n");
}

#[test]
fn without_a_terminal_it_prints_the_list() {
    let sandbox = Sandbox::new();
    sandbox.link_repo_plugins();
    let run = sandbox.ctxhost(&["plugins"]);
    assert!(run.success(), "{}", run.stderr);
    assert!(run.stdout.starts_with("  NAME "), "{}", run.stdout);
    assert_eq!(run.stdout, sandbox.ctxhost(&["plugins", "list"]).stdout);
}
