//! Splits rendered turns back into turns.
//!
//! Turns start with a role tag at the beginning of a line: `[user]`, `[assistant]`,
//! `[system]`, `[tool <name>]`, `[assistant -> tool_call <name>] <arguments>` (and
//! `[TOOL RESULT <id>]:`). When no line carries a bracket tag, `user:` / `ASSISTANT:` style
//! prefixes are read instead (only then, so a `user: bob` line in a tool's output does not
//! start a turn). Text before the first tag is a turn of unknown role.

/// Who a turn is from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    User,
    Assistant,
    System,
    /// An assistant's tool call; the turn's text is the arguments.
    ToolCall {
        name: String,
    },
    /// A tool's output; `name` is the tool (or call id) the tag gave.
    ToolResult {
        name: String,
    },
    /// Text with no recognisable role tag.
    Other,
}

/// One turn: its role and its text without the tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    pub role: Role,
    pub text: String,
}

/// The turns in `content`, in order. Empty turns are kept (a call may have no arguments).
///
/// A turn's text is a run of whole lines (after its tag): a slice of `content`, copied once,
/// unless it holds carriage returns (which reading by lines drops before line breaks), then
/// joined line by line. Both give the same turns (a test checks it).
pub fn parse_turns(content: &str) -> Vec<Turn> {
    let bracketed = content.lines().any(|line| bracket_tag(line).is_some());
    let base = content.as_ptr() as usize;
    let offset = |text: &str| text.as_ptr() as usize - base;
    // Each turn's role, where its text starts and where its last line ends.
    let mut spans: Vec<(Role, usize, usize)> = Vec::new();
    let mut current: Option<(Role, usize, usize)> = None;
    for line in content.lines() {
        match turn_tag(line, bracketed) {
            Some((role, rest)) => {
                spans.extend(current.take());
                current = Some((role, offset(rest), offset(rest) + rest.len()));
            }
            None => {
                let turn = current.get_or_insert_with(|| (Role::Other, offset(line), offset(line)));
                turn.2 = offset(line) + line.len();
            }
        }
    }
    spans.extend(current);
    spans
        .into_iter()
        .map(|(role, start, end)| {
            let text = &content[start..end];
            let text = if text.contains('\r') {
                text.lines()
                    .collect::<Vec<_>>()
                    .join("\n")
                    .trim()
                    .to_string()
            } else {
                text.trim().to_string()
            };
            Turn { role, text }
        })
        .filter(|turn| turn.role != Role::Other || !turn.text.is_empty())
        .collect()
}

/// [`parse_turns`], joining each turn's lines one by one (what it gives is the reference).
#[cfg(test)]
fn parse_turns_by_line(content: &str) -> Vec<Turn> {
    let bracketed = content.lines().any(|line| bracket_tag(line).is_some());
    let mut turns: Vec<Turn> = Vec::new();
    let mut current: Option<Turn> = None;
    for line in content.lines() {
        match turn_tag(line, bracketed) {
            Some((role, rest)) => {
                turns.extend(current.take());
                current = Some(Turn {
                    role,
                    text: rest.to_string(),
                });
            }
            None => {
                let turn = current.get_or_insert_with(|| Turn {
                    role: Role::Other,
                    text: String::new(),
                });
                if !turn.text.is_empty() {
                    turn.text.push('\n');
                }
                turn.text.push_str(line);
            }
        }
    }
    turns.extend(current);
    for turn in &mut turns {
        let trimmed = turn.text.trim();
        if trimmed.len() != turn.text.len() {
            turn.text = trimmed.to_string();
        }
    }
    turns.retain(|turn| turn.role != Role::Other || !turn.text.is_empty());
    turns
}

/// The tag that starts a turn on `line`: bracketed when any line of the content carries one,
/// else a `role:` prefix.
fn turn_tag(line: &str, bracketed: bool) -> Option<(Role, &str)> {
    if bracketed {
        bracket_tag(line)
    } else {
        colon_tag(line)
    }
}

/// `[role ...] rest` at the start of a line.
fn bracket_tag(line: &str) -> Option<(Role, &str)> {
    let inner_and_rest = line.strip_prefix('[')?;
    let close = inner_and_rest.find(']')?;
    // A label may carry more after ` · ` (`[tool bash · seq 14]`): the role comes first.
    let inner = inner_and_rest[..close]
        .split(" · ")
        .next()
        .unwrap_or_default()
        .trim();
    let rest = strip_separator(&inner_and_rest[close + 1..]);
    for marker in ["tool_call", "tool call", "tool-call"] {
        // A word of its own: `[tool call_7]` is the result of the call with id `call_7`.
        let at = find_ignoring_ascii_case(inner, marker).filter(|at| {
            !inner[at + marker.len()..]
                .starts_with(|c: char| c.is_alphanumeric() || c == '_' || c == '-')
        });
        if let Some(at) = at {
            let name = inner[at + marker.len()..]
                .trim()
                .trim_start_matches([':', '='])
                .trim();
            return Some((
                Role::ToolCall {
                    name: first_word(name).to_string(),
                },
                rest,
            ));
        }
    }
    let mut words = inner.split_whitespace();
    let first = words.next()?.trim_end_matches(':');
    let is = |names: &[&str]| names.iter().any(|name| first.eq_ignore_ascii_case(name));
    let role = match () {
        () if is(&["user", "human"]) => Role::User,
        () if is(&["assistant", "ai", "model"]) => Role::Assistant,
        () if is(&["system", "developer"]) => Role::System,
        () if is(&["tool", "function", "tool_result", "observation"]) => {
            let name: Vec<&str> = words
                .filter(|w| !w.eq_ignore_ascii_case("result") && !w.eq_ignore_ascii_case("output"))
                .collect();
            Role::ToolResult {
                name: name.join(" ").trim_end_matches(':').to_string(),
            }
        }
        _ => return None,
    };
    Some((role, rest))
}

/// Where `needle` (ASCII) first occurs in `haystack`, ignoring ASCII case (what
/// `haystack.to_ascii_lowercase().find(needle)` finds, for a lower-case `needle`).
fn find_ignoring_ascii_case(haystack: &str, needle: &str) -> Option<usize> {
    let (haystack, needle) = (haystack.as_bytes(), needle.as_bytes());
    haystack
        .windows(needle.len())
        .position(|window| window.eq_ignore_ascii_case(needle))
}

/// `user: rest` (any case) at the start of a line.
fn colon_tag(line: &str) -> Option<(Role, &str)> {
    let colon = line.find(':')?;
    let word = &line[..colon];
    let role = match word.to_ascii_lowercase().as_str() {
        "user" | "human" => Role::User,
        "assistant" | "ai" => Role::Assistant,
        "system" => Role::System,
        "tool" => Role::ToolResult {
            name: String::new(),
        },
        _ => return None,
    };
    Some((role, line[colon + 1..].trim_start()))
}

fn strip_separator(rest: &str) -> &str {
    let rest = rest.strip_prefix(':').unwrap_or(rest);
    rest.trim_start_matches([' ', '\t'])
}

fn first_word(text: &str) -> &str {
    text.split_whitespace().next().unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bracket_tags_split_turns() {
        let content = "[user] fix the build\nplease\n[assistant -> tool_call bash] {\"command\": \"cargo build\"}\n[tool bash] error: boom\n[assistant] done";
        let turns = parse_turns(content);
        assert_eq!(turns.len(), 4);
        assert_eq!(turns[0].role, Role::User);
        assert_eq!(turns[0].text, "fix the build\nplease");
        assert_eq!(
            turns[1].role,
            Role::ToolCall {
                name: "bash".into()
            }
        );
        assert_eq!(turns[1].text, "{\"command\": \"cargo build\"}");
        assert_eq!(
            turns[2].role,
            Role::ToolResult {
                name: "bash".into()
            }
        );
        assert_eq!(turns[3].text, "done");
        // A result tagged with its call's id is a result.
        let turns = parse_turns("[tool call_27_1] (no output)");
        assert_eq!(
            turns[0].role,
            Role::ToolResult {
                name: "call_27_1".into()
            }
        );
    }

    #[test]
    fn colon_prefixes_work_when_no_bracket_tags() {
        let turns = parse_turns("preamble\nUSER: hi\nassistant: hello\nuser: bye");
        let roles: Vec<_> = turns.iter().map(|t| t.role.clone()).collect();
        assert_eq!(
            roles,
            [Role::Other, Role::User, Role::Assistant, Role::User]
        );
        assert_eq!(turns[0].text, "preamble");
    }

    #[test]
    fn colon_prefixes_are_ignored_next_to_bracket_tags() {
        let turns = parse_turns("[tool read_file] user: bob\nsystem: linux\n[user] ok");
        assert_eq!(turns.len(), 2);
        assert!(turns[0].text.contains("system: linux"));
    }

    #[test]
    fn slicing_and_joining_lines_give_the_same_turns() {
        let lines = [
            "[user] fix it",
            "[user]",
            "[assistant]:   ",
            "[tool bash · seq 3] out",
            "plain",
            "",
            "  ",
            "[assistant -> tool_call bash] {\"a\": 1}",
            "USER: hi",
            "assistant: yo",
            "[not a tag] x",
            "[TOOL RESULT c1]: done",
            "\t indented",
            "[system]",
            "cr\r",
            "[user] cr\r",
            "\r",
            "mid\rdle",
        ];
        let mut texts = crate::test_texts::TextMaker::new(&lines);
        for _ in 0..3_000 {
            let mut content = texts.text(16, |_, text| text.push('\n'));
            if texts.next().is_multiple_of(2) {
                content.pop();
            }
            assert_eq!(
                parse_turns(&content),
                parse_turns_by_line(&content),
                "{content:?}"
            );
        }
    }

    #[test]
    fn carriage_returns_are_dropped_with_their_line_breaks() {
        let turns = parse_turns("[user] a\r\nb\r\n[assistant] c");
        assert_eq!(turns[0].text, "a\nb");
        assert_eq!(turns[1].text, "c");
    }

    #[test]
    fn hermes_style_tags() {
        let turns = parse_turns("[USER]: a\n[ASSISTANT]: b\n[TOOL RESULT call_1]: c");
        assert_eq!(turns[0].role, Role::User);
        assert_eq!(turns[1].role, Role::Assistant);
        assert_eq!(
            turns[2].role,
            Role::ToolResult {
                name: "call_1".into()
            }
        );
        assert_eq!(turns[2].text, "c");
    }
}
