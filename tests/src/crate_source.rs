//! A crate's own code as the suite measures it: the lines of its `src/` that are not test code
//! (items under `#[cfg(test)]`, and the files of test-only modules, are left out; `tests/` and
//! `benches/` are not under `src/`), its public items, and its `pub use` of other crates.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::module_graph::ModuleGraph;

/// One crate's `src/`, test code left out.
#[derive(Debug)]
pub struct CrateSource {
    /// Each non-test file and its code without the items under `#[cfg(test)]`.
    pub files: Vec<(PathBuf, String)>,
}

impl CrateSource {
    /// Reads every `.rs` file under `src`, leaving out the modules declared under
    /// `#[cfg(test)]` and, in each file, the items under it.
    pub fn read(src: &Path) -> Self {
        let graph = ModuleGraph::read(src);
        let mut test_modules: BTreeSet<Vec<String>> = BTreeSet::new();
        let mut files = Vec::new();
        for (module, file) in &graph.files {
            let text = std::fs::read_to_string(file).expect("readable source file");
            let (code, test_children) = without_tests(&text);
            for child in test_children {
                let mut path = module.clone();
                path.push(child);
                test_modules.insert(path);
            }
            files.push((module.clone(), file.clone(), code));
        }
        let files = files
            .into_iter()
            .filter(|(module, _, _)| {
                !test_modules
                    .iter()
                    .any(|test| module.starts_with(test.as_slice()))
            })
            .map(|(_, file, code)| (file, code))
            .collect();
        CrateSource { files }
    }

    /// Lines of non-test code (blank lines and comments included: they are read too).
    pub fn lines(&self) -> usize {
        self.files
            .iter()
            .map(|(_, code)| code.lines().count())
            .sum()
    }

    /// Public items: each `pub` (not `pub(crate)` or `pub(super)`) function, type, trait,
    /// constant, static, module or re-export, fields and methods included.
    pub fn public_items(&self) -> usize {
        self.files
            .iter()
            .flat_map(|(_, code)| code.lines())
            .filter(|line| is_public_item(line))
            .count()
    }

    /// Every `pub use` of a crate named in `crates` (library names, e.g. `ctxhost_config`), as
    /// `file: line`.
    pub fn re_exports_of(&self, crates: &[String]) -> Vec<String> {
        let mut found = Vec::new();
        for (file, code) in &self.files {
            for statement in pub_use_statements(code) {
                let path = statement
                    .trim_start_matches("pub use ")
                    .trim_start_matches("::");
                let root = path
                    .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .next()
                    .unwrap_or_default();
                if crates.iter().any(|name| name == root) {
                    found.push(format!("{}: {statement}", file.display()));
                }
            }
        }
        found
    }
}

/// `text` without the items under `#[cfg(test)]`, and the names of the modules declared
/// there without a body (`#[cfg(test)] mod plans;`: their files are test code).
fn without_tests(text: &str) -> (String, Vec<String>) {
    let lines: Vec<&str> = text.lines().collect();
    let mut kept = Vec::new();
    let mut test_modules = Vec::new();
    let mut at = 0;
    while at < lines.len() {
        if lines[at].trim() != "#[cfg(test)]" {
            kept.push(lines[at]);
            at += 1;
            continue;
        }
        // Skip the attribute, any further attributes, then the item: to its `;` when it has no
        // body, else to the brace that closes the body.
        at += 1;
        while at < lines.len() && lines[at].trim_start().starts_with("#[") {
            at += 1;
        }
        let mut depth = 0i64;
        let mut opened = false;
        while at < lines.len() {
            let line = lines[at];
            if !opened && !line.contains('{') && line.trim_end().ends_with(';') {
                let declared = line.trim().trim_end_matches(';');
                if let Some(name) = declared
                    .strip_prefix("mod ")
                    .or_else(|| declared.strip_prefix("pub mod "))
                {
                    test_modules.push(name.trim().to_string());
                }
                at += 1;
                break;
            }
            for brace in braces(line) {
                opened = true;
                depth += if brace == '{' { 1 } else { -1 };
            }
            at += 1;
            if opened && depth <= 0 {
                break;
            }
        }
    }
    (kept.join("\n"), test_modules)
}

/// The braces of one line of code, outside string and character literals and comments.
fn braces(line: &str) -> Vec<char> {
    let mut found = Vec::new();
    let mut chars = line.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' if in_string => {
                chars.next();
            }
            '"' => in_string = !in_string,
            '/' if !in_string && chars.peek() == Some(&'/') => break,
            // A character literal: '{' or '}' (a lifetime has no closing quote here).
            '\'' if !in_string => {
                let rest: String = chars.clone().take(2).collect();
                if rest == "{'" || rest == "}'" {
                    chars.next();
                    chars.next();
                }
            }
            '{' | '}' if !in_string => found.push(c),
            _ => {}
        }
    }
    found
}

fn is_public_item(line: &str) -> bool {
    let line = line.trim_start();
    let Some(rest) = line.strip_prefix("pub ") else {
        return false;
    };
    let rest = rest
        .trim_start_matches("async ")
        .trim_start_matches("unsafe ")
        .trim_start_matches("const fn ")
        .trim_start_matches("extern \"C\" ");
    [
        "fn ", "struct ", "enum ", "trait ", "type ", "const ", "static ", "mod ", "use ",
        "union ",
    ]
    .iter()
    .any(|keyword| rest.starts_with(keyword))
        // A public field: `pub name: Type,`.
        || rest
            .split_once(':')
            .is_some_and(|(name, _)| name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
}

/// Each `pub use …;` statement of `code` on one line (a statement over several lines joined).
fn pub_use_statements(code: &str) -> Vec<String> {
    let mut statements = Vec::new();
    let mut current: Option<String> = None;
    for line in code.lines() {
        let trimmed = line.trim();
        if current.is_none() && trimmed.starts_with("pub use ") {
            current = Some(String::new());
        }
        if let Some(statement) = current.as_mut() {
            if !statement.is_empty() {
                statement.push(' ');
            }
            statement.push_str(trimmed);
            if trimmed.ends_with(';') {
                statements.push(current.take().unwrap_or_default());
            }
        }
    }
    statements
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_items_and_test_modules_are_left_out() {
        let text = "pub fn kept() {}\n#[cfg(test)]\nmod plans;\n#[cfg(test)]\n#[allow(unused)]\nfn helper() {\n    let s = \"}\";\n    let c = '{';\n}\npub struct Kept;\n#[cfg(test)]\nmod tests {\n    use super::*;\n    fn f() { if true { } }\n}\n";
        let (code, modules) = without_tests(text);
        assert_eq!(code, "pub fn kept() {}\npub struct Kept;");
        assert_eq!(modules, vec!["plans".to_string()]);
    }

    #[test]
    fn public_items_count_pub_only() {
        let code = "pub fn a() {}\npub(crate) fn b() {}\npub struct C {\n    pub d: u8,\n    e: u8,\n}\nfn f() {}\npub use x::Y;\n";
        let count = code.lines().filter(|l| is_public_item(l)).count();
        assert_eq!(count, 4);
    }

    #[test]
    fn re_exports_of_named_crates_are_found_over_several_lines() {
        let source = CrateSource {
            files: vec![(
                PathBuf::from("lib.rs"),
                "pub use other_crate as alias;\npub use own::X;\npub use other_crate::{\n    A,\n    B,\n};\nuse other_crate::Private;\n".to_string(),
            )],
        };
        let found = source.re_exports_of(&["other_crate".to_string()]);
        assert_eq!(
            found,
            vec![
                "lib.rs: pub use other_crate as alias;".to_string(),
                "lib.rs: pub use other_crate::{ A, B, };".to_string(),
            ]
        );
    }
}
