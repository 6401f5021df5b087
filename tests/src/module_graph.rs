//! The import graph between the modules of one crate, read from its sources, so a test can
//! refuse two modules that import each other in a loop.
//!
//! Modules are the crate's files (`lib.rs`/`main.rs` the root, `a.rs` or `a/mod.rs` the module
//! `a`, `a/b.rs` the module `a::b`). Every `crate::…` and `super::…` path outside comments is an
//! import of the deepest module it names. Only imports between *siblings* count: a module using
//! its parent's items (its facade) or its own children is how Rust modules are built; siblings
//! that need each other are one module split in two, or a type that belongs lower down.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module's path inside its crate (`[]` is the crate root).
pub type ModulePath = Vec<String>;

/// The modules of one crate and the sibling imports between them.
#[derive(Debug)]
pub struct ModuleGraph {
    /// Each module and the file it is in.
    pub files: BTreeMap<ModulePath, PathBuf>,
    /// Parent module → (child → children of the same parent it imports).
    pub sibling_imports: BTreeMap<ModulePath, BTreeMap<String, BTreeSet<String>>>,
}

impl ModuleGraph {
    /// Reads every `.rs` file under `src` (a crate's `src/` directory).
    pub fn read(src: &Path) -> Self {
        let mut files = BTreeMap::new();
        collect(src, src, &mut files);
        let known: BTreeSet<ModulePath> = files.keys().cloned().collect();
        let mut sibling_imports: BTreeMap<ModulePath, BTreeMap<String, BTreeSet<String>>> =
            BTreeMap::new();
        for (module, file) in &files {
            let text = std::fs::read_to_string(file).expect("readable source file");
            for path in referenced_paths(&text, module) {
                let target = deepest_known(&path, &known);
                if let Some((parent, from, to)) = sibling_edge(module, &target) {
                    sibling_imports
                        .entry(parent)
                        .or_default()
                        .entry(from)
                        .or_default()
                        .insert(to);
                }
            }
        }
        ModuleGraph {
            files,
            sibling_imports,
        }
    }

    /// Every loop of sibling imports, each as `parent: a → b → … → a`.
    pub fn loops(&self) -> Vec<String> {
        let mut found = Vec::new();
        for (parent, edges) in &self.sibling_imports {
            let mut reported: BTreeSet<BTreeSet<String>> = BTreeSet::new();
            for start in edges.keys() {
                if let Some(cycle) = cycle_from(start, edges) {
                    let members: BTreeSet<String> = cycle.iter().cloned().collect();
                    if reported.insert(members) {
                        let name = if parent.is_empty() {
                            "crate".to_string()
                        } else {
                            parent.join("::")
                        };
                        found.push(format!("{name}: {}", cycle.join(" → ")));
                    }
                }
            }
        }
        found
    }
}

fn collect(root: &Path, dir: &Path, files: &mut BTreeMap<ModulePath, PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("readable source directory")
        .map(|entry| entry.expect("readable entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect(root, &path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let relative = path.strip_prefix(root).expect("under the root");
            let mut module: ModulePath = relative
                .with_extension("")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(
                module.last().map(String::as_str),
                Some("mod" | "lib" | "main")
            ) {
                module.pop();
            }
            files.insert(module, path);
        }
    }
}

/// The module paths `text` (the source of `module`) names through `crate::` and `super::`.
fn referenced_paths(text: &str, module: &[String]) -> Vec<ModulePath> {
    let code: String = text
        .lines()
        .map(|line| match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let bytes = code.as_bytes();
    let mut paths = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let rest = &bytes[at..];
        let anchor = ["crate::", "super::"]
            .iter()
            .find(|anchor| rest.starts_with(anchor.as_bytes()));
        let boundary = at == 0 || !is_ident_byte(bytes[at - 1]) && bytes[at - 1] != b'$';
        match anchor {
            Some(anchor) if boundary => {
                let mut base: ModulePath = if *anchor == "crate::" {
                    Vec::new()
                } else {
                    module[..module.len().saturating_sub(1)].to_vec()
                };
                let mut cursor = at + anchor.len();
                while bytes[cursor..].starts_with(b"super::") {
                    base.pop();
                    cursor += "super::".len();
                }
                let (found, end) = parse_tail(&code, cursor);
                for tail in found {
                    let mut path = base.clone();
                    path.extend(tail);
                    paths.push(path);
                }
                at = end.max(at + 1);
            }
            _ => at += 1,
        }
    }
    paths
}

fn is_ident_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

/// The paths written at `start`: `a::b::c`, or `a::{b, c::d}` (each brace item a path of its
/// own); returns them and where they end.
fn parse_tail(code: &str, start: usize) -> (Vec<Vec<String>>, usize) {
    let bytes = code.as_bytes();
    let mut segments = Vec::new();
    let mut at = start;
    loop {
        while at < bytes.len() && bytes[at].is_ascii_whitespace() {
            at += 1;
        }
        if at < bytes.len() && bytes[at] == b'{' {
            let mut all = Vec::new();
            at += 1;
            loop {
                let (items, end) = parse_tail(code, at);
                for item in items {
                    let mut path = segments.clone();
                    path.extend(item);
                    all.push(path);
                }
                at = end;
                while at < bytes.len() && (bytes[at].is_ascii_whitespace() || bytes[at] == b',') {
                    at += 1;
                }
                if at >= bytes.len() || bytes[at] == b'}' {
                    return (all, (at + 1).min(bytes.len()));
                }
                if end == at && !is_ident_byte(bytes[at]) && bytes[at] != b'{' {
                    // Something this reader does not follow (`*`, `self as x`): skip it.
                    at += 1;
                }
            }
        }
        let begin = at;
        while at < bytes.len() && is_ident_byte(bytes[at]) {
            at += 1;
        }
        if begin == at {
            break;
        }
        segments.push(code[begin..at].to_string());
        if bytes[at..].starts_with(b"::") {
            at += 2;
        } else {
            break;
        }
    }
    (vec![segments], at)
}

/// The longest prefix of `path` that is a module of the crate.
fn deepest_known(path: &[String], known: &BTreeSet<ModulePath>) -> ModulePath {
    (0..=path.len())
        .rev()
        .map(|len| path[..len].to_vec())
        .find(|prefix| known.contains(prefix))
        .unwrap_or_default()
}

/// When `from` importing `to` is an import between two children of one parent: that parent
/// and the two children's names.
fn sibling_edge(from: &[String], to: &[String]) -> Option<(ModulePath, String, String)> {
    let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
    if common >= from.len() || common >= to.len() {
        // One is the other's ancestor (or the same module).
        return None;
    }
    Some((
        from[..common].to_vec(),
        from[common].clone(),
        to[common].clone(),
    ))
}

/// A loop of `edges` through `start`, as the names along it with `start` at both ends.
fn cycle_from(start: &str, edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    let mut stack = vec![(start.to_string(), vec![start.to_string()])];
    let mut seen = BTreeSet::new();
    while let Some((node, path)) = stack.pop() {
        for next in edges.get(&node).into_iter().flatten() {
            if next == start {
                let mut cycle = path.clone();
                cycle.push(start.to_string());
                return Some(cycle);
            }
            if seen.insert(next.clone()) {
                let mut longer = path.clone();
                longer.push(next.clone());
                stack.push((next.clone(), longer));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(path: &str) -> ModulePath {
        path.split("::")
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn paths_are_read_through_braces_and_supers() {
        let text =
            "use crate::a::{b::C, d};\nuse super::super::e::F; // crate::ignored\n$crate::no";
        let found = referenced_paths(text, &module("x::y::z"));
        assert_eq!(
            found,
            vec![module("a::b::C"), module("a::d"), module("x::e::F"),]
        );
    }

    #[test]
    fn a_loop_between_siblings_is_found_and_a_parent_child_pair_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path();
        std::fs::write(src.join("lib.rs"), "mod a; mod b; use a::X;").unwrap();
        std::fs::create_dir(src.join("a")).unwrap();
        std::fs::write(src.join("a/mod.rs"), "use crate::b::Y; mod inner;").unwrap();
        std::fs::write(src.join("a/inner.rs"), "use super::Z; use crate::X;").unwrap();
        std::fs::write(src.join("b.rs"), "fn f() { crate::a::inner::g() }").unwrap();
        let graph = ModuleGraph::read(src);
        assert_eq!(graph.loops(), vec!["crate: a → b → a".to_string()]);
        std::fs::write(src.join("b.rs"), "use crate::X;").unwrap();
        assert_eq!(ModuleGraph::read(src).loops(), Vec::<String>::new());
    }
}
