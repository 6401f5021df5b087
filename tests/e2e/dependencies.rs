//! The built-in engine stays network-free: no HTTP client or async runtime in the compressor's
//! (or the offline summary's) dependency closure, as `cargo tree` sees it.

use std::process::Command;

use ctxhost_tests::crate_source::CrateSource;
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
    "ctxhost-plugins",
    "ctxhost-isolation",
    "ctxhost-wire",
    "ctxhost-agents",
    "ctxhost-gateway",
    "ctxhost-gateway-state",
    "ctxhost-gateway-wire",
    "ctxhost",
    "ctxhost-summarizer",
    "ctxhost-plugin-host",
    "ctxhost-tokens",
    "ctxhost-metrics",
    "ctxhost-redact",
    "ctxhost-python",
];

/// Crates under `host/` that both sides may use.
const SHARED_LEAVES: &[&str] = &[
    "ctxhost-costs",
    "ctxhost-offline-summary",
    "ctxhost-quality",
    "ctxhost-pg",
    "ctxhost-private-files",
    "ctxhost-redacted-url",
];

#[test]
fn host_crates_depend_downwards_only_and_no_engine_depends_on_the_host() {
    let packages = ctxhost_tests::workspace_packages();
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
    // Plugins on disk and isolation in child processes sit below core, beside each other:
    // config and the plugin host's ABI side only.
    for lower in ["ctxhost-plugins", "ctxhost-isolation"] {
        assert_eq!(
            on_host(lower),
            vec![
                "ctxhost-config".to_string(),
                "ctxhost-plugin-host".to_string()
            ],
            "{lower}"
        );
    }
    // core → plugins, isolation, config (and the summarizer and plugin host beside it); never
    // up to the gateway.
    for below in ["ctxhost-plugins", "ctxhost-isolation"] {
        assert!(
            direct("ctxhost-core").contains(&below.to_string()),
            "{below}"
        );
    }
    for upper in ["ctxhost-gateway", "ctxhost", "ctxhost-wire"] {
        assert!(
            !on_host("ctxhost-core").contains(&upper.to_string()),
            "core uses {upper}"
        );
    }
    // The agents' profiles sit on the formats, under the gateway that uses them.
    assert_eq!(on_host("ctxhost-agents"), vec!["ctxhost-wire".to_string()]);
    assert!(direct("ctxhost-gateway").contains(&"ctxhost-agents".to_string()));
    // The wire adapters sit on the formats, the agents' profiles, the settings and the
    // session's record (why a compression ran), under the gateway that drives them; never on
    // core or the gateway.
    assert_eq!(
        on_host("ctxhost-gateway-wire"),
        vec![
            "ctxhost-agents".to_string(),
            "ctxhost-config".to_string(),
            "ctxhost-gateway-state".to_string(),
            "ctxhost-wire".to_string(),
        ]
    );
    assert!(direct("ctxhost-gateway").contains(&"ctxhost-gateway-wire".to_string()));
    // The quality harness and the corpus: the binary's and engine authors' tests', on no host
    // crate; the binary runs it without linking the SDK's test support.
    assert_eq!(on_host("ctxhost-quality"), Vec::<String>::new());
    assert!(direct("ctxhost").contains(&"ctxhost-quality".to_string()));
    assert!(direct("ctxhost-sdk-test").contains(&"ctxhost-quality".to_string()));
    assert!(
        !normal_dependencies("ctxhost").contains(&"ctxhost-sdk-test".to_string()),
        "the binary links the SDK's test support"
    );
    // The gateway never depends on the binary; the binary is the top.
    assert!(!on_host("ctxhost-gateway").contains(&"ctxhost".to_string()));
    assert!(direct("ctxhost").contains(&"ctxhost-gateway".to_string()));
    // The Python package is the top beside the binary: it runs the binary's library, and no
    // crate depends on it.
    assert!(direct("ctxhost-python").contains(&"ctxhost".to_string()));
    for (name, _, dependencies) in &packages {
        assert!(
            !dependencies.contains(&"ctxhost-python".to_string()),
            "{name} depends on the Python package"
        );
    }
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
    for (name, dir, _) in ctxhost_tests::workspace_packages() {
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

/// Every workspace crate with a `src/`, its sources read without test code.
fn crate_sources() -> Vec<(String, String, CrateSource)> {
    ctxhost_tests::workspace_packages()
        .into_iter()
        .filter_map(|(name, dir, _)| {
            let src = workspace_root().join(&dir).join("src");
            src.is_dir().then(|| (name, dir, CrateSource::read(&src)))
        })
        .collect()
}

/// A crate is cut where a job ends; one this large is a prompt to look for two jobs. Test code
/// (`#[cfg(test)]` items and modules; `tests/` and `benches/` are outside `src/`) is not
/// counted. `--nocapture` prints every crate's figures.
#[test]
fn no_crate_holds_more_than_8000_lines_of_its_own() {
    let mut over = Vec::new();
    let mut table = vec![format!(
        "{:<30} {:>10} {:>12}",
        "crate", "lines", "public items"
    )];
    let sources = crate_sources();
    assert!(sources.len() >= 15, "read {} crates", sources.len());
    for (name, dir, source) in &sources {
        let lines = source.lines();
        table.push(format!(
            "{name:<30} {lines:>10} {:>12}",
            source.public_items()
        ));
        if lines > 8000 {
            over.push(format!(
                "{name}: {lines} lines of non-test code in {dir}/src"
            ));
        }
    }
    println!("{}", table.join("\n"));
    assert!(over.is_empty(), "{over:?}");
}

#[test]
fn the_size_check_leaves_test_code_out() {
    // core's sources hold unit tests: their lines are not counted, the rest are.
    let src = workspace_root().join("host/core/src");
    let source = CrateSource::read(&src);
    let all: usize = ctxhost_tests::module_graph::ModuleGraph::read(&src)
        .files
        .values()
        .map(|file| std::fs::read_to_string(file).unwrap().lines().count())
        .sum();
    assert!(source.lines() > 1000, "{}", source.lines());
    assert!(source.lines() < all, "{} of {all}", source.lines());
    assert!(source.public_items() > 20, "{}", source.public_items());
}

/// A crate re-exporting another workspace crate's items hides where they live: callers import
/// from the crate that owns the item.
#[test]
fn no_crate_re_exports_another_workspace_crate() {
    let names: Vec<String> = ctxhost_tests::workspace_packages()
        .into_iter()
        .map(|(name, _, _)| name.replace('-', "_"))
        .collect();
    assert!(names.contains(&"ctxhost_config".to_string()), "{names:?}");
    let mut found = Vec::new();
    for (name, _, source) in crate_sources() {
        let own = name.replace('-', "_");
        let others: Vec<String> = names.iter().filter(|n| **n != own).cloned().collect();
        found.extend(source.re_exports_of(&others));
    }
    assert!(
        found.is_empty(),
        "re-exports across crates:\n{}",
        found.join("\n")
    );
}
