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
