//! ARCHITECTURE.md's crate map against the workspace, as `cargo metadata` sees it: every member
//! crate has a row with its folder and package name, every row names a member crate in the
//! folder it says, and every row's layer is one the map defines.

use std::collections::{BTreeMap, BTreeSet};

use ctxhost_tests::workspace_root;

/// One row of the crate map.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Row {
    folder: String,
    package: String,
    job: String,
    layer: String,
}

/// The crate map section of ARCHITECTURE.md: the layers it defines (the bold names above the
/// table) and its rows.
struct CrateMap {
    layers: BTreeSet<String>,
    rows: Vec<Row>,
}

fn read_crate_map(text: &str) -> CrateMap {
    let section = text
        .split("\n## ")
        .find(|section| section.starts_with("Crate map"))
        .expect("ARCHITECTURE.md has a `## Crate map` section");
    let (intro, _) = section
        .split_once("\n|")
        .expect("the crate map section holds a table");
    let layers = intro
        .split("**")
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect();
    let rows = section
        .lines()
        .filter(|line| line.starts_with("| `"))
        .map(|line| {
            let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
            assert_eq!(cells.len(), 4, "a row has four cells: {line}");
            Row {
                folder: cells[0].trim_matches('`').to_string(),
                package: cells[1].trim_matches('`').to_string(),
                job: cells[2].to_string(),
                layer: cells[3].to_string(),
            }
        })
        .collect();
    CrateMap { layers, rows }
}

/// The workspace's member crates: folder (relative to the root) to package name.
fn workspace_members() -> BTreeMap<String, String> {
    ctxhost_tests::workspace_packages()
        .into_iter()
        .map(|(name, dir, _)| (dir, name))
        .collect()
}

/// What is wrong with `map` against `members`, one line each (empty when the map is true).
fn differences(map: &CrateMap, members: &BTreeMap<String, String>) -> Vec<String> {
    let mut found = Vec::new();
    let mut seen = BTreeSet::new();
    for row in &map.rows {
        if !seen.insert(row.folder.clone()) {
            found.push(format!("`{}` has more than one row", row.folder));
        }
        match members.get(&row.folder) {
            None => found.push(format!(
                "the map names `{}` (`{}`), which is no workspace crate's folder",
                row.folder, row.package
            )),
            Some(package) if *package != row.package => found.push(format!(
                "the map names `{}` as `{}`; its package is `{package}`",
                row.folder, row.package
            )),
            Some(_) => {}
        }
        if row.job.is_empty() {
            found.push(format!("`{}` has no job", row.folder));
        }
        if !map.layers.contains(&row.layer) {
            found.push(format!(
                "`{}` is in layer `{}`, which the map does not define ({:?})",
                row.folder, row.layer, map.layers
            ));
        }
    }
    for (folder, package) in members {
        if !map.rows.iter().any(|row| row.folder == *folder) {
            found.push(format!(
                "workspace crate `{package}` (`{folder}`) is missing from the map: add \
                 | `{folder}` | `{package}` | its one job | its layer |"
            ));
        }
    }
    found
}

#[test]
fn the_crate_map_names_every_workspace_crate_and_only_those() {
    let text = std::fs::read_to_string(workspace_root().join("ARCHITECTURE.md"))
        .expect("ARCHITECTURE.md at the repository's root");
    let map = read_crate_map(&text);
    let members = workspace_members();
    assert!(members.len() >= 20, "cargo metadata listed {members:?}");
    let found = differences(&map, &members);
    assert!(
        found.is_empty(),
        "ARCHITECTURE.md's crate map and the workspace disagree:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_reports_a_missing_crate_a_stray_row_and_an_unknown_layer() {
    let map = read_crate_map(
        "# x\n\n## Crate map\n\n- **engine**: engines.\n\n\
         | folder | package | its one job | layer |\n| --- | --- | --- | --- |\n\
         | `engines/sdk` | `ctxhost-sdk` | the contract | engine |\n\
         | `host/gone` | `ctxhost-gone` | moved away | engine |\n\
         | `host/config` | `ctxhost-settings` | settings | engine |\n\
         | `host/wire` | `ctxhost-wire` | formats | nowhere |\n\n## Next\n",
    );
    assert_eq!(map.rows.len(), 4);
    let members: BTreeMap<String, String> = [
        ("engines/sdk", "ctxhost-sdk"),
        ("host/config", "ctxhost-config"),
        ("host/wire", "ctxhost-wire"),
        ("host/gateway", "ctxhost-gateway"),
    ]
    .into_iter()
    .map(|(folder, package)| (folder.to_string(), package.to_string()))
    .collect();
    let found = differences(&map, &members);
    assert_eq!(found.len(), 4, "{found:#?}");
    assert!(found[0].contains("`host/gone`"), "{found:#?}");
    assert!(
        found[1].contains("its package is `ctxhost-config`"),
        "{found:#?}"
    );
    assert!(found[2].contains("layer `nowhere`"), "{found:#?}");
    assert!(
        found[3].contains("`ctxhost-gateway` (`host/gateway`) is missing"),
        "{found:#?}"
    );
}
