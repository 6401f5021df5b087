//! A plugin's library and the shared libraries it loads: a project's trust covers the files of
//! its plugin directories only, so a project plugin whose library lies outside its directory,
//! or that loads shared libraries from a search path outside it, is refused by every command;
//! an installed plugin doing the latter is said aloud by `install`, `enable`, `use` and `list`.

use ctxhost_tests::{corpus_dir, library, Run, Sandbox};

fn listed<'a>(list: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    list.as_array()
        .unwrap()
        .iter()
        .find(|row| row["name"] == name)
        .unwrap_or_else(|| panic!("no row for {name}: {list}"))
}

fn run_transcript(sandbox: &Sandbox) -> Run {
    let transcript = corpus_dir().join("ctf__web__i_got_id_demo.json");
    sandbox.ctxhost_in_project(&["run", transcript.to_str().unwrap(), "--json"], &[])
}

/// A trusted project whose plugin `echo` names its library by a path outside its directory
/// (`written`, relative to the plugin directory, or absolute); the library is at `build/`.
fn project_with_outside_library(written: impl FnOnce(&Sandbox) -> String) -> Sandbox {
    let sandbox = Sandbox::new();
    let built = library("ctxhost_fixture_echo");
    std::fs::create_dir_all(sandbox.path().join("build")).unwrap();
    std::fs::copy(&built, sandbox.path().join("build/libx.so")).unwrap();
    let written = written(&sandbox);
    sandbox.write_descriptor("echo", &format!("name: echo\nlibrary: {written}\n"));
    sandbox.write_config("context:\n  engine: echo\nmodel:\n  context_length: 8000\n");
    let trust = sandbox.ctxhost_in_project(&["trust"], &[]);
    assert!(trust.success(), "{}", trust.stderr);
    sandbox
}

fn assert_refused_everywhere(sandbox: &Sandbox, written: &str) {
    let list = sandbox.ctxhost_in_project(&["plugins", "list", "--json"], &[]);
    assert!(list.success(), "{}", list.stderr);
    let rows = list.json();
    let row = listed(&rows, "echo");
    assert_eq!(row["state"], "broken", "{row}");
    let problem = row["problem"].as_str().unwrap();
    let written = format!("`library: {written}`");
    for expected in [written.as_str(), "outside the plugin's directory"] {
        assert!(problem.contains(expected), "{expected}: {problem}");
    }

    let select = sandbox.ctxhost_in_project(&["plugins", "use", "echo"], &[]);
    assert_eq!(select.code, Some(1), "{}", select.stdout);
    assert!(
        select.stderr.contains("outside the plugin's directory"),
        "{}",
        select.stderr
    );

    let run = run_transcript(sandbox);
    assert_eq!(
        run.code,
        Some(3),
        "not the engine asked for: {}",
        run.stderr
    );
    assert_eq!(run.json()["runs"][0]["engine"], "compressor");
    let lines: Vec<&str> = run
        .stderr_lines()
        .into_iter()
        .filter(|l| l.contains("outside the plugin's directory"))
        .collect();
    assert_eq!(lines.len(), 1, "one line: {}", run.stderr);
    assert!(lines[0].contains("library"), "{}", lines[0]);
}

#[test]
fn a_project_plugin_whose_library_climbs_out_of_its_directory_is_refused() {
    let written = "../../../build/libx.so";
    let sandbox = project_with_outside_library(|_| written.to_string());
    assert_refused_everywhere(&sandbox, written);

    // Swapping the library outside the trusted tree runs no new code: nothing loads it.
    std::fs::copy(
        library("ctxhost_engine_window"),
        sandbox.path().join("build/libx.so"),
    )
    .unwrap();
    let run = run_transcript(&sandbox);
    assert_eq!(
        run.json()["runs"][0]["engine"],
        "compressor",
        "{}",
        run.stderr
    );

    // Inside its directory, the same library loads.
    std::fs::copy(
        library("ctxhost_fixture_echo"),
        sandbox.plugin_dir("echo").join("libx.so"),
    )
    .unwrap();
    sandbox.write_descriptor("echo", "name: echo\nlibrary: libx.so\n");
    assert!(sandbox.ctxhost_in_project(&["trust"], &[]).success());
    let run = run_transcript(&sandbox);
    assert!(run.success(), "{}", run.stderr);
    assert_eq!(run.json()["runs"][0]["engine"], "echo");
}

#[test]
fn a_project_plugin_whose_library_is_an_absolute_path_is_refused() {
    let mut written = String::new();
    let sandbox = project_with_outside_library(|sandbox| {
        written = sandbox.path().join("build/libx.so").display().to_string();
        written.clone()
    });
    assert_refused_everywhere(&sandbox, &written);
}

#[test]
fn a_project_plugin_loading_shared_libraries_from_outside_its_directory_is_refused() {
    let sandbox = Sandbox::new();
    sandbox.add_plugin("foreign-rpath", "ctxhost_fixture_foreign_rpath");
    sandbox.write_config("context:\n  engine: foreign-rpath\nmodel:\n  context_length: 8000\n");
    assert!(sandbox.ctxhost_in_project(&["trust"], &[]).success());

    let list = sandbox.ctxhost_in_project(&["plugins", "list", "--json"], &[]);
    let rows = list.json();
    let row = listed(&rows, "foreign-rpath");
    assert_eq!(row["state"], "broken", "{row}");
    assert!(
        row["problem"]
            .as_str()
            .unwrap()
            .contains("/opt/ctxhost-fixture-elsewhere/lib"),
        "{row}"
    );
    let select = sandbox.ctxhost_in_project(&["plugins", "use", "foreign-rpath"], &[]);
    assert_eq!(select.code, Some(1), "{}", select.stdout);
    assert!(select.stderr.contains("RUNPATH"), "{}", select.stderr);
    let run = run_transcript(&sandbox);
    assert_eq!(
        run.json()["runs"][0]["engine"],
        "compressor",
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .lines()
            .any(|l| l.contains("foreign-rpath") && l.contains("RUNPATH")),
        "{}",
        run.stderr
    );
}

#[test]
fn an_installed_plugin_loading_shared_libraries_from_outside_its_directory_is_said_aloud() {
    let sandbox = Sandbox::new();
    sandbox.write_config("context:\n  engine: compressor\n");
    let staged = sandbox.path().join("staged");
    std::fs::create_dir_all(&staged).unwrap();
    let built = library("ctxhost_fixture_foreign_rpath");
    let copied = staged.join(built.file_name().unwrap());
    std::fs::copy(&built, &copied).unwrap();
    std::fs::write(
        staged.join("plugin.yaml"),
        "name: foreign-rpath\nlibrary: ctxhost_fixture_foreign_rpath\n",
    )
    .unwrap();
    let says_it = |run: &Run, command: &str| {
        let lines: Vec<&str> = run
            .stderr_lines()
            .into_iter()
            .filter(|l| l.starts_with("warning: foreign-rpath: ") && l.contains("RUNPATH"))
            .collect();
        assert_eq!(lines.len(), 1, "{command}: {}", run.stderr);
        assert!(
            lines[0].contains("/opt/ctxhost-fixture-elsewhere/lib"),
            "{command}: {}",
            lines[0]
        );
    };

    let install = sandbox.ctxhost(&["plugins", "install", staged.to_str().unwrap()]);
    assert!(install.success(), "{}", install.stderr);
    says_it(&install, "install");
    let enable = sandbox.ctxhost(&["plugins", "enable", "foreign-rpath"]);
    assert!(enable.success(), "{}", enable.stderr);
    says_it(&enable, "enable");
    let select = sandbox.ctxhost(&["plugins", "use", "foreign-rpath"]);
    assert!(select.success(), "{}", select.stderr);
    says_it(&select, "use");
    let list = sandbox.ctxhost(&["plugins", "list", "--json"]);
    assert!(list.success(), "{}", list.stderr);
    says_it(&list, "list");
    let rows = list.json();
    assert_eq!(listed(&rows, "foreign-rpath")["state"], "active");
}
