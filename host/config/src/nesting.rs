//! How deep YAML the user wrote nests, measured before the YAML parser sees it. The parser's
//! cost grows with the square of the depth (a 100,000-deep `[[[...]]]` costs minutes of CPU
//! before it is refused), so a file nesting deeper than any config needs is refused first, by
//! one linear scan: flow brackets (`[`, `{`) outside quoted strings and comments, block
//! indentation levels, and `- ` sequence entries opened on one line.

/// The deepest nesting accepted: far beyond any real config or `plugin.yaml`.
pub const MAX_DEPTH: usize = 64;

/// YAML that nests deeper than [`MAX_DEPTH`], at its first line that does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the YAML nests deeper than {MAX_DEPTH} levels (brackets or indentation); flatten it")]
pub struct TooDeep {
    /// 1-based.
    pub line: usize,
}

/// Where the scan is inside the text.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Quote {
    None,
    Single,
    Double,
}

/// Checks that `text` nests at most [`MAX_DEPTH`] levels; linear in its length.
pub fn check(text: &str) -> Result<(), TooDeep> {
    // Indentation widths of the open block levels, innermost last.
    let mut indents: Vec<usize> = Vec::new();
    let mut flow = 0usize;
    let mut quote = Quote::None;
    // A block scalar (`|` or `>`) swallows every line indented deeper than its key's line.
    let mut block_scalar_at: Option<usize> = None;
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        let too_deep = |depth: usize| {
            if depth > MAX_DEPTH {
                Err(TooDeep { line: number })
            } else {
                Ok(())
            }
        };
        let body = line.trim_start_matches(' ');
        let indent = line.len() - body.len();
        let blank = body.is_empty() || body.starts_with('#');
        if let Some(at) = block_scalar_at {
            if blank || indent > at {
                continue;
            }
            block_scalar_at = None;
        }
        let mut dashes = 0;
        if flow == 0 && quote == Quote::None && !blank {
            while indents.last().is_some_and(|&open| open > indent) {
                indents.pop();
            }
            if indents.last().is_none_or(|&open| open < indent) {
                indents.push(indent);
            }
            // `- - - x` opens one sequence per dash.
            let mut rest = body;
            while let Some(after) = rest.strip_prefix('-') {
                if !(after.is_empty() || after.starts_with([' ', '\t'])) {
                    break;
                }
                dashes += 1;
                rest = after.trim_start_matches([' ', '\t']);
            }
        }
        too_deep(indents.len() + dashes)?;
        let mut previous = ' ';
        // Where a comment starts (the line's content ends there).
        let mut end = body.len();
        let mut chars = body.char_indices().peekable();
        while let Some((at, c)) = chars.next() {
            match quote {
                Quote::Single => {
                    if c == '\'' {
                        // `''` is an escaped quote inside a single-quoted string.
                        if chars.peek().is_some_and(|&(_, next)| next == '\'') {
                            chars.next();
                        } else {
                            quote = Quote::None;
                        }
                    }
                }
                Quote::Double => match c {
                    '\\' => {
                        chars.next();
                    }
                    '"' => quote = Quote::None,
                    _ => {}
                },
                Quote::None => match c {
                    '#' if previous == ' ' || previous == '\t' => {
                        end = at;
                        break;
                    }
                    '\'' | '"' if starts_a_scalar(previous, flow) => {
                        quote = if c == '\'' {
                            Quote::Single
                        } else {
                            Quote::Double
                        };
                    }
                    '[' | '{' => {
                        flow += 1;
                        too_deep(indents.len() + dashes + flow)?;
                    }
                    ']' | '}' => flow = flow.saturating_sub(1),
                    _ => {}
                },
            }
            previous = c;
        }
        if flow == 0 && quote == Quote::None && opens_block_scalar(&body[..end]) {
            block_scalar_at = Some(indent);
        }
    }
    Ok(())
}

/// Whether a line's content ends in a block scalar's header (`key: |`, `- >-`, `|2`).
fn opens_block_scalar(content: &str) -> bool {
    let header = content
        .trim_end()
        .trim_end_matches(|c: char| c == '+' || c == '-' || c.is_ascii_digit());
    let Some(before) = header
        .strip_suffix('|')
        .or_else(|| header.strip_suffix('>'))
    else {
        return false;
    };
    before.is_empty() || before.ends_with([' ', '\t'])
}

/// Whether a quote after `previous` opens a quoted scalar (rather than sitting inside a plain
/// one, as in `it's`).
fn starts_a_scalar(previous: char, flow: usize) -> bool {
    matches!(previous, ' ' | '\t' | ':' | '-' | '?')
        || (flow > 0 && matches!(previous, '[' | '{' | ','))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_configs_pass() {
        for text in [
            include_str!("../../../config.yaml"),
            "a:\n  b: [1, {c: 'it''s [', d: \"\\\"{\"}]\n  e: |\n    [[[[\n      {{{{\n  f: it's\n",
            "list:\n- - - x\n  - y\n",
        ] {
            check(text).unwrap();
        }
    }

    #[test]
    fn deep_flow_nesting_is_refused_at_its_line() {
        let deep = format!("a: 1\nb: {}{}\n", "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(check(&deep), Err(TooDeep { line: 2 }));
        let braces = format!("b: {}\n", "{a: ".repeat(65));
        assert!(check(&braces).is_err());
        let within = format!("b: {}{}\n", "[".repeat(60), "]".repeat(60));
        check(&within).unwrap();
    }

    #[test]
    fn deep_block_nesting_is_refused() {
        let mut text = String::new();
        for depth in 0..70 {
            text.push_str(&format!("{}k{depth}:\n", " ".repeat(depth)));
        }
        assert_eq!(check(&text), Err(TooDeep { line: 65 }));
        let dashes = format!("a:\n{}x\n", "- ".repeat(70));
        assert_eq!(check(&dashes), Err(TooDeep { line: 2 }));
    }

    #[test]
    fn brackets_in_quotes_and_comments_do_not_count() {
        let text = format!(
            "a: '{}'\nb: \"{}\"\nc: 1 # {}\n",
            "[".repeat(200),
            "{".repeat(200),
            "[".repeat(200)
        );
        check(&text).unwrap();
    }
}
