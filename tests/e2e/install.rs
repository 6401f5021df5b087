//! Installed, not only checked out: where a checkout's plugin finds its library (beside the
//! running ctxhost, and nowhere else), and `plugins install --shipped` making the shipped
//! engines available to a config outside the checkout.

use std::path::{Path, PathBuf};
use std::process::Command;

use ctxhost_tests::{binary, corpus_dir, library, Run, Sandbox};
use serde_json::Value;

fn transcript() -> String {
    corpus_dir()
        .join("ctf__pwn__warmup.json")
        .display()
        .to_string()
}

const WINDOW: &str = "ctxhost_engine_window";
const LCM: &str = "ctxhost_engine_lcm";

fn file_name(lib_name: &str) -> String {
    format!(
        "{}{lib_name}{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    )
}

/// `plugins list --json`'s row for `name`.
fn row(run: &Run, name: &str) -> Value {
    assert!(run.success(), "{}", run.stderr);
    run.json()
        .as_array()
        .expect("a list")
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no row for {name}: {}", run.stdout))
        .clone()
}

/// The engine that produced `compress`'s summary line (its last stderr line).
fn compressed_by(run: &Run) -> String {
    assert!(run.success(), "{}", run.stderr);
    let last = run.stderr_lines().last().copied().unwrap_or_default();
    last.split(':').next().unwrap_or_default().to_string()
}

/// A hard link of `from` at `to` (a copy where links are not possible), so a test can put the
/// real binary or a real library somewhere else without copying hundreds of megabytes.
fn link(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.parent().expect("a parent")).expect("parent dirs");
    if std::fs::hard_link(from, to).is_err() {
        std::fs::copy(from, to).expect("copy");
    }
}

/// Puts a library at `path` that is not the engine its name says (the echo fixture): loading
/// it instead of the right one fails the name check, so picking it cannot go unnoticed.
fn decoy(path: &Path) {
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("parent dirs");
    std::fs::copy(library("ctxhost_fixture_echo"), path).expect("copy the decoy");
}

/// A checkout's plugin directory beside its config: `plugin.yaml` naming the library, no
/// library beside it.
fn checkout_plugin(sandbox: &Sandbox, name: &str, lib_name: &str) {
    if !sandbox.config_path().exists() {
        sandbox.write_config("context:\n  engine: compressor\n");
    }
    sandbox.write_descriptor(
        name,
        &format!("name: {name}\nversion: 0.1.0\nlibrary: {lib_name}\n"),
    );
}

#[test]
fn a_checkout_plugin_without_its_library_loads_the_one_beside_the_binary() {
    let sandbox = Sandbox::new();
    checkout_plugin(&sandbox, "window", WINDOW);
    // A target directory named at run time holds other builds; it is not looked at.
    let elsewhere = sandbox.path().join("elsewhere");
    for profile in ["debug", "release"] {
        decoy(&elsewhere.join(profile).join(file_name(WINDOW)));
    }
    let elsewhere = elsewhere.display().to_string();
    let env = [("CARGO_TARGET_DIR", elsewhere.as_str())];

    let list = sandbox.ctxhost_with_env(&["plugins", "list", "--json"], &env);
    let window = row(&list, "window");
    assert_eq!(window["state"], "enabled", "{window}");
    assert_eq!(window["source"], "repo plugin dir");
    assert_eq!(
        PathBuf::from(window["path"].as_str().unwrap()),
        library(WINDOW),
        "the library beside the binary"
    );
    let run = sandbox.ctxhost_with_env(&["compress", "--engine", "window", &transcript()], &env);
    assert_eq!(compressed_by(&run), "window", "{}", run.stderr);
}

#[test]
fn a_library_beside_plugin_yaml_comes_before_the_one_beside_the_binary() {
    let sandbox = Sandbox::new();
    checkout_plugin(&sandbox, "window", WINDOW);
    let beside = sandbox.plugin_dir("window").join(file_name(WINDOW));
    decoy(&beside);
    let list = sandbox.ctxhost(&["plugins", "list", "--json"]);
    let window = row(&list, "window");
    assert_eq!(PathBuf::from(window["path"].as_str().unwrap()), beside);
    assert_eq!(
        window["state"], "broken",
        "the decoy is what loads: {window}"
    );
    assert!(
        window["problem"]
            .as_str()
            .unwrap()
            .contains("the library is engine 'echo'"),
        "{window}"
    );
}

/// A checkout of its own: a workspace with a plugin directory, `target/debug/ctxhost` with the
/// window library built beside it, and a newer build of another profile in `target/release`.
struct Checkout {
    sandbox: Sandbox,
}

impl Checkout {
    fn new() -> Self {
        let sandbox = Sandbox::new();
        sandbox.write(
            "Cargo.toml",
            "[workspace]\nmembers = [\"plugins/context_engine/*\"]\n",
        );
        checkout_plugin(&sandbox, "window", WINDOW);
        checkout_plugin(&sandbox, "lcm", LCM);
        sandbox.write("plugins/context_engine/lcm/engine/Cargo.toml", "");
        let debug = sandbox.path().join("target/debug");
        link(&binary(), &debug.join(binary().file_name().unwrap()));
        link(&library(WINDOW), &debug.join(file_name(WINDOW)));
        std::fs::create_dir_all(debug.join(".fingerprint")).unwrap();
        // Written last: the newest library of all, in the other profile.
        decoy(
            &sandbox
                .path()
                .join("target/release")
                .join(file_name(WINDOW)),
        );
        Checkout { sandbox }
    }

    fn ctxhost(&self, args: &[&str]) -> Run {
        let exe = self
            .sandbox
            .path()
            .join("target/debug")
            .join(binary().file_name().unwrap());
        let output = Command::new(exe)
            .current_dir(self.sandbox.path())
            .env("CTXHOST_HOME", self.sandbox.home())
            .env_remove("CARGO_TARGET_DIR")
            .args(args)
            .output()
            .expect("ctxhost runs");
        Run::from(output)
    }
}

#[test]
fn a_newer_library_in_another_profile_directory_is_not_picked() {
    let checkout = Checkout::new();
    let list = checkout.ctxhost(&["plugins", "list", "--json"]);
    let window = row(&list, "window");
    assert_eq!(window["state"], "enabled", "{window}");
    assert_eq!(
        PathBuf::from(window["path"].as_str().unwrap()),
        checkout
            .sandbox
            .path()
            .join("target/debug")
            .join(file_name(WINDOW))
    );
    let run = checkout.ctxhost(&["compress", "--engine", "window", &transcript()]);
    assert_eq!(compressed_by(&run), "window", "{}", run.stderr);
}

#[test]
fn a_missing_library_says_where_it_looked_and_what_to_build() {
    let checkout = Checkout::new();
    let lcm = row(&checkout.ctxhost(&["plugins", "list", "--json"]), "lcm");
    assert_eq!(lcm["state"], "broken", "{lcm}");
    let line = checkout.sandbox.redact(lcm["problem"].as_str().unwrap());
    assert!(
        line.starts_with(&format!(
            "library [SANDBOX]/plugins/context_engine/lcm/{} not found (nor beside ctxhost in [SANDBOX]/target/debug); ",
            file_name(LCM)
        )),
        "{line}"
    );
    // The binary is a debug build: the command builds the same profile.
    assert!(
        line.contains("build it beside ctxhost with `cargo build -p ctxhost-engine-lcm`"),
        "{line}"
    );
}

#[test]
fn install_shipped_installs_and_approves_both_engines_for_a_config_outside_the_checkout() {
    let sandbox = Sandbox::new();
    let run = sandbox.ctxhost(&["plugins", "install", "--shipped"]);
    assert!(run.success(), "{}", run.stderr);
    assert!(run.stdout.contains("installed lcm 0.1.0"), "{}", run.stdout);
    assert!(
        run.stdout.contains("installed window 0.1.0"),
        "{}",
        run.stdout
    );
    // No config existed: the approvals went to the home's.
    let config = sandbox.home().join("config.yaml");
    let text = std::fs::read_to_string(&config).expect("the home config was written");
    for (name, lib_name) in [("lcm", LCM), ("window", WINDOW)] {
        let installed = sandbox.installed_dir(name).join(file_name(lib_name));
        let tree =
            ctxhost_config::fingerprint::tree_sha256(&sandbox.installed_dir(name), None).unwrap();
        assert!(
            text.contains(&format!("{name}: tree-sha256:{tree}")),
            "{name} approved by the hash of its directory: {text}"
        );
        // What it prints for the engine is that same hash, labelled as what it is.
        assert!(
            run.stdout
                .contains(&format!("  tree hash tree-sha256:{tree}\n")),
            "{}",
            run.stdout
        );
        let row = row(&sandbox.ctxhost(&["plugins", "list", "--json"]), name);
        assert_eq!(row["source"], "user plugin dir", "{row}");
        assert_eq!(row["state"], "enabled", "{row}");
        assert_eq!(PathBuf::from(row["path"].as_str().unwrap()), installed);
    }

    let run = sandbox.ctxhost(&["compress", "--engine", "lcm", &transcript()]);
    assert_eq!(compressed_by(&run), "lcm", "{}", run.stderr);
    let run = sandbox.ctxhost(&["plugins", "use", "window"]);
    assert!(run.success(), "{}", run.stderr);
    let run = sandbox.ctxhost(&["compress", &transcript()]);
    assert_eq!(compressed_by(&run), "window", "{}", run.stderr);
}

#[test]
fn install_shipped_twice_keeps_the_same_build_and_replaces_a_different_one() {
    let sandbox = Sandbox::new();
    assert!(sandbox
        .ctxhost(&["plugins", "install", "--shipped"])
        .success());
    let config = sandbox.home().join("config.yaml");
    let approved = std::fs::read_to_string(&config).unwrap();
    let lcm = sandbox.installed_dir("lcm").join(file_name(LCM));
    let before = inode(&lcm);

    let again = sandbox.ctxhost(&["plugins", "install", "--shipped"]);
    assert!(again.success(), "{}", again.stderr);
    assert!(
        again.stdout.contains("lcm 0.1.0 is already installed in")
            && again.stdout.contains("(same build)"),
        "{}",
        again.stdout
    );
    assert_eq!(
        inode(&lcm),
        before,
        "the installed library was not rewritten"
    );
    assert_eq!(std::fs::read_to_string(&config).unwrap(), approved);

    // An lcm that is not this build (its plugin.yaml edited here) is replaced by a new
    // directory, never overwritten in place.
    let descriptor = sandbox.installed_dir("lcm").join("plugin.yaml");
    let edited = std::fs::read_to_string(&descriptor)
        .unwrap()
        .replace("description:", "description: edited;");
    std::fs::write(&descriptor, edited).unwrap();
    let third = sandbox.ctxhost(&["plugins", "install", "--shipped"]);
    assert!(third.success(), "{}", third.stderr);
    assert!(
        third.stdout.contains("installed lcm 0.1.0 in")
            && third.stdout.contains("(replaced 0.1.0)"),
        "{}",
        third.stdout
    );
    assert_ne!(inode(&lcm), before, "a new file, not the old one rewritten");
    assert!(!std::fs::read_to_string(&descriptor)
        .unwrap()
        .contains("edited"));
    let run = sandbox.ctxhost(&["compress", "--engine", "lcm", &transcript()]);
    assert_eq!(compressed_by(&run), "lcm", "still approved: {}", run.stderr);
}

#[cfg(unix)]
fn inode(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).expect("installed").ino()
}

#[cfg(not(unix))]
fn inode(path: &Path) -> std::time::SystemTime {
    std::fs::metadata(path)
        .and_then(|m| m.created())
        .expect("installed")
}

#[test]
fn install_shipped_with_a_path_is_a_usage_error() {
    let sandbox = Sandbox::new();
    let window = library(WINDOW);
    let run = sandbox.ctxhost(&["plugins", "install", "--shipped", window.to_str().unwrap()]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(
        run.stderr.contains("'--shipped' cannot be used with"),
        "{}",
        run.stderr
    );
    assert!(
        !sandbox.home().join("plugins").exists(),
        "nothing installed"
    );
}
