//! Finds the line of a dotted key (`compression.threshold`) in YAML text, so errors found after
//! parsing can still point at the file and line. Block-style mappings are what config files use;
//! for anything else the caller reports the key without a line.

/// The 1-based line where `path` is defined, if it can be found.
pub fn line_of_key(text: &str, path: &str) -> Option<usize> {
    let target: Vec<&str> = path.split('.').collect();
    // (indent, key) of the mappings enclosing the current line.
    let mut stack: Vec<(usize, String)> = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with('-') {
            continue;
        }
        let Some(key) = mapping_key(trimmed) else {
            continue;
        };
        let indent = line.len() - trimmed.len();
        while stack.last().is_some_and(|(i, _)| *i >= indent) {
            stack.pop();
        }
        stack.push((indent, key));
        if stack.len() == target.len() && stack.iter().zip(&target).all(|((_, k), t)| k == t) {
            return Some(index + 1);
        }
    }
    None
}

fn mapping_key(line: &str) -> Option<String> {
    let (key, _) = line.split_once(':')?;
    let key = key.trim().trim_matches(|c| c == '"' || c == '\'');
    (!key.is_empty() && !key.contains(' ')).then(|| key.to_string())
}

#[cfg(test)]
mod tests {
    use super::line_of_key;

    const TEXT: &str = "# comment\ncontext:\n  engine: lcm\ncompression:\n  enabled: true\n  threshold: 1.7 # too high\nplugins:\n  window:\n    threshold: 0.5\n";

    #[test]
    fn finds_nested_keys() {
        assert_eq!(line_of_key(TEXT, "context.engine"), Some(3));
        assert_eq!(line_of_key(TEXT, "compression.threshold"), Some(6));
        assert_eq!(line_of_key(TEXT, "plugins.window.threshold"), Some(9));
        assert_eq!(line_of_key(TEXT, "plugins.window"), Some(8));
        assert_eq!(line_of_key(TEXT, "model.name"), None);
    }
}
