//! Edits `config.yaml` text in place, keeping everything the user wrote: comments, blank lines,
//! key order, quoting of other values and keys ctxhost does not know.
//!
//! The editor works on lines of block-style YAML (what config files use). It never trusts
//! itself: every edit is checked by parsing the result and comparing it with the original
//! document changed by exactly that key. An edit it cannot make faithfully (a flow-style parent,
//! a key inside a multi-line string) is refused, and the caller writes nothing.

use serde_yaml::{Mapping, Value};

/// Why an edit was refused. The text is left as it was.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    #[error("the file is not valid YAML ({0}); fix it first, nothing was written")]
    Unparsable(String),
    #[error("`{key}` is not a key path (use dotted names such as context.engine)")]
    BadKey { key: String },
    #[error("`{parent}` is not a mapping, so it cannot hold `{key}`")]
    NotAMapping { parent: String, key: String },
    #[error("`{key}` is written in a style this editor does not rewrite (flow or multi-line); edit the file by hand")]
    Unsupported { key: String },
}

/// Sets dotted `key` to `value`, creating missing mappings, and returns the new text.
pub fn set(text: &str, key: &str, value: &Value) -> Result<String, EditError> {
    let path = split_key(key)?;
    let mut expected = parse(text)?;
    set_in_value(&mut expected, &path, value.clone(), key)?;
    let edited = Lines::new(text).set(&path, value, key)?;
    verify(&edited, &expected, key)?;
    Ok(edited)
}

/// Removes dotted `key` (and everything under it). Removing a key that is not there is a no-op.
pub fn remove(text: &str, key: &str) -> Result<String, EditError> {
    let path = split_key(key)?;
    let mut expected = parse(text)?;
    if !remove_in_value(&mut expected, &path) {
        return Ok(text.to_string());
    }
    let edited = Lines::new(text).remove(&path, key)?;
    verify(&edited, &expected, key)?;
    Ok(edited)
}

/// The value at dotted `key` in YAML text, if it is set.
pub fn get(text: &str, key: &str) -> Result<Option<Value>, EditError> {
    let path = split_key(key)?;
    let mut node = &parse(text)?;
    for part in &path {
        match node.as_mapping().and_then(|m| m.get(*part)) {
            Some(child) => node = child,
            None => return Ok(None),
        }
    }
    Ok(Some(node.clone()))
}

/// A value as it is written after `key: ` (one line: scalars plain or quoted, collections in
/// flow style).
pub fn render(value: &Value) -> String {
    match value {
        Value::Sequence(items) => {
            let items: Vec<String> = items.iter().map(render).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Mapping(map) => {
            let entries: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", render(k), render(v)))
                .collect();
            format!("{{{}}}", entries.join(", "))
        }
        Value::Null => "null".to_string(),
        Value::Tagged(tagged) => render(&tagged.value),
        scalar => serde_yaml::to_string(scalar)
            .map(|s| s.trim_end().to_string())
            .unwrap_or_default(),
    }
}

/// Parses a command-line value the way YAML would read it after `key: ` (`0.6` is a number,
/// `true` a boolean, `[a, b]` a list, anything else a string).
pub fn parse_value(text: &str) -> Value {
    match serde_yaml::from_str::<Value>(text) {
        Ok(Value::Null) if !matches!(text.trim(), "null" | "~") => Value::String(text.to_string()),
        Ok(value) => value,
        Err(_) => Value::String(text.to_string()),
    }
}

fn split_key(key: &str) -> Result<Vec<&str>, EditError> {
    let path: Vec<&str> = key.split('.').collect();
    if path
        .iter()
        .any(|p| p.is_empty() || p.contains([' ', ':', '#']))
    {
        return Err(EditError::BadKey {
            key: key.to_string(),
        });
    }
    Ok(path)
}

fn parse(text: &str) -> Result<Value, EditError> {
    if text.trim().is_empty() {
        return Ok(Value::Mapping(Mapping::new()));
    }
    crate::nesting::check(text)
        .map_err(|error| EditError::Unparsable(format!("line {}: {error}", error.line)))?;
    match serde_yaml::from_str::<Value>(text) {
        Ok(Value::Null) => Ok(Value::Mapping(Mapping::new())),
        Ok(value @ Value::Mapping(_)) => Ok(value),
        Ok(_) => Err(EditError::Unparsable(
            "the top level is not a mapping of keys".to_string(),
        )),
        Err(error) => Err(EditError::Unparsable(error.to_string())),
    }
}

fn verify(edited: &str, expected: &Value, key: &str) -> Result<(), EditError> {
    match parse(edited) {
        Ok(actual) if actual == *expected => Ok(()),
        _ => Err(EditError::Unsupported {
            key: key.to_string(),
        }),
    }
}

fn set_in_value(root: &mut Value, path: &[&str], value: Value, key: &str) -> Result<(), EditError> {
    let mut node = root;
    for (depth, part) in path.iter().enumerate() {
        if node.is_null() {
            *node = Value::Mapping(Mapping::new());
        }
        let Some(map) = node.as_mapping_mut() else {
            return Err(EditError::NotAMapping {
                parent: path[..depth].join("."),
                key: key.to_string(),
            });
        };
        let part = Value::String((*part).to_string());
        if depth + 1 == path.len() {
            map.insert(part, value);
            return Ok(());
        }
        node = map.entry(part).or_insert(Value::Null);
    }
    Ok(())
}

fn remove_in_value(root: &mut Value, path: &[&str]) -> bool {
    let (last, parents) = path.split_last().expect("keys have at least one part");
    let mut node = root;
    for part in parents {
        match node.as_mapping_mut().and_then(|m| m.get_mut(*part)) {
            Some(child) => node = child,
            None => return false,
        }
    }
    node.as_mapping_mut()
        .is_some_and(|m| m.remove(*last).is_some())
}

/// The file as lines, with what the editor needs to know about each.
struct Lines {
    lines: Vec<String>,
    /// The file ended with a newline.
    trailing_newline: bool,
}

/// A `key: value` line.
struct Entry {
    line: usize,
    indent: usize,
    /// Where the value starts (after `key:`).
    value_at: usize,
    /// One past the last line of the entry's nested block (== line + 1 when it has none).
    block_end: usize,
}

impl Lines {
    fn new(text: &str) -> Self {
        Lines {
            lines: text.lines().map(str::to_string).collect(),
            trailing_newline: text.is_empty() || text.ends_with('\n'),
        }
    }

    fn text(&self) -> String {
        let mut text = self.lines.join("\n");
        if self.trailing_newline && !text.is_empty() {
            text.push('\n');
        }
        text
    }

    fn set(mut self, path: &[&str], value: &Value, key: &str) -> Result<String, EditError> {
        let rendered = render(value);
        // The region whose direct children are searched: the whole file at first.
        let mut region = (0, self.lines.len());
        let mut parent_indent: Option<usize> = None;
        for (depth, part) in path.iter().enumerate() {
            let last = depth + 1 == path.len();
            match self.find(region, parent_indent, part) {
                Some(entry) if last => {
                    self.replace_value(&entry, &rendered);
                    return Ok(self.text());
                }
                Some(entry) => {
                    let inline = self.inline_value(&entry);
                    match inline.as_str() {
                        "" => {}
                        "~" | "null" | "{}" => self.replace_value(&entry, ""),
                        _ => {
                            return Err(EditError::Unsupported {
                                key: key.to_string(),
                            })
                        }
                    }
                    region = (entry.line + 1, entry.block_end);
                    parent_indent = Some(entry.indent);
                }
                None => {
                    let indent = match parent_indent {
                        None => 0,
                        Some(parent) => self
                            .child_indent(region, parent)
                            .unwrap_or(parent + self.indent_unit()),
                    };
                    let at = self.insertion_point(region, parent_indent);
                    let mut new_lines = Vec::new();
                    for (offset, part) in path[depth..].iter().enumerate() {
                        let pad = " ".repeat(indent + offset * self.indent_unit());
                        if depth + offset + 1 == path.len() {
                            new_lines.push(format!("{pad}{part}: {rendered}"));
                        } else {
                            new_lines.push(format!("{pad}{part}:"));
                        }
                    }
                    self.lines.splice(at..at, new_lines);
                    return Ok(self.text());
                }
            }
        }
        unreachable!("the loop returns on the last part")
    }

    fn remove(mut self, path: &[&str], key: &str) -> Result<String, EditError> {
        let mut region = (0, self.lines.len());
        let mut parent: Option<Entry> = None;
        for (depth, part) in path.iter().enumerate() {
            let parent_indent = parent.as_ref().map(|p| p.indent);
            let Some(entry) = self.find(region, parent_indent, part) else {
                return Err(EditError::Unsupported {
                    key: key.to_string(),
                });
            };
            if depth + 1 == path.len() {
                let end = self.content_end(entry.line, entry.block_end);
                self.lines.drain(entry.line..end);
                // A mapping left with no keys stays a mapping, not null.
                if let Some(mut parent) = parent {
                    parent.block_end -= end - entry.line;
                    let emptied = (parent.line + 1..parent.block_end)
                        .all(|i| content_indent(&self.lines[i]).is_none());
                    if emptied {
                        self.replace_value(&parent, "{}");
                    }
                }
                return Ok(self.text());
            }
            region = (entry.line + 1, entry.block_end);
            parent = Some(entry);
        }
        unreachable!("the loop returns on the last part")
    }

    /// The entry `key` among the direct children of a block (the top level when
    /// `parent_indent` is `None`).
    fn find(
        &self,
        region: (usize, usize),
        parent_indent: Option<usize>,
        key: &str,
    ) -> Option<Entry> {
        let child_indent = match parent_indent {
            None => self.top_indent(),
            Some(parent) => self.child_indent(region, parent)?,
        };
        for line in region.0..region.1 {
            let text = &self.lines[line];
            let Some(indent) = content_indent(text) else {
                continue;
            };
            if indent != child_indent {
                continue;
            }
            let Some((name, value_at)) = key_of(text) else {
                continue;
            };
            if name == key {
                return Some(Entry {
                    line,
                    indent,
                    value_at,
                    block_end: self.block_end(line, indent, region.1),
                });
            }
        }
        None
    }

    fn top_indent(&self) -> usize {
        self.lines
            .iter()
            .find_map(|l| content_indent(l))
            .unwrap_or(0)
    }

    fn child_indent(&self, region: (usize, usize), parent: usize) -> Option<usize> {
        (region.0..region.1)
            .filter_map(|i| content_indent(&self.lines[i]))
            .find(|&indent| indent > parent)
    }

    fn indent_unit(&self) -> usize {
        let top = self.top_indent();
        self.lines
            .iter()
            .filter_map(|l| content_indent(l))
            .find(|&i| i > top)
            .map_or(2, |i| i - top)
    }

    /// One past the last line belonging to the entry at `line` (its nested lines, and blank or
    /// comment lines between them).
    fn block_end(&self, line: usize, indent: usize, limit: usize) -> usize {
        let mut end = line + 1;
        for i in line + 1..limit {
            match content_indent(&self.lines[i]) {
                Some(child) if child > indent => end = i + 1,
                Some(_) => break,
                None => {}
            }
        }
        end
    }

    /// Like `block_end` but stops after the last content line, so comments that follow a block
    /// (usually about the next key) stay.
    fn content_end(&self, line: usize, block_end: usize) -> usize {
        (line + 1..block_end)
            .rev()
            .find(|&i| content_indent(&self.lines[i]).is_some())
            .map_or(line + 1, |i| i + 1)
    }

    fn insertion_point(&self, region: (usize, usize), parent_indent: Option<usize>) -> usize {
        match parent_indent {
            // After the block's last content line.
            Some(_) => (region.0..region.1)
                .rev()
                .find(|&i| content_indent(&self.lines[i]).is_some())
                .map_or(region.0, |i| i + 1),
            None => self.lines.len(),
        }
    }

    fn inline_value(&self, entry: &Entry) -> String {
        let rest = &self.lines[entry.line][entry.value_at..];
        strip_comment(rest).0.trim().to_string()
    }

    /// Rewrites the entry's value, keeping its key text and trailing comment, and drops any
    /// nested block it had.
    fn replace_value(&mut self, entry: &Entry, rendered: &str) {
        let end = self.content_end(entry.line, entry.block_end);
        if end > entry.line + 1 && !rendered.is_empty() {
            self.lines.drain(entry.line + 1..end);
        }
        let line = &self.lines[entry.line];
        let (value, comment) = strip_comment(&line[entry.value_at..]);
        let mut new = line[..entry.value_at].to_string();
        if !rendered.is_empty() {
            new.push(' ');
            new.push_str(rendered);
        }
        if let Some(comment) = comment {
            // Keep the gap the user left before the comment (comments are often aligned).
            let gap = &value[value.trim_end().len()..];
            new.push_str(if gap.is_empty() || value.trim().is_empty() {
                " "
            } else {
                gap
            });
            new.push_str(comment);
        }
        self.lines[entry.line] = new;
    }
}

/// The indentation of a line that holds YAML content (not blank, not a comment).
fn content_indent(line: &str) -> Option<usize> {
    let trimmed = line.trim_start();
    if trimmed.is_empty() || trimmed.starts_with('#') {
        return None;
    }
    Some(line.len() - trimmed.len())
}

/// The key of a `key: value` line and the byte offset just after its colon.
fn key_of(line: &str) -> Option<(String, usize)> {
    let start = line.len() - line.trim_start().len();
    let body = &line[start..];
    if body.starts_with('-') {
        return None;
    }
    let (raw, after) = if let Some(quote) = body.chars().next().filter(|c| *c == '"' || *c == '\'')
    {
        let close = body[1..].find(quote)? + 1;
        let after = body[close + 1..].strip_prefix(':')?;
        (&body[1..close], body.len() - after.len())
    } else {
        let colon = body
            .find(": ")
            .or_else(|| body.strip_suffix(':').map(|b| b.len()))?;
        (&body[..colon], colon + 1)
    };
    if raw.is_empty() || raw.contains('#') {
        return None;
    }
    Some((raw.trim().to_string(), start + after))
}

/// Splits a value from its trailing ` # comment`, ignoring `#` inside quotes.
fn strip_comment(rest: &str) -> (&str, Option<&str>) {
    let mut quote = None;
    let bytes = rest.as_bytes();
    for (i, c) in rest.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '#') if i == 0 || bytes[i - 1] == b' ' || bytes[i - 1] == b'\t' => {
                return (&rest[..i], Some(&rest[i..]));
            }
            _ => {}
        }
    }
    (rest, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
# My config
context:
  # which engine
  engine: compressor   # default

model:
  name: gpt-4o
  context_length: 128000

display:            # a section ctxhost does not know
  skin: dark
plugins:
  window:
    threshold: 0.75
# the end
";

    fn set_str(text: &str, key: &str, value: &str) -> String {
        set(text, key, &parse_value(value)).unwrap()
    }

    #[test]
    fn replaces_a_value_keeping_its_comment() {
        let edited = set_str(TEXT, "context.engine", "lcm");
        assert_eq!(
            edited,
            TEXT.replace("engine: compressor   # default", "engine: lcm   # default")
        );
    }

    #[test]
    fn adds_keys_at_the_end_of_their_block() {
        let edited = set_str(TEXT, "model.provider", "openrouter");
        assert!(edited.contains("  context_length: 128000\n  provider: openrouter\n\ndisplay:"));
        let edited = set_str(TEXT, "plugins.lcm.threshold", "0.6");
        assert!(
            edited.contains("    threshold: 0.75\n  lcm:\n    threshold: 0.6\n# the end\n"),
            "{edited}"
        );
        let edited = set_str(TEXT, "trust.enabled.my-engine", "abc");
        assert!(
            edited.ends_with("# the end\ntrust:\n  enabled:\n    my-engine: abc\n"),
            "{edited}"
        );
    }

    #[test]
    fn keeps_every_other_line() {
        let edited = set_str(TEXT, "plugins.window.threshold", "0.5");
        let changed: Vec<_> = TEXT
            .lines()
            .zip(edited.lines())
            .filter(|(a, b)| a != b)
            .collect();
        assert_eq!(changed, vec![("    threshold: 0.75", "    threshold: 0.5")]);
    }

    #[test]
    fn strings_that_look_like_other_types_are_quoted() {
        let edited = set(TEXT, "context.engine", &Value::String("true".into())).unwrap();
        assert!(edited.contains("engine: 'true'   # default"));
        assert_eq!(
            get(&edited, "context.engine").unwrap(),
            Some(Value::String("true".into()))
        );
    }

    #[test]
    fn lists_are_written_in_flow_style() {
        let edited = set_str(TEXT, "trust.disabled", "[window, lcm]");
        assert!(edited.contains("  disabled: [window, lcm]\n"));
        let edited = set(&edited, "trust.disabled", &Value::Sequence(vec![])).unwrap();
        assert!(edited.contains("  disabled: []\n"));
    }

    #[test]
    fn a_block_value_is_replaced_whole() {
        let text =
            "plugins:\n  window:\n    threshold: 0.75\n    tail_ratio: 0.4\nmodel:\n  name: x\n";
        let edited = set_str(text, "plugins.window", "{}");
        assert_eq!(edited, "plugins:\n  window: {}\nmodel:\n  name: x\n");
    }

    #[test]
    fn removes_a_key_and_its_block() {
        let edited = remove(TEXT, "plugins.window").unwrap();
        assert!(edited.contains("plugins: {}\n# the end\n"), "{edited}");
        assert_eq!(remove(TEXT, "nothing.here").unwrap(), TEXT);
        let edited = remove(TEXT, "context.engine").unwrap();
        assert!(
            edited.starts_with("# My config\ncontext: {}\n  # which engine\n\nmodel:"),
            "{edited}"
        );
    }

    #[test]
    fn null_parents_become_mappings() {
        let edited = set_str("plugins: ~ # none yet\n", "plugins.lcm.threshold", "0.6");
        assert_eq!(edited, "plugins: # none yet\n  lcm:\n    threshold: 0.6\n");
        assert_eq!(
            set_str("", "context.engine", "lcm"),
            "context:\n  engine: lcm\n"
        );
    }

    #[test]
    fn refuses_what_it_cannot_rewrite() {
        assert!(matches!(
            set(
                "context: {engine: lcm}\n",
                "context.engine",
                &parse_value("x")
            ),
            Err(EditError::Unsupported { .. })
        ));
        assert!(matches!(
            set("context: [unclosed\n", "context.engine", &parse_value("x")),
            Err(EditError::Unparsable(_))
        ));
        assert!(matches!(
            set("model:\n  name: x\n", "model.name.inner", &parse_value("x")),
            Err(EditError::NotAMapping { .. })
        ));
        assert!(matches!(
            set(TEXT, "a..b", &Value::Null),
            Err(EditError::BadKey { .. })
        ));
        // A key-like line inside a block scalar is text, not a key: the check catches it.
        let text = "notes: |\n  engine: not a key\ncontext:\n  engine: compressor\n";
        let edited = set_str(text, "context.engine", "lcm");
        assert_eq!(
            edited,
            "notes: |\n  engine: not a key\ncontext:\n  engine: lcm\n"
        );
    }

    #[test]
    fn values_read_like_yaml() {
        assert_eq!(
            parse_value("0.6"),
            serde_yaml::from_str::<Value>("0.6").unwrap()
        );
        assert_eq!(parse_value("true"), Value::Bool(true));
        assert_eq!(parse_value("lcm"), Value::String("lcm".into()));
        assert_eq!(parse_value(""), Value::String(String::new()));
        assert_eq!(parse_value("null"), Value::Null);
        assert_eq!(parse_value("a: [b"), Value::String("a: [b".into()));
    }
}
