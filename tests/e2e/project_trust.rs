//! Project trust, direnv-style: a `config.yaml` found in the working directory is a project's,
//! and its plugins and credentials are used only once `ctxhost trust` trusts it (by path and
//! content); a change untrusts it; `--config FILE` trusts the file it names.

use ctxhost_tests::upstream::{chat_reply, FakeUpstream};
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
    let server = FakeUpstream::scripted(vec![chat_reply("## Goal\nTRUSTED-SUMMARY")]);
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
        server.received().is_empty(),
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
    let requests = server.received();
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

/// Starts `command` (a `ctxhost serve` on 127.0.0.1:0) and returns it with every stderr line it
/// printed up to and including its ready line.
fn serve_until_ready(mut command: std::process::Command) -> (std::process::Child, Vec<String>) {
    use std::io::{BufRead, BufReader};
    let mut child = command
        .args(["--listen", "127.0.0.1:0"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("ctxhost serve starts");
    let mut lines = Vec::new();
    for line in BufReader::new(child.stderr.take().unwrap()).lines() {
        let line = line.unwrap();
        let ready = line.starts_with("ctxhost serve: listening on ");
        lines.push(line);
        if ready {
            return (child, lines);
        }
    }
    let status = child.wait();
    panic!("ctxhost serve never became ready ({status:?}): {lines:#?}");
}

fn mode_of(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn world_writable_file(path: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, "").unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666)).unwrap();
}

#[test]
fn an_untrusted_project_chooses_no_place_for_the_gateways_state() {
    ctxhost_tests::artifacts();
    let sandbox = Sandbox::new();
    let loot = sandbox.path().join("elsewhere/loot.sqlite");
    world_writable_file(&loot);
    let project = sandbox.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        project.join("config.yaml"),
        format!(
            "serve:\n  state: {}\nplugins:\n  lcm:\n    store: postgres://u:p@127.0.0.1:1/loot\n    \
             fresh_tail_count: 8\n",
            loot.display()
        ),
    )
    .unwrap();
    let mut command = std::process::Command::new(ctxhost_tests::binary());
    command
        .current_dir(&project)
        .env("CTXHOST_HOME", sandbox.home())
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CTXHOST_LOG")
        .arg("serve");
    let (mut child, lines) = serve_until_ready(command);
    let _ = child.kill();
    let _ = child.wait();

    let warnings: Vec<&String> = lines.iter().filter(|l| l.contains("serve.state")).collect();
    assert_eq!(warnings.len(), 1, "one line: {lines:#?}");
    for expected in ["`ctxhost trust`", "plugins.lcm.store", "not used"] {
        assert!(
            warnings[0].contains(expected),
            "{expected}: {}",
            warnings[0]
        );
    }
    assert!(!warnings[0].contains("fresh_tail_count"), "{}", warnings[0]);
    assert!(!warnings[0].contains("u:p@"), "{}", warnings[0]);
    assert_eq!(
        std::fs::metadata(&loot).unwrap().len(),
        0,
        "nothing was written where the project said"
    );
    assert_eq!(mode_of(&loot), 0o666, "nor was it opened");
    assert!(
        sandbox
            .home()
            .join("data/gateway/sessions.sqlite")
            .is_file(),
        "the state is in the user's home"
    );
}

#[test]
fn a_gateway_store_readable_by_others_is_made_owner_only_and_said() {
    ctxhost_tests::artifacts();
    let sandbox = Sandbox::new();
    let state = sandbox.path().join("state/sessions.sqlite");
    world_writable_file(&state);
    sandbox.write_config(&format!("serve:\n  state: {}\n", state.display()));
    let (mut child, lines) = serve_until_ready(sandbox.command(&["serve"]));
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(mode_of(&state), 0o600);
    let said: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("was readable by others"))
        .collect();
    assert_eq!(said.len(), 1, "{lines:#?}");
    for expected in ["sessions.sqlite", "0666", "0600"] {
        assert!(said[0].contains(expected), "{expected}: {}", said[0]);
    }
}

#[test]
fn an_lcm_store_readable_by_others_is_made_owner_only_and_said() {
    let sandbox = Sandbox::new();
    sandbox.link_repo_plugins();
    let store = sandbox.path().join("lcm/lcm.sqlite");
    world_writable_file(&store);
    sandbox.write_config(&format!(
        "context:\n  engine: lcm\nmodel:\n  context_length: 8000\nplugins:\n  lcm:\n    store: {}\n",
        store.display()
    ));
    let transcript = corpus_dir().join("ctf__web__i_got_id_demo.json");
    let run = sandbox.ctxhost(&["compress", transcript.to_str().unwrap()]);
    assert!(run.success(), "{}", run.stderr);
    assert_eq!(mode_of(&store), 0o600);
    let said: Vec<&str> = run
        .stderr_lines()
        .into_iter()
        .filter(|l| l.contains("was readable by others"))
        .collect();
    assert_eq!(said.len(), 1, "{}", run.stderr);
    for expected in ["lcm.sqlite", "0666", "0600"] {
        assert!(said[0].contains(expected), "{expected}: {}", said[0]);
    }
}
