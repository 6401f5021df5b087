//! Project trust, direnv-style: a `config.yaml` found in the working directory is a project's,
//! and its plugins and credentials are used only once `ctxhost trust` trusts it (by path and
//! content); a change untrusts it; `--config FILE` trusts the file it names.

use ctxhost_tests::fake_provider::{chat_reply, TestServer};
use ctxhost_tests::{corpus_dir, Run, Sandbox};
use serde_json::Value;

/// A project whose config selects its own plugin `echo`, and a transcript to run.
fn echo_project() -> (Sandbox, String) {
    let sandbox = Sandbox::new();
    sandbox.add_plugin("echo", "ctxhost_fixture_echo");
    sandbox.write_config("context:\n  engine: echo\nmodel:\n  context_length: 8000\n");
    let transcript = corpus_dir().join("ctf__web__i_got_id_demo.json");
    (sandbox, transcript.display().to_string())
}

fn run_in_project(sandbox: &Sandbox, transcript: &str) -> Run {
    sandbox.ctxhost_in_project(&["run", transcript, "--json"], &[])
}

fn listed_state(run: &Run, name: &str) -> String {
    let rows = run.json();
    rows.as_array()
        .unwrap()
        .iter()
        .find(|row| row["name"] == name)
        .map(|row| row["state"].as_str().unwrap().to_string())
        .unwrap_or_else(|| panic!("no row for {name}: {}", run.stdout))
}

#[test]
fn an_untrusted_projects_plugin_runs_nowhere_until_the_project_is_trusted() {
    let (sandbox, transcript) = echo_project();

    let run = run_in_project(&sandbox, &transcript);
    assert_eq!(
        run.code,
        Some(3),
        "not the engine asked for: {}",
        run.stderr
    );
    assert_eq!(run.json()["runs"][0]["engine"], "compressor");
    let line = run
        .stderr_lines()
        .into_iter()
        .find(|l| l.contains("'echo'"))
        .unwrap_or_else(|| panic!("no line names the plugin: {}", run.stderr))
        .to_string();
    assert!(line.contains("`ctxhost trust`"), "{line}");

    let list = sandbox.ctxhost_in_project(&["plugins", "list", "--json"], &[]);
    assert!(list.success(), "{}", list.stderr);
    assert_eq!(listed_state(&list, "echo"), "untrusted");

    let doctor = sandbox.ctxhost_in_project(&["plugins", "doctor"], &[]);
    let echo_line = doctor
        .stdout
        .lines()
        .find(|l| l.contains("echo:"))
        .unwrap_or_else(|| panic!("doctor says nothing of echo: {}", doctor.stdout));
    assert!(echo_line.contains("ctxhost trust"), "{echo_line}");
    assert!(
        !echo_line.contains("status and compress work"),
        "{echo_line}"
    );

    let trust = sandbox.ctxhost_in_project(&["trust"], &[]);
    assert!(trust.success(), "{}", trust.stderr);
    assert!(
        !sandbox.path().join(".ctxhost").exists(),
        "nothing is written into the project"
    );
    let run = run_in_project(&sandbox, &transcript);
    assert!(run.success(), "{}", run.stderr);
    assert_eq!(run.json()["runs"][0]["engine"], "echo", "{}", run.stderr);
    let list = sandbox.ctxhost_in_project(&["plugins", "list", "--json"], &[]);
    assert_eq!(listed_state(&list, "echo"), "active");
    let doctor = sandbox.ctxhost_in_project(&["plugins", "doctor"], &[]);
    assert!(
        doctor
            .stdout
            .lines()
            .any(|l| l.contains("echo:") && l.contains("status and compress work")),
        "{}",
        doctor.stdout
    );

    // ctxhost's own edits keep the trust; any other change to the config (or the plugins
    // beside it) untrusts the project again.
    let set = sandbox.ctxhost_in_project(&["config", "set", "model.context_length", "12000"], &[]);
    assert!(set.success(), "{}", set.stderr);
    let run = run_in_project(&sandbox, &transcript);
    assert_eq!(run.json()["runs"][0]["engine"], "echo", "{}", run.stderr);

    sandbox.write_config("context:\n  engine: echo\nmodel:\n  context_length: 9000\n");
    let run = run_in_project(&sandbox, &transcript);
    assert_eq!(run.json()["runs"][0]["engine"], "compressor");
    assert!(
        run.stderr.contains("changed since you trusted it"),
        "{}",
        run.stderr
    );
    assert!(sandbox.ctxhost_in_project(&["trust"], &[]).success());
    std::fs::write(sandbox.plugin_dir("echo").join("notes.txt"), "new file").unwrap();
    let run = run_in_project(&sandbox, &transcript);
    assert_eq!(run.json()["runs"][0]["engine"], "compressor");

    // Revoked, it is untrusted again; named with --config, it is trusted.
    assert!(sandbox.ctxhost_in_project(&["trust"], &[]).success());
    let revoke = sandbox.ctxhost_in_project(&["trust", "--revoke"], &[]);
    assert!(revoke.success(), "{}", revoke.stderr);
    let run = run_in_project(&sandbox, &transcript);
    assert_eq!(run.json()["runs"][0]["engine"], "compressor");
    let named = sandbox.ctxhost_in_project(
        &["--config", "config.yaml", "run", &transcript, "--json"],
        &[],
    );
    assert_eq!(
        named.json()["runs"][0]["engine"],
        "echo",
        "{}",
        named.stderr
    );
}

#[test]
fn an_untrusted_project_config_sends_no_credential_anywhere() {
    // Build first: the loopback server stops accepting after a deadline.
    ctxhost_tests::artifacts();
    let server = TestServer::start(vec![chat_reply("## Goal\nTRUSTED-SUMMARY")]);
    let sandbox = Sandbox::new();
    sandbox.write_config(&format!(
        "model:\n  context_length: 8000\nauxiliary:\n  compression:\n    provider: custom\n    \
         model: m\n    base_url: {}\n    api_key_env: GITHUB_TOKEN\n    timeout: 15\n",
        server.base_url()
    ));
    let transcript = corpus_dir().join("ctf__web__i_got_id_demo.json");
    let transcript = transcript.to_str().unwrap();
    let token = [("GITHUB_TOKEN", "ghp_PLANTEDTOKEN0123456789abcdefghijklmn")];

    let run = sandbox.ctxhost_in_project(&["compress", "--force", transcript], &token);
    assert!(run.success(), "{}", run.stderr);
    assert!(
        server.requests().is_empty(),
        "an untrusted config sent a request"
    );
    let warnings: Vec<&str> = run
        .stderr_lines()
        .into_iter()
        .filter(|l| l.contains("auxiliary.compression"))
        .collect();
    assert_eq!(warnings.len(), 1, "{}", run.stderr);
    assert!(warnings[0].contains("`ctxhost trust`"), "{}", warnings[0]);
    let summary = run.json().as_array().unwrap().iter().any(|m| {
        m["content"]
            .as_str()
            .is_some_and(|c| c.starts_with("[CONTEXT SUMMARY"))
    });
    assert!(summary, "the offline summarizer wrote the summary");

    assert!(sandbox.ctxhost_in_project(&["trust"], &[]).success());
    let run = sandbox.ctxhost_in_project(&["compress", "--force", transcript], &token);
    assert!(run.success(), "{}", run.stderr);
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "trusted, the summarizer is used");
    assert_eq!(
        requests[0].header("authorization"),
        Some("Bearer ghp_PLANTEDTOKEN0123456789abcdefghijklmn")
    );
    let output: Value = run.json();
    assert!(output.to_string().contains("TRUSTED-SUMMARY"));
}

#[test]
fn the_checkout_ctxhost_was_built_from_is_trusted_without_asking() {
    // The suite's ctxhost was built in this repository's target directory: its own config and
    // plugins are the README's first command's, on a fresh machine.
    let home = tempfile::tempdir().unwrap();
    let run = std::process::Command::new(ctxhost_tests::binary())
        .current_dir(ctxhost_tests::workspace_root())
        .env("CTXHOST_HOME", home.path())
        .env_remove("CARGO_TARGET_DIR")
        .args(["plugins", "list", "--json"])
        .output()
        .unwrap();
    let run = Run::from(run);
    assert!(run.success(), "{}", run.stderr);
    let built_here = ctxhost_tests::binary().canonicalize().unwrap().starts_with(
        ctxhost_tests::workspace_root()
            .join("target")
            .canonicalize()
            .unwrap(),
    );
    let expected = if built_here { "enabled" } else { "untrusted" };
    assert_eq!(listed_state(&run, "window"), expected, "{}", run.stdout);
}

#[test]
fn an_untrusted_project_config_names_no_environment_variable_for_a_plugin() {
    let sandbox = Sandbox::new();
    sandbox.write_config(
        "plugins:\n  window:\n    keep_last: 3\n    api_key_env: GITHUB_TOKEN\n  lcm:\n    \
         summarizer:\n      token_env: HOME_TOKEN\n",
    );
    let transcript = corpus_dir().join("ctf__web__i_got_id_demo.json");
    let transcript = transcript.to_str().unwrap();

    let run = sandbox.ctxhost_in_project(&["compress", "--force", transcript], &[]);
    assert!(run.success(), "{}", run.stderr);
    let warnings: Vec<&str> = run
        .stderr_lines()
        .into_iter()
        .filter(|l| l.contains("_env"))
        .collect();
    assert_eq!(warnings.len(), 1, "one line: {}", run.stderr);
    for expected in [
        "`ctxhost trust`",
        "plugins.window.api_key_env",
        "plugins.lcm.summarizer.token_env",
        "are not used",
    ] {
        assert!(
            warnings[0].contains(expected),
            "{expected}: {}",
            warnings[0]
        );
    }
    assert!(!warnings[0].contains("keep_last"), "{}", warnings[0]);

    assert!(sandbox.ctxhost_in_project(&["trust"], &[]).success());
    let run = sandbox.ctxhost_in_project(&["compress", "--force", transcript], &[]);
    assert!(run.success(), "{}", run.stderr);
    assert!(!run.stderr.contains("_env"), "trusted: {}", run.stderr);
}
