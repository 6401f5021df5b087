//! The built-in engine stays network-free: no HTTP client or async runtime in the compressor's
//! (or the offline summary's) dependency closure, as `cargo tree` sees it.

use std::process::Command;

use ctxhost_tests::workspace_root;

/// Crates that would mean a network stack or an async runtime.
const NETWORK: &[&str] = &["tokio", "reqwest", "hyper", "rustls", "mio"];

/// The crate names in `package`'s normal (non-dev, non-build) dependency closure.
fn normal_dependencies(package: &str) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let output = Command::new(cargo)
        .current_dir(workspace_root())
        .args(["tree", "--offline", "-p", package, "-e", "normal"])
        .args(["--prefix", "none", "--format", "{p}"])
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "cargo tree -p {package} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

fn network_crates(package: &str) -> Vec<String> {
    let mut found: Vec<String> = normal_dependencies(package)
        .into_iter()
        .filter(|name| NETWORK.contains(&name.as_str()))
        .collect();
    found.sort();
    found.dedup();
    found
}

#[test]
fn the_check_sees_a_network_stack_where_there_is_one() {
    // The LLM clients' crate has one: the check below cannot pass by seeing nothing.
    let found = network_crates("ctxhost-summarizer");
    assert!(found.contains(&"reqwest".to_string()), "{found:?}");
    assert!(found.contains(&"tokio".to_string()), "{found:?}");
}

#[test]
fn the_compressor_and_the_offline_summary_pull_in_no_network_stack() {
    for package in ["ctxhost-compressor", "ctxhost-offline-summary"] {
        let dependencies = normal_dependencies(package);
        assert!(
            dependencies.contains(&"ctxhost-sdk".to_string()),
            "{package}: {dependencies:?}"
        );
        assert_eq!(network_crates(package), Vec::<String>::new(), "{package}");
    }
}

/// The host's own crates: what engines may not depend on. Shared leaves (the offline summary,
/// which the built-in compressor uses) are neither host nor engine.
const HOST_CRATES: &[&str] = &[
    "ctxhost-config",
    "ctxhost-core",
    "ctxhost-wire",
    "ctxhost-agents",
    "ctxhost-gateway",
    "ctxhost-gateway-state",
    "ctxhost",
    "ctxhost-summarizer",
    "ctxhost-plugin-host",
    "ctxhost-tokens",
    "ctxhost-redact",
];

/// Crates under `host/` that both sides may use.
const SHARED_LEAVES: &[&str] = &[
    "ctxhost-offline-summary",
    "ctxhost-pg",
    "ctxhost-private-files",
    "ctxhost-redacted-url",
];

/// Every workspace package: name, manifest directory relative to the workspace, and the
/// names of its normal dependencies.
fn workspace_packages() -> Vec<(String, String, Vec<String>)> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let output = Command::new(cargo)
        .current_dir(workspace_root())
        .args([
            "metadata",
            "--offline",
            "--no-deps",
            "--format-version",
            "1",
        ])
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let root = workspace_root()
        .canonicalize()
        .expect("the workspace exists");
    metadata["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|package| {
            let manifest = std::path::Path::new(package["manifest_path"].as_str().unwrap());
            let dir = manifest.parent().unwrap();
            let dir = dir.strip_prefix(&root).unwrap_or(dir);
            let dependencies = package["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["kind"].is_null())
                .map(|d| d["name"].as_str().unwrap().to_string())
                .collect();
            (
                package["name"].as_str().unwrap().to_string(),
                dir.to_string_lossy().into_owned(),
                dependencies,
            )
        })
        .collect()
}

#[test]
fn host_crates_depend_downwards_only_and_no_engine_depends_on_the_host() {
    let packages = workspace_packages();
    let direct = |name: &str| -> Vec<String> {
        packages
            .iter()
            .find(|(n, _, _)| n == name)
            .unwrap_or_else(|| panic!("{name} is a workspace package"))
            .2
            .clone()
    };
    let on_host = |name: &str| -> Vec<String> {
        let mut found: Vec<String> = normal_dependencies(name)
            .into_iter()
            .filter(|d| d != name && HOST_CRATES.contains(&d.as_str()))
            .collect();
        found.sort();
        found.dedup();
        found
    };
    // Every crate under host/ is classified, so a new one has to say which side it is on.
    for (name, dir, _) in &packages {
        if dir.starts_with("host/") {
            assert!(
                HOST_CRATES.contains(&name.as_str()) || SHARED_LEAVES.contains(&name.as_str()),
                "{name} ({dir}) is neither a host crate nor a shared leaf: add it to one list"
            );
        }
    }
    // The settings at the bottom: no other host crate, however indirectly.
    assert_eq!(on_host("ctxhost-config"), Vec::<String>::new());
    // Formats and the plugin host's ABI side know nothing of the host's features.
    assert_eq!(on_host("ctxhost-wire"), Vec::<String>::new());
    assert_eq!(on_host("ctxhost-plugin-host"), Vec::<String>::new());
    assert_eq!(
        on_host("ctxhost-summarizer"),
        vec!["ctxhost-config".to_string()]
    );
    // core → config (and the summarizer and plugin host beside it); never up to the gateway.
    for upper in ["ctxhost-gateway", "ctxhost", "ctxhost-wire"] {
        assert!(
            !on_host("ctxhost-core").contains(&upper.to_string()),
            "core uses {upper}"
        );
    }
    // The agents' profiles sit on the formats, under the gateway that uses them.
    assert_eq!(on_host("ctxhost-agents"), vec!["ctxhost-wire".to_string()]);
    assert!(direct("ctxhost-gateway").contains(&"ctxhost-agents".to_string()));
    // The gateway never depends on the binary; the binary is the top.
    assert!(!on_host("ctxhost-gateway").contains(&"ctxhost".to_string()));
    assert!(direct("ctxhost").contains(&"ctxhost-gateway".to_string()));
    // No engine (SDK, test support, compressor, plugins, fixtures) depends on any host crate.
    let engines: Vec<&String> = packages
        .iter()
        .filter(|(_, dir, _)| {
            dir.starts_with("engines/")
                || dir.starts_with("plugins/")
                || dir.starts_with("tests/fixtures/")
        })
        .map(|(name, _, _)| name)
        .collect();
    assert!(engines.len() >= 6, "{engines:?}");
    for engine in engines {
        assert_eq!(on_host(engine), Vec::<String>::new(), "{engine}");
    }
}

#[test]
fn no_two_modules_of_a_crate_import_each_other_in_a_loop() {
    use ctxhost_tests::module_graph::ModuleGraph;
    let mut loops = Vec::new();
    let mut crates = 0;
    for (name, dir, _) in workspace_packages() {
        let src = workspace_root().join(&dir).join("src");
        if !src.is_dir() {
            continue;
        }
        crates += 1;
        for found in ModuleGraph::read(&src).loops() {
            loops.push(format!("{name} ({dir}/src) {found}"));
        }
    }
    assert!(crates >= 15, "read {crates} crates");
    assert!(
        loops.is_empty(),
        "modules importing each other:\n{}",
        loops.join("\n")
    );
}

#[test]
fn no_crate_holds_more_than_8000_lines_of_its_own() {
    let mut over = Vec::new();
    for (name, dir, _) in workspace_packages() {
        let src = workspace_root().join(&dir).join("src");
        if !src.is_dir() {
            continue;
        }
        let lines = ctxhost_tests::module_graph::ModuleGraph::read(&src)
            .files
            .values()
            .map(|file| {
                std::fs::read_to_string(file)
                    .expect("readable")
                    .lines()
                    .count()
            })
            .sum::<usize>();
        if lines > 8000 {
            over.push(format!("{name}: {lines} lines in {dir}/src"));
        }
    }
    assert!(over.is_empty(), "{over:?}");
}
