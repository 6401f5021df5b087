//! `ctxhost plugins …`: the path a third-party author takes (new → build → install → use →
//! compress), swapping engines, trust checksums, doctor, install and remove.

use std::path::{Path, PathBuf};
use std::process::Command;

use ctxhost_compressor::SUMMARY_PREFIX;
use ctxhost_tests::{library, target_dir, workspace_root, Run, Sandbox};

fn session() -> String {
    workspace_root()
        .join("examples/session.json")
        .display()
        .to_string()
}

/// `plugins install` of the built window library with its plugin.yaml from the repository.
fn install_window(sandbox: &Sandbox, extra: &[&str]) -> Run {
    let library = library("ctxhost_engine_window");
    let manifest = workspace_root().join("plugins/context_engine/window/plugin.yaml");
    let mut args = vec![
        "plugins",
        "install",
        library.to_str().unwrap(),
        "--manifest",
        manifest.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    sandbox.ctxhost(&args)
}

/// Replaces every sha256 (64 hex digits) and its 12-digit short form with a placeholder.
pub fn redact_checksums(text: &str) -> String {
    let mut out = String::new();
    let mut run = String::new();
    let flush = |run: &mut String, out: &mut String| {
        match run.len() {
            64 => out.push_str("[SHA256]"),
            12 => out.push_str("[SHA]"),
            _ => out.push_str(run),
        }
        run.clear();
    };
    for c in text.chars() {
        if c.is_ascii_hexdigit() && !c.is_ascii_uppercase() {
            run.push(c);
        } else {
            flush(&mut run, &mut out);
            out.push(c);
        }
    }
    flush(&mut run, &mut out);
    out
}

fn compressed_by(run: &Run) -> &str {
    assert!(run.success(), "{}", run.stderr);
    let last = run.stderr_lines().last().copied().unwrap_or_default();
    last.split(':').next().unwrap_or_default()
}

fn append_bytes(path: &Path) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    file.write_all(b"\0a different build\0").unwrap();
}

#[test]
fn a_new_engine_goes_from_scaffold_to_compress() {
    let sandbox = Sandbox::new();
    sandbox.write_config("model:\n  context_length: 8000\n");
    let crate_dir = sandbox.path().join("my-engine");
    let run = sandbox.ctxhost(&["plugins", "new", "my-engine", "--path", "my-engine"]);
    assert!(run.success(), "{}", run.stderr);
    assert!(
        run.stdout.contains("created engine 'my-engine'"),
        "{}",
        run.stdout
    );
    // Its tests are the example engine's, on ctxhost-sdk-test: the fake host and the contract
    // checks.
    let manifest = std::fs::read_to_string(crate_dir.join("Cargo.toml")).unwrap();
    let sdk_test = workspace_root()
        .join("engines/sdk-test")
        .canonicalize()
        .unwrap();
    assert!(
        manifest.contains(&format!(
            "ctxhost-sdk-test = {{ path = \"{}\" }}",
            sdk_test.display()
        )),
        "{manifest}"
    );
    let common = std::fs::read_to_string(crate_dir.join("tests/common/mod.rs")).unwrap();
    assert!(
        common.contains("use ctxhost_sdk_test::FakeHost;"),
        "{common}"
    );
    let tests = std::fs::read_to_string(crate_dir.join("tests/engine.rs")).unwrap();
    assert!(
        tests.contains("use ctxhost_sdk_test::contract::"),
        "{tests}"
    );
    // The workspace's lock file pins the crate's dependencies to the versions already built, so
    // the build needs no registry; a dedicated target directory keeps later runs incremental.
    std::fs::copy(
        workspace_root().join("Cargo.lock"),
        crate_dir.join("Cargo.lock"),
    )
    .unwrap();
    let target = target_dir().join("scaffold");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let test = Command::new(&cargo)
        .args(["test", "--release"])
        .current_dir(&crate_dir)
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&test.stdout);
    assert!(
        test.status.success(),
        "the scaffold's own test fails:\n{stdout}\n{}",
        String::from_utf8_lossy(&test.stderr)
    );
    assert!(
        stdout.contains("test the_engine_keeps_the_contract ... ok"),
        "the contract checks ran: {stdout}"
    );
    // And the quality check: planted facts through five compactions at a fixed budget.
    assert!(
        stdout.contains("test planted_facts_after_five_compactions_at_a_fifth_of_the_input ... ok"),
        "the quality check ran: {stdout}"
    );

    let target = target.display().to_string();
    let run = sandbox.ctxhost_with_env(
        &["plugins", "install", "my-engine"],
        &[("CARGO_TARGET_DIR", &target)],
    );
    assert!(run.success(), "{}", run.stderr);
    assert!(
        run.stdout.starts_with("installed my-engine 0.1.0 in "),
        "{}",
        run.stdout
    );
    assert!(sandbox
        .installed_dir("my-engine")
        .join("plugin.yaml")
        .is_file());

    let run = sandbox.ctxhost(&["plugins", "use", "my-engine"]);
    assert!(run.success(), "{}", run.stderr);
    assert!(
        run.stdout.contains("approved my-engine 0.1.0"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("context.engine = my-engine"),
        "{}",
        run.stdout
    );

    let run = sandbox.ctxhost(&["compress", &session()]);
    assert_eq!(compressed_by(&run), "my-engine");
    // The example engine's marker, under the new engine's name.
    let messages = run.messages();
    assert!(
        messages
            .iter()
            .any(|m| m.content_text().starts_with("[my-engine: ")),
        "{messages:?}"
    );
    assert!(messages.len() < 100);
    let list = sandbox.ctxhost(&["plugins", "list", "--json"]).json();
    let row = list
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "my-engine")
        .unwrap();
    assert_eq!(row["state"], "active");
    assert_eq!(row["source"], "user plugin dir");
}

#[test]
fn plugins_new_without_the_test_support_crate_says_where_it_looked_and_writes_nothing() {
    let sandbox = Sandbox::new();
    let run = sandbox.ctxhost(&[
        "plugins",
        "new",
        "my-engine",
        "--path",
        "my-engine",
        "--sdk-test",
        "nowhere",
    ]);
    assert!(!run.success());
    let lines = run.stderr_lines();
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert!(
        lines[0].contains("cannot find the ctxhost-sdk-test sources")
            && lines[0].contains("nowhere")
            && lines[0].contains("--sdk-test"),
        "{}",
        run.stderr
    );
    assert!(!sandbox.path().join("my-engine").exists());
}

#[test]
fn plugins_use_swaps_what_compress_does_and_compressor_brings_the_default_back() {
    let sandbox = Sandbox::new();
    sandbox
        .link_repo_plugins()
        .write_config("context:\n  engine: compressor\nmodel:\n  context_length: 16000\n");
    let compress = || sandbox.ctxhost(&["compress", &session()]);

    let run = compress();
    assert_eq!(compressed_by(&run), "compressor");
    assert!(run
        .messages()
        .iter()
        .any(|m| m.content_text().contains(SUMMARY_PREFIX)));

    let used = sandbox.ctxhost(&["plugins", "select", "window"]);
    assert!(used.success(), "{}", used.stderr);
    let run = compress();
    assert_eq!(compressed_by(&run), "window");
    let messages = run.messages();
    assert!(messages
        .iter()
        .any(|m| m.content_text().starts_with("[window engine: ")));
    assert!(!messages
        .iter()
        .any(|m| m.content_text().contains(SUMMARY_PREFIX)));

    let back = sandbox.ctxhost(&["plugins", "use", "compressor"]);
    assert!(back.success(), "{}", back.stderr);
    assert_eq!(compressed_by(&compress()), "compressor");
    assert_eq!(
        sandbox.config_text(),
        "context:\n  engine: compressor\nmodel:\n  context_length: 16000\n",
        "a round trip leaves the file as it was"
    );
}

const COMMENTED: &str = "\
# Operator's config: every comment here must survive.
context:
  engine: compressor   # the default, for now

# Hermes sections ctxhost does not know:
display:
  skin: dark          # keep me
  tool_progress: all
memory:
  provider: honcho

model:
  name: gpt-4o
  context_length: 128000
  provider: openrouter   # unknown to ctxhost, kept

plugins:
  # window settings
  window:
    threshold: 0.75
    # the tail
    tail_ratio: 0.40

custom_top_level: {a: 1, b: [x, y]}
# trailing comment
";

#[test]
fn edits_keep_every_comment_and_unknown_key() {
    let sandbox = Sandbox::new();
    sandbox.link_repo_plugins().write_config(COMMENTED);
    for args in [
        &["plugins", "use", "window"][..],
        &["plugins", "enable", "window"],
        &["config", "set", "plugins.window.threshold", "0.6"],
        &["config", "set", "compression.protect_last_n", "30"],
        &["plugins", "disable", "lcm"],
    ] {
        let run = sandbox.ctxhost(args);
        assert!(run.success(), "{args:?}: {}", run.stderr);
    }
    let edited = sandbox.config_text();
    // Every original line is still there, in order, except the three values that changed.
    let mut remaining = edited.lines();
    for line in COMMENTED.lines() {
        if line.contains("engine: compressor") || line.contains("threshold: 0.75") {
            continue;
        }
        assert!(
            remaining.any(|l| l == line),
            "lost or moved: {line:?}\n{edited}"
        );
    }
    insta::assert_snapshot!(redact_checksums(&edited));
    let validate = sandbox.ctxhost(&["config", "validate"]);
    assert!(validate.success(), "{}", validate.stdout);
}

#[test]
fn a_library_replaced_after_it_was_enabled_is_refused_until_enabled_again() {
    let sandbox = Sandbox::new();
    sandbox.write_config("context:\n  engine: compressor\nmodel:\n  context_length: 16000\n");
    let run = install_window(&sandbox, &["--enable"]);
    assert!(run.success(), "{}", run.stderr);
    assert!(
        run.stdout.contains("enabled: this build is approved"),
        "{}",
        run.stdout
    );
    assert!(sandbox.ctxhost(&["plugins", "use", "window"]).success());
    assert_eq!(
        compressed_by(&sandbox.ctxhost(&["compress", &session()])),
        "window"
    );

    let installed = sandbox
        .installed_dir("window")
        .join(library("ctxhost_engine_window").file_name().unwrap());
    append_bytes(&installed);

    let run = sandbox.ctxhost(&["compress", &session()]);
    assert_eq!(compressed_by(&run), "compressor");
    let warning = run.stderr_lines()[0];
    assert!(
        warning.contains("changed since it was enabled"),
        "{warning}"
    );
    assert!(
        warning.contains("`ctxhost plugins enable window`"),
        "{warning}"
    );

    let doctor = sandbox.ctxhost(&["plugins", "doctor"]);
    assert_eq!(doctor.code, Some(1), "{}", doctor.stdout);
    assert!(doctor
        .stdout
        .lines()
        .any(|l| l.starts_with("problem  window: ") && l.contains("changed since it was enabled")));

    let enable = sandbox.ctxhost(&["plugins", "enable", "window"]);
    assert!(enable.success(), "{}", enable.stderr);
    let doctor = sandbox.ctxhost(&["plugins", "doctor"]);
    assert_eq!(doctor.code, Some(0), "{}", doctor.stdout);
    assert_eq!(
        compressed_by(&sandbox.ctxhost(&["compress", &session()])),
        "window"
    );

    // Installing another build over an approved one says it will not load until approved.
    let reinstall = install_window(&sandbox, &["--force"]);
    assert!(reinstall.success(), "{}", reinstall.stderr);
    assert!(
        reinstall.stdout.contains(
            "so this one will not load until `ctxhost plugins enable window` approves it"
        ),
        "{}",
        reinstall.stdout
    );
    assert_eq!(
        compressed_by(&sandbox.ctxhost(&["compress", &session()])),
        "compressor"
    );
}

#[test]
fn doctor_reports_each_kind_of_broken_plugin_in_one_line() {
    let sandbox = Sandbox::new();
    sandbox.write_config("context:\n  engine: compressor\n");
    // An incompatible interface, a missing library, a bad manifest, a duplicate name.
    sandbox.add_plugin("abi-mismatch", "ctxhost_fixture_abi_mismatch");
    sandbox.write_descriptor("ghost", "library: ctxhost_engine_ghost\n");
    sandbox.write_descriptor("typo", "libary: x\n");
    sandbox.add_plugin("echo", "ctxhost_fixture_echo");
    sandbox.add_plugin("echo-copy", "ctxhost_fixture_echo");
    sandbox.write_descriptor("echo-copy", "name: echo\nlibrary: ctxhost_fixture_echo\n");
    // A checksum mismatch.
    assert!(install_window(&sandbox, &["--enable"]).success());
    append_bytes(
        &sandbox
            .installed_dir("window")
            .join(library("ctxhost_engine_window").file_name().unwrap()),
    );

    let doctor = sandbox.ctxhost(&["plugins", "doctor"]);
    assert_eq!(doctor.code, Some(1), "{}", doctor.stdout);
    let problems: Vec<&str> = doctor
        .stdout
        .lines()
        .filter(|l| l.starts_with("problem"))
        .collect();
    assert_eq!(problems.len(), 5, "{}", doctor.stdout);
    for (engine, says) in [
        ("abi-mismatch", "incompatible ABI layout"),
        ("ghost", "not found"),
        ("typo", "bad plugin.yaml"),
        ("echo", "share this name"),
        ("window", "changed since it was enabled"),
    ] {
        assert!(
            problems
                .iter()
                .any(|l| l.starts_with(&format!("problem  {engine}: ")) && l.contains(says)),
            "{engine}: {says}\n{}",
            doctor.stdout
        );
    }
    insta::assert_snapshot!(redact_checksums(&sandbox.redact(&doctor.stdout)));

    let json = sandbox.ctxhost(&["plugins", "doctor", "--json"]);
    assert_eq!(json.code, Some(1));
    let kinds: Vec<String> = json.json()["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["level"] == "problem")
        .map(|f| f["kind"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        kinds,
        [
            "abi_mismatch",
            "missing_library",
            "bad_manifest",
            "checksum_mismatch",
            "duplicate_name"
        ]
    );
}

#[test]
fn plugins_list_shows_source_state_and_path() {
    let sandbox = Sandbox::new();
    sandbox.write_config("context:\n  engine: echo\n");
    sandbox.add_plugin("panicky", "ctxhost_fixture_panicky");
    // Installed and enabled, installed only, and disabled.
    let echo_dir = sandbox.path().join("echo-build");
    std::fs::create_dir_all(&echo_dir).unwrap();
    let echo = library("ctxhost_fixture_echo");
    std::fs::copy(&echo, echo_dir.join(echo.file_name().unwrap())).unwrap();
    std::fs::write(
        echo_dir.join("plugin.yaml"),
        "name: echo\nversion: 0.1.0\ndescription: Echoes.\nlibrary: ctxhost_fixture_echo\n",
    )
    .unwrap();
    let run = sandbox.ctxhost(&["plugins", "install", "echo-build", "--enable"]);
    assert!(run.success(), "{}", run.stderr);
    assert!(install_window(&sandbox, &[]).success());
    assert!(sandbox
        .ctxhost(&["plugins", "disable", "panicky"])
        .success());

    let run = sandbox.ctxhost(&["plugins", "list"]);
    assert!(run.success(), "{}", run.stderr);
    insta::assert_snapshot!(sandbox.redact(&run.stdout));
    let rows = sandbox.ctxhost(&["plugins", "list", "--json"]).json();
    let states: Vec<(&str, &str)> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["name"].as_str().unwrap(), r["state"].as_str().unwrap()))
        .collect();
    assert_eq!(
        states,
        [
            ("compressor", "enabled"),
            ("panicky", "disabled"),
            ("echo", "active"),
            ("window", "installed"),
        ]
    );
}

#[test]
fn install_refuses_what_it_should_and_leaves_nothing_behind() {
    let sandbox = Sandbox::new();
    sandbox.write_config("context:\n  engine: compressor\n");
    assert!(install_window(&sandbox, &[]).success());

    let again = install_window(&sandbox, &[]);
    assert_eq!(again.code, Some(1));
    assert_eq!(
        sandbox.redact(again.stderr.trim()),
        "error: plugin 'window' is already installed (version 0.1.0) in [SANDBOX]/home/plugins/context_engine/window; pass --force to replace it"
    );
    let forced = install_window(&sandbox, &["--force"]);
    assert!(forced.success(), "{}", forced.stderr);
    assert!(
        forced.stdout.contains("(replaced 0.1.0)"),
        "{}",
        forced.stdout
    );

    let text = sandbox.write("notes.txt", "not a plugin");
    let run = sandbox.ctxhost(&["plugins", "install", text.to_str().unwrap()]);
    assert_eq!(run.code, Some(1));
    assert_eq!(run.stderr_lines().len(), 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("no plugin.yaml found"),
        "{}",
        run.stderr
    );

    let incompatible = sandbox.plugin_dir("incompatible");
    let fixture = library("ctxhost_fixture_abi_mismatch");
    std::fs::copy(&fixture, incompatible.join(fixture.file_name().unwrap())).unwrap();
    sandbox.write_descriptor(
        "incompatible",
        "name: incompatible\nlibrary: ctxhost_fixture_abi_mismatch\n",
    );
    let run = sandbox.ctxhost(&["plugins", "install", incompatible.to_str().unwrap()]);
    assert_eq!(run.code, Some(1));
    assert_eq!(run.stderr_lines().len(), 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("does not load: incompatible ABI layout"),
        "{}",
        run.stderr
    );

    let mut left: Vec<PathBuf> = std::fs::read_dir(sandbox.home().join("plugins/context_engine"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    left.sort();
    assert_eq!(
        left,
        [sandbox.installed_dir("window")],
        "no staging directory is left"
    );
}

#[test]
fn remove_deletes_the_plugin_and_its_approval_and_unselects_it() {
    let sandbox = Sandbox::new();
    sandbox.write_config("context:\n  engine: compressor\n");
    assert!(install_window(&sandbox, &["--enable"]).success());
    assert!(sandbox.ctxhost(&["plugins", "use", "window"]).success());
    assert!(sandbox.config_text().contains("window: "));

    let run = sandbox.ctxhost(&["plugins", "remove", "window"]);
    assert!(run.success(), "{}", run.stderr);
    assert!(
        run.stdout.contains("context.engine = compressor"),
        "{}",
        run.stdout
    );
    assert!(!sandbox.installed_dir("window").exists());
    assert_eq!(
        sandbox.config_text(),
        "context:\n  engine: compressor\ntrust:\n  enabled: {}\n"
    );
    let again = sandbox.ctxhost(&["plugins", "remove", "window"]);
    assert_eq!(again.code, Some(1));
    assert_eq!(
        again.stderr.trim(),
        "error: no plugin 'window' is installed; see `ctxhost plugins list`"
    );
}

#[test]
fn use_refuses_an_engine_that_is_missing_or_broken_unless_forced() {
    let sandbox = Sandbox::new();
    sandbox.write_config("context:\n  engine: compressor\n");
    sandbox.write_descriptor("ghost", "library: ctxhost_engine_ghost\n");

    let run = sandbox.ctxhost(&["plugins", "use", "nope"]);
    assert_eq!(run.code, Some(1));
    assert_eq!(run.stderr_lines().len(), 1, "{}", run.stderr);
    assert!(
        run.stderr
            .starts_with("error: engine 'nope' is not installed"),
        "{}",
        run.stderr
    );
    let run = sandbox.ctxhost(&["plugins", "use", "ghost"]);
    assert_eq!(run.code, Some(1));
    assert!(
        run.stderr.contains("cannot select 'ghost': library "),
        "{}",
        run.stderr
    );
    assert_eq!(sandbox.config_text(), "context:\n  engine: compressor\n");

    let run = sandbox.ctxhost(&["plugins", "use", "nope", "--force"]);
    assert!(run.success(), "{}", run.stderr);
    assert!(
        run.stdout
            .starts_with("warning: no plugin 'nope' is installed"),
        "{}",
        run.stdout
    );
    assert_eq!(sandbox.config_text(), "context:\n  engine: nope\n");
}

#[test]
fn a_config_that_does_not_parse_is_never_overwritten() {
    let sandbox = Sandbox::new();
    let broken = "# mine\ncontext: [unclosed\n";
    sandbox.write_config(broken);
    for args in [
        &["plugins", "use", "compressor"][..],
        &["config", "set", "model.name", "x"],
        &["plugins", "disable", "window"],
    ] {
        let run = sandbox.ctxhost(args);
        assert_eq!(run.code, Some(1), "{args:?}");
        assert_eq!(run.stderr_lines().len(), 1, "{args:?}: {}", run.stderr);
        assert_eq!(sandbox.config_text(), broken, "{args:?}");
    }
}

#[test]
fn info_shows_manifest_tools_settings_library_and_checksum() {
    let sandbox = Sandbox::new();
    sandbox
        .link_repo_plugins()
        .write_config("context:\n  engine: lcm\nplugins:\n  lcm:\n    threshold: 0.6\n");
    let run = sandbox.ctxhost(&["plugins", "info", "lcm", "--json"]);
    assert!(run.success(), "{}", run.stderr);
    let info = run.json();
    assert_eq!(info["state"], "active");
    assert_eq!(info["source"], "repo plugin dir");
    assert_eq!(info["api_level"], 1);
    let checksum = info["sha256"].as_str().unwrap();
    assert_eq!(checksum.len(), 64);
    let tools: Vec<&str> = info["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        ["lcm_grep", "lcm_describe", "lcm_expand", "lcm_expand_query"]
    );
    let keys = info["config_keys"].as_array().unwrap();
    let threshold = keys.iter().find(|k| k["key"] == "threshold").unwrap();
    assert_eq!(threshold["value"], 0.6);
    assert_eq!(threshold["default"], "0.75");

    let text = sandbox.ctxhost(&["plugins", "info", "lcm"]).stdout;
    assert!(text.contains(&format!("sha256       {checksum}")), "{text}");
    assert!(
        text.contains("not needed (the project's own plugin)"),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("threshold") && l.contains("0.6 (set)")),
        "{text}"
    );

    let compressor = sandbox
        .ctxhost(&["plugins", "info", "compressor", "--json"])
        .json();
    assert_eq!(compressor["state"], "enabled");
    assert_eq!(compressor["config_section"], "compression");

    // An installed plugin that was never approved is described without being loaded.
    let installed = Sandbox::new();
    installed.write_config("context:\n  engine: compressor\n");
    assert!(install_window(&installed, &[]).success());
    let info = installed
        .ctxhost(&["plugins", "info", "window", "--json"])
        .json();
    assert_eq!(info["state"], "installed");
    assert_eq!(info["api_level"], serde_json::Value::Null, "not loaded");
    assert!(
        info["approval"]
            .as_str()
            .unwrap()
            .starts_with("not approved"),
        "{info}"
    );
    let missing = installed.ctxhost(&["plugins", "info", "nope"]);
    assert_eq!(missing.code, Some(1));
    assert_eq!(missing.stderr_lines().len(), 1, "{}", missing.stderr);
}

/// A project plugin (beside the config file) loads without approval, so choosing it records
/// none in the (tracked) config, by `plugins use` or by `config set context.engine`.
#[test]
fn choosing_a_project_plugin_records_no_approval() {
    let sandbox = Sandbox::new();
    sandbox.link_repo_plugins().write_config("# project\n");
    let run = sandbox.ctxhost(&["plugins", "use", "window"]);
    assert!(run.success(), "{}", run.stderr);
    assert!(
        run.stdout.contains("(in config.yaml)") || run.stdout.contains("config.yaml"),
        "{}",
        run.stdout
    );
    assert_eq!(
        sandbox.config_text(),
        "# project\ncontext:\n  engine: window\n"
    );
    let run = sandbox.ctxhost(&["config", "set", "context.engine", "lcm"]);
    assert!(run.success(), "{}", run.stderr);
    assert_eq!(
        sandbox.config_text(),
        "# project\ncontext:\n  engine: lcm\n"
    );
}

#[test]
fn mistyped_plugin_names_get_a_suggestion() {
    let sandbox = Sandbox::new();
    sandbox.link_repo_plugins().write_config("");
    for args in [
        &["plugins", "info", "lcn"][..],
        &["plugins", "enable", "lcn"],
        &["plugins", "disable", "lcn"],
        &["plugins", "use", "lcn"],
    ] {
        let run = sandbox.ctxhost(args);
        assert_eq!(run.code, Some(1), "{args:?}");
        assert!(
            run.stderr.contains("did you mean 'lcm'?"),
            "{args:?}: {}",
            run.stderr
        );
    }
}

#[test]
fn an_approval_covers_every_file_of_the_plugin_directory() {
    let sandbox = Sandbox::new();
    sandbox.write_config("context:\n  engine: window\nmodel:\n  context_length: 16000\n");
    assert!(install_window(&sandbox, &["--enable"]).success());
    assert_eq!(
        compressed_by(&sandbox.ctxhost(&["compress", &session()])),
        "window"
    );
    // Not the library: a file beside it, as a library it loads from its own directory would be.
    std::fs::write(
        sandbox.installed_dir("window").join("libhelper.so"),
        "swapped in after the approval",
    )
    .unwrap();
    let run = sandbox.ctxhost(&["compress", &session()]);
    assert_eq!(compressed_by(&run), "compressor");
    assert!(
        run.stderr_lines()[0].contains("changed since it was enabled"),
        "{}",
        run.stderr
    );
    assert!(sandbox.ctxhost(&["plugins", "enable", "window"]).success());
    assert_eq!(
        compressed_by(&sandbox.ctxhost(&["compress", &session()])),
        "window"
    );
}

#[test]
fn an_approval_written_by_an_older_version_is_stale_until_approved_again() {
    let sandbox = Sandbox::new();
    assert!(install_window(&sandbox, &[]).success());
    let library_sha256 = {
        use sha2::{Digest, Sha256};
        let installed = sandbox
            .installed_dir("window")
            .join(library("ctxhost_engine_window").file_name().unwrap());
        format!("{:x}", Sha256::digest(std::fs::read(installed).unwrap()))
    };
    sandbox.write_config(&format!(
        "context:\n  engine: window\nmodel:\n  context_length: 16000\ntrust:\n  enabled:\n    window: {library_sha256}\n"
    ));
    let run = sandbox.ctxhost(&["compress", &session()]);
    assert_eq!(compressed_by(&run), "compressor");
    let lines: Vec<&str> = run
        .stderr_lines()
        .into_iter()
        .filter(|l| l.contains("older ctxhost"))
        .collect();
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert!(
        lines[0].contains("`ctxhost plugins enable window`"),
        "{}",
        lines[0]
    );
    let list = sandbox.ctxhost(&["plugins", "list"]);
    assert!(list.success(), "{}", list.stderr);
    assert!(
        list.stdout
            .lines()
            .any(|l| l.starts_with("window: ") && l.contains("older ctxhost")),
        "{}",
        list.stdout
    );
    let enable = sandbox.ctxhost(&["plugins", "enable", "window"]);
    assert!(enable.success(), "{}", enable.stderr);
    assert!(sandbox.config_text().contains("window: tree-sha256:"));
    assert_eq!(
        compressed_by(&sandbox.ctxhost(&["compress", &session()])),
        "window"
    );
}

#[test]
fn doctor_flags_a_library_that_searches_for_shared_libraries_outside_its_directory() {
    let sandbox = Sandbox::new();
    sandbox.write_config("context:\n  engine: compressor\n");
    sandbox.add_plugin("foreign-rpath", "ctxhost_fixture_foreign_rpath");
    sandbox.add_plugin("window", "ctxhost_engine_window");
    let doctor = sandbox.ctxhost(&["plugins", "doctor"]);
    assert_eq!(doctor.code, Some(1), "{}", doctor.stdout);
    let problems: Vec<&str> = doctor
        .stdout
        .lines()
        .filter(|l| l.starts_with("problem"))
        .collect();
    assert_eq!(problems.len(), 1, "{}", doctor.stdout);
    assert!(
        problems[0].starts_with("problem  foreign-rpath: ")
            && problems[0].contains("/opt/ctxhost-fixture-elsewhere/lib"),
        "{}",
        problems[0]
    );
}
